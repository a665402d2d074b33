"""The connection layer under ``WebServer``: uvicorn's HTTP/1.1 protocol,
subclassed for the request timeout and refusals in the API's error shape, and uvicorn's
server with its own accept loop, which bounds the connections (a 503 beyond the cap) and
logs a failed accept (no descriptors left) at most once a minute."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import socket
import time
from collections.abc import Callable
from types import FrameType
from typing import Any, Final

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from ._guard import SECURITY_HEADERS
from ._json import error_body

__all__ = ["GRACE_SECONDS", "accept_when_ready"]

GRACE_SECONDS: Final = 1.0
"""How long ``WebServer.stop`` waits for responses in flight before cancelling them."""
PIPELINED_KEPT: Final = 64 * 1024
"""How many bytes pipelined behind a response in flight are read on (see :class:`_Protocol`)."""
REFUSED_AT_ONCE: Final = 64
"""How many connections over ``max_connections`` may be in the middle of being refused
(each for at most ``REFUSAL_LINGER``); beyond that, new ones wait in the listen backlog."""
REFUSAL_LINGER: Final = 1.0
"""How long a refused connection may take to send its request head and read the 503."""
LOG_EVERY: Final = 60.0
"""How often, at most, running out of descriptors (or any failed accept) is logged."""
ACCEPT_RETRY: Final = 0.5
"""How long a failed accept waits before it tries again, unless a connection closes first."""
MAX_REFUSED_HEAD: Final = 16 * 1024
"""How much of a refused connection's request head is read before it is answered anyway."""

_log = logging.getLogger("interaction.web")


def _raw_response(status: int, reason: str, code: str, message: str) -> bytes:
    """A whole HTTP/1.1 response in the API's error shape, closing the connection: for
    answers given outside the app and h11's request cycle (a refusal, a timeout)."""
    body = json.dumps(error_body(code, message)).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
        *SECURITY_HEADERS,
    ]
    head = f"HTTP/1.1 {status} {reason}\r\n".encode()
    lines = b"".join(name + b": " + value + b"\r\n" for name, value in headers)
    return head + lines + b"\r\n" + body


class _Limits:
    """What the accept loop and the protocols share: the caps, and a wake-up when a
    connection closes (so the accept loop waits for room instead of polling)."""

    def __init__(self, max_connections: int, request_timeout: float) -> None:
        self.max_connections = max_connections
        self.request_timeout = request_timeout
        self.refusing: set[_Refusal] = set()
        self.closed = asyncio.Event()
        self.refused = 0  # connections answered 503: for tests to watch
        self.timed_out = 0  # connections closed by the request timeout

    def connection_closed(self) -> None:
        self.closed.set()


class _Refusal(asyncio.Protocol):
    """A connection over ``max_connections``: its request head is read, it is answered
    ``503 TOO_MANY_CONNECTIONS`` and closed, all within ``REFUSAL_LINGER``.

    Reading the head before answering, and half-closing after, lets the client read the
    answer instead of a reset.
    """

    def __init__(self, limits: _Limits) -> None:
        self.limits = limits
        self.head = bytearray()
        self.answered = False
        self.transport: asyncio.Transport | None = None
        self.timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.limits.refusing.add(self)
        self.limits.refused += 1
        self.timer = asyncio.get_running_loop().call_later(REFUSAL_LINGER, transport.close)

    def data_received(self, data: bytes) -> None:
        if self.answered or self.transport is None:
            return  # the rest of the request, read and dropped
        self.head += data[:MAX_REFUSED_HEAD]
        if b"\r\n\r\n" in self.head or len(self.head) >= MAX_REFUSED_HEAD:
            self.answered = True
            limit = self.limits.max_connections
            message = f"the server has {limit} connections open, its limit; try again shortly"
            self.transport.write(
                _raw_response(503, "Service Unavailable", "TOO_MANY_CONNECTIONS", message)
            )
            self.transport.write_eof()

    def eof_received(self) -> bool:
        return False  # the transport closes

    def connection_lost(self, exc: Exception | None) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.limits.refusing.discard(self)
        self.limits.connection_closed()


class _Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, refusing what it cannot parse in the API's error shape,
    noticing a client that leaves while a request of its is pipelined, and timing out a
    request whose head or body does not arrive.

    Malformed HTTP never reaches the app: uvicorn answers it with a plain-text 400, which
    a client reading ``{"error": {"code", "message"}}`` could not tell from a proxy's page.
    uvicorn times out only an idle connection after a response (``timeout_keep_alive``),
    never a new one or one half-way through a request; here every request, the first one
    included, has ``request_timeout`` seconds from when the server waits for it to when its
    last byte is in, however slowly the bytes trickle.
    """

    def __init__(self, *args: Any, limits: _Limits, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limits = limits
        self.request_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if self.request_timer is not None:
            self.request_timer.cancel()
            self.request_timer = None
        self.limits.connection_closed()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def _watch(self) -> None:
        """Time the request the client owes: from the moment the server waits for it (the
        connection is new, or the last response went out) until it is all in."""
        owed = self.conn.their_state in (h11.IDLE, h11.SEND_BODY)
        if owed and not self.transport.is_closing():
            if self.request_timer is None:
                loop = asyncio.get_running_loop()
                self.request_timer = loop.call_later(self.limits.request_timeout, self._expired)
        elif self.request_timer is not None:
            self.request_timer.cancel()
            self.request_timer = None

    def _expired(self) -> None:
        self.request_timer = None
        if self.transport.is_closing():
            return
        self.limits.timed_out += 1
        if self.conn.their_state is h11.IDLE and self.conn.trailing_data[0]:
            # Part of a head arrived: say why. (Silence, or a slow body the app is reading,
            # just ends: the app sees the client leave.)
            seconds = f"{self.limits.request_timeout:g}"
            message = f"the request did not arrive within {seconds} s"
            self.transport.write(_raw_response(408, "Request Timeout", "REQUEST_TIMEOUT", message))
        self.transport.close()

    def handle_events(self) -> None:
        super().handle_events()
        self._watch()
        # At a request pipelined behind one still answered, h11 pauses and uvicorn stops
        # reading, so the client's close goes unseen until a write fails (for an event
        # stream, its second keep-alive, 30 s on) and a HEAD stream never ends. Reading on,
        # with what is pipelined kept to PIPELINED_KEPT, sees the close at once: the app
        # gets ``http.disconnect`` and ends the response.
        conn = self.conn
        if (
            self.flow.read_paused
            and conn.their_state is h11.DONE
            and conn.our_state is not h11.DONE
            and len(conn.trailing_data[0]) <= PIPELINED_KEPT
        ):
            self.flow.resume_reading()

    def send_400_response(self, msg: str) -> None:
        message = f"the request was refused before it reached the app: {msg}"
        body = json.dumps(error_body("BAD_HTTP", message)).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
            *SECURITY_HEADERS,
        ]
        for event in (
            h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
            h11.Data(data=body),
            h11.EndOfMessage(),
        ):
            self.transport.write(self.conn.send(event) or b"")
        self.transport.close()


async def accept_when_ready(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> socket.socket:
    """The next connection on the non-blocking listening ``sock``, once one waits.

    ``loop.sock_accept`` accepts in the loop's own callback: on Python 3.11 a connection
    that arrives in the loop step that cancels the wait (a server stopping) is accepted for
    a future already cancelled, the loop logs ``InvalidStateError``, and the connection is
    dropped. Here the wait is only for readiness, and accepting happens in the caller:
    cancelled, it removes its reader at once and leaves every connection queued.
    """
    fd = sock.fileno()
    while True:
        try:
            conn, _ = sock.accept()
        except (BlockingIOError, InterruptedError):
            pass
        else:
            conn.setblocking(False)
            return conn
        ready: asyncio.Future[None] = loop.create_future()
        loop.add_reader(fd, _wake, ready)
        try:
            await ready
        finally:
            loop.remove_reader(fd)


def _wake(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)


class _Server(uvicorn.Server):
    """uvicorn's server, told to exit by an event instead of noticing it within 0.1 s, and
    shut down without uvicorn's fixed pauses (0.1 s each).

    It accepts connections itself (:func:`accept_when_ready`, ``loop.connect_accepted_socket``)
    rather than through ``loop.create_server``, to bound them: up to ``max_connections``
    are served, up to ``REFUSED_AT_ONCE`` more are answered 503, and beyond that, or when
    the process runs out of descriptors, accepting waits for a connection to close. asyncio's
    own accept loop logs every failed ``accept()``, thousands of times a second (issue #33);
    this one logs once a minute at most.
    """

    def __init__(
        self, config: uvicorn.Config, limits: _Limits, on_exit: Callable[[], None]
    ) -> None:
        super().__init__(config)
        self.exit_now = asyncio.Event()
        self.limits = limits
        self._on_exit = on_exit
        self.accepting: list[asyncio.Task[None]] = []
        self.failed_accepts = 0  # for tests to watch
        self._logged_at = -math.inf
        self._unlogged = 0

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """Ctrl-C or SIGTERM, which uvicorn catches while it serves: the event streams end
        first (with ``closing``), as in ``WebServer.stop``, so no response is still
        running when the grace time ends and uvicorn cancels what is left."""
        self._on_exit()
        super().handle_exit(sig, frame)
        self.exit_now.set()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await self.lifespan.startup()
        loop = asyncio.get_running_loop()
        for sock in sockets or []:
            self.accepting.append(loop.create_task(self._accept(sock)))
        self.started = True

    def _serve_connection(self) -> asyncio.Protocol:
        return _Protocol(
            config=self.config,
            server_state=self.server_state,
            app_state=self.lifespan.state,
            limits=self.limits,
        )

    def _refuse_connection(self) -> asyncio.Protocol:
        return _Refusal(self.limits)

    async def _room(self, seconds: float | None = None) -> None:
        """Wait until a connection closes (or ``seconds`` pass)."""
        closed = self.limits.closed
        closed.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await closed.wait()

    def _log_failed_accept(self, exc: OSError) -> None:
        self.failed_accepts += 1
        now = time.monotonic()
        if now - self._logged_at < LOG_EVERY:
            self._unlogged += 1
            return
        more = f" ({self._unlogged} more since the last report)" if self._unlogged else ""
        _log.warning(
            "cannot accept a connection: %s, with %d open; new connections wait until one closes%s",
            exc.strerror or exc,
            len(self.server_state.connections),
            more,
        )
        self._logged_at = now
        self._unlogged = 0

    async def _accept(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        limits = self.limits
        connections = self.server_state.connections
        while True:
            if len(limits.refusing) >= REFUSED_AT_ONCE:
                await self._room()
                continue
            try:
                conn = await accept_when_ready(loop, sock)
            except (ConnectionAbortedError, InterruptedError):
                continue  # the client gave up while it waited to be accepted
            except OSError as exc:  # EMFILE, ENFILE, ENOBUFS, ENOMEM, ...
                self._log_failed_accept(exc)
                await self._room(ACCEPT_RETRY)
                continue
            factory: Callable[[], asyncio.Protocol] = (
                self._serve_connection
                if len(connections) < limits.max_connections
                else self._refuse_connection
            )
            try:
                await loop.connect_accepted_socket(factory, conn)
            except OSError:  # pragma: no cover - the client reset it at once
                conn.close()

    async def main_loop(self) -> None:
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 1) % 864_000
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.1):  # on_tick keeps the Date header fresh
                    await self.exit_now.wait()
            should_exit = await self.on_tick(counter)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for task in self.accepting:
            task.cancel()
        for task in self.accepting:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for sock in sockets or []:
            sock.close()
        for refusal in list(self.limits.refusing):
            if refusal.transport is not None:
                refusal.transport.close()
        state = self.server_state
        for connection in list(state.connections):
            connection.shutdown()  # idle ones close now, busy ones after their response
        deadline = time.monotonic() + GRACE_SECONDS
        # uvicorn sets no event when its connections close: poll, briefly.
        while (state.connections or state.tasks) and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.005)
        for task in list(state.tasks):
            task.cancel()
