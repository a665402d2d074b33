"""What the PostgreSQL spent-state store and used-link store share: nonces as rows of one
table, each inserted unless it is there (``ON CONFLICT``) and kept until its expiry plus
:data:`CLOCK_SKEW` by the database's clock; each insert first deletes a bounded batch of
rows past theirs, so the table holds about the nonces still live."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from ._tables import CONNECTIONS, Tables, why

__all__ = ["CLOCK_SKEW", "CONNECTIONS", "PURGE_BATCH", "NonceTable"]

CLOCK_SKEW: Final = 60.0
"""Seconds a nonce is kept past its expiry, for workers whose clocks differ from the
database's."""
PURGE_BATCH: Final = 100
"""How many expired nonces each insert forgets at most."""


class NonceTable:
    """Nonces in ``<schema>.<table>`` of the database at ``url``, recorded by the schema's
    function ``function``; ``what`` names the store in messages, ``refused`` makes its
    error of a message (the database could not be used, or its tables are missing)."""

    def __init__(
        self,
        url: str,
        *,
        schema: str,
        connections: int,
        what: str,
        table: str,
        function: str,
        refused: Callable[[str], Exception],
    ) -> None:
        self._refused = refused
        self._what = what
        self._tables = Tables(url, schema, connections, what, table, self._failed, refused)
        self.where = self._tables.where
        """Where the database is (host:port/dbname, never credentials), for messages."""
        self._sql_add = self._tables.sql(f"SELECT {{s}}.{function}(%s, %s, %s)")
        self._sql_has = self._tables.sql(
            f"SELECT EXISTS (SELECT 1 FROM {{s}}.{table} WHERE nonce = %s)"
        )

    def _failed(self, where: str, exc: BaseException) -> Exception:
        return self._refused(f"the {self._what} at {where} cannot be used: {why(exc)}")

    async def migrate(self) -> None:
        """Create (or bring up to date) the schema's tables: the relay's and every store's."""
        await self._tables.migrate()

    async def aclose(self) -> None:
        """Close the store's connections (a later call opens new ones)."""
        await self._tables.close()

    async def _add(self, nonce: str, expires_at: float) -> bool:
        """Record ``nonce``; whether it was not there (or its row had expired)."""
        rows = await self._tables.run(self._sql_add, [nonce, expires_at + CLOCK_SKEW, PURGE_BATCH])
        return bool(rows[0][0])

    async def _has(self, nonce: str) -> bool:
        """Whether ``nonce`` is recorded."""
        rows = await self._tables.run(self._sql_has, [nonce])
        return bool(rows[0][0])
