"""One engine per deployment: every store of ``--redis URL`` or ``--postgres URL``.

A deployment names its engine once, and :func:`engine_stores` builds each of its stores
there: the relay, the rule store, the audit log, the spent-state store and the used-link
store, under one Redis key prefix or in one PostgreSQL schema (``space``). Nothing is
reached until a store is used. The commands (``serve``, ``rules``, ``log``) call it; the
driver is imported only then, so the core never needs either extra.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, Protocol

from ._core import Team
from .policies import Rule, RuleStore

if TYPE_CHECKING:
    from .audit import AuditRecord
    from .postgres import PostgresRelay
    from .redis import RedisRelay
    from .signing import UsedLinkStore
    from .spent import SpentStateStore

__all__ = [
    "DEFAULT_SPACE",
    "Engine",
    "EngineStores",
    "ReadableAudit",
    "SealableRules",
    "engine_of",
    "engine_relay",
    "engine_stores",
]

DEFAULT_SPACE: Final = "interaction"
"""The Redis key prefix and the PostgreSQL schema when none is named."""


class SealableRules(RuleStore, Protocol):
    """A keyed rule store: it can sign its whole rule set as it stands."""

    async def seal(self) -> Sequence[Rule]: ...


class ReadableAudit(Protocol):
    """A shared audit log: records are appended, and read back whole, in order."""

    async def append(self, body: Mapping[str, object]) -> AuditRecord: ...

    async def read_all(self, batch: int = 1000) -> list[tuple[str, bytes]]:
        """Every record, as (where, canonical JSON bytes), in order."""
        ...


class _Closing(Protocol):
    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Engine:
    """Where a deployment keeps everything: ``kind`` is ``redis`` or ``postgres``, ``url``
    its server, ``space`` the Redis key prefix or the PostgreSQL schema."""

    kind: Literal["redis", "postgres"]
    url: str
    space: str = DEFAULT_SPACE

    @property
    def flag(self) -> str:
        """The command-line flag that names this engine."""
        return f"--{self.kind}"

    @property
    def space_flag(self) -> str:
        """The flag that names its space."""
        return "--prefix" if self.kind == "redis" else "--schema"


def engine_of(
    redis_url: str | None, prefix: str | None, postgres_url: str | None, schema: str | None
) -> Engine | None:
    """The engine ``--redis`` or ``--postgres`` names, if one does (``ask``'s and
    ``serve``'s), in ``--prefix`` or ``--schema`` (:data:`DEFAULT_SPACE` without)."""
    if postgres_url is not None:
        return Engine("postgres", postgres_url, schema or DEFAULT_SPACE)
    if redis_url is not None:
        return Engine("redis", redis_url, prefix or DEFAULT_SPACE)
    return None


@dataclass(frozen=True, slots=True)
class EngineStores:
    """Every store of one engine. ``rules`` is ``None`` without a rules key (a shared
    rule store is always keyed: whoever can write to the engine could forge rules)."""

    engine: Engine
    relay: RedisRelay | PostgresRelay
    rules: SealableRules | None
    audit: ReadableAudit
    spent: SpentStateStore
    links: UsedLinkStore
    closing: tuple[_Closing, ...]

    async def migrate(self) -> None:
        """Create (or bring up to date) a PostgreSQL schema's tables, the relay's and every
        store's, at once; a Redis engine needs none."""
        from .postgres import PostgresRelay

        if isinstance(self.relay, PostgresRelay):
            await self.relay.migrate()

    async def aclose(self) -> None:
        """Close every store's connections."""
        for store in self.closing:
            await store.aclose()


def engine_stores(
    engine: Engine,
    *,
    rules_key: bytes | None = None,
    audit_key: bytes | None = None,
    team: Team | None = None,
) -> EngineStores:
    """Every store on ``engine``; ``rules_key`` signs the rules and ``audit_key`` the
    audit chain, and the relay refuses answers from anyone ``team`` does not assign.
    ``ImportError`` naming the extra when its driver is missing; ``ValueError`` naming
    the flag for a URL, prefix or schema it cannot take (never printing the URL, which
    may hold a password)."""
    with _flagged(engine):
        if engine.kind == "redis":
            return _redis(engine, rules_key, audit_key, team)
        return _postgres(engine, rules_key, audit_key, team)


def engine_relay(engine: Engine) -> RedisRelay | PostgresRelay:
    """The relay alone on ``engine`` (an asker needs no other store); errors as
    :func:`engine_stores`'."""
    with _flagged(engine):
        if engine.kind == "redis":
            from .redis import RedisRelay

            return RedisRelay(engine.url, prefix=engine.space)
        from .postgres import PostgresRelay

        return PostgresRelay(engine.url, schema=engine.space)


@contextlib.contextmanager
def _flagged(engine: Engine) -> Iterator[None]:
    """A store's ``ValueError`` as the flag's: the space's, the key's as it is, else the
    URL's (a Redis URL masked, a PostgreSQL one not printed: either may hold a password)."""
    try:
        yield
    except ValueError as exc:
        if "key" in str(exc):
            raise
        if "prefix" in str(exc) or "schema" in str(exc):
            raise ValueError(f"{engine.space_flag}: {exc}") from None
        if engine.kind == "redis":
            raise ValueError(
                f"--redis {_masked_url(engine.url)!r} is not a Redis URL: use"
                " redis://HOST:PORT/DB, rediss://HOST:PORT/DB or unix:///PATH"
            ) from None
        raise ValueError(
            "--postgres is not a PostgreSQL URL or connection string:"
            " use postgresql://USER@HOST:PORT/DB"
        ) from None


def _redis(
    engine: Engine, rules_key: bytes | None, audit_key: bytes | None, team: Team | None
) -> EngineStores:
    from .redis import RedisAuditLog, RedisRelay, RedisRuleStore, RedisSpentStore, RedisUsedLinks

    url, prefix = engine.url, engine.space
    relay = RedisRelay(url, prefix=prefix, team=team)
    rules = None if rules_key is None else RedisRuleStore(url, key=rules_key, prefix=prefix)
    audit = RedisAuditLog(url, prefix=prefix, key=audit_key)
    spent = RedisSpentStore(url, prefix=f"{prefix}:mcp:spent")
    links = RedisUsedLinks(url, prefix=f"{prefix}:links:used")
    closing: tuple[_Closing, ...] = (relay, *([rules] if rules else []), audit, spent, links)
    return EngineStores(engine, relay, rules, audit, spent, links, closing)


def _postgres(
    engine: Engine, rules_key: bytes | None, audit_key: bytes | None, team: Team | None
) -> EngineStores:
    from .postgres import (
        PostgresAuditLog,
        PostgresRelay,
        PostgresRuleStore,
        PostgresSpentStore,
        PostgresUsedLinks,
    )

    url, schema = engine.url, engine.space
    relay = PostgresRelay(url, schema=schema, team=team)
    rules = None if rules_key is None else PostgresRuleStore(url, key=rules_key, schema=schema)
    audit = PostgresAuditLog(url, schema=schema, key=audit_key)
    spent = PostgresSpentStore(url, schema=schema)
    links = PostgresUsedLinks(url, schema=schema)
    closing: tuple[_Closing, ...] = (relay, *([rules] if rules else []), audit, spent, links)
    return EngineStores(engine, relay, rules, audit, spent, links, closing)


def _masked_url(url: str) -> str:
    """``url`` fit to print: its password, and any ``password=`` parameter, as ``***``.

    It errs towards hiding: everything before the last ``@`` but a user name is hidden,
    so a password holding ``@`` or ``/`` stays hidden too.
    """
    url = re.sub(r"(?i)(password=)[^&#]*", r"\1***", url)
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    userinfo, at, host = rest.rpartition("@")
    if not at:
        return url
    user, colon, _ = userinfo.partition(":")
    return f"{scheme}{sep}{user}:***@{host}" if colon else f"{scheme}{sep}***@{host}"
