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

from typing import Final

from .._rule_manifest import MAX_ATTEMPTS, ManifestRuleStore, SignedSet, Snapshot
from ..policies import RULE_STORE_UNAVAILABLE, RuleStoreError
from ._tables import CONNECTIONS, Tables, why

__all__ = ["MAX_ATTEMPTS", "MIN_KEY_BYTES", "PostgresRuleStore"]

MIN_KEY_BYTES: Final = 16


class PostgresRuleStore(ManifestRuleStore):
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

    async def _snapshot(self) -> Snapshot:
        """The manifest and the rules, read by one statement (so of one moment)."""
        manifest: str | None = None
        stored: dict[str, str] = {}
        for rule_id, text in await self._tables.run(self._sql_snapshot):
            if rule_id is None:
                manifest = text
            else:
                stored[rule_id] = text
        return manifest, stored

    async def _change(
        self,
        expected: str | bytes | None,
        manifest: str,
        op: str,
        rule_id: str,
        text: str,
    ) -> bool:
        rows = await self._tables.run(self._sql_change, [expected, manifest, op, rule_id, text])
        return bool(rows[0][0])
