"""The web server's bounds (issue #33): connections, event streams, requests that do not
arrive, and running out of file descriptors. Each test failed before its fix."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import httpx
import pytest

from interaction import AskUserQuestionItem, AskUserQuestionRequest, ask, provide
from interaction.relay import PendingQuestion, Relay
from interaction.web import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_STREAMS,
    DEFAULT_REQUEST_TIMEOUT,
    WebServer,
    create_app,
)
from interaction.web._uvicorn import _Server, accept_when_ready

from .loopback import ANSWER_AT, announced, running
from .web_helpers import client

WAIT = 30.0
NOTE = AskUserQuestionItem("note", "Anything else?")


async def wait_until(condition: Callable[[], bool], what: str) -> None:
    async with asyncio.timeout(WAIT):
        while not condition():  # noqa: ASYNC110 - polls a counter, no event to wait on
            await asyncio.sleep(0.01)
    assert condition(), what


@asynccontextmanager
async def serving(**limits: float) -> AsyncIterator[WebServer]:
    relay = Relay()
    async with WebServer(relay, **limits) as server:  # type: ignore[arg-type]
        try:
            yield server
        finally:
            relay.close()


def internals(server: WebServer) -> _Server:
    assert server._server is not None
    return server._server


class Raw:
    """A raw TCP connection to the server, for what no HTTP client sends."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def read_all(self) -> bytes:
        """Everything the server sends until it closes the connection."""
        async with asyncio.timeout(WAIT):
            return await self.reader.read()

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError):
            await self.writer.wait_closed()


@asynccontextmanager
async def raw(server: WebServer, count: int = 1) -> AsyncIterator[list[Raw]]:
    """``count`` raw connections, closed however the test ends."""
    conns: list[Raw] = []
    try:
        for _ in range(count):
            conns.append(Raw(*await asyncio.open_connection("127.0.0.1", server.port)))
        yield conns
    finally:
        for conn in conns:
            await conn.close()


async def pending(relay: Relay) -> PendingQuestion:
    """The first question pending on ``relay``, once it is."""
    subscription = relay.subscribe()
    try:
        event = await anext(aiter(subscription))
    finally:
        subscription.close()
    assert event.question is not None
    return event.question


def head(server: WebServer, path: str = "/api/questions", *, token: bool = True) -> bytes:
    auth = f"Authorization: Bearer {server.token}\r\n" if token else ""
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n{auth}\r\n".encode()


def status_and_body(response: bytes) -> tuple[int, dict[str, object]]:
    top, _, body = response.partition(b"\r\n\r\n")
    return int(top.split(b" ", 2)[1]), json.loads(body)


# ---------------------------------------------------------------- requests that do not arrive


async def test_a_silent_connection_is_closed_after_the_request_timeout() -> None:
    async with serving(request_timeout=0.3) as server, raw(server) as (silent,):
        assert await silent.read_all() == b""  # closed, without a word (was: open for ever)
        assert internals(server).limits.timed_out == 1


async def test_an_idle_kept_alive_connection_is_closed_by_the_request_timeout_alone() -> None:
    """uvicorn's keep-alive timer (5 s by default) would close an idle connection just as
    httpx's pool (5 s expiry) may reuse it: the client's POST then fails with ReadError."""
    async with serving(request_timeout=30) as server:
        assert internals(server).config.timeout_keep_alive == 30
    async with serving(request_timeout=0.3) as server, raw(server) as (conn,):
        await conn.send(head(server))
        assert (await conn.reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200 ")
        await conn.read_all()  # the body, then the close when the idle connection times out
        assert internals(server).limits.timed_out == 1


async def test_a_half_sent_head_is_answered_408_and_closed() -> None:
    async with serving(request_timeout=0.3) as server, raw(server) as (half,):
        await half.send(head(server)[:-2])  # all but the blank line that ends the head
        status, body = status_and_body(await half.read_all())
    message = "the request did not arrive within 0.3 s"
    assert (status, body) == (408, {"error": {"code": "REQUEST_TIMEOUT", "message": message}})


async def test_a_head_that_trickles_in_is_cut_off_at_the_deadline() -> None:
    async with serving(request_timeout=0.5) as server, raw(server) as (slow,):
        limits = internals(server).limits
        trickled = 0
        with contextlib.suppress(ConnectionError):
            for byte in head(server)[:-2] + b"X-Pad: " + b"x" * 10_000:
                if limits.timed_out:
                    break
                await slow.send(bytes([byte]))  # a byte every 10 ms: 100 s for all of them
                trickled += 1
                await asyncio.sleep(0.01)  # the attacker's pace, not a synchronisation
        assert limits.timed_out == 1  # the deadline held however the bytes came
        assert trickled < 5_000


async def test_a_second_request_half_sent_on_a_kept_alive_connection_times_out() -> None:
    async with serving(request_timeout=0.3) as server, raw(server) as (conn,):
        await conn.send(head(server))
        first = await conn.reader.readuntil(b"\r\n\r\n")
        assert first.startswith(b"HTTP/1.1 200 ")
        length = next(
            int(line.split(b":")[1])
            for line in first.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        await conn.reader.readexactly(length)
        await conn.send(head(server)[:20])  # uvicorn drops its keep-alive timer on these bytes
        status, _ = status_and_body(await conn.read_all())
    assert status == 408


async def test_a_body_that_never_ends_is_cut_off_and_nothing_is_settled(
    caplog: pytest.LogCaptureFixture,
) -> None:
    uvicorn_log = logging.getLogger("uvicorn.error")  # set up by the server; not propagated
    async with serving(request_timeout=0.3) as server:
        relay = server.relay
        assert isinstance(relay, Relay)
        uvicorn_log.addHandler(caplog.handler)
        try:
            with provide(relay):
                asking = asyncio.create_task(ask(AskUserQuestionRequest([NOTE])))
                question = await pending(relay)
                async with raw(server) as (conn,):
                    await conn.send(
                        f"POST /api/questions/{question.id}/answer HTTP/1.1\r\n"
                        f"Host: 127.0.0.1:{server.port}\r\nAuthorization: Bearer {server.token}"
                        "\r\nContent-Type: application/json\r\nContent-Length: 100"
                        "\r\n\r\n{".encode()
                    )
                    assert await conn.read_all() == b""  # the app read on, saw the client go
                assert internals(server).limits.timed_out == 1
                assert [q.id for q in relay.pending()] == [question.id]  # still waiting
                asking.cancel()
        finally:
            uvicorn_log.removeHandler(caplog.handler)
    # The app was told the client left, and no traceback was logged for it.
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_an_open_event_stream_is_never_cut_by_the_request_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("interaction.web._streams.KEEPALIVE_SECONDS", 0.05)
    async with serving(request_timeout=0.2) as server, client(server) as http:
        app = server._app
        assert app is not None
        async with http.stream("GET", "/api/events") as events:
            lines = events.aiter_lines()
            assert await anext(lines) == "retry: 1000"
            # Ten keep-alives, 0.5 s: the stream is being answered, it owes no request.
            await wait_until(lambda: app._keepalives >= 10, "ten keep-alives")
            assert (await http.post("/api/ping")).status_code == 204
        assert internals(server).limits.timed_out == 0


# ---------------------------------------------------------------- the connection cap


async def test_beyond_max_connections_a_request_gets_a_clean_503() -> None:
    async with serving(max_connections=4, request_timeout=WAIT) as server:
        state = internals(server).server_state
        async with raw(server, 4) as held:
            await wait_until(lambda: len(state.connections) == 4, "four connections served")
            async with raw(server) as (extra,):
                await extra.send(head(server))
                response = await extra.read_all()
            await held[0].close()
            await wait_until(lambda: len(state.connections) == 3, "one closed")
            async with client(server) as http:
                assert (await http.get("/api/questions")).status_code == 200
    status, body = status_and_body(response)
    message = "the server has 4 connections open, its limit; try again shortly"
    assert (status, body) == (503, {"error": {"code": "TOO_MANY_CONNECTIONS", "message": message}})
    assert b"\r\nconnection: close\r\n" in response.lower()
    assert b"\r\nx-content-type-options: nosniff\r\n" in response


async def test_refused_connections_that_say_nothing_are_dropped_within_a_second() -> None:
    async with serving(max_connections=1, request_timeout=WAIT) as server:
        state = internals(server).server_state
        limits = internals(server).limits
        async with raw(server) as _held:
            await wait_until(lambda: len(state.connections) == 1, "one connection served")
            async with raw(server, 5) as silent:
                for conn in silent:
                    assert await conn.read_all() == b""  # refused; gone after REFUSAL_LINGER
            assert limits.refused == 5
            await wait_until(lambda: not limits.refusing, "every refusal over")


# ---------------------------------------------------------------- the stream cap


async def test_beyond_max_streams_an_event_stream_gets_a_clean_503() -> None:
    async with serving(max_streams=2) as server, client(server) as http:
        app = server._app
        assert app is not None
        async with contextlib.AsyncExitStack() as streams:
            lines = []  # held: a dropped line iterator, collected, would close its stream
            for _ in range(2):
                stream = await streams.enter_async_context(http.stream("GET", "/api/events"))
                lines.append(stream.aiter_lines())
                assert await anext(lines[-1]) == "retry: 1000"
            refused = await http.get("/api/events")
            assert refused.status_code == 503
            assert refused.headers["retry-after"] == "1"
            assert refused.json() == {
                "error": {
                    "code": "TOO_MANY_STREAMS",
                    "message": "2 event streams are open, the server's limit;"
                    " close a page or try again shortly",
                }
            }
            assert (await http.get("/api/questions")).status_code == 200  # the API still works
        await wait_until(lambda: not app._streams, "both streams gave their place back")
        async with http.stream("GET", "/api/events") as stream:
            assert stream.status_code == 200


async def test_a_burst_of_streams_never_overshoots_the_cap() -> None:
    async with serving(max_streams=3) as server:
        app = server._app
        assert app is not None
        https = [client(server) for _ in range(12)]
        async with contextlib.AsyncExitStack() as stack:
            for http in https:
                await stack.enter_async_context(http)
            opened = await asyncio.gather(
                *(stack.enter_async_context(http.stream("GET", "/api/events")) for http in https)
            )
            statuses = sorted(response.status_code for response in opened)
            assert statuses == [200] * 3 + [503] * 9
            assert len(app._streams) == 3
        await wait_until(lambda: not app._streams, "every place given back")


async def test_a_stream_whose_client_leaves_before_its_first_byte_gives_its_place_back() -> None:
    async with serving(max_streams=1) as server:
        app = server._app
        assert app is not None
        for _ in range(3):
            async with raw(server) as (conn,):
                await conn.send(head(server, "/api/events"))
            # closed at once: the stream may never have started
            await wait_until(lambda: not app._streams, "the place given back")
        async with client(server) as http, http.stream("GET", "/api/events") as stream:
            assert stream.status_code == 200


# ---------------------------------------------------------------- settings


def test_the_limits_have_documented_defaults_and_refuse_nonsense() -> None:
    server = WebServer(Relay())
    assert (
        (server.max_connections, server.max_streams, server.request_timeout)
        == (
            DEFAULT_MAX_CONNECTIONS,
            DEFAULT_MAX_STREAMS,
            DEFAULT_REQUEST_TIMEOUT,
        )
        == (256, 64, 10.0)
    )
    for name, bad in (
        ("max_connections", 0),
        ("max_connections", 2.5),
        ("max_streams", -1),
        ("max_streams", True),
    ):
        with pytest.raises(ValueError, match=f"^{name} must be a positive int, got {bad!r}$"):
            WebServer(Relay(), **{name: bad})  # type: ignore[arg-type]
    for bad_seconds in (0, -1.0, float("nan"), float("inf"), "10"):
        with pytest.raises(ValueError, match=r"^request_timeout must be a positive number"):
            WebServer(Relay(), request_timeout=bad_seconds)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^max_streams must be a positive int, got 0$"):
        create_app(Relay(), token="t", max_streams=0)


@pytest.mark.parametrize(
    ("flag", "value", "line"),
    [
        ("--max-connections", "0", "interaction: --max-connections must be positive, got 0\n"),
        ("--max-streams", "-3", "interaction: --max-streams must be positive, got -3\n"),
        ("--request-timeout", "nan", "interaction: --request-timeout must be positive, got nan\n"),
    ],
)
def test_serve_refuses_a_limit_out_of_range_in_one_line(flag: str, value: str, line: str) -> None:
    refused = subprocess.run(
        [sys.executable, "-m", "interaction", "serve", "--port", "0", flag, value],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (refused.returncode, refused.stderr) == (2, line)


# ---------------------------------------------------------------- out of file descriptors

CHILD = textwrap.dedent(
    """
    import resource, sys
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), hard))
    from interaction.cli import main
    sys.exit(main(["serve", "--port", "0", "--request-timeout", "1", "--max-streams", "4"]))
    """
)


async def test_out_of_descriptors_the_server_logs_once_and_recovers() -> None:
    """Under a descriptor limit of 64, 300 silent connections: the server keeps answering
    (after the silent ones time out) and logs one line, where asyncio logged millions."""
    argv = (sys.executable, "-c", CHILD, "64")
    async with running(*argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as child:
        assert child.stderr is not None
        held: list[asyncio.StreamWriter] = []
        try:
            url = await announced(child.stderr, ANSWER_AT, WAIT)
            base, token = url.split("/", 3)[:3], url.split("token=", 1)[1]
            port = int(base[2].rsplit(":", 1)[1])
            for _ in range(300):
                _, writer = await asyncio.open_connection("127.0.0.1", port)  # accepted or queued
                held.append(writer)
            async with asyncio.timeout(WAIT):
                report = (await child.stderr.readline()).decode()
            assert report.startswith("cannot accept a connection: Too many open files, with "), (
                report
            )
            async with httpx.AsyncClient(
                base_url="/".join(base), headers={"Authorization": f"Bearer {token}"}, timeout=WAIT
            ) as http:
                assert (await http.get("/api/questions")).status_code in (200, 503)
                async with asyncio.timeout(WAIT):  # once the silent ones are gone, a 200
                    while (await http.get("/api/questions")).status_code != 200:
                        pass
        finally:
            for writer in held:
                writer.close()
            with contextlib.suppress(ProcessLookupError):  # (ended and reaped: no PID to hit)
                child.send_signal(signal.SIGTERM)
            rest = await asyncio.wait_for(child.stderr.read(), WAIT)
            await asyncio.wait_for(child.wait(), WAIT)
    assert len(rest) < 1_000, rest[:2_000]  # nothing more than, at most, a second report


async def test_a_cancelled_accept_leaves_every_connection_queued_and_nothing_in_the_loops_log() -> (
    None
):
    """The server's accept loop is cancelled when it stops: a connection that arrives then
    must stay queued for whoever accepts next (loop.sock_accept could accept it for a
    future already cancelled on Python 3.11, and the loop logged InvalidStateError)."""
    loop = asyncio.get_running_loop()
    logged: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _, context: logged.append(context))
    try:
        with socket.create_server(("127.0.0.1", 0)) as listener:
            listener.setblocking(False)
            waiting = asyncio.create_task(accept_when_ready(loop, listener))
            await asyncio.sleep(0)  # one loop step: it waits for a connection now
            with socket.create_connection(listener.getsockname()) as first:
                await asyncio.sleep(0)  # one loop step: the loop sees the connection
                waiting.cancel()
                try:
                    accepted = await waiting  # taken before the cancellation reached it
                except asyncio.CancelledError:  # else it waits for the next accept
                    accepted = await asyncio.wait_for(accept_when_ready(loop, listener), 10)
                with accepted:
                    assert accepted.getpeername() == first.getsockname()
                    assert not accepted.getblocking()
    finally:
        loop.set_exception_handler(None)
    assert logged == []
