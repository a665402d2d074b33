"""The Redis relay under load: 10,000 pending asks from 4 asker processes, answered by 50
HTTP clients across two ``interaction serve --redis`` hosts; none lost, none answered twice.

    python benchmarks/redis_load.py            # the full run (prints the figures)
    python benchmarks/redis_load.py --quick    # 400 asks, 10 clients (CI keeps it alive)

Needs ``redis-server`` on PATH and the ``redis`` and ``web`` extras. Every 20th question is
claimed through both hosts at once: exactly one claim may win.

The floor it is measured against, in the same run: two bare Starlette apps on uvicorn, each
answer one Lua claim script (first claim wins) on the same number of pending question
hashes, answered by the same clients; no askers. The subjects take turns (ours, the floor,
the floor, ours); each figure is the median of its turns: answers per second, the answer
POST's p50/p99 latency as the clients see it, and the CPU seconds per answer of the
askers, the hosts, Redis and the clients' own process over the answering phase.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import httpx
import redis.asyncio as aioredis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.loopback import free_port
from tests.redis_server import RedisServer
from timing import until_up

from interaction.redis_relay import RedisRelay

ASKER = r"""
import asyncio, json, sys, time
from interaction import AskUserQuestionItem, AskUserQuestionRequest, ask, provide
from interaction.redis_relay import RedisRelay

async def main(url, prefix, name, count):
    relay = RedisRelay(url, prefix=prefix, max_pending=1_000_000)
    got = {}
    async def one(i):
        text = f"{name}-{i}"
        answer = await ask(AskUserQuestionRequest([AskUserQuestionItem("q", text)]))
        got[text] = answer.answers[0].custom
    with provide(relay):
        await asyncio.gather(*(one(i) for i in range(count)))
    await relay.aclose()
    print(json.dumps({"got": got, "cpu": time.process_time()}), flush=True)

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
"""


FLOOR = r"""
import asyncio, sys
import redis.asyncio as aioredis, uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

CLAIM = "if redis.call('HGET', KEYS[1], 'state') ~= 'pending' then return 0 end " \
    "redis.call('HSET', KEYS[1], 'state', 'answered', 'answer', ARGV[1]) return 1"

async def main(url, prefix, port):
    store = aioredis.Redis(connection_pool=aioredis.BlockingConnectionPool.from_url(
        url, max_connections=16, decode_responses=True))
    claim = store.register_script(CLAIM)

    async def answer(request):
        body = (await request.body()).decode()
        if await claim(keys=[prefix + request.path_params["id"]], args=[body]):
            return JSONResponse({"ok": True})
        return Response(status_code=409)

    app = Starlette(routes=[Route("/answer/{id}", answer, methods=["POST"])])
    # Idle connections kept as long as the seam's server keeps them (its request timeout):
    # at uvicorn's 5 s, the clients' pools (5 s) would race the close.
    config = uvicorn.Config(
        app, port=port, log_level="warning", lifespan="off", timeout_keep_alive=10)
    await uvicorn.Server(config).serve()

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: Sequence[int]) -> float:
    """User and system CPU seconds the processes have used so far."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / TICKS


def host(server: RedisServer, prefix: str) -> tuple[subprocess.Popen[bytes], str, str]:
    argv = [sys.executable, "-m", "interaction", "serve", "--redis", server.url]
    child = subprocess.Popen(
        [*argv, "--prefix", prefix, "--port", "0"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    assert child.stderr is not None
    line = child.stderr.readline().decode()
    url = line.removeprefix("interaction: answer at ").strip()
    base, _, token = url.partition("/#token=")
    return child, base, token


def floor_host(server: RedisServer, prefix: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    child = subprocess.Popen(
        [sys.executable, "-c", FLOOR, server.url, prefix, str(port)], stdout=subprocess.DEVNULL
    )
    return child, f"http://127.0.0.1:{port}"


def start_askers(server: RedisServer, prefix: str, per: int) -> list[subprocess.Popen[bytes]]:
    return [
        subprocess.Popen(
            [sys.executable, "-c", ASKER, server.url, prefix, f"a{n}", str(per)],
            stdout=subprocess.PIPE,
        )
        for n in range(4)
    ]


Answer = Callable[[httpx.AsyncClient, str], Awaitable[int]]


async def answering(
    https: Sequence[httpx.AsyncClient], texts: Sequence[str], clients: int, answer: Answer
) -> tuple[float, list[float], int]:
    """The clients answer every question (every 20th through both hosts at once: exactly
    one claim wins); seconds taken, each POST's seconds, double claims refused."""
    queue: asyncio.Queue[str] = asyncio.Queue()
    for text in texts:
        queue.put_nowait(text)
    latencies: list[float] = []
    refused_second = 0

    async def timed(http: httpx.AsyncClient, text: str) -> int:
        began = time.perf_counter()
        code = await answer(http, text)
        latencies.append(time.perf_counter() - began)
        return code

    async def client(number: int) -> None:
        nonlocal refused_second
        while not queue.empty():
            text = queue.get_nowait()
            if hash(text) % 20 == 0:  # claimed through both hosts at once
                codes = await asyncio.gather(timed(https[0], text), timed(https[1], text))
                assert sorted(codes) == [200, 409], (text, codes)
                refused_second += 1
            else:
                assert await timed(https[number % 2], text) == 200

    began = time.perf_counter()
    await asyncio.gather(*(client(n) for n in range(clients)))
    return time.perf_counter() - began, latencies, refused_second


def figures(  # noqa: PLR0917 - one record of one turn
    total: int,
    seconds: float,
    latencies: list[float],
    cpu: dict[str, float],
    asked: float = 0.0,
    returned: float = 0.0,
    refused: int = 0,
) -> dict[str, float]:
    cuts = statistics.quantiles(latencies, n=100)
    return {
        "asks": total,
        "asked_s": asked,
        "answered_s": seconds,
        "returned_s": returned,
        "answers_per_s": total / seconds,
        "p50_ms": cuts[49] * 1e3,
        "p99_ms": cuts[98] * 1e3,
        **{f"cpu_ms_per_answer_{who}": spent / total * 1e3 for who, spent in cpu.items()},
        "double_claims_refused": refused,
    }


async def run(total: int, clients: int) -> dict[str, float]:  # noqa: PLR0915 - one scenario
    prefix = f"load{secrets.token_hex(4)}"
    with tempfile.TemporaryDirectory() as directory, RedisServer(Path(directory)) as server:
        assert server.process is not None
        observer = RedisRelay(server.url, prefix=prefix, max_pending=1_000_000)
        start = await observer.snapshot()
        hosts = [host(server, prefix) for _ in range(2)]
        per = total // 4
        askers = start_askers(server, prefix, per)
        try:
            began = time.perf_counter()
            events = observer.events(start.position)
            ids: dict[str, str] = {}
            async for event in events:
                if event.kind == "requested" and event.question is not None:
                    ids[event.question.request.questions[0].question] = event.id
                    if len(ids) == per * 4:
                        break
            await events.aclose()
            asked = time.perf_counter() - began
            pending = len((await observer.snapshot()).questions)
            accepted: dict[str, int] = {}
            https = [
                httpx.AsyncClient(
                    base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60
                )
                for _, base, token in hosts
            ]

            async def answer(http: httpx.AsyncClient, text: str) -> int:
                body = {"answers": [{"id": "q", "selected": [], "custom": f"for {text}"}]}
                response = await http.post(f"/api/questions/{ids[text]}/answer", json=body)
                if response.status_code == 200:
                    accepted[text] = accepted.get(text, 0) + 1
                return response.status_code

            groups = {
                "askers": [c.pid for c in askers],
                "hosts": [c.pid for c, _, _ in hosts],
                "redis": [server.process.pid],
                "clients": [os.getpid()],
            }
            cpu = {who: cpu_seconds(pids) for who, pids in groups.items()}
            seconds, latencies, refused = await answering(https, list(ids), clients, answer)
            cpu.update((who, cpu_seconds(groups[who]) - cpu[who]) for who in ("hosts", "redis"))
            cpu["clients"] = cpu_seconds(groups["clients"]) - cpu["clients"]
            results: dict[str, str] = {}
            askers_cpu = 0.0
            for child in askers:  # each says its CPU seconds as it ends
                out, _ = await asyncio.to_thread(child.communicate, timeout=120)
                said = json.loads(out)
                results.update(said["got"])
                askers_cpu += said["cpu"]
            returned = time.perf_counter() - began - asked
            cpu["askers"] = askers_cpu - cpu["askers"]
            for http in https:
                await http.aclose()
        finally:
            for child in askers:
                if child.poll() is None:
                    child.kill()
                    child.wait()
            for child, _, _ in hosts:
                child.kill()
                child.wait()
        assert pending == total, (pending, total)
        assert set(results) == set(ids), "an ask was lost"
        assert all(count == 1 for count in accepted.values()), "a question was answered twice"
        assert results == {text: f"for {text}" for text in ids}, "an asker got a wrong answer"
        assert (await observer.snapshot()).questions == ()
        await observer.aclose()
    return figures(total, seconds, latencies, cpu, asked, returned, refused)


async def floor(total: int, clients: int) -> dict[str, float]:
    """The same answering on the floor app: ``total`` pending question hashes, two bare
    Starlette hosts claiming each with one Lua script, the same clients."""
    prefix = f"{{floor{secrets.token_hex(4)}}}:q:"
    texts = [f"f-{i}" for i in range(total)]
    with tempfile.TemporaryDirectory() as directory, RedisServer(Path(directory)) as server:
        assert server.process is not None
        store = aioredis.Redis.from_url(server.url)
        for start in range(0, total, 1_000):
            async with store.pipeline(transaction=False) as pipe:
                for text in texts[start : start + 1_000]:
                    pipe.hset(prefix + text, mapping={"state": "pending", "request": "{}"})
                await pipe.execute()
        hosts = [floor_host(server, prefix) for _ in range(2)]
        try:
            for child, base in hosts:
                await until_up(child, base + "/answer/none")
            https = [httpx.AsyncClient(base_url=base, timeout=60) for _, base in hosts]

            async def answer(http: httpx.AsyncClient, text: str) -> int:
                body = {"answers": [{"id": "q", "selected": [], "custom": f"for {text}"}]}
                return (await http.post(f"/answer/{text}", json=body)).status_code

            groups = {
                "hosts": [c.pid for c, _ in hosts],
                "redis": [server.process.pid],
                "clients": [os.getpid()],
            }
            cpu = {who: cpu_seconds(pids) for who, pids in groups.items()}
            seconds, latencies, refused = await answering(https, texts, clients, answer)
            cpu = {who: cpu_seconds(pids) - cpu[who] for who, pids in groups.items()}
            for http in https:
                await http.aclose()
        finally:
            for child, _ in hosts:
                child.kill()
                child.wait()
        answered = [await store.hget(prefix + text, "state") for text in texts[:100]]
        assert answered == [b"answered"] * 100
        await store.aclose()
    return figures(total, seconds, latencies, cpu, refused=refused)


async def compare(total: int, clients: int, repeat: int) -> dict[str, dict[str, float]]:
    """Ours and the floor taking turns (ours, floor, floor, ours, ...): each figure's
    median over the turns."""
    turns: dict[str, list[dict[str, float]]] = {"ours": [], "floor": []}
    for round_number in range(repeat):
        order = ("ours", "floor") if round_number % 2 == 0 else ("floor", "ours")
        for subject in order:
            measure = run if subject == "ours" else floor
            turns[subject].append(await measure(total, clients))
    return {
        subject: {key: statistics.median(t[key] for t in taken) for key in taken[0]}
        for subject, taken in turns.items()
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="400 asks, 10 clients")
    parser.add_argument("--repeat", type=int, default=2, help="turns of each (default 2)")
    args = parser.parse_args()
    total, clients = (400, 10) if args.quick else (10_000, 50)
    load = os.getloadavg()[0]
    both = asyncio.run(compare(total, clients, args.repeat))
    both["ratio"] = {
        "answers_per_s": both["ours"]["answers_per_s"] / both["floor"]["answers_per_s"]
    }
    print(json.dumps({"load_at_start": load, **both}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
