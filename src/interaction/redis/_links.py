"""A :class:`~interaction.signing.UsedLinkStore` on Redis, shared by every worker and
surviving restarts: a used answer link's nonce is one key, written with ``SET NX``."""

from __future__ import annotations

from .._core import UserInteractionError
from ..signing import LINK_STORE_UNAVAILABLE
from ._nonces import NonceKeys

__all__ = ["RedisUsedLinks"]


def _unavailable(message: str) -> UserInteractionError:
    return UserInteractionError(message, LINK_STORE_UNAVAILABLE)


class RedisUsedLinks(NonceKeys):
    """Used answer links in Redis (or Valkey): ``SET <prefix>:<nonce> 1 NX PX <ms>``.

    Of two workers redeeming one link at once exactly one wins. A key lives until its
    link's expiry plus a minute (for clocks that differ), then Redis drops it. Every
    worker uses the same ``url`` and ``prefix``, and :class:`~interaction.signing.AnswerLinks`
    with the same secret. A store that cannot be reached raises
    :data:`~interaction.signing.LINK_STORE_UNAVAILABLE`, and the link is refused.
    """

    def __init__(
        self, url: str, *, prefix: str = "interaction:links:used", timeout: float = 5.0
    ) -> None:
        super().__init__(
            url, prefix=prefix, timeout=timeout, what="used-link store", failed=_unavailable
        )

    async def used(self, nonce: str) -> bool:
        return await self._has(nonce)

    async def use(self, nonce: str, expires_at: float) -> bool:
        return await self._add(nonce, expires_at)
