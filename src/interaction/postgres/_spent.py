"""A :class:`~interaction.spent.SpentStateStore` in PostgreSQL, shared by every worker and
surviving restarts: a spent nonce is one row of ``<schema>.spent``, inserted unless it is
there (``ON CONFLICT``), so of two workers redeeming one state at once exactly one wins."""

from __future__ import annotations

from ..spent import SpentStoreUnavailable
from ._nonces import CLOCK_SKEW, CONNECTIONS, PURGE_BATCH, NonceTable

__all__ = ["CLOCK_SKEW", "PURGE_BATCH", "PostgresSpentStore"]


class PostgresSpentStore(NonceTable):
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
        super().__init__(
            url,
            schema=schema,
            connections=connections,
            what="spent-state store",
            table="spent",
            function="spend",
            refused=SpentStoreUnavailable,
        )

    async def spend(self, nonce: str, expires_at: float) -> bool:
        return await self._add(nonce, expires_at)
