"""What only the PostgreSQL stores do: their tables made by one ``migrate()`` (theirs or the
relay's) in the relay's schema, the message when the tables are missing or newer, the
message when the database cannot be reached, and the import without psycopg. Their
behaviour as stores is held by the contract suites (tests/test_store_*_contract.py)."""

from __future__ import annotations

import asyncio
import secrets
import time

import pytest

from interaction.audit import AUDIT_FAILED, AuditLogError
from interaction.policies import RULE_STORE_UNAVAILABLE, RuleStoreError, new_rule
from interaction.postgres import (
    PostgresAuditLog,
    PostgresRelay,
    PostgresRuleStore,
    PostgresSpentStore,
)
from interaction.spent import SpentStoreUnavailable

from .helpers import import_error_without
from .loopback import free_port
from .postgres_server import PostgresServer, execute, postgres_server

__all__ = ["postgres_server"]  # a fixture

KEY = b"a-test-key-of-32-bytes-----------"
Store = PostgresRuleStore | PostgresAuditLog | PostgresSpentStore


def stores(url: str, schema: str) -> tuple[PostgresRuleStore, PostgresAuditLog, PostgresSpentStore]:
    return (
        PostgresRuleStore(url, key=KEY, schema=schema),
        PostgresAuditLog(url, schema=schema),
        PostgresSpentStore(url, schema=schema),
    )


async def use(store: Store) -> object:
    """One call of the store's interface."""
    if isinstance(store, PostgresRuleStore):
        return await store.rules()
    if isinstance(store, PostgresAuditLog):
        return await store.append({"n": 1})
    return await store.spend(secrets.token_hex(8), time.time() + 60)


def test_without_psycopg_the_import_names_the_extra() -> None:
    assert import_error_without("psycopg", "interaction.postgres") == (
        "interaction.postgres needs psycopg 3:"
        ' pip install "interaction-seam[postgres]" (the interaction[postgres] extra)'
    )


def test_a_bad_url_schema_key_or_pool_is_refused_when_built() -> None:
    url = "postgresql://user:secret@db.internal:6543/app"
    for make in (
        lambda **o: PostgresRuleStore(url, key=KEY, **o),
        lambda **o: PostgresAuditLog(url, **o),
        lambda **o: PostgresSpentStore(url, **o),
    ):
        assert make().where == "db.internal:6543/app"  # never the password
        with pytest.raises(ValueError, match="the schema must be a lower-case SQL name"):
            make(schema='a"b')
        with pytest.raises(ValueError, match="connections must be at least 1"):
            make(connections=0)
    with pytest.raises(ValueError, match='missing "=" after'):
        PostgresSpentStore("localhost:5432")
    with pytest.raises(ValueError, match="at least 16 bytes"):
        PostgresRuleStore(url, key=b"short")


async def test_a_database_that_cannot_be_reached_is_each_stores_unavailable() -> None:
    url = f"postgresql://postgres@127.0.0.1:{free_port()}/db"
    rules, audit, spent = stores(url, "interaction")
    where = rules.where
    for call in (rules.rules(), rules.add(new_rule("Bash")), rules.migrate()):
        with pytest.raises(RuleStoreError) as refused:
            await call
        assert refused.value.code == RULE_STORE_UNAVAILABLE
        assert refused.value.message.startswith(
            f"rule store postgres {where} interaction.rules: cannot be reached (connection"
        )
    for attempt in (audit.append({"n": 1}), audit.read_all()):
        with pytest.raises(AuditLogError) as failed:
            await attempt
        assert failed.value.code == AUDIT_FAILED
        assert failed.value.message.startswith(
            f"audit log postgres {where} interaction.audit: cannot be reached (connection"
        )
    with pytest.raises(SpentStoreUnavailable) as unavailable:
        await spent.spend("n", time.time() + 60)
    assert str(unavailable.value).startswith(
        f"the spent-state store at {where} cannot be used: connection"
    )
    for store in (rules, audit, spent):
        await store.aclose()


async def test_missing_tables_name_migrate_and_one_migrate_makes_every_table(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.url
    schema = f"m{secrets.token_hex(6)}"
    rules, audit, spent = stores(url, schema)
    where = rules.where
    missing = (
        f"tables are not in the database at {where} (schema {schema!r}): run `await"
        " store.migrate()` (or `interaction serve --postgres URL --migrate`) once"
    )
    for store, what, error in (
        (rules, "rule store", RuleStoreError),
        (audit, "audit log", AuditLogError),
        (spent, "spent-state store", SpentStoreUnavailable),
    ):
        with pytest.raises(error) as caught:
            await use(store)
        assert str(caught.value) == f"the {what}'s {missing}"
    # the relay's migrate makes the stores' tables, several at once take turns
    relays = [PostgresRelay(url, schema=schema) for _ in range(2)]
    await asyncio.gather(*(relay.migrate() for relay in relays), rules.migrate())
    assert await use(rules) == ()
    assert (await use(audit))["seq"] == 1  # type: ignore[index]
    assert await use(spent) is True
    await spent.migrate()  # again, with rows: nothing changes
    assert [r["seq"] for r in [await audit.append({"n": 2})]] == [2]
    # a store's migrate makes the relay's tables too
    other = f"m{secrets.token_hex(6)}"
    await PostgresSpentStore(url, schema=other).migrate()
    relay = PostgresRelay(url, schema=other)
    assert (await relay.snapshot()).questions == ()
    made: list[PostgresRelay | Store] = [relay, *relays, rules, audit, spent]
    for each in made:
        await each.aclose()


async def test_tables_of_a_newer_version_are_refused_by_every_store(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.url
    schema = f"m{secrets.token_hex(6)}"
    await PostgresAuditLog(url, schema=schema).migrate()
    await execute(url, f'UPDATE "{schema}".meta SET version = 99')
    made: list[Store] = list(stores(url, schema))
    for store, what in zip(made, ("rule store", "audit log", "spent-state store"), strict=True):
        for call in (use(store), store.migrate()):
            with pytest.raises((RuleStoreError, AuditLogError, SpentStoreUnavailable)) as caught:
                await call
            assert str(caught.value) == (
                f"the {what}'s tables at {store.where} (schema {schema!r}) are at version 99,"
                f" newer than this {what}'s 2: upgrade interaction-seam"
            )
        await store.aclose()
