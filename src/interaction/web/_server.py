"""Run the app with uvicorn, on loopback unless told otherwise."""

from __future__ import annotations

import asyncio
import secrets
import socket
from typing import Final

import uvicorn

from ..relay import Relay
from ._app import create_app

__all__ = ["WebServer"]

_LOOPBACK: Final = ("127.0.0.1", "localhost", "::1")


class WebServer:
    """Serves a relay's page and API; :attr:`url` (with the token) is known once started.

    ``port=0`` picks a free port. The socket is bound and listening when :meth:`start`
    returns. Use it as ``async with WebServer(relay) as server:``.
    """

    def __init__(
        self, relay: Relay, *, host: str = "127.0.0.1", port: int = 0, token: str | None = None
    ) -> None:
        self.relay = relay
        self.host = host
        self.token = token or secrets.token_urlsafe(24)
        self.port = port
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def base(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def url(self) -> str:
        """The page's address, token included: what to open in a browser."""
        return f"{self.base}/?token={self.token}"

    async def start(self) -> None:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted sockets inherit it: without it a small response waits ~40 ms (Nagle).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((self.host, self.port))
        sock.listen(1024)
        sock.setblocking(False)
        self.port = sock.getsockname()[1]
        names = (
            {"127.0.0.1", "localhost", "[::1]"}
            if self.host in _LOOPBACK
            else {self.base[7:].rsplit(":", 1)[0]}
        )
        hosts = {f"{name}:{self.port}" for name in names}
        app = create_app(self.relay, token=self.token, hosts=hosts)
        config = uvicorn.Config(
            app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1
        )
        self._server = uvicorn.Server(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]))

    async def stop(self) -> None:
        """Stop serving; open event streams end."""
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            await self._task
            self._server = self._task = None

    async def __aenter__(self) -> WebServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
