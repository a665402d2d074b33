"""A running relay + web server for the web, browser and load tests."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import httpx

from interaction import provide
from interaction.relay import Relay
from interaction.web import WebServer


@asynccontextmanager
async def served(
    *, max_pending: int = 10_000, queue_size: int = 1_000, history: int = 1_000
) -> AsyncIterator[tuple[Relay, WebServer]]:
    relay = Relay(max_pending=max_pending, queue_size=queue_size, history=history)
    with provide(relay):
        async with WebServer(relay) as server:
            try:
                yield relay, server
            finally:
                relay.close()


def client(server: WebServer, *, token: bool = True) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {server.token}"} if token else {}
    return httpx.AsyncClient(base_url=server.base, headers=headers, timeout=30)


@dataclass(frozen=True)
class Sse:
    """One server-sent event (comments are kept as ``kind == ":"`` with ``data`` the text).

    Equality compares ``kind`` and ``data`` only.
    """

    kind: str
    data: object
    id: str | None = field(default=None, compare=False)
    retry: int | None = field(default=None, compare=False)


async def sse(lines: AsyncIterator[str], *, comments: bool = False) -> AsyncIterator[Sse]:
    """The events of an ``aiter_lines()`` SSE body, decoded as JSON."""
    kind, data, event_id, retry = "message", "", None, None
    async for line in lines:
        if line.startswith(":"):
            if comments:
                yield Sse(":", line[1:].strip())
            continue
        if line == "":
            if data or kind != "message":
                yield Sse(kind, json.loads(data), event_id, retry)
            kind, data, event_id, retry = "message", "", None, None
            continue
        field, _, value = line.partition(": ")
        if field == "event":
            kind = value
        elif field == "data":
            data += value
        elif field == "id":
            event_id = value
        elif field == "retry":
            retry = int(value)
