"""The Redis relay's own failures, on a real ``redis-server``: dead askers and their leases,
resume keys, a Redis restart with AOF, web hosts that die, several processes at once.

The behaviour it shares with the other backends is tested in test_relay_contract.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import subprocess
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from pathlib import Path

import httpx
import pytest
import redis.asyncio as aioredis
from redis.typing import EncodableT, FieldT

from interaction import (
    AbortController,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    ask,
    provide,
)
from interaction.redis import RedisRelay, _stream
from interaction.relay import (
    NOT_PENDING,
    RELAY_UNAVAILABLE,
    STALE_POSITION,
    PendingQuestion,
    RelayEvent,
)
from interaction.web import WebServer

from .helpers import import_error_without
from .loopback import ANSWER_AT, announced, running, serve
from .redis_server import RedisServer, redis_server
from .web_helpers import client, sse

__all__ = ["redis_server"]  # a fixture

Item = AskUserQuestionAnswerItem
Answer = AskUserQuestionAnswer
SINGLE = AskUserQuestionItem(
    "pkg", "Which?", options=[AskUserQuestionOption("pnpm"), AskUserQuestionOption("npm")]
)
WAIT = 20.0  # the bound on any one wait (a loaded CI machine), never a pause

# An asking process: asks the free-text questions of its config (plain, and keyed with
# their resume keys), prints one JSON line per outcome, then closes its relay.
ASKER = r"""
import asyncio, json, sys
from interaction import AskUserQuestionItem, AskUserQuestionRequest, UserInteractionError
from interaction import ask, provide
from interaction.redis import RedisRelay

async def one(text, key):
    request = AskUserQuestionRequest([AskUserQuestionItem("q", text)], key=key)
    try:
        answer = await ask(request)
    except UserInteractionError as error:
        print(json.dumps({"text": text, "error": error.code}), flush=True)
    else:
        print(json.dumps({"text": text, "custom": answer.answers[0].custom}), flush=True)

async def main(config):
    relay = RedisRelay(config["url"], prefix=config["prefix"], lease_ttl=config["lease"])
    with provide(relay):
        await asyncio.gather(
            *(one(text, None) for text in config["plain"]),
            *(one(text, key) for text, key in config["keyed"]),
        )
    await relay.aclose()

asyncio.run(main(json.loads(sys.argv[1])))
"""


def prefix() -> str:
    return f"r{secrets.token_hex(6)}"


def free(text: str) -> AskUserQuestionRequest:
    return AskUserQuestionRequest([AskUserQuestionItem("q", text)])


def process(*argv: str) -> contextlib.AbstractAsyncContextManager[asyncio.subprocess.Process]:
    """A child process, SIGKILLed by its PID on the way out if it still runs."""
    return running(*argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def asker(server: RedisServer, space: str, *, plain: list[str], keyed: list[list[str]]) -> str:
    config = {"url": server.url, "prefix": space, "lease": 0.6, "plain": plain, "keyed": keyed}
    return json.dumps(config)


async def line_of(child: asyncio.subprocess.Process) -> dict[str, str]:
    assert child.stdout is not None
    line = await asyncio.wait_for(child.stdout.readline(), WAIT)
    assert line, "the child ended without a line"
    decoded: dict[str, str] = json.loads(line)
    return decoded


async def collect(
    events: AsyncGenerator[RelayEvent, None], enough: Callable[[list[RelayEvent]], bool]
) -> list[RelayEvent]:
    seen: list[RelayEvent] = []
    while not enough(seen):
        seen.append(await asyncio.wait_for(anext(events), WAIT))
    return seen


async def asked(relay: RedisRelay, after: str, count: int) -> list[RelayEvent]:
    """The events after ``after`` up to the ``count``-th ``requested`` one."""
    events = relay.events(after)
    try:
        return await collect(events, requested(count))
    finally:
        await events.aclose()


def requested(count: int) -> Callable[[list[RelayEvent]], bool]:
    return lambda seen: sum(e.kind == "requested" for e in seen) >= count


def texts(seen: list[RelayEvent]) -> dict[str, str]:
    """Question text -> relay id, of the ``requested`` events."""
    return {
        e.question.request.questions[0].question: e.id
        for e in seen
        if e.kind == "requested" and e.question is not None
    }


def test_without_redis_the_import_names_the_extra() -> None:
    assert import_error_without("redis", "interaction.redis_relay") == (
        'interaction.redis_relay needs the redis client: pip install "interaction-seam[redis]"'
        " (the interaction[redis] extra)"
    )


def test_a_bad_url_or_prefix_is_refused_when_built() -> None:
    with pytest.raises(ValueError, match="Redis URL must specify"):
        RedisRelay("localhost:6379")
    with pytest.raises(ValueError, match="without braces"):
        RedisRelay("redis://127.0.0.1:1/0", prefix="a{b}")


async def test_a_store_that_cannot_be_reached_is_relay_unavailable() -> None:
    relay = RedisRelay("redis://127.0.0.1:1/0")
    for call in (relay.snapshot(), relay.lookup("x"), relay.dismiss("x"), relay.ask(free("Q?"))):
        with pytest.raises(UserInteractionError) as info:
            await call
        assert info.value.code == RELAY_UNAVAILABLE
        assert info.value.message.startswith("the relay's store at 127.0.0.1:1 cannot be used: ")
    await relay.aclose()


async def test_a_burst_beyond_the_pool_waits_for_a_connection_however_long(
    redis_server: RedisServer,
) -> None:
    # A process asking thousands of questions at once queues for the pool's connections
    # for longer than any timeout of a command: it waits, the store being well.
    store = _stream.client(redis_server.url, 0.05)
    pool = store.connection_pool
    # (redis-py leaves get_connection untyped: a decorator warns of its old arguments)
    held = [await pool.get_connection() for _ in range(_stream.CONNECTIONS)]  # type: ignore[no-untyped-call]
    ping = asyncio.ensure_future(store.ping())
    await asyncio.sleep(0.25)  # five times the timeout: the scenario, not a synchronisation
    assert not ping.done()
    for connection in held:
        await pool.release(connection)
    assert await ping is True
    await store.aclose(close_connection_pool=True)


async def test_an_answer_that_does_not_fit_is_refused_again_by_the_asker(
    redis_server: RedisServer,
) -> None:
    """Whatever reaches the store (a buggy or hostile host) is checked by the asker too."""
    relay = RedisRelay(redis_server.url, prefix=prefix())
    with provide(relay):
        start = await relay.snapshot()
        task = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE])))
        (event,) = await asked(relay, start.position, 1)
        forged = json.dumps({"answers": [{"id": "pkg", "selected": ["yarn"]}]})
        assert (await relay._settle(event.id, "answered", forged))[0] == "ok"
        with pytest.raises(UserInteractionError) as info:
            await task
        assert info.value.code == ErrorCode.BAD_ANSWER
    await relay.aclose()


async def test_a_late_answer_to_a_withdrawn_question_says_so(redis_server: RedisServer) -> None:
    relay = RedisRelay(redis_server.url, prefix=prefix())
    controller = AbortController()
    with provide(relay):
        start = await relay.snapshot()
        task = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE], signal=controller.signal)))
        (event,) = await asked(relay, start.position, 1)
        controller.abort()
        with pytest.raises(UserInteractionError):
            await task
        with pytest.raises(UserInteractionError) as late:
            await relay.submit(event.id, Answer([Item("pkg", ["npm"])]))
    assert late.value.code == NOT_PENDING
    assert late.value.message == f"question {event.id!r} is not pending (withdrawn by the asker)"
    await relay.aclose()


Fields = dict[FieldT, EncodableT]  # a stream entry, as the client types it

FORGED_ENTRIES: list[Fields] = [  # what another hand with write access may XADD while an ask waits
    {
        "outcome": "answered",
        "answer": json.dumps({"answers": [{"id": "pkg", "selected": ["yarn"]}]}),
    },
    {
        "outcome": "answered",
        "answer": json.dumps({"answers": [{"id": "pkg", "selected": ["pnpm"]}]}),
    },
    {"outcome": "answered", "answer": "not json"},
    {"outcome": "cancelled"},
    {"outcome": "aborted"},
]


async def test_the_answerer_is_the_settled_hashs_never_a_stream_entrys(
    redis_server: RedisServer,
) -> None:
    """An entry's own ``answerer`` names nobody: a resolved event names who the settled
    hash says (alice, not the entry's mallory), and nobody once the hash is gone."""
    relay = RedisRelay(redis_server.url, prefix=prefix())
    store = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
    stream = f"{{{relay.prefix}}}:events"
    forged: Fields = {"kind": "resolved", "outcome": "answered", "answerer": "mallory"}
    with provide(relay):
        start = await relay.snapshot()
        named: dict[str, str | None] = {}
        for text, gone in (("Kept?", False), ("Gone?", True)):
            task = asyncio.create_task(ask(free(text)))
            (*_, event) = await asked(relay, (await relay.snapshot()).position, 1)
            await relay.submit(event.id, Answer([Item("q", custom="yes")]), answerer="alice")
            await asyncio.wait_for(task, WAIT)
            if gone:
                await store.delete(f"{{{relay.prefix}}}:q:{event.id}")
            position = str(await store.xadd(stream, {**forged, "id": event.id}))
            named[position] = None if gone else "alice"
        events = relay.events(start.position)
        seen = await collect(events, lambda got: {e.position for e in got} >= set(named))
        await events.aclose()
    assert {e.position: e.answerer for e in seen if e.position in named} == named
    assert all(e.answerer != "mallory" for e in seen)
    await store.aclose()
    await relay.aclose()


async def test_a_resolved_entry_the_store_does_not_bear_out_settles_nothing(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The asker and the pages take an outcome from the settled hash, never an entry alone:
    forged entries are skipped (and logged), and the real answer that follows wins."""
    relay = RedisRelay(redis_server.url, prefix=prefix())
    store = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
    stream = f"{{{relay.prefix}}}:events"
    with provide(relay):
        async with WebServer(relay) as web, client(web) as http:
            start = await relay.snapshot()
            task = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE])))
            (event,) = await asked(relay, start.position, 1)
            for fields in FORGED_ENTRIES:
                await store.xadd(stream, {"kind": "resolved", "id": event.id, **fields})
            ghost: Fields = {
                "kind": "requested",
                "id": "ghost",
                "request": json.dumps({"questions": [{"id": "q", "question": "Forged?"}]}),
            }
            await store.xadd(stream, ghost)
            swapped: Fields = {
                "kind": "requested",
                "id": event.id,
                "request": json.dumps({"questions": [{"id": "pkg", "question": "Swapped?"}]}),
            }
            await store.xadd(stream, swapped)
            for kind in ("bogus", "Resolved", None):  # kinds no script writes: never an outcome
                odd: Fields = {"id": event.id, "outcome": "answered"}
                await store.xadd(stream, odd if kind is None else {"kind": kind, **odd})
            with caplog.at_level(logging.WARNING, logger="interaction.redis_relay"):
                listed = (await http.get("/api/questions")).json()["questions"]
                assert [q["id"] for q in listed] == [event.id]
                body = {"answers": [{"id": "pkg", "selected": ["npm"]}]}
                posted = await http.post(f"/api/questions/{event.id}/answer", json=body)
                assert posted.status_code == 200
                assert (await asyncio.wait_for(task, WAIT)).answers == (Item("pkg", ["npm"]),)
                seen = await collect(relay.events(start.position), lambda got: len(got) == 2)
            assert seen == [event, RelayEvent("resolved", event.id, outcome="answered")]
    ignored = [
        r.getMessage() for r in caplog.records if "ignored the stream entry" in r.getMessage()
    ]
    assert sum(f"question {event.id!r} is still pending" in m for m in ignored) == 5
    assert sum(f"question {event.id!r} was not asked with that request" in m for m in ignored) == 1
    await store.aclose()
    await relay.aclose()


class CountedLookups(RedisRelay):
    """A Redis relay that counts the web app's lookups of a question in the store."""

    def __init__(self, url: str, *, prefix: str) -> None:
        super().__init__(url, prefix=prefix)
        self.lookups = 0

    async def lookup(self, question_id: str) -> PendingQuestion | None:
        self.lookups += 1
        return await super().lookup(question_id)


PICK_NPM = {"answers": [{"id": "pkg", "selected": ["npm"]}]}
PICK_YARN = {"answers": [{"id": "pkg", "selected": ["yarn"]}]}  # no such option


async def test_the_page_answers_a_question_its_stream_showed_without_looking_it_up(
    redis_server: RedisServer,
) -> None:
    """The request the stream showed checks the answer: the claim is the one trip to the
    store. Only a faulty answer asks the store whether the question is still pending."""
    relay = CountedLookups(redis_server.url, prefix=prefix())
    with provide(relay):
        async with (
            WebServer(relay) as web,
            client(web) as http,
            http.stream("GET", "/api/events") as stream,
        ):
            events = sse(stream.aiter_lines())
            assert (await anext(events)).kind == "snapshot"
            task = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE])))
            shown = await anext(events)
            assert shown.kind == "requested"
            path = f"/api/questions/{shown.data['id']}/answer"  # type: ignore[index]
            faulty = await http.post(path, json=PICK_YARN)
            assert faulty.status_code == 400
            assert faulty.json() == {
                "error": {
                    "code": "BAD_ANSWER",
                    "message": "answers[0].selected[0]: question pkg offers no option 'yarn'",
                }
            }
            assert relay.lookups == 1
            assert (await http.post(path, json=PICK_NPM)).status_code == 200
            assert relay.lookups == 1
            assert (await asyncio.wait_for(task, WAIT)).answers == (Item("pkg", ["npm"]),)
    await relay.aclose()


async def test_a_question_settled_elsewhere_after_a_stream_showed_it_is_409(
    redis_server: RedisServer,
) -> None:
    """The page's copy of the request does not outlive the question: an answer to one
    dismissed on another host (while no stream here saw it go) is refused as not pending,
    whether the answer would fit or not."""
    relay = CountedLookups(redis_server.url, prefix=prefix())
    elsewhere = RedisRelay(redis_server.url, prefix=relay.prefix)
    with provide(relay):
        async with WebServer(relay) as web, client(web) as http:
            async with http.stream("GET", "/api/events") as stream:
                events = sse(stream.aiter_lines())
                assert (await anext(events)).kind == "snapshot"
                task = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE])))
                shown = await anext(events)
            qid = shown.data["id"]  # type: ignore[index]
            await elsewhere.dismiss(qid)
            with pytest.raises(UserInteractionError) as caught:
                await asyncio.wait_for(task, WAIT)
            assert caught.value.code == ErrorCode.ASK_CANCELLED
            for body in (PICK_NPM, PICK_YARN):
                late = await http.post(f"/api/questions/{qid}/answer", json=body)
                assert late.status_code == 409
                assert late.json() == {
                    "error": {
                        "code": "NOT_PENDING",
                        "message": f"question {qid!r} is not pending (unknown, or already settled)",
                    }
                }
    await elsewhere.aclose()
    await relay.aclose()


async def test_an_entry_naming_a_key_that_is_no_question_does_not_stop_the_tail(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """An entry whose question key holds no hash made every read of its batch fail; the
    tail read it again for ever and no later question reached a page or an asker."""
    relay = RedisRelay(redis_server.url, prefix=prefix())
    store = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
    stream = f"{{{relay.prefix}}}:events"
    await store.set(f"{{{relay.prefix}}}:q:plain", "not a hash")
    with provide(relay):
        start = await relay.snapshot()
        with caplog.at_level(logging.WARNING, logger="interaction.redis_relay"):
            for kind in ("requested", "resolved"):
                await store.xadd(stream, {"kind": kind, "id": "plain", "request": "{}"})
            task = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE])))
            (event,) = await asked(relay, start.position, 1)
            await relay.submit(event.id, Answer([Item("pkg", ["npm"])]))
            assert (await asyncio.wait_for(task, WAIT)).answers == (Item("pkg", ["npm"]),)
    warned = [r.getMessage() for r in caplog.records]  # one read may take both entries
    assert any("question 'plain' is not stored as a question: WRONGTYPE" in m for m in warned)
    await store.aclose()
    await relay.aclose()


async def test_a_hash_settled_without_an_entry_is_settled_for_the_asker_and_the_pages(
    redis_server: RedisServer,
) -> None:
    """The hash is the truth: a question set answered there (no event) is no longer listed,
    a claim on it is NOT_PENDING, and the asker takes the stored answer at its next beat."""
    relay = RedisRelay(redis_server.url, prefix=prefix(), lease_ttl=0.3)
    store = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
    with provide(relay):
        start = await relay.snapshot()
        task = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE])))
        (event,) = await asked(relay, start.position, 1)
        answer = json.dumps({"answers": [{"id": "pkg", "selected": ["pnpm"]}]})
        key = f"{{{relay.prefix}}}:q:{event.id}"
        await store.hset(key, mapping={"state": "answered", "answer": answer})
        assert (await relay.snapshot()).questions == ()
        assert await relay.lookup(event.id) is None
        with pytest.raises(UserInteractionError) as late:
            await relay.submit(event.id, Answer([Item("pkg", ["npm"])]))
        assert late.value.code == NOT_PENDING
        assert (await asyncio.wait_for(task, WAIT)).answers == (Item("pkg", ["pnpm"]),)
        assert await store.zscore(f"{{{relay.prefix}}}:pending", event.id) is None  # tidied
    await store.aclose()
    await relay.aclose()


NOT_UTF8 = b"caf\xe9"  # Latin-1, not UTF-8


def spoiled_request(question_id: str) -> bytes:
    return b'{"questions":[{"id":"' + question_id.encode() + b'","question":"' + NOT_UTF8 + b'"}]}'


async def still_answers(relay: RedisRelay, text: str) -> None:
    """A new ask on ``relay`` is seen by its tail and answered: nothing stopped it."""
    start = await relay.snapshot()
    task = asyncio.create_task(ask(free(text)))
    (event,) = [e for e in await asked(relay, start.position, 1) if e.kind == "requested"]
    await relay.submit(event.id, Answer([Item("q", custom="on")]))
    assert (await asyncio.wait_for(task, WAIT)).answers == (Item("q", custom="on"),)


async def test_stream_entries_with_bytes_that_are_not_utf8_are_logged_and_passed_over(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """One such entry stopped every process's tail (UnicodeDecodeError): open iterators
    went quiet, askers heard only at their next heartbeat, and while it was the last entry
    a new process could not even take a snapshot."""
    relay = RedisRelay(redis_server.url, prefix=prefix(), lease_ttl=120)  # no beat in time
    raw = aioredis.Redis.from_url(redis_server.url)  # bytes in, bytes out
    stream = f"{{{relay.prefix}}}:events"
    with provide(relay), caplog.at_level(logging.WARNING, logger="interaction.redis_relay"):
        start = await relay.snapshot()
        events = relay.events(start.position)
        task = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE])))
        (event,) = await collect(events, requested(1))
        own = event.id.encode()
        hostile: list[Fields] = [
            {"kind": "note", "text": NOT_UTF8},
            {"kind": "resolved", "id": own, "outcome": NOT_UTF8},
            {"kind": "resolved", "id": NOT_UTF8, "outcome": "answered"},
            {"kind": "requested", "id": NOT_UTF8, "request": spoiled_request("q")},
            {"kind": "requested", "id": own, "request": spoiled_request("pkg")},
            {"kind": NOT_UTF8, "id": own, "outcome": "answered"},
            {"kind": "note", "text": NOT_UTF8},  # the last entry, for a new process
        ]
        positions = set()
        for fields in hostile:
            position = await raw.xadd(stream, fields)
            positions.add(position.decode() if isinstance(position, bytes) else position)
        fresh = RedisRelay(redis_server.url, prefix=relay.prefix)  # reads the store
        assert [q.id for q in (await fresh.snapshot()).questions] == [event.id]
        await relay.submit(event.id, Answer([Item("pkg", ["npm"])]))
        assert (await asyncio.wait_for(task, WAIT)).answers == (Item("pkg", ["npm"]),)
        resolved = RelayEvent("resolved", event.id, outcome="answered")
        assert await collect(events, lambda got: len(got) == 1) == [resolved]
        await events.aclose()
        replayed = fresh.events(start.position)
        assert await collect(replayed, lambda got: len(got) == 2) == [event, resolved]
        await replayed.aclose()
        await still_answers(relay, "After the bytes?")
    warned = {
        m.split()[4].rstrip(":")
        for r in caplog.records
        if (m := r.getMessage()).endswith("holds bytes that are not UTF-8")
    }
    assert warned == positions
    await fresh.aclose()
    await raw.aclose()
    await relay.aclose()


async def test_a_stored_request_or_answer_that_is_not_utf8_is_refused_never_raised(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A hash whose request held such bytes made every snapshot() raise UnicodeDecodeError;
    an answer with them stopped the tail. Now the question is left out (and logged), a
    claim on it is NOT_PENDING, and the asker refuses the answer (BAD_ANSWER)."""
    relay = RedisRelay(redis_server.url, prefix=prefix(), lease_ttl=120)  # no beat in time
    raw = aioredis.Redis.from_url(redis_server.url)
    base = f"{{{relay.prefix}}}:"
    with provide(relay), caplog.at_level(logging.WARNING, logger="interaction.redis_relay"):
        start = await relay.snapshot()
        spoiled = asyncio.create_task(ask(free("Spoiled?")))
        answered = asyncio.create_task(ask(free("Answered?")))
        ids = texts(await asked(relay, start.position, 2))
        await raw.hset(base + "q:" + ids["Spoiled?"], "request", spoiled_request("q"))
        fresh = RedisRelay(redis_server.url, prefix=relay.prefix)  # nothing cached
        assert [q.id for q in (await fresh.snapshot()).questions] == [ids["Answered?"]]
        assert await fresh.lookup(ids["Spoiled?"]) is None
        with pytest.raises(UserInteractionError) as refused:
            await fresh.submit(ids["Spoiled?"], Answer([Item("q", custom="x")]))
        assert refused.value.code == NOT_PENDING
        bad = b'{"answers":[{"id":"q","selected":[],"custom":"' + NOT_UTF8 + b'"}]}'
        qid = ids["Answered?"]
        await raw.hset(base + "q:" + qid, mapping={"state": "answered", "answer": bad})
        entry: Fields = {"kind": "resolved", "id": qid, "outcome": "answered", "answer": bad}
        await raw.xadd(base + "events", entry)
        with pytest.raises(UserInteractionError) as unreadable:
            await asyncio.wait_for(answered, WAIT)
        assert unreadable.value.code == ErrorCode.BAD_ANSWER
        await still_answers(relay, "After the bytes?")
        spoiled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await spoiled
    warned = [r.getMessage() for r in caplog.records]
    assert (
        f"question {ids['Spoiled?']!r} is left out: its request holds bytes that are not UTF-8"
        in warned
    )
    await fresh.aclose()
    await raw.aclose()
    await relay.aclose()


async def test_a_late_answer_over_the_web_to_a_withdrawn_question_says_so(
    redis_server: RedisServer,
) -> None:
    relay = RedisRelay(redis_server.url, prefix=prefix())
    controller = AbortController()
    with provide(relay):
        async with WebServer(relay) as web, client(web) as http:
            start = await relay.snapshot()
            request = AskUserQuestionRequest([SINGLE], signal=controller.signal)
            task = asyncio.create_task(ask(request))
            (event,) = await asked(relay, start.position, 1)
            controller.abort()
            with pytest.raises(UserInteractionError):
                await task
            body = {"answers": [{"id": "pkg", "selected": ["npm"]}]}
            for path, sent in (("answer", body), ("cancel", None)):
                late = await http.post(f"/api/questions/{event.id}/{path}", json=sent)
                assert late.status_code == 409
                assert late.json()["error"]["message"] == (
                    f"question {event.id!r} is not pending (withdrawn by the asker)"
                )
    await relay.aclose()


async def test_a_reader_behind_the_trimmed_history_is_told_its_position_is_stale(
    redis_server: RedisServer,
) -> None:
    relay = RedisRelay(redis_server.url, prefix=prefix(), history=1)
    start = await relay.snapshot()
    tasks = []
    with provide(relay):
        for i in range(250):  # one by one, each seen asked: the stream trims as it grows
            now = (await relay.snapshot()).position
            tasks.append(asyncio.create_task(ask(free(f"Q{i}?"))))
            await asked(relay, now, 1)
        fresh = RedisRelay(redis_server.url, prefix=relay.prefix)  # no buffer: the store
        with pytest.raises(UserInteractionError) as info:
            await anext(fresh.events(start.position))
        assert info.value.code == STALE_POSITION
        assert len((await fresh.snapshot()).questions) == 250
        await fresh.aclose()
        await relay.aclose()
    await asyncio.gather(*tasks, return_exceptions=True)


# Another process: one ask dismissed, then the answer to ARGV's question, then 300 more
# asks dismissed, each after its requested event, with a history far below that.
FLOOD = r"""
import asyncio, sys
from interaction import AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionItem
from interaction import AskUserQuestionRequest, UserInteractionError, ask, provide
from interaction.redis import RedisRelay

async def flood(relay, count):
    events = relay.events((await relay.snapshot()).position)
    for i in range(count):
        request = AskUserQuestionRequest([AskUserQuestionItem("q", f"{i}")])
        asking = asyncio.create_task(ask(request))
        while (event := await anext(events)).kind != "requested":
            pass
        await relay.dismiss(event.id)
        try:
            await asking
        except UserInteractionError:
            pass
    await events.aclose()

async def main(url, prefix, question_id):
    relay = RedisRelay(url, prefix=prefix, history=120)
    with provide(relay):
        await flood(relay, 1)  # the stalled asker's pending read returns with its first event
        answer = AskUserQuestionAnswer([AskUserQuestionAnswerItem("q", custom="after the gap")])
        await relay.submit(question_id, answer)
        await flood(relay, 300)  # the answer's event is trimmed away before anyone reads it
    await relay.aclose()

asyncio.run(main(*sys.argv[1:]))
"""


async def test_an_answer_trimmed_away_before_its_asker_read_it_still_arrives(
    redis_server: RedisServer,
) -> None:
    relay = RedisRelay(redis_server.url, prefix=prefix(), history=120)
    start = await relay.snapshot()
    with provide(relay):
        asking = asyncio.create_task(ask(free("Gap?")))
        (event,) = [e for e in await asked(relay, start.position, 1) if e.kind == "requested"]
        # Held on purpose: this process stalls (its loop is blocked) while another answers
        # and floods the stream, so its tail next reads past a gap.
        subprocess.run(  # noqa: ASYNC221 - the point: nothing else runs in this loop meanwhile
            [sys.executable, "-c", FLOOD, redis_server.url, relay.prefix, event.id],
            check=True,
            timeout=120,
        )
        async with asyncio.timeout(WAIT):
            answer = await asking
    assert answer.answers[0].custom == "after the gap"
    store = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
    stream = await store.xrange(f"{{{relay.prefix}}}:events") or []
    await store.aclose()
    assert 120 <= len(stream) < 602
    assert event.id not in {(fields or {}).get("id") for _, fields in stream}  # trimmed
    await relay.aclose()


async def test_a_killed_askers_plain_questions_are_withdrawn_its_keyed_ones_wait_for_it(
    redis_server: RedisServer,
) -> None:
    space = prefix()
    observer = RedisRelay(redis_server.url, prefix=space, lease_ttl=0.3)  # reaps quickly
    start = await observer.snapshot()
    events = observer.events(start.position)
    keyed = [["Keyed one?", "k1"], ["Keyed two?", "k2"]]
    config = asker(redis_server, space, plain=["Plain?"], keyed=keyed)
    async with process(sys.executable, "-c", ASKER, config) as child:
        ids = texts(await collect(events, requested(3)))
        child.kill()  # SIGKILL: no cleanup runs, its lease just stops being refreshed
        await child.wait()
    # The lease lapses; a live process (the observer) withdraws the plain question only.
    resolved = await collect(events, lambda got: any(e.kind == "resolved" for e in got))
    assert resolved == [RelayEvent("resolved", ids["Plain?"], outcome="aborted")]
    pending = {q.id for q in (await observer.snapshot()).questions}
    assert pending == {ids["Keyed one?"], ids["Keyed two?"]}
    with pytest.raises(UserInteractionError) as late:
        await observer.submit(ids["Plain?"], Answer([Item("q", custom="late")]))
    assert late.value.code == NOT_PENDING
    # A keyed question can still be answered while its asker is away ...
    await observer.submit(ids["Keyed one?"], Answer([Item("q", custom="one")]))
    restart = (await observer.snapshot()).position
    # ... and the restarted asker, asking with the same keys, gets that answer at once and
    # takes the other question up again, without asking anything anew.
    async with process(
        sys.executable, "-c", ASKER, asker(redis_server, space, plain=[], keyed=keyed)
    ) as again:
        assert await line_of(again) == {"text": "Keyed one?", "custom": "one"}
        await observer.submit(ids["Keyed two?"], Answer([Item("q", custom="two")]))
        assert await line_of(again) == {"text": "Keyed two?", "custom": "two"}
        assert await asyncio.wait_for(again.wait(), WAIT) == 0
    later = observer.events(restart)
    after = await collect(later, lambda got: len(got) == 1)
    assert after == [RelayEvent("resolved", ids["Keyed two?"], outcome="answered")]
    await later.aclose()
    await events.aclose()
    assert (await observer.snapshot()).questions == ()
    await observer.aclose()


async def test_a_redis_restart_with_aof_loses_nothing_and_meanwhile_says_unavailable(
    tmp_path: Path,
) -> None:
    with RedisServer(tmp_path, appendonly=True) as server:
        relay = RedisRelay(server.url, prefix="aof", lease_ttl=30)
        with provide(relay):
            async with WebServer(relay) as web, client(web) as http:
                start = await relay.snapshot()
                events = relay.events(start.position)
                answered = asyncio.create_task(ask(free("Answered before?")))
                waiting = asyncio.create_task(ask(free("Pending across?")))
                ids = texts(await collect(events, requested(2)))
                await events.aclose()
                await relay.submit(ids["Answered before?"], Answer([Item("q", custom="a")]))
                assert (await answered).answers == (Item("q", custom="a"),)

                opened = http.stream("GET", "/api/events")
                async with opened as before:  # a page open while the store goes away
                    seen = sse(before.aiter_lines())
                    assert (await anext(seen)).kind == "snapshot"
                    server.kill()  # a crash: only the AOF is left
                    told = await anext(seen)
                    assert told.kind == "unavailable"
                    assert isinstance(told.data, dict)
                    assert told.data["code"] == RELAY_UNAVAILABLE
                with pytest.raises(UserInteractionError) as down:
                    await ask(free("While down?"))
                assert down.value.code == RELAY_UNAVAILABLE
                listing = await http.get("/api/questions")
                assert listing.status_code == 503
                assert listing.json()["error"]["code"] == RELAY_UNAVAILABLE
                async with http.stream("GET", "/api/events") as stream:
                    said = await anext(sse(stream.aiter_lines()))
                assert said.kind == "unavailable"
                assert isinstance(said.data, dict)
                assert said.data["code"] == RELAY_UNAVAILABLE
                posted = await http.post(
                    f"/api/questions/{ids['Pending across?']}/answer",
                    json={"answers": [{"id": "q", "selected": [], "custom": "too early"}]},
                )
                assert posted.status_code == 503
                assert not waiting.done()

                server.restart()
                snapshot = await relay.snapshot()
                assert [q.id for q in snapshot.questions] == [ids["Pending across?"]]
                with pytest.raises(UserInteractionError) as twice:
                    await relay.submit(ids["Answered before?"], Answer([Item("q", custom="b")]))
                assert twice.value.code == NOT_PENDING
                posted = await http.post(
                    f"/api/questions/{ids['Pending across?']}/answer",
                    json={"answers": [{"id": "q", "selected": [], "custom": "after"}]},
                )
                assert posted.status_code == 200, posted.text
                assert (await asyncio.wait_for(waiting, WAIT)).answers == (
                    Item("q", custom="after"),
                )
        await relay.aclose()


@contextlib.asynccontextmanager
async def host(
    server: RedisServer, space: str
) -> AsyncIterator[tuple[asyncio.subprocess.Process, str]]:
    """An ``interaction serve --redis`` process and its page's address (with the token),
    SIGKILLed by its PID on the way out if it still runs."""
    argv = ("--redis", server.url, "--prefix", space)
    async with serve(*argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as child:
        yield child, await announced(child.stderr, ANSWER_AT, WAIT)


def http_of(url: str) -> httpx.AsyncClient:
    base, _, token = url.partition("/#token=")
    return httpx.AsyncClient(
        base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=WAIT
    )


async def test_two_web_hosts_and_two_askers_lose_nothing_and_answer_nothing_twice(
    redis_server: RedisServer,
) -> None:
    """Asked on either asker, answered through either host; one of each is SIGKILLed midway."""
    space = prefix()
    observer = RedisRelay(redis_server.url, prefix=space, lease_ttl=0.3)
    start = await observer.snapshot()
    events = observer.events(start.position)
    survivor_texts = [f"S{i}?" for i in range(12)]
    victim_plain = [f"V{i}?" for i in range(6)]
    victim_keyed = [[f"K{i}?", f"key-{i}"] for i in range(6)]
    try:
        async with (
            host(redis_server, space) as (one, url_one),
            host(redis_server, space) as (_, url_two),
            http_of(url_one) as http_one,
            http_of(url_two) as http_two,
            process(
                sys.executable,
                "-c",
                ASKER,
                asker(redis_server, space, plain=survivor_texts, keyed=[]),
            ) as survivor,
            process(
                sys.executable,
                "-c",
                ASKER,
                asker(redis_server, space, plain=victim_plain, keyed=victim_keyed),
            ) as victim,
        ):
            ids = texts(await collect(events, requested(24)))
            # Both hosts list the same 24 questions.
            for http in (http_one, http_two):
                listed = (await http.get("/api/questions")).json()["questions"]
                assert {q["id"] for q in listed} == set(ids.values())
            accepted: dict[str, str] = {}

            async def answer(http: httpx.AsyncClient, text: str) -> int:
                body = {"answers": [{"id": "q", "selected": [], "custom": f"for {text}"}]}
                response = await http.post(f"/api/questions/{ids[text]}/answer", json=body)
                if response.status_code == 200:
                    assert text not in accepted, f"{text} answered twice"
                    accepted[text] = response.json()["answers"][0]["custom"]
                return response.status_code

            # Half of each asker's questions, each claimed through both hosts at once.
            first_half = survivor_texts[:6] + victim_plain[:3] + [t for t, _ in victim_keyed[:3]]
            for text in first_half:
                codes = await asyncio.gather(answer(http_one, text), answer(http_two, text))
                assert sorted(codes) == [200, 409], (text, codes)
            victim_lines = [await line_of(victim) for _ in range(6)]
            one.kill()  # a web host and an asker die mid-run
            victim.kill()
            await one.wait()
            await victim.wait()
            # The dead asker's lease lapses: its unanswered plain questions are withdrawn.
            withdrawn = {ids[t] for t in victim_plain[3:]}
            await collect(
                events,
                lambda got: (
                    withdrawn
                    <= {e.id for e in got if e.kind == "resolved" and e.outcome == "aborted"}
                ),
            )
            # The other host shows what is left; the rest is answered through it.
            listed = (await http_two.get("/api/questions")).json()["questions"]
            left = survivor_texts[6:] + [t for t, _ in victim_keyed[3:]]
            assert {q["id"] for q in listed} == {ids[t] for t in left}
            for text in left:
                assert await answer(http_two, text) == 200
            for text in victim_plain[3:]:
                assert await answer(http_two, text) == 409
            survivor_lines = [await line_of(survivor) for _ in range(12)]
            assert await asyncio.wait_for(survivor.wait(), WAIT) == 0
            # The restarted asker gets every keyed answer at once.
            restarted = asker(redis_server, space, plain=[], keyed=victim_keyed)
            async with process(sys.executable, "-c", ASKER, restarted) as again:
                again_lines = [await line_of(again) for _ in range(6)]
                assert await asyncio.wait_for(again.wait(), WAIT) == 0
        got = {line["text"]: line["custom"] for line in survivor_lines + victim_lines}
        got.update({line["text"]: line["custom"] for line in again_lines})
        assert got == accepted  # every accepted answer reached its asker, exactly that one
        assert set(accepted) == set(survivor_texts) | set(first_half) | {t for t, _ in victim_keyed}
        assert (await observer.snapshot()).questions == ()
    finally:
        await events.aclose()
        await observer.aclose()


def test_serve_refuses_a_bad_redis_url_and_an_unreachable_store_in_one_line() -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "interaction", "serve", "--port", "0", *args]
        return subprocess.run(argv, capture_output=True, text=True, timeout=WAIT, check=False)

    bad = run("--redis", "localhost:6379")
    assert bad.returncode == 2
    assert bad.stderr == (
        "interaction: --redis 'localhost:6379' is not a Redis URL: use redis://HOST:PORT/DB,"
        " rediss://HOST:PORT/DB or unix:///PATH\n"
    )
    away = run("--redis", "redis://127.0.0.1:1/0")
    assert away.returncode == 2
    assert away.stderr.startswith("interaction: the relay's store at 127.0.0.1:1 cannot be used: ")
    assert away.stderr.endswith(" (RELAY_UNAVAILABLE)\n")
    assert away.stderr.count("\n") == 1
    braces = run("--redis", "redis://127.0.0.1:1/0", "--prefix", "a{b}")
    assert braces.returncode == 2
    assert braces.stderr == (
        "interaction: --prefix: the prefix must be non-empty, without braces: 'a{b}'\n"
    )
