"""Web Push subscriptions in PostgreSQL, shared by every host on the database and schema:
one row of ``<schema>.push_subscriptions`` per endpoint, written with ``ON CONFLICT``, so a
device that subscribes again replaces its row."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final

from .._core import UserInteractionError
from ..push import PushStoreUnavailable, PushSubscription
from ._tables import CONNECTIONS, Tables, why

__all__ = ["PostgresPushSubscriptionStore"]

log: Final = logging.getLogger("interaction.push")


class PostgresPushSubscriptionStore:
    """A :class:`~interaction.push.PushSubscriptionStore` in the PostgreSQL database at
    ``url``, in the relay's ``schema`` (``interaction`` by default: :meth:`migrate` creates
    the tables once). A row that is not a subscription (written by another hand) is left
    out of :meth:`subscriptions`, with a warning; a database that cannot be reached raises
    :class:`~interaction.push.PushStoreUnavailable`."""

    def __init__(
        self, url: str, *, schema: str = "interaction", connections: int = CONNECTIONS
    ) -> None:
        self._tables = Tables(
            url,
            schema,
            connections,
            "push subscription store",
            "push_subscriptions",
            self._failed,
            PushStoreUnavailable,
        )
        self.where = self._tables.where
        """Where the database is (host:port/dbname, never credentials), for messages."""
        self.table = f"{schema}.push_subscriptions"
        self._sql_add = self._tables.sql(
            "INSERT INTO {s}.push_subscriptions (endpoint, subscription) VALUES (%s, %s)"
            " ON CONFLICT (endpoint) DO UPDATE SET subscription = excluded.subscription"
        )
        self._sql_all = self._tables.sql(
            "SELECT endpoint, subscription FROM {s}.push_subscriptions"
        )
        self._sql_remove = self._tables.sql(
            "DELETE FROM {s}.push_subscriptions WHERE endpoint = %s RETURNING 1"
        )

    def _failed(self, where: str, exc: BaseException) -> PushStoreUnavailable:
        return PushStoreUnavailable(
            f"push subscription store postgres {where} {self.table}: cannot be reached ({why(exc)})"
        )

    async def migrate(self) -> None:
        """Create (or bring up to date) the schema's tables: the relay's and every store's."""
        await self._tables.migrate()

    async def aclose(self) -> None:
        """Close the store's connections (a later call opens new ones)."""
        await self._tables.close()

    async def add(self, subscription: PushSubscription) -> None:
        await self._tables.run(self._sql_add, [subscription.endpoint, subscription.to_json()])

    async def subscriptions(self) -> Sequence[PushSubscription]:
        found = []
        for endpoint, text in await self._tables.run(self._sql_all):
            try:
                found.append(PushSubscription.from_json(text))
            except UserInteractionError as error:
                log.warning(
                    "push: postgres %s[%r] left out: %s", self.table, endpoint[:80], error.message
                )
        return found

    async def remove(self, endpoint: str) -> bool:
        return bool(await self._tables.run(self._sql_remove, [endpoint]))
