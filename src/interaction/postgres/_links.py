"""A :class:`~interaction.signing.UsedLinkStore` in PostgreSQL, shared by every worker and
surviving restarts: a used answer link's nonce is one row of ``<schema>.used_links``,
inserted unless it is there, so of two workers redeeming one link at once exactly one wins."""

from __future__ import annotations

from .._core import UserInteractionError
from ..signing import LINK_STORE_UNAVAILABLE
from ._nonces import CONNECTIONS, NonceTable

__all__ = ["PostgresUsedLinks"]


def _unavailable(message: str) -> UserInteractionError:
    return UserInteractionError(message, LINK_STORE_UNAVAILABLE)


class PostgresUsedLinks(NonceTable):
    """Used answer links in the PostgreSQL database at ``url``.

    A row lives until its link's expiry plus a minute by the database's clock. Every
    worker uses the same ``url`` and ``schema`` (the relay's; :meth:`migrate` creates the
    tables once), and :class:`~interaction.signing.AnswerLinks` with the same secret. A
    store that cannot be reached raises
    :data:`~interaction.signing.LINK_STORE_UNAVAILABLE`, and the link is refused.
    """

    def __init__(
        self, url: str, *, schema: str = "interaction", connections: int = CONNECTIONS
    ) -> None:
        super().__init__(
            url,
            schema=schema,
            connections=connections,
            what="used-link store",
            table="used_links",
            function="use_link",
            refused=_unavailable,
        )

    async def used(self, nonce: str) -> bool:
        return await self._has(nonce)

    async def use(self, nonce: str, expires_at: float) -> bool:
        return await self._add(nonce, expires_at)
