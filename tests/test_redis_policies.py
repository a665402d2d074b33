"""Rules and the audit trail in a real redis-server, shared by processes standing in for hosts."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
import uuid
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from interaction import AskUserQuestionRequest, ask, permission_question, provide
from interaction.audit import verify
from interaction.policies import (
    RULE_STORE_CORRUPT,
    RULE_STORE_UNAVAILABLE,
    PolicyProvider,
    Rule,
    RuleStoreError,
    new_rule,
    rule_to_json,
    signed,
)
from interaction.redis import RedisAuditLog, RedisRuleStore
from interaction.testing import ScriptedProvider

from .loopback import free_port
from .redis_server import RedisServer, redis_server

__all__ = ["redis_server"]  # a fixture

KEY = b"a-test-key-of-32-bytes-----------"
ENV = {**os.environ, "INTERACTION_RULES_KEY": KEY.decode()}


@pytest.fixture
async def prefix(redis_server: RedisServer) -> AsyncIterator[str]:
    name = f"t{uuid.uuid4().hex[:10]}"
    yield name
    client = aioredis.Redis.from_url(redis_server.url)
    keys = await client.keys(f"{name}:*")
    if keys:
        await client.delete(*keys)
    await client.aclose()


async def cli(*args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "interaction",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=ENV,
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def request_for(summary: str) -> AskUserQuestionRequest:
    return AskUserQuestionRequest([permission_question("Bash", summary, id="q")])


async def decided(store: RedisRuleStore, summary: str) -> tuple[list[str], int]:
    human = ScriptedProvider({"q": "Deny"})
    with provide(PolicyProvider(human, store)):
        answer = await ask(request_for(summary))
    return list(answer.answers[0].selected), len(human.requests)


ASKER = textwrap.dedent(
    """
    import asyncio, json, sys
    from interaction import AskUserQuestionRequest, ask, permission_question, provide
    from interaction.policies import PolicyProvider
    from interaction.redis import RedisRuleStore
    from interaction.testing import ScriptedProvider

    async def main() -> None:
        store = RedisRuleStore(sys.argv[1], key=sys.argv[3].encode(), prefix=sys.argv[2])
        human = ScriptedProvider({"q": sys.argv[5]})
        request = AskUserQuestionRequest([permission_question("Bash", sys.argv[4], id="q")])
        with provide(PolicyProvider(human, store, answerer="host-b")):
            answer = await ask(request)
        selected = list(answer.answers[0].selected)
        print(json.dumps({"selected": selected, "asked": len(human.requests)}))
        await store.aclose()

    asyncio.run(main())
    """
)


async def ask_on_another_host(url: str, prefix: str, summary: str, human: str) -> dict[str, object]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", ASKER, url, prefix, KEY.decode(), summary, human,
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, _ = await process.communicate()
    assert process.returncode == 0
    return json.loads(out)  # type: ignore[no-any-return]


async def test_a_rule_added_on_one_host_answers_on_another_until_revoked(
    redis_server: RedisServer, prefix: str
) -> None:
    store = RedisRuleStore(redis_server.url, key=KEY, prefix=prefix)
    try:
        assert await decided(store, "npm test") == (["Deny"], 1)
        status, rule_id, _ = await cli(
            "rules", "add", "Bash(npm test:*)", "--redis", redis_server.url, "--prefix", prefix
        )
        assert status == 0
        assert await decided(store, "npm test") == (["Allow"], 0)
        status, listing, _ = await cli(
            "rules", "list", "--json", "--redis", redis_server.url, "--prefix", prefix
        )
        assert [json.loads(line)["id"] for line in listing.splitlines()] == [rule_id.strip()]
        status, _, _ = await cli(
            "rules", "revoke", rule_id.strip(), "--redis", redis_server.url, "--prefix", prefix
        )
        assert status == 0
        assert await decided(store, "npm test") == (["Deny"], 1)
    finally:
        await store.aclose()


async def test_allow_always_on_one_host_answers_the_next_ask_on_another(
    redis_server: RedisServer, prefix: str
) -> None:
    first = await ask_on_another_host(redis_server.url, prefix, "make check", "Always allow")
    assert first == {"selected": ["Always allow"], "asked": 1}
    second = await ask_on_another_host(redis_server.url, prefix, "make check", "Deny")
    assert second == {"selected": ["Allow"], "asked": 0}
    store = RedisRuleStore(redis_server.url, key=KEY, prefix=prefix)
    (rule,) = await store.rules()
    assert (rule.spec, rule.created_by) == ("Bash(make check)", "host-b")
    await store.aclose()


async def test_of_two_hosts_taking_one_once_rule_exactly_one_wins(
    redis_server: RedisServer, prefix: str
) -> None:
    stores = [RedisRuleStore(redis_server.url, key=KEY, prefix=prefix) for _ in range(2)]
    try:
        for _ in range(20):
            rule = new_rule("Bash(deploy)", scope="once")
            await stores[0].add(rule)
            taken = await asyncio.gather(*(store.take(rule.id) for store in stores))
            assert sorted(taken) == [False, True]
    finally:
        for store in stores:
            await store.aclose()


async def test_a_tampered_rule_is_corruption_and_never_an_allow(
    redis_server: RedisServer, prefix: str
) -> None:
    store = RedisRuleStore(redis_server.url, key=KEY, prefix=prefix)
    client = aioredis.Redis.from_url(redis_server.url)
    try:
        rule = new_rule("Bash(rm -rf /)", "deny")
        await store.add(rule)
        forged = {**rule_to_json(rule), "effect": "allow", "mac": "0" * 64}
        await client.hset(store.hash, rule.id, json.dumps(forged))
        human = ScriptedProvider({"q": "Deny"})
        with provide(PolicyProvider(human, store)), pytest.raises(RuleStoreError) as caught:
            await ask(request_for("rm -rf /"))
        assert caught.value.code == RULE_STORE_CORRUPT
        assert caught.value.message == (
            f"rule store redis {store.hash}[{rule.id.encode()!r}]: fails its MAC: it was"
            " changed, or written with another key"
        )
        assert human.requests == []
        unsigned = new_rule("Bash")
        await client.hset(store.hash, unsigned.id, json.dumps(rule_to_json(unsigned)))
        with pytest.raises(RuleStoreError):
            await store.rules()
    finally:
        await client.aclose()
        await store.aclose()


async def keyed_redis_rules(store: RedisRuleStore) -> dict[str, Rule]:
    """``allow Bash(git:*)``, ``deny Bash(git push:*)``, a once-rule ``Bash(deploy)`` and
    ``allow Bash(rm -rf build)``, added to ``store`` in that order."""
    rules = {
        "git": new_rule("Bash(git:*)"),
        "push": new_rule("Bash(git push:*)", "deny"),
        "once": new_rule("Bash(deploy)", scope="once"),
        "rm": new_rule("Bash(rm -rf build)"),
    }
    for rule in rules.values():
        await store.add(rule)
    return rules


async def refused_by(store: RedisRuleStore, url: str, summary: str) -> RuleStoreError:
    """The store's error, for a fresh store too; the person was not asked."""
    human = ScriptedProvider({"q": "Allow"})
    fresh = RedisRuleStore(url, key=KEY, prefix=store.hash.removesuffix(":rules"))
    try:
        for each in (store, fresh):
            with provide(PolicyProvider(human, each)), pytest.raises(RuleStoreError) as caught:
                await ask(request_for(summary))
            assert caught.value.code == RULE_STORE_CORRUPT
    finally:
        await fresh.aclose()
    assert human.requests == []
    return caught.value


@pytest.fixture
async def keyed(
    redis_server: RedisServer, prefix: str
) -> AsyncIterator[tuple[RedisRuleStore, aioredis.Redis, dict[str, Rule]]]:
    store = RedisRuleStore(redis_server.url, key=KEY, prefix=prefix)
    client = aioredis.Redis.from_url(redis_server.url)
    try:
        yield store, client, await keyed_redis_rules(store)
    finally:
        await client.aclose()
        await store.aclose()


async def serial_in(client: aioredis.Redis, store: RedisRuleStore) -> int:
    text = await client.get(store.manifest)
    assert isinstance(text, bytes)
    return int(json.loads(text)["serial"])


async def whole_set(client: aioredis.Redis, store: RedisRuleStore) -> tuple[bytes, dict[str, str]]:
    """A copy of the manifest and every entry, as anyone who can read Redis can take it."""
    manifest = await client.get(store.manifest)
    assert isinstance(manifest, bytes)
    entries = await client.hgetall(store.hash)
    return manifest, {text_of(k): text_of(v) for k, v in entries.items()}


def text_of(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


async def put_back(client: aioredis.Redis, store: RedisRuleStore, entries: dict[str, str]) -> None:
    for field, text in entries.items():
        await client.hset(store.hash, field, text)


NOT_LISTED = (
    "is not in the signed manifest: it was added, or put back after it was revoked or used,"
    " without the key"
)


async def test_a_revoked_rule_written_back_without_the_key_is_corruption(
    redis_server: RedisServer,
    keyed: tuple[RedisRuleStore, aioredis.Redis, dict[str, Rule]],
) -> None:
    store, client, rules = keyed
    rule = rules["rm"]
    copy = await client.hget(store.hash, rule.id)
    assert await store.revoke(rule.id) is True
    await client.hset(store.hash, rule.id, copy)
    error = await refused_by(store, redis_server.url, "rm -rf build")
    assert error.message == f"rule store redis {store.hash}[{rule.id.encode()!r}]: {NOT_LISTED}"


async def test_a_used_once_rule_replayed_without_the_key_is_corruption(
    redis_server: RedisServer,
    keyed: tuple[RedisRuleStore, aioredis.Redis, dict[str, Rule]],
) -> None:
    store, client, rules = keyed
    rule = rules["once"]
    copy = await client.hget(store.hash, rule.id)
    assert await decided(store, "deploy") == (["Allow"], 0)
    assert await client.hexists(store.hash, rule.id) == 0
    await client.hset(store.hash, rule.id, copy)
    error = await refused_by(store, redis_server.url, "deploy")
    assert error.message == f"rule store redis {store.hash}[{rule.id.encode()!r}]: {NOT_LISTED}"


async def test_a_deny_rule_deleted_without_the_key_is_corruption(
    redis_server: RedisServer,
    keyed: tuple[RedisRuleStore, aioredis.Redis, dict[str, Rule]],
) -> None:
    store, client, rules = keyed
    assert await decided(store, "git push --force") == (["Deny"], 0)
    await client.hdel(store.hash, rules["push"].id)
    error = await refused_by(store, redis_server.url, "git push --force")
    assert error.message == (
        f"rule store redis {store.hash}: has no rule {rules['push'].id!r}, which the signed"
        " manifest lists: it was deleted without the key"
    )


async def test_an_entry_added_or_changed_without_the_key_is_corruption(
    redis_server: RedisServer,
    prefix: str,
    keyed: tuple[RedisRuleStore, aioredis.Redis, dict[str, Rule]],
) -> None:
    store, client, rules = keyed
    # a rule the key signed, in another store: valid on its own, not one of this set
    elsewhere = RedisRuleStore(redis_server.url, key=KEY, prefix=f"{prefix}:elsewhere")
    stranger = new_rule("Bash")
    await elsewhere.add(stranger)
    await elsewhere.aclose()
    text = await client.hget(f"{prefix}:elsewhere:rules", stranger.id)
    await client.hset(store.hash, stranger.id, text)
    error = await refused_by(store, redis_server.url, "ls")
    assert error.message == (
        f"rule store redis {store.hash}[{stranger.id.encode()!r}]: {NOT_LISTED}"
    )
    await client.hdel(store.hash, stranger.id)
    push = rules["push"]
    changed = {**json.loads((await whole_set(client, store))[1][push.id]), "effect": "allow"}
    await client.hset(store.hash, push.id, json.dumps(changed))
    error = await refused_by(store, redis_server.url, "git push")
    assert error.message == (
        f"rule store redis {store.hash}[{push.id.encode()!r}]: fails its MAC: it was changed,"
        " or written with another key"
    )


async def test_an_older_copy_of_the_whole_set_is_refused_by_a_store_that_read_a_newer(
    redis_server: RedisServer,
    keyed: tuple[RedisRuleStore, aioredis.Redis, dict[str, Rule]],
) -> None:
    store, client, rules = keyed
    manifest, entries = await whole_set(client, store)
    assert await serial_in(client, store) == 4
    assert rules["rm"] in await store.rules()  # read (and kept) before the revoke
    assert await store.revoke(rules["rm"].id) is True
    await client.set(store.manifest, manifest)
    await put_back(client, store, entries)
    gone_back = (
        f"rule store redis {store.manifest}: went back from serial 5 to 4: an older copy of"
        " the whole rule set was restored"
    )
    for attempt in (store.rules(), store.add(new_rule("Bash(ls)")), store.take(rules["once"].id)):
        with pytest.raises(RuleStoreError) as caught:
            await attempt
        assert (caught.value.code, caught.value.message) == (RULE_STORE_CORRUPT, gone_back)
    # the one thing the key cannot tell: a store that never read the newer set accepts it
    fresh = RedisRuleStore(redis_server.url, key=KEY, prefix=store.hash.removesuffix(":rules"))
    assert rules["rm"] in await fresh.rules()
    await fresh.aclose()
    await client.delete(store.manifest, store.hash)  # the oldest copy of all: no rules
    with pytest.raises(RuleStoreError) as caught:
        await store.rules()
    assert caught.value.message == gone_back.replace("to 4", "to 0")
    # a manifest deleted while rules remain: the rules are not vouched for
    await put_back(client, store, entries)
    with pytest.raises(RuleStoreError) as caught:
        await store.rules()
    assert caught.value.message == (
        f"rule store redis {store.hash}: holds 4 rules but no signed rule set (written before"
        " rule sets were signed, or its signature was removed): review them and run"
        " `interaction rules seal`"
    )


async def test_a_store_of_the_previous_format_is_refused_until_sealed(
    redis_server: RedisServer, prefix: str
) -> None:
    client = aioredis.Redis.from_url(redis_server.url)
    store = RedisRuleStore(redis_server.url, key=KEY, prefix=prefix)
    try:
        rule = new_rule("Bash(npm test:*)")
        await client.hset(store.hash, rule.id, json.dumps(signed(rule, KEY)))  # as 0.x wrote it
        with pytest.raises(RuleStoreError) as caught:
            await store.add(new_rule("Bash(ls)"))
        assert caught.value.message.startswith(f"rule store redis {store.hash}: holds 1 rules")
        status, out, err = await cli(
            "rules", "seal", "--json", "--redis", redis_server.url, "--prefix", prefix
        )
        assert (status, [json.loads(line)["id"] for line in out.splitlines()], err) == (
            0,
            [rule.id],
            "",
        )
        assert await decided(store, "npm test") == (["Allow"], 0)
        assert await serial_in(client, store) == 1
    finally:
        await client.aclose()
        await store.aclose()


WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from interaction.policies import new_rule
    from interaction.redis import RedisRuleStore

    async def main() -> None:
        store = RedisRuleStore(sys.argv[1], key=sys.argv[3].encode(), prefix=sys.argv[2])
        for n in range(int(sys.argv[5])):
            rule = new_rule(f"Bash({sys.argv[4]}-{n})", scope="once" if n % 2 else "persisted")
            await store.add(rule)
            if n % 2:
                assert await store.take(rule.id)
        await store.aclose()

    asyncio.run(main())
    """
)


async def test_hosts_changing_rules_at_once_lose_no_change(
    redis_server: RedisServer, prefix: str
) -> None:
    async def host(name: str) -> None:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", WRITER, redis_server.url, prefix, KEY.decode(), name, "30"
        )
        assert await process.wait() == 0

    await asyncio.gather(host("a"), host("b"))
    store = RedisRuleStore(redis_server.url, key=KEY, prefix=prefix)
    client = aioredis.Redis.from_url(redis_server.url)
    try:
        specs = sorted(rule.spec for rule in await store.rules())
        assert specs == sorted(f"Bash({name}-{n})" for name in "ab" for n in range(0, 30, 2))
        # every add and every take bumped the signed serial once
        assert await serial_in(client, store) == 2 * (30 + 15)
        # two clients of one process, each change interleaved with the other's
        other = RedisRuleStore(redis_server.url, key=KEY, prefix=prefix)
        added = [new_rule(f"Read(f{n})") for n in range(40)]
        await asyncio.gather(*(s.add(r) for s, r in zip([store, other] * 20, added, strict=True)))
        await other.aclose()
        assert {r.id for r in added} <= {r.id for r in await store.rules()}
        assert await serial_in(client, store) == 2 * (30 + 15) + 40
    finally:
        await client.aclose()
        await store.aclose()


async def test_an_unreachable_store_fails_the_ask() -> None:
    store = RedisRuleStore(f"redis://127.0.0.1:{free_port()}/0", key=KEY)
    human = ScriptedProvider({"q": "Allow"})
    with provide(PolicyProvider(human, store)), pytest.raises(RuleStoreError) as caught:
        await ask(request_for("ls"))
    assert caught.value.code == RULE_STORE_UNAVAILABLE
    assert caught.value.message == (
        "rule store redis interaction:rules: cannot be reached (ConnectionError)"
    )
    assert human.requests == []
    await store.aclose()


def test_a_short_key_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 16 bytes"):
        RedisRuleStore("redis://127.0.0.1:1/0", key=b"short")


APPENDER = textwrap.dedent(
    """
    import asyncio, sys
    from interaction.redis import RedisAuditLog

    async def main() -> None:
        log = RedisAuditLog(sys.argv[1], prefix=sys.argv[2])
        for n in range(int(sys.argv[4])):
            await log.append({"host": sys.argv[3], "n": n})
        await log.aclose()

    asyncio.run(main())
    """
)


async def append_from(url: str, prefix: str, host: str, count: int) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", APPENDER, url, prefix, host, str(count)
    )
    assert await process.wait() == 0


async def test_hosts_appending_to_one_stream_keep_one_chain(
    redis_server: RedisServer, prefix: str
) -> None:
    await asyncio.gather(
        append_from(redis_server.url, prefix, "a", 60),
        append_from(redis_server.url, prefix, "b", 60),
    )
    log = RedisAuditLog(redis_server.url, prefix=prefix)
    lines = await log.read_all(batch=7)
    records = [json.loads(line) for _, line in lines]
    assert [r["seq"] for r in records] == list(range(1, 121))
    assert sorted((r["host"], r["n"]) for r in records) == sorted(
        (h, n) for h in "ab" for n in range(60)
    )
    assert verify(lines)[:2] == ([], 120)
    status, out, _ = await cli("log", "--redis", redis_server.url, "--prefix", prefix, "--verify")
    assert (status, out.split(",")[0]) == (0, "ok: 120 records")
    client = aioredis.Redis.from_url(redis_server.url)
    await client.xdel(log.stream, lines[50][0].split("#")[1])
    await client.aclose()
    status, out, err = await cli("log", "--redis", redis_server.url, "--prefix", prefix, "--verify")
    assert status == 1
    assert out == (
        f"{lines[51][0]}: record 52 follows record 50: records are missing or out of order\n"
    )
    assert err == "interaction: the chain is broken (1 problem in 119 records)\n"
    await log.aclose()
