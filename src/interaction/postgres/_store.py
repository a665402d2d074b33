"""The Postgres relay's connections: a small bounded pool that fails at once when the
database is away, and the one way a statement is run (a failure is ``RELAY_UNAVAILABLE``,
or the error a store of :mod:`interaction.postgres` names); and :func:`migrate`, which
creates the schema's tables for the relay and every store."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Final

import psycopg
from psycopg import conninfo as _conninfo

from .._core import UserInteractionError
from ..relay import RELAY_UNAVAILABLE
from . import _schema

__all__ = ["Connections", "Row", "describe", "migrate", "newer", "unavailable"]

Row = tuple[Any, ...]
CONNECT_SECONDS: Final = 2


def describe(url: str) -> str:
    """Where the database is (host:port/dbname or a socket folder), never credentials;
    ``ValueError`` for something that is no PostgreSQL URL or connection string."""
    try:
        parts = _conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise ValueError(str(exc).strip()) from None
    host = str(parts.get("host") or "localhost")
    return f"{host}:{parts.get('port') or 5432}/{parts.get('dbname') or parts.get('user') or ''}"


def unavailable(where: str, exc: BaseException) -> UserInteractionError:
    why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return UserInteractionError(
        f"the relay's store at {where} cannot be used: {why}", RELAY_UNAVAILABLE
    )


class Connections:
    """Up to ``size`` connections (autocommit, no prepared statements, so a transaction-
    pooling PgBouncer can stand between), opened on demand and kept while they work.

    Unlike ``psycopg_pool``, which waits out its timeout for a connection while the
    database is away, a call here fails at once, so the relay says ``RELAY_UNAVAILABLE``
    as the Redis relay does. A call that fails on a kept connection (the server restarted
    since) is tried once more on a new one: every function the relay calls is safe to run
    twice (an ask by its id, a settle by its claim; a store's every statement too).

    ``failed`` makes the error a statement that cannot be run raises (by default the
    relay's ``RELAY_UNAVAILABLE``); ``name`` is the connections' ``application_name``.
    """

    def __init__(
        self,
        url: str,
        where: str,
        size: int,
        *,
        failed: Callable[[BaseException], Exception] | None = None,
        name: str = "interaction-relay",
    ) -> None:
        self._url = url
        self._where = where
        self._failed = failed or (lambda exc: unavailable(where, exc))
        self._name = name
        self._idle: list[psycopg.AsyncConnection[Row]] = []
        self._slots = asyncio.Semaphore(size)

    async def open(self) -> psycopg.AsyncConnection[Row]:
        """A new connection of the relay's kind (also for ``LISTEN``)."""
        return await psycopg.AsyncConnection.connect(
            self._url,
            autocommit=True,
            prepare_threshold=None,
            connect_timeout=CONNECT_SECONDS,
            application_name=self._name,
        )

    @contextlib.asynccontextmanager
    async def _connection(self, *, fresh: bool) -> AsyncIterator[psycopg.AsyncConnection[Row]]:
        async with self._slots:
            connection = None if fresh or not self._idle else self._idle.pop()
            if connection is None:
                connection = await self.open()
            try:
                yield connection
            except BaseException:
                # Broken, or left mid-statement by a cancellation: never reused.
                with contextlib.suppress(psycopg.Error, OSError):
                    await connection.close()
                raise
            if connection.closed or connection.broken:
                return
            self._idle.append(connection)

    async def run(self, query: str, params: Sequence[object] = ()) -> list[Row]:
        """The rows of one statement (its own transaction); ``failed``'s error when it
        cannot be run."""
        kept = bool(self._idle)
        try:
            return await self._run(query, params, fresh=False)
        except (psycopg.OperationalError, psycopg.InterfaceError, OSError) as exc:
            if not kept:
                raise self._failed(exc) from None
        except psycopg.Error as exc:
            raise self._failed(exc) from None
        try:  # the kept connection was dead: once more, on a new one
            return await self._run(query, params, fresh=True)
        except (psycopg.Error, OSError) as exc:
            raise self._failed(exc) from None

    async def _run(self, query: str, params: Sequence[object], *, fresh: bool) -> list[Row]:
        async with self._connection(fresh=fresh) as connection:
            cursor = await connection.execute(query, params)
            return await cursor.fetchall() if cursor.description else []

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            with contextlib.suppress(psycopg.Error, OSError):
                await connection.close()


def newer(where: str, schema: str, what: str, version: int) -> str:
    """The message of tables of a newer version than this package writes."""
    return (
        f"the {what}'s tables at {where} (schema {schema!r}) are at version"
        f" {version}, newer than this {what}'s {_schema.VERSION}: upgrade interaction-seam"
    )


async def migrate(
    connections: Connections, schema: str, what: str, refuse: Callable[[str], Exception]
) -> None:
    """Create (or bring up to date) ``schema``'s tables and functions, the relay's and
    every store's, and record its version; safe to run again, and from several processes
    at once (they take turns on an advisory lock). ``what`` names the caller in the
    messages that ``refuse`` makes its error of: a database that is not UTF-8, or tables
    of a newer version; a database that cannot be reached is ``failed``'s error."""
    where = connections._where
    try:
        connection = await connections.open()
    except (psycopg.Error, OSError) as exc:
        raise connections._failed(exc) from None
    try:
        encoding = await (await connection.execute("SHOW server_encoding")).fetchone()
        if encoding is None or encoding[0] != "UTF8":
            raise refuse(
                f"the database at {where} is not UTF-8 (its encoding is"
                f" {encoding and encoding[0]}): the {what} needs a UTF8 database"
            )
        async with connection.transaction():
            await connection.execute(
                "SELECT pg_advisory_xact_lock(hashtext(%s))", [f"interaction:{schema}"]
            )
            found = await (
                await connection.execute(
                    "SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = 'meta'",
                    [schema],
                )
            ).fetchall()
            if found:  # the meta row first, as every function takes it: a relay running
                # beside this (a heartbeat holds the row, then touches the questions) would
                # otherwise deadlock with the table locks of the DDL below
                row = await (
                    await connection.execute(f'SELECT version FROM "{schema}".meta FOR UPDATE')
                ).fetchone()
                if row is not None and row[0] > _schema.VERSION:
                    raise refuse(newer(where, schema, what, row[0]))
            for statement in _schema.statements(schema):
                await connection.execute(statement)
            await connection.execute(
                f'INSERT INTO "{schema}".meta (version, epoch) VALUES (%s, %s)'
                " ON CONFLICT (one) DO UPDATE SET version = excluded.version",
                [_schema.VERSION, secrets.token_urlsafe(6)],
            )
            key = secrets.token_bytes(64)
            await connection.execute(
                f'INSERT INTO "{schema}".announce_key (inner_pad, outer_pad) VALUES (%s, %s)'
                " ON CONFLICT (one) DO NOTHING",
                [bytes(b ^ 0x36 for b in key), bytes(b ^ 0x5C for b in key)],
            )
    except (psycopg.Error, OSError) as exc:
        raise connections._failed(exc) from None
    finally:
        with contextlib.suppress(psycopg.Error, OSError):
            await connection.close()
