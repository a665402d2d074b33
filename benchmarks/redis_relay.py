"""The Redis relay: one question across two hosts, and Redis memory per pending question.

(m) a question asked on host A over Redis, seen on host B's event stream, POSTed to B and
returned on A, against its floor: the same trip over the in-memory relay on one host plus 4
bare Redis round trips (``PING``: ask, notify, claim, notify); beside it the same trip on
the bare stack (:data:`BARE_HOST` and :class:`BareAsker`: Starlette, uvicorn and redis-py
with one script per ask and per claim, and the same wake-ups); and the Redis round trips
each ask and each answer costs, counted by ``MONITOR`` over sequential trips (every
process's commands; the script a tail pipelines behind its blocking ``XREAD`` rides in
that read's round trip). (n) Redis memory per pending question: the growth of the
server's ``used_memory`` (the target), and ``MEMORY USAGE`` of every key. (o) the load run
of ``benchmarks/relay_load.py`` on Redis: ours and its floor app taking turns (shrunk when
quick). Needs ``redis-server`` on PATH. (Not named ``redis.py``: run as a script, this
directory comes first on ``sys.path`` and would hide the ``redis`` package.)
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import redis.asyncio as aioredis
from timing import CHILD_ENV, Row, payload, turns, until_up
from web import answers_over_http, questions_over_http, shown_question

import interaction
from interaction import UserInteractionProvider, wire
from interaction.redis._scripts import READ
from interaction.relay import Relay
from interaction.web import WebServer

TITLE = "the Redis relay: across hosts, memory per pending question"
READ_SCRIPT = "EVALSHA (read)"
"""How the round-trip counts name the tails' read script apart from the other scripts."""


def _redis_host(url: str, prefix: str) -> tuple[subprocess.Popen[bytes], str, str]:
    """An ``interaction serve --redis`` process (host B): its base URL and token."""
    argv = [sys.executable, "-m", "interaction", "serve", "--redis", url, "--prefix", prefix]
    child = subprocess.Popen(
        [*argv, "--port", "0"], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=CHILD_ENV
    )
    assert child.stderr is not None
    line = child.stderr.readline().decode()
    base, _, token = line.removeprefix("interaction: answer at ").strip().partition("/#token=")
    return child, base, token


BARE_HOST = r"""
import asyncio, json, sys
import redis.asyncio as aioredis, uvicorn
from starlette.applications import Starlette
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

# First claim wins; the asker's inbox and the stream each get an entry.
CLAIM = '''
if redis.call('HGET', KEYS[1], 'state') ~= 'pending' then return false end
redis.call('HSET', KEYS[1], 'state', 'answered', 'answer', ARGV[2])
redis.call('XADD', KEYS[2], '*', 'id', ARGV[1])
return redis.call('XADD', KEYS[3], '*', 'kind', 'resolved', 'id', ARGV[1])
'''
HEADERS = {"x-content-type-options": "nosniff", "referrer-policy": "no-referrer",
    "cache-control": "no-store", "x-frame-options": "DENY"}

async def main(url, prefix, port):
    store, reader = aioredis.Redis.from_url(url), aioredis.Redis.from_url(url)
    claim = store.register_script(CLAIM)
    events = prefix + "events"

    async def stream(request):
        async def texts():
            last = "0-0"  # the prefix is the run's own: nothing was asked before
            while True:
                for _, read in await reader.xread({events: last}, block=1000):
                    for last, fields in read:
                        position = last.decode()
                        if fields[b"kind"] == b"requested":
                            data = fields[b"question"].decode()
                            yield f"id: {position}\nevent: requested\ndata: {data}\n\n"
                        else:
                            data = json.dumps({"id": fields[b"id"].decode(), "outcome": "answered"})
                            yield f"id: {position}\nevent: resolved\ndata: {data}\n\n"
        return StreamingResponse(texts(), media_type="text/event-stream", headers=HEADERS)

    async def answer(request):
        question_id = request.path_params["id"]
        text = json.dumps(json.loads(await request.body()), separators=(",", ":"))
        keys = [prefix + "q:" + question_id, prefix + "inbox", events]
        if await claim(keys=keys, args=[question_id, text]) is None:
            return Response(status_code=409)
        return Response(text.encode(), media_type="application/json", headers=HEADERS)

    app = Starlette(routes=[Route("/api/events", stream),
        Route("/api/questions/{id}/answer", answer, methods=["POST"])])
    config = uvicorn.Config(app, port=port, log_level="warning", lifespan="off")
    await uvicorn.Server(config).serve()

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""
"""(m)'s stack floor, host B: a bare Starlette app on uvicorn whose event stream follows
the Redis stream (one blocking ``XREAD``, the question's bytes in the entry itself) and
whose answer route runs one claim script; no token, no checks, no display model."""

BARE_ASK = """
redis.call('HSET', KEYS[1], 'state', 'pending')
return redis.call('XADD', KEYS[2], '*', 'kind', 'requested', 'id', ARGV[1], 'question', ARGV[2])
"""


class BareAsker:
    """(m)'s stack floor, host A: an ask is one script (the question's hash and its stream
    entry, carrying the bytes the page's ``requested`` event carries, built before the
    trip), and one blocking ``XREAD`` on the inbox wakes the asks its entries settle."""

    def __init__(self, url: str, prefix: str, question: str) -> None:
        self.store = aioredis.Redis.from_url(url)
        self.reader = aioredis.Redis.from_url(url)
        self.script = self.store.register_script(BARE_ASK)
        self.prefix = prefix
        self.head, self.tail = question.split(QUESTION_ID)
        self.waiters: dict[bytes, asyncio.Future[None]] = {}

    async def follow(self) -> None:
        last = "$"
        while True:
            reply = await self.reader.xread({self.prefix + "inbox": last}, block=1000)
            assert isinstance(reply, list)
            for _, read in reply:
                for position, fields in read:
                    last = position
                    self.waiters.pop(fields[b"id"]).set_result(None)

    async def ask(self) -> None:
        question_id = secrets.token_urlsafe(12)
        waiter = asyncio.get_running_loop().create_future()
        self.waiters[question_id.encode()] = waiter
        keys = [self.prefix + "q:" + question_id, self.prefix + "events"]
        await self.script(keys=keys, args=[question_id, self.head + question_id + self.tail])
        await waiter

    async def aclose(self) -> None:
        await self.store.aclose()
        await self.reader.aclose()


QUESTION_ID = "pQ2x-7mZk0Lr_9Vb"
"""The id the bare asker's prebuilt question JSON carries, replaced at each ask."""


def bare_host(url: str, prefix: str) -> tuple[subprocess.Popen[bytes], str]:
    """A :data:`BARE_HOST` process (the repository root on ``sys.path``, as ``measure``
    puts it): the process and its base URL."""
    from tests.loopback import free_port

    port = free_port()
    argv = [sys.executable, "-c", BARE_HOST, url, prefix, str(port)]
    return subprocess.Popen(argv, env=CHILD_ENV), f"http://127.0.0.1:{port}"


@dataclass(frozen=True, slots=True)
class Trips:
    """(m)'s figures: medians of seconds per trip (ours, in memory on one host, on the bare
    stack) and per ``PING``, and round trips per ask and per answer by command."""

    far: float
    near: float
    ping: float
    bare: float
    per_ask: dict[str, float]
    per_answer: dict[str, float]


async def redis_round_trips(url: str, number: int, repeat: int) -> Trips:
    """Seconds per round trip, the subjects taking turns round by round: a question asked
    here (host A) over Redis, seen on host B's event stream, POSTed to B, returned here;
    the same over the in-memory relay and one server; a bare Redis PING; the first trip
    on the bare stack. Then the Redis round trips of ``number`` such questions, counted."""
    from interaction.redis import RedisRelay

    request = wire.decode_request(payload(1, 3))
    body = {"answers": [{"id": "q0", "selected": ["Option 1"]}]}
    prefix = f"bench{os.getpid()}"
    relay = RedisRelay(url, prefix=prefix)
    await relay.connect()
    child, base, token = await asyncio.to_thread(_redis_host, url, prefix)
    bare_prefix = f"{{bare{os.getpid()}}}:"
    bare_child, bare_base = bare_host(url, bare_prefix)
    asked = interaction.with_provenance(request, asked_at=datetime.now(UTC))
    bare = BareAsker(url, bare_prefix, shown_question(asked, QUESTION_ID))
    following = asyncio.create_task(bare.follow())
    memory = Relay()
    ping_client = aioredis.Redis.from_url(url)
    headers = {"Authorization": f"Bearer {token}"}
    samples: list[list[float]] = [[], [], [], []]
    try:
        await until_up(bare_child, bare_base + "/api/questions/none/answer")
        async with (
            WebServer(memory) as server,
            httpx.AsyncClient(base_url=base, headers=headers) as far,
            httpx.AsyncClient(
                base_url=server.base, headers={"Authorization": f"Bearer {server.token}"}
            ) as near,
            httpx.AsyncClient(base_url=bare_base, headers=headers) as bare_http,
            far.stream("GET", "/api/events") as far_events,
            near.stream("GET", "/api/events") as near_events,
            bare_http.stream("GET", "/api/events") as bare_events,
        ):
            await ping_client.ping()
            subjects: list[tuple[UserInteractionProvider, httpx.AsyncClient, AsyncIterator[str]]]
            subjects = [
                (relay, far, aiter(far_events.aiter_lines())),
                (memory, near, aiter(near_events.aiter_lines())),
            ]
            bare_lines = aiter(bare_events.aiter_lines())

            async def trips(index: int) -> float:
                backend, http, lines = subjects[index]
                with interaction.provide(backend):
                    return await questions_over_http(http, lines, request, body, number)

            async def pings() -> float:
                start = time.perf_counter()
                for _ in range(number):
                    await ping_client.ping()
                return (time.perf_counter() - start) / number

            async def bare_trips() -> float:
                return await answers_over_http(
                    bare_http,
                    bare_lines,
                    body,
                    number,
                    lambda: asyncio.create_task(bare.ask()),
                    lambda question_id: f"/api/questions/{question_id}/answer",
                )

            measured = [lambda: trips(0), lambda: trips(1), pings, bare_trips]
            for subject in measured:  # warm every path (connections, scripts loaded)
                await subject()
            for round_number in range(repeat):
                for index in turns(len(measured), round_number):
                    samples[index].append(await measured[index]())
            with interaction.provide(relay):
                _, _, lines = subjects[0]
                per_ask, per_answer = await count_round_trips(
                    url, http=far, lines=lines, request=request, body=body, number=number
                )
    finally:
        for process in (child, bare_child):
            process.terminate()
            await asyncio.to_thread(process.wait)
        following.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await following
        await bare.aclose()
        await ping_client.aclose()
        await relay.aclose()
        memory.close()
    far_trip, near_trip, ping, bare_trip = (statistics.median(s) for s in samples)
    return Trips(far_trip, near_trip, ping, bare_trip, per_ask, per_answer)


async def count_round_trips(
    url: str,
    *,
    http: httpx.AsyncClient,
    lines: AsyncIterator[str],
    request: interaction.AskUserQuestionRequest,
    body: Mapping[str, object],
    number: int,
) -> tuple[dict[str, float], dict[str, float]]:
    """Redis round trips per ask and per answer, by command, over ``number`` sequential
    questions asked here (host A, the active provider) and answered by a POST to host B.

    Every process's top-level commands are read with ``MONITOR`` (the commands a script
    runs are not round trips); the read script (an ``EVALSHA`` of its digest) that
    follows an ``XREAD`` on the same connection is the tail's, pipelined behind it: no
    round trip of its own (as is one on a connection whose ``XREAD`` went out before
    ``MONITOR`` began).
    Each phase ends with a short pause, so the tails' next blocking reads fall into it."""
    watcher = aioredis.Redis.from_url(url, decode_responses=True)
    read_digest = hashlib.sha1(READ.encode()).hexdigest()
    seen: list[tuple[str, str]] = []
    started = asyncio.Event()

    async def watch() -> None:
        async with watcher.monitor() as monitor:
            started.set()
            async for command in monitor.listen():
                if command["client_type"] != "lua":
                    name, _, rest = command["command"].partition(" ")
                    name = name.upper()
                    if name == "EVALSHA" and rest.startswith(read_digest):
                        name = READ_SCRIPT
                    seen.append((command["client_port"], name))

    async def mark() -> list[tuple[str, str]]:
        await asyncio.sleep(0.3)  # the tails have sent their next blocking read
        taken = list(seen)
        seen.clear()
        return taken

    last: dict[str, str] = {}  # each connection's last command, across the phases

    def per(commands: list[tuple[str, str]]) -> dict[str, float]:
        counts: dict[str, float] = {}
        for port, name in commands:
            if not (name == READ_SCRIPT and last.get(port, "XREAD") == "XREAD"):
                counts[name] = counts.get(name, 0) + 1 / number
            last[port] = name
        return counts

    watching = asyncio.create_task(watch())
    await started.wait()
    await mark()
    asked: list[tuple[str, asyncio.Task[object]]] = []
    for _ in range(number):
        task: asyncio.Task[object] = asyncio.create_task(interaction.ask(request))
        while (await anext(lines)) != "event: requested":
            pass
        asked.append((json.loads((await anext(lines)).removeprefix("data: "))["id"], task))
    asks = per(await mark())
    for question_id, task in asked:
        await http.post(f"/api/questions/{question_id}/answer", json=body)
        await task
    answers = per(await mark())
    watching.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await watching
    await watcher.aclose()
    return asks, answers


@dataclass(frozen=True, slots=True)
class Memory:
    """(n)'s figures, bytes per pending question: ``used_memory`` growth, ``MEMORY USAGE``
    of every key summed (and of the question hashes alone), and the request's own JSON."""

    used: float
    keys: float
    hashes: float
    request: float


async def used_memory(client: aioredis.Redis) -> int:
    info = await client.info("memory")
    return int(info["used_memory"])


async def redis_memory(url: str, count: int) -> Memory:
    """Bytes of Redis memory per pending question at ``count`` pending. The questions are
    asked through the ask script directly, as many asker processes would, in pipelined
    batches; the stream keeps its default ``MAXLEN``. The store is empty before (the
    server's own ``used_memory`` is the baseline) and emptied after."""
    from interaction.redis import RedisRelay

    prefix = f"mem{count}"
    relay = RedisRelay(url, prefix=prefix, max_pending=count + 1)
    await relay.connect()
    text = wire.dumps(wire.decode_request(payload(1, 3)))
    client = relay._client
    before = await used_memory(client)
    batch = 1_000
    for start in range(0, count, batch):
        async with client.pipeline(transaction=False) as pipe:
            for _ in range(start, min(count, start + batch)):
                args: list[str | int] = [relay._base, secrets.token_urlsafe(12), text, relay.owner]
                args += [3_600_000, count + 1]
                args += [86_400_000, 86_400_000, relay.history, "", ""]
                await relay._ask_script(keys=relay._keys, args=args, client=pipe)
            await pipe.execute()
    used = await used_memory(client) - before
    keys = [key async for key in client.scan_iter(match="{" + prefix + "}:*", count=10_000)]
    total = hashes = 0
    for start in range(0, len(keys), batch):
        async with client.pipeline(transaction=False) as pipe:
            for key in keys[start : start + batch]:
                pipe.memory_usage(key, samples=0)
            sizes = await pipe.execute()
        for key, size in zip(keys[start : start + batch], sizes, strict=True):
            total += size or 0
            hashes += (size or 0) if ":q:" in key else 0
    for start in range(0, len(keys), batch):
        await client.delete(*keys[start : start + batch])
    await relay.aclose()
    return Memory(used / count, total / count, hashes / count, float(len(text.encode())))


def spelled(counts: Mapping[str, float]) -> str:
    """Round trips by command: ``EVALSHA 1 + XREAD 2``."""
    return " + ".join(f"{name} {count:g}" for name, count in sorted(counts.items()))


def measure(quick: bool) -> list[Row]:
    """(m) the cross-process round trip over Redis; (n) Redis memory per pending question."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.redis_server import RedisServer

    rows = []
    with tempfile.TemporaryDirectory() as directory, RedisServer(Path(directory)) as server:
        number, repeat = (5, 3) if quick else (100, 7)
        trips = asyncio.run(redis_round_trips(server.url, number, repeat))
        case = "(m) one question across hosts over Redis"
        subject = "ask on A -> event on B -> POST to B -> return on A"
        floor = trips.near + 4 * trips.ping
        rows.append(
            Row(
                case,
                subject,
                trips.far * 1e3,
                "in-memory trip, one host + 4 Redis PINGs",
                floor * 1e3,
                "ms",
                "<= 1.3x",
                headline=True,
            )
        )
        rows.append(
            Row(
                case,
                subject,
                trips.far * 1e3,
                "in-memory relay, one host",
                trips.near * 1e3,
                "ms",
                "-",
            )
        )
        rows.append(
            Row(case, subject, trips.far * 1e3, "bare Redis PING", trips.ping * 1e3, "ms", "-")
        )
        rows.append(
            Row(
                "(m) the same trip on the bare stack",
                "Starlette + redis-py: one script per ask and claim, the same wake-ups",
                trips.bare * 1e3,
                "in-memory trip, one host + 4 Redis PINGs",
                floor * 1e3,
                "ms",
                "- (the stack's floor)",
            )
        )
        rows.append(
            Row(
                "(m) what the seam adds to the bare stack",
                subject,
                trips.far * 1e3,
                "the same trip on the bare stack",
                trips.bare * 1e3,
                "ms",
                "-",
            )
        )
        for what, counts, least in (
            ("ask", trips.per_ask, "ask + notify"),
            ("answer", trips.per_answer, "claim + notify"),
        ):
            rows.append(
                Row(
                    f"(m) Redis round trips per {what}, every process",
                    spelled(counts),
                    sum(counts.values()),
                    f"the floor: {least}",
                    2.0,
                    "trips",
                    "-",
                )
            )
        for count in (1_000,) if quick else (10_000, 100_000):
            memory = asyncio.run(redis_memory(server.url, count))
            case = f"(n) Redis memory per pending question at {count:,}"
            rows.append(
                Row(
                    case,
                    "used_memory growth",
                    memory.used / 1024,
                    "1.5 KiB target",
                    1.5,
                    "KiB",
                    "<= 1.5 KiB",
                    headline=True,
                )
            )
            rows.append(
                Row(
                    case,
                    "MEMORY USAGE of every key",
                    memory.keys / 1024,
                    "used_memory growth",
                    memory.used / 1024,
                    "KiB",
                    "-",
                )
            )
            rows.append(
                Row(
                    case,
                    "the question hash alone",
                    memory.hashes / 1024,
                    "request JSON",
                    memory.request / 1024,
                    "KiB",
                    "-",
                )
            )
    import relay_load

    total, clients, repeat = (200, 10, 1) if quick else (10_000, 50, 2)
    both = asyncio.run(relay_load.compare(total, clients, repeat))
    ours, bare = both["ours"], both["floor"]
    case = f"(o) load: {total:,} asks, 4 askers, {clients} clients, 2 hosts"
    rows.append(
        Row(
            case,
            "answers per second, none lost or doubled",
            ours["answers_per_s"],
            "floor app: bare Starlette + one Lua claim",
            bare["answers_per_s"],
            "answers/s",
            ">= 0.6x (and >= 1,000 answers/s)",
            headline=True,
        )
    )
    for figure in ("p50_ms", "p99_ms"):
        cut = figure.split("_")[0]
        rows.append(
            Row(
                case,
                f"answer POST latency {cut}",
                ours[figure],
                "floor app",
                bare[figure],
                "ms",
                "-",
            )
        )
    for who in ("hosts", "redis", "clients"):
        key = f"cpu_ms_per_answer_{who}"
        rows.append(
            Row(case, f"CPU per answer, {who}", ours[key], "floor app", bare[key], "ms", "-")
        )
    askers = ours["cpu_ms_per_answer_askers"]
    rows.append(Row(case, "CPU per answer, askers", askers, "the floor has none", 0.0, "ms", "-"))
    return rows
