"""The rule grammar (a spec, its matcher), :class:`Rule` and its JSON, the
:class:`RuleStore` seam with :class:`MemoryRuleStore`, and the MACs a keyed store signs
its rules with; :mod:`interaction.policies` is the public face."""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final, Literal, Protocol, TypeAlias

from ._core import (
    ErrorCode,
    UserInteractionError,
)

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
class Matcher:
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
def matcher_of(pattern: str | None) -> Matcher:
    if pattern is None:
        return Matcher("any", "")
    chars, problem = _unescape(pattern)
    if problem is not None:
        raise _bad_rule(f"pattern {pattern!r} {problem}")
    if len(chars) >= 2 and chars[-2:] == [(":", False), ("*", False)]:
        return _prefix_matcher(pattern, chars[:-2])
    if any(not escaped and c in "*?" for c, escaped in chars):
        return Matcher("glob", pattern, re.compile(_glob_regex(chars), re.DOTALL))
    return Matcher("exact", "".join(c for c, _ in chars))


def _prefix_matcher(pattern: str, prefix: list[tuple[str, bool]]) -> Matcher:
    """The matcher of ``prefix:*``: a plain, non-blank prefix."""
    if any(not escaped and c in "*?" for c, escaped in prefix):
        raise _bad_rule(f"pattern {pattern!r} mixes a prefix (:*) with a glob")
    text = "".join(c for c, _ in prefix)
    if not text.strip():
        raise _bad_rule(f"pattern {pattern!r} has an empty prefix: write the tool alone")
    return Matcher("prefix", text)


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
    matcher_of(pattern)  # refuses a bad pattern now, not at the first ask
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
    return matcher_of(rule.pattern)(summary, rule.effect)


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
