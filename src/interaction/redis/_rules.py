"""Policy rules in Redis, shared by every host on the store (extra ``[redis]``).

One hash, ``PREFIX:rules``, maps each rule id to the rule's JSON with its HMAC-SHA256
under the store's key; ``PREFIX:rules:manifest`` is the signed list of the live rules:
each one's id and MAC, with a serial that every change (an add, a revoke, a once-rule
taken) bumps. Whoever can write to Redis but does not hold the key cannot add a rule,
change one, delete one or put back one revoked or used, without the store refusing the
set as corrupt. What the key cannot prevent is putting back a whole older set, manifest
and all: a store that has read a newer serial refuses it, and docs/policies.md says how
the audit shows it. Every change is one Lua script that applies it only if the manifest
is still the one it was computed from (else it is computed again), so hosts changing
rules at once never lose a change, and of two hosts taking one ``once`` rule exactly one
wins.
"""

from __future__ import annotations

import re
from typing import Final

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from .._rule_manifest import MAX_ATTEMPTS, ManifestRuleStore, SignedSet, Snapshot
from ..policies import RULE_STORE_UNAVAILABLE, RuleStoreError

__all__ = ["MAX_ATTEMPTS", "MIN_KEY_BYTES", "RedisRuleStore"]

MIN_KEY_BYTES: Final = 16
_PREFIX: Final = re.compile(r"[A-Za-z0-9_.:-]{1,64}")

_CHANGE: Final = """
if (redis.call('GET', KEYS[1]) or '') ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
if ARGV[3] == 'add' then
  redis.call('HSET', KEYS[2], ARGV[4], ARGV[5])
elseif ARGV[3] == 'remove' then
  redis.call('HDEL', KEYS[2], ARGV[4])
end
return 1
"""
"""Set the manifest (KEYS[1]) and change the hash (KEYS[2]), only if the manifest is still
ARGV[1] ('' for none): ARGV[2] the new manifest, ARGV[3] add, remove or seal, ARGV[4] the
rule id, ARGV[5] the rule's JSON."""


class RedisRuleStore(ManifestRuleStore):
    """A :class:`~interaction.policies.RuleStore` in Redis at ``url`` (or a client).

    ``key`` (at least 16 bytes, from the environment, never logged) signs every rule and
    the manifest of the whole set; a rule or a set that fails its MAC, or a set older than
    one this store has read, makes the store corrupt (:class:`RuleStoreError`).
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
        self.manifest = f"{prefix}:rules:manifest"
        self._script = self._redis.register_script(_CHANGE)
        self._set = SignedSet(key, f"redis {self.hash}", f"redis {self.manifest}", self._rule_at)

    def _rule_at(self, rule_id: str) -> str:
        # The hash's field as Redis holds it (bytes: what a field not valid UTF-8 was read as).
        return f"redis {self.hash}[{rule_id.encode('utf-8', 'surrogateescape')!r}]"

    async def aclose(self) -> None:
        """Close the client this store made from a URL (not one it was given)."""
        if self._owned:
            await self._redis.aclose()

    def _unavailable(self, exc: Exception) -> RuleStoreError:
        return RuleStoreError(
            f"rule store redis {self.hash}: cannot be reached ({type(exc).__name__})",
            RULE_STORE_UNAVAILABLE,
        )

    async def _snapshot(self) -> Snapshot:
        """The manifest and the rules, read in one transaction."""
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.get(self.manifest)
                pipe.hgetall(self.hash)
                manifest, raw = await pipe.execute()
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from None
        return manifest, {
            field.decode("utf-8", "surrogateescape"): value for field, value in raw.items()
        }

    async def _change(
        self,
        expected: str | bytes | None,
        manifest: str,
        op: str,
        rule_id: str,
        text: str,
    ) -> bool:
        args: list[str | bytes] = [expected or b"", manifest, op, rule_id, text]
        try:
            done = await self._script(keys=[self.manifest, self.hash], args=args)
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from None
        return bool(done)
