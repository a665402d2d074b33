"""Load, on loopback only and bounded: 1,000 pending asks answered by 50 HTTP clients, none
lost or answered twice. The rate at 10,000 is measured by benchmarks/web_load.py's (v)."""

from __future__ import annotations

import asyncio
import collections

from interaction import AskUserQuestionItem, AskUserQuestionRequest, ask

from .web_helpers import client, served

ASKS = 1_000
CLIENTS = 50


async def test_a_thousand_pending_asks_answered_over_http_none_lost_or_twice() -> None:
    async with asyncio.timeout(100), served(max_pending=ASKS, queue_size=ASKS) as (relay, server):
        watcher = relay.subscribe()
        tasks = [
            asyncio.create_task(ask(AskUserQuestionRequest([AskUserQuestionItem(f"q{n}", "?")])))
            for n in range(ASKS)
        ]
        ids: list[str] = []
        async for event in watcher:
            ids.append(event.id)
            if len(ids) == ASKS:
                break
        watcher.close()
        assert len(relay.pending()) == ASKS
        by_id = {q.id: q.request.questions[0].id for q in relay.pending()}
        statuses: collections.Counter[int] = collections.Counter()

        async def answer_share(share: list[str]) -> None:
            async with client(server) as http:
                for relay_id in share:
                    qid = by_id[relay_id]
                    body = {"answers": [{"id": qid, "selected": [], "custom": qid}]}
                    response = await http.post(f"/api/questions/{relay_id}/answer", json=body)
                    statuses[response.status_code] += 1

        await asyncio.gather(*(answer_share(ids[n::CLIENTS]) for n in range(CLIENTS)))
        answers = await asyncio.gather(*tasks)
    assert statuses == {200: ASKS}
    assert relay.pending() == []
    for n, answer in enumerate(answers):
        assert answer.answers[0].custom == f"q{n}"  # each ask got its own answer, once
