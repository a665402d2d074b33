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

try:
    import redis.asyncio as aioredis
    from redis.exceptions import RedisError
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        'interaction.redis_rules needs the redis client: pip install "interaction-seam[redis]"'
        " (the interaction[redis] extra)"
    ) from exc

import hmac
import json
import re
from collections.abc import Sequence
from typing import Final, Literal

from .policies import (
    RULE_STORE_UNAVAILABLE,
    Rule,
    RuleStoreError,
    corrupt_store,
    serial_of,
    set_mac,
    signed,
    unsealed,
    verified,
    went_back,
)

__all__ = ["MAX_ATTEMPTS", "MIN_KEY_BYTES", "RedisRuleStore"]

MIN_KEY_BYTES: Final = 16
MAX_ATTEMPTS: Final = 100
"""How often a change is computed again when other hosts changed the rules meanwhile."""
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

_Snapshot = tuple[bytes | None, dict[bytes, bytes]]
_Set = tuple[tuple[Rule, ...], int, dict[str, str]]


class RedisRuleStore:
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
        self._change = self._redis.register_script(_CHANGE)
        self._serial = 0
        """The highest serial this store has read or written."""
        self._cache: tuple[_Snapshot, int, tuple[Rule, ...]] | None = None
        """The last snapshot read, its serial and its rules."""

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
        floor = self._serial
        snapshot = await self._snapshot()
        cache = self._cache
        if cache is not None and cache[0] == snapshot and cache[1] >= floor:
            return cache[2]  # the same object while nothing changed: the index is kept
        rules, serial, _ = self._checked(snapshot, floor)
        self._cache = (snapshot, serial, rules)
        return rules

    async def add(self, rule: Rule) -> None:
        data = signed(rule, self._key)
        await self._apply("add", rule.id, json.dumps(data, ensure_ascii=False), str(data["mac"]))

    async def revoke(self, rule_id: str) -> bool:
        return await self._apply("remove", rule_id)

    async def take(self, rule_id: str) -> bool:
        return await self.revoke(rule_id)

    async def seal(self) -> Sequence[Rule]:
        """Sign the rules as they stand, each checked against its own MAC, and return
        them: for a store written before rule sets were signed (or repaired by hand)."""
        for _ in range(MAX_ATTEMPTS):
            snapshot = await self._snapshot()
            rules, serial, macs = self._checked(snapshot, 0, sealing=True)
            if await self._write(snapshot[0], max(serial, self._serial) + 1, macs, "seal"):
                return rules
        raise self._busy()

    async def _apply(
        self, op: Literal["add", "remove"], rule_id: str, text: str = "", mac: str = ""
    ) -> bool:
        """Add (or replace) or remove one rule with a new manifest, atomically; whether
        the set changed (a rule removed that was there)."""
        for _ in range(MAX_ATTEMPTS):
            floor = self._serial
            snapshot = await self._snapshot()
            _, serial, macs = self._checked(snapshot, floor)
            if op == "add":
                macs[rule_id] = mac
            elif macs.pop(rule_id, None) is None:
                return False
            if await self._write(snapshot[0], serial + 1, macs, op, rule_id, text):
                return True
        raise self._busy()

    def _busy(self) -> RuleStoreError:
        return RuleStoreError(
            f"rule store redis {self.hash}: changed by other hosts {MAX_ATTEMPTS} times"
            " while this change was made",
            RULE_STORE_UNAVAILABLE,
        )

    async def _snapshot(self) -> _Snapshot:
        """The manifest and the rules, read in one transaction."""
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.get(self.manifest)
                pipe.hgetall(self.hash)
                manifest, raw = await pipe.execute()
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from None
        return manifest, raw

    async def _write(  # noqa: PLR0917 - one script call's arguments
        self,
        expected: bytes | None,
        serial: int,
        macs: dict[str, str],
        op: str,
        rule_id: str = "",
        text: str = "",
    ) -> bool:
        manifest = {"serial": serial, "rules": macs, "mac": set_mac(self._key, serial, macs)}
        args: list[bytes | str] = [expected or b"", json.dumps(manifest), op, rule_id, text]
        try:
            done = await self._change(keys=[self.manifest, self.hash], args=args)
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from None
        if done:
            self._serial = max(self._serial, serial)
        return bool(done)

    def _checked(self, snapshot: _Snapshot, floor: int, *, sealing: bool = False) -> _Set:
        """The rules of a snapshot, each checked, with the manifest's serial and the rules'
        MACs by id; the manifest is checked against them, and its serial against ``floor``
        (the highest this store had seen when the snapshot was asked for: a change of its
        own may end while the snapshot is on its way), unless ``sealing``."""
        text, raw = snapshot
        rules = []
        macs: dict[str, str] = {}
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
            macs[rule.id] = data["mac"]
        rules.sort(key=lambda rule: (rule.created_at, rule.id))
        if sealing:  # a manifest that does not check vouches for nothing, not even its serial
            try:
                serial = 0 if text is None else self._manifest(text)[0]
            except RuleStoreError:
                serial = 0
            return tuple(rules), serial, macs
        if text is None:  # no rules yet, or rules of the previous format
            if macs:
                raise unsealed(f"redis {self.hash}", len(macs))
            serial = 0
        else:
            serial, listed = self._manifest(text)
            self._match(listed, macs)
        if serial < floor:
            raise went_back(f"redis {self.manifest}", floor, serial)
        self._serial = max(self._serial, serial)
        return tuple(rules), serial, macs

    def _manifest(self, text: bytes) -> tuple[int, dict[str, str]]:
        """The manifest's serial and its rules' MACs by id, its own MAC checked."""
        where = f"redis {self.manifest}"
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise corrupt_store(where, f"is not valid JSON ({exc})") from None
        if type(data) is not dict or set(data) != {"serial", "rules", "mac"}:
            raise corrupt_store(where, 'expected {"serial", "rules", "mac"}')
        serial = serial_of(data["serial"], f"{where}.serial")
        listed = data["rules"]
        if type(listed) is not dict or not all(type(v) is str for v in listed.values()):
            raise corrupt_store(f"{where}.rules", "expected each rule's id and MAC")
        mac = data["mac"]
        if type(mac) is not str or not hmac.compare_digest(mac, set_mac(self._key, serial, listed)):
            raise corrupt_store(where, "fails its MAC: it was changed, or written with another key")
        return serial, listed

    def _match(self, listed: dict[str, str], macs: dict[str, str]) -> None:
        """Each rule in the hash is one the manifest lists, as it lists it, and each rule
        it lists is there."""
        for rule_id, mac in macs.items():
            where = f"redis {self.hash}[{rule_id.encode()!r}]"
            if rule_id not in listed:
                raise corrupt_store(
                    where,
                    "is not in the signed manifest: it was added, or put back after it was"
                    " revoked or used, without the key",
                )
            if not hmac.compare_digest(listed[rule_id], mac):
                raise corrupt_store(
                    where, "is not the rule the signed manifest lists: an older copy was put back"
                )
        missing = sorted(listed.keys() - macs.keys())
        if missing:
            raise corrupt_store(
                f"redis {self.hash}",
                f"has no rule {missing[0]!r}, which the signed manifest lists: it was deleted"
                " without the key",
            )
