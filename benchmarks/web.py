"""The web UI over the in-memory relay: memory per pending question, one question over HTTP.

(d) tracemalloc bytes per pending relay question at 10,000 pending, the requests made
before the first snapshot; (e) one question over HTTP on loopback (ask, the event read by a
client, POST the answer, ask returns) against a no-op POST on the same server and
connection, and the same trip on a bare Starlette app (an SSE queue and an answer route
that only wakes the asker) against its own no-op POST: the floor of uvicorn + Starlette +
httpx. All four subjects take turns.
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


def measure(quick: bool) -> list[Row]:
    count = 1_000 if quick else 10_000
    in_relay, total = asyncio.run(relay_memory(count))
    rounds, trips = (3, 20) if quick else (15, 50)
    round_trip, noop, floor, floor_noop = asyncio.run(http_round_trips(rounds, trips))
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
            "-",
        ),
    ]
