"""The Postgres relay beside the Redis relay: (p) one question across hosts, (q) bytes per
pending question, (u) answers per second under the Redis relay's load
(``benchmarks/relay_load.py`` on PostgreSQL, which also runs on its own) against its floor
app: two bare Starlette hosts, one SQL claim per answer, taking turns with ours.

Needs the ``postgres``, ``redis`` and ``web`` extras, PostgreSQL's server binaries (as the
tests find them) and ``redis-server``. Every ratio compares subjects measured in the same
run, taking turns round by round, as medians of rounds. The server runs with ``fsync``
on, as a deployment would; Redis runs without persistence, as in run.py's (m), so the
trip is also measured with ``synchronous_commit=off`` (commits that do not wait for the
disk's flush).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
from timing import CHILD_ENV, Row, turns

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.postgres_server import PostgresServer
from tests.redis_server import RedisServer

import interaction
from interaction import (
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    UserInteractionProvider,
    wire,
)
from interaction.postgres import PostgresRelay
from interaction.redis import RedisRelay
from interaction.relay import Relay
from interaction.web import WebServer


def request_1x3() -> AskUserQuestionRequest:
    """The benchmarks' usual request: 1 question x 3 options."""
    return AskUserQuestionRequest(
        [
            AskUserQuestionItem(
                "q0",
                "Question number 0: which one should the agent use?",
                header="Topic 0",
                options=[
                    AskUserQuestionOption("Option 0 (Recommended)", "Because 0"),
                    AskUserQuestionOption("Option 1", "Because 1"),
                    AskUserQuestionOption("Option 2", "Because 2"),
                ],
            )
        ]
    )


class CountingServer(PostgresServer):
    """The tests' server with ``pg_stat_statements`` loaded, which counts (p)'s statements."""

    def _argv(self) -> list[str]:
        return [*super()._argv(), "-c", "shared_preload_libraries=pg_stat_statements"]


def web_host(*store: str) -> tuple[subprocess.Popen[bytes], str, str]:
    """An ``interaction serve`` process on a shared store (host B): its base URL and token."""
    argv = [sys.executable, "-m", "interaction", "serve", *store, "--port", "0"]
    child = subprocess.Popen(argv, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=CHILD_ENV)
    assert child.stderr is not None
    line = child.stderr.readline().decode()
    base, _, token = line.removeprefix("interaction: answer at ").strip().partition("/#token=")
    return child, base, token


async def trips(
    relay: UserInteractionProvider, http: httpx.AsyncClient, lines: AsyncIterator[str], number: int
) -> float:
    """Mean seconds of one question: asked here (host A), its ``requested`` event read from
    host B's stream, the answer POSTed to B, the ask returned here."""
    request = request_1x3()
    body = {"answers": [{"id": "q0", "selected": ["Option 1"]}]}
    start = time.perf_counter()
    with interaction.provide(relay):
        for _ in range(number):
            settled = asyncio.create_task(interaction.ask(request))
            while (await anext(lines)) != "event: requested":
                pass
            qid = json.loads((await anext(lines)).removeprefix("data: "))["id"]
            await http.post(f"/api/questions/{qid}/answer", json=body)
            await settled
    return (time.perf_counter() - start) / number


NO_FLUSH_WAIT = "options=-c%20synchronous_commit%3Doff"
"""A connection setting (in the URL) that commits without waiting for the disk's flush."""


@dataclass(frozen=True, slots=True)
class Trips:
    """(p)'s figures: medians of seconds per question across hosts (over Postgres, the
    same with ``synchronous_commit=off``, over Redis), per bare ``SELECT 1``, per bare
    durable commit (a one-row ``UPDATE``, flushed), per question on one host in memory,
    per bare heard commit (an ``INSERT`` and a ``NOTIFY``, one durable commit, until a
    connection that listens has the notification); and the statements per question by
    what they run."""

    over_postgres: float
    over_redis: float
    not_flushed: float
    select: float
    near: float
    commit: float
    heard: float
    statements: dict[str, float]

    def trips(self) -> float:
        """Round trips per question, every process (the notifications counted)."""
        return sum(self.statements.values())

    def protocol_floor(self) -> float:
        """The one-host trip plus the round trips the protocol needs, each as bare as it
        can be: the ask and the claim each a heard commit (a commit and its notification),
        any other trip counted a ``SELECT 1``."""
        others = max(0.0, self.trips() - 4)
        return self.near + 2 * self.heard + others * self.select


@dataclass(frozen=True, slots=True)
class HeardCommits:
    """The protocol's bare hop: a durable commit whose notification another connection
    hears (an ``INSERT`` and a ``NOTIFY`` in one simple-protocol query: one round trip,
    one transaction), with no relay on either side."""

    talker: psycopg.AsyncConnection[tuple[object, ...]]
    listener: psycopg.AsyncConnection[tuple[object, ...]]
    notifications: AsyncGenerator[psycopg.Notify, None]
    insert: str

    @classmethod
    async def open(
        cls, url: str, schema: str, talker: psycopg.AsyncConnection[tuple[object, ...]]
    ) -> HeardCommits:
        await talker.execute(f'CREATE TABLE "{schema}".heard (n bigserial PRIMARY KEY)')
        listener = await psycopg.AsyncConnection.connect(url, autocommit=True)
        await listener.execute(f"LISTEN {schema}_heard")
        insert = f'INSERT INTO "{schema}".heard DEFAULT VALUES; NOTIFY {schema}_heard'
        return cls(talker, listener, listener.notifies(), insert)

    async def each(self, number: int) -> float:
        """Mean seconds from a commit's start until the listener has its notification."""
        start = time.perf_counter()
        for _ in range(number):
            await self.talker.execute(self.insert)
            await anext(self.notifications)
        return (time.perf_counter() - start) / number

    async def close(self) -> None:
        await self.notifications.aclose()
        await self.listener.close()


async def round_trips(postgres_url: str, redis_url: str, number: int, repeat: int) -> Trips:
    """(p): seconds per question across hosts over Postgres, the same with
    ``synchronous_commit=off``, over Redis, per bare ``SELECT 1``, per bare durable commit,
    one host in memory, and per bare heard commit, the seven taking turns round by round;
    then the statements ``number`` questions across hosts over Postgres run
    (:func:`statements_per_question`)."""
    schema = f"bench{os.getpid()}"
    unflushed_url = f"{postgres_url}?{NO_FLUSH_WAIT}"
    postgres = PostgresRelay(postgres_url, schema=schema)
    await postgres.migrate()
    await postgres.connect()
    unflushed = PostgresRelay(unflushed_url, schema=f"{schema}u")
    await unflushed.migrate()
    await unflushed.connect()
    redis = RedisRelay(redis_url, prefix=schema)
    await redis.connect()
    hosts = [
        await asyncio.to_thread(web_host, "--postgres", postgres_url, "--schema", schema),
        await asyncio.to_thread(web_host, "--redis", redis_url, "--prefix", schema),
        await asyncio.to_thread(web_host, "--postgres", unflushed_url, "--schema", f"{schema}u"),
    ]
    bare = await psycopg.AsyncConnection.connect(postgres_url, autocommit=True)
    scratch = f'"{schema}".scratch'
    await bare.execute(f"CREATE TABLE {scratch} (one boolean PRIMARY KEY, n bigint NOT NULL)")
    await bare.execute(f"INSERT INTO {scratch} VALUES (true, 0)")
    heard = await HeardCommits.open(postgres_url, schema, bare)
    memory = Relay()
    samples: list[list[float]] = [[], [], [], [], [], [], []]
    try:
        async with (
            WebServer(memory) as near_server,
            httpx.AsyncClient(base_url=near_server.base, headers=auth(near_server.token)) as near,
            near.stream("GET", "/api/events") as near_events,
            httpx.AsyncClient(base_url=hosts[0][1], headers=auth(hosts[0][2])) as to_postgres,
            httpx.AsyncClient(base_url=hosts[1][1], headers=auth(hosts[1][2])) as to_redis,
            httpx.AsyncClient(base_url=hosts[2][1], headers=auth(hosts[2][2])) as to_unflushed,
            to_postgres.stream("GET", "/api/events") as postgres_events,
            to_redis.stream("GET", "/api/events") as redis_events,
            to_unflushed.stream("GET", "/api/events") as unflushed_events,
        ):
            subjects: list[tuple[UserInteractionProvider, httpx.AsyncClient, AsyncIterator[str]]]
            subjects = [
                (postgres, to_postgres, aiter(postgres_events.aiter_lines())),
                (redis, to_redis, aiter(redis_events.aiter_lines())),
                (unflushed, to_unflushed, aiter(unflushed_events.aiter_lines())),
                (memory, near, aiter(near_events.aiter_lines())),
            ]

            async def selects() -> float:
                start = time.perf_counter()
                for _ in range(number):
                    await bare.execute("SELECT 1")
                return (time.perf_counter() - start) / number

            async def commits() -> float:
                start = time.perf_counter()
                for _ in range(number):
                    await bare.execute(f"UPDATE {scratch} SET n = n + 1")
                return (time.perf_counter() - start) / number

            async def subject(index: int) -> float:
                if index == 3:
                    return await selects()
                if index == 5:
                    return await commits()
                if index == 6:
                    return await heard.each(number)
                return await trips(*subjects[index if index < 3 else 3], number)

            for index in range(7):  # warm every path
                await subject(index)
            for round_number in range(repeat):
                for index in turns(7, round_number):
                    samples[index].append(await subject(index))
            statements = await statements_per_question(postgres_url, subjects[0], number)
    finally:
        for child, _, _ in hosts:
            child.terminate()
            await asyncio.to_thread(child.wait)
        await heard.close()
        await bare.close()
        await postgres.aclose()
        await unflushed.aclose()
        await redis.aclose()
        memory.close()
    over_postgres, over_redis, not_flushed, select, near_trip, commit, heard_commit = (
        statistics.median(s) for s in samples
    )
    return Trips(
        over_postgres, over_redis, not_flushed, select, near_trip, commit, heard_commit, statements
    )


async def statements_per_question(
    url: str,
    subject: tuple[UserInteractionProvider, httpx.AsyncClient, AsyncIterator[str]],
    number: int,
) -> dict[str, float]:
    """The statements every process runs per question across hosts over Postgres, by the
    schema function or table they call, counted by ``pg_stat_statements`` over ``number``
    sequential questions (the relay's connections are autocommit and send each statement
    in one flush: a statement is a round trip). The statements the events table's trigger
    runs as a transaction commits are no trip, but for its ``pg_notify``, which counts as
    one (``notify``: the floor counts each notification as a trip). Each phase ends with a
    short pause, so the tails' reads after the last notification fall into it."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as db:
        await db.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        await asyncio.sleep(0.3)  # the warm-up's last reads are done
        await db.execute("SELECT pg_stat_statements_reset()")
        await trips(*subject, number)
        await asyncio.sleep(0.3)  # the tails have read the last events
        rows = await (
            await db.execute(
                "SELECT query, calls FROM pg_stat_statements"
                " WHERE query NOT LIKE %s AND query <> 'SELECT 1'",
                ["%pg_stat_statements%"],
            )
        ).fetchall()
    counts: dict[str, float] = {}
    for query, calls in rows:
        name = statement_name(str(query))
        if name is not None:
            counts[name] = counts.get(name, 0) + int(calls) / number
    return counts


def statement_name(query: str) -> str | None:
    """What a counted statement runs: ``notify`` (the trigger's notification), the schema
    function it calls (``ask``, ``settle``, ``heartbeat``), else the table it reads
    (``read events``: a tail's read); None for the rest of the trigger's work, and for the
    copy of a ``resolved`` notification sent to the question's owner on its own channel
    (``pg_notify(owned, ...)``): sent at the same commit, it is the same trip, heard by
    the asker there instead of on the schema's channel."""
    if "pg_notify(owned" in query:
        return None
    if "pg_notify(" in query:
        return "notify"
    if "NEW." in query or ".announce_key" in query:
        return None
    for function in ("ask", "settle", "heartbeat"):
        if f".{function}(" in query:
            return function
    for table in ("events", "questions", "meta"):
        if f".{table}" in query:
            return f"read {table}"
    return query.split(maxsplit=1)[0]


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def bytes_per_question(url: str, count: int) -> tuple[float, float, float]:
    """(q): bytes of database storage per pending question at ``count`` pending (every
    table of the schema with its indexes and TOAST, after an ``ANALYZE``, less the empty
    schema's), the questions table's share, and the request's own JSON. The questions are
    asked through the ask function directly, as many asker processes would."""
    schema = f"mem{count}"
    relay = PostgresRelay(url, schema=schema, max_pending=count + 1)
    await relay.migrate()
    size = (
        "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0), coalesce(sum("
        "  pg_total_relation_size(c.oid)) FILTER (WHERE c.relname = 'questions'), 0)"
        " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.relkind = 'r'"
    )
    text = wire.dumps(request_1x3())
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as db:
        empty, empty_questions = await one_row(db, size, schema)
        ask = f'SELECT "{schema}".ask(%s, %s, %s, %s, %s, %s, %s, NULL, NULL)'
        batch = 1_000  # asks per commit: fewer flushes, the same rows (one commit for all
        # would keep every version of the lock row alive, and each ask would walk them)
        for start in range(0, count, batch):
            async with db.transaction(), db.cursor() as cursor:
                rows = [
                    (f"id{i:07d}", text, relay.owner, 3_600_000, count + 1, 86_400_000, 86_400_000)
                    for i in range(start, min(count, start + batch))
                ]
                await cursor.executemany(ask, rows)
        await db.execute(f'ANALYZE "{schema}".questions, "{schema}".events')
        total, questions = await one_row(db, size, schema)
        await db.execute(f'DROP SCHEMA "{schema}" CASCADE')
    await relay.aclose()
    return (total - empty) / count, (questions - empty_questions) / count, len(text.encode())


async def one_row(
    db: psycopg.AsyncConnection[tuple[object, ...]], query: str, schema: str
) -> tuple[float, float]:
    row = await (await db.execute(query, [schema])).fetchone()
    assert row is not None
    return float(str(row[0])), float(str(row[1]))


def measure_postgres(quick: bool) -> list[Row]:
    """(p) the cross-process round trip over Postgres, beside Redis; (q) bytes per pending
    question in Postgres."""
    rows = []
    with (
        CountingServer(durable=True) as database,
        tempfile.TemporaryDirectory() as directory,
        RedisServer(Path(directory)) as redis_server,
    ):
        number, repeat = (5, 3) if quick else (100, 7)
        found = asyncio.run(round_trips(database.url, redis_server.url, number, repeat))
        case = "(p) one question across hosts over Postgres"
        subject = "ask on A -> event on B -> POST to B -> return on A"
        ms = found.over_postgres * 1e3
        floor = (found.near + 4 * found.select) * 1e3
        durable = (found.near + 2 * found.select + 2 * found.commit) * 1e3
        rows.append(
            Row(
                case,
                subject,
                ms,
                "in-memory trip, one host + 4 SELECT 1",
                floor,
                "ms",
                "<= 1.3x",
                headline=True,
            )
        )
        # The ask and the answer are each a durable commit before any host hears of it:
        # the trip cannot beat its floor with two of its SELECTs made flushed commits.
        rows.append(
            Row(
                case,
                subject,
                ms,
                "one host + 2 SELECT 1 + 2 durable commits",
                durable,
                "ms",
                "-",
            )
        )
        # Each of the protocol's trips is a durable commit that another connection must
        # hear: against the one-host trip plus two bare heard commits (and a SELECT 1 for
        # any other trip counted below), what is left is the relay's own work.
        others = max(0.0, found.trips() - 4)
        rows.append(
            Row(
                case,
                subject,
                ms,
                f"one host + 2 heard commits + {others:g} SELECT 1 (the protocol's floor)",
                found.protocol_floor() * 1e3,
                "ms",
                "-",
            )
        )
        rows.append(
            Row(case, subject, ms, "in-memory relay, one host", found.near * 1e3, "ms", "-")
        )
        rows.append(
            Row(case, subject, ms, "the same over Redis", found.over_redis * 1e3, "ms", "-")
        )
        rows.append(Row(case, subject, ms, "bare SELECT 1", found.select * 1e3, "ms", "-"))
        rows.append(
            Row(
                case,
                "bare durable commit",
                found.commit * 1e3,
                "bare SELECT 1",
                found.select * 1e3,
                "ms",
                "-",
            )
        )
        rows.append(
            Row(
                case,
                "bare heard commit: INSERT; NOTIFY until another connection has it",
                found.heard * 1e3,
                "bare durable commit",
                found.commit * 1e3,
                "ms",
                "-",
            )
        )
        rows.append(
            Row(
                case,
                "the same, synchronous_commit=off",
                found.not_flushed * 1e3,
                "in-memory trip, one host + 4 SELECT 1",
                floor,
                "ms",
                "-",
            )
        )
        rows.append(
            Row(
                case,
                "the same, synchronous_commit=off",
                found.not_flushed * 1e3,
                "the same over Redis",
                found.over_redis * 1e3,
                "ms",
                "-",
            )
        )
        rows.append(
            Row(
                "(p) Postgres round trips per question, every process",
                " + ".join(f"{name} {n:g}" for name, n in sorted(found.statements.items())),
                found.trips(),
                "the floor: ask + notify, claim + notify",
                4.0,
                "trips",
                "-",
            )
        )
        for count in (1_000,) if quick else (10_000, 100_000):
            total, questions, own = asyncio.run(bytes_per_question(database.url, count))
            case = f"(q) Postgres storage per pending question at {count:,}"
            rows.append(
                Row(
                    case,
                    "all tables and indexes, minus the request JSON",
                    (total - own) / 1024,
                    "2 KiB (Redis's target)",
                    2.0,
                    "KiB",
                    "-",
                )
            )
            rows.append(
                Row(
                    case,
                    "the questions table and its indexes",
                    questions / 1024,
                    "request JSON",
                    own / 1024,
                    "KiB",
                    "-",
                )
            )
    return rows


TITLE = "the Postgres relay: across hosts, storage per pending question, load"


def measure(quick: bool) -> list[Row]:
    """(p) and (q) beside the Redis relay's rows, and (u) the load run against its floor
    app (bare Starlette, one SQL claim per answer), taking turns."""
    import relay_load

    total, clients, repeat = (200, 10, 1) if quick else (10_000, 50, 2)
    both = asyncio.run(relay_load.compare(total, clients, repeat, "postgres"))
    ours, bare = both["ours"], both["floor"]
    case = f"(u) load over Postgres: {total:,} asks, 4 askers, {clients} clients, 2 hosts"
    rows = [
        Row(
            case,
            "answers per second, none lost or doubled",
            ours["answers_per_s"],
            "floor app: bare Starlette + one SQL claim",
            bare["answers_per_s"],
            "answers/s",
            ">= 0.8x",
            headline=True,
        )
    ]
    for figure in ("p50_ms", "p99_ms"):
        cut = figure.split("_")[0]
        latency = f"answer POST latency {cut}"
        rows.append(Row(case, latency, ours[figure], "floor app", bare[figure], "ms", "-"))
    for who in ("hosts", "postgres", "clients"):  # (the store's CPU with its backends)
        key = f"cpu_ms_per_answer_{who}"
        rows.append(
            Row(case, f"CPU per answer, {who}", ours[key], "floor app", bare[key], "ms", "-")
        )
    askers = ours["cpu_ms_per_answer_askers"]
    rows.append(Row(case, "CPU per answer, askers", askers, "the floor has none", 0.0, "ms", "-"))
    return [*measure_postgres(quick), *rows]
