"""The web UI over the in-memory relay: memory per pending question, one question over HTTP.

(d) tracemalloc bytes per pending relay question at 10,000 pending, the requests made
before the first snapshot; (e) one question over HTTP on loopback (ask, the event read by a
client, POST the answer, ask returns) against a no-op POST on the same server and
connection, and the same trip on a bare Starlette app (an SSE queue and an answer route
that only wakes the asker) against its own no-op POST: the floor of uvicorn + Starlette +
httpx. A fifth subject is that bare app speaking the seam's wire (:class:`WireFloorServer`):
the same bytes each way, the asker a task, the answer decoded once; between it and the bare
app is what the protocol itself costs, and between ours and it what the seam's own work
(relay, checks, display model, guard) adds. All five subjects take turns.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import socket
import statistics
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from datetime import UTC, datetime
from functools import partial

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from timing import Row, payload, turns

import interaction
from interaction import AskUserQuestionRequest, wire
from interaction.display import present
from interaction.relay import Relay
from interaction.web import WebServer

TITLE = "the web UI: relay memory, one question over HTTP"


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


SECURITY_HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
    "x-frame-options": "DENY",
}
"""What WebServer adds to every response (docs/web.md)."""


def shown_question(request: AskUserQuestionRequest, question_id: str) -> str:
    """The JSON of the question as the page's ``requested`` event carries it: the wire
    request, ``planReview`` and the display model, under ``question_id``."""
    view = present(request)
    question = {
        "id": question_id,
        "request": wire.encode_request(request),
        "planReview": view.plan_review,
        "view": view.to_json(),
    }
    return json.dumps(question, ensure_ascii=False)


class WireFloorServer:
    """The floor of the seam's own protocol: the bare app of :class:`BareEventServer`
    carrying the bytes :class:`WebServer` carries for one question, and nothing of its
    work. Its ``requested`` event has an ``id:`` line and the whole question (wire request,
    ``planReview``, display model), built before the trip; the answer is POSTed with the
    token to ``/api/questions/{id}/answer``, decoded once (``json.loads``), and answered
    with the checked answer's JSON and the security headers; the asker is a task awaiting
    a future, as an ``ask()`` is a coroutine. No relay, no checks, no token comparison."""

    def __init__(self, request: AskUserQuestionRequest, question_id: str) -> None:
        self.events: asyncio.Queue[str] = asyncio.Queue()
        self.waiters: list[asyncio.Future[object]] = []
        self.sequence = 0
        self.requested = f"event: requested\ndata: {shown_question(request, question_id)}\n\n"
        resolved = {"id": question_id, "outcome": "answered"}
        self.resolved = f"event: resolved\ndata: {json.dumps(resolved)}\n\n"
        self.app = Starlette(
            routes=[
                Route("/api/events", self.stream),
                Route("/api/questions/{id}/answer", self.answer, methods=["POST"]),
            ]
        )

    def _next_id(self) -> str:
        self.sequence += 1
        return f"id: Xq3-fT9a.{self.sequence}\n"  # as long as a relay position

    async def stream(self, request: Request) -> Response:
        async def texts() -> AsyncIterator[str]:
            while True:
                yield await self.events.get()

        return StreamingResponse(texts(), media_type="text/event-stream", headers=SECURITY_HEADERS)

    async def answer(self, request: Request) -> Response:
        answer = json.loads(await request.body())
        self.waiters.pop().set_result(answer)
        self.events.put_nowait(self._next_id() + self.resolved)
        body = json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode()
        return Response(body, media_type="application/json", headers=SECURITY_HEADERS)

    def ask(self) -> asyncio.Task[object]:
        """Publish the question; the task ends when its answer is POSTed."""
        waiter: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)

        async def asker() -> object:
            self.events.put_nowait(self._next_id() + self.requested)
            return await waiter

        return asyncio.create_task(asker())


def noop_posts(http: httpx.AsyncClient, path: str) -> Callable[[int], Awaitable[float]]:
    async def noops(number: int) -> float:
        start = time.perf_counter()
        for _ in range(number):
            await http.post(path)
        return (time.perf_counter() - start) / number

    return noops


async def serve_bare(app: Starlette) -> tuple[uvicorn.Server, asyncio.Task[None], str]:
    """``app`` on plain uvicorn on a loopback port: the server, its task and base URL."""
    sock = socket.create_server(("127.0.0.1", 0))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as WebServer's socket
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:  # noqa: ASYNC110 - uvicorn sets no event for it
        await asyncio.sleep(0.01)
    return server, task, f"http://127.0.0.1:{sock.getsockname()[1]}"


async def http_round_trips(rounds: int, number: int) -> tuple[float, float, float, float, float]:
    """Median seconds per ask over HTTP (ask, event seen by a client, POST answer, ask
    returns) and per no-op POST on the same server and connection, then the same pair on
    :class:`BareEventServer`, then the trip on :class:`WireFloorServer`; the five take
    turns round by round (``number`` each)."""
    relay = Relay()
    request = wire.decode_request(payload(1, 3))
    body = {"answers": [{"id": "q0", "selected": ["Option 1"]}]}
    bare = BareEventServer()
    bare_server, bare_task, bare_base = await serve_bare(bare.app)
    # What the relay asks: the request with the time it was asked, under a relay-like id.
    asked = interaction.with_provenance(request, asked_at=datetime.now(UTC))
    floor = WireFloorServer(asked, "pQ2x-7mZk0Lr_9Vb")
    floor_server, floor_task, floor_base = await serve_bare(floor.app)
    async with contextlib.AsyncExitStack() as stack:
        server = await stack.enter_async_context(WebServer(relay))
        headers = {"Authorization": f"Bearer {server.token}"}
        http = await stack.enter_async_context(
            httpx.AsyncClient(base_url=server.base, headers=headers)
        )
        bare_http = await stack.enter_async_context(httpx.AsyncClient(base_url=bare_base))
        floor_http = await stack.enter_async_context(
            httpx.AsyncClient(base_url=floor_base, headers=headers)
        )
        await http.post("/api/ping")  # connect once: both subjects reuse the connection
        await bare_http.post("/ping")
        stack.enter_context(interaction.provide(relay))
        events = await stack.enter_async_context(http.stream("GET", "/api/events"))
        lines = aiter(events.aiter_lines())
        bare_events = await stack.enter_async_context(bare_http.stream("GET", "/events"))
        floor_events = await stack.enter_async_context(floor_http.stream("GET", "/api/events"))
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
            partial(
                answers_over_http,
                floor_http,
                aiter(floor_events.aiter_lines()),
                body,
                begin=floor.ask,
                answer_path=lambda qid: f"/api/questions/{qid}/answer",
            ),
        ]
        for subject in subjects:  # warm every path up before the first counted round
            await subject(number)
        samples: list[list[float]] = [[] for _ in subjects]
        for round_number in range(rounds):
            for index in turns(len(subjects), round_number):
                samples[index].append(await subjects[index](number))
    for bare_one, task in ((bare_server, bare_task), (floor_server, floor_task)):
        bare_one.should_exit = True
        await task
    relay.close()
    ours, noop, bare_trip, bare_noop, wire_floor = (statistics.median(s) for s in samples)
    return ours, noop, bare_trip, bare_noop, wire_floor


def measure(quick: bool) -> list[Row]:
    count = 1_000 if quick else 10_000
    in_relay, total = asyncio.run(relay_memory(count))
    rounds, trips = (3, 20) if quick else (15, 50)
    round_trip, noop, floor, floor_noop, wire_floor = asyncio.run(http_round_trips(rounds, trips))
    case = f"(d) relay memory at {count:,} pending"
    trip = "ask -> event -> POST -> return"
    return [
        Row(
            case,
            "relay's own objects",
            in_relay / 1024,
            "4 KiB target",
            4.0,
            "KiB",
            "<= 4 KiB",
            headline=True,
        ),
        Row(case, "with the waiting ask() task", total / 1024, "4 KiB target", 4.0, "KiB", "-"),
        Row(
            "(e) one question over HTTP",
            trip,
            round_trip * 1e3,
            "no-op POST",
            noop * 1e3,
            "ms",
            "<= 1.3x",
            headline=True,
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
            "<= 1.15x",
        ),
        Row(
            "(e) the seam's wire on bare Starlette",
            "the same bytes, no seam",
            wire_floor * 1e3,
            "the same on bare Starlette",
            floor * 1e3,
            "ms",
            "- (the protocol's floor)",
        ),
        Row(
            "(e) what the seam's work adds to its wire",
            trip,
            round_trip * 1e3,
            "the same bytes, no seam",
            wire_floor * 1e3,
            "ms",
            "-",
        ),
    ]
