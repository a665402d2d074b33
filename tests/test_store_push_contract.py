"""The push subscription store contract: the same tests over every PushSubscriptionStore
(in memory, Redis, PostgreSQL), through its async interface, as docs/notify.md and
``PushSubscriptionStore`` state it.

A new store joins by adding its name to ``STORES`` (and to ``SHARED`` when processes share
it) and a way to build it in ``Stores.make``.
"""

from __future__ import annotations

import asyncio
import base64
import secrets
from collections.abc import AsyncIterator

import psycopg
import pytest
import redis.asyncio as aioredis

from interaction.postgres import PostgresPushSubscriptionStore
from interaction.push import (
    PUSH_STORE_UNAVAILABLE,
    MemoryPushSubscriptionStore,
    PushStoreUnavailable,
    PushSubscription,
    PushSubscriptionStore,
)
from interaction.redis import RedisPushSubscriptionStore

from .loopback import free_port
from .postgres_server import PostgresServer, postgres_server
from .redis_server import redis_server
from .store_contract import Place

__all__ = ["postgres_server", "redis_server"]  # fixtures, used through Stores

STORES = ["memory", "redis", "postgres"]
SHARED = ["redis", "postgres"]


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def device(user: str | None = "alice", endpoint: str | None = None) -> PushSubscription:
    """A subscription as a browser makes one (its keys' sizes and shape; no real key)."""
    path = endpoint or f"https://push.example.net/send/{secrets.token_urlsafe(12)}"
    return PushSubscription(
        path, b64(b"\x04" + secrets.token_bytes(64)), b64(secrets.token_bytes(16)), user
    )


class Stores(Place):
    """Builds subscription stores of one kind on one place."""

    def __init__(self, kind: str, request: pytest.FixtureRequest) -> None:
        super().__init__(kind, request)
        self.memory = MemoryPushSubscriptionStore()

    async def make(self) -> PushSubscriptionStore:
        """Another instance on the same storage (the in-memory store is its own)."""
        if self.kind == "memory":
            return self.memory
        if self.kind == "redis":
            return await self.keep(RedisPushSubscriptionStore(self.url, prefix=self.space))
        return await self.keep(PostgresPushSubscriptionStore(self.url, schema=self.space))

    def unreachable(self) -> PushSubscriptionStore:
        if self.kind == "redis":
            return RedisPushSubscriptionStore(self.unreachable_url())
        return PostgresPushSubscriptionStore(self.unreachable_url())

    async def write_garbage(self, endpoint: str) -> None:
        """Another hand writes an entry that is not a subscription."""
        if self.kind == "redis":
            client = aioredis.Redis.from_url(self.url)
            await client.hset(f"{self.space}:push", endpoint, b"{not json")
            await client.aclose()
        else:
            async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as db:
                await db.execute(
                    f'INSERT INTO "{self.space}".push_subscriptions VALUES (%s, %s)',
                    [endpoint, '{"endpoint": "ftp://x"}'],
                )


@pytest.fixture(params=STORES)
async def stores(request: pytest.FixtureRequest) -> AsyncIterator[Stores]:
    made = Stores(request.param, request)
    yield made
    await made.close()


@pytest.fixture(params=SHARED)
async def shared(request: pytest.FixtureRequest) -> AsyncIterator[Stores]:
    made = Stores(request.param, request)
    yield made
    await made.close()


def by_endpoint(found: object) -> dict[str, PushSubscription]:
    assert isinstance(found, list | tuple)
    return {s.endpoint: s for s in found}


async def test_a_new_store_holds_nothing(stores: Stores) -> None:
    store = await stores.make()
    assert list(await store.subscriptions()) == []
    assert await store.remove("https://push.example.net/send/none") is False


async def test_added_subscriptions_come_back_whole_with_their_user(stores: Stores) -> None:
    store = await stores.make()
    alice, bob, anyone = device("alice"), device("bob"), device(None)
    for subscription in (alice, bob, anyone):
        await store.add(subscription)
    assert by_endpoint(await store.subscriptions()) == {
        alice.endpoint: alice,
        bob.endpoint: bob,
        anyone.endpoint: anyone,
    }


async def test_adding_an_endpoint_again_replaces_it(stores: Stores) -> None:
    store = await stores.make()
    first = device("alice")
    again = device("bob", endpoint=first.endpoint)  # the device, now signed in as bob
    await store.add(first)
    await store.add(again)
    assert list(await store.subscriptions()) == [again]


async def test_remove_forgets_one_endpoint_and_says_whether_it_was_there(stores: Stores) -> None:
    store = await stores.make()
    gone, kept = device(), device()
    await store.add(gone)
    await store.add(kept)
    assert await store.remove(gone.endpoint) is True
    assert await store.remove(gone.endpoint) is False
    assert list(await store.subscriptions()) == [kept]


async def test_a_loopback_http_endpoint_a_test_allowed_in_reads_back(stores: Stores) -> None:
    store = await stores.make()
    local = device("alice", endpoint=f"http://127.0.0.1:{free_port()}/push/1")
    await store.add(local)
    assert list(await store.subscriptions()) == [local]


async def test_instances_on_one_storage_share_it(shared: Stores) -> None:
    one, other = await shared.make(), await shared.make()
    subscription = device()
    await one.add(subscription)
    assert list(await other.subscriptions()) == [subscription]
    assert await other.remove(subscription.endpoint) is True
    assert list(await one.subscriptions()) == []


async def test_of_two_hosts_removing_one_gone_endpoint_one_removes_it(shared: Stores) -> None:
    one, other = await shared.make(), await shared.make()
    subscription = device()
    await one.add(subscription)
    removed = await asyncio.gather(
        one.remove(subscription.endpoint), other.remove(subscription.endpoint)
    )
    assert sorted(removed) == [False, True]


async def test_an_entry_that_is_no_subscription_is_left_out_and_logged(
    shared: Stores, caplog: pytest.LogCaptureFixture
) -> None:
    store = await shared.make()
    good = device()
    await store.add(good)
    await shared.write_garbage("https://push.example.net/send/garbage")
    assert list(await store.subscriptions()) == [good]
    assert "push.example.net/send/garbage" in caplog.text
    assert "left out: push subscription:" in caplog.text


async def test_an_unreachable_store_says_so_and_never_names_a_password(shared: Stores) -> None:
    store = shared.unreachable()
    try:
        for call in (
            store.subscriptions(),
            store.add(device()),
            store.remove("https://x.example/1"),
        ):
            with pytest.raises(PushStoreUnavailable) as caught:
                await call
            assert caught.value.code == PUSH_STORE_UNAVAILABLE
            assert "cannot be reached" in caught.value.message
    finally:
        assert isinstance(store, RedisPushSubscriptionStore | PostgresPushSubscriptionStore)
        await store.aclose()


async def test_postgres_without_its_table_says_to_migrate(postgres_server: PostgresServer) -> None:
    store = PostgresPushSubscriptionStore(postgres_server.url, schema="never_migrated")
    try:
        with pytest.raises(PushStoreUnavailable) as caught:
            await store.subscriptions()
        assert caught.value.message.startswith(
            "the push subscription store's tables are not in the database at"
        )
        assert "run `await store.migrate()`" in caught.value.message
    finally:
        await store.aclose()
