"""A shared-store relay under load, on Redis or PostgreSQL: 10,000 pending asks from 4 asker
processes, answered by 50 HTTP clients across two ``interaction serve`` hosts on one store;
none lost, none answered twice.

    python benchmarks/relay_load.py redis               # ours and its floor app (full run)
    python benchmarks/relay_load.py postgres --quick    # 400 asks, 10 clients

Needs the ``web`` extra and the engine's: ``redis-server`` on PATH and the ``redis`` extra,
or PostgreSQL's server binaries (as the tests find them, run with ``fsync`` on) and the
``postgres`` extra. Every 20th question is claimed through both hosts at once: exactly one
claim may win. ``redis_relay.py``'s (o) and ``postgres.py``'s (u) are this run.

Each engine's run is measured against its floor, in the same run: two bare Starlette apps
on uvicorn, each answer one claim (first claim wins) on the same number of pending
questions, answered by the same clients; no askers. On Redis the claim is one Lua script on
a question hash; on PostgreSQL one ``UPDATE`` of a pending row (:data:`POSTGRES_FLOOR`, a
fresh server with ``fsync`` on, as ours). The subjects take turns (ours,
the floor, the floor, ours); each figure is the median of its turns: answers per second,
the answer POST's p50/p99 latency as the clients see it, and the CPU seconds per answer of
the askers, the hosts, the store (a database server with its backends) and the clients' own
process over the answering phase. The relay the benchmark watches the asks with is closed
before that phase, as the floor has none.

Every process the run starts is stopped by its PID on the way out. When one ends before
its time (an asker killed, a host crashed), or a phase outlasts its bound, the run stops
at once with a :class:`LoadError` that names the process and its exit status.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Literal, Self, TypeVar

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.loopback import ANSWER_AT, announced, free_port, popen, running, serve
from tests.postgres_server import PostgresServer
from tests.redis_server import RedisServer
from timing import until_up

from interaction.postgres import PostgresRelay
from interaction.redis import RedisRelay

T = TypeVar("T")
Engine = Literal["redis", "postgres"]
SPACE: dict[Engine, str] = {"redis": "prefix", "postgres": "schema"}
"""The option that names a deployment's own space in the store, by engine."""
ASKERS = 4

ASKER = r"""
import asyncio, importlib, json, sys, time
from interaction import AskUserQuestionItem, AskUserQuestionRequest, ask, provide

async def main(engine, url, space, name, count):
    module = importlib.import_module(f"interaction.{engine}")
    kind, option = ("RedisRelay", "prefix") if engine == "redis" else ("PostgresRelay", "schema")
    relay = getattr(module, kind)(url, max_pending=1_000_000, **{option: space})
    got = {}
    async def one(i):
        text = f"{name}-{i}"
        answer = await ask(AskUserQuestionRequest([AskUserQuestionItem("q", text)]))
        got[text] = answer.answers[0].custom
    with provide(relay):
        await asyncio.gather(*(one(i) for i in range(count)))
    # Open until the run has read the CPU figures (it closes our standard input): the
    # database's backends of a closed relay take their CPU figures with them.
    await asyncio.to_thread(sys.stdin.read)
    await relay.aclose()
    print(json.dumps({"got": got, "cpu": time.process_time()}), flush=True)

asyncio.run(main(*sys.argv[1:5], int(sys.argv[5])))
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

POSTGRES_FLOOR = r"""
import asyncio, sys
import psycopg, uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

# First claim wins: one statement, its own transaction.
CLAIM = "UPDATE floor SET state = 'answered', answer = %s WHERE id = %s AND state = 'pending'"

async def main(url, port):
    idle = asyncio.Queue()
    for _ in range(16):  # the relay's pool size
        idle.put_nowait(await psycopg.AsyncConnection.connect(
            url, autocommit=True, prepare_threshold=None))

    async def answer(request):
        body = (await request.body()).decode()
        connection = await idle.get()
        try:
            claimed = (await connection.execute(CLAIM, [body, request.path_params["id"]])).rowcount
        finally:
            idle.put_nowait(connection)
        return JSONResponse({"ok": True}) if claimed else Response(status_code=409)

    app = Starlette(routes=[Route("/answer/{id}", answer, methods=["POST"])])
    config = uvicorn.Config(
        app, port=port, log_level="warning", lifespan="off", timeout_keep_alive=10)
    await uvicorn.Server(config).serve()

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""
"""The Postgres floor app: :data:`FLOOR`'s answer route with one SQL claim (an ``UPDATE``
of a pending row, autocommit, on a pool of the relay's 16 connections) for the Lua one."""


class LoadError(RuntimeError):
    """The load run stopped: a process ended before its time, or a phase outlasted its bound."""


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` after the command's name (state first)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _on_cpu(pid: int) -> float:
    """Seconds the live threads of process ``pid`` have run, to the nanosecond (the first
    field of each thread's ``schedstat``). ``/proc/<pid>/stat`` counts whole clock ticks
    (10 ms), which undercounts a process that runs a few milliseconds between two
    readings: 32 database backends each claiming a dozen answers read as none at all. A
    thread that ended is not counted: of the threads the run reads, only the threads that
    wait for an asker process to exit (asyncio's child watcher, in the clients' process)
    end before the last reading, and waiting is all they do."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError, IndexError, ValueError):  # (ended since)
            total += int((task / "schedstat").read_text().split()[0])
    return total / 1e9


class CpuMeter:
    """The CPU seconds each group of processes has used so far, read as often as needed;
    the groups in ``with_children`` (a database server) with their child processes' (its
    backends).

    Each child is read as it is found, and its figure kept: one that ends between two
    readings counts as it was last read, so a reading never drops what an earlier one
    counted. (Adding the kernel's sum of the ended children, ``cutime``, to the live
    ones' races with the server reaping them: one reaped between the two reads is in
    neither. In one run the askers' 66 backends ended as the answering ended, and the
    store's figure came out negative.) What a child runs between its last reading and its
    end is not counted: the run keeps the askers, and so their backends, open until it
    has read.
    """

    def __init__(
        self, groups: Mapping[str, Sequence[int]], *, with_children: Collection[str] = ()
    ) -> None:
        self.groups = groups
        self._children: dict[str, dict[tuple[int, str], float]] = {who: {} for who in with_children}
        """By group: the seconds each child (its PID and start time) was last read at."""

    def read(self) -> dict[str, float]:
        return {who: self._read(who, pids) for who, pids in self.groups.items()}

    def _read(self, who: str, pids: Sequence[int]) -> float:
        total = sum(_on_cpu(pid) for pid in pids)
        if who not in self._children:
            return total
        seen = self._children[who]
        parents = {str(pid) for pid in pids}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdecimal():
                continue
            with contextlib.suppress(OSError, IndexError):  # (ended since, or unreadable)
                fields = _stat(int(entry.name))
                if fields[1] in parents:  # ppid; fields[19]: the start time, in ticks
                    seen[int(entry.name), fields[19]] = _on_cpu(int(entry.name))
        return total + sum(seen.values())


def bound_for(total: int) -> float:
    """Seconds any one phase of a run of ``total`` asks may take before it is stopped."""
    return 60.0 + total / 20


@contextlib.contextmanager
def store(engine: Engine) -> Iterator[RedisServer | PostgresServer]:
    """A fresh server of ``engine`` (PostgreSQL with ``fsync`` on), stopped by its PID."""
    if engine == "postgres":
        with PostgresServer(durable=True) as server:
            yield server
        return
    with tempfile.TemporaryDirectory() as directory, RedisServer(Path(directory)) as redis:
        yield redis


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


@dataclass(frozen=True, slots=True)
class Child:
    """A process the run started, and how an error names it."""

    name: str
    process: asyncio.subprocess.Process

    def __str__(self) -> str:
        return f"{self.name} (pid {self.process.pid})"


class Load:
    """One run's processes on a store at ``url``: two ``interaction serve`` hosts and four
    askers of ``total // 4`` questions each, every one stopped by its PID on the way out.

    Each phase (:meth:`asked`, :meth:`answered`, :meth:`returned`) is raced against every
    process's end and bounded by ``bound`` seconds: a process that ends before its time
    (:meth:`dead`) or the bound ends it with a :class:`LoadError` naming the process,
    rather than a wait that never returns.
    """

    def __init__(self, engine: Engine, url: str, total: int, bound: float) -> None:
        self.engine = engine
        self.url = url
        self.space = f"load{secrets.token_hex(4)}"
        self.per = total // ASKERS
        self.bound = bound
        self.observer = self.relay()
        self.hosts: list[Child] = []
        self.askers: list[Child] = []
        self.https: list[httpx.AsyncClient] = []
        self.ids: dict[str, str] = {}
        self.accepted: dict[str, int] = {}
        self.position = ""  # the observer's, before the first ask
        self._stack = contextlib.AsyncExitStack()

    def relay(self) -> RedisRelay | PostgresRelay:
        """A relay of the run's store and space, for the benchmark's own reads."""
        if self.engine == "redis":
            return RedisRelay(self.url, prefix=self.space, max_pending=1_000_000)
        return PostgresRelay(self.url, schema=self.space, max_pending=1_000_000)

    async def __aenter__(self) -> Self:
        try:
            await self._start()
        except BaseException:
            await self._stack.aclose()
            raise
        return self

    async def _start(self) -> None:
        self._stack.push_async_callback(self.observer.aclose)
        if isinstance(self.observer, PostgresRelay):
            await self.observer.migrate()
        self.position = (await self.observer.snapshot()).position
        pipe = subprocess.PIPE
        for number in range(2):
            argv = (f"--{self.engine}", self.url, f"--{SPACE[self.engine]}", self.space)
            host = await self._stack.enter_async_context(
                serve(*argv, stderr=pipe, stdout=subprocess.DEVNULL)
            )
            self.hosts.append(Child(f"host {number}", host))
            url = await self.phase("a host started", announced(host.stderr, ANSWER_AT, 60))
            base, _, token = url.partition("/#token=")
            http = httpx.AsyncClient(
                base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60
            )
            self._stack.push_async_callback(http.aclose)
            self.https.append(http)
        for number in range(ASKERS):
            asks = (self.engine, self.url, self.space, f"a{number}", str(self.per))
            asker = await self._stack.enter_async_context(
                running(sys.executable, "-c", ASKER, *asks, stdin=pipe, stdout=pipe)
            )
            self.askers.append(Child(f"asker a{number}", asker))

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._stack.aclose()

    def dead(self) -> list[Child]:
        """The processes that ended before their time: any host, and an asker that ended
        other than with status 0 (once it had every answer)."""
        return [
            child
            for child in (*self.hosts, *self.askers)
            if child.process.returncode is not None
            and (child in self.hosts or child.process.returncode != 0)
        ]

    async def phase(self, what: str, work: Awaitable[T]) -> T:
        """``work``, unless a process ends before its time (:meth:`dead`) or it takes longer
        than the bound: then it is cancelled and :class:`LoadError` says why."""
        task = asyncio.ensure_future(work)
        ends = {
            asyncio.ensure_future(child.process.wait()) for child in (*self.hosts, *self.askers)
        }
        deadline = asyncio.get_running_loop().time() + self.bound
        try:
            while True:
                left = deadline - asyncio.get_running_loop().time()
                done, _ = await asyncio.wait(
                    {task, *ends}, timeout=max(left, 0), return_when=asyncio.FIRST_COMPLETED
                )
                ends -= done
                if dead := self.dead():
                    ended = f"{dead[0]} ended with exit status {dead[0].process.returncode}"
                    raise LoadError(f"the load run stopped: {ended} while {what}")
                if task in done:
                    return task.result()
                if not done:
                    raise LoadError(f"the load run stopped: {what} took over {self.bound:g} s")
        finally:
            for end in (task, *ends):
                end.cancel()

    async def asked(self) -> None:
        """Wait until every asker's questions are pending; :attr:`ids` maps each text to its
        question's id."""

        async def collect() -> None:
            events = self.observer.events(self.position)
            try:
                async for event in events:
                    if event.kind == "requested" and event.question is not None:
                        self.ids[event.question.request.questions[0].question] = event.id
                        if len(self.ids) == self.per * ASKERS:
                            return
            finally:
                await events.aclose()

        await self.phase("the askers asked", collect())

    async def unobserved(self) -> int:
        """The questions pending once every asker asked, counted by the observer, which then
        stops: it is the benchmark's, not the deployment's (the floor has none), and left
        open it would hear every event of the answering phase on the clients' CPU."""
        pending = len((await self.observer.snapshot()).questions)
        await self.observer.aclose()
        return pending

    async def pending_left(self) -> int:
        """The questions still pending, as a fresh relay of the store reads them."""
        checker = self.relay()
        try:
            return len((await checker.snapshot()).questions)
        finally:
            await checker.aclose()

    async def answer(self, http: httpx.AsyncClient, text: str) -> int:
        body = {"answers": [{"id": "q", "selected": [], "custom": f"for {text}"}]}
        response = await http.post(f"/api/questions/{self.ids[text]}/answer", json=body)
        if response.status_code == 200:
            self.accepted[text] = self.accepted.get(text, 0) + 1
        return response.status_code

    async def answered(self, clients: int) -> tuple[float, list[float], int]:
        """:func:`answering` every question through the hosts."""
        work = answering(self.https, list(self.ids), clients, self.answer)
        return await self.phase("the clients answered", work)

    async def returned(self) -> tuple[dict[str, str], float]:
        """Each asker's answers, as it prints them when it ends (once its standard input is
        closed, after the run's CPU readings), and the askers' CPU seconds."""

        async def said(asker: Child) -> tuple[dict[str, str], float]:
            out, _ = await asker.process.communicate(b"")  # (input closes its stdin)
            line = json.loads(out)  # when it ended otherwise, the phase says so first
            return line["got"], line["cpu"]

        work = asyncio.gather(*(said(asker) for asker in self.askers))
        results: dict[str, str] = {}
        cpu = 0.0
        for got, seconds in await self.phase("the askers returned", work):
            results.update(got)
            cpu += seconds
        return results, cpu


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


async def run(engine: Engine, total: int, clients: int) -> dict[str, float]:
    """One turn of ours on a fresh server of ``engine``: its figures, once every ask was
    answered exactly once and returned to its asker."""
    with store(engine) as server:
        assert server.process is not None
        async with Load(engine, server.url, total, bound_for(total)) as load:
            began = time.perf_counter()
            await load.asked()
            asked = time.perf_counter() - began
            pending = await load.unobserved()
            groups = {
                "askers": [child.process.pid for child in load.askers],
                "hosts": [child.process.pid for child in load.hosts],
                engine: [server.process.pid],
                "clients": [os.getpid()],
            }
            meter = CpuMeter(groups, with_children={engine})
            cpu = meter.read()
            seconds, latencies, refused = await load.answered(clients)
            cpu.update((who, spent - cpu[who]) for who, spent in meter.read().items())
            results, askers_cpu = await load.returned()
            returned = time.perf_counter() - began - asked
            cpu["askers"] = askers_cpu - cpu["askers"]
            ids, accepted = load.ids, load.accepted
            assert pending == total, (pending, total)
            assert set(results) == set(ids), "an ask was lost"
            assert all(count == 1 for count in accepted.values()), "a question was answered twice"
            assert results == {text: f"for {text}" for text in ids}, "an asker got a wrong answer"
            assert await load.pending_left() == 0
    return figures(total, seconds, latencies, cpu, asked, returned, refused)


@contextlib.asynccontextmanager
async def floor_hosts(
    url: str, prefix: str, engine: Engine = "redis"
) -> AsyncIterator[tuple[list[int], list[httpx.AsyncClient]]]:
    """Two floor apps of ``engine`` (:data:`FLOOR`, :data:`POSTGRES_FLOOR`), up: their PIDs
    and a client of each; stopped by their PIDs on the way out."""
    async with contextlib.AsyncExitStack() as stack:
        pids: list[int] = []
        https: list[httpx.AsyncClient] = []
        for _ in range(2):
            port = free_port()
            argv = [sys.executable, "-c", FLOOR, url, prefix, str(port)]
            if engine == "postgres":
                argv = [sys.executable, "-c", POSTGRES_FLOOR, url, str(port)]
            child = stack.enter_context(
                popen(argv, number=signal.SIGKILL, stdout=subprocess.DEVNULL)
            )
            base = f"http://127.0.0.1:{port}"
            await until_up(child, base + "/answer/none")
            pids.append(child.pid)
            https.append(
                await stack.enter_async_context(httpx.AsyncClient(base_url=base, timeout=60))
            )
        yield pids, https


async def postgres_floor(total: int, clients: int) -> dict[str, float]:
    """The same answering on the Postgres floor app: ``total`` pending rows of one table on
    a fresh server (``fsync`` on, as for ours), two bare Starlette hosts claiming each with
    one ``UPDATE``, the same clients."""
    import psycopg

    texts = [f"f-{i}" for i in range(total)]
    with store("postgres") as server:
        assert server.process is not None
        async with await psycopg.AsyncConnection.connect(server.url, autocommit=True) as db:
            await db.execute(
                "CREATE TABLE floor (id text PRIMARY KEY, state text NOT NULL,"
                " request text NOT NULL, answer text)"
            )
            async with db.cursor() as cursor:
                await cursor.executemany(
                    "INSERT INTO floor (id, state, request) VALUES (%s, 'pending', '{}')",
                    [(text,) for text in texts],
                )
            async with floor_hosts(server.url, "", "postgres") as (pids, https):

                async def answer(http: httpx.AsyncClient, text: str) -> int:
                    body = {"answers": [{"id": "q", "selected": [], "custom": f"for {text}"}]}
                    return (await http.post(f"/answer/{text}", json=body)).status_code

                groups = {"hosts": pids, "postgres": [server.process.pid], "clients": [os.getpid()]}
                meter = CpuMeter(groups, with_children={"postgres"})
                cpu = meter.read()
                seconds, latencies, refused = await answering(https, texts, clients, answer)
                cpu = {who: spent - cpu[who] for who, spent in meter.read().items()}
            left = await (
                await db.execute("SELECT count(*) FROM floor WHERE state <> 'answered'")
            ).fetchone()
            assert left == (0,), left
    return figures(total, seconds, latencies, cpu, refused=refused)


async def floor(total: int, clients: int) -> dict[str, float]:
    """The same answering on the floor app: ``total`` pending question hashes, two bare
    Starlette hosts claiming each with one Lua script, the same clients."""
    import redis.asyncio as aioredis

    prefix = f"{{floor{secrets.token_hex(4)}}}:q:"
    texts = [f"f-{i}" for i in range(total)]
    with tempfile.TemporaryDirectory() as directory, RedisServer(Path(directory)) as server:
        assert server.process is not None
        redis = aioredis.Redis.from_url(server.url)
        for start in range(0, total, 1_000):
            async with redis.pipeline(transaction=False) as pipe:
                for text in texts[start : start + 1_000]:
                    pipe.hset(prefix + text, mapping={"state": "pending", "request": "{}"})
                await pipe.execute()
        async with floor_hosts(server.url, prefix) as (pids, https):

            async def answer(http: httpx.AsyncClient, text: str) -> int:
                body = {"answers": [{"id": "q", "selected": [], "custom": f"for {text}"}]}
                return (await http.post(f"/answer/{text}", json=body)).status_code

            groups = {"hosts": pids, "redis": [server.process.pid], "clients": [os.getpid()]}
            meter = CpuMeter(groups, with_children={"redis"})
            cpu = meter.read()
            seconds, latencies, refused = await answering(https, texts, clients, answer)
            cpu = {who: spent - cpu[who] for who, spent in meter.read().items()}
        answered = [await redis.hget(prefix + text, "state") for text in texts[:100]]
        assert answered == [b"answered"] * 100
        await redis.aclose()
    return figures(total, seconds, latencies, cpu, refused=refused)


async def compare(
    total: int, clients: int, repeat: int, engine: Engine = "redis"
) -> dict[str, dict[str, float]]:
    """Ours on ``engine`` and its floor app taking turns (ours, floor, floor, ours, ...):
    each figure's median over the turns."""
    turns: dict[str, list[dict[str, float]]] = {"ours": [], "floor": []}
    floor_of = floor if engine == "redis" else postgres_floor
    for round_number in range(repeat):
        order = ("ours", "floor") if round_number % 2 == 0 else ("floor", "ours")
        for subject in order:
            ours = subject == "ours"
            measured = run(engine, total, clients) if ours else floor_of(total, clients)
            turns[subject].append(await measured)
    return {
        subject: {key: statistics.median(t[key] for t in taken) for key in taken[0]}
        for subject, taken in turns.items()
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("engine", choices=sorted(SPACE), help="the store the relay runs on")
    parser.add_argument("--quick", action="store_true", help="400 asks, 10 clients")
    parser.add_argument("--repeat", type=int, default=2, help="turns of each (default 2)")
    args = parser.parse_args()
    total, clients = (400, 10) if args.quick else (10_000, 50)
    load = os.getloadavg()[0]
    both = asyncio.run(compare(total, clients, args.repeat, args.engine))
    both["ratio"] = {
        "answers_per_s": both["ours"]["answers_per_s"] / both["floor"]["answers_per_s"]
    }
    print(json.dumps({"load_at_start": load, **both}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
