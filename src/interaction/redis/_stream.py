"""The Redis relay's view of the store: stream positions, replies as text, what
``XINFO STREAM`` tells, and the clients it talks through."""

from __future__ import annotations

import re
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Final, TypeVar

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from .._core import SURROGATE, UserInteractionError
from ..relay import RELAY_UNAVAILABLE

__all__ = [
    "StreamState",
    "call",
    "client",
    "entries",
    "key_of",
    "readable",
    "strings",
    "text",
    "unavailable",
]

_T = TypeVar("_T")
_POSITION: Final = re.compile(r"(\d{1,20})-(\d{1,20})")
CONNECTIONS: Final = 16


def key_of(position: str) -> tuple[int, int] | None:
    match = _POSITION.fullmatch(position)
    return None if match is None else (int(match[1]), int(match[2]))


def readable(value: str) -> bool:
    """Whether a reply's text was UTF-8 in the store. The clients decode with
    ``surrogateescape``, so other bytes arrive as lone surrogates (which no JSON encoder
    writes) instead of stopping the read that met them."""
    return value.isascii() or SURROGATE.search(value) is None


def text(value: object) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


def strings(value: object) -> list[str]:
    """A reply that is a flat array (of strings and integers) as strings."""
    assert isinstance(value, list)
    return [text(item) or "" for item in value]


def entries(value: object) -> list[tuple[str, dict[str, str]]]:
    """Stream entries (``XRANGE``, or one stream of an ``XREAD``) as ids and fields."""
    assert isinstance(value, list)
    found = []
    for entry_id, fields in value:
        assert isinstance(fields, dict)
        found.append(
            (text(entry_id) or "", {text(k) or "": text(v) or "" for k, v in fields.items()})
        )
    return found


def unavailable(where: str, exc: BaseException) -> UserInteractionError:
    return UserInteractionError(
        f"the relay's store at {where} cannot be used: {exc}", RELAY_UNAVAILABLE
    )


async def call(where: str, awaitable: Awaitable[_T]) -> _T:
    """Await a command; a failure of the store is ``RELAY_UNAVAILABLE``."""
    try:
        return await awaitable
    except (RedisError, OSError) as exc:
        raise unavailable(where, exc) from None


@dataclass(frozen=True, slots=True)
class StreamState:
    """What ``XINFO STREAM`` tells: the last id, the first id kept, and whether any entry
    was ever trimmed away (``max-deleted-entry-id`` does not count trims on Redis 7.0)."""

    last: tuple[int, int] = (0, 0)
    first: tuple[int, int] = (0, 0)
    trimmed: bool = False

    @classmethod
    def of(cls, info: object) -> StreamState:
        assert isinstance(info, dict)
        last = key_of(text(info.get("last-generated-id")) or "0-0") or (0, 0)
        entry = info.get("first-entry")
        first = key_of(text(entry[0]) or "") if isinstance(entry, list | tuple) else None
        added, length = info.get("entries-added"), info.get("length")
        trimmed = added is None or length is None or int(added) > int(length)
        return cls(last, first or last, trimmed)

    def lost_after(self, key: tuple[int, int]) -> bool:
        """Whether entries after ``key`` may have been trimmed (an entry at or before it
        was, so what followed it may be gone too)."""
        return self.trimmed and key < self.first


def client(url: str, timeout: float, *, single: bool = False) -> aioredis.Redis:
    """A client that fails at once when the store is away, and reads any bytes; ``single``:
    one connection of its own, held (``single_connection_client``).

    One immediate retry on a connection error: after the server restarted, a pooled
    connection is dead and the retry takes a fresh one. The scripts are safe to run twice
    (an ask by its id, a settle by its claim token).
    """
    # A bounded pool that makes a burst of asks wait for a connection, not fail: the wait
    # has no limit of its own (as the Postgres relay's), since a busy process is not a
    # store that cannot be used; a store that is away fails each command at once, or
    # after ``timeout`` on the socket.
    pool = aioredis.BlockingConnectionPool.from_url(
        url,
        max_connections=CONNECTIONS,
        timeout=None,
        decode_responses=True,
        encoding_errors="surrogateescape",
        socket_timeout=timeout,
        socket_connect_timeout=2.0,
        retry=Retry(NoBackoff(), 1),
    )
    return aioredis.Redis(connection_pool=pool, single_connection_client=single)
