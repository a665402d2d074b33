"""Measure the seam against references taken in the same run; print and record the figures.

    python benchmarks/run.py           # full run, appends to benchmarks/RESULTS.md
    python benchmarks/run.py --quick   # a few iterations, records nothing (CI keeps it alive)
    python benchmarks/run.py --core    # only the core's cases, (a)-(c) and (j)-(l), recorded

Needs the ``bench``, ``web`` and ``terminal`` extras and httpx. Every ratio compares
subjects measured in the same run, taking turns round by round, as medians of rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import platform
import pty
import re
import select
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Literal

import httpx
import msgspec
import pydantic
import uvicorn
from pydantic_ai_harness.ask_user import AskUserAnswer as PeerAnswer
from pydantic_ai_harness.ask_user import AskUserRequest as PeerRequest
from pydantic_ai_harness.ask_user import AskUserResponse as PeerResponse
from pydantic_ai_harness.ask_user import Question as PeerQuestion
from pydantic_ai_harness.ask_user import check_response as peer_check_response
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

import interaction
from interaction import (
    AgentRegistry,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    UserInteractionProvider,
    wire,
)
from interaction.relay import Relay
from interaction.web import WebServer

RESULTS = Path(__file__).with_name("RESULTS.md")
# Child interpreters run as an installed package does: reading and writing bytecode. With
# PYTHONDONTWRITEBYTECODE an editable install recompiles every module at every start,
# which measures the compiler, not the import.
CHILD_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


# ---------------------------------------------------------------- reference types


class PydanticOption(pydantic.BaseModel):
    label: str = pydantic.Field(min_length=1)
    description: str | None = None


class PydanticIntent(pydantic.BaseModel):
    kind: str = pydantic.Field(min_length=1)
    approve: str | None = None


class PydanticItem(pydantic.BaseModel):
    id: str = pydantic.Field(min_length=1)
    question: str = pydantic.Field(min_length=1)
    detail: str | None = None
    header: str | None = None
    options: list[PydanticOption] = []
    multi_select: bool = pydantic.Field(False, alias="multiSelect")
    intent: PydanticIntent | None = None


class PydanticRequest(pydantic.BaseModel):
    questions: list[PydanticItem]


class MsgspecOption(msgspec.Struct, frozen=True):
    label: str
    description: str | None = None


class MsgspecIntent(msgspec.Struct, frozen=True):
    kind: str
    approve: str | None = None


class MsgspecItem(msgspec.Struct, frozen=True, rename={"multi_select": "multiSelect"}):
    id: str
    question: str
    detail: str | None = None
    header: str | None = None
    options: list[MsgspecOption] = []
    multi_select: bool = False
    intent: MsgspecIntent | None = None


class MsgspecRequest(msgspec.Struct, frozen=True):
    questions: list[MsgspecItem]


PeerQuestions = list[PeerQuestion]


# ---------------------------------------------------------------- payloads


def payload(questions: int, options: int) -> dict[str, object]:
    return {
        "questions": [
            {
                "id": f"q{q}",
                "question": f"Question number {q}: which one should the agent use?",
                "header": f"Topic {q}",
                "options": [
                    {
                        "label": f"Option {o}" + (" (Recommended)" if o == 0 else ""),
                        "description": f"Because {o}",
                    }
                    for o in range(options)
                ],
                **({"multiSelect": True} if q % 2 else {}),
            }
            for q in range(questions)
        ]
    }


@dataclass(frozen=True)
class Agent:
    id: str


class Instant:
    def __init__(self, answer: AskUserQuestionAnswer) -> None:
        self.answer = answer

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return self.answer


# ---------------------------------------------------------------- timing


def turns(count: int, round_number: int) -> Sequence[int]:
    """The order ``count`` subjects take in a round: forward, then backward the next round.

    Whoever goes first in a round runs a few percent slower (caches, the CPU's clock), so
    no subject may always go first.
    """
    order = range(count)
    return order if round_number % 2 == 0 else order[::-1]


def interleaved(subjects: list[Callable[[], float]], repeat: int) -> list[float]:
    """Median of each subject's per-call seconds, the subjects taking turns round by round."""
    samples: list[list[float]] = [[] for _ in subjects]
    for round_number in range(repeat):
        for index in turns(len(subjects), round_number):
            samples[index].append(subjects[index]())
    return [statistics.median(s) for s in samples]


def timed(fn: Callable[[], object], number: int) -> Callable[[], float]:
    def one_round() -> float:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        return (time.perf_counter() - start) / number

    return one_round


def import_ms(module: str, repeat: int, *, collect: bool = True, path: str = "") -> float:
    """Median cumulative ``-X importtime`` of ``module`` after asyncio is imported, in ms.

    ``collect=False`` turns the cyclic GC off first: the pass that the import's allocations
    set off (over every object asyncio left) then drops out, leaving the import's own work.
    ``path`` is put first on the child's ``sys.path``.
    """
    samples = []
    setup = "" if collect else "import gc; gc.disable(); "
    env = CHILD_ENV | {"PYTHONPATH": path} if path else CHILD_ENV
    for _ in range(repeat + 1):  # the first run writes the bytecode and is not counted
        result = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", f"{setup}import asyncio; import {module}"],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        line = [ln for ln in result.stderr.splitlines() if re.search(rf"\|\s*{module}$", ln)][-1]
        samples.append(int(line.split("|")[1]) / 1000)
    return statistics.median(samples[1:])


def empty_twin(package: str, root: Path) -> str:
    """Write under ``root`` a package of the modules ``import package`` loads, each empty.

    Its ``__init__`` imports the same standard-library modules that the real import adds to
    an interpreter that has imported asyncio, then its empty submodules: what loading that
    layout costs with none of its code. Returns the twin's name.
    """
    probe = (
        "import asyncio, sys; before = set(sys.modules); "
        f"import {package}; print(*sorted(set(sys.modules) - before))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=CHILD_ENV
    ).stdout.split()
    own = [name.removeprefix(f"{package}.") for name in loaded if name.startswith(f"{package}.")]
    assert all("." not in name for name in own), own  # a flat package: no subpackages
    others = [name for name in loaded if name != package and not name.startswith(f"{package}.")]
    twin = f"{package}_twin"
    (root / twin).mkdir()
    for name in own:
        (root / twin / f"{name}.py").write_text("")
    lines = [f"import {name}" for name in others] + [f"from . import {name}" for name in own]
    (root / twin / "__init__.py").write_text("\n".join(lines) + "\n")
    return twin


@dataclass
class Row:
    case: str
    subject: str
    value: float
    reference: str
    reference_value: float
    unit: Literal["µs", "ms", "KiB"]
    target: str

    @property
    def ratio(self) -> float:
        return self.value / self.reference_value


def fresh_request(agent: Agent) -> AskUserQuestionRequest:
    """What a plugin builds for each ask: 1 question x 3 options, new objects every time."""
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
        ],
        agent=agent,
    )


def timed_await(
    loop: asyncio.AbstractEventLoop, make: Callable[[], Awaitable[object]], number: int
) -> Callable[[], float]:
    async def run() -> float:
        start = time.perf_counter()
        for _ in range(number):
            await make()
        return (time.perf_counter() - start) / number

    return lambda: loop.run_until_complete(run())


def peer_payload(questions: int, options: int) -> list[dict[str, object]]:
    """``payload`` in pydantic-ai-harness's shape: the header is the key, there is no id."""
    items = payload(questions, options)["questions"]
    assert isinstance(items, list)
    return [
        {key: value for key, value in item.items() if key not in ("id", "multiSelect")}
        | {"multi_select": item.get("multiSelect", False)}
        for item in items
        if isinstance(item, dict)
    ]


def measure(quick: bool) -> list[Row]:
    """Cases (a)-(c) and the peer rows (j)-(l); each row's subjects take turns per round."""
    # Short rounds, many of them: a burst of load from elsewhere lands on every subject.
    number, repeat = (200, 3) if quick else (500, 101)
    rows: list[Row] = []

    # (a) ask() end to end on a request built fresh for each call, with agent admission and
    # an instant provider; the reference builds and validates the same data with pydantic.
    data = payload(1, 3)
    agent = Agent("lead")
    registry = AgentRegistry()
    registry.enter(agent)
    provider = Instant(AskUserQuestionAnswer([AskUserQuestionAnswerItem("q0", ["Option 1"])]))
    adapter = pydantic.TypeAdapter(PydanticRequest)
    loop = asyncio.new_event_loop()
    with interaction.provide_agents(registry), interaction.provide(provider):
        ask_s, pyd_s, bare_s = interleaved(
            [
                timed_await(loop, lambda: interaction.ask(fresh_request(agent)), number),
                timed(partial(adapter.validate_python, data), number),
                timed_await(loop, lambda: provider.ask(fresh_request(agent)), number),
            ],
            repeat,
        )
    loop.close()
    case = "(a) fresh ask() 1q x 3 opts"
    rows.append(
        Row(case, "ask()", ask_s * 1e6, "pydantic validate_python", pyd_s * 1e6, "µs", "<= 1.8x")
    )
    rows.append(Row(case, "ask()", ask_s * 1e6, "build + provider.ask()", bare_s * 1e6, "µs", "-"))

    # (b) decode_request from JSON bytes, against pydantic and msgspec.
    targets = {1: "<= 1.8x", 8: "<= 1.6x"}
    for questions, options in ((1, 3), (8, 6)):
        raw = json.dumps(payload(questions, options)).encode()
        decoder = msgspec.json.Decoder(MsgspecRequest)
        count = max(number // questions, 1)
        ours, pyd, ms = interleaved(
            [
                timed(partial(wire.decode_request, raw), count),
                timed(partial(adapter.validate_json, raw), count),
                timed(partial(decoder.decode, raw), count),
            ],
            repeat,
        )
        case = f"(b) decode {questions}q x {options} opts"
        rows.append(
            Row(
                case,
                "decode_request",
                ours * 1e6,
                "pydantic validate_json",
                pyd * 1e6,
                "µs",
                targets[questions],
            )
        )
        rows.append(Row(case, "decode_request", ours * 1e6, "msgspec decode", ms * 1e6, "µs", "-"))

    # (c) import cost after asyncio, the imports taking turns, with and without the GC; and
    # the floor of the layout: the same modules, empty.
    imports = 3 if quick else 15
    with tempfile.TemporaryDirectory() as root:
        twin = empty_twin("interaction", Path(root))
        ours_ms, pyd_ms, ours_quiet, pyd_quiet, twin_ms, twin_quiet = interleaved(
            [
                partial(import_ms, "interaction", 1),
                partial(import_ms, "pydantic", 1),
                partial(import_ms, "interaction", 1, collect=False),
                partial(import_ms, "pydantic", 1, collect=False),
                partial(import_ms, twin, 1, path=root),
                partial(import_ms, twin, 1, collect=False, path=root),
            ],
            imports,
        )
    rows.append(
        Row(
            "(c) import after asyncio",
            "import interaction",
            ours_ms,
            "import pydantic",
            pyd_ms,
            "ms",
            "<= 5 ms",
        )
    )
    rows.append(
        Row(
            "(c) the same, cyclic GC off",
            "import interaction",
            ours_quiet,
            "import pydantic",
            pyd_quiet,
            "ms",
            "-",
        )
    )
    for gc_note, twin_value, ours_value in (
        ("", twin_ms, ours_ms),
        (", GC off", twin_quiet, ours_quiet),
    ):
        rows.append(
            Row(
                f"(c) the same modules, empty{gc_note}",
                "empty twin (the layout's floor)",
                twin_value,
                "import interaction",
                ours_value,
                "ms",
                "-",
            )
        )
    rows.extend(measure_peer(number, repeat))
    return rows


def measure_peer(number: int, repeat: int) -> list[Row]:
    """The real Python peer: pydantic-ai-harness's AskUser models and ``check_response``."""
    peer_adapter = pydantic.TypeAdapter(PeerQuestions)
    rows: list[Row] = []
    for questions, options in ((1, 3), (8, 6)):
        ours_data = payload(questions, options)
        peer_data = peer_payload(questions, options)
        raw = json.dumps(ours_data).encode()
        peer_raw = json.dumps(peer_data).encode()
        count = max(number // questions, 1)
        build, peer_build, decode, peer_decode = interleaved(
            [
                timed(partial(wire.decode_request, ours_data), count),
                timed(partial(peer_adapter.validate_python, peer_data), count),
                timed(partial(wire.decode_request, raw), count),
                timed(partial(peer_adapter.validate_json, peer_raw), count),
            ],
            repeat,
        )
        size = f"{questions}q x {options} opts"
        rows.append(
            Row(
                f"(j) build + validate {size}",
                "decode_request(dict)",
                build * 1e6,
                "harness validate_python",
                peer_build * 1e6,
                "µs",
                "<= 0.35x",
            )
        )
        rows.append(
            Row(
                f"(k) decode JSON {size}",
                "decode_request(bytes)",
                decode * 1e6,
                "harness validate_json",
                peer_decode * 1e6,
                "µs",
                "<= 0.35x",
            )
        )
        request = wire.decode_request(ours_data)
        answer = AskUserQuestionAnswer(
            [AskUserQuestionAnswerItem(f"q{q}", ["Option 1"]) for q in range(questions)]
        )
        peer_request = PeerRequest(questions=tuple(peer_adapter.validate_python(peer_data)))
        peer_response = PeerResponse(
            answers=tuple(
                PeerAnswer(header=f"Topic {q}", selected=("Option 1",)) for q in range(questions)
            )
        )
        ours_check, peer_check = interleaved(
            [
                timed(partial(interaction.check_answer, request, answer), count),
                timed(partial(peer_check_response, peer_request, peer_response), count),
            ],
            repeat,
        )
        rows.append(
            Row(
                f"(l) answer check {size}",
                "check_answer",
                ours_check * 1e6,
                "harness check_response",
                peer_check * 1e6,
                "µs",
                "<= 0.7x",
            )
        )
    return rows


async def relay_memory(count: int) -> tuple[float, float]:
    """Bytes per pending question at ``count`` pending: in the relay alone, and with the
    asker's waiting ``ask()`` task. The requests exist before the first snapshot."""
    requests = [
        AskUserQuestionRequest(wire.decode_request(payload(1, 3)).questions) for _ in range(count)
    ]
    relay = Relay(max_pending=count)
    with interaction.provide(relay):
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        tasks = [asyncio.create_task(interaction.ask(r)) for r in requests]
        await asyncio.sleep(0)  # let every ask reach the relay
        assert len(relay.pending()) == count
        gc.collect()
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
    total = sum(s.size_diff for s in after.compare_to(before, "filename"))
    in_relay = sum(
        s.size_diff
        for s in after.compare_to(before, "filename")
        if "interaction" in str(s.traceback) and "_ask.py" not in str(s.traceback)
    )
    relay.close()
    await asyncio.gather(*tasks, return_exceptions=True)
    return in_relay / count, total / count


async def answers_over_http(  # noqa: PLR0917 - one loop for every (e) and (m) trip
    http: httpx.AsyncClient,
    lines: AsyncIterator[str],
    body: Mapping[str, object],
    number: int,
    begin: Callable[[], Awaitable[object]],
    answer_path: Callable[[str], str],
) -> float:
    """Mean seconds of one trip as a client makes it: ``begin()`` asks, the client reads the
    ``requested`` event from ``lines`` and POSTs ``body`` to ``answer_path(id)``, and the
    awaitable ``begin`` returned settles. Ours and the bare app share this loop, so the
    client's own work is the same on both sides."""
    start = time.perf_counter()
    for _ in range(number):
        settled = begin()
        while (await anext(lines)) != "event: requested":
            pass
        qid = json.loads((await anext(lines)).removeprefix("data: "))["id"]
        await http.post(answer_path(qid), json=body)
        await settled
    return (time.perf_counter() - start) / number


async def questions_over_http(
    http: httpx.AsyncClient,
    lines: AsyncIterator[str],
    request: AskUserQuestionRequest,
    body: Mapping[str, object],
    number: int,
) -> float:
    """Mean seconds of one question over HTTP with the active provider: ask, read its
    ``requested`` event from ``lines``, POST ``body`` as its answer, and await the ask."""
    return await answers_over_http(
        http,
        lines,
        body,
        number,
        lambda: asyncio.create_task(interaction.ask(request)),
        lambda qid: f"/api/questions/{qid}/answer",
    )


class BareEventServer:
    """The stack's floor for (e): a bare Starlette app on uvicorn with an SSE stream fed by
    a queue and an answer route that only wakes the asker, so the same trip costs only the
    HTTP/SSE transport (no relay, no checks, no display model)."""

    def __init__(self) -> None:
        self.events: asyncio.Queue[str] = asyncio.Queue()
        self.waiters: list[asyncio.Future[bytes]] = []
        self.app = Starlette(
            routes=[
                Route("/events", self.stream),
                Route("/answer", self.answer, methods=["POST"]),
                Route("/ping", self.ping, methods=["POST"]),
            ]
        )

    async def stream(self, request: Request) -> Response:
        async def texts() -> AsyncIterator[str]:
            while True:
                yield await self.events.get()

        return StreamingResponse(texts(), media_type="text/event-stream")

    async def answer(self, request: Request) -> Response:
        body = await request.body()
        self.events.put_nowait('event: resolved\ndata: {"id": "q", "outcome": "answered"}\n\n')
        self.waiters.pop().set_result(body)
        return Response(body, media_type="application/json")

    async def ping(self, request: Request) -> Response:
        return Response(status_code=204)

    def ask(self, event: str) -> asyncio.Future[bytes]:
        """Publish ``event``; the future settles when its answer is POSTed."""
        waiter: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        self.events.put_nowait(event)
        return waiter


def noop_posts(http: httpx.AsyncClient, path: str) -> Callable[[int], Awaitable[float]]:
    async def noops(number: int) -> float:
        start = time.perf_counter()
        for _ in range(number):
            await http.post(path)
        return (time.perf_counter() - start) / number

    return noops


async def http_round_trips(rounds: int, number: int) -> tuple[float, float, float, float]:
    """Median seconds per ask over HTTP (ask, event seen by a client, POST answer, ask
    returns) and per no-op POST on the same server and connection, then the same pair on
    :class:`BareEventServer`; the four take turns round by round (``number`` each)."""
    relay = Relay()
    request = wire.decode_request(payload(1, 3))
    body = {"answers": [{"id": "q0", "selected": ["Option 1"]}]}
    bare = BareEventServer()
    sock = socket.create_server(("127.0.0.1", 0))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as WebServer's socket
    bare_server = uvicorn.Server(uvicorn.Config(bare.app, log_level="warning", lifespan="off"))
    bare_task = asyncio.create_task(bare_server.serve(sockets=[sock]))
    bare_base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    async with contextlib.AsyncExitStack() as stack:
        server = await stack.enter_async_context(WebServer(relay))
        headers = {"Authorization": f"Bearer {server.token}"}
        http = await stack.enter_async_context(
            httpx.AsyncClient(base_url=server.base, headers=headers)
        )
        bare_http = await stack.enter_async_context(httpx.AsyncClient(base_url=bare_base))
        while not bare_server.started:  # noqa: ASYNC110 - uvicorn sets no event for it
            await asyncio.sleep(0.01)
        await http.post("/api/ping")  # connect once: both subjects reuse the connection
        await bare_http.post("/ping")
        stack.enter_context(interaction.provide(relay))
        events = await stack.enter_async_context(http.stream("GET", "/api/events"))
        lines = aiter(events.aiter_lines())
        bare_events = await stack.enter_async_context(bare_http.stream("GET", "/events"))
        question = {"id": "q", "request": wire.encode_request(request)}
        requested = f"event: requested\ndata: {json.dumps(question)}\n\n"

        async def trips(count: int) -> float:
            return await questions_over_http(http, lines, request, body, count)

        subjects: list[Callable[[int], Awaitable[float]]] = [
            trips,
            noop_posts(http, "/api/ping"),
            partial(
                answers_over_http,
                bare_http,
                aiter(bare_events.aiter_lines()),
                body,
                begin=partial(bare.ask, requested),
                answer_path=lambda _: "/answer",
            ),
            noop_posts(bare_http, "/ping"),
        ]
        for subject in subjects:  # warm every path up before the first counted round
            await subject(number)
        samples: list[list[float]] = [[] for _ in subjects]
        for round_number in range(rounds):
            for index in turns(len(subjects), round_number):
                samples[index].append(await subjects[index](number))
    bare_server.should_exit = True
    await bare_task
    relay.close()
    ours, noop, floor, floor_noop = (statistics.median(taken) for taken in samples)
    return ours, noop, floor, floor_noop


def measure_web(quick: bool) -> list[Row]:
    count = 1_000 if quick else 10_000
    in_relay, total = asyncio.run(relay_memory(count))
    rounds, trips = (3, 20) if quick else (15, 50)
    round_trip, noop, floor, floor_noop = asyncio.run(http_round_trips(rounds, trips))
    case = f"(d) relay memory at {count:,} pending"
    trip = "ask -> event -> POST -> return"
    return [
        Row(case, "relay's own objects", in_relay / 1024, "4 KiB target", 4.0, "KiB", "<= 4 KiB"),
        Row(case, "with the waiting ask() task", total / 1024, "4 KiB target", 4.0, "KiB", "-"),
        Row(
            "(e) one question over HTTP",
            trip,
            round_trip * 1e3,
            "no-op POST",
            noop * 1e3,
            "ms",
            "<= 1.3x",
        ),
        Row(
            "(e) the same on bare Starlette",
            "queue -> event -> POST -> wake",
            floor * 1e3,
            "no-op POST",
            floor_noop * 1e3,
            "ms",
            "- (the stack's floor)",
        ),
        Row(
            "(e) what the seam adds to the floor",
            trip,
            round_trip * 1e3,
            "the same on bare Starlette",
            floor * 1e3,
            "ms",
            "-",
        ),
    ]


def first_paint_seconds(argv: list[str], marker: bytes) -> float:
    """Seconds from starting ``argv`` on a fresh pseudo-terminal until ``marker`` is written.

    Cursor position requests are answered as a terminal would; the process is then killed.
    """
    controller, terminal = pty.openpty()
    environment = {**CHILD_ENV, "TERM": "xterm-256color"}
    start = time.perf_counter()
    process = subprocess.Popen(
        argv, stdin=terminal, stdout=terminal, stderr=terminal, env=environment, close_fds=True
    )
    os.close(terminal)
    seen = b""
    try:
        while marker not in seen:
            if not select.select([controller], [], [], 30)[0]:
                raise RuntimeError(f"{marker!r} was not painted within 30 s: {seen[-500:]!r}")
            chunk = os.read(controller, 65536)
            if b"\x1b[6n" in chunk:
                os.write(controller, b"\x1b[1;1R")
            seen += chunk
        return time.perf_counter() - start
    finally:
        process.kill()
        process.wait()
        os.close(controller)


def run_seconds(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, env=CHILD_ENV)
    return time.perf_counter() - start


def measure_terminal(quick: bool) -> list[Row]:
    """(f) Process start to the first question painted by ``interaction ask`` in a terminal."""
    repeat = 3 if quick else 21
    ask = [sys.executable, "-m", "interaction", "ask"]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as request:
        json.dump(payload(1, 3), request)
    marker = b"Question number 0"
    try:
        first_paint_seconds([*ask, request.name], marker)  # writes the bytecode
        subjects: list[Callable[[], float]] = [
            partial(first_paint_seconds, [*ask, request.name], marker),
            partial(first_paint_seconds, [*ask, "--plain", request.name], marker),
            partial(run_seconds, [sys.executable, "-c", "import prompt_toolkit"]),
        ]
        samples: list[list[float]] = [[], [], []]
        for round_number in range(repeat):  # so drift in the machine's load hits all three
            for index in turns(3, round_number):
                samples[index].append(subjects[index]())
        terminal, console, reference = samples
    finally:
        os.unlink(request.name)
    case = "(f) start to first question painted"
    reference_ms = statistics.median(reference) * 1e3
    return [
        Row(
            case,
            "interaction ask, terminal UI",
            statistics.median(terminal) * 1e3,
            "python -c 'import prompt_toolkit'",
            reference_ms,
            "ms",
            "<= 1.2x",
        ),
        Row(
            case,
            "interaction ask --plain (console)",
            statistics.median(console) * 1e3,
            "python -c 'import prompt_toolkit'",
            reference_ms,
            "ms",
            "-",
        ),
    ]


# ---------------------------------------------------------------- scaling


def check_answer_round(labels: int, number: int) -> Callable[[], float]:
    names = [f"option {i}" for i in range(labels)]
    item = AskUserQuestionItem(
        "many", "Which?", multi_select=True, options=[AskUserQuestionOption(n) for n in names]
    )
    request = AskUserQuestionRequest([item])
    answer = AskUserQuestionAnswer([AskUserQuestionAnswerItem("many", names)])
    return timed(partial(interaction.check_answer, request, answer), number)


def label_sets_round(labels: int, number: int) -> Callable[[], float]:
    """The set work of a fitting many-label answer alone: the labels offered, as a set, hold
    those selected, and those selected are distinct. Its own growth from 3,000 to 30,000
    labels (the cache misses of the larger sets) is the floor for (g)'s."""
    names = [f"option {i}" for i in range(labels)]
    return timed(lambda: set(names).issuperset(names) and len(set(names)), number)


def ask_round(live: int, number: int) -> Callable[[], float]:
    registry = AgentRegistry()
    for i in range(live - 1):
        registry.enter(Agent(f"other {i}"))
    agent = Agent("lead")
    registry.enter(agent)
    request = AskUserQuestionRequest(wire.decode_request(payload(1, 3)).questions, agent=agent)
    provider = Instant(AskUserQuestionAnswer([AskUserQuestionAnswerItem("q0", ["Option 1"])]))

    def one_round() -> float:
        async def run() -> float:
            with interaction.provide_agents(registry), interaction.provide(provider):
                start = time.perf_counter()
                for _ in range(number):
                    await interaction.ask(request)
                return (time.perf_counter() - start) / number

        return asyncio.run(run())

    return one_round


def leave_round(descendants: int) -> Callable[[], float]:
    def one_round() -> float:
        registry = AgentRegistry()
        root = Agent("root")
        registry.enter(root)
        for i in range(descendants // 2):  # children, each with one child of its own
            child = Agent(f"c{i}")
            registry.enter(child, owner=root)
            registry.enter(Agent(f"g{i}"), owner=child)
        # The setup's garbage is collected here, not in a collection that the leave's own
        # allocations may set off: that pass walks the whole process, whatever N is.
        gc.collect()
        start = time.perf_counter()
        registry.leave(root)
        return time.perf_counter() - start

    return one_round


def measure_scaling(quick: bool) -> list[Row]:
    """Cost at 1x and 10x size, the two sizes interleaved; linear reads ~10x, O(1) ~1x."""
    repeat = 3 if quick else 9
    rows: list[Row] = []
    small, large, sets_small, sets_large = interleaved(
        [
            check_answer_round(3_000, 5 if quick else 50),
            check_answer_round(30_000, 1 if quick else 5),
            label_sets_round(3_000, 5 if quick else 50),
            label_sets_round(30_000, 1 if quick else 5),
        ],
        repeat,
    )
    rows.append(
        Row(
            "(g) check_answer, N labels selected",
            "N = 30,000",
            large * 1e3,
            "N = 3,000",
            small * 1e3,
            "ms",
            "~10x (linear)",
        )
    )
    rows.append(
        Row(
            "(g) its set work alone (the floor)",
            "N = 30,000",
            sets_large * 1e3,
            "N = 3,000",
            sets_small * 1e3,
            "ms",
            "-",
        )
    )
    number = 100 if quick else 5_000
    small, large = interleaved([ask_round(1_000, number), ask_round(10_000, number)], repeat)
    rows.append(
        Row(
            "(h) ask() with N live agents",
            "N = 10,000",
            large * 1e6,
            "N = 1,000",
            small * 1e6,
            "µs",
            "~1x (O(1))",
        )
    )
    small, large = interleaved([leave_round(2_000), leave_round(20_000)], repeat)
    rows.append(
        Row(
            "(i) AgentRegistry.leave, N descendants",
            "N = 20,000",
            large * 1e3,
            "N = 2,000",
            small * 1e3,
            "ms",
            "~10x (linear)",
        )
    )
    return rows


# ---------------------------------------------------------------- the Redis relay (m), (n)


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


def measure_redis(quick: bool) -> list[Row]:
    """(m) the cross-process round trip over Redis; (n) Redis memory per pending question."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.redis_server import RedisServer

    rows = []
    with tempfile.TemporaryDirectory() as directory, RedisServer(Path(directory)) as server:
        number, repeat = (5, 3) if quick else (100, 7)
        far, near, ping = asyncio.run(redis_round_trips(server.url, number, repeat))
        case = "(m) one question across hosts over Redis"
        subject = "ask on A -> event on B -> POST to B -> return on A"
        rows.append(Row(case, subject, far * 1e3, "bare Redis PING", ping * 1e3, "ms", "<= 4x"))
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


def table(rows: list[Row]) -> str:
    lines = [
        "| case | subject | median | reference | median | ratio | target |",
        "|---|---|---:|---|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.case} | {r.subject} | {r.value:.2f} {r.unit} | {r.reference} |"
            f" {r.reference_value:.2f} {r.unit} | {r.ratio:.2f}x | {r.target} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few iterations; record nothing")
    parser.add_argument(
        "--core",
        action="store_true",
        help="only (a)-(c) and (j)-(l): no server, terminal or Redis (e.g. another interpreter)",
    )
    args = parser.parse_args()
    rows = measure(args.quick)
    if not args.core:
        rows += (
            measure_scaling(args.quick)
            + measure_web(args.quick)
            + measure_terminal(args.quick)
            + measure_redis(args.quick)
        )
    text = table(rows)
    print(text)
    if not args.quick:
        machine = (
            f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()},"
            f" interaction {interaction.__version__}, pydantic {pydantic.VERSION},"
            f" msgspec {msgspec.__version__}"
            + ("; the core's cases only (--core)" if args.core else "")
        )
        with RESULTS.open("a", encoding="utf-8") as out:
            out.write(f"\n## {datetime.now(UTC):%Y-%m-%d %H:%M} UTC\n\n{machine}\n\n{text}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
