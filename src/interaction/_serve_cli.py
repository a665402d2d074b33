"""``interaction serve``: the answering page, over the demo or a shared store.

:func:`run_serve` checks every flag before anything starts (a fault is one line on
stderr, exit status 2), then :class:`_Serving` builds the web server with its
notifications: over an in-process relay asking the demo again and again, or over the
questions of ``--redis`` or ``--postgres`` with every store there. The flags are declared
in :mod:`interaction._serve_flags`; the people and channels come from
:mod:`interaction._serve_team`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import errno
import math
import os
import socket
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TypeVar

from ._ask_cli import answer_json
from ._core import (
    AskUserQuestionRequest,
    Assignment,
    Team,
    UserInteractionError,
    UserInteractionProvider,
    ask,
    provide,
)
from ._demo import DEMO_BATCH, DEMO_PLAN
from ._engines import EngineStores, engine_of, engine_stores
from ._push_cli import push_setup
from ._records_cli import env_key
from ._serve_flags import MAX_PORT
from ._serve_team import (
    User,
    check_proxy,
    routing_of,
    slack_of,
    steps_of,
    team_of,
    users_of,
)

if TYPE_CHECKING:
    from .notify import Routing, SlackInteractivity, Step
    from .policies import RuleStore
    from .relay import RelayBackend
    from .signing import UsedLinkStore
    from .web import WebPush, WebServer

_T = TypeVar("_T")

__all__ = ["run_serve"]

EXIT_OK: Final = 0
EXIT_BAD: Final = 2


def run_serve(args: argparse.Namespace) -> int:
    """``serve``, until Ctrl-C or SIGTERM: the exit status."""
    limits = _Limits(args.max_connections, args.max_streams, args.request_timeout)
    return _serve(
        args.host,
        args.port,
        args.allow_host,
        redis_url=args.redis,
        prefix=args.prefix or "interaction",
        limits=limits,
        postgres_url=args.postgres,
        schema=args.schema or "interaction",
        migrate=args.migrate,
        notify=args.notify,
        public_url=args.public_url,
        users=args.user,
        rules=args.rules,
        audit=args.audit,
        trusted_proxies=args.trusted_proxy,
        user_header=args.user_header,
        slack_users=args.slack_user,
        slack_anonymous=args.slack_anonymous,
        groups=args.group,
        see_all=args.see_all,
        rules_by=args.rules_by,
        assign_default=args.assign_default,
        routes=(args.notify_user, args.notify_group, args.escalate),
        telegram_users=args.telegram_user,
        push=args.push,
        push_private=args.push_private,
    )


@dataclass(frozen=True, slots=True)
class _Limits:
    """The ``serve`` flags that bound the web server; ``None`` leaves ``WebServer``'s default."""

    max_connections: int | None = None
    max_streams: int | None = None
    request_timeout: float | None = None

    def fault(self) -> str | None:
        """The one line that says which flag is out of range, if one is."""
        for flag, value in (
            ("--max-connections", self.max_connections),
            ("--max-streams", self.max_streams),
            ("--request-timeout", self.request_timeout),
        ):
            if value is not None and not (math.isfinite(value) and value > 0):
                return f"{flag} must be positive, got {value:g}"
        return None


@dataclass(frozen=True, slots=True)
class _Serving:
    """How ``serve`` serves: where, for whom, within which limits, and who is told of each
    question."""

    host: str
    port: int
    allow_hosts: Sequence[str] = ()
    limits: _Limits = _Limits()
    steps: Sequence[Step] = ()
    public_url: str | None = None
    users: Sequence[User] = ()
    rules: RuleStore | None = None
    audit: str | None = None
    slack: SlackInteractivity | None = None
    trusted_proxies: Sequence[str] = ()
    user_header: str | None = None
    used_links: UsedLinkStore | None = None
    team: Team | None = None
    rules_by: Assignment | None = None
    default_assignment: Assignment | None = None
    routing: Routing | None = None
    push: tuple[WebPush, Step] | None = None  # the page's offer and the push channel

    @contextlib.asynccontextmanager
    async def server(self, relay: RelayBackend) -> AsyncIterator[WebServer]:
        """The web server over ``relay``, with its notifications when ``--notify`` is on."""
        from .signing import AnswerLinks
        from .web import (
            DEFAULT_MAX_CONNECTIONS,
            DEFAULT_MAX_STREAMS,
            DEFAULT_REQUEST_TIMEOUT,
            WebServer,
        )

        steps = [*self.steps, *([self.push[1]] if self.push is not None else [])]
        links = AnswerLinks(used=self.used_links) if steps or self.routing else None
        limits = self.limits
        async with WebServer(
            relay,
            host=self.host,
            port=self.port,
            hosts=self.allow_hosts,
            links=links,
            public_url=self.public_url,
            max_connections=_given(limits.max_connections, DEFAULT_MAX_CONNECTIONS),
            max_streams=_given(limits.max_streams, DEFAULT_MAX_STREAMS),
            request_timeout=_given(limits.request_timeout, DEFAULT_REQUEST_TIMEOUT),
            rules=self.rules,
            users={user.name: user.token for user in self.users} if self.users else None,
            trusted_proxies=self.trusted_proxies,
            user_header=self.user_header,
            slack=self.slack,
            team=self.team,
            rules_by=self.rules_by,
            default_assignment=self.default_assignment,
            push=self.push[0] if self.push is not None else None,
        ) as server:
            if not self.users:
                print(f"interaction: answer at {server.url}", file=sys.stderr, flush=True)
            for user in self.users:  # a token from the environment is never printed
                if self.user_header is not None and user.variable is None:
                    print(
                        f"interaction: {user.name} signs in through the proxy at {server.base}",
                        file=sys.stderr,
                        flush=True,
                    )
                    continue
                link = (
                    f"{server.base}/#token=${user.variable}"
                    if user.variable is not None
                    else server.user_url(user.name)
                )
                print(f"interaction: {user.name} answers at {link}", file=sys.stderr, flush=True)
            if self.host in {"0.0.0.0", "::", ""} and not self.allow_hosts and not self.public_url:
                print(
                    "interaction: other machines reach it only by a name it allows:"
                    " add --allow-host NAME[:PORT] (or --public-url URL behind a proxy)",
                    file=sys.stderr,
                    flush=True,
                )
            if not steps and self.routing is None:
                yield server
                return
            from .notify import Notifications
            from .notify._telegram import answering

            base, routing = server.base, self.routing
            async with (
                answering(steps, relay, server.answer_desk()),  # Telegram's buttons
                Notifications(relay, steps, links=links, public_url=base, routing=routing),
            ):
                yield server


def _given(value: _T | None, default: _T) -> _T:
    return default if value is None else value


async def _serve_demo(serving: _Serving) -> None:
    from .relay import Relay

    relay = Relay(team=serving.team)
    asker: UserInteractionProvider = relay
    log = None
    if serving.audit is not None:
        from .audit import AuditProvider, JsonlAuditLog

        log = JsonlAuditLog(serving.audit, key=env_key("INTERACTION_AUDIT_KEY"))
        asker = AuditProvider(asker, log, source="serve")
    async with serving.server(relay):
        with provide(asker):
            try:
                while True:  # the demo, asked again each time it is answered
                    for questions in (DEMO_BATCH, (DEMO_PLAN,)):
                        try:
                            answer = await ask(AskUserQuestionRequest(questions))
                        except UserInteractionError as error:
                            print(f"interaction: {error.message} ({error.code})", file=sys.stderr)
                            continue
                        print(answer_json(answer), flush=True)
            finally:
                relay.close()
                if log is not None:
                    log.close()


async def _serve_shared(stores: EngineStores, serving: _Serving, *, migrate: bool = False) -> None:
    """The page over the questions in Redis or Postgres, asked by any process on the same
    store, with its rules and used links there too; ``migrate`` creates the Postgres
    tables first."""
    try:
        if migrate:
            await stores.migrate()
        await stores.relay.connect()
        async with serving.server(stores.relay):
            await asyncio.Event().wait()  # until Ctrl-C or SIGTERM
    finally:
        await stores.aclose()


def _serve(
    host: str,
    port: int,
    allow_hosts: Sequence[str] = (),
    *,
    redis_url: str | None = None,
    prefix: str = "interaction",
    limits: _Limits | None = None,
    postgres_url: str | None = None,
    schema: str = "interaction",
    migrate: bool = False,
    notify: Sequence[str] = (),
    public_url: str | None = None,
    users: Sequence[str] = (),
    rules: str | None = None,
    audit: str | None = None,
    trusted_proxies: Sequence[str] = (),
    user_header: str | None = None,
    slack_users: Sequence[str] = (),
    slack_anonymous: bool = False,
    groups: Sequence[str] = (),
    see_all: Sequence[str] = (),
    rules_by: Sequence[str] = (),
    assign_default: Sequence[str] = (),
    routes: Sequence[Sequence[str]] = ((), (), ()),
    telegram_users: Sequence[str] = (),
    push: str | None = None,
    push_private: bool = False,
) -> int:
    if (fault := _engine_fault(redis_url, postgres_url, migrate, audit)) is not None:
        print(f"interaction: {fault}", file=sys.stderr)
        return EXIT_BAD
    try:
        import interaction.web

        if redis_url is not None:
            import interaction.redis
        if postgres_url is not None:
            import interaction.postgres  # noqa: F401
        pushing = push_setup(push, push_private, os.environ)
        named = users_of(users)
        check_proxy(trusted_proxies, user_header, named)
        team = team_of(named, groups, see_all, rules_by, assign_default)
        slack = slack_of(notify, slack_users, slack_anonymous, named)
        steps = steps_of(notify, slack, telegram_users, [user.name for user in named])
        routing = routing_of(routes, team, slack)
        if public_url is not None:
            from .web._server import check_public_url

            public_url = check_public_url(public_url)
    except (ImportError, ValueError) as exc:  # a missing extra; a bad --notify, --user, ...
        print(f"interaction: {exc}", file=sys.stderr)
        return EXIT_BAD
    if not 0 <= port <= MAX_PORT:
        print(f"interaction: --port {port} is out of range: use 0-{MAX_PORT}", file=sys.stderr)
        return EXIT_BAD
    limits = limits or _Limits()
    if (problem := limits.fault()) is not None:
        print(f"interaction: {problem}", file=sys.stderr)
        return EXIT_BAD
    store = None
    if rules is not None:
        from .policies import JsonFileRuleStore

        store = JsonFileRuleStore(rules, key=env_key("INTERACTION_RULES_KEY"))
    default_assignment = Assignment(tuple(assign_default)) if assign_default else None
    pushed = (
        None
        if pushing is None
        else pushing.parts(
            pushing.store(prefix, schema, redis_url=redis_url, postgres_url=postgres_url),
            team,
            default_assignment,
        )
    )
    serving = _Serving(
        host,
        port,
        allow_hosts,
        limits,
        steps,
        public_url,
        named,
        store,
        audit,
        slack,
        trusted_proxies=trusted_proxies,
        user_header=user_header,
        team=team,
        rules_by=Assignment(tuple(rules_by)) if rules_by else None,
        default_assignment=default_assignment,
        routing=routing,
        push=pushed,
    )
    engine = engine_of(redis_url, prefix, postgres_url, schema)
    try:
        if engine is not None:  # every store on it (the rules keyed) but a --rules file
            stores = engine_stores(engine, rules_key=env_key("INTERACTION_RULES_KEY"), team=team)
            rules_store = store if store is not None else stores.rules
            serving = dataclasses.replace(serving, rules=rules_store, used_links=stores.links)
            running = _serve_shared(stores, serving, migrate=migrate)
        else:
            running = _serve_demo(serving)
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how one stops serving
            asyncio.run(running)
    except ValueError as exc:  # a bad --allow-host, --redis, --prefix, --postgres or --schema
        print(f"interaction: {exc}", file=sys.stderr)
        return EXIT_BAD
    except UserInteractionError as error:  # the store cannot be reached
        print(f"interaction: {error.message} ({error.code})", file=sys.stderr)
        return EXIT_BAD
    except OSError as exc:  # the port is taken, the host unknown or not ours
        print(f"interaction: cannot serve on {host}:{port}: {_why(exc)}", file=sys.stderr)
        return EXIT_BAD
    return EXIT_OK


def _engine_fault(
    redis_url: str | None, postgres_url: str | None, migrate: bool, audit: str | None
) -> str | None:
    """What is wrong with ``serve``'s engine flags beside ``--migrate`` and ``--audit``."""
    if migrate and postgres_url is None:
        return "--migrate needs --postgres URL"
    if audit is not None and (redis_url is not None or postgres_url is not None):
        return (
            "--audit records the demo's asks; with --redis or --postgres each asker records"
            " its own (interaction ask --audit PATH, or an AuditProvider)"
        )
    return None


def _why(exc: OSError) -> str:
    if isinstance(exc, socket.gaierror):
        return f"unknown host ({exc.strerror})"
    if exc.errno == errno.EADDRINUSE:
        return "the port is in use (pass another --port, or --port 0 to pick a free one)"
    return exc.strerror or str(exc)
