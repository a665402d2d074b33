"""The Postgres relay's own behaviour, on a real PostgreSQL server: its schema and
migrations, processes racing and dying, the database restarting, polling without
``LISTEN``, expiry, and the web page served by ``interaction serve --postgres``.

The behaviour every backend shares is tested in test_relay_contract.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import subprocess
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from playwright.async_api import Browser

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    UserInteractionError,
    ask,
    provide,
    request_digest,
)
from interaction.audit import AuditProvider, JsonlAuditLog, read_jsonl
from interaction.postgres import PostgresRelay
from interaction.relay import (
    NOT_PENDING,
    RELAY_UNAVAILABLE,
    STALE_POSITION,
    RelayEvent,
    local_host,
)
from interaction.wire import dumps

from . import postgres_schema_v1
from .helpers import import_error_without
from .loopback import ANSWER_AT, announced, running, serve
from .postgres_server import OLD_APPEND_EVENT, PostgresServer, execute, postgres_server
from .web_helpers import sse

__all__ = ["postgres_server"]  # a fixture

Item = AskUserQuestionAnswerItem
Answer = AskUserQuestionAnswer
WAIT = 20.0  # the bound on any one wait (a loaded CI machine), never a pause

# An asking process: asks the free-text questions of its config (plain, and keyed with
# their resume keys), prints one JSON line per outcome, then closes its relay.
ASKER = r"""
import asyncio, json, sys
from interaction import AskUserQuestionItem, AskUserQuestionRequest, UserInteractionError
from interaction import ask, provide
from interaction.postgres import PostgresRelay

async def one(text, key):
    request = AskUserQuestionRequest([AskUserQuestionItem("q", text)], key=key)
    try:
        answer = await ask(request)
    except UserInteractionError as error:
        print(json.dumps({"text": text, "error": error.code}), flush=True)
    else:
        print(json.dumps({"text": text, "custom": answer.answers[0].custom}), flush=True)

async def main(config):
    relay = PostgresRelay(config["url"], schema=config["schema"], lease_ttl=config["lease"],
                          listen=config["listen"])
    with provide(relay):
        await asyncio.gather(
            *(one(text, None) for text in config["plain"]),
            *(one(text, key) for text, key in config["keyed"]),
        )
    await relay.aclose()

asyncio.run(main(json.loads(sys.argv[1])))
"""

# A claiming process: connects, says "ready", waits for "go" on stdin, then claims the
# question with its own answer and prints what happened.
CLAIMER = r"""
import asyncio, sys
from interaction import AskUserQuestionAnswer, AskUserQuestionAnswerItem, UserInteractionError
from interaction.postgres import PostgresRelay

async def main(url, schema, question_id, name):
    relay = PostgresRelay(url, schema=schema)
    await relay.connect()
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    answer = AskUserQuestionAnswer([AskUserQuestionAnswerItem("q", custom=name)])
    try:
        await relay.submit(question_id, answer)
    except UserInteractionError as error:
        print(error.code, flush=True)
    else:
        print("accepted", flush=True)
    await relay.aclose()

asyncio.run(main(*sys.argv[1:]))
"""


def free(text: str) -> AskUserQuestionRequest:
    return AskUserQuestionRequest([AskUserQuestionItem("q", text)])


@contextlib.asynccontextmanager
async def migrated(server: PostgresServer, **options: Any) -> AsyncIterator[PostgresRelay]:
    """A relay on a fresh schema, its tables made; closed on the way out."""
    relay = PostgresRelay(server.url, schema=f"p{secrets.token_hex(6)}", **options)
    await relay.migrate()
    try:
        yield relay
    finally:
        await relay.aclose()


def process(*argv: str) -> contextlib.AbstractAsyncContextManager[asyncio.subprocess.Process]:
    """A child process, SIGKILLed by its PID on the way out if it still runs."""
    pipe = subprocess.PIPE
    return running(*argv, stdin=pipe, stdout=pipe, stderr=pipe)


async def line_of(child: asyncio.subprocess.Process) -> str:
    assert child.stdout is not None
    line = await asyncio.wait_for(child.stdout.readline(), WAIT)
    assert line, "the child ended without a line"
    return line.decode().strip()


async def collect(
    events: AsyncGenerator[RelayEvent, None], enough: Callable[[list[RelayEvent]], bool]
) -> list[RelayEvent]:
    seen: list[RelayEvent] = []
    while not enough(seen):
        seen.append(await asyncio.wait_for(anext(events), WAIT))
    return seen


def requested(count: int) -> Callable[[list[RelayEvent]], bool]:
    return lambda seen: sum(e.kind == "requested" for e in seen) >= count


def texts(seen: list[RelayEvent]) -> dict[str, str]:
    """Question text -> relay id, of the ``requested`` events."""
    return {
        e.question.request.questions[0].question: e.id
        for e in seen
        if e.kind == "requested" and e.question is not None
    }


async def scalar(url: str, query: str, *params: object) -> object:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as db:
        row = await (await db.execute(query, params)).fetchone()
    assert row is not None
    return row[0]


def test_without_psycopg_the_import_names_the_extra() -> None:
    assert import_error_without("psycopg", "interaction.postgres_relay") == (
        "interaction.postgres_relay needs psycopg 3:"
        ' pip install "interaction-seam[postgres]" (the interaction[postgres] extra)'
    )


def test_a_bad_url_schema_or_setting_is_refused_when_built() -> None:
    with pytest.raises(ValueError, match='missing "=" after'):
        PostgresRelay("localhost:5432")
    for schema in ("", "Mixed", "a-b", "x" * 41, 'a"b', "1st"):
        with pytest.raises(ValueError, match="the schema must be a lower-case SQL name"):
            PostgresRelay("postgresql://127.0.0.1:1/db", schema=schema)
    with pytest.raises(ValueError, match="must be positive"):
        PostgresRelay("postgresql://127.0.0.1:1/db", poll_interval=0)
    relay = PostgresRelay("postgresql://user:secret@db.internal:6543/app")
    assert relay.where == "db.internal:6543/app"  # never the password


async def test_a_database_that_cannot_be_reached_is_relay_unavailable() -> None:
    relay = PostgresRelay("postgresql://postgres@127.0.0.1:1/postgres")
    for call in (
        relay.snapshot(),
        relay.lookup("x"),
        relay.dismiss("x"),
        relay.ask(free("Q?")),
        relay.migrate(),
    ):
        with pytest.raises(UserInteractionError) as info:
            await call
        assert info.value.code == RELAY_UNAVAILABLE
        assert info.value.message.startswith(
            "the relay's store at 127.0.0.1:1/postgres cannot be used: "
        )
    await relay.aclose()


async def test_missing_tables_say_to_migrate_and_migrate_is_idempotent_and_versioned(
    postgres_server: PostgresServer,
) -> None:
    schema = f"m{secrets.token_hex(6)}"
    relay = PostgresRelay(postgres_server.url, schema=schema)
    with pytest.raises(UserInteractionError) as missing:
        await relay.snapshot()
    assert missing.value.code == RELAY_UNAVAILABLE
    assert missing.value.message == (
        f"the relay's tables are not in the database at {relay.where} (schema {schema!r}):"
        " run `await relay.migrate()` or `interaction serve --postgres URL --migrate` once"
    )
    others = [PostgresRelay(postgres_server.url, schema=schema) for _ in range(3)]
    await asyncio.gather(*(other.migrate() for other in others))  # at once: one at a time
    meta = f'SELECT version, epoch FROM "{schema}".meta'
    assert await scalar(postgres_server.url, meta) == 2
    epoch = await scalar(postgres_server.url, f'SELECT epoch FROM "{schema}".meta')
    with provide(relay):
        task = asyncio.create_task(ask(free("Kept across a migration?")))
        snapshot = await relay.snapshot()
        while not snapshot.questions:  # the ask is on its way to the database
            await asyncio.sleep(0.01)
            snapshot = await relay.snapshot()
        await relay.migrate()  # again, with a question pending: nothing changes
        assert await scalar(postgres_server.url, f'SELECT epoch FROM "{schema}".meta') == epoch
        assert (await relay.snapshot()).questions == snapshot.questions
        await relay.submit(snapshot.questions[0].id, Answer([Item("q", custom="yes")]))
        assert (await task).answers == (Item("q", custom="yes"),)
    await execute(postgres_server.url, f'UPDATE "{schema}".meta SET version = 99')
    newer = PostgresRelay(postgres_server.url, schema=schema)
    for call in (newer.snapshot(), newer.migrate()):
        with pytest.raises(UserInteractionError) as info:
            await call
        assert info.value.message == (
            f"the relay's tables at {relay.where} (schema {schema!r}) are at version 99,"
            " newer than this relay's 2: upgrade interaction-seam"
        )
    for each in (relay, newer, *others):
        await each.aclose()


async def test_a_migration_beside_a_running_relay_takes_the_meta_row_first_and_never_deadlocks(
    postgres_server: PostgresServer,
) -> None:
    """Two hosts started at once with ``--migrate``: one's relay already runs (its
    heartbeat holds the meta row, as every function does first, and then touches the
    questions) while the other migrates. The migration used to lock the questions table
    (``ALTER TABLE``) before the meta row, and one of the two failed with "deadlock
    detected"; it now waits for the meta row before anything else."""
    async with migrated(postgres_server) as relay:
        s = f'"{relay.schema}"'
        async with await psycopg.AsyncConnection.connect(postgres_server.url) as running:
            await running.execute(f"SELECT 1 FROM {s}.meta FOR UPDATE")  # a heartbeat's start
            other_host = PostgresRelay(postgres_server.url, schema=relay.schema)
            migrating = asyncio.create_task(other_host.migrate())
            waiting = (
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
            )
            async with asyncio.timeout(WAIT):  # the migration waits for a lock
                while await scalar(postgres_server.url, waiting) == 0:
                    assert not migrating.done(), migrating
                    await asyncio.sleep(0.01)
            await running.execute("SET LOCAL statement_timeout = '10s'")
            await running.execute(f"SELECT count(*) FROM {s}.questions")  # the heartbeat's next
        await migrating  # once the heartbeat committed
        await other_host.aclose()
        assert (await relay.snapshot()).questions == ()


async def test_tables_of_version_1_migrate_and_their_questions_read_without_an_answerer(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    """A database as version 1 left it (no ``answerer`` column; questions asked, answered
    and pending): the relay asks for the migration, which keeps every row, and after it the
    old rows read (naming nobody) and a new answer names its answerer."""
    schema = f"v{secrets.token_hex(6)}"
    s = f'"{schema}"'
    keyed = AskUserQuestionRequest([AskUserQuestionItem("q", "Answered before?")], key="k1")
    plain = free("Pending before?")
    async with await psycopg.AsyncConnection.connect(postgres_server.url, autocommit=True) as db:
        for statement in postgres_schema_v1.statements(schema):
            await db.execute(statement)
        await db.execute(f"INSERT INTO {s}.meta (version, epoch) VALUES (1, 'old')")
        ask_v1 = f"SELECT {s}.ask(%s, %s, 'gone', 60000, 100, 600000, 600000, %s, %s)"
        await db.execute(ask_v1, ("old-keyed", dumps(keyed), "k1", request_digest(keyed)))
        await db.execute(ask_v1, ("old-plain", dumps(plain), None, None))
        yes = dumps(Answer([Item("q", custom="yes")]))
        await db.execute(f"SELECT {s}.settle('old-keyed', 'answered', %s, 600000, 'c')", [yes])
    relay = PostgresRelay(postgres_server.url, schema=schema)
    with pytest.raises(UserInteractionError) as old:
        await relay.snapshot()
    assert old.value.message == (
        f"the relay's tables at {relay.where} (schema {schema!r}) are at version 1:"
        " run `await relay.migrate()` to bring them to 2"
    )
    await relay.migrate()
    await relay.migrate()  # again: nothing changes
    assert await scalar(postgres_server.url, f"SELECT version FROM {s}.meta") == 2
    settles = "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
    settles += " WHERE n.nspname = %s AND p.proname IN ('settle', 'settle_one')"
    assert await scalar(postgres_server.url, settles, schema) == 2  # the old forms are gone
    events = relay.events("old.0")
    assert [(e.kind, e.id, e.outcome, e.answerer) for e in await collect(events, at(3))] == [
        ("requested", "old-keyed", None, None),
        ("requested", "old-plain", None, None),
        ("resolved", "old-keyed", "answered", None),
    ]
    assert [q.id for q in (await relay.snapshot()).questions] == ["old-plain"]
    path = tmp_path / "audit.jsonl"
    log = JsonlAuditLog(path)
    with provide(AuditProvider(relay, log, answerer="the-askers-own")):
        assert (await ask(keyed)).answers == (Item("q", custom="yes"),)  # stored: at once
    log.close()
    (record,) = [json.loads(line) for _, line in read_jsonl(path)]
    assert (record["decidedBy"], record["answerer"]) == ("human", "the-askers-own")
    await relay.submit("old-plain", Answer([Item("q", custom="now")]), answerer="alice")
    (resolved,) = await collect(events, at(1))
    assert resolved == RelayEvent("resolved", "old-plain", outcome="answered", answerer="alice")
    await events.aclose()
    await relay.aclose()


def at(count: int) -> Callable[[list[RelayEvent]], bool]:
    return lambda seen: len(seen) >= count


async def test_of_eight_processes_claiming_one_question_exactly_one_wins(
    postgres_server: PostgresServer,
) -> None:
    async with migrated(postgres_server) as relay:
        with provide(relay):
            start = (await relay.snapshot()).position
            task = asyncio.create_task(ask(free("Who wins?")))
            events = relay.events(start)
            (event,) = await collect(events, requested(1))
            await events.aclose()
            async with contextlib.AsyncExitStack() as stack:
                children = [
                    await stack.enter_async_context(
                        process(
                            sys.executable,
                            "-c",
                            CLAIMER,
                            postgres_server.url,
                            relay.schema,
                            event.id,
                            f"claimer {n}",
                        )
                    )
                    for n in range(8)
                ]
                for child in children:
                    assert await line_of(child) == "ready"
                for child in children:  # all at once
                    assert child.stdin is not None
                    child.stdin.write(b"go\n")
                    await child.stdin.drain()
                said = [await line_of(child) for child in children]
                for child in children:
                    assert await asyncio.wait_for(child.wait(), WAIT) == 0
            assert sorted(said) == sorted(["accepted"] + [NOT_PENDING] * 7)
            winner = f"claimer {said.index('accepted')}"
            assert (await task).answers == (Item("q", custom=winner),)
            assert (await relay.snapshot()).questions == ()


async def test_a_killed_askers_plain_questions_are_withdrawn_its_keyed_ones_wait_for_it(
    postgres_server: PostgresServer,
) -> None:
    async with migrated(postgres_server, lease_ttl=0.3) as observer:  # reaps quickly
        start = await observer.snapshot()
        events = observer.events(start.position)
        keyed = [["Keyed one?", "k1"], ["Keyed two?", "k2"]]
        config = {
            "url": postgres_server.url,
            "schema": observer.schema,
            "lease": 0.6,
            "listen": True,
            "plain": ["Plain?"],
            "keyed": keyed,
        }
        async with process(sys.executable, "-c", ASKER, json.dumps(config)) as child:
            ids = texts(await collect(events, requested(3)))
            child.kill()  # SIGKILL: no cleanup runs, its lease just stops being refreshed
            await child.wait()
        resolved = await collect(events, lambda got: any(e.kind == "resolved" for e in got))
        assert resolved == [RelayEvent("resolved", ids["Plain?"], outcome="aborted")]
        pending = {q.id for q in (await observer.snapshot()).questions}
        assert pending == {ids["Keyed one?"], ids["Keyed two?"]}
        with pytest.raises(UserInteractionError) as late:
            await observer.submit(ids["Plain?"], Answer([Item("q", custom="late")]))
        assert late.value.message == (
            f"question {ids['Plain?']!r} is not pending (withdrawn by the asker)"
        )
        await observer.submit(ids["Keyed one?"], Answer([Item("q", custom="one")]))
        restart = (await observer.snapshot()).position
        again_config = json.dumps({**config, "plain": []})
        async with process(sys.executable, "-c", ASKER, again_config) as again:
            line = json.loads(await line_of(again))
            assert line == {"text": "Keyed one?", "custom": "one"}
            await observer.submit(ids["Keyed two?"], Answer([Item("q", custom="two")]))
            assert json.loads(await line_of(again)) == {"text": "Keyed two?", "custom": "two"}
            assert await asyncio.wait_for(again.wait(), WAIT) == 0
        later = observer.events(restart)
        after = await collect(later, lambda got: len(got) == 1)
        assert after == [RelayEvent("resolved", ids["Keyed two?"], outcome="answered")]
        await later.aclose()
        await events.aclose()
        assert (await observer.snapshot()).questions == ()


async def test_a_database_restart_mid_ask_says_unavailable_then_recovers() -> None:
    with PostgresServer() as server:
        async with migrated(server, lease_ttl=30) as relay:
            with provide(relay):
                start = await relay.snapshot()
                events = relay.events(start.position)
                waiting = asyncio.create_task(ask(free("Pending across?")))
                (event,) = await collect(events, requested(1))
                # The event can arrive before the asker has read its own call's reply; a
                # crash then loses that reply and the ask ends RELAY_UNAVAILABLE (as on
                # Redis). Crash only once the ask waits for its answer.
                async with asyncio.timeout(WAIT):
                    while not relay._waiters.published(event.id):  # noqa: ASYNC110
                        await asyncio.sleep(0.01)  # no event marks the reply's arrival
                server.crash()  # every backend ends at once; recovery on the next start
                with pytest.raises(UserInteractionError) as told:
                    await asyncio.wait_for(anext(events), WAIT)  # the tail lost the store
                assert told.value.code == RELAY_UNAVAILABLE
                for call in (
                    ask(free("While down?")),
                    relay.snapshot(),
                    relay.submit(event.id, Answer([Item("q", custom="too early")])),
                ):
                    with pytest.raises(UserInteractionError) as down:
                        await call
                    assert down.value.code == RELAY_UNAVAILABLE
                assert not waiting.done()
                server.restart(crash=False)
                snapshot = await relay.snapshot()  # a kept connection fails; a new one works
                assert [q.id for q in snapshot.questions] == [event.id]
                await relay.submit(event.id, Answer([Item("q", custom="after")]))
                assert (await asyncio.wait_for(waiting, WAIT)).answers == (
                    Item("q", custom="after"),
                )
                again = relay.events(start.position)
                replayed = await collect(again, lambda got: len(got) == 2)
                assert replayed == [event, RelayEvent("resolved", event.id, outcome="answered")]
                await again.aclose()


async def listeners(url: str) -> int:
    """How many of the relays' connections have said LISTEN (their last statement)."""
    query = (
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE application_name = 'interaction-relay' AND query LIKE 'LISTEN %%'"
    )
    count = await scalar(url, query)
    assert isinstance(count, int)
    return count


async def test_without_listen_the_relays_poll_and_lose_nothing(
    postgres_server: PostgresServer,
) -> None:
    """Behind a transaction-pooling PgBouncer NOTIFY does not arrive: with ``listen=False``
    no connection listens, and an ask from another process is seen and answered by polling."""
    before = await listeners(postgres_server.url)
    async with migrated(postgres_server, listen=False, poll_interval=0.05) as page:
        start = await page.snapshot()
        events = page.events(start.position)
        config = {
            "url": postgres_server.url,
            "schema": page.schema,
            "lease": 15,
            "listen": False,
            "plain": ["Polled?"],
            "keyed": [],
        }
        async with process(sys.executable, "-c", ASKER, json.dumps(config)) as child:
            (event,) = await collect(events, requested(1))
            assert await listeners(postgres_server.url) == before
            await page.submit(event.id, Answer([Item("q", custom="by polling")]))
            line = json.loads(await line_of(child))
            assert line == {"text": "Polled?", "custom": "by polling"}
            assert await asyncio.wait_for(child.wait(), WAIT) == 0
        resolved = await collect(events, lambda got: len(got) == 1)
        assert resolved == [RelayEvent("resolved", event.id, outcome="answered")]
        await events.aclose()
    async with migrated(postgres_server) as listening:
        await listening.connect()
        assert await listeners(postgres_server.url) == before + 1


async def test_a_snapshot_ahead_of_the_tail_resumes_without_being_stale(
    postgres_server: PostgresServer,
) -> None:
    """A snapshot may be newer than what the process's tail has read (here it polls, and
    not yet): events after its position wait for the tail, they are not STALE_POSITION."""
    async with migrated(postgres_server) as asker:
        page = PostgresRelay(
            postgres_server.url, schema=asker.schema, listen=False, poll_interval=1.0
        )
        await page.connect()
        with provide(asker):
            start = (await asker.snapshot()).position
            events = asker.events(start)
            task = asyncio.create_task(ask(free("Ahead?")))
            (event,) = await collect(events, requested(1))
            await events.aclose()
            snapshot = await page.snapshot()  # its tail has not polled since the ask
            assert [q.id for q in snapshot.questions] == [event.id]
            ahead = page.events(snapshot.position)
            step = asyncio.ensure_future(anext(ahead))
            # Nothing has happened since: the step waits (it was STALE_POSITION at once).
            done, _ = await asyncio.wait({step}, timeout=1.0)
            assert not done
            await asker.dismiss(event.id)
            resolved = await asyncio.wait_for(step, WAIT)
            assert resolved == RelayEvent("resolved", event.id, outcome="cancelled")
            await ahead.aclose()
            with pytest.raises(UserInteractionError):
                await task
        await page.aclose()


def number(position: str) -> int:
    """The event counter's number in a Postgres relay's position (``<epoch>.<number>``)."""
    return int(position.rpartition(".")[2])


async def test_an_event_row_another_hand_wrote_is_passed_over_and_stops_no_ask(
    postgres_server: PostgresServer,
) -> None:
    """A row written into the events table by hand at the counter's next position (issue
    41): every ask went on failing there (the counter rolled back with the failed
    insert). Asks take the next free position, in every process, and every reader passes
    the row over. A schema made before holds the old function: ``migrate()`` replaces it."""
    url = postgres_server.url
    async with migrated(postgres_server) as relay:
        s = f'"{relay.schema}"'
        await execute(url, OLD_APPEND_EVENT.format(s=s, channel=f"{relay.schema}_relay_events"))
        await relay.migrate()  # an existing database, brought up to date
        other = PostgresRelay(url, schema=relay.schema)  # another process
        start = (await relay.snapshot()).position
        events = relay.events(start)
        hand = (
            f"INSERT INTO {s}.events (position, kind, question_id)"
            f" SELECT last_position + 1, 'note', '' FROM {s}.meta RETURNING position"
        )
        taken = await scalar(url, hand)
        assert taken == number(start) + 1
        with provide(relay):
            first = asyncio.create_task(ask(free("After the hand's row?")))
            (asked,) = await collect(events, requested(1))  # the note is passed over
            assert number(asked.position) == number(start) + 2
            second = asyncio.create_task(other.ask(free("From another process?")))
            (asked_there,) = await collect(events, requested(1))
            assert number(asked_there.position) == number(start) + 3
            await other.submit(asked.id, Answer([Item("q", custom="one")]))
            await relay.submit(asked_there.id, Answer([Item("q", custom="two")]))
            answered = await asyncio.wait_for(second, WAIT)
            assert answered.answers == (Item("q", custom="two"),)
            assert (await asyncio.wait_for(first, WAIT)).answers == (Item("q", custom="one"),)
        await events.aclose()
        fresh = PostgresRelay(url, schema=relay.schema)  # no buffer: it reads the table
        replayed = fresh.events(start)
        got = await collect(replayed, lambda seen: len(seen) == 4)
        await replayed.aclose()
        assert [(e.kind, e.id) for e in got] == [
            ("requested", asked.id),
            ("requested", asked_there.id),
            ("resolved", asked.id),
            ("resolved", asked_there.id),
        ]
        for each in (other, fresh):
            await each.aclose()


async def test_an_ask_waits_for_a_hands_row_still_being_written_then_passes_it(
    postgres_server: PostgresServer,
) -> None:
    """The hand's row is not committed yet when the ask takes a position: the ask waits
    for the hand's transaction, then takes the position after its row."""
    url = postgres_server.url
    async with migrated(postgres_server) as relay:
        s = f'"{relay.schema}"'
        start = (await relay.snapshot()).position
        events = relay.events(start)
        waiting = (
            "SELECT count(*) FROM pg_stat_activity WHERE application_name ="
            " 'interaction-relay' AND wait_event_type = 'Lock'"
        )
        async with await psycopg.AsyncConnection.connect(url) as hand:  # one transaction
            await hand.execute(
                f"INSERT INTO {s}.events (position, kind, question_id)"
                f" SELECT last_position + 1, 'note', '' FROM {s}.meta"
            )
            with provide(relay):
                task = asyncio.create_task(ask(free("Behind an open transaction?")))
                async with asyncio.timeout(WAIT):  # the ask's insert waits on the hand's row
                    while await scalar(url, waiting) == 0:  # noqa: ASYNC110
                        await asyncio.sleep(0.02)  # polling the server: no event to wait on
                await hand.commit()
                (asked,) = await collect(events, requested(1))
                assert number(asked.position) == number(start) + 2
                await relay.dismiss(asked.id)
                with pytest.raises(UserInteractionError) as info:
                    await asyncio.wait_for(task, WAIT)
        assert info.value.code == "ASK_CANCELLED"
        await events.aclose()


async def test_settled_rows_expire_and_positions_beyond_the_history_are_stale(
    postgres_server: PostgresServer,
) -> None:
    async with migrated(postgres_server, history=3, settled_ttl=0.05, lease_ttl=0.15) as relay:
        with provide(relay):
            start = (await relay.snapshot()).position
            events = relay.events(start)
            for n in range(3):  # six events: the first three are beyond the history
                task = asyncio.create_task(ask(free(f"Q{n}?")))
                (event,) = await collect(events, requested(1))
                await relay.dismiss(event.id)
                with pytest.raises(UserInteractionError):
                    await task
                await collect(events, lambda got: len(got) == 1)
            await events.aclose()
            table = f'"{relay.schema}"'
            count = f"SELECT count(*) FROM {table}.questions"
            async with asyncio.timeout(WAIT):  # the heartbeat's sweep, in the database
                while await scalar(postgres_server.url, count) != 0:  # noqa: ASYNC110
                    await asyncio.sleep(0.05)  # polling a table: no event to wait on
            assert await scalar(postgres_server.url, f"SELECT count(*) FROM {table}.events") == 3
            fresh = PostgresRelay(postgres_server.url, schema=relay.schema)  # no buffer
            with pytest.raises(UserInteractionError) as stale:
                await anext(fresh.events(start))
            assert stale.value.code == STALE_POSITION
            await fresh.aclose()
            with pytest.raises(UserInteractionError) as gone:
                await relay.dismiss(event.id)
            assert gone.value.message == (
                f"question {event.id!r} is not pending (unknown, or already settled)"
            )


@contextlib.asynccontextmanager
async def host(
    server: PostgresServer, schema: str
) -> AsyncIterator[tuple[asyncio.subprocess.Process, str]]:
    """An ``interaction serve --postgres --migrate`` process and its page's address,
    SIGKILLed by its PID on the way out."""
    argv = ("--postgres", server.url, "--schema", schema, "--migrate")
    async with serve(*argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as child:
        yield child, await announced(child.stderr, ANSWER_AT, WAIT)


async def test_the_web_page_answers_through_serve_postgres(
    postgres_server: PostgresServer,
) -> None:
    schema = f"w{secrets.token_hex(6)}"
    async with host(postgres_server, schema) as (_, url):  # it makes the tables
        base, _, token = url.partition("/#token=")
        relay = PostgresRelay(postgres_server.url, schema=schema)
        try:
            async with httpx.AsyncClient(
                base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=WAIT
            ) as http:
                page = await http.get("/")
                assert page.status_code == 200
                assert "text/html" in page.headers["content-type"]
                with provide(relay):
                    async with http.stream("GET", "/api/events") as stream:
                        seen = sse(stream.aiter_lines())
                        assert (await anext(seen)).kind == "snapshot"
                        task = asyncio.create_task(ask(free("Through the page?")))
                        shown = await anext(seen)
                        assert shown.kind == "requested"
                        assert isinstance(shown.data, dict)
                        question_id = shown.data["id"]
                        body = {"answers": [{"id": "q", "selected": [], "custom": "yes"}]}
                        posted = await http.post(f"/api/questions/{question_id}/answer", json=body)
                        assert posted.status_code == 200, posted.text
                        assert (await asyncio.wait_for(task, WAIT)).answers == (
                            Item("q", custom="yes"),
                        )
                        assert (await anext(seen)).kind == "resolved"
                    again = await http.post(f"/api/questions/{question_id}/answer", json=body)
                    assert again.status_code == 409
        finally:
            await relay.aclose()


async def test_a_browser_answers_on_the_page_of_serve_postgres(
    postgres_server: PostgresServer, browser: Browser
) -> None:
    """The page itself (Debian's chromium): a question asked here appears on the page
    another process serves from the database, and the click answers it."""
    schema = f"b{secrets.token_hex(6)}"
    async with host(postgres_server, schema) as (_, url):
        relay = PostgresRelay(postgres_server.url, schema=schema)
        page = await browser.new_page()
        try:
            await page.goto(url)
            await page.get_by_text("No question is waiting.").wait_for()
            with provide(relay):
                question = AskUserQuestionItem(
                    "pkg",
                    "Which package manager?",
                    options=[AskUserQuestionOption("pnpm"), AskUserQuestionOption("npm")],
                )
                task = asyncio.create_task(ask(AskUserQuestionRequest([question])))
                await page.get_by_test_id("question").wait_for()
                await page.get_by_text("npm", exact=True).click()
                await page.get_by_test_id("submit").click()
                assert await asyncio.wait_for(task, WAIT) == Answer([Item("pkg", ["npm"])])
            await page.get_by_text("No question is waiting.").wait_for()
        finally:
            await page.close()
            await relay.aclose()


def test_serve_refuses_a_bad_postgres_url_or_unreachable_store_in_one_line() -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "interaction", "serve", "--port", "0", *args]
        return subprocess.run(argv, capture_output=True, text=True, timeout=WAIT, check=False)

    bad = run("--postgres", "localhost:5432")
    assert bad.returncode == 2
    assert bad.stderr == (
        "interaction: --postgres is not a PostgreSQL URL or connection string:"
        " use postgresql://USER@HOST:PORT/DB\n"
    )
    away = run("--postgres", "postgresql://user:secret@127.0.0.1:1/db", "--migrate")
    assert away.returncode == 2
    assert away.stderr.startswith(
        "interaction: the relay's store at 127.0.0.1:1/db cannot be used: "
    )
    assert away.stderr.endswith(" (RELAY_UNAVAILABLE)\n")
    assert away.stderr.count("\n") == 1
    assert "secret" not in away.stderr
    schema = run("--postgres", "postgresql://127.0.0.1:1/db", "--schema", "No-Way")
    assert schema.returncode == 2
    assert schema.stderr == (
        "interaction: --schema: the schema must be a lower-case SQL name"
        " (a-z, 0-9, _; up to 40): 'No-Way'\n"
    )
    alone = run("--migrate")
    assert alone.returncode == 2
    assert alone.stderr == "interaction: --migrate needs --postgres URL\n"


def ask_postgres(*args: str) -> list[str]:
    return [sys.executable, "-m", "interaction", "ask", *args]


async def test_ask_postgres_puts_the_question_on_the_page_of_that_database(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    """``interaction ask FILE --postgres URL --schema S``, as docs/web.md's recipe runs it:
    the question waits in the database, a page's relay answers it, the JSON is printed."""
    path = tmp_path / "go.json"
    path.write_text(json.dumps({"questions": [{"id": "go", "question": "Deploy?"}]}))
    async with migrated(postgres_server) as page:
        events = page.events((await page.snapshot()).position)
        argv = ask_postgres(str(path), "--postgres", postgres_server.url, "--schema", page.schema)
        try:
            async with process(*argv, "--source", "nightly-build") as child:
                shown = (await collect(events, requested(1)))[-1]
                assert shown.question is not None
                assert shown.question.request.questions[0].question == "Deploy?"
                provenance = shown.question.request.provenance
                assert provenance is not None
                assert (provenance.source, provenance.host) == ("nightly-build", local_host())
                await page.submit(shown.id, Answer([Item("go", custom="yes")]))
                out, err = await asyncio.wait_for(child.communicate(), WAIT)
                assert child.returncode == 0, err
                assert out.decode() == '{"answers":[{"id":"go","selected":[],"custom":"yes"}]}\n'
                assert err.decode() == (
                    "interaction: the question waits on the page serving this store\n"
                )
        finally:
            await events.aclose()
        assert (await page.snapshot()).questions == ()


async def test_ask_postgres_dismissed_on_the_page_exits_1(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    path = tmp_path / "go.json"
    path.write_text(json.dumps({"questions": [{"id": "go", "question": "Deploy?"}]}))
    async with migrated(postgres_server) as page:
        events = page.events((await page.snapshot()).position)
        argv = ask_postgres(str(path), "--postgres", postgres_server.url, "--schema", page.schema)
        try:
            async with process(*argv) as child:
                shown = (await collect(events, requested(1)))[-1]
                await page.dismiss(shown.id)
                out, err = await asyncio.wait_for(child.communicate(), WAIT)
        finally:
            await events.aclose()
    assert child.returncode == 1
    assert out == b""
    assert err.decode().splitlines()[-1].endswith("(ASK_CANCELLED)")


def test_ask_postgres_refuses_bad_input_in_one_line(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    path = tmp_path / "go.json"
    path.write_text(json.dumps({"questions": [{"id": "go", "question": "Deploy?"}]}))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        argv = ask_postgres(str(path), *args)
        return subprocess.run(argv, capture_output=True, text=True, timeout=WAIT, check=False)

    bad = run("--postgres", "localhost:5432")
    assert (bad.returncode, bad.stdout) == (2, "")
    assert bad.stderr == (
        "interaction: --postgres is not a PostgreSQL URL or connection string:"
        " use postgresql://USER@HOST:PORT/DB (BAD_REQUEST)\n"
    )
    away = run("--postgres", "postgresql://user:secret@127.0.0.1:1/db")
    assert away.returncode == 2
    assert away.stderr.startswith("interaction: the relay's store at 127.0.0.1:1/db cannot be used")
    assert away.stderr.endswith(" (RELAY_UNAVAILABLE)\n")
    assert away.stderr.count("\n") == 1  # not "the question waits" first
    assert "secret" not in away.stderr
    schema = f"n{secrets.token_hex(6)}"
    unmade = run("--postgres", postgres_server.url, "--schema", schema)
    assert unmade.returncode == 2
    assert unmade.stderr == (
        f"interaction: the relay's tables are not in the database at 127.0.0.1:"
        f"{postgres_server.port}/postgres (schema {schema!r}): run `await relay.migrate()` or"
        " `interaction serve --postgres URL --migrate` once (RELAY_UNAVAILABLE)\n"
    )
    named = run("--postgres", postgres_server.url, "--schema", "No-Way")
    assert named.returncode == 2
    assert named.stderr == (
        "interaction: --schema: the schema must be a lower-case SQL name"
        " (a-z, 0-9, _; up to 40): 'No-Way' (BAD_REQUEST)\n"
    )
    alone = run("--schema", "s")
    assert alone.returncode == 2
    assert alone.stderr.splitlines()[-1] == (
        "interaction ask: error: --schema needs --postgres (it names the relay's tables)"
    )
    both = run("--postgres", postgres_server.url, "--redis", "redis://127.0.0.1:1/0")
    assert both.returncode == 2
    assert both.stderr.splitlines()[-1] == (
        "interaction ask: error: argument --redis: not allowed with argument --postgres"
    )
