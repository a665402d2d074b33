"""A :class:`~interaction.spent.SpentStateStore` on Redis (extra ``[redis]``), shared by every
worker and surviving restarts: a spent nonce is one key, written with ``SET NX``. The MCP
bridge (``interaction.mcp.RedisSpentStore``) and the AG-UI endpoint use it."""

from __future__ import annotations

from ..spent import SpentStoreUnavailable
from ._nonces import CLOCK_SKEW, NonceKeys

__all__ = ["CLOCK_SKEW", "RedisSpentStore"]


class RedisSpentStore(NonceKeys):
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
        super().__init__(
            url,
            prefix=prefix,
            timeout=timeout,
            what="spent-state store",
            failed=SpentStoreUnavailable,
        )

    async def spend(self, nonce: str, expires_at: float) -> bool:
        return await self._add(nonce, expires_at)
