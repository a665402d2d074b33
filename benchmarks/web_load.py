"""One host under load, in memory: (v) 10,000 pending asks on one ``WebServer``, answered
over HTTP by 50 clients; answers per second, none lost or answered twice.

The figure that ``tests/test_web_load.py`` measured while it ran 10,000 asks inside the
suite; that test now runs a tenth of the load and keeps every assertion (no answer lost,
none twice, each ask its own answer), and the full load is measured here, once per run
(performance lives in benchmarks/, never in timed tests). The rate is reported, with
no reference: (e) measures one question over HTTP against its floors.
"""

from __future__ import annotations

import asyncio
import collections
import sys
import time
from pathlib import Path

from timing import Row

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.web_helpers import client, served

from interaction import AskUserQuestionItem, AskUserQuestionRequest, ask

TITLE = "one host under load: 10,000 pending asks answered over HTTP"


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


def measure(quick: bool) -> list[Row]:
    """(v) answers per second of 10,000 pending asks (400 when quick)."""
    asks, clients = (400, 10) if quick else (10_000, 50)
    seconds = asyncio.run(pending_asks_answered(asks, clients))
    return [
        Row(
            f"(v) one host in memory: {asks:,} pending asks, {clients} HTTP clients",
            "answers per second, none lost or doubled",
            asks / seconds,
            "none (reported)",
            0.0,
            "answers/s",
            "report, answers/s",
        )
    ]
