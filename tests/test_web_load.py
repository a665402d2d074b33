"""Load, on loopback only and bounded: 1,000 pending asks answered by 50 HTTP clients, none
lost or answered twice. The rate at 10,000 is measured by benchmarks/web_load.py's (v),
through the same function."""

from __future__ import annotations

import asyncio

from .web_helpers import pending_asks_answered

ASKS = 1_000
CLIENTS = 50


async def test_a_thousand_pending_asks_answered_over_http_none_lost_or_twice() -> None:
    async with asyncio.timeout(100):
        await pending_asks_answered(ASKS, CLIENTS)  # it asserts what this test says
