"""What the store contract files (``test_store_*_contract.py``) share: one test's place on
one engine's storage, where each file's builder makes the stores its contract runs on.

A place is a fresh Redis key prefix or Postgres schema (``space``) on the worker's server
(``url``, whose fixture starts it on first use). Every store made there is kept and closed
when the test ends; the first Postgres store made there migrates the schema, as a
deployment's ``migrate`` would before its first use.
"""

from __future__ import annotations

import json
import secrets
from typing import Protocol, TypeVar, runtime_checkable

import pytest

from .loopback import free_port
from .postgres_server import PostgresServer
from .redis_server import RedisServer


class Closable(Protocol):
    async def aclose(self) -> None: ...


@runtime_checkable
class Migrating(Protocol):
    async def migrate(self) -> None: ...


Store = TypeVar("Store", bound=Closable)


class Place:
    """A test's place of ``kind`` ("redis", "postgres", or a kind of the file's own that
    keeps its stores elsewhere, such as "memory")."""

    def __init__(self, kind: str, request: pytest.FixtureRequest) -> None:
        self.kind = kind
        self.request = request
        self.space = f"t{secrets.token_hex(6)}"
        self._made: list[Closable] = []
        self._migrated = False

    @property
    def url(self) -> str:
        """The worker's Redis or PostgreSQL server, started on first use."""
        if self.kind == "redis":
            server: RedisServer = self.request.getfixturevalue("redis_server")
            return server.url
        database: PostgresServer = self.request.getfixturevalue("postgres_server")
        return database.url

    def unreachable_url(self) -> str:
        """An address of this place's engine where no server listens."""
        if self.kind == "redis":
            return f"redis://127.0.0.1:{free_port()}/0"
        return f"postgresql://postgres@127.0.0.1:{free_port()}/db"

    async def keep(self, store: Store) -> Store:
        """``store``, closed when the test ends; the place's schema migrated first."""
        found: object = store  # (a Postgres store; mypy cannot narrow the TypeVar itself)
        if isinstance(found, Migrating) and not self._migrated:
            await found.migrate()
            self._migrated = True
        self._made.append(store)
        return store

    def spec(self, **more: str) -> str:
        """How another process finds this place (and ``more``), as JSON."""
        return json.dumps({"space": self.space, "url": self.url, **more})

    async def close(self) -> None:
        for store in self._made:
            await store.aclose()
