"""Policy rules in Redis, shared by every host on the store (extra ``[redis]``).

One hash, ``PREFIX:rules``, maps each rule id to the rule's JSON with its HMAC-SHA256
under the store's key: whoever can write to Redis but does not hold the key cannot add a
rule, or change one, without the store refusing it as corrupt. Revoking is ``HDEL``, and
taking a ``once`` rule is an ``HDEL`` too, so of two hosts racing for it exactly one wins.
"""

from __future__ import annotations

try:
    import redis.asyncio as aioredis
    from redis.exceptions import RedisError
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        'interaction.redis_rules needs the redis client: pip install "interaction-seam[redis]"'
        " (the interaction[redis] extra)"
    ) from exc

import json
import re
from collections.abc import Sequence
from typing import Final

from .policies import (
    RULE_STORE_UNAVAILABLE,
    Rule,
    RuleStoreError,
    corrupt_store,
    signed,
    verified,
)

__all__ = ["MIN_KEY_BYTES", "RedisRuleStore"]

MIN_KEY_BYTES: Final = 16
_PREFIX: Final = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


class RedisRuleStore:
    """A :class:`~interaction.policies.RuleStore` in Redis at ``url`` (or a client).

    ``key`` (at least 16 bytes, from the environment, never logged) signs every rule; a
    rule that fails its MAC makes the store corrupt (:class:`RuleStoreError`).
    """

    def __init__(
        self, redis: str | aioredis.Redis, *, key: bytes, prefix: str = "interaction"
    ) -> None:
        if type(key) is not bytes or len(key) < MIN_KEY_BYTES:
            raise ValueError(f"the rule store's key is at least {MIN_KEY_BYTES} bytes")
        if not _PREFIX.fullmatch(prefix):
            raise ValueError("the prefix is 1-64 letters, digits, or _ . : -")
        self._redis = aioredis.Redis.from_url(redis) if isinstance(redis, str) else redis
        self._owned = isinstance(redis, str)
        self._key = key
        self.hash = f"{prefix}:rules"

    async def aclose(self) -> None:
        """Close the client this store made from a URL (not one it was given)."""
        if self._owned:
            await self._redis.aclose()

    def _unavailable(self, exc: Exception) -> RuleStoreError:
        return RuleStoreError(
            f"rule store redis {self.hash}: cannot be reached ({type(exc).__name__})",
            RULE_STORE_UNAVAILABLE,
        )

    async def rules(self) -> Sequence[Rule]:
        try:
            raw = await self._redis.hgetall(self.hash)
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from None
        rules = []
        for field in sorted(raw):
            where = f"redis {self.hash}[{field!r}]"
            try:
                data = json.loads(raw[field])
            except (ValueError, RecursionError) as exc:
                raise corrupt_store(where, f"is not valid JSON ({exc})") from None
            rule = verified(data, self._key, where)
            if rule.id.encode() != field:
                raise corrupt_store(where, f"holds the rule {rule.id!r}, filed under another id")
            rules.append(rule)
        rules.sort(key=lambda rule: (rule.created_at, rule.id))
        return rules

    async def add(self, rule: Rule) -> None:
        text = json.dumps(signed(rule, self._key), ensure_ascii=False)
        try:
            await self._redis.hset(self.hash, rule.id, text)
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from None

    async def revoke(self, rule_id: str) -> bool:
        try:
            return bool(await self._redis.hdel(self.hash, rule_id))
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from None

    async def take(self, rule_id: str) -> bool:
        return await self.revoke(rule_id)
