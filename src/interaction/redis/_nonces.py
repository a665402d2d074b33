"""What the Redis spent-state store and used-link store share: nonces as keys
``<prefix>:<nonce>``, each written once with ``SET NX`` and dropped by Redis past its
expiry (plus :data:`CLOCK_SKEW`)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Final

import redis.asyncio as aioredis
from redis.exceptions import RedisError

__all__ = ["CLOCK_SKEW", "NonceKeys"]

CLOCK_SKEW: Final = 60.0
"""Seconds a nonce is kept past its expiry, for workers whose clocks differ."""


class NonceKeys:
    """Nonces under ``prefix`` in the Redis at ``url``; ``what`` names the store in the
    message of the error ``failed`` makes of it (a store that cannot be reached)."""

    def __init__(
        self,
        url: str,
        *,
        prefix: str,
        timeout: float,
        what: str,
        failed: Callable[[str], Exception],
    ) -> None:
        if not prefix:
            raise ValueError("the prefix must be non-empty")
        if not (math.isfinite(timeout) and timeout > 0):
            raise ValueError("the timeout must be a positive number of seconds")
        # from_url raises ValueError for a URL that is not redis://, rediss:// or unix://.
        self._client = aioredis.Redis.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout
        )
        kwargs = self._client.connection_pool.connection_kwargs
        self.where = str(kwargs.get("path") or f"{kwargs.get('host')}:{kwargs.get('port')}")
        """Where the store is (host:port or socket path, never credentials), for messages."""
        self.prefix = prefix
        self._what = what
        self._failed = failed

    def _unusable(self, exc: RedisError) -> Exception:
        return self._failed(
            f"the {self._what} at {self.where} cannot be used: {type(exc).__name__}"
        )

    async def _add(self, nonce: str, expires_at: float) -> bool:
        """Record ``nonce``; whether it was not there."""
        ttl_ms = max(1, math.ceil((expires_at - time.time() + CLOCK_SKEW) * 1000))
        try:
            fresh = await self._client.set(f"{self.prefix}:{nonce}", b"1", nx=True, px=ttl_ms)
        except RedisError as exc:
            raise self._unusable(exc) from None
        return bool(fresh)

    async def _has(self, nonce: str) -> bool:
        """Whether ``nonce`` is recorded."""
        try:
            return bool(await self._client.exists(f"{self.prefix}:{nonce}"))
        except RedisError as exc:
            raise self._unusable(exc) from None

    async def aclose(self) -> None:
        """Close the store's connections (it reconnects if used again)."""
        await self._client.aclose()
