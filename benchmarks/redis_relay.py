"""The Redis relay: one question across two hosts, and Redis memory per pending question.

(m) a question asked on host A over Redis, seen on host B's event stream, POSTed to B and
returned on A, against its floor: the same trip over the in-memory relay on one host plus 4
bare Redis round trips (``PING``: ask, notify, claim, notify); and the Redis round trips
each ask and each answer costs, counted by ``MONITOR`` over sequential trips (every
process's commands; the script a tail pipelines behind its blocking ``XREAD`` rides in
that read's round trip). (n) Redis memory per pending question: the growth of the
server's ``used_memory`` (the target), and ``MEMORY USAGE`` of every key. (o) the load run
of ``benchmarks/redis_load.py``: ours and its floor app taking turns (shrunk when quick). Needs
``redis-server`` on PATH. (Not named ``redis.py``: run as a script, this directory comes
first on ``sys.path`` and would hide the ``redis`` package.)
"""

from __future__ import annotations

import asyncio
import contextlib
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
from pathlib import Path

import httpx
import redis.asyncio as aioredis
from timing import CHILD_ENV, Row, payload, turns
from web import questions_over_http

import interaction
from interaction import UserInteractionProvider, wire
from interaction.relay import Relay
from interaction.web import WebServer

TITLE = "the Redis relay: across hosts, memory per pending question"


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


@dataclass(frozen=True, slots=True)
class Trips:
    """(m)'s figures: medians of seconds per trip and per ``PING``, and round trips per
    ask and per answer by command."""

    far: float
    near: float
    ping: float
    per_ask: dict[str, float]
    per_answer: dict[str, float]


async def redis_round_trips(url: str, number: int, repeat: int) -> Trips:
    """Seconds per round trip, the subjects taking turns round by round: a question asked
    here (host A) over Redis, seen on host B's event stream, POSTed to B, returned here;
    the same over the in-memory relay and one server; a bare Redis PING. Then the Redis
    round trips of ``number`` such questions, counted."""
    from interaction.redis_relay import RedisRelay

    request = wire.decode_request(payload(1, 3))
    body = {"answers": [{"id": "q0", "selected": ["Option 1"]}]}
    prefix = f"bench{os.getpid()}"
    relay = RedisRelay(url, prefix=prefix)
    await relay.connect()
    child, base, token = await asyncio.to_thread(_redis_host, url, prefix)
    memory = Relay()
    ping_client = aioredis.Redis.from_url(url)
    headers = {"Authorization": f"Bearer {token}"}
    samples: list[list[float]] = [[], [], []]
    try:
        async with (
            WebServer(memory) as server,
            httpx.AsyncClient(base_url=base, headers=headers) as far,
            httpx.AsyncClient(
                base_url=server.base, headers={"Authorization": f"Bearer {server.token}"}
            ) as near,
            far.stream("GET", "/api/events") as far_events,
            near.stream("GET", "/api/events") as near_events,
        ):
            await ping_client.ping()
            subjects: list[tuple[UserInteractionProvider, httpx.AsyncClient, AsyncIterator[str]]]
            subjects = [
                (relay, far, aiter(far_events.aiter_lines())),
                (memory, near, aiter(near_events.aiter_lines())),
            ]

            async def trips(index: int) -> float:
                backend, http, lines = subjects[index]
                with interaction.provide(backend):
                    return await questions_over_http(http, lines, request, body, number)

            async def pings() -> float:
                start = time.perf_counter()
                for _ in range(number):
                    await ping_client.ping()
                return (time.perf_counter() - start) / number

            await trips(0)  # warm both paths (connections, scripts loaded)
            await trips(1)
            for round_number in range(repeat):
                for index in turns(3, round_number):
                    samples[index].append(await (pings() if index == 2 else trips(index)))
            with interaction.provide(relay):
                _, _, lines = subjects[0]
                per_ask, per_answer = await count_round_trips(
                    url, http=far, lines=lines, request=request, body=body, number=number
                )
    finally:
        child.terminate()
        await asyncio.to_thread(child.wait)
        await ping_client.aclose()
        await relay.aclose()
        memory.close()
    far_trip, near_trip, ping = (statistics.median(s) for s in samples)
    return Trips(far_trip, near_trip, ping, per_ask, per_answer)


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
    runs are not round trips); an ``EVAL`` that follows an ``XREAD`` on the same
    connection is the tail's read script, pipelined behind it: no round trip of its own
    (as is one on a connection whose ``XREAD`` went out before ``MONITOR`` began).
    Each phase ends with a short pause, so the tails' next blocking reads fall into it."""
    watcher = aioredis.Redis.from_url(url, decode_responses=True)
    seen: list[tuple[str, str]] = []
    started = asyncio.Event()

    async def watch() -> None:
        async with watcher.monitor() as monitor:
            started.set()
            async for command in monitor.listen():
                if command["client_type"] != "lua":
                    name = command["command"].split(" ", 1)[0].upper()
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
            if not (name == "EVAL" and last.get(port, "XREAD") == "XREAD"):
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
    from interaction.redis_relay import RedisRelay

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
    import redis_load

    total, clients, repeat = (200, 10, 1) if quick else (10_000, 50, 2)
    both = asyncio.run(redis_load.compare(total, clients, repeat))
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
