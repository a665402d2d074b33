"""The audit trail in PostgreSQL, shared by every host on the database and schema.

Each record is one row of ``<schema>.audit``: its ``seq`` (the primary key), its digest
and its line (the record's canonical JSON). An append reads the last row, chains the
record after it and inserts it only if no row holds its ``seq`` yet; a host that lost the
race to another chains after the new last row, so hosts appending at once keep one chain.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from ..audit import AUDIT_FAILED, GENESIS, AuditLogError, AuditRecord, chained
from ._tables import CONNECTIONS, Tables, why

__all__ = ["MAX_TRIES", "PostgresAuditLog"]

MAX_TRIES: Final = 1000
"""How often an append chains its record again after other hosts appended first."""


class PostgresAuditLog:
    """An :class:`~interaction.audit.AuditLog` in the PostgreSQL database at ``url``.

    ``key`` makes each digest an HMAC (give the same key to ``verify``). A database that
    cannot be reached fails the append with ``AUDIT_FAILED``. ``schema`` is the relay's
    (``interaction`` by default): :meth:`migrate` creates the tables once.
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str = "interaction",
        key: bytes | None = None,
        connections: int = CONNECTIONS,
    ) -> None:
        self._tables = Tables(
            url, schema, connections, "audit log", "audit", self._failed, self._refused
        )
        self.where = self._tables.where
        """Where the database is (host:port/dbname, never credentials), for messages."""
        self.table = f"{schema}.audit"
        self._key = key
        self._sql_head = self._tables.sql(
            "SELECT seq, digest FROM {s}.audit ORDER BY seq DESC LIMIT 1"
        )
        self._sql_insert = self._tables.sql(
            "INSERT INTO {s}.audit (seq, digest, record) VALUES (%s, %s, %s)"
            " ON CONFLICT (seq) DO NOTHING RETURNING seq"
        )
        self._sql_read = self._tables.sql(
            "SELECT seq, record FROM {s}.audit WHERE seq > %s ORDER BY seq LIMIT %s"
        )

    def _failed(self, where: str, exc: BaseException) -> AuditLogError:
        return AuditLogError(
            f"audit log postgres {where} {self.table}: cannot be reached ({why(exc)})",
            AUDIT_FAILED,
        )

    def _refused(self, message: str) -> AuditLogError:
        return AuditLogError(message, AUDIT_FAILED)

    async def migrate(self) -> None:
        """Create (or bring up to date) the schema's tables: the relay's and every store's."""
        await self._tables.migrate()

    async def aclose(self) -> None:
        """Close the log's connections (a later call opens new ones)."""
        await self._tables.close()

    async def append(self, body: Mapping[str, object]) -> AuditRecord:
        for _ in range(MAX_TRIES):
            seq, prev = 0, GENESIS
            for last, digest in await self._tables.run(self._sql_head):
                seq, prev = last, digest
            record, line = chained(body, seq + 1, prev, self._key)
            params = [seq + 1, record["digest"], line[:-1].decode()]
            if await self._tables.run(self._sql_insert, params):
                return record
        raise AuditLogError(
            f"audit log postgres {self.table}: {MAX_TRIES} appends lost the race", AUDIT_FAILED
        )

    async def read_all(self, batch: int = 1000) -> list[tuple[str, bytes]]:
        """Every record's line, oldest first, with where it is (``schema.audit#seq``)."""
        lines: list[tuple[str, bytes]] = []
        after = 0
        while True:
            rows = await self._tables.run(self._sql_read, [after, batch])
            for seq, record in rows:
                lines.append((f"{self.table}#{seq}", record.encode()))
                after = seq
            if len(rows) < batch:
                return lines
