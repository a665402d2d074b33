"""A running relay + web server for the web, browser and load tests."""

from __future__ import annotations

import asyncio
import collections
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import httpx

from interaction import AskUserQuestionItem, AskUserQuestionRequest, ask, provide
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


async def pending_asks_answered(asks: int, clients: int) -> float:
    """Seconds that ``clients`` HTTP clients take to answer ``asks`` pending asks on one
    host; asserts that every answer was accepted once and reached its own ask."""
    async with served(max_pending=asks, queue_size=asks) as (relay, server):
        watcher = relay.subscribe()
        tasks = [
            asyncio.create_task(ask(AskUserQuestionRequest([AskUserQuestionItem(f"q{n}", "?")])))
            for n in range(asks)
        ]
        ids: list[str] = []
        async for event in watcher:
            ids.append(event.id)
            if len(ids) == asks:
                break
        watcher.close()
        assert len(relay.pending()) == asks
        by_id = {q.id: q.request.questions[0].id for q in relay.pending()}
        statuses: collections.Counter[int] = collections.Counter()

        async def answer_share(share: list[str]) -> None:
            async with client(server) as http:
                for relay_id in share:
                    qid = by_id[relay_id]
                    body = {"answers": [{"id": qid, "selected": [], "custom": qid}]}
                    response = await http.post(f"/api/questions/{relay_id}/answer", json=body)
                    statuses[response.status_code] += 1

        began = time.perf_counter()
        await asyncio.gather(*(answer_share(ids[n::clients]) for n in range(clients)))
        seconds = time.perf_counter() - began
        answers = await asyncio.gather(*tasks)
    assert statuses == {200: asks}, statuses
    assert relay.pending() == []
    for n, answer in enumerate(answers):
        assert answer.answers[0].custom == f"q{n}", n  # each ask got its own answer, once
    return seconds
