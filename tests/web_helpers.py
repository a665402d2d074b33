"""A running relay + web server for the web, browser and load tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx

from interaction import provide
from interaction.relay import Relay
from interaction.web import WebServer


@asynccontextmanager
async def served(**relay_options: int) -> AsyncIterator[tuple[Relay, WebServer]]:
    relay = Relay(**relay_options)
    with provide(relay):
        async with WebServer(relay) as server:
            try:
                yield relay, server
            finally:
                relay.close()


def client(server: WebServer, *, token: bool = True) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {server.token}"} if token else {}
    return httpx.AsyncClient(base_url=server.base, headers=headers, timeout=30)
