"""The Redis relay: one question across two hosts, and Redis memory per pending question.

(m) a question asked on host A over Redis, seen on host B's event stream, POSTed to B and
returned on A, against a bare Redis PING (and the same trip over the in-memory relay on one
host); (n) Redis memory per pending question (``MEMORY USAGE`` of every key); (o), in quick
mode only, a shrunk load run (``benchmarks/redis_load.py`` runs the full one). Needs
``redis-server`` on PATH. (Not named ``redis.py``: run as a script, this directory comes
first on ``sys.path`` and would hide the ``redis`` package.)
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
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


async def redis_round_trips(url: str, number: int, repeat: int) -> tuple[float, float, float]:
    """Seconds per round trip, the subjects taking turns round by round: a question asked
    here (host A) over Redis, seen on host B's event stream, POSTed to B, returned here;
    the same over the in-memory relay and one server; a bare Redis PING."""
    import redis.asyncio as aioredis

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
    finally:
        child.terminate()
        await asyncio.to_thread(child.wait)
        await ping_client.aclose()
        await relay.aclose()
        memory.close()
    far_trip, near_trip, ping = (statistics.median(s) for s in samples)
    return far_trip, near_trip, ping


async def redis_memory(url: str, count: int) -> tuple[float, float, float]:
    """Bytes of Redis memory per pending question at ``count`` pending (``MEMORY USAGE``
    of every key, summed, over ``count``): all keys, the question hashes alone, and the
    request's own JSON. The questions are asked through the ask script directly, as many
    asker processes would; the stream keeps its default ``MAXLEN``."""
    from interaction.redis_relay import RedisRelay

    prefix = f"mem{count}"
    relay = RedisRelay(url, prefix=prefix, max_pending=count + 1)
    await relay.connect()
    text = wire.dumps(wire.decode_request(payload(1, 3)))
    client = relay._client
    batch = 1_000
    for start in range(0, count, batch):
        async with client.pipeline(transaction=False) as pipe:
            for i in range(start, min(count, start + batch)):
                args: list[str | int] = [relay._base, f"id{i:07d}", text, relay.owner]
                args += [3_600_000, count + 1]
                args += [86_400_000, 86_400_000, relay.history, "", ""]
                await relay._ask_script(keys=relay._keys, args=args, client=pipe)
            await pipe.execute()
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
    await client.delete(*keys) if keys else None
    await relay.aclose()
    return total / count, hashes / count, float(len(text.encode()))


def measure(quick: bool) -> list[Row]:
    """(m) the cross-process round trip over Redis; (n) Redis memory per pending question."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.redis_server import RedisServer

    rows = []
    with tempfile.TemporaryDirectory() as directory, RedisServer(Path(directory)) as server:
        number, repeat = (5, 3) if quick else (100, 7)
        far, near, ping = asyncio.run(redis_round_trips(server.url, number, repeat))
        case = "(m) one question across hosts over Redis"
        subject = "ask on A -> event on B -> POST to B -> return on A"
        rows.append(
            Row(
                case,
                subject,
                far * 1e3,
                "bare Redis PING",
                ping * 1e3,
                "ms",
                "<= 4x",
                headline=True,
            )
        )
        rows.append(
            Row(case, subject, far * 1e3, "in-memory relay, one host", near * 1e3, "ms", "-")
        )
        for count in (1_000,) if quick else (10_000, 100_000):
            total, hashes, own = asyncio.run(redis_memory(server.url, count))
            case = f"(n) Redis memory per pending question at {count:,}"
            beyond = (total - own) / 1024
            rows.append(
                Row(
                    case,
                    "all keys, minus the request JSON",
                    beyond,
                    "2 KiB target",
                    2.0,
                    "KiB",
                    "<= 2 KiB",
                )
            )
            rows.append(
                Row(
                    case,
                    "the question hash alone",
                    hashes / 1024,
                    "request JSON",
                    own / 1024,
                    "KiB",
                    "-",
                )
            )
    if quick:  # the load run, shrunk: benchmarks/redis_load.py runs the full one
        import redis_load

        figures = asyncio.run(redis_load.run(200, 10))
        rows.append(
            Row(
                "(o) 200 asks, 4 askers, 10 clients, 2 hosts",
                "all answered, none lost or doubled",
                figures["answered_s"] * 1e3,
                "all asked",
                figures["asked_s"] * 1e3,
                "ms",
                "-",
            )
        )
    return rows
