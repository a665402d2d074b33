"""Web Push subscriptions in Redis, shared by every host on the store.

One hash, ``PREFIX:push``, maps each subscription's endpoint to its JSON
(:meth:`~interaction.push.PushSubscription.to_json`): adding is one ``HSET``, so a device
that subscribes again replaces its entry, and removing one ``HDEL``, so of two hosts
removing a gone endpoint at once exactly one is told it was there.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Final

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from .._core import UserInteractionError
from ..push import PushStoreUnavailable, PushSubscription

__all__ = ["RedisPushSubscriptionStore"]

log: Final = logging.getLogger("interaction.push")
_PREFIX: Final = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


class RedisPushSubscriptionStore:
    """A :class:`~interaction.push.PushSubscriptionStore` in Redis at ``redis`` (a URL or a
    client), under the relay's ``prefix``. An entry that is not a subscription (written by
    another hand) is left out of :meth:`subscriptions`, with a warning that names its
    place; a store that cannot be reached raises
    :class:`~interaction.push.PushStoreUnavailable`."""

    def __init__(self, redis: str | aioredis.Redis, *, prefix: str = "interaction") -> None:
        if not _PREFIX.fullmatch(prefix):
            raise ValueError("the prefix is 1-64 letters, digits, or _ . : -")
        self._redis = aioredis.Redis.from_url(redis) if isinstance(redis, str) else redis
        self._owned = isinstance(redis, str)
        self.hash = f"{prefix}:push"

    async def aclose(self) -> None:
        """Close the client this store made from a URL (not one it was given)."""
        if self._owned:
            await self._redis.aclose()

    def _unavailable(self, exc: Exception) -> PushStoreUnavailable:
        return PushStoreUnavailable(
            f"push subscription store redis {self.hash}: cannot be reached ({type(exc).__name__})"
        )

    async def add(self, subscription: PushSubscription) -> None:
        try:
            await self._redis.hset(self.hash, subscription.endpoint, subscription.to_json())
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from None

    async def subscriptions(self) -> Sequence[PushSubscription]:
        try:
            raw = await self._redis.hgetall(self.hash)
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from None
        found = []
        for field, value in raw.items():
            try:
                found.append(PushSubscription.from_json(value))
            except UserInteractionError as error:
                log.warning("push: redis %s[%r] left out: %s", self.hash, field[:80], error.message)
        return found

    async def remove(self, endpoint: str) -> bool:
        try:
            return bool(await self._redis.hdel(self.hash, endpoint))
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from None
