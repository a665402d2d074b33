"""A :class:`~interaction.spent.SpentStateStore` on Redis (extra ``[redis]``), shared by every
worker and surviving restarts: a spent nonce is one key, written with ``SET NX``. The MCP
bridge (``interaction.mcp.RedisSpentStore``) and the AG-UI endpoint use it."""

from __future__ import annotations

import math
import time
from typing import Final

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from ..spent import SpentStoreUnavailable

__all__ = ["CLOCK_SKEW", "RedisSpentStore"]

CLOCK_SKEW: Final = 60.0
"""Seconds a spent nonce is kept past its state's expiry, for workers whose clocks differ."""


class RedisSpentStore:
    """Spent nonces in Redis (or Valkey): ``SET <prefix>:<nonce> 1 NX PX <ms>``.

    ``SET NX`` is atomic in the server, so of two workers redeeming one state at once
    exactly one wins. A key lives until its state's expiry plus :data:`CLOCK_SKEW`, then
    Redis drops it; the bridge refuses expired states before it asks. Every worker of a
    deployment uses the same ``url`` and ``prefix``. A store that cannot be reached raises
    :class:`SpentStoreUnavailable`, and the bridge refuses the state: it never redeems a
    state it could not record. The store is reached on first use; :meth:`aclose` closes
    its connections.
    """

    def __init__(
        self, url: str, *, prefix: str = "interaction:mcp:spent", timeout: float = 5.0
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

    async def spend(self, nonce: str, expires_at: float) -> bool:
        ttl_ms = max(1, math.ceil((expires_at - time.time() + CLOCK_SKEW) * 1000))
        try:
            fresh = await self._client.set(f"{self.prefix}:{nonce}", b"1", nx=True, px=ttl_ms)
        except RedisError as exc:
            raise SpentStoreUnavailable(
                f"the spent-state store at {self.where} cannot be used: {type(exc).__name__}"
            ) from None
        return bool(fresh)

    async def aclose(self) -> None:
        """Close the store's connections (it reconnects if used again)."""
        await self._client.aclose()
