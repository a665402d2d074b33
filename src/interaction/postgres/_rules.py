"""Policy rules in PostgreSQL, shared by every host on the database and schema.

``<schema>.rules`` holds each rule's JSON with its HMAC-SHA256 under the store's key, by
id; the one row of ``<schema>.rule_set`` holds the signed manifest of the live rules (each
one's id and MAC, and a serial that every change bumps), as the Redis store keeps them.
A change reads the manifest and the rules in one statement, computes the new manifest,
and stores it with the rule by one call of ``change_rules``, a transaction that applies
it only if the manifest is still the one it was computed from (else it is computed
again): hosts changing rules at once never lose a change, and of two hosts taking one
``once`` rule exactly one wins.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final, Literal

from .._rule_manifest import SignedSet
from ..policies import RULE_STORE_UNAVAILABLE, Rule, RuleStoreError, signed
from ._tables import CONNECTIONS, Tables, why

__all__ = ["MAX_ATTEMPTS", "MIN_KEY_BYTES", "PostgresRuleStore"]

MIN_KEY_BYTES: Final = 16
MAX_ATTEMPTS: Final = 100
"""How often a change is computed again when other hosts changed the rules meanwhile."""

_Snapshot = tuple[str | None, dict[str, str]]


class PostgresRuleStore:
    """A :class:`~interaction.policies.RuleStore` in the PostgreSQL database at ``url``.

    ``key`` (at least 16 bytes, from the environment, never logged) signs every rule and
    the manifest of the whole set; a rule or a set that fails its MAC, or a set older than
    one this store has read, makes the store corrupt (:class:`RuleStoreError`). A database
    that cannot be reached is ``RULE_STORE_UNAVAILABLE``. ``schema`` is the relay's
    (``interaction`` by default): :meth:`migrate` creates the tables once.
    """

    def __init__(
        self,
        url: str,
        *,
        key: bytes,
        schema: str = "interaction",
        connections: int = CONNECTIONS,
    ) -> None:
        if type(key) is not bytes or len(key) < MIN_KEY_BYTES:
            raise ValueError(f"the rule store's key is at least {MIN_KEY_BYTES} bytes")
        self._key = key
        self._tables = Tables(
            url, schema, connections, "rule store", "rules", self._failed, self._refused
        )
        self.where = self._tables.where
        """Where the database is (host:port/dbname, never credentials), for messages."""
        self.table = f"{schema}.rules"
        self.manifest = f"{schema}.rule_set"
        self._set = SignedSet(
            key, f"postgres {self.table}", f"postgres {self.manifest}", self._rule_at
        )
        self._sql_snapshot = self._tables.sql(
            "SELECT NULL, manifest FROM {s}.rule_set UNION ALL SELECT id, rule FROM {s}.rules"
        )
        self._sql_change = self._tables.sql("SELECT {s}.change_rules(%s, %s, %s, %s, %s)")
        self._cache: tuple[_Snapshot, int, tuple[Rule, ...]] | None = None
        """The last snapshot read, its serial and its rules."""

    def _rule_at(self, rule_id: str) -> str:
        return f"postgres {self.table}[{rule_id!r}]"

    def _failed(self, where: str, exc: BaseException) -> RuleStoreError:
        return RuleStoreError(
            f"rule store postgres {where} {self.table}: cannot be reached ({why(exc)})",
            RULE_STORE_UNAVAILABLE,
        )

    def _refused(self, message: str) -> RuleStoreError:
        return RuleStoreError(message, RULE_STORE_UNAVAILABLE)

    async def migrate(self) -> None:
        """Create (or bring up to date) the schema's tables: the relay's and every store's."""
        await self._tables.migrate()

    async def aclose(self) -> None:
        """Close the store's connections (a later call opens new ones)."""
        await self._tables.close()

    async def rules(self) -> Sequence[Rule]:
        floor = self._set.serial
        snapshot = await self._snapshot()
        cache = self._cache
        if cache is not None and cache[0] == snapshot and cache[1] >= floor:
            return cache[2]  # the same object while nothing changed: the index is kept
        rules, serial, _ = self._set.checked(*snapshot, floor)
        self._cache = (snapshot, serial, rules)
        return rules

    async def add(self, rule: Rule) -> None:
        data = signed(rule, self._key)
        await self._apply("add", rule.id, json.dumps(data, ensure_ascii=False), str(data["mac"]))

    async def revoke(self, rule_id: str) -> bool:
        return await self._apply("remove", rule_id)

    async def take(self, rule_id: str) -> bool:
        return await self.revoke(rule_id)

    async def seal(self) -> Sequence[Rule]:
        """Sign the rules as they stand, each checked against its own MAC, and return
        them: for rules written without a signed set (or repaired by hand)."""
        for _ in range(MAX_ATTEMPTS):
            snapshot = await self._snapshot()
            rules, serial, macs = self._set.checked(*snapshot, 0, sealing=True)
            if await self._write(snapshot[0], max(serial, self._set.serial) + 1, macs, "seal"):
                return rules
        raise self._busy()

    async def _apply(
        self, op: Literal["add", "remove"], rule_id: str, text: str = "", mac: str = ""
    ) -> bool:
        """Add (or replace) or remove one rule with a new manifest, atomically; whether
        the set changed (a rule removed that was there)."""
        for _ in range(MAX_ATTEMPTS):
            floor = self._set.serial
            snapshot = await self._snapshot()
            _, serial, macs = self._set.checked(*snapshot, floor)
            if op == "add":
                macs[rule_id] = mac
            elif macs.pop(rule_id, None) is None:
                return False
            if await self._write(snapshot[0], serial + 1, macs, op, rule_id, text):
                return True
        raise self._busy()

    def _busy(self) -> RuleStoreError:
        return RuleStoreError(
            f"rule store postgres {self.table}: changed by other hosts {MAX_ATTEMPTS} times"
            " while this change was made",
            RULE_STORE_UNAVAILABLE,
        )

    async def _snapshot(self) -> _Snapshot:
        """The manifest and the rules, read by one statement (so of one moment)."""
        manifest: str | None = None
        stored: dict[str, str] = {}
        for rule_id, text in await self._tables.run(self._sql_snapshot):
            if rule_id is None:
                manifest = text
            else:
                stored[rule_id] = text
        return manifest, stored

    async def _write(  # noqa: PLR0917 - one function call's arguments
        self,
        expected: str | None,
        serial: int,
        macs: dict[str, str],
        op: str,
        rule_id: str = "",
        text: str = "",
    ) -> bool:
        manifest = self._set.manifest(serial, macs)
        rows = await self._tables.run(self._sql_change, [expected, manifest, op, rule_id, text])
        done = bool(rows[0][0])
        if done:
            self._set.wrote(serial)
        return done
