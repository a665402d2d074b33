"""The rule store contract: the same tests over every RuleStore (in memory, a JSON file
without and with a key, Redis, PostgreSQL), through its async interface, as
docs/policies.md and ``RuleStore`` state it.

A new store joins by adding its name to ``STORES`` (and to ``SHARED`` and ``KEYED`` when
it is shared by processes or signs its set), a way to build it in ``Stores.make`` and in
``BUILD`` (for other processes), and, when keyed, a ``Hand``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Protocol

import psycopg
import pytest
import redis.asyncio as aioredis

from interaction import AskUserQuestionRequest, ask, permission_question, provide
from interaction.policies import (
    RULE_STORE_CORRUPT,
    RULE_STORE_UNAVAILABLE,
    JsonFileRuleStore,
    MemoryRuleStore,
    PolicyProvider,
    Rule,
    RuleStore,
    RuleStoreError,
    new_rule,
)
from interaction.postgres import PostgresRuleStore
from interaction.redis import RedisRuleStore
from interaction.testing import ScriptedProvider

from .postgres_server import postgres_server
from .redis_server import redis_server
from .store_contract import Place

__all__ = ["postgres_server", "redis_server"]  # fixtures, used through Stores

STORES = ["memory", "file", "file-keyed", "redis", "postgres"]
SHARED = ["file", "file-keyed", "redis", "postgres"]
"""Stores that processes share (each instance reads what the others wrote)."""
KEYED = ["file-keyed", "redis", "postgres"]
"""Stores that sign their whole rule set."""
KEY = b"a-test-key-of-32-bytes-----------"


class Hand(Protocol):
    """Another client with write access to a keyed store's storage, but not its key."""

    set_at: str
    """Where the store says its signed set is, in its messages."""

    async def copy(self) -> object:
        """The whole stored set as it is now (a backup)."""
        ...

    async def restore(self, copy: object) -> None:
        """Put a backup back, as it was."""
        ...

    async def delete(self, rule_id: str) -> None:
        """Delete one rule."""
        ...

    async def unseal(self) -> None:
        """Remove the signature of the whole set, leaving the rules."""
        ...

    async def aclose(self) -> None: ...


class FileHand:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.set_at = str(path)

    async def copy(self) -> object:
        return self.path.read_bytes()

    async def restore(self, copy: object) -> None:
        assert isinstance(copy, bytes)
        self.path.write_bytes(copy)

    async def delete(self, rule_id: str) -> None:
        document = json.loads(self.path.read_text())
        document["rules"] = [item for item in document["rules"] if item["id"] != rule_id]
        self.path.write_text(json.dumps(document))

    async def unseal(self) -> None:
        document = json.loads(self.path.read_text())
        del document["serial"], document["mac"]
        self.path.write_text(json.dumps(document))

    async def aclose(self) -> None:
        pass


class RedisHand:
    def __init__(self, url: str, store: RedisRuleStore) -> None:
        self.client = aioredis.Redis.from_url(url)
        self.store = store
        self.set_at = f"redis {store.manifest}"

    async def copy(self) -> object:
        return (
            await self.client.get(self.store.manifest),
            await self.client.hgetall(self.store.hash),
        )

    async def restore(self, copy: object) -> None:
        assert isinstance(copy, tuple)
        manifest, rules = copy
        await self.client.delete(self.store.manifest, self.store.hash)
        await self.client.set(self.store.manifest, manifest)
        await self.client.hset(self.store.hash, mapping=rules)

    async def delete(self, rule_id: str) -> None:
        await self.client.hdel(self.store.hash, rule_id)

    async def unseal(self) -> None:
        await self.client.delete(self.store.manifest)

    async def aclose(self) -> None:
        await self.client.aclose()


class PostgresHand:
    def __init__(self, url: str, schema: str) -> None:
        self.url = url
        self.s = f'"{schema}"'
        self.set_at = f"postgres {schema}.rule_set"

    async def _run(self, *statements: tuple[str, list[object]]) -> list[tuple[object, ...]]:
        async with await psycopg.AsyncConnection.connect(self.url) as db:
            rows: list[tuple[object, ...]] = []
            for query, params in statements:
                cursor = await db.execute(query, params)
                rows = await cursor.fetchall() if cursor.description else []
            return rows

    async def copy(self) -> object:
        manifest = await self._run((f"SELECT manifest FROM {self.s}.rule_set", []))
        rules = await self._run((f"SELECT id, rule FROM {self.s}.rules", []))
        return manifest, rules

    async def restore(self, copy: object) -> None:
        assert isinstance(copy, tuple)
        manifest, rules = copy
        await self._run(
            (f"DELETE FROM {self.s}.rule_set", []),
            (f"DELETE FROM {self.s}.rules", []),
            *((f"INSERT INTO {self.s}.rule_set (manifest) VALUES (%s)", [m]) for (m,) in manifest),
            *((f"INSERT INTO {self.s}.rules (id, rule) VALUES (%s, %s)", list(r)) for r in rules),
        )

    async def delete(self, rule_id: str) -> None:
        await self._run((f"DELETE FROM {self.s}.rules WHERE id = %s", [rule_id]))

    async def unseal(self) -> None:
        await self._run((f"DELETE FROM {self.s}.rule_set", []))

    async def aclose(self) -> None:
        pass


class Stores(Place):
    """Builds rule stores of one kind on one place (or a fresh file); makes the other
    hands that change the storage under them."""

    def __init__(self, kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
        super().__init__(kind, request)
        self.path = tmp_path / "rules.json"
        self.hands: list[Hand] = []
        self.memory = MemoryRuleStore()

    async def make(self) -> RuleStore:
        """Another instance on the same storage (the in-memory store is its own)."""
        if self.kind == "memory":
            return self.memory
        if self.kind == "file":
            return JsonFileRuleStore(self.path)
        if self.kind == "file-keyed":
            return JsonFileRuleStore(self.path, key=KEY)
        if self.kind == "redis":
            return await self.keep(RedisRuleStore(self.url, key=KEY, prefix=self.space))
        return await self.keep(PostgresRuleStore(self.url, key=KEY, schema=self.space))

    def unreachable(self) -> RuleStore:
        """A store whose storage cannot be reached."""
        if self.kind.startswith("file"):
            return JsonFileRuleStore(Path(__file__) / "not-a-folder" / "rules.json", key=KEY)
        if self.kind == "redis":
            return RedisRuleStore(self.unreachable_url(), key=KEY)
        return PostgresRuleStore(self.unreachable_url(), key=KEY)

    def spec(self, **more: str) -> str:
        """How another process builds a store here (``BUILD``)."""
        return super().spec(path=str(self.path), **more)

    async def hand(self, store: RuleStore) -> Hand:
        hand: Hand
        if self.kind == "file-keyed":
            hand = FileHand(self.path)
        elif self.kind == "redis":
            assert isinstance(store, RedisRuleStore)
            hand = RedisHand(self.url, store)
        else:
            hand = PostgresHand(self.url, self.space)
        self.hands.append(hand)
        return hand

    async def close(self) -> None:
        for hand in self.hands:
            await hand.aclose()
        await super().close()


async def stores_of(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Stores]:
    made = Stores(request.param, request, tmp_path)
    yield made
    await made.close()


@pytest.fixture(params=STORES)
async def stores(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Stores]:
    async for made in stores_of(request, tmp_path):
        yield made


@pytest.fixture(params=SHARED)
async def shared(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Stores]:
    async for made in stores_of(request, tmp_path):
        yield made


@pytest.fixture(params=KEYED)
async def keyed(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Stores]:
    async for made in stores_of(request, tmp_path):
        yield made


def request_for(summary: str) -> AskUserQuestionRequest:
    return AskUserQuestionRequest([permission_question("Bash", summary, id="q")])


async def decided(store: RuleStore, summary: str, human: str = "Deny") -> tuple[list[str], int]:
    """What an ask of ``Bash(summary)`` is answered with, and how often the human was asked."""
    person = ScriptedProvider({"q": human})
    with provide(PolicyProvider(person, store)):
        answer = await ask(request_for(summary))
    return list(answer.answers[0].selected), len(person.requests)


def by_id(rules: object) -> dict[str, Rule]:
    assert isinstance(rules, tuple | list)
    return {rule.id: rule for rule in rules}


async def test_a_store_starts_empty_and_gives_back_each_rule_as_added(stores: Stores) -> None:
    store = await stores.make()
    assert list(await store.rules()) == []
    added = [
        new_rule("Bash(npm test:*)"),
        new_rule("Read(src/**/*.py)", "deny", source="ci", created_by="ana"),
        new_rule("*", scope="session", session="s1"),
        new_rule("Bash(deploy \\* ünïcode)", scope="once"),
    ]
    for rule in added:
        await store.add(rule)
    assert by_id(await store.rules()) == by_id(added)
    assert by_id(await (await stores.make()).rules()) == by_id(added)


async def test_revoke_and_take_remove_a_rule_once(stores: Stores) -> None:
    store = await stores.make()
    kept, gone, once = new_rule("Bash(ls)"), new_rule("Bash(rm:*)", "deny"), new_rule("Bash(x)")
    for rule in (kept, gone, once):
        await store.add(rule)
    assert await store.revoke(gone.id) is True
    assert await store.revoke(gone.id) is False
    assert await store.revoke("r-never-there") is False
    assert await store.take(once.id) is True
    assert await store.take(once.id) is False
    assert list(await store.rules()) == [kept]
    assert list(await (await stores.make()).rules()) == [kept]


async def test_of_two_hands_taking_one_once_rule_exactly_one_wins(stores: Stores) -> None:
    hands = [await stores.make(), await stores.make()]
    for _ in range(10):
        rule = new_rule("Bash(deploy)", scope="once")
        await hands[0].add(rule)
        taken = await asyncio.gather(*(hand.take(rule.id) for hand in hands))
        assert sorted(taken) == [False, True]
    assert list(await hands[1].rules()) == []


async def test_changes_made_at_once_in_one_process_lose_nothing(stores: Stores) -> None:
    hands = [await stores.make(), await stores.make()]
    added = [new_rule(f"Read(f{n})") for n in range(20)]
    await asyncio.gather(*(h.add(r) for h, r in zip(hands * 10, added, strict=True)))
    await asyncio.gather(*(h.revoke(r.id) for h, r in zip(hands * 5, added[:10], strict=True)))
    assert by_id(await hands[0].rules()) == by_id(added[10:])


async def test_the_rules_answer_asks_and_allow_always_adds_one(stores: Stores) -> None:
    store = await stores.make()
    await store.add(new_rule("Bash(git:*)"))
    await store.add(new_rule("Bash(git push:*)", "deny"))
    await store.add(new_rule("Bash(deploy)", scope="once"))
    assert await decided(store, "git status") == (["Allow"], 0)
    assert await decided(store, "git push --force", human="Allow") == (["Deny"], 0)
    assert await decided(store, "deploy") == (["Allow"], 0)
    assert await decided(store, "deploy") == (["Deny"], 1)  # spent: the human answers
    assert await decided(store, "make", human="Always allow") == (["Always allow"], 1)
    assert await decided(await stores.make(), "make") == (["Allow"], 0)
    assert "Bash(make)" in {rule.spec for rule in await store.rules()}


WRITER = textwrap.dedent(
    """
    import asyncio, json, sys
    from interaction.policies import JsonFileRuleStore, new_rule

    def build(kind, spec, key):
        if kind == "file":
            return JsonFileRuleStore(spec["path"])
        if kind == "file-keyed":
            return JsonFileRuleStore(spec["path"], key=key)
        if kind == "redis":
            from interaction.redis import RedisRuleStore
            return RedisRuleStore(spec["url"], key=key, prefix=spec["space"])
        from interaction.postgres import PostgresRuleStore
        return PostgresRuleStore(spec["url"], key=key, schema=spec["space"])

    async def main() -> None:
        kind, spec, key, name = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
        store = build(kind, spec, key.encode())
        for n in range(int(sys.argv[5])):
            rule = new_rule(f"Bash({name}-{n})", scope="once" if n % 2 else "persisted")
            await store.add(rule)
            if n % 2:
                assert await store.take(rule.id)
        if hasattr(store, "aclose"):
            await store.aclose()

    asyncio.run(main())
    """
)


async def test_processes_changing_rules_at_once_lose_no_change(shared: Stores) -> None:
    store = await shared.make()  # (and the tables made)

    async def host(name: str) -> None:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", WRITER, shared.kind, shared.spec(), KEY.decode(), name, "20"
        )
        assert await process.wait() == 0

    await asyncio.gather(host("a"), host("b"), host("c"))
    specs = sorted(rule.spec for rule in await store.rules())
    assert specs == sorted(f"Bash({name}-{n})" for name in "abc" for n in range(0, 20, 2))


async def test_a_store_that_cannot_be_reached_fails_the_ask_and_every_change(
    shared: Stores,
) -> None:
    store = shared.unreachable()
    human = ScriptedProvider({"q": "Allow"})
    with provide(PolicyProvider(human, store)), pytest.raises(RuleStoreError) as caught:
        await ask(request_for("ls"))
    assert caught.value.code == RULE_STORE_UNAVAILABLE
    assert human.requests == []
    for change in (store.add(new_rule("Bash")), store.revoke("r1"), store.take("r1")):
        with pytest.raises(RuleStoreError) as caught:
            await change
        assert caught.value.code == RULE_STORE_UNAVAILABLE
    if isinstance(store, RedisRuleStore | PostgresRuleStore):
        await store.aclose()


async def keyed_set(keyed: Stores) -> tuple[RuleStore, Hand, dict[str, Rule]]:
    store = await keyed.make()
    rules = {
        "git": new_rule("Bash(git:*)"),
        "push": new_rule("Bash(git push:*)", "deny"),
        "rm": new_rule("Bash(rm -rf build)"),
        "once": new_rule("Bash(deploy)", scope="once"),
    }
    for rule in rules.values():
        await store.add(rule)
    return store, await keyed.hand(store), rules


async def test_an_older_copy_of_the_whole_set_is_refused_by_a_store_that_read_a_newer(
    keyed: Stores,
) -> None:
    store, hand, rules = await keyed_set(keyed)
    backup = await hand.copy()  # serial 4
    assert rules["rm"] in await store.rules()
    assert await store.revoke(rules["rm"].id) is True  # serial 5
    await hand.restore(backup)
    gone_back = (
        f"rule store {hand.set_at}: went back from serial 5 to 4: an older copy of the whole"
        " rule set was restored"
    )
    for attempt in (store.rules(), store.add(new_rule("Bash(ls)")), store.take(rules["once"].id)):
        with pytest.raises(RuleStoreError) as caught:
            await attempt
        assert (caught.value.code, caught.value.message) == (RULE_STORE_CORRUPT, gone_back)
    human = ScriptedProvider({"q": "Deny"})
    with provide(PolicyProvider(human, store)), pytest.raises(RuleStoreError):
        await ask(request_for("rm -rf build"))
    assert human.requests == []
    # the one thing the key cannot tell: a store that never read the newer set accepts it
    fresh = await keyed.make()
    assert rules["rm"] in await fresh.rules()


async def test_a_rule_deleted_without_the_key_is_corruption_and_never_an_allow(
    keyed: Stores,
) -> None:
    store, hand, rules = await keyed_set(keyed)
    assert await decided(store, "git push --force") == (["Deny"], 0)
    await hand.delete(rules["push"].id)  # the deny under the allow Bash(git:*)
    human = ScriptedProvider({"q": "Deny"})
    for reader in (store, await keyed.make()):
        with provide(PolicyProvider(human, reader)), pytest.raises(RuleStoreError) as caught:
            await ask(request_for("git push --force"))
        assert caught.value.code == RULE_STORE_CORRUPT
    assert human.requests == []


async def test_a_set_whose_signature_was_removed_is_refused_until_sealed(keyed: Stores) -> None:
    store, hand, rules = await keyed_set(keyed)
    await hand.unseal()
    for reader in (store, await keyed.make()):
        with pytest.raises(RuleStoreError) as caught:
            await reader.rules()
        assert caught.value.code == RULE_STORE_CORRUPT
        assert caught.value.message.endswith(
            ": holds 4 rules but no signed rule set (written before rule sets were signed, or"
            " its signature was removed): review them and run `interaction rules seal`"
        )
    assert isinstance(store, JsonFileRuleStore | RedisRuleStore | PostgresRuleStore)
    assert by_id(await store.seal()) == by_id(list(rules.values()))
    assert by_id(await (await keyed.make()).rules()) == by_id(list(rules.values()))
    assert await decided(store, "git push") == (["Deny"], 0)
