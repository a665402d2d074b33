""":class:`JsonFileRuleStore`, the rules of one JSON file, locked and replaced whole."""

from __future__ import annotations

import contextlib
import fcntl
import hmac
import json
import os
import secrets
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final

from ._core import (
    ErrorCode,
    UserInteractionError,
)
from ._rules import (
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

MAX_FILE: Final = 16 * 1024 * 1024
"""The largest rules file :class:`JsonFileRuleStore` reads, in bytes."""


class JsonFileRuleStore:
    """Rules in a JSON file, ``{"version": 1, "rules": [...]}``.

    Every change takes an exclusive lock (``flock`` on ``PATH.lock``), reads the file
    afresh, and replaces it atomically (a temporary file in the same directory, fsync,
    ``os.replace``), so processes sharing the file never lose a change and a reader never
    sees half a file. Reads are cached until the file changes. With ``key``, each rule
    carries an HMAC-SHA256 and the whole set is signed with its ``serial``, which every
    change bumps: a rule added, removed, changed or put back without the key, or a set
    older than one this store has read, is corruption. A missing file is an empty store;
    anything unreadable is a :class:`RuleStoreError`.
    """

    def __init__(self, path: str | os.PathLike[str], *, key: bytes | None = None) -> None:
        self.path = Path(path)
        self._fspath = os.fspath(self.path)
        self._key = key
        self._seen: tuple[int, int, int] | None = None
        self._cache: tuple[Rule, ...] = ()
        self._serial = 0
        """The highest serial this store has read or written (a keyed store's)."""

    # The file's work is a few small reads and writes: done on the loop's thread, as the
    # audit log does, so an ask decided by a rule never waits for a thread hop.

    async def rules(self) -> Sequence[Rule]:
        return self._load()

    async def add(self, rule: Rule) -> None:
        with self._locked() as rules:
            rules.append(rule)

    async def revoke(self, rule_id: str) -> bool:
        with self._locked() as rules:
            before = len(rules)
            rules[:] = [rule for rule in rules if rule.id != rule_id]
            return len(rules) != before

    async def take(self, rule_id: str) -> bool:
        return await self.revoke(rule_id)

    async def seal(self) -> Sequence[Rule]:
        """Sign the rule set as it stands, each rule checked against its own MAC, and
        return it: for a file written before rule sets were signed. Needs the key."""
        if self._key is None:
            raise UserInteractionError(
                f"rule store {self.path}: sealing needs the store's key", ErrorCode.BAD_REQUEST
            )
        with self._lock():
            rules = self._read(sealing=True)
            self._write(rules)
        return tuple(rules)

    def _load(self) -> tuple[Rule, ...]:
        try:
            stat = os.stat(self._fspath)
        except FileNotFoundError:
            if self._serial:
                raise went_back(str(self.path), self._serial, 0) from None
            self._seen, self._cache = None, ()
            return ()
        except OSError as exc:
            raise self._unavailable(exc) from None
        # Each write stamps the file with the clock's own nanoseconds (not the file system's
        # coarser tick), so a rewrite never looks like the file read before.
        seen = self._seen
        if (
            seen is None
            or stat.st_mtime_ns != seen[1]
            or stat.st_ino != seen[0]
            or stat.st_size != seen[2]
        ):
            self._cache = tuple(self._read())
            self._seen = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        return self._cache

    def _unavailable(self, exc: OSError) -> RuleStoreError:
        return RuleStoreError(
            f"rule store {self.path}: cannot be read or written ({exc.strerror or exc})",
            RULE_STORE_UNAVAILABLE,
        )

    def _read(self, *, sealing: bool = False) -> list[Rule]:
        """The file's rules, checked; a keyed file's whole set too, unless ``sealing``."""
        where = str(self.path)
        try:
            with open(self.path, "rb") as handle:
                raw = handle.read(MAX_FILE + 1)
        except FileNotFoundError:
            if self._serial and not sealing:
                raise went_back(where, self._serial, 0) from None
            return []
        except OSError as exc:
            raise self._unavailable(exc) from None
        if len(raw) > MAX_FILE:
            raise corrupt_store(where, f"is larger than {MAX_FILE} bytes")
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise corrupt_store(where, f"is not valid JSON ({exc})") from None
        if (
            type(data) is not dict
            or data.get("version") != 1
            or type(data.get("rules")) is not list
        ):
            raise corrupt_store(where, 'expected {"version": 1, "rules": [...]}')
        items = data["rules"]
        rules = [
            verified(item, self._key, f"{where}: rules[{index}]")
            for index, item in enumerate(items)
        ]
        if len({rule.id for rule in rules}) != len(rules):
            raise corrupt_store(where, "holds two rules with one id")
        if self._key is None:
            return rules
        if sealing:  # the new signature comes after the newest serial seen
            serial = data.get("serial")
            if type(serial) is int and serial > self._serial:
                self._serial = serial
        else:
            self._check_set(
                data, {rule.id: item["mac"] for rule, item in zip(rules, items, strict=True)}
            )
        return rules

    def _check_set(self, data: dict[str, object], macs: dict[str, str]) -> None:
        """Check a keyed file's signature of its whole set, and that its serial is not
        older than one this store has read."""
        assert self._key is not None
        where = str(self.path)
        if "mac" not in data and "serial" not in data:
            if macs:
                raise unsealed(where, len(macs))
            serial = 0  # an empty file of the previous format: nothing to vouch for
        else:
            serial = serial_of(data.get("serial"), f"{where}: serial")
            mac = data.get("mac")
            if type(mac) is not str or not hmac.compare_digest(
                mac, set_mac(self._key, serial, macs)
            ):
                raise corrupt_store(
                    where,
                    "its rule set fails its MAC: a rule was added, removed or put back"
                    " without the key",
                )
        if serial < self._serial:
            raise went_back(where, self._serial, serial)
        self._serial = serial

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        lock_path = self.path.with_name(self.path.name + ".lock")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            lock = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise self._unavailable(exc) from None
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield
        finally:
            os.close(lock)  # closing releases the lock

    @contextlib.contextmanager
    def _locked(self) -> Iterator[list[Rule]]:
        with self._lock():
            rules = self._read()
            before = list(rules)
            yield rules
            if rules != before:
                self._write(rules)

    def _write(self, rules: list[Rule]) -> None:
        document: dict[str, object] = {"version": 1}
        items = [signed(rule, self._key) for rule in rules]
        serial = self._serial + 1
        if self._key is not None:
            macs = {str(item["id"]): str(item["mac"]) for item in items}
            document.update(serial=serial, mac=set_mac(self._key, serial, macs))
        document["rules"] = items
        text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
        temporary = self.path.with_name(f".{self.path.name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, text.encode())
                stamp = max(time.time_ns(), self._seen[1] + 1 if self._seen else 0)
                os.utime(fd, ns=(stamp, stamp))
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temporary, self.path)
            directory = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise self._unavailable(exc) from None
        self._seen = None  # the next read loads what was written
        if self._key is not None:
            self._serial = serial
