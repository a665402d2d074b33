"""The audit trail in a Redis Stream, shared by every host (extra ``[redis]``).

Records go to the stream ``PREFIX:audit`` as entries with one field, ``record`` (the
record's canonical JSON). ``PREFIX:audit:head`` holds the last record's ``seq`` and
digest; a Lua script appends only if the head is still the one the record was chained
to, so hosts appending at once each retry on the new head and the chain stays one line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from ..audit import AUDIT_FAILED, GENESIS, AuditLogError, AuditRecord, chained

__all__ = ["RedisAuditLog"]

_PREFIX: Final = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
_HEAD: Final = re.compile(rb"(\d{1,18}) ([0-9a-f]{64})")
MAX_TRIES: Final = 1000
_APPEND: Final = """
local head = redis.call('GET', KEYS[2])
if (head or '') ~= ARGV[1] then return 0 end
redis.call('XADD', KEYS[1], '*', 'record', ARGV[3])
redis.call('SET', KEYS[2], ARGV[2])
return 1
"""


class RedisAuditLog:
    """An :class:`~interaction.audit.AuditLog` in a Redis Stream at ``url`` (or a client).

    ``key`` makes each digest an HMAC (give the same key to ``verify``).
    """

    def __init__(
        self, redis: str | aioredis.Redis, *, prefix: str = "interaction", key: bytes | None = None
    ) -> None:
        if not _PREFIX.fullmatch(prefix):
            raise ValueError("the prefix is 1-64 letters, digits, or _ . : -")
        self._redis = aioredis.Redis.from_url(redis) if isinstance(redis, str) else redis
        self._owned = isinstance(redis, str)
        self._key = key
        self.stream = f"{prefix}:audit"
        self.head = f"{prefix}:audit:head"
        self._append = self._redis.register_script(_APPEND)

    async def aclose(self) -> None:
        """Close the client this log made from a URL (not one it was given)."""
        if self._owned:
            await self._redis.aclose()

    def _failed(self, exc: Exception) -> AuditLogError:
        return AuditLogError(
            f"audit log redis {self.stream}: cannot be reached ({type(exc).__name__})",
            AUDIT_FAILED,
        )

    async def append(self, body: Mapping[str, object]) -> AuditRecord:
        try:
            for _ in range(MAX_TRIES):
                stored = await self._redis.get(self.head)
                head = stored.encode() if isinstance(stored, str) else stored
                seq, prev = 0, GENESIS
                if head is not None:
                    found = _HEAD.fullmatch(head)
                    if found is None:
                        raise AuditLogError(
                            f"audit log redis {self.head}: is not a head (seq and digest)",
                            AUDIT_FAILED,
                        )
                    seq, prev = int(found[1]), found[2].decode()
                record, line = chained(body, seq + 1, prev, self._key)
                new_head = f"{seq + 1} {record['digest']}"
                done = await self._append(
                    keys=[self.stream, self.head],
                    args=[head or b"", new_head, line[:-1]],
                )
                if done:
                    return record
        except (RedisError, OSError) as exc:
            raise self._failed(exc) from None
        raise AuditLogError(
            f"audit log redis {self.stream}: {MAX_TRIES} appends lost the race", AUDIT_FAILED
        )

    async def read_all(self, batch: int = 1000) -> list[tuple[str, bytes]]:
        """Every record's line, oldest first, with its stream entry id."""
        lines: list[tuple[str, bytes]] = []
        start = "-"
        try:
            while True:
                entries = await self._redis.xrange(self.stream, start, "+", count=batch) or []
                last = ""
                for entry_id, fields in entries:
                    last = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
                    value = (fields or {}).get(b"record", b"")
                    line = value if isinstance(value, bytes) else str(value).encode()
                    lines.append((f"{self.stream}#{last}", line))
                if len(entries) < batch:
                    return lines
                start = "(" + last
        except (RedisError, OSError) as exc:
            raise self._failed(exc) from None
