"""A keyed rule set kept in a database, as rows (or hash fields) beside a signed manifest.

The manifest is ``{"serial", "rules": {id: mac}, "mac"}``: each live rule's id with its
own MAC, and a serial that every change bumps, under one HMAC (``policies.set_mac``).
:class:`SignedSet` checks a snapshot (the manifest and the stored rules, read together)
against it and remembers the highest serial read or written, so an older whole set is
refused. :class:`ManifestRuleStore` is what a store kept this way does whatever holds it
(read a snapshot, compute the change, store it if the manifest is still the one it was
computed from, else again); ``RedisRuleStore`` and ``PostgresRuleStore`` say only how
they read a snapshot and store a change. docs/policies.md describes what each check
catches.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable, Mapping, Sequence
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

__all__ = ["MAX_ATTEMPTS", "Checked", "ManifestRuleStore", "SignedSet", "Snapshot"]

MAX_ATTEMPTS: Final = 100
"""How often a change is computed again when other hosts changed the rules meanwhile."""

Checked = tuple[tuple[Rule, ...], int, dict[str, str]]
"""A snapshot's rules (by creation time), its serial and its rules' MACs by id."""

Snapshot = tuple[str | bytes | None, Mapping[str, str | bytes]]
"""The stored manifest (``None``: none yet) and the stored rules' JSON by id, read
together."""


class SignedSet:
    """The checks of one store's set under ``key``: ``rules_at`` names the rules' place
    (``postgres interaction.rules``), ``manifest_at`` the manifest's, and ``rule_at`` one
    stored rule's (from the id it is filed under)."""

    __slots__ = ("_key", "manifest_at", "rule_at", "rules_at", "serial")

    def __init__(
        self, key: bytes, rules_at: str, manifest_at: str, rule_at: Callable[[str], str]
    ) -> None:
        self._key = key
        self.rules_at = rules_at
        self.manifest_at = manifest_at
        self.rule_at = rule_at
        self.serial = 0
        """The highest serial this store has read or written."""

    def manifest(self, serial: int, macs: Mapping[str, str]) -> str:
        """The manifest of a set, signed."""
        return json.dumps(
            {"serial": serial, "rules": dict(macs), "mac": set_mac(self._key, serial, macs)}
        )

    def wrote(self, serial: int) -> None:
        """A change of this store's own was stored with ``serial``."""
        self.serial = max(self.serial, serial)

    def checked(
        self,
        manifest: str | bytes | None,
        stored: Mapping[str, str | bytes],
        floor: int,
        *,
        sealing: bool = False,
    ) -> Checked:
        """The rules ``stored`` by id, each checked, with the manifest's serial and the
        rules' MACs; the manifest is checked against them, and its serial against
        ``floor`` (the highest this store had seen when the snapshot was asked for: a
        change of its own may end while the snapshot is on its way), unless ``sealing``."""
        rules = []
        macs: dict[str, str] = {}
        for field in sorted(stored):
            where = self.rule_at(field)
            try:
                data = json.loads(stored[field])
            except (ValueError, RecursionError) as exc:
                raise corrupt_store(where, f"is not valid JSON ({exc})") from None
            rule = verified(data, self._key, where)
            if rule.id != field:
                raise corrupt_store(where, f"holds the rule {rule.id!r}, filed under another id")
            rules.append(rule)
            macs[rule.id] = data["mac"]
        rules.sort(key=lambda rule: (rule.created_at, rule.id))
        if sealing:  # a manifest that does not check vouches for nothing, not even its serial
            try:
                serial = 0 if manifest is None else self._read(manifest)[0]
            except RuleStoreError:
                serial = 0
            return tuple(rules), serial, macs
        if manifest is None:  # no rules yet, or rules of the previous format
            if macs:
                raise unsealed(self.rules_at, len(macs))
            serial = 0
        else:
            serial, listed = self._read(manifest)
            self._match(listed, macs)
        if serial < floor:
            raise went_back(self.manifest_at, floor, serial)
        self.serial = max(self.serial, serial)
        return tuple(rules), serial, macs

    def _read(self, text: str | bytes) -> tuple[int, dict[str, str]]:
        """The manifest's serial and its rules' MACs by id, its own MAC checked."""
        where = self.manifest_at
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
        """Each stored rule is one the manifest lists, as it lists it, and each rule it
        lists is stored."""
        for rule_id, mac in macs.items():
            where = self.rule_at(rule_id)
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
                self.rules_at,
                f"has no rule {missing[0]!r}, which the signed manifest lists: it was deleted"
                " without the key",
            )


class ManifestRuleStore:
    """A :class:`~interaction.policies.RuleStore` kept beside a signed manifest, whatever
    holds it: a subclass sets ``_key`` and ``_set`` and says how it reads a snapshot
    (:meth:`_snapshot`) and stores a change if the manifest is still the one it read
    (:meth:`_change`)."""

    _key: bytes
    _set: SignedSet
    _cache: tuple[Snapshot, int, tuple[Rule, ...]] | None = None
    """The last snapshot read, its serial and its rules."""

    async def _snapshot(self) -> Snapshot:
        """The manifest and the rules, of one moment."""
        raise NotImplementedError

    async def _change(
        self,
        expected: str | bytes | None,
        manifest: str,
        op: str,
        rule_id: str,
        text: str,
    ) -> bool:
        """Store ``manifest`` and add (``op`` ``add``: ``text`` under ``rule_id``), remove
        or leave (``seal``) the rule, only if the stored manifest is still ``expected``;
        whether it was stored."""
        raise NotImplementedError

    async def rules(self) -> Sequence[Rule]:
        floor = self._set.serial
        snapshot = await self._snapshot()
        cache = self._cache
        if cache is not None and cache[0] == snapshot and cache[1] >= floor:
            return cache[2]  # the same object while nothing changed: the index is kept
        rules, serial, _ = self._set.checked(*snapshot, floor)
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
            rules, serial, macs = self._set.checked(*snapshot, 0, sealing=True)
            if await self._write(snapshot[0], max(serial, self._set.serial) + 1, macs, "seal"):
                return rules
        raise self._busy()

    async def _apply(
        self, op: Literal["add", "remove"], rule_id: str, text: str = "", mac: str = ""
    ) -> bool:
        """Add (or replace) or remove one rule with a new manifest, atomically; whether
        the set changed (a rule removed that was there)."""
        for _ in range(MAX_ATTEMPTS):
            floor = self._set.serial
            snapshot = await self._snapshot()
            _, serial, macs = self._set.checked(*snapshot, floor)
            if op == "add":
                macs[rule_id] = mac
            elif macs.pop(rule_id, None) is None:
                return False
            if await self._write(snapshot[0], serial + 1, macs, op, rule_id, text):
                return True
        raise self._busy()

    async def _write(  # noqa: PLR0917 - one change's arguments
        self,
        expected: str | bytes | None,
        serial: int,
        macs: dict[str, str],
        op: str,
        rule_id: str = "",
        text: str = "",
    ) -> bool:
        done = await self._change(expected, self._set.manifest(serial, macs), op, rule_id, text)
        if done:
            self._set.wrote(serial)
        return done

    def _busy(self) -> RuleStoreError:
        return RuleStoreError(
            f"rule store {self._set.rules_at}: changed by other hosts {MAX_ATTEMPTS} times"
            " while this change was made",
            RULE_STORE_UNAVAILABLE,
        )
