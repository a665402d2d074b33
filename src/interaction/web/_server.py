"""Run the app with uvicorn, on loopback unless told otherwise."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import socket
import time
from collections.abc import Callable, Iterable
from types import FrameType
from typing import Final
from urllib.parse import urlsplit

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from ..relay import RelayBackend
from ..signing import AnswerLinks
from ._app import LOOPBACK_NAMES, SECURITY_HEADERS, WebApp, error_body, parse_host

__all__ = ["WebServer"]

_LOOPBACK: Final = ("127.0.0.1", "localhost", "::1")
_ANY: Final = ("0.0.0.0", "::", "")
GRACE_SECONDS: Final = 1.0
"""How long :meth:`WebServer.stop` waits for responses in flight before cancelling them."""
PIPELINED_KEPT: Final = 64 * 1024
"""How many bytes pipelined behind a response in flight are read on (see :class:`_Protocol`)."""


class _Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, refusing what it cannot parse in the API's error shape,
    and noticing a client that leaves while a request of its is pipelined.

    Malformed HTTP never reaches the app: uvicorn answers it with a plain-text 400, which
    a client reading ``{"error": {"code", "message"}}`` could not tell from a proxy's page.
    """

    def handle_events(self) -> None:
        super().handle_events()
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


class _Server(uvicorn.Server):
    """uvicorn's server, told to exit by an event instead of noticing it within 0.1 s, and
    shut down without uvicorn's fixed pauses (0.1 s each)."""

    def __init__(self, config: uvicorn.Config, on_exit: Callable[[], None]) -> None:
        super().__init__(config)
        self.exit_now = asyncio.Event()
        self._on_exit = on_exit

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """Ctrl-C or SIGTERM, which uvicorn catches while it serves: the event streams end
        first (with ``closing``), as in :meth:`WebServer.stop`, so no response is still
        running when the grace time ends and uvicorn cancels what is left."""
        self._on_exit()
        super().handle_exit(sig, frame)
        self.exit_now.set()

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
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        state = self.server_state
        for connection in list(state.connections):
            connection.shutdown()  # idle ones close now, busy ones after their response
        deadline = time.monotonic() + GRACE_SECONDS
        # uvicorn sets no event when its connections close: poll, briefly.
        while (state.connections or state.tasks) and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.005)
        for task in list(state.tasks):
            task.cancel()
        for server in self.servers:
            await server.wait_closed()


def check_public_url(url: str) -> str:
    """``url`` without a trailing slash, if it can be the page's public address:
    ``http(s)://HOST[:PORT]`` (the root of its host: the page calls ``/api/...``), no
    query, no fragment; ``ValueError`` otherwise."""
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018  # a bad port raises here
    except ValueError:
        raise ValueError(f"--public-url {url!r} has a bad port") from None
    if (
        parts.scheme not in {"http", "https"}
        or not parts.hostname
        or parts.path not in {"", "/"}  # the page's script calls /api/... from the root
        or parts.query
        or parts.fragment
    ):
        raise ValueError(f"--public-url {url!r} is not a page address: use https://HOST[:PORT]")
    return url.rstrip("/")


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class WebServer:
    """Serves a relay's page and API; :attr:`url` (with the token) is known once started.

    ``port=0`` picks a free port. The socket is bound and listening when :meth:`start`
    returns. Use it as ``async with WebServer(relay) as server:``.

    ``hosts`` names the extra ``Host`` values to answer, for a server reached by another
    name than loopback (``host="0.0.0.0"``): ``name`` (any port) or ``name:port``. The
    loopback names with the server's port, and the bound address when it is a specific
    one, are always answered. ``links`` (:class:`~interaction.signing.AnswerLinks`) lets
    the answer links they issue open the page on their one question (docs/notify.md).
    ``public_url`` is the page's address as people reach it (behind a reverse proxy with
    TLS, say): :attr:`url` and answer links use it, and its host and origin are answered.
    """

    def __init__(
        self,
        relay: RelayBackend,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        hosts: Iterable[str] = (),
        links: AnswerLinks | None = None,
        public_url: str | None = None,
    ) -> None:
        self.relay = relay
        self.links = links
        self.public_url = None if public_url is None else check_public_url(public_url)
        self.host = host
        self.token = token or secrets.token_urlsafe(24)
        self.port = port
        self.hosts = tuple(hosts)
        for entry in self.hosts:
            if not parse_host(entry)[0]:
                raise ValueError(f"not a host name or host:port: {entry!r}")
        self._server: _Server | None = None
        self._task: asyncio.Task[None] | None = None
        self._app: WebApp | None = None

    @property
    def base(self) -> str:
        """Where the page is reached: the public URL when one is given."""
        if self.public_url is not None:
            return self.public_url
        if self.host in _ANY and self.hosts:  # reached by the first name given
            name, port = parse_host(self.hosts[0])
            return f"http://{name}:{port or self.port}"
        if self.host in _ANY:  # no name given: the one that answers here is loopback's
            return f"http://127.0.0.1:{self.port}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def url(self) -> str:
        """The page's address, token included: what to open in a browser."""
        return f"{self.base}/?token={self.token}"

    def allowed_hosts(self) -> set[str]:
        """The ``Host`` values this server answers (valid once started)."""
        names = set(LOOPBACK_NAMES)
        if self.host not in _LOOPBACK and self.host not in _ANY:
            names.add(f"[{self.host}]" if ":" in self.host else self.host)
        public = set() if self.public_url is None else {urlsplit(self.public_url).netloc}
        return {f"{name}:{self.port}" for name in names} | set(self.hosts) | public

    async def start(self) -> None:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            # Accepted sockets inherit it: without it a small response waits ~40 ms (Nagle).
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.bind((self.host, self.port))
            sock.listen(1024)
            sock.setblocking(False)
        except BaseException:  # a port in use, a bad address: no socket left open
            sock.close()
            raise
        self.port = sock.getsockname()[1]
        origins = () if self.public_url is None else (_origin(self.public_url),)
        self._app = WebApp(
            self.relay,
            token=self.token,
            hosts=self.allowed_hosts(),
            links=self.links,
            origins=origins,
        )
        config = uvicorn.Config(self._app, log_level="warning", lifespan="off", http=_Protocol)
        self._server = _Server(config, self._app.close_streams)
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]))

    async def stop(self) -> None:
        """Stop serving: open event streams get a ``closing`` event and end."""
        if self._server is not None and self._task is not None:
            assert self._app is not None
            self._app.close_streams()
            self._server.should_exit = True
            self._server.exit_now.set()
            await self._task
            self._server = self._task = self._app = None

    async def __aenter__(self) -> WebServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
