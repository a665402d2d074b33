"""Remembered decisions: rules that answer a permission before a human sees it.

:class:`PolicyProvider` wraps any provider. For a request whose every question carries a
:class:`~interaction.PermissionIntent`, it looks for rules that match each question; when
each is decided, it answers with the intent's own allow or deny label (the answer still
passes ``ask()``'s answer check), and otherwise the whole request goes to the provider it
wraps. Deny rules win over allow rules. When the person chooses the intent's
``allow_always`` option, a rule is made that allows the same input from then on. A
:class:`TimeoutPolicy` says what happens when nobody answers. The rule grammar, the scopes
and the stores are described in docs/policies.md.

A store that cannot be read, or whose content is not exactly what this module writes, is
a :class:`RuleStoreError`: the ask fails with it, and nothing is ever allowed by it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import hashlib
import hmac
import json
import math
import os
import re
import secrets
import time
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Literal, Protocol, TypeAlias

from ._core import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    ErrorCode,
    PermissionIntent,
    UserInteractionError,
    UserInteractionProvider,
    aborted_error,
)
from .decisions import Decision, listening, report_decision

__all__ = [
    "RULE_STORE_CORRUPT",
    "RULE_STORE_UNAVAILABLE",
    "Effect",
    "JsonFileRuleStore",
    "MemoryRuleStore",
    "PolicyProvider",
    "Rule",
    "RuleStore",
    "RuleStoreError",
    "Scope",
    "TimeoutPolicy",
    "corrupt_store",
    "exact_pattern",
    "mac_of",
    "matches",
    "new_rule",
    "parse_spec",
    "rule_from_json",
    "rule_to_json",
    "serial_of",
    "set_mac",
    "signed",
    "timeout_for",
    "unsealed",
    "verified",
    "went_back",
]

Effect: TypeAlias = Literal["allow", "deny"]
Scope: TypeAlias = Literal["once", "session", "persisted"]
"""``once``: the rule answers one ask and is gone; ``session``: it answers while its
session lasts (one :class:`PolicyProvider`, or one session id); ``persisted``: until revoked."""

EFFECTS: Final = ("allow", "deny")
SCOPES: Final = ("once", "session", "persisted")
RULE_STORE_CORRUPT: Final = "RULE_STORE_CORRUPT"
"""The code of a store whose content is not a valid rule list (or fails its MAC)."""
RULE_STORE_UNAVAILABLE: Final = "RULE_STORE_UNAVAILABLE"
"""The code of a store that cannot be read or written (a file error, Redis down)."""

SHELL_OPERATORS: Final = frozenset(";&|<>`$\r\n")
"""Characters after which an allow rule's prefix or glob no longer vouches for an input:
they can chain, redirect or substitute another command (``npm test && rm -rf ~``)."""

MAX_SPEC: Final = 4096
"""The longest rule spec (tool and pattern) a store or the CLI accepts, in characters."""
_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_TOOL: Final = re.compile(r"[^()\s\x00-\x1f\x7f]+")


class RuleStoreError(UserInteractionError):
    """A rule store that is corrupt (:data:`RULE_STORE_CORRUPT`) or unreachable
    (:data:`RULE_STORE_UNAVAILABLE`); an ask that needs it fails, never allowed."""


def corrupt_store(where: str, problem: str) -> RuleStoreError:
    """The error of a store whose content at ``where`` is not a valid rule."""
    return RuleStoreError(f"rule store {where}: {problem}", RULE_STORE_CORRUPT)


def _bad_rule(problem: str) -> UserInteractionError:
    return UserInteractionError(problem, ErrorCode.BAD_REQUEST)


# ---------------------------------------------------------------------- the grammar


@dataclass(frozen=True, slots=True)
class _Matcher:
    kind: Literal["any", "exact", "prefix", "glob"]
    text: str
    regex: re.Pattern[str] | None = None

    def __call__(self, summary: str, effect: Effect) -> bool:
        if self.kind == "any":
            return True
        if self.kind == "exact":
            return summary == self.text
        if effect == "allow" and not SHELL_OPERATORS.isdisjoint(summary):
            return False  # a deny rule still matches: denying more is safe
        if self.kind == "prefix":
            return summary == self.text or summary.startswith(self.text + " ")
        assert self.regex is not None
        return self.regex.fullmatch(summary) is not None


def _unescape(text: str) -> tuple[list[tuple[str, bool]], str | None]:
    """Characters of a pattern with whether each was escaped; or a problem."""
    out: list[tuple[str, bool]] = []
    chars = iter(text)
    for char in chars:
        if char == "\\":
            following = next(chars, None)
            if following is None:
                return out, "ends with a lone backslash"
            out.append((following, True))
        else:
            out.append((char, False))
    return out, None


@functools.lru_cache(maxsize=4096)
def _matcher(pattern: str | None) -> _Matcher:
    if pattern is None:
        return _Matcher("any", "")
    chars, problem = _unescape(pattern)
    if problem is not None:
        raise _bad_rule(f"pattern {pattern!r} {problem}")
    if len(chars) >= 2 and chars[-2:] == [(":", False), ("*", False)]:
        return _prefix_matcher(pattern, chars[:-2])
    if any(not escaped and c in "*?" for c, escaped in chars):
        return _Matcher("glob", pattern, re.compile(_glob_regex(chars), re.DOTALL))
    return _Matcher("exact", "".join(c for c, _ in chars))


def _prefix_matcher(pattern: str, prefix: list[tuple[str, bool]]) -> _Matcher:
    """The matcher of ``prefix:*``: a plain, non-blank prefix."""
    if any(not escaped and c in "*?" for c, escaped in prefix):
        raise _bad_rule(f"pattern {pattern!r} mixes a prefix (:*) with a glob")
    text = "".join(c for c, _ in prefix)
    if not text.strip():
        raise _bad_rule(f"pattern {pattern!r} has an empty prefix: write the tool alone")
    return _Matcher("prefix", text)


def _glob_regex(chars: list[tuple[str, bool]]) -> str:
    """A glob's regex: ``**`` crosses ``/``, ``*`` and ``?`` do not."""
    regex = []
    index = 0
    while index < len(chars):
        char, escaped = chars[index]
        if not escaped and char == "*":
            if index + 1 < len(chars) and chars[index + 1] == ("*", False):
                regex.append(".*")
                index += 1
            else:
                regex.append("[^/]*")
        elif not escaped and char == "?":
            regex.append("[^/]")
        else:
            regex.append(re.escape(char))
        index += 1
    return "".join(regex)


def exact_pattern(summary: str) -> str:
    """The pattern that matches ``summary`` and nothing else (``*``, ``?`` and ``\\``
    escaped)."""
    return re.sub(r"([\\*?])", r"\\\1", summary)


def parse_spec(spec: str) -> tuple[str, str | None]:
    """``"Bash(npm test:*)"`` as ``("Bash", "npm test:*")``; ``"Read"`` as ``("Read", None)``.

    The tool is a name without spaces or parentheses, or ``*`` for any tool; the pattern is
    everything between the first ``(`` and the spec's last character, which must be ``)``.
    A bad spec is a ``BAD_REQUEST`` that says why.
    """
    if type(spec) is not str:
        raise _bad_rule(f"a rule spec is a string, got {type(spec).__name__}")
    if len(spec) > MAX_SPEC:
        raise _bad_rule(f"a rule spec is at most {MAX_SPEC} characters, got {len(spec)}")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in spec):
        raise _bad_rule(f"rule spec {spec!r} contains a control character")
    tool, paren, rest = spec.partition("(")
    if not _TOOL.fullmatch(tool):
        raise _bad_rule(
            f"rule spec {spec!r} must start with a tool name (no spaces or parentheses), or *"
        )
    if not paren:
        return tool, None
    if not rest.endswith(")"):
        raise _bad_rule(f"rule spec {spec!r} must end with ) after its pattern")
    pattern = rest[:-1]
    _matcher(pattern)  # refuses a bad pattern now, not at the first ask
    return tool, pattern


def matches(rule: Rule, tool: str, summary: str, source: str | None, session: str | None) -> bool:
    """Whether ``rule`` decides a permission for ``tool`` with input ``summary``.

    The tool matches exactly (or the rule's is ``*``), the source exactly when the rule
    names one (a request without a source matches no such rule), a session rule only in
    its own session; the pattern as docs/policies.md describes.
    """
    if rule.tool not in (tool, "*"):
        return False
    if rule.source is not None and rule.source != source:
        return False
    if rule.scope == "session" and rule.session != session:
        return False
    return _matcher(rule.pattern)(summary, rule.effect)


# ---------------------------------------------------------------------- rules


@dataclass(frozen=True, slots=True)
class Rule:
    """A remembered decision: ``effect`` for ``tool`` with input matching ``pattern``."""

    id: str
    effect: Effect
    tool: str
    pattern: str | None = None
    """``None``: any input."""
    source: str | None = None
    """``None``: any source."""
    scope: Scope = "persisted"
    session: str | None = None
    """The session a ``session`` rule belongs to."""
    created_at: str = ""
    """ISO 8601, UTC."""
    created_by: str | None = None

    @property
    def spec(self) -> str:
        """The rule as written: ``Bash(npm test:*)``, or the tool alone."""
        return self.tool if self.pattern is None else f"{self.tool}({self.pattern})"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def new_rule(
    spec: str,
    effect: Effect = "allow",
    *,
    source: str | None = None,
    scope: Scope = "persisted",
    session: str | None = None,
    created_by: str | None = None,
) -> Rule:
    """A checked rule with a fresh id from a spec such as ``"Bash(npm test:*)"``."""
    tool, pattern = parse_spec(spec)
    if effect not in EFFECTS:
        raise _bad_rule(f"a rule's effect is allow or deny, got {effect!r}")
    if scope not in SCOPES:
        raise _bad_rule(f"a rule's scope is once, session or persisted, got {scope!r}")
    if scope == "session" and session is None:
        raise _bad_rule("a session rule needs the session it belongs to")
    for name, value in (("source", source), ("created_by", created_by), ("session", session)):
        if value is not None and (
            type(value) is not str or not value or not value.isprintable() or len(value) > 256
        ):
            raise _bad_rule(f"a rule's {name} is printable text of 1-256 characters")
    return Rule(
        f"r{secrets.token_hex(6)}",
        effect,
        tool,
        pattern,
        source,
        scope,
        session,
        _now(),
        created_by,
    )


_FIELDS: Final = (
    ("id", "id"),
    ("effect", "effect"),
    ("tool", "tool"),
    ("pattern", "pattern"),
    ("source", "source"),
    ("scope", "scope"),
    ("session", "session"),
    ("created_at", "createdAt"),
    ("created_by", "createdBy"),
)


def rule_to_json(rule: Rule) -> dict[str, str | None]:
    """The rule as stored: camelCase keys, every one present."""
    return {key: getattr(rule, name) for name, key in _FIELDS}


def rule_from_json(data: object, where: str) -> Rule:
    """A stored rule, checked field by field; anything else is :data:`RULE_STORE_CORRUPT`."""
    if type(data) is not dict:
        raise corrupt_store(where, f"expected an object, got {type(data).__name__}")
    if set(data) != {key for _, key in _FIELDS}:
        raise corrupt_store(where, f"expected exactly the keys {[k for _, k in _FIELDS]}")
    values: dict[str, str | None] = {}
    for name, key in _FIELDS:
        value = data[key]
        optional = name in {"pattern", "source", "session", "created_by"}
        if not (type(value) is str or (optional and value is None)):
            raise corrupt_store(f"{where}.{key}", f"expected a string, got {type(value).__name__}")
        values[name] = value
    if not _ID.fullmatch(values["id"] or ""):
        raise corrupt_store(f"{where}.id", "expected 1-64 letters, digits, - or _")
    if values["effect"] not in EFFECTS:
        raise corrupt_store(f"{where}.effect", f"expected allow or deny, got {values['effect']!r}")
    if values["scope"] not in SCOPES:
        raise corrupt_store(
            f"{where}.scope", f"expected once, session or persisted, got {values['scope']!r}"
        )
    written = str(values["tool"])
    if values["pattern"] is not None:
        written += f"({values['pattern']})"
    try:
        tool, pattern = parse_spec(written)
    except UserInteractionError as error:
        raise corrupt_store(where, error.message) from None
    if (tool, pattern) != (values["tool"], values["pattern"]):
        raise corrupt_store(where, "its tool and pattern do not read back as written")
    return Rule(**values)  # type: ignore[arg-type]  # each field checked above


# ---------------------------------------------------------------------- stores


class RuleStore(Protocol):
    """Where rules are kept. ``take`` removes a ``once`` rule and says whether this caller
    removed it (two asks racing for one rule: one wins)."""

    async def rules(self) -> Sequence[Rule]: ...

    async def add(self, rule: Rule) -> None: ...

    async def revoke(self, rule_id: str) -> bool: ...

    async def take(self, rule_id: str) -> bool: ...


class MemoryRuleStore:
    """Rules in this process only: a session's rules, tests, a host that loads its own."""

    def __init__(self, rules: Sequence[Rule] = ()) -> None:
        self._rules: dict[str, Rule] = {rule.id: rule for rule in rules}
        self._view: tuple[Rule, ...] = tuple(self._rules.values())

    async def rules(self) -> Sequence[Rule]:
        return self._view

    async def add(self, rule: Rule) -> None:
        self._rules[rule.id] = rule
        self._view = tuple(self._rules.values())

    async def revoke(self, rule_id: str) -> bool:
        found = self._rules.pop(rule_id, None) is not None
        self._view = tuple(self._rules.values())
        return found

    async def take(self, rule_id: str) -> bool:
        return await self.revoke(rule_id)


def mac_of(key: bytes, data: Mapping[str, object]) -> str:
    """The HMAC-SHA256 (hex) of a stored rule's canonical JSON, for stores given a key."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def signed(rule: Rule, key: bytes | None) -> dict[str, str | None]:
    data = rule_to_json(rule)
    if key is not None:
        data["mac"] = mac_of(key, data)
    return data


def verified(data: object, key: bytes | None, where: str) -> Rule:
    """A stored rule, its MAC checked first when the store has a key."""
    if key is not None:
        if type(data) is not dict or type(data.get("mac")) is not str:
            raise corrupt_store(where, "has no MAC (the store has a key)")
        body = {k: v for k, v in data.items() if k != "mac"}
        if not hmac.compare_digest(data["mac"], mac_of(key, body)):
            raise corrupt_store(where, "fails its MAC: it was changed, or written with another key")
        data = body
    return rule_from_json(data, where)


def set_mac(key: bytes, serial: int, macs: Mapping[str, str]) -> str:
    """The HMAC-SHA256 (hex) of a keyed store's whole rule set: its ``serial`` (bumped by
    every change) and each live rule's id with that rule's own MAC."""
    return mac_of(key, {"serial": serial, "rules": dict(macs)})


def unsealed(where: str, count: int) -> RuleStoreError:
    """The error of a keyed store that holds rules but no signature of the whole set."""
    return corrupt_store(
        where,
        f"holds {count} rules but no signed rule set (written before rule sets were signed,"
        " or its signature was removed): review them and run `interaction rules seal`",
    )


def went_back(where: str, seen: int, serial: int) -> RuleStoreError:
    """The error of a keyed store whose signed serial is older than one already read."""
    return corrupt_store(
        where,
        f"went back from serial {seen} to {serial}: an older copy of the whole rule set"
        " was restored",
    )


def serial_of(value: object, where: str) -> int:
    """A stored serial: a non-negative integer, else :data:`RULE_STORE_CORRUPT`."""
    if type(value) is not int or value < 0:
        raise corrupt_store(where, "expected a serial, a non-negative integer")
    return value


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


# ---------------------------------------------------------------------- timeouts


@dataclass(frozen=True, slots=True)
class TimeoutPolicy:
    """What happens when nobody answers within ``seconds`` (``None``: keep waiting).

    Each question is then answered with the option labelled ``choose`` when it has one,
    else a permission with its deny label; a question answered neither way makes the ask
    fail with ``ASK_TIMEOUT``. ``choose`` never allows a permission (its allow or allow
    always label) unless ``allow`` says so explicitly: without it, the deny label stands.
    A timeout answers its one ask only: a ``choose`` naming the allow always label answers
    with the allow label, so no rule is made for a decision nobody made.
    """

    seconds: float | None
    choose: str | None = None
    allow: bool = False

    def __post_init__(self) -> None:
        seconds = self.seconds
        if seconds is not None and (
            type(seconds) not in (int, float) or not math.isfinite(seconds) or seconds <= 0
        ):
            raise UserInteractionError(
                f"a timeout is a positive number of seconds, got {seconds!r}",
                ErrorCode.BAD_REQUEST,
            )

    def answer(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """The answer this policy gives to ``request``, or ``ASK_TIMEOUT``."""
        items = []
        for question in request.questions:
            label = self._label(question)
            if label is None:
                raise aborted_error(TimeoutError())
            items.append(AskUserQuestionAnswerItem(question.id, (label,)))
        return AskUserQuestionAnswer(items)

    def _label(self, question: AskUserQuestionItem) -> str | None:
        intent = question.intent
        chosen = self.choose
        if chosen is not None and any(option.label == chosen for option in question.options):
            if not isinstance(intent, PermissionIntent):
                return chosen
            if chosen == intent.allow_always:
                return intent.allow if self.allow else intent.deny
            if self.allow or chosen != intent.allow:
                return chosen
        return intent.deny if isinstance(intent, PermissionIntent) else None


_TIMEOUT: ContextVar[TimeoutPolicy | None] = ContextVar("interaction_timeout", default=None)


@contextlib.contextmanager
def timeout_for(policy: TimeoutPolicy) -> Iterator[None]:
    """Use ``policy`` for the asks made inside the block, instead of the provider's."""
    token = _TIMEOUT.set(policy)
    try:
        yield
    finally:
        _TIMEOUT.reset(token)


# ---------------------------------------------------------------------- the provider


class _Index:
    """A store's rules, filed so that an ask looks only at those that may match.

    By tool: the rules for any input, those with an exact pattern (by the text) or a prefix
    (by the text: an input's candidates are the input itself and its every part before a
    space), and the globs; the tool ``*``'s rules are looked at for every tool. Each
    candidate is still checked by its matcher, its source and its session, as
    :func:`matches` does, so the index only leaves out rules that cannot match.
    """

    __slots__ = ("any_tool", "exact", "prefix", "rules", "scan")

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = rules
        self.exact: dict[tuple[str, str], list[tuple[Rule, _Matcher]]] = {}
        self.prefix: dict[tuple[str, str], list[tuple[Rule, _Matcher]]] = {}
        self.scan: dict[str, list[tuple[Rule, _Matcher]]] = {}
        self.any_tool: list[tuple[Rule, _Matcher]] = []
        for rule in rules:
            matcher = _matcher(rule.pattern)
            entry = (rule, matcher)
            if rule.tool == "*":
                self.any_tool.append(entry)
            elif matcher.kind == "exact":
                self.exact.setdefault((rule.tool, matcher.text), []).append(entry)
            elif matcher.kind == "prefix":
                self.prefix.setdefault((rule.tool, matcher.text), []).append(entry)
            else:  # any input, or a glob
                self.scan.setdefault(rule.tool, []).append(entry)

    def candidates(self, tool: str, summary: str) -> list[tuple[Rule, _Matcher]]:
        found = [*self.scan.get(tool, ()), *self.exact.get((tool, summary), ()), *self.any_tool]
        prefix = self.prefix
        if prefix:
            found += prefix.get((tool, summary), ())
            space = summary.find(" ")
            while space >= 0:
                found += prefix.get((tool, summary[:space]), ())
                space = summary.find(" ", space + 1)
        return found


_Permission: TypeAlias = tuple[AskUserQuestionItem, PermissionIntent]
_UNSEEN: Final = object()
MEMO_SIZE: Final = 4096
"""How many inputs' decisions a policy provider remembers between changes of its rules."""


class PolicyProvider:
    """A provider that answers from rules first, then asks ``inner``.

    ``rules`` holds the persisted (and CLI-added ``once``) rules; ``session_rules`` (a
    fresh :class:`MemoryRuleStore` by default) the rules of this session, named
    ``session`` (a random id by default). ``source`` is where this host's requests come
    from, matched against rules that name one. ``always`` is the scope of the rule an
    "allow always" answer makes (``persisted`` or ``session``). ``timeout`` is the
    default :class:`TimeoutPolicy` (:func:`timeout_for` overrides it per ask).
    ``answerer`` names who answers through ``inner`` (kept as the new rule's author).
    """

    def __init__(
        self,
        inner: UserInteractionProvider,
        rules: RuleStore,
        *,
        source: str | None = None,
        session: str | None = None,
        session_rules: RuleStore | None = None,
        always: Literal["session", "persisted"] = "persisted",
        timeout: TimeoutPolicy | None = None,
        answerer: str | None = None,
    ) -> None:
        if always not in ("session", "persisted"):
            raise ValueError(f"always is session or persisted, got {always!r}")
        self.inner = inner
        self.rules = rules
        self.session_rules: RuleStore = (
            MemoryRuleStore() if session_rules is None else session_rules
        )
        self.source = source
        self.session = session if session is not None else f"s{secrets.token_hex(8)}"
        self.always = always
        self.timeout = timeout
        self.answerer = answerer
        self._indexes: list[_Index | None] = [None, None]
        self._answers: dict[tuple[str, str], AskUserQuestionAnswer] = {}
        self._memo: tuple[
            _Index | None, _Index | None, dict[tuple[str, str, str | None], Rule | None]
        ] = (
            None,
            None,
            {},
        )

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        permissions = _permissions(request)
        if not permissions:
            return await self._ask_inner(request)
        provenance = request.provenance
        source = (provenance.source if provenance is not None else None) or self.source
        decided = await self._decide(permissions, source)
        if decided is not None:
            return decided
        answer = await self._ask_inner(request)
        await self._remember(permissions, answer, source)
        return answer

    async def decide(self, tool: str, summary: str, source: str | None = None) -> Rule | None:
        """The rule that decides ``tool`` with ``summary`` from ``source`` (this provider's
        by default) now, deny first; ``None`` when none does."""
        indexes = (await self._index(0), await self._index(1))
        return self._decided(indexes, tool, summary, source or self.source)

    def _decided(
        self, indexes: tuple[_Index, _Index], tool: str, summary: str, source: str | None
    ) -> Rule | None:
        """:meth:`_looked_up`, remembered until the rules change (an index is rebuilt)."""
        memo = self._memo
        if memo[0] is not indexes[0] or memo[1] is not indexes[1] or len(memo[2]) >= MEMO_SIZE:
            memo = self._memo = (indexes[0], indexes[1], {})
        key = (tool, summary, source)
        decided = memo[2].get(key, _UNSEEN)
        if decided is _UNSEEN:
            decided = memo[2][key] = self._looked_up(indexes, tool, summary, source)
        return decided  # type: ignore[return-value]  # a Rule or None, never _UNSEEN here

    def _looked_up(
        self, indexes: tuple[_Index, _Index], tool: str, summary: str, source: str | None
    ) -> Rule | None:
        session = self.session
        allow: Rule | None = None
        for index in indexes:
            if not index.rules:
                continue
            for rule, matcher in index.candidates(tool, summary):
                if (
                    (rule.source is None or rule.source == source)
                    and (rule.scope != "session" or rule.session == session)
                    and matcher(summary, rule.effect)
                ):
                    if rule.effect == "deny":
                        return rule
                    if allow is None or (allow.scope == "once" and rule.scope != "once"):
                        allow = rule  # a lasting rule answers before a once-rule is spent
        return allow

    async def _index(self, which: int) -> _Index:
        """The index of the session's rules (0) or the store's (1), rebuilt when they change."""
        store = self.session_rules if which == 0 else self.rules
        rules = await store.rules()
        cached = self._indexes[which]
        if cached is None or cached.rules is not rules:
            cached = self._indexes[which] = _Index(rules)
        return cached

    async def _decide(
        self, permissions: list[_Permission], source: str | None
    ) -> AskUserQuestionAnswer | None:
        while True:
            indexes = (await self._index(0), await self._index(1))
            chosen = []
            for _, intent in permissions:
                rule = self._decided(indexes, intent.tool, intent.summary, source)
                if rule is None:
                    return None
                chosen.append(rule)
            for rule in chosen:
                if rule.scope == "once" and not await self._take(rule):
                    break  # another ask spent it first: decide again
            else:
                break
        if listening():
            report_decision(Decision("policy", rule=",".join(rule.id for rule in chosen)))
        if len(chosen) == 1:  # the common case: one answer object per id and label, reused
            (question, intent), rule = permissions[0], chosen[0]
            key = (question.id, intent.allow if rule.effect == "allow" else intent.deny)
            answer = self._answers.get(key)
            if answer is None:
                if len(self._answers) >= MEMO_SIZE:
                    self._answers.clear()
                answer = self._answers[key] = AskUserQuestionAnswer(
                    [AskUserQuestionAnswerItem(key[0], (key[1],))]
                )
            return answer
        return AskUserQuestionAnswer(
            [
                AskUserQuestionAnswerItem(
                    question.id, (intent.allow if rule.effect == "allow" else intent.deny,)
                )
                for (question, intent), rule in zip(permissions, chosen, strict=True)
            ]
        )

    async def _take(self, rule: Rule) -> bool:
        return await self.session_rules.take(rule.id) or await self.rules.take(rule.id)

    async def _ask_inner(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        policy = _TIMEOUT.get() or self.timeout
        if policy is None or policy.seconds is None:
            return await self.inner.ask(request)
        deadline = asyncio.timeout(policy.seconds)
        try:
            async with deadline:
                return await self.inner.ask(request)
        except TimeoutError:
            if not deadline.expired():
                raise
        answer = policy.answer(request)
        report_decision(Decision("timeout"))
        return answer

    async def _remember(
        self, permissions: list[_Permission], answer: AskUserQuestionAnswer, source: str | None
    ) -> None:
        chosen = {item.id: item for item in answer.answers}
        for question, intent in permissions:
            item = chosen.get(question.id)
            if (
                item is None
                or intent.allow_always is None
                or item.custom is not None
                or tuple(item.selected) != (intent.allow_always,)
            ):
                continue
            try:
                rule = new_rule(
                    f"{intent.tool}({exact_pattern(intent.summary)})",
                    source=source,
                    scope=self.always,
                    session=self.session if self.always == "session" else None,
                    created_by=self.answerer,
                )
            except UserInteractionError:  # an input past MAX_SPEC: allowed once, not kept
                continue
            store = self.session_rules if self.always == "session" else self.rules
            await store.add(rule)


def _permissions(request: AskUserQuestionRequest) -> list[_Permission]:
    """The request's questions as permissions, or none unless every one is a permission."""
    found = []
    for question in request.questions:
        intent = question.intent
        if type(intent) is not PermissionIntent or question.multi_select:
            return []
        found.append((question, intent))
    return found
