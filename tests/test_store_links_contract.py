"""The used-link store contract: the same tests over every UsedLinkStore (in memory,
Redis, PostgreSQL), as ``UsedLinkStore`` and docs/notify.md state it: each answer link
used at most once, by one hand of many, said to be used until it expires, then forgotten;
and ``AnswerLinks`` on it redeems a link once across every worker holding the secret.

A new store joins by adding its name to ``STORES``, a way to build it in ``Uses``, and
one in ``USER`` (for other processes) when it is shared.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import sys
import textwrap
import time
from collections.abc import AsyncIterator

import pytest

from interaction import UserInteractionError
from interaction.postgres import PostgresUsedLinks
from interaction.redis import RedisUsedLinks
from interaction.signing import (
    LINK_REFUSED,
    LINK_STORE_UNAVAILABLE,
    AnswerLinks,
    MemoryUsedLinks,
    UsedLinkStore,
)

from .postgres_server import postgres_server
from .redis_server import redis_server
from .store_contract import Place

__all__ = ["postgres_server", "redis_server"]  # fixtures, used through Uses

STORES = ["memory", "redis", "postgres"]
SHARED = ["redis", "postgres"]
FORGET_SECONDS = 10.0
"""The bound on how long a store takes to forget a nonce past its time (Redis expires a
key on its own clock; the others forget it at the next use)."""
SECRET = b"s" * 32


class Uses(Place):
    """Builds used-link stores of one kind on one place."""

    def __init__(self, kind: str, request: pytest.FixtureRequest) -> None:
        super().__init__(kind, request)
        self.memory = MemoryUsedLinks()

    async def make(self) -> UsedLinkStore:
        """Another worker's store on the same storage (the in-memory store is its own)."""
        if self.kind == "memory":
            return self.memory
        if self.kind == "redis":
            return await self.keep(RedisUsedLinks(self.url, prefix=self.space))
        return await self.keep(PostgresUsedLinks(self.url, schema=self.space))

    def unreachable(self) -> RedisUsedLinks | PostgresUsedLinks:
        if self.kind == "redis":
            return RedisUsedLinks(self.unreachable_url(), timeout=1.0)
        return PostgresUsedLinks(self.unreachable_url())


@pytest.fixture(params=STORES)
async def uses(request: pytest.FixtureRequest) -> AsyncIterator[Uses]:
    made = Uses(request.param, request)
    yield made
    await made.close()


@pytest.fixture(params=SHARED)
async def shared(request: pytest.FixtureRequest) -> AsyncIterator[Uses]:
    made = Uses(request.param, request)
    yield made
    await made.close()


def nonce() -> str:
    return secrets.token_urlsafe(12)


async def test_a_link_is_used_once_and_said_to_be_used(uses: Uses) -> None:
    store = await uses.make()
    first, second = nonce(), nonce()
    later = time.time() + 300
    assert await store.used(first) is False
    assert await store.use(first, later) is True
    assert await store.used(first) is True
    assert await store.use(first, later) is False
    assert await store.use(first, later + 600) is False  # a longer life changes nothing
    assert await store.used(second) is False
    assert await store.use(second, later) is True
    other = await uses.make()  # another worker's
    assert (await other.used(first), await other.use(first, later)) == (True, False)


async def test_of_hands_using_one_link_at_once_exactly_one_wins(uses: Uses) -> None:
    hands = [await uses.make() for _ in range(3)]
    later = time.time() + 300
    for _ in range(10):
        one = nonce()
        won = await asyncio.gather(*(hand.use(one, later) for hand in hands))
        assert sorted(won) == [False, False, True]


async def test_a_link_past_its_expiry_is_forgotten(uses: Uses) -> None:
    store = await uses.make()
    gone, kept = nonce(), nonce()
    long_ago = time.time() - 3600  # past any clock skew a store allows
    assert await store.use(gone, long_ago) is True
    assert await store.use(kept, time.time() + 300) is True
    deadline = time.monotonic() + FORGET_SECONDS
    while await store.used(gone):
        assert time.monotonic() < deadline, f"{gone} still remembered"
        await store.use(nonce(), time.time() + 300)  # a use forgets what has expired
    assert await store.used(kept) is True
    assert await store.use(gone, time.time() + 300) is True  # forgotten: as if new


async def test_answer_links_on_the_store_redeem_a_link_once_across_workers(uses: Uses) -> None:
    here = AnswerLinks(SECRET, used=await uses.make())
    there = AnswerLinks(SECRET, used=await uses.make())  # another worker, same secret
    token = here.token("q-1")
    assert await there.averify(token) == "q-1"
    assert await here.averify(token) == "q-1"  # looking spends nothing
    results = await asyncio.gather(
        here.aredeem(token), there.aredeem(token), return_exceptions=True
    )
    assert sorted(map(str, results)) == ["q-1", "this answer link was already used"]
    for links in (here, there):
        for check in (links.averify, links.aredeem):
            with pytest.raises(UserInteractionError) as caught:
                await check(token)
            assert (caught.value.code, caught.value.message) == (
                LINK_REFUSED,
                "this answer link was already used",
            )
    with pytest.raises(UserInteractionError, match="is not valid"):  # another secret's
        await here.aredeem(AnswerLinks(b"x" * 32).token("q-1"))


USER = textwrap.dedent(
    """
    import asyncio, json, sys, time

    def build(kind, spec):
        if kind == "redis":
            from interaction.redis import RedisUsedLinks
            return RedisUsedLinks(spec["url"], prefix=spec["space"])
        from interaction.postgres import PostgresUsedLinks
        return PostgresUsedLinks(spec["url"], schema=spec["space"])

    async def main() -> None:
        store = build(sys.argv[1], json.loads(sys.argv[2]))
        later = time.time() + 300
        won = [n for n in sys.argv[3:] if await store.use(n, later)]
        print(json.dumps(won))
        await store.aclose()

    asyncio.run(main())
    """
)


async def test_workers_using_the_same_links_at_once_each_win_some_once(shared: Uses) -> None:
    await shared.make()  # (and the tables made)
    nonces = [nonce() for _ in range(60)]

    async def worker() -> list[str]:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", USER, shared.kind, shared.spec(), *nonces,
            stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, _ = await process.communicate()
        assert process.returncode == 0
        won: list[str] = json.loads(out)
        return won

    won = await asyncio.gather(worker(), worker(), worker())
    assert sorted(n for each in won for n in each) == sorted(nonces)


async def test_a_store_that_cannot_be_reached_refuses_the_link(shared: Uses) -> None:
    store = shared.unreachable()
    links = AnswerLinks(SECRET, used=store)
    token = links.token("q-1")
    for check in (links.averify, links.aredeem):
        with pytest.raises(UserInteractionError) as caught:
            await check(token)
        assert caught.value.code == LINK_STORE_UNAVAILABLE
        assert caught.value.message.startswith(
            f"the used-link store at {store.where} cannot be used: "
        )
    with pytest.raises(TypeError, match=r"use `await links.averify\(token\)`"):
        links.verify(token)  # the synchronous forms are the in-memory store's
    await store.aclose()
