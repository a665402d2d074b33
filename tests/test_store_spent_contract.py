"""The spent-state store contract: the same tests over every SpentStateStore (in memory,
Redis, PostgreSQL), as ``SpentStateStore`` and docs/mcp.md state it: each nonce spent at
most once, by one hand of many, and forgotten once its state has expired.

A new store joins by adding its name to ``STORES``, a way to build it in ``Spends``, and
one in ``SPENDER`` (for other processes) when it is shared.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import sys
import textwrap
import time
from collections.abc import AsyncIterator

import psycopg
import pytest
import redis.asyncio as aioredis

from interaction.postgres import PostgresSpentStore
from interaction.redis import RedisSpentStore
from interaction.spent import MemorySpentStore, SpentStateStore, SpentStoreUnavailable

from .postgres_server import postgres_server
from .redis_server import redis_server
from .store_contract import Place

__all__ = ["postgres_server", "redis_server"]  # fixtures, used through Spends

STORES = ["memory", "redis", "postgres"]
SHARED = ["redis", "postgres"]
FORGET_SECONDS = 10.0
"""The bound on how long a store takes to forget a nonce past its time (Redis expires a
key on its own clock; the others forget it at the next spend)."""


class Spends(Place):
    """Builds stores of one kind on one place; says whether a nonce is remembered."""

    def __init__(self, kind: str, request: pytest.FixtureRequest) -> None:
        super().__init__(kind, request)
        self.memory = MemorySpentStore()

    async def make(self) -> SpentStateStore:
        """Another worker's store on the same storage (the in-memory store is its own)."""
        if self.kind == "memory":
            return self.memory
        if self.kind == "redis":
            return await self.keep(RedisSpentStore(self.url, prefix=self.space))
        return await self.keep(PostgresSpentStore(self.url, schema=self.space))

    def unreachable(self) -> RedisSpentStore | PostgresSpentStore:
        if self.kind == "redis":
            return RedisSpentStore(self.unreachable_url(), timeout=1.0)
        return PostgresSpentStore(self.unreachable_url())

    async def remembered(self, nonce: str) -> bool:
        """Whether the storage still holds ``nonce``."""
        if self.kind == "memory":
            return nonce in self.memory
        if self.kind == "redis":
            client = aioredis.Redis.from_url(self.url)
            try:
                return bool(await client.exists(f"{self.space}:{nonce}"))
            finally:
                await client.aclose()
        async with await psycopg.AsyncConnection.connect(self.url) as db:
            cursor = await db.execute(
                f'SELECT count(*) FROM "{self.space}".spent WHERE nonce = %s', [nonce]
            )
            row = await cursor.fetchone()
            return row is not None and row[0] == 1


@pytest.fixture(params=STORES)
async def spends(request: pytest.FixtureRequest) -> AsyncIterator[Spends]:
    made = Spends(request.param, request)
    yield made
    await made.close()


@pytest.fixture(params=SHARED)
async def shared(request: pytest.FixtureRequest) -> AsyncIterator[Spends]:
    made = Spends(request.param, request)
    yield made
    await made.close()


def nonce() -> str:
    return secrets.token_urlsafe(16)


async def test_a_nonce_is_spent_once(spends: Spends) -> None:
    store = await spends.make()
    first, second = nonce(), nonce()
    later = time.time() + 300
    assert await store.spend(first, later) is True
    assert await store.spend(first, later) is False
    assert await store.spend(first, later + 600) is False  # a longer life changes nothing
    assert await store.spend(second, later) is True
    assert await (await spends.make()).spend(first, later) is False  # another worker


async def test_of_hands_spending_one_nonce_at_once_exactly_one_wins(spends: Spends) -> None:
    hands = [await spends.make() for _ in range(3)]
    later = time.time() + 300
    for _ in range(10):
        one = nonce()
        won = await asyncio.gather(*(hand.spend(one, later) for hand in hands))
        assert sorted(won) == [False, False, True]


async def test_a_nonce_past_its_state_is_forgotten(spends: Spends) -> None:
    store = await spends.make()
    gone, kept = nonce(), nonce()
    long_ago = time.time() - 3600  # past any clock skew a store allows
    assert await store.spend(gone, long_ago) is True  # (states come about in expiry order)
    assert await store.spend(kept, time.time() + 300) is True
    deadline = time.monotonic() + FORGET_SECONDS
    while await spends.remembered(gone):
        assert time.monotonic() < deadline, f"{gone} still remembered"
        await store.spend(nonce(), time.time() + 300)  # a spend forgets what has expired
    assert await spends.remembered(kept)
    assert await store.spend(kept, time.time() + 300) is False
    assert await store.spend(gone, time.time() + 300) is True  # forgotten: as if new


SPENDER = textwrap.dedent(
    """
    import asyncio, json, sys, time

    def build(kind, spec):
        if kind == "redis":
            from interaction.redis import RedisSpentStore
            return RedisSpentStore(spec["url"], prefix=spec["space"])
        from interaction.postgres import PostgresSpentStore
        return PostgresSpentStore(spec["url"], schema=spec["space"])

    async def main() -> None:
        store = build(sys.argv[1], json.loads(sys.argv[2]))
        later = time.time() + 300
        won = [n for n in sys.argv[3:] if await store.spend(n, later)]
        print(json.dumps(won))
        await store.aclose()

    asyncio.run(main())
    """
)


async def test_workers_spending_the_same_nonces_at_once_each_win_some_once(
    shared: Spends,
) -> None:
    await shared.make()  # (and the tables made)
    nonces = [nonce() for _ in range(60)]

    async def worker() -> list[str]:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", SPENDER, shared.kind, shared.spec(), *nonces,
            stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, _ = await process.communicate()
        assert process.returncode == 0
        won: list[str] = json.loads(out)
        return won

    won = await asyncio.gather(worker(), worker(), worker())
    assert sorted(n for each in won for n in each) == sorted(nonces)


async def test_a_store_that_cannot_be_reached_refuses_to_say(shared: Spends) -> None:
    store = shared.unreachable()
    with pytest.raises(SpentStoreUnavailable) as caught:
        await store.spend(nonce(), time.time() + 300)
    assert str(caught.value).startswith(f"the spent-state store at {store.where} cannot be used: ")
    await store.aclose()
