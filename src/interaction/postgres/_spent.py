"""A :class:`~interaction.spent.SpentStateStore` in PostgreSQL, shared by every worker and
surviving restarts: a spent nonce is one row of ``<schema>.spent``, inserted unless it is
there (``ON CONFLICT``), so of two workers redeeming one state at once exactly one wins."""

from __future__ import annotations

from typing import Final

from ..spent import SpentStoreUnavailable
from ._tables import CONNECTIONS, Tables, why

__all__ = ["CLOCK_SKEW", "PURGE_BATCH", "PostgresSpentStore"]

CLOCK_SKEW: Final = 60.0
"""Seconds a spent nonce is kept past its state's expiry, for workers whose clocks differ
from the database's."""
PURGE_BATCH: Final = 100
"""How many expired nonces each spend forgets at most."""


class PostgresSpentStore:
    """Spent nonces in the PostgreSQL database at ``url``.

    A row lives until its state's expiry plus :data:`CLOCK_SKEW` by the database's clock;
    each spend first deletes a bounded batch of rows past theirs, so the table holds about
    the states still live. Every worker of a deployment uses the same ``url`` and
    ``schema`` (the relay's, ``interaction`` by default: :meth:`migrate` creates the
    tables once). A store that cannot be reached raises :class:`SpentStoreUnavailable`,
    and the bridge refuses the state: it never redeems a state it could not record.
    """

    def __init__(
        self, url: str, *, schema: str = "interaction", connections: int = CONNECTIONS
    ) -> None:
        self._tables = Tables(
            url, schema, connections, "spent-state store", "spent", self._failed, self._refused
        )
        self.where = self._tables.where
        """Where the database is (host:port/dbname, never credentials), for messages."""
        self._sql_spend = self._tables.sql("SELECT {s}.spend(%s, %s, %s)")

    def _failed(self, where: str, exc: BaseException) -> SpentStoreUnavailable:
        return SpentStoreUnavailable(f"the spent-state store at {where} cannot be used: {why(exc)}")

    def _refused(self, message: str) -> SpentStoreUnavailable:
        return SpentStoreUnavailable(message)

    async def migrate(self) -> None:
        """Create (or bring up to date) the schema's tables: the relay's and every store's."""
        await self._tables.migrate()

    async def aclose(self) -> None:
        """Close the store's connections (a later call opens new ones)."""
        await self._tables.close()

    async def spend(self, nonce: str, expires_at: float) -> bool:
        rows = await self._tables.run(
            self._sql_spend, [nonce, expires_at + CLOCK_SKEW, PURGE_BATCH]
        )
        return bool(rows[0][0])
