"""The relay contract: the same tests over every RelayBackend (in-memory, Redis, Postgres),
through its async interface, as docs/relay.md and ``RelayBackend`` state it.

A new backend joins by adding its name to ``BACKENDS`` and a way to build it (and, if it
has a store another hand can write, a ``Hand``) in ``make_backend``.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

import psycopg
import pytest
import redis.asyncio as aioredis

from interaction import (
    AbortController,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    ask,
    provide,
)
from interaction.audit import AuditProvider, JsonlAuditLog, read_jsonl, verify
from interaction.decisions import MAX_NAME
from interaction.postgres import PostgresRelay
from interaction.redis import RedisRelay
from interaction.relay import (
    NOT_PENDING,
    RELAY_FULL,
    STALE_POSITION,
    Relay,
    RelayBackend,
    RelayEvent,
)

from .postgres_server import PostgresServer, postgres_server
from .redis_server import RedisServer, redis_server
from .relay_helpers import SINGLE, WAIT, Answer, Item, begin, first_event, take

__all__ = ["postgres_server", "redis_server"]  # fixtures, used through make_backend

BACKENDS = ["memory", "redis", "postgres"]
SHARED = ["redis", "postgres"]
FREE = AskUserQuestionItem("q", "Anything?")


class Hand(Protocol):
    """Another client with write access to a shared backend's store, up to no good."""

    async def spoil_request(self, question_id: str) -> None:
        """Make the stored request of a pending question unreadable."""
        ...

    async def answer_unreadably(self, question_id: str) -> None:
        """Settle a question as answered with an unreadable answer, and say so in an event."""
        ...

    async def write_events(self, question_id: str) -> None:
        """Write events no relay writes (one naming ``question_id``, still pending)."""
        ...

    async def aclose(self) -> None: ...


NOT_UTF8 = b"caf\xe9"


class RedisHand:
    """Bytes that are not UTF-8, written with a client that sends bytes as they are."""

    def __init__(self, url: str, prefix: str) -> None:
        self.raw = aioredis.Redis.from_url(url)
        self.base = f"{{{prefix}}}:"

    async def spoil_request(self, question_id: str) -> None:
        spoiled = b'{"questions":[{"id":"q","question":"' + NOT_UTF8 + b'"}]}'
        await self.raw.hset(self.base + "q:" + question_id, "request", spoiled)

    async def answer_unreadably(self, question_id: str) -> None:
        bad = b'{"answers":[{"id":"q","selected":[],"custom":"' + NOT_UTF8 + b'"}]}'
        await self.raw.hset(
            self.base + "q:" + question_id, mapping={"state": "answered", "answer": bad}
        )
        entry = {"kind": "resolved", "id": question_id, "outcome": "answered", "answer": bad}
        await self.raw.xadd(self.base + "events", entry)  # type: ignore[arg-type]

    async def write_events(self, question_id: str) -> None:
        own = question_id.encode()
        for fields in (
            {b"kind": b"note", b"text": NOT_UTF8},
            {b"kind": b"resolved", b"id": own, b"outcome": b"answered"},
            {b"kind": b"resolved", b"id": NOT_UTF8, b"outcome": b"answered"},
            {b"kind": b"requested", b"id": own, b"request": NOT_UTF8},
            {b"kind": b"note", b"text": NOT_UTF8},
        ):
            await self.raw.xadd(self.base + "events", fields)  # type: ignore[arg-type]

    async def aclose(self) -> None:
        await self.raw.aclose()


class PostgresHand:
    """A UTF8 database refuses bytes that are not UTF-8 (checked here); the hand writes
    what it can hold instead: text that is no request or answer, events no function writes."""

    def __init__(self, url: str, schema: str) -> None:
        self.url = url
        self.s = f'"{schema}"'

    async def _run(self, query: str, *params: object) -> None:
        async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as db:
            await db.execute(query, params)

    async def spoil_request(self, question_id: str) -> None:
        with pytest.raises(psycopg.errors.CharacterNotInRepertoire):
            await self._run(
                f"UPDATE {self.s}.questions SET request = convert_from(%s, 'UTF8') WHERE id = %s",
                b'{"questions":[{"id":"q","question":"' + NOT_UTF8 + b'"}]}',
                question_id,
            )
        await self._run(
            f"UPDATE {self.s}.questions SET request = %s WHERE id = %s",
            "café, no JSON",
            question_id,
        )

    async def answer_unreadably(self, question_id: str) -> None:
        await self._run(
            f"UPDATE {self.s}.questions SET state = 'answered', answer = %s WHERE id = %s",
            "café, no JSON",
            question_id,
        )
        await self._run(f"SELECT {self.s}.append_event('resolved', %s, 'answered')", question_id)

    async def write_events(self, question_id: str) -> None:
        for kind, named, outcome in (
            ("note", "", None),
            ("resolved", question_id, "answered"),
            ("resolved", "ghost", "bogus"),
            ("requested", "ghost", None),
            ("note", "", None),
        ):
            await self._run(f"SELECT {self.s}.append_event(%s, %s, %s)", kind, named, outcome)

    async def aclose(self) -> None:
        pass


BackendFactory = Callable[..., Awaitable[RelayBackend]]


class Backends:
    """Builds backends of one kind (``max_pending`` and friends as keywords) on one store
    (a fresh Redis prefix or Postgres schema per test); closes them."""

    def __init__(self, kind: str, request: pytest.FixtureRequest) -> None:
        self.kind = kind
        self.request = request
        self.space = f"t{secrets.token_hex(6)}"
        self.made: list[RelayBackend] = []
        self.migrated = False

    async def make(self, **options: Any) -> RelayBackend:
        backend: RelayBackend
        if self.kind == "memory":
            backend = Relay(**options)
        elif self.kind == "redis":
            server: RedisServer = self.request.getfixturevalue("redis_server")
            backend = RedisRelay(server.url, prefix=self.space, **options)
        else:
            database: PostgresServer = self.request.getfixturevalue("postgres_server")
            relay = PostgresRelay(database.url, schema=self.space, **options)
            if not self.migrated:
                await relay.migrate()
                self.migrated = True
            backend = relay
        self.made.append(backend)
        return backend

    async def reader(self, backend: RelayBackend) -> RelayBackend:
        """Another process's relay on the same store (the in-memory relay is its own)."""
        return backend if self.kind == "memory" else await self.make()

    def hand(self) -> Hand:
        if self.kind == "redis":
            server: RedisServer = self.request.getfixturevalue("redis_server")
            return RedisHand(server.url, self.space)
        database: PostgresServer = self.request.getfixturevalue("postgres_server")
        return PostgresHand(database.url, self.space)


@pytest.fixture(params=BACKENDS)
async def backends(request: pytest.FixtureRequest) -> AsyncIterator[Backends]:
    made = Backends(request.param, request)
    yield made
    for backend in made.made:
        await backend.aclose()


@pytest.fixture(params=SHARED)
async def shared(request: pytest.FixtureRequest) -> AsyncIterator[Backends]:
    made = Backends(request.param, request)
    yield made
    for backend in made.made:
        await backend.aclose()


@pytest.fixture
def make_backend(backends: Backends) -> BackendFactory:
    return backends.make


@pytest.fixture
async def backend(make_backend: BackendFactory) -> AsyncIterator[RelayBackend]:
    backend = await make_backend()
    with provide(backend):
        yield backend


async def test_every_backend_is_a_relay_backend(backend: RelayBackend) -> None:
    assert isinstance(backend, RelayBackend)


async def test_an_answer_settles_the_ask_and_the_events_tell_it_in_order(
    backend: RelayBackend,
) -> None:
    start_at = (await backend.snapshot()).position
    task, requested = await begin(backend)
    assert requested.question is not None
    assert requested.question.request.questions == (SINGLE,)
    assert await backend.lookup(requested.id) == requested.question
    snapshot = await backend.snapshot()
    assert [q.id for q in snapshot.questions] == [requested.id]
    assert snapshot.position == requested.position  # nothing happened since
    answer = await backend.submit(requested.id, Answer([Item("pkg", ["npm"])]))
    assert answer.answers == (Item("pkg", ["npm"]),)
    assert (await task).answers == (Item("pkg", ["npm"]),)
    events = backend.events(start_at)
    seen = await take(events, 2)
    await events.aclose()
    assert seen == [requested, RelayEvent("resolved", requested.id, outcome="answered")]
    assert seen[0].position == requested.position
    assert seen[1].position not in {"", requested.position}
    assert (await backend.snapshot()).questions == ()
    assert (await backend.snapshot()).position == seen[1].position
    assert await backend.lookup(requested.id) is None


@pytest.mark.parametrize(
    "forged",
    [
        Answer([Item("ghost")]),
        Answer([Item("pkg", ["yarn"])]),
        None,
        Answer([]),
        Answer([Item("pkg", ["npm", "npm"])]),
        Answer([Item("pkg", ["npm", "pnpm"])]),
        Answer([Item("pkg", custom=" ")]),
        Answer([Item("pkg", ["npm"], "also")]),
        {"answers": [{"id": "pkg", "selected": ["yarn"]}]},
    ],
)
async def test_a_forged_answer_is_refused_and_leaves_the_question_pending(
    backend: RelayBackend, forged: object
) -> None:
    task, requested = await begin(backend)
    with pytest.raises(UserInteractionError) as info:
        await backend.submit(requested.id, forged)
    assert info.value.code == ErrorCode.BAD_ANSWER
    assert [q.id for q in (await backend.snapshot()).questions] == [requested.id]
    await backend.submit(requested.id, Answer([Item("pkg", ["pnpm"])]))
    assert (await task).answers == (Item("pkg", ["pnpm"]),)


async def test_an_unknown_id_is_not_pending_on_every_backend(backend: RelayBackend) -> None:
    for settle in (
        backend.submit("nope", Answer([Item("pkg")])),
        backend.dismiss("nope"),
    ):
        with pytest.raises(UserInteractionError) as info:
            await settle
        assert info.value.code == NOT_PENDING
        assert info.value.message == (
            "question 'nope' is not pending (unknown, or already settled)"
        )
    assert await backend.lookup("nope") is None


async def test_of_two_claims_at_once_exactly_one_wins(backend: RelayBackend) -> None:
    task, requested = await begin(backend)

    async def claim(answer: Answer) -> str:
        try:
            await backend.submit(requested.id, answer)
        except UserInteractionError as error:
            return error.code
        return "accepted"

    results = await asyncio.gather(
        claim(Answer([Item("pkg", ["pnpm"])])), claim(Answer([Item("pkg", ["npm"])]))
    )
    assert sorted(results) == [NOT_PENDING, "accepted"]
    winner = ["pnpm", "npm"][results.index("accepted")]
    assert (await task).answers == (Item("pkg", [winner]),)
    with pytest.raises(UserInteractionError) as late:
        await backend.dismiss(requested.id)
    assert late.value.code == NOT_PENDING


async def test_dismiss_cancels_the_ask_once(backend: RelayBackend) -> None:
    task, requested = await begin(backend)
    await backend.dismiss(requested.id)
    with pytest.raises(UserInteractionError) as info:
        await task
    assert info.value.code == ErrorCode.ASK_CANCELLED
    assert await first_event(backend, requested.position) == RelayEvent(
        "resolved", requested.id, outcome="cancelled"
    )
    with pytest.raises(UserInteractionError) as late:
        await backend.submit(requested.id, Answer([Item("pkg", ["npm"])]))
    assert late.value.code == NOT_PENDING


UNTRUSTED_NAME = "\x1b]0;pwned\x07" + "x" * 300
"""A name no page's user has: its control characters are escaped and it is cut."""
SHOWN_NAME = ("\\x1b]0;pwned\\x07" + "x" * 300)[:MAX_NAME] + "…"
THE_ASKERS_OWN = "the-askers-own"


def audited(path: Path) -> list[tuple[Any, ...]]:
    records = [json.loads(line) for _, line in read_jsonl(path)]
    assert verify(read_jsonl(path))[0] == []
    return [(r["outcome"], r["decidedBy"], r["answerer"]) for r in records]


async def test_the_answerer_reaches_the_askers_audit_and_every_event_reader(
    backends: Backends, tmp_path: Path
) -> None:
    """Answered or dismissed through another process's relay on the same store, the
    asker's audit names who did it, and so do the ``resolved`` events every reader sees;
    an answer by nobody named leaves the audit's own answerer."""
    asking = await backends.make()
    taking = await backends.reader(asking)
    start = (await taking.snapshot()).position
    path = tmp_path / "audit.jsonl"
    log = JsonlAuditLog(path)
    npm = Answer([Item("pkg", ["npm"])])
    with provide(AuditProvider(asking, log, answerer=THE_ASKERS_OWN)):
        task, requested = await begin(taking)
        assert (await taking.submit(requested.id, npm, answerer="alice")) == npm
        assert await asyncio.wait_for(task, WAIT) == npm
        task, requested = await begin(taking)
        await taking.dismiss(requested.id, answerer="bob")
        with pytest.raises(UserInteractionError) as dismissed:
            await asyncio.wait_for(task, WAIT)
        assert dismissed.value.code == ErrorCode.ASK_CANCELLED
        task, requested = await begin(taking)
        await taking.submit(requested.id, npm, answerer=UNTRUSTED_NAME)
        assert await asyncio.wait_for(task, WAIT) == npm
        task, requested = await begin(taking)
        await taking.submit(requested.id, npm)
        assert await asyncio.wait_for(task, WAIT) == npm
    log.close()
    assert audited(path) == [
        ("answered", "human", "alice"),
        ("cancelled", "human", "bob"),
        ("answered", "human", SHOWN_NAME),
        ("answered", "human", THE_ASKERS_OWN),
    ]
    for reader in (taking, asking, await backends.reader(asking)):
        events = reader.events(start)
        seen = await take(events, 8)
        await events.aclose()
        resolved = [(e.outcome, e.answerer) for e in seen if e.kind == "resolved"]
        assert resolved == [
            ("answered", "alice"),
            ("cancelled", "bob"),
            ("answered", SHOWN_NAME),
            ("answered", None),
        ]


async def test_a_restarted_keyed_asker_names_who_settled_it_meanwhile(
    shared: Backends, tmp_path: Path
) -> None:
    """Keyed questions answered and dismissed while their asker was away: the asker that
    takes them up again gets the outcome at once, and its audit names who settled each."""
    first = await shared.make()
    deploy = AskUserQuestionRequest([AskUserQuestionItem("q", "Deploy?")], key="deploy-1")
    back = AskUserQuestionRequest([AskUserQuestionItem("q", "Roll back?")], key="back-1")
    with provide(first):
        events = first.events((await first.snapshot()).position)
        tasks = [asyncio.create_task(ask(deploy)), asyncio.create_task(ask(back))]
        shown = await take(events, 2)
        await events.aclose()
    await first.aclose()  # the asker stops; its keyed questions wait for it
    for task in tasks:
        with pytest.raises(UserInteractionError):
            await task
    ids = {e.question.request.questions[0].question: e.id for e in shown if e.question}
    page = await shared.make()
    await page.submit(ids["Deploy?"], Answer([Item("q", custom="yes")]), answerer="alice")
    await page.dismiss(ids["Roll back?"], answerer="bob")
    path = tmp_path / "audit.jsonl"
    log = JsonlAuditLog(path)
    with provide(AuditProvider(await shared.make(), log, answerer=THE_ASKERS_OWN)):
        assert (await ask(deploy)).answers == (Item("q", custom="yes"),)
        with pytest.raises(UserInteractionError) as dismissed:
            await ask(back)
        assert dismissed.value.code == ErrorCode.ASK_CANCELLED
    log.close()
    assert audited(path) == [("answered", "human", "alice"), ("cancelled", "human", "bob")]


@pytest.mark.parametrize("by_timeout", [False, True])
async def test_the_askers_abort_or_timeout_withdraws_it_on_every_backend(
    backend: RelayBackend, by_timeout: bool
) -> None:
    # Aborted once the question is out, with a timeout's reason where it stands for one: a
    # timer of its own would end a slow ask before its question is out.
    controller = AbortController()
    task, requested = await begin(backend, signal=controller.signal)
    controller.abort(TimeoutError("the signal timed out") if by_timeout else None)
    with pytest.raises(UserInteractionError) as info:
        await task
    assert info.value.code == (ErrorCode.ASK_TIMEOUT if by_timeout else ErrorCode.ASK_ABORTED)
    assert await first_event(backend, requested.position) == RelayEvent(
        "resolved", requested.id, outcome="aborted"
    )
    assert (await backend.snapshot()).questions == ()
    for claim in (
        backend.submit(requested.id, Answer([Item("pkg", ["npm"])])),
        backend.dismiss(requested.id),
    ):
        with pytest.raises(UserInteractionError) as late:
            await claim
        assert late.value.code == NOT_PENDING
        assert late.value.message == (
            f"question {requested.id!r} is not pending (withdrawn by the asker)"
        )


@pytest.mark.parametrize("key", [None, "step-1"])
async def test_a_relays_own_wait_ends_on_its_signal_without_a_cancellation(
    backend: RelayBackend, key: str | None
) -> None:
    """The relay's ask called directly (no ``ask()`` around it to cancel its task, as when
    a cancellation is lost below it): an abort of the request's signal still ends the wait
    with ``ASK_ABORTED`` and withdraws the question, keyed or not."""
    controller = AbortController()
    request = AskUserQuestionRequest([SINGLE], key=key, signal=controller.signal)
    before = (await backend.snapshot()).position
    task = asyncio.create_task(backend.ask(request))
    requested = await first_event(backend, before)
    assert requested.kind == "requested"
    controller.abort()
    with pytest.raises(UserInteractionError) as info:
        await asyncio.wait_for(task, WAIT)
    assert (info.value.code, info.value.message) == (
        ErrorCode.ASK_ABORTED,
        "ask_user_question was aborted before the user answered",
    )
    assert await first_event(backend, requested.position) == RelayEvent(
        "resolved", requested.id, outcome="aborted"
    )
    assert (await backend.snapshot()).questions == ()


async def test_resuming_after_a_position_replays_exactly_what_followed(
    backend: RelayBackend,
) -> None:
    """Last-Event-ID: a client that saw an event resumes right after it, nothing lost."""
    first, one = await begin(backend)
    second, two = await begin(backend)
    await backend.submit(one.id, Answer([Item("pkg", ["npm"])]))
    events = backend.events(one.position)
    replay = await take(events, 2)
    assert replay == [two, RelayEvent("resolved", one.id, outcome="answered")]
    await backend.dismiss(two.id)  # a live event on the same iterator
    assert await take(events, 1) == [RelayEvent("resolved", two.id, outcome="cancelled")]
    await events.aclose()
    assert (await first).answers == (Item("pkg", ["npm"]),)
    with pytest.raises(UserInteractionError):
        await second
    positions = [one.position, *(e.position for e in replay)]
    assert len(set(positions)) == 3


async def test_a_replay_across_a_settle_gives_the_request_then_the_outcome(
    backends: Backends,
) -> None:
    """Resumed from before an ask that was settled since, every backend replays both events
    (the Redis relay, read from its store, gave ``resolved`` alone)."""
    backend = await backends.make()
    with provide(backend):
        start = (await backend.snapshot()).position
        task, requested = await begin(backend)
        await backend.submit(requested.id, Answer([Item("pkg", ["npm"])]))
        assert (await task).answers == (Item("pkg", ["npm"]),)
    reader = await backends.reader(backend)  # another process reads it from the store
    events = reader.events(start)
    replayed = await take(events, 2)
    await events.aclose()
    assert replayed == [requested, RelayEvent("resolved", requested.id, outcome="answered")]
    assert replayed[0].position == requested.position


@pytest.mark.parametrize("position", ["", "garbage", "0", "x.1", "\n", "9" * 40, "1-1-1"])
async def test_a_position_it_cannot_replay_from_is_stale(
    backend: RelayBackend, position: str
) -> None:
    with pytest.raises(UserInteractionError) as info:
        await first_event(backend, position)
    assert info.value.code == STALE_POSITION
    assert info.value.message == (
        "the relay cannot replay events from that position; take a fresh snapshot"
    )


async def test_a_position_from_another_relay_is_stale(make_backend: BackendFactory) -> None:
    one, other = await make_backend(), await make_backend()
    if not isinstance(one, Relay):  # relays sharing one store share their positions
        return
    with pytest.raises(UserInteractionError) as info:
        await first_event(other, (await one.snapshot()).position)
    assert info.value.code == STALE_POSITION


async def test_over_max_pending_an_ask_is_refused_on_every_backend(
    make_backend: BackendFactory,
) -> None:
    backend = await make_backend(max_pending=2)
    with provide(backend):
        tasks = [(await begin(backend))[0] for _ in range(2)]
        with pytest.raises(UserInteractionError) as info:
            await ask(AskUserQuestionRequest([SINGLE]))
        assert info.value.code == RELAY_FULL
        assert info.value.message == "the relay already holds 2 pending questions"
        assert len((await backend.snapshot()).questions) == 2
        await backend.aclose()
    for task in tasks:
        with pytest.raises(UserInteractionError) as closed:
            await task
        assert closed.value.code == ErrorCode.ASK_ABORTED


async def test_aclose_aborts_its_askers_and_ends_its_iterators(
    make_backend: BackendFactory,
) -> None:
    backend = await make_backend()
    with provide(backend):
        task, requested = await begin(backend)
        events = backend.events(requested.position)
        await backend.aclose()
        with pytest.raises(UserInteractionError) as info:
            await task
    assert info.value.code == ErrorCode.ASK_ABORTED
    rest = [event async for event in events]
    assert rest == [RelayEvent("resolved", requested.id, outcome="aborted")]
    with pytest.raises(UserInteractionError) as closed:
        await backend.ask(AskUserQuestionRequest([SINGLE]))
    assert closed.value.code == ErrorCode.ASK_ABORTED


# ---------------------------------------------------------------------------------------
# What another hand with write access may leave in a shared store: it is passed over (and
# logged), never raised, and stops no tail, iterator or snapshot.


async def still_answers(backend: RelayBackend, text: str) -> None:
    """A new ask is seen and answered: nothing stopped the backend's tail."""
    task, event = await begin(backend, AskUserQuestionItem("q", text))
    await backend.submit(event.id, Answer([Item("q", custom="on")]))
    assert (await asyncio.wait_for(task, WAIT)).answers == (Item("q", custom="on"),)


async def test_a_stored_request_it_cannot_read_is_left_out_and_cannot_be_claimed(
    shared: Backends,
) -> None:
    backend = await shared.make()
    hand = shared.hand()
    with provide(backend):
        spoiled, one = await begin(backend, AskUserQuestionItem("q", "Spoiled?"))
        fine, two = await begin(backend, AskUserQuestionItem("q", "Fine?"))
        await hand.spoil_request(one.id)
        reader = await shared.reader(backend)  # has no decoded copy of the request
        assert [q.id for q in (await reader.snapshot()).questions] == [two.id]
        assert await reader.lookup(one.id) is None
        with pytest.raises(UserInteractionError) as refused:
            await reader.submit(one.id, Answer([Item("q", custom="x")]))
        assert refused.value.code == NOT_PENDING
        await reader.submit(two.id, Answer([Item("q", custom="fine")]))
        assert (await asyncio.wait_for(fine, WAIT)).answers == (Item("q", custom="fine"),)
        await still_answers(backend, "After?")
        spoiled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await spoiled
    await hand.aclose()


async def test_an_answer_it_cannot_read_is_refused_by_the_asker_at_once(
    shared: Backends,
) -> None:
    backend = await shared.make(lease_ttl=120)  # no heartbeat in time: the tail tells it
    hand = shared.hand()
    with provide(backend):
        task, event = await begin(backend, AskUserQuestionItem("q", "Answered?"))
        await hand.answer_unreadably(event.id)
        with pytest.raises(UserInteractionError) as refused:
            await asyncio.wait_for(task, WAIT)
        assert refused.value.code == ErrorCode.BAD_ANSWER
        await still_answers(backend, "After?")
    await hand.aclose()


async def test_events_no_relay_wrote_settle_nothing_and_stop_nothing(shared: Backends) -> None:
    backend = await shared.make(lease_ttl=120)  # no heartbeat in time: the tail tells it
    hand = shared.hand()
    with provide(backend):
        start = (await backend.snapshot()).position
        events = backend.events(start)
        task = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE])))
        (requested,) = await take(events, 1)
        await hand.write_events(requested.id)
        reader = await shared.reader(backend)  # a new process: the last event is the hand's
        assert [q.id for q in (await reader.snapshot()).questions] == [requested.id]
        await backend.submit(requested.id, Answer([Item("pkg", ["npm"])]))
        assert (await asyncio.wait_for(task, WAIT)).answers == (Item("pkg", ["npm"]),)
        resolved = RelayEvent("resolved", requested.id, outcome="answered")
        assert await take(events, 1) == [resolved]
        await events.aclose()
        replayed = reader.events(start)
        assert await take(replayed, 2) == [requested, resolved]
        await replayed.aclose()
        await still_answers(backend, "After?")
    await hand.aclose()


async def test_a_keyed_ask_cancelled_at_shutdown_stays_pending_its_signal_withdraws_it(
    shared: Backends,
) -> None:
    """A keyed ask outlives its task and its relay (a restarted asker takes it up again);
    only its signal withdraws it. A plain ask is withdrawn however it ends."""
    relay = await shared.make()
    with provide(relay):
        start = (await relay.snapshot()).position
        events = relay.events(start)
        keyed = AskUserQuestionRequest([AskUserQuestionItem("q", "Deploy?")], key="step-1")
        task = asyncio.create_task(ask(keyed))
        (first,) = await take(events, 1)
        task.cancel()  # the host shuts down: not the step's signal
        with pytest.raises(asyncio.CancelledError):
            await task
        assert [q.id for q in (await relay.snapshot()).questions] == [first.id]

        again = asyncio.create_task(ask(keyed))  # the same key takes the same question up
        await relay.submit(first.id, Answer([Item("q", custom="yes")]))
        assert (await again).answers == (Item("q", custom="yes"),)
        # Asked once more with that key (a replayed step), the stored answer comes at once.
        assert (await ask(keyed)).answers == (Item("q", custom="yes"),)
        assert await take(events, 1) == [RelayEvent("resolved", first.id, outcome="answered")]

        controller = AbortController()
        signalled = AskUserQuestionRequest(
            [AskUserQuestionItem("q", "Roll back?")], key="step-2", signal=controller.signal
        )
        task = asyncio.create_task(ask(signalled))
        (second,) = await take(events, 1)
        controller.abort()
        with pytest.raises(UserInteractionError) as info:
            await task
        assert info.value.code == ErrorCode.ASK_ABORTED
        assert await take(events, 1) == [RelayEvent("resolved", second.id, outcome="aborted")]

        shutdown = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE], key="step-3")))
        (third,) = await take(events, 1)
        await events.aclose()
    await relay.aclose()  # closing keeps a keyed question for the restarted asker
    with pytest.raises(UserInteractionError) as closed:
        await shutdown
    assert closed.value.code == ErrorCode.ASK_ABORTED
    other = await shared.make()
    assert [q.id for q in (await other.snapshot()).questions] == [third.id]
    await other.dismiss(third.id)


async def test_two_askers_waiting_on_one_keyed_question_both_hear_its_answer(
    shared: Backends,
) -> None:
    """A second process asking the same keyed question attaches to it, and owns it from
    then on: its outcome goes to the second asker's inbox (or channel) as it settles, and
    reaches the first one too, by its heartbeat's lookup at the latest."""
    first, second = await shared.make(lease_ttl=1), await shared.make(lease_ttl=120)
    page = await shared.make()
    events = page.events((await page.snapshot()).position)
    keyed = AskUserQuestionRequest([AskUserQuestionItem("q", "Deploy?")], key="workflow-2/1")
    assert isinstance(first, RedisRelay | PostgresRelay)
    assert isinstance(second, RedisRelay | PostgresRelay)
    one = asyncio.create_task(first.ask(keyed))
    (asked,) = await take(events, 1)
    two = asyncio.create_task(second.ask(keyed))
    async with asyncio.timeout(WAIT):
        while not second._waiters.published():  # noqa: ASYNC110 - no event says it attached
            await asyncio.sleep(0.005)
    await page.submit(asked.id, Answer([Item("q", custom="both")]))
    answers = await asyncio.wait_for(asyncio.gather(one, two), WAIT)
    assert [answer.answers[0].custom for answer in answers] == ["both", "both"]
    await events.aclose()


async def test_another_process_withdraws_a_keyed_question_by_its_key(shared: Backends) -> None:
    """``withdraw_keyed`` (a durable workflow's timeout or cancel, docs/durable.md) settles
    the pending question asked under a key as its asker's signal would, from any process,
    once; a key with nothing pending is left alone."""
    asker = await shared.make()
    other = await shared.make()
    assert isinstance(asker, RedisRelay | PostgresRelay)
    assert isinstance(other, RedisRelay | PostgresRelay)
    events = other.events((await other.snapshot()).position)
    keyed = AskUserQuestionRequest([AskUserQuestionItem("q", "Deploy?")], key="workflow-1/2")
    with provide(asker):
        task = asyncio.create_task(ask(keyed))
        (asked,) = await take(events, 1)
        await other.withdraw_keyed("workflow-1/2")
        with pytest.raises(UserInteractionError) as withdrawn:
            await task
    assert withdrawn.value.code == ErrorCode.ASK_ABORTED
    assert await take(events, 1) == [RelayEvent("resolved", asked.id, outcome="aborted")]
    with pytest.raises(UserInteractionError) as late:
        await other.submit(asked.id, Answer([Item("q", custom="late")]))
    assert late.value.message == f"question {asked.id!r} is not pending (withdrawn by the asker)"
    await other.withdraw_keyed("workflow-1/2")  # nothing pending under it: nothing happens
    await other.withdraw_keyed("never-asked")
    assert (await other.snapshot()).questions == ()
    await events.aclose()
