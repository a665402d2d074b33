"""The Redis relay's wake-ups: an asker waits on its own inbox, not the whole stream; the
stream is read while event iterators are open. Against a real ``redis-server``."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from interaction import UserInteractionError, ask, provide
from interaction.redis import RedisRelay
from interaction.redis._stream import entries
from interaction.redis._tail import TAIL_BLOCK_MS
from interaction.relay import RELAY_UNAVAILABLE, RelayEvent

from .redis_server import RedisServer, redis_server
from .test_redis_relay import (
    ASKER,
    WAIT,
    Answer,
    Item,
    asked,
    asker,
    collect,
    free,
    prefix,
    process,
    requested,
    texts,
)

__all__ = ["redis_server"]  # a fixture


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A server of the test's own: its command counts are this test's alone."""
    with RedisServer(tmp_path) as server:
        yield server


async def calls(store: aioredis.Redis) -> dict[str, int]:
    """Calls per command since the last ``CONFIG RESETSTAT`` (``INFO commandstats``)."""
    stats = await store.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(s["calls"]) for name, s in stats.items()}


async def test_an_asker_is_woken_by_its_inbox_and_no_process_reads_the_stream_unasked(
    own_server: RedisServer,
) -> None:
    """Questions asked on one relay and answered on another, neither with an event iterator:
    only the asker's tail wakes, once per answer (its inbox), never for an ask. Counted by
    the server: per ask one round trip (the ask script), per answer the settle script and
    the asker's one wake-up (its ``XREAD``, the read script pipelined behind it)."""
    space = prefix()
    async with contextlib.AsyncExitStack() as cleanup:  # a failed assertion leaks nothing
        asking = RedisRelay(own_server.url, prefix=space)
        cleanup.push_async_callback(asking.aclose)
        answering = RedisRelay(own_server.url, prefix=space)
        cleanup.push_async_callback(answering.aclose)
        store = aioredis.Redis.from_url(own_server.url, decode_responses=True)
        cleanup.push_async_callback(store.aclose)
        await asking.connect()
        await answering.connect()
        stream, position = f"{{{space}}}:events", "0-0"
        number, mine = 20, 0  # the test's own XREADs, which learn the questions' ids
        with provide(asking):
            await store.config_resetstat()
            started = time.monotonic()
            for index in range(number):
                task = asyncio.create_task(ask(free(f"Number {index}?")))
                question_id = None
                while question_id is None:
                    reply: object = await store.xread({stream: position}, count=1, block=20_000)
                    mine += 1
                    assert isinstance(reply, list)
                    ((_, read),) = reply
                    ((position, fields),) = entries(read)
                    if fields["kind"] == "requested":
                        question_id = fields["id"]
                await answering.submit(question_id, Answer([Item("q", custom=str(index))]))
                assert (await asyncio.wait_for(task, WAIT)).answers[0].custom == str(index)
            counted = await calls(store)
            elapsed = time.monotonic() - started
    # The stream's every entry would wake both tails: 4 per question. Each wake-up's read
    # script goes by its digest behind the XREAD. What the clock adds, per relay and per
    # TAIL_BLOCK_MS begun (a slow machine begins more): a blocking read that times out and
    # starts again, a heartbeat's EVALSHA, and the asker's recheck (an EVAL).
    periods = int(elapsed // (TAIL_BLOCK_MS / 1000)) + 1
    wakes = counted["xread"] - mine
    assert wakes <= number + 2 * periods
    assert counted["evalsha"] <= 2 * number + wakes + 2 * periods  # ask + settle, and the reads
    assert counted.get("eval", 0) <= periods + 1


async def test_an_iterator_opened_while_the_tail_reads_its_inbox_gets_every_event(
    redis_server: RedisServer,
) -> None:
    """A relay that only asked (its tail on the inbox alone) opens an event iterator: the
    tail is poked awake and takes the stream up, and the iterator gets every event after
    its position, those before it opened and those after."""
    space = prefix()
    relay = RedisRelay(redis_server.url, prefix=space)
    other = RedisRelay(redis_server.url, prefix=space)
    start = await relay.snapshot()
    with provide(relay):
        first = asyncio.create_task(ask(free("Before?")))
        (before,) = await asked(other, start.position, 1)
        await other.submit(before.id, Answer([Item("q", custom="before")]))
        assert (await asyncio.wait_for(first, WAIT)).answers[0].custom == "before"
        assert not relay._tail.following  # the case under test: inbox alone
        events = relay.events(start.position)
        seen = await collect(events, lambda got: len(got) == 2)
        assert [(e.kind, e.id) for e in seen] == [("requested", before.id), ("resolved", before.id)]
        second = asyncio.create_task(ask(free("After?")))
        (event,) = await collect(events, lambda got: len(got) == 1)
        await other.submit(event.id, Answer([Item("q", custom="after")]))
        (settled,) = await collect(events, lambda got: len(got) == 1)
        assert (settled.kind, settled.id, settled.outcome) == ("resolved", event.id, "answered")
        assert (await asyncio.wait_for(second, WAIT)).answers[0].custom == "after"
        await events.aclose()
    await other.aclose()
    await relay.aclose()


async def test_a_dead_askers_inbox_lasts_no_longer_than_its_lease(
    redis_server: RedisServer,
) -> None:
    """An asker's inbox expires with its lease, and goes when a live process reaps it."""
    space = prefix()
    observer = RedisRelay(redis_server.url, prefix=space, lease_ttl=0.3)  # reaps quickly
    store = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
    start = await observer.snapshot()
    events = observer.events(start.position)
    keyed = [["Keyed?", "k1"]]
    config = asker(redis_server, space, plain=["Plain?", "Other?"], keyed=keyed)
    async with process(sys.executable, "-c", ASKER, config) as child:
        ids = texts(await collect(events, requested(3)))
        await observer.submit(ids["Other?"], Answer([Item("q", custom="other")]))
        inboxes = set(await store.keys(f"{{{space}}}:inbox:*"))
        (inbox,) = inboxes - {f"{{{space}}}:inbox:{observer.owner}"}  # (its iterator's poke)
        assert 0 < await store.pttl(inbox) <= 600  # the asker's lease_ttl, 0.6 s
        child.kill()  # SIGKILL: its lease is not refreshed, nor released
        await child.wait()
    # The observer withdraws the dead asker's plain question in the same step that
    # deletes its inbox.
    withdrawn = RelayEvent("resolved", ids["Plain?"], outcome="aborted")
    resolved = await collect(events, lambda got: withdrawn.id in {e.id for e in got})
    assert withdrawn.id in {e.id for e in resolved if e.outcome == "aborted"}
    assert await store.exists(inbox) == 0
    await events.aclose()
    await store.aclose()
    await observer.aclose()


# Run while the asker's loop is held: its tail's pending read returns with a first entry,
# then its question is answered and the inbox flooded past its cap, so the answer's entry
# is trimmed away before the tail reads on.
TRIM = r"""
import asyncio, sys
import redis
from interaction import AskUserQuestionAnswer, AskUserQuestionAnswerItem
from interaction.redis import RedisRelay

async def main(url, prefix, inbox, question_id):
    store = redis.Redis.from_url(url)
    store.xadd(inbox, {"poke": "1"})
    relay = RedisRelay(url, prefix=prefix)
    answer = AskUserQuestionAnswer([AskUserQuestionAnswerItem("q", custom="trimmed")])
    await relay.submit(question_id, answer)
    await relay.aclose()
    for _ in range(3_000):
        store.xadd(inbox, {"poke": "1"}, maxlen=1_000, approximate=True)

asyncio.run(main(*sys.argv[1:]))
"""


async def test_an_answer_trimmed_from_the_inbox_before_its_asker_read_it_still_arrives(
    redis_server: RedisServer,
) -> None:
    space = prefix()
    relay = RedisRelay(redis_server.url, prefix=space, lease_ttl=60.0)  # no heartbeat meanwhile
    other = RedisRelay(redis_server.url, prefix=space)
    start = await relay.snapshot()
    with provide(relay):
        first = asyncio.create_task(ask(free("First?")))
        second = asyncio.create_task(ask(free("Second?")))
        ids = texts(await asked(other, start.position, 2))
        await other.submit(ids["First?"], Answer([Item("q", custom="first")]))
        assert (await asyncio.wait_for(first, WAIT)).answers[0].custom == "first"
        inbox = f"{{{space}}}:inbox:{relay.owner}"
        subprocess.run(  # noqa: ASYNC221 - the point: nothing else runs in this loop meanwhile
            [sys.executable, "-c", TRIM, redis_server.url, space, inbox, ids["Second?"]],
            check=True,
            timeout=120,
        )
        store = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
        assert 1_000 <= await store.xlen(inbox) < 3_000
        await store.aclose()
        async with asyncio.timeout(10):  # well before the next heartbeat's recheck (20 s)
            assert (await second).answers[0].custom == "trimmed"
    await other.aclose()
    await relay.aclose()


async def test_a_store_that_lost_its_scripts_gets_the_read_script_again(
    redis_server: RedisServer,
) -> None:
    """The tails send the read script by its digest. After ``SCRIPT FLUSH`` (as after a
    restart) the store answers ``NOSCRIPT`` to the read pipelined behind each blocked
    ``XREAD``: the tail loads the script and reads again, so the asker (on its inbox) and
    an event iterator (on the stream) each get the answer that woke them."""
    space = prefix()
    relay = RedisRelay(redis_server.url, prefix=space)
    other = RedisRelay(redis_server.url, prefix=space)
    store = aioredis.Redis.from_url(redis_server.url)
    start = await other.snapshot()
    events = other.events(start.position)
    with provide(relay):
        task = asyncio.create_task(ask(free("After a flush?")))
        (question,) = await collect(events, requested(1))
        await store.script_flush()
        await other.submit(question.id, Answer([Item("q", custom="yes")]))
        assert (await asyncio.wait_for(task, WAIT)).answers[0].custom == "yes"
        (resolved,) = await collect(events, lambda got: len(got) == 1)
    assert (resolved.kind, resolved.id, resolved.outcome) == ("resolved", question.id, "answered")
    assert relay._tail.failure is None  # neither tail went down
    assert other._tail.failure is None
    await events.aclose()
    await store.aclose()
    await other.aclose()
    await relay.aclose()


async def test_a_read_the_store_refuses_leaves_the_tails_connection_in_step(
    redis_server: RedisServer,
) -> None:
    """The store refuses the tail's blocking ``XREAD`` (its ACL user may not run it) and
    still answers the read script sent behind it: the tail says the store cannot be read,
    and the reply it did not read goes with the connection. Once ``XREAD`` is allowed
    again the tail reads on in step (a reply left behind would be taken for the next
    read's): the waiting ask gets its answer, and an iterator every event after."""
    space = prefix()
    async with contextlib.AsyncExitStack() as cleanup:
        store = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
        cleanup.push_async_callback(store.aclose)
        user, password = f"tail-{space}", secrets.token_urlsafe(16)
        everything_but_xread = ["+@all", "-xread"]
        await store.acl_setuser(
            user,
            enabled=True,
            passwords=[f"+{password}"],
            keys=["*"],
            commands=everything_but_xread,
        )
        limited = redis_server.url.replace("redis://", f"redis://{user}:{password}@")
        asking = RedisRelay(limited, prefix=space)
        cleanup.push_async_callback(asking.aclose)
        answering = RedisRelay(redis_server.url, prefix=space)
        cleanup.push_async_callback(answering.aclose)
        start = await asking.snapshot()
        events = asking.events(start.position)
        with provide(asking):
            first = asyncio.create_task(ask(free("Refused, then read?")))
            with pytest.raises(UserInteractionError) as refused:
                await asyncio.wait_for(anext(events), WAIT)
            assert refused.value.code == RELAY_UNAVAILABLE
            assert refused.value.message.endswith(
                "cannot be used: this user has no permissions to run the 'xread' command"
            )
            await store.acl_setuser(user, enabled=True, commands=["+xread"])
            (question,) = await asked(answering, start.position, 1)
            await answering.submit(question.id, Answer([Item("q", custom="read")]))
            assert (await asyncio.wait_for(first, WAIT)).answers[0].custom == "read"
            # A second question, seen live by an iterator the tail feeds.
            events = asking.events(start.position)
            cleanup.push_async_callback(events.aclose)
            second = asyncio.create_task(ask(free("And then?")))
            seen = await collect(events, requested(2))
            await answering.submit(seen[-1].id, Answer([Item("q", custom="then")]))
            seen += await collect(events, lambda got: len(got) == 1)
            assert (await asyncio.wait_for(second, WAIT)).answers[0].custom == "then"
    ids = [question.id, question.id, seen[2].id, seen[2].id]
    assert [(e.kind, e.id) for e in seen] == list(
        zip(["requested", "resolved"] * 2, ids, strict=True)
    )


async def test_a_tail_whose_connection_is_killed_reads_on_at_once(
    redis_server: RedisServer,
) -> None:
    """The server drops the relays' connections (``CLIENT KILL``, as a proxy or an idle
    timeout would): each tail reads again at once on a new one, so nothing says the store
    is away, and the iterator and the asker get what came next."""
    space = prefix()
    async with contextlib.AsyncExitStack() as cleanup:
        store = aioredis.Redis.from_url(redis_server.url, decode_responses=True)
        cleanup.push_async_callback(store.aclose)
        relay = RedisRelay(redis_server.url, prefix=space)
        cleanup.push_async_callback(relay.aclose)
        other = RedisRelay(redis_server.url, prefix=space)
        cleanup.push_async_callback(other.aclose)
        start = await relay.snapshot()
        events = relay.events(start.position)
        cleanup.push_async_callback(events.aclose)
        with provide(relay):
            task = asyncio.create_task(ask(free("After the kill?")))
            (question,) = await collect(events, requested(1))
            # Every connection but the test's own: the tail's and its relay's pool's (the
            # other relay has not connected yet).
            connections = len(await store.client_list())
            killed = await store.client_kill_filter(_type="normal", skipme=True)
            assert killed == connections - 1 >= 2
            await other.submit(question.id, Answer([Item("q", custom="on")]))
            (resolved,) = await collect(events, lambda got: len(got) == 1)
            assert (await asyncio.wait_for(task, WAIT)).answers[0].custom == "on"
    assert (resolved.kind, resolved.id, resolved.outcome) == ("resolved", question.id, "answered")
