"""What the PostgreSQL stores share: the relay's connections, its ``migrate()``, and the
check, once per store, that the schema holds the store's table."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Final

from ._schema import VERSION, check_schema
from ._store import Connections, Row, describe, migrate, newer

__all__ = ["CONNECTIONS", "Tables", "why"]

CONNECTIONS: Final = 4
"""A store's connections by default: each change is one or two short statements."""


def why(exc: BaseException) -> str:
    """The first line of what a driver said, or the error's type."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class Tables:
    """One store's way to its tables in ``schema`` of the database at ``url``.

    ``what`` names the store in messages (``rule store``); ``table`` is the table it needs;
    ``failed`` makes its error of a database that cannot be reached or used, ``refuse`` of
    a message (the tables missing, of a newer version, a database that is not UTF-8).
    """

    def __init__(  # noqa: PLR0917 - a store's every detail, passed on once
        self,
        url: str,
        schema: str,
        connections: int,
        what: str,
        table: str,
        failed: Callable[[str, BaseException], Exception],
        refuse: Callable[[str], Exception],
    ) -> None:
        check_schema(schema)
        if connections < 1:
            raise ValueError("connections must be at least 1")
        self.where = describe(url)
        """Where the database is (host:port/dbname, never credentials), for messages."""
        self.schema = schema
        self.what = what
        self.table = table
        self._refuse = refuse
        self._db = Connections(
            url,
            self.where,
            connections,
            failed=lambda exc: failed(self.where, exc),
            name=f"interaction-{what.replace(' ', '-')}",
        )
        self._ready = False
        self._checking = asyncio.Lock()

    def sql(self, text: str) -> str:
        """``text`` with ``{s}`` as the quoted schema."""
        return text.replace("{s}", f'"{self.schema}"')

    async def migrate(self) -> None:
        """Create (or bring up to date) the schema's tables, the relay's and every store's."""
        await migrate(self._db, self.schema, self.what, self._refuse)
        self._ready = False  # checked again on the next use

    async def run(self, query: str, params: Sequence[object] = ()) -> list[Row]:
        """The rows of one statement, once the tables are known to be there."""
        if not self._ready:
            async with self._checking:
                if not self._ready:
                    await self._check()
                    self._ready = True
        return await self._db.run(query, params)

    async def _check(self) -> None:
        meta, own = (
            await self._db.run(
                "SELECT to_regclass(%s) IS NOT NULL, to_regclass(%s) IS NOT NULL",
                [f'"{self.schema}".meta', f'"{self.schema}".{self.table}'],
            )
        )[0]
        if not (meta and own):
            raise self._refuse(
                f"the {self.what}'s tables are not in the database at {self.where} (schema"
                f" {self.schema!r}): run `await store.migrate()` (or `interaction serve"
                " --postgres URL --migrate`) once"
            )
        for (version,) in await self._db.run(self.sql("SELECT version FROM {s}.meta")):
            if version > VERSION:
                raise self._refuse(newer(self.where, self.schema, self.what, version))

    async def close(self) -> None:
        """Close the connections (a later call opens new ones)."""
        await self._db.close()
