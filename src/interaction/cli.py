"""The ``interaction`` command: ``demo``, ``ask``, ``schema``, ``serve``, ``rules`` and ``log``.

Prompts go to stderr so that stdout carries only the answer JSON. Exit status: 0 answered,
1 not answered (cancelled, timed out, aborted), 2 bad input or refused request.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import errno
import json
import math
import os
import re
import secrets
import socket
import sys
import textwrap
import threading
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TextIO, TypeVar

from ._core import (
    AbortSignal,
    AgentRegistry,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    Assignment,
    ErrorCode,
    Provenance,
    Team,
    UserInteractionError,
    UserInteractionProvider,
    __version__,
    ask,
    check_provenance,
    escape_controls,
    problem_of,
    provide,
    provide_agents,
)
from ._demo import DEMO_BATCH, DEMO_PLAN
from ._engines import DEFAULT_SPACE, Engine, EngineStores, engine_relay, engine_stores
from ._push_cli import add_command as add_push_command
from ._push_cli import add_serve_options as add_push_options
from ._push_cli import push_setup, run_push
from ._records_cli import add_commands as add_records_commands
from ._records_cli import env_key, run_log, run_rules
from .console import ConsoleProvider
from .tool import tool_parameters
from .wire import answer_schema, decode_request, dumps, request_schema

if TYPE_CHECKING:
    from .notify import Routing, SlackInteractivity, Step
    from .policies import RuleStore
    from .postgres import PostgresRelay
    from .redis import RedisRelay
    from .relay import RelayBackend
    from .signing import UsedLinkStore
    from .web import WebPush, WebServer

_T = TypeVar("_T")

__all__ = ["main"]

EXIT_ANSWERED: Final = 0
EXIT_NOT_ANSWERED: Final = 1
EXIT_BAD_INPUT: Final = 2
MAX_PORT: Final = 65535
MAX_TIMEOUT_SECONDS: Final = threading.TIMEOUT_MAX
_HOST_NAME: Final = re.compile(
    r"(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\.?"
    r"|\[[0-9a-f:.]+\]",
    re.IGNORECASE,
)


def valid_host(entry: str) -> bool:
    """Whether ``entry`` is a host name, an IPv4 address or a bracketed IPv6 address,
    with an optional ``:PORT`` (what ``--allow-host`` takes)."""
    name, colon, port = entry.rpartition(":") if not entry.endswith("]") else (entry, "", "")
    if not colon or (name.count(":") and not name.startswith("[")):
        name, port = entry, ""
    if port and not (port.isascii() and port.isdigit() and 0 < int(port) <= MAX_PORT):
        return False
    return len(name) <= 253 and _HOST_NAME.fullmatch(name) is not None


EXIT_CODES: Final = """exit status:
  0  answered (the answer JSON is on stdout)
  1  not answered: dismissed, input ended, timed out or aborted
  2  bad input: a bad request, option or file (the message is on stderr)"""
_EXITS: Final = {
    "demo": EXIT_CODES,
    "ask": EXIT_CODES,
    "serve": """exit status:
  0  stopped (Ctrl-C or SIGTERM)
  2  bad input: a bad option, a missing extra, a port in use, a store that cannot be
     reached, a channel that is not configured (the message is on stderr)""",
    "schema": """exit status:
  0  printed (the schema JSON is on stdout)
  2  bad input: no schema or an unknown one named (the message is on stderr)""",
    "rules": """exit status:
  0  done (listed, added or revoked)
  1  revoke: no rule has that id
  2  bad input: a bad rule or option, a store that is corrupt or cannot be reached""",
    "log": """exit status:
  0  printed (with --verify: the chain is whole)
  1  --verify: a record was removed, reordered or edited (which one is on stderr)
  2  bad input: a bad option, a log that cannot be read""",
}
"""Each command's own exit statuses, for its ``--help``."""


@dataclass(frozen=True)
class _DemoAgent:
    id: str


def choose_provider(
    answers: TextIO | None = None, *, plain: bool = False, deadline: float | None = None
) -> UserInteractionProvider:
    """The provider for this session, reading answers from ``answers`` (stdin by default).

    The terminal UI when the ``[terminal]`` extra is installed and both ``answers`` and
    stderr are terminals, unless ``plain``; the console provider otherwise. Prompts go to
    stderr, so stdout carries only the answer. The terminal UI counts down to ``deadline``
    (a ``time.monotonic()`` instant).
    """
    source = answers if answers is not None else sys.stdin
    if not plain and source.isatty() and sys.stderr.isatty():
        try:
            from .terminal import TerminalProvider
        except ImportError:
            pass
        else:
            return TerminalProvider(source, sys.stderr, deadline=deadline)
    return ConsoleProvider(source, sys.stderr)


async def _demo(provider: UserInteractionProvider) -> AskUserQuestionAnswer:
    agent = _DemoAgent("demo")
    registry = AgentRegistry()
    registry.enter(agent)
    with provide_agents(registry), provide(provider):
        batch = await ask(AskUserQuestionRequest(DEMO_BATCH, agent=agent))
        plan = await ask(AskUserQuestionRequest([DEMO_PLAN], agent=agent))
    return AskUserQuestionAnswer([*batch.answers, *plan.answers])


async def _ask_file(
    provider: UserInteractionProvider, request: AskUserQuestionRequest
) -> AskUserQuestionAnswer:
    with provide(provider):
        return await ask(request)


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
class _User:
    """A named user of ``serve --user``: the token, and the variable it came from (``None``
    when it was made at random, and may be printed in the user's link)."""

    name: str
    token: str
    variable: str | None = None


_VARIABLE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)


def _users(specs: Sequence[str]) -> list[_User]:
    """The users of ``--user NAME`` (a random token) and ``--user NAME=VARIABLE`` (the token
    in that environment variable); ``ValueError`` with one line, never a token, otherwise."""
    from .web._guard import check_users

    users: list[_User] = []
    for spec in specs:
        name, equals, variable = spec.partition("=")
        if not equals:
            users.append(_User(name, secrets.token_urlsafe(24)))
            continue
        if not _VARIABLE.fullmatch(variable):
            raise ValueError(
                f"--user {spec!r}: after = comes the name of the environment variable that"
                " holds the user's token"
            )
        token = os.environ.get(variable, "")
        if not token:
            raise ValueError(f"--user {spec!r}: ${variable} is not set")
        users.append(_User(name, token, variable))
    if len({user.name for user in users}) != len(users):
        raise ValueError("--user: each user is named once")
    if users:
        try:
            check_users({user.name: user.token for user in users})
        except ValueError as exc:
            raise ValueError(f"--user: {exc}") from None
    return users


def _team(
    users: Sequence[_User],
    groups: Sequence[str],
    see_all: Sequence[str],
    rules_by: Sequence[str],
    assign_default: Sequence[str] = (),
) -> Team | None:
    """The team of ``--user``, ``--group NAME=USER,USER``, ``--see-all USER``, and the names
    of ``--rules-by`` and ``--assign-default`` (``None`` without named users);
    ``ValueError``, one line, otherwise."""
    named = (("--rules-by", rules_by), ("--assign-default", assign_default))
    if not users:
        for flag, given in (("--group", groups), ("--see-all", see_all), *named):
            if given:
                raise ValueError(f"{flag} needs named users (--user NAME)")
        return None
    members: dict[str, list[str]] = {}
    for spec in groups:
        name, equals, listed = spec.partition("=")
        if not equals or not name:
            raise ValueError(f"--group {spec!r}: write NAME=USER,USER (as in ops=alice,bob)")
        if name in members:
            raise ValueError(f"--group: {name} is named twice")
        members[name] = [member.strip() for member in listed.split(",") if member.strip()]
    try:
        team = Team([user.name for user in users], members, list(see_all))
    except UserInteractionError as error:
        raise ValueError(error.message) from None
    for flag, names in named:
        for name in names:
            if name not in team.groups and name not in team.users:
                raise ValueError(f"{flag}: {name} is no user or group (--user, --group)")
    return team


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
    users: Sequence[_User] = ()
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
                        print(_json(answer), flush=True)
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


def _engine(
    redis_url: str | None, prefix: str | None, postgres_url: str | None, schema: str | None
) -> Engine | None:
    """The engine ``--redis`` or ``--postgres`` names, if one does."""
    if postgres_url is not None:
        return Engine("postgres", postgres_url, schema or DEFAULT_SPACE)
    if redis_url is not None:
        return Engine("redis", redis_url, prefix or DEFAULT_SPACE)
    return None


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
        return EXIT_BAD_INPUT
    try:
        import interaction.web

        if redis_url is not None:
            import interaction.redis
        if postgres_url is not None:
            import interaction.postgres  # noqa: F401
        pushing = push_setup(push, push_private, os.environ)
        named = _users(users)
        _check_proxy(trusted_proxies, user_header, named)
        team = _team(named, groups, see_all, rules_by, assign_default)
        slack = _slack(notify, slack_users, slack_anonymous, named)
        steps = _steps(notify, slack, telegram_users, [user.name for user in named])
        routing = _routing(routes, team, slack)
        if public_url is not None:
            from .web._server import check_public_url

            public_url = check_public_url(public_url)
    except (ImportError, ValueError) as exc:  # a missing extra; a bad --notify, --user, ...
        print(f"interaction: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not 0 <= port <= MAX_PORT:
        print(f"interaction: --port {port} is out of range: use 0-{MAX_PORT}", file=sys.stderr)
        return EXIT_BAD_INPUT
    limits = limits or _Limits()
    if (problem := limits.fault()) is not None:
        print(f"interaction: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
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
    engine = _engine(redis_url, prefix, postgres_url, schema)
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
        return EXIT_BAD_INPUT
    except UserInteractionError as error:  # the store cannot be reached
        print(f"interaction: {error.message} ({error.code})", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:  # the port is taken, the host unknown or not ours
        print(f"interaction: cannot serve on {host}:{port}: {_why(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_ANSWERED


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


def _check_proxy(trusted: Sequence[str], header: str | None, users: Sequence[_User]) -> None:
    """A ``ValueError`` with one line unless ``--trusted-proxy`` and ``--user-header`` come
    together, with ``--user``, and name addresses and a header."""
    if header is None and not trusted:
        return
    if header is None:
        raise ValueError("--trusted-proxy: say which header names the user: --user-header NAME")
    if not trusted:
        raise ValueError("--user-header: say which proxy may send it: --trusted-proxy ADDRESS")
    if not users:
        raise ValueError("--user-header names users: name them with --user NAME")
    from .web._guard import ProxySignIn

    ProxySignIn.of(trusted, header)


def _steps(
    specs: Sequence[str],
    slack: SlackInteractivity | None = None,
    telegram: Sequence[str] = (),
    names: Sequence[str] = (),
) -> list[Step]:
    """The notification steps of ``--notify`` (none without it: no extra needed then),
    Telegram's buttons answering as the users of ``--telegram-user``."""
    if not specs:
        if telegram:
            raise ValueError("--telegram-user needs --notify telegram=CHAT_ID")
        return []
    from .notify._config import steps_from_specs, telegram_users_from_specs

    users = telegram_users_from_specs(telegram, names)
    if users and not any(spec.partition("=")[0].startswith("telegram") for spec in specs):
        raise ValueError("--telegram-user needs --notify telegram=CHAT_ID")
    return steps_from_specs(specs, os.environ, slack=slack, telegram_users=users)


def _slack(
    specs: Sequence[str], slack_users: Sequence[str], anonymous: bool, named: Sequence[_User]
) -> SlackInteractivity | None:
    """Answering in Slack (``--notify slack`` with ``SLACK_SIGNING_SECRET``), if on."""
    if not specs and not slack_users and not anonymous:
        return None
    from .notify._config import slack_interactivity

    names = [user.name for user in named]
    return slack_interactivity(specs, slack_users, anonymous, names, os.environ)


def _routing(
    routes: Sequence[Sequence[str]], team: Team | None, slack: SlackInteractivity | None
) -> Routing | None:
    """The routing of ``--notify-user``, ``--notify-group`` and ``--escalate``."""
    if not any(routes):
        return None
    from .notify._config import routing_from_specs

    per_user, per_group, escalations = routes
    return routing_from_specs(
        users=per_user,
        groups=per_group,
        escalations=escalations,
        environ=os.environ,
        team=team,
        slack=slack,
    )


def _why(exc: OSError) -> str:
    if isinstance(exc, socket.gaierror):
        return f"unknown host ({exc.strerror})"
    if exc.errno == errno.EADDRINUSE:
        return "the port is in use (pass another --port, or --port 0 to pick a free one)"
    return exc.strerror or str(exc)


def _assign_flags(ask_: argparse.ArgumentParser) -> None:
    """``ask``'s flags of who may answer (docs/teams.md)."""
    ask_.add_argument(
        "--assign",
        action="append",
        metavar="NAME",
        help="only this user or group may answer (again for more; the page's --user and"
        " --group names; docs/teams.md)",
    )
    ask_.add_argument(
        "--quorum",
        type=int,
        metavar="N",
        help="a permission or plan-review question settles as approved when N distinct"
        " assignees approve; one decline settles it at once (needs --assign)",
    )


def _people_flags(serve: argparse.ArgumentParser) -> None:
    """``serve``'s named users, and who they are in Slack."""
    serve.add_argument(
        "--user",
        action="append",
        default=[],
        metavar="NAME[=VARIABLE]",
        help="a person with a token of their own, named in the audit when they answer"
        " (repeatable): the token in $VARIABLE, or made at random and printed in NAME's link",
    )
    serve.add_argument(
        "--slack-user",
        action="append",
        default=[],
        metavar="NAME=SLACK_ID",
        help="answers in Slack by Slack user SLACK_ID (U01ABC) are NAME's, a --user"
        " (repeatable; needs --notify slack and $SLACK_SIGNING_SECRET; docs/notify.md)",
    )
    serve.add_argument(
        "--slack-anonymous",
        action="store_true",
        help="let Slack users no --slack-user names answer in Slack too (unnamed)",
    )


def _team_flags(serve: argparse.ArgumentParser) -> None:
    """``serve``'s flags of the team: groups, who sees all, who changes the rules, and
    whom its questions reach (all repeatable)."""
    for flag, metavar, said in (
        ("--notify-user", "NAME:KIND=TARGET", "a --user's own channel (docs/teams.md)"),
        ("--notify-group", "NAME:KIND=TARGET", "a --group's own channel (else its members')"),
        ("--escalate", "FROM@DELAY=TO", "tell TO DELAY after FROM if it still waits"),
        (
            "--assign-default",
            "NAME",
            "a question that names nobody may be seen and settled only by this user or"
            " group (docs/teams.md)",
        ),
        (
            "--telegram-user",
            "NAME=ID",
            "answer the clicks of the Telegram user ID in a --notify telegram chat as NAME;"
            " anyone else's click is refused",
        ),
    ):
        serve.add_argument(flag, action="append", default=[], metavar=metavar, help=said)
    serve.add_argument(
        "--group",
        action="append",
        default=[],
        metavar="NAME=USER,USER",
        help="a group of named users (--user), which a question may be assigned to"
        " (ask --assign NAME; docs/teams.md)",
    )
    serve.add_argument(
        "--see-all",
        action="append",
        default=[],
        metavar="USER",
        help="this named user is shown every question, not only those assigned to them",
    )
    serve.add_argument(
        "--rules-by",
        action="append",
        default=[],
        metavar="NAME",
        help="only this user or group may add or revoke rules on the page (with --rules)",
    )


def _parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The command's parser, and each subcommand's by name."""
    parser = argparse.ArgumentParser(
        prog="interaction",
        description="Ask a human through the interaction seam.",
        epilog=f"examples:\n  interaction demo\n  interaction ask request.json\n\n{EXIT_CODES}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    # Not required here: main() names an unknown flag before it says a command is missing.
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser("demo", help="ask the built-in questions and print the answer JSON")
    ask_ = commands.add_parser("ask", help="ask a request given as wire JSON; print the answer")
    for command in (demo, ask_):
        command.add_argument(
            "--plain",
            action="store_true",
            help="ask line by line even where the terminal UI could run",
        )
    ask_.add_argument(
        "file", nargs="?", default="-", help="the request JSON file, or - for stdin (default)"
    )
    ask_.add_argument("--timeout", type=float, metavar="SECONDS", help="give up after SECONDS")
    _assign_flags(ask_)
    shared = ask_.add_mutually_exclusive_group()
    shared.add_argument(
        "--redis",
        metavar="URL",
        help="put the question on the RedisRelay at URL (a page served with serve --redis"
        " shows it) instead of asking here",
    )
    shared.add_argument(
        "--postgres",
        metavar="URL",
        help="put the question on the PostgresRelay at URL (a page served with serve"
        " --postgres shows it) instead of asking here",
    )
    ask_.add_argument(
        "--prefix",
        help="the Redis key prefix the page serves (default interaction; needs --redis)",
    )
    ask_.add_argument(
        "--schema",
        help="the Postgres schema the page serves (default interaction; needs --postgres)",
    )
    ask_.add_argument(
        "--source",
        metavar="NAME",
        help="who asks: shown with the question (the request's provenance source), and the"
        " source the rules and the audit name (default: cli)",
    )
    serve = commands.add_parser(
        "serve", help="serve the answering page, with the demo asked again and again"
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks one)")
    stores = serve.add_mutually_exclusive_group()
    stores.add_argument(
        "--redis",
        metavar="URL",
        help="serve the questions held in Redis at URL (asked by any process), no demo",
    )
    stores.add_argument(
        "--postgres",
        metavar="URL",
        help="serve the questions held in PostgreSQL at URL (asked by any process), no demo",
    )
    serve.add_argument(
        "--prefix",
        help="the Redis key prefix the askers use (default interaction; needs --redis)",
    )
    serve.add_argument(
        "--notify",
        action="append",
        default=[],
        metavar="KIND[@DELAY]=TARGET",
        help="tell a channel of each question: webhook=URL, email=ADDRESS, slack[=URL],"
        " telegram=CHAT_ID;"
        " @DELAY (5m, 2h) waits that long first; secrets come from the environment"
        " (docs/notify.md; extra [notify])",
    )
    _team_flags(serve)
    serve.add_argument(
        "--public-url",
        metavar="URL",
        help="the page's address as people reach it (behind a reverse proxy):"
        " printed, and used by answer links",
    )
    _people_flags(serve)
    serve.add_argument(
        "--rules",
        metavar="PATH",
        help="list, add and revoke the rules of the file PATH on the page (the key, if any,"
        " in $INTERACTION_RULES_KEY), as interaction rules does",
    )
    serve.add_argument(
        "--audit",
        metavar="PATH",
        help="record the demo's asks in the JSONL log PATH (the key, if any, in"
        " $INTERACTION_AUDIT_KEY)",
    )
    serve.add_argument(
        "--max-connections",
        type=int,
        default=None,
        metavar="N",
        help="connections served at once; one more gets a 503 (default 256)",
    )
    serve.add_argument(
        "--max-streams",
        type=int,
        default=None,
        metavar="N",
        help="event streams (open pages) at once; one more gets a 503 (default 64)",
    )
    serve.add_argument(
        "--request-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="time for a request's head and body to arrive (default 10)",
    )
    serve.add_argument(
        "--schema",
        help="the Postgres schema the askers use (default interaction; needs --postgres)",
    )
    serve.add_argument(
        "--migrate",
        action="store_true",
        help="with --postgres: create or update the relay's tables first (idempotent)",
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="a Host the page is reached by when bound beyond loopback (repeatable)",
    )
    serve.add_argument(
        "--trusted-proxy",
        action="append",
        default=[],
        metavar="ADDRESS",
        help="an authenticating reverse proxy's IP address or CIDR network, the only peers"
        " whose --user-header is taken (repeatable)",
    )
    serve.add_argument(
        "--user-header",
        metavar="NAME",
        help="the header in which a trusted proxy names the --user signed in"
        " (X-Forwarded-Email, say); from any other peer it is refused",
    )
    serve.add_argument(
        "--config",
        metavar="PATH",
        help="take every flag from the TOML file PATH (docs/deploy.md); flags given here win",
    )
    add_push_options(serve)
    schema = commands.add_parser("schema", help="print a JSON Schema")
    schema.add_argument("which", nargs="?", choices=SCHEMAS, help="which schema to print")
    add_records_commands(commands.add_parser)
    add_push_command(commands.add_parser)
    ask_.add_argument(
        "--rules",
        metavar="PATH",
        help="answer permissions from the rules in PATH first; allow always adds one",
    )
    ask_.add_argument("--audit", metavar="PATH", help="record the outcome in the JSONL log PATH")
    for name, (description, examples) in _HELP.items():
        command = commands.choices[name]
        command.description = textwrap.fill(description, 78)
        command.epilog = "examples:\n" + "".join(f"  {line}\n" for line in examples)
        command.epilog += f"\n{_EXITS[name]}"
        command.formatter_class = argparse.RawDescriptionHelpFormatter
    return parser, {name: commands.choices[name] for name in _HELP}


SCHEMAS: Final = ("request", "answer", "tool")
_HELP: Final = {
    "demo": (
        "Ask the built-in questions (a single-select, a multi-select, a free-text question,"
        " then a plan review) and print the answer JSON. Uses the terminal UI on a terminal,"
        " line by line otherwise.",
        ["interaction demo", "interaction demo --plain", "interaction demo > answer.json"],
    ),
    "ask": (
        "Ask the request in FILE (wire JSON, see: interaction schema request) and print the"
        " answer JSON on stdout. With - (the default) the request is read from stdin, up to"
        " its end (Ctrl-D on a terminal), and the answers from the terminal.",
        [
            "interaction ask request.json",
            "interaction ask request.json --timeout 60",
            "interaction ask request.json --source deploy-bot",
            "interaction ask request.json --redis redis://127.0.0.1:6379/0",
            "interaction ask request.json --postgres postgresql://app@db.internal/app",
            "interaction ask < request.json",
            "generate-request | interaction ask -",
        ],
    ),
    "serve": (
        "Serve the web answering page, with the demo asked again and again; each answer is"
        " printed as JSON. With --redis, serve the questions pending in Redis instead,"
        " asked by any process with a RedisRelay on the same store (several hosts may"
        " serve them at once); with --postgres, those in PostgreSQL (PostgresRelay)."
        " Ctrl-C stops.",
        [
            "interaction serve",
            "interaction serve --port 0",
            "interaction serve --host 0.0.0.0",
            "interaction serve --redis redis://127.0.0.1:6379/0",
            "interaction serve --postgres postgresql://app@db.internal/app --migrate",
            "interaction serve --notify slack --notify email@30m=me@example.com",
            "interaction serve --config interaction.toml",
        ],
    ),
    "rules": (
        "List, add or revoke the policy rules that answer permission prompts before anyone"
        " sees them (see docs/policies.md for the grammar), or seal a keyed store's rules"
        " (sign them as they stand). The store is --store PATH, or $INTERACTION_RULES, or"
        " --redis URL with the key in $INTERACTION_RULES_KEY.",
        [
            "interaction rules list --store rules.json",
            "interaction rules add 'Bash(npm test:*)' --store rules.json",
            "interaction rules add 'Bash(rm:*)' --deny --store rules.json",
            "interaction rules revoke r1a2b3c4d5e6 --store rules.json",
        ],
    ),
    "log": (
        "Print the audit trail as a table (or --json lines), filtered by --since and"
        " --source; --follow keeps printing new records; --verify checks the hash chain"
        " (exit status 1 when it is broken; the key, if any, in $INTERACTION_AUDIT_KEY).",
        [
            "interaction log audit.jsonl",
            "interaction log audit.jsonl --since 2h --source ci",
            "interaction log audit.jsonl --verify",
            "interaction log --redis redis://127.0.0.1:6379/0 --follow",
        ],
    ),
    "schema": (
        "Print a JSON Schema: the request's or the answer's wire form, or the"
        " ask_user_question tool's parameters.",
        ["interaction schema request", "interaction schema answer", "interaction schema tool"],
    ),
}


def _fail(error: UserInteractionError) -> int:
    print(f"interaction: {error.message} ({error.code})", file=sys.stderr)
    if error.code in (ErrorCode.ASK_CANCELLED, ErrorCode.ASK_TIMEOUT, ErrorCode.ASK_ABORTED):
        return EXIT_NOT_ANSWERED
    return EXIT_BAD_INPUT


def _shared_relay(args: argparse.Namespace) -> RedisRelay | PostgresRelay | None:
    """The relay of ``ask --redis`` or ``ask --postgres``; ``None`` to ask here. A missing
    extra or a bad URL, prefix or schema is a ``BAD_REQUEST`` that says so."""
    engine = _engine(args.redis, args.prefix, args.postgres, args.schema)
    try:
        return None if engine is None else engine_relay(engine)
    except (ImportError, ValueError) as exc:
        raise UserInteractionError(str(exc), ErrorCode.BAD_REQUEST) from None


def _ask_shared(
    relay: RedisRelay | PostgresRelay, request: AskUserQuestionRequest, args: argparse.Namespace
) -> AskUserQuestionAnswer:
    """Ask through a shared relay (inside the rules and audit of ``args``): a page serving
    its store shows the question."""

    async def asking() -> AskUserQuestionAnswer:
        try:
            await relay.connect()  # a store that cannot be used is said before any wait
            print("interaction: the question waits on the page serving this store", file=sys.stderr)
            with provide(_wrapped(relay, args)):
                return await ask(request)
        finally:
            await relay.aclose()

    return asyncio.run(asking())


def _read_request(
    file: str, *, terminal: bool = True
) -> tuple[AskUserQuestionRequest, TextIO | None]:
    """The request, and where answers come from when stdin held the request (a terminal,
    unless ``terminal`` is false: the answers come from elsewhere)."""
    if file != "-":
        try:
            with open(file, "rb") as handle:
                return decode_request(handle.read()), None
        except OSError as exc:
            raise UserInteractionError(
                f"cannot read {file}: {exc.strerror}", ErrorCode.BAD_REQUEST
            ) from None
    if _is_terminal(sys.stdin):
        print(
            "interaction: reading a request (wire JSON) from stdin; end it with Ctrl-D,"
            " or pass a FILE",
            file=sys.stderr,
            flush=True,
        )
    request = decode_request(sys.stdin.buffer.read())
    if not terminal:
        return request, None
    try:
        tty = open("/dev/tty", encoding="utf-8")  # noqa: SIM115 - lives for the process
    except OSError:
        raise UserInteractionError(
            "the request came on stdin and there is no terminal to answer on;"
            " pass the request as a FILE instead",
            ErrorCode.BAD_REQUEST,
        ) from None
    return request, tty


def _with_source(request: AskUserQuestionRequest, source: str | None) -> AskUserQuestionRequest:
    """``request`` with ``--source`` as its provenance's source (it replaces the file's)."""
    if source is None:
        return request
    given = request.provenance or Provenance()
    provenance = Provenance(source, given.host, given.session, given.tool, given.asked_at)
    try:
        check_provenance(provenance)
    except UserInteractionError as error:
        raise UserInteractionError(
            f"--source: {problem_of(error)}", ErrorCode.BAD_REQUEST
        ) from None
    return dataclasses.replace(request, provenance=provenance)


def _with_assignment(
    request: AskUserQuestionRequest, assign: Sequence[str] | None, quorum: int | None
) -> AskUserQuestionRequest:
    """``request`` assigned by ``--assign`` (replacing the file's) and ``--quorum``."""
    if quorum is not None and not assign:
        raise UserInteractionError(
            "--quorum needs --assign (the users or groups who approve)", ErrorCode.BAD_REQUEST
        )
    if not assign:
        return request
    return dataclasses.replace(request, assignment=Assignment(tuple(assign), quorum))


def _timeout(seconds: float | None) -> AbortSignal | None:
    """The signal of ``--timeout``; a bad value is a ``BAD_REQUEST`` that names it."""
    if seconds is None:
        return None
    try:
        if not math.isfinite(seconds) or seconds <= 0:
            raise ValueError(seconds)
        return AbortSignal.timeout(seconds)
    except ValueError:  # also past what a timer can wait: one wording for every bad value
        raise UserInteractionError(
            f"--timeout must be a positive number of seconds up to {MAX_TIMEOUT_SECONDS:.0f},"
            f" got {seconds:g}",
            ErrorCode.BAD_REQUEST,
        ) from None


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    """The parsed command line; an unknown flag is named with its own command's usage."""
    parser, commands = _parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        owner = commands.get(args.command, parser) if args.command else parser
        owner.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command is None:
        parser.error("name a command: demo, ask, serve or schema (see interaction --help)")
    if args.command == "serve" and args.config is not None:
        from ._serve_config import ConfigError, with_config

        try:
            args = with_config(args, commands["serve"], lambda: parser.parse_known_args(argv)[0])
        except ConfigError as exc:
            print(f"interaction serve: {exc}", file=sys.stderr)
            raise SystemExit(EXIT_BAD_INPUT) from None
    if args.command in {"serve", "ask"} and args.prefix is not None and args.redis is None:
        commands[args.command].error("--prefix needs --redis (it names the Redis keys)")
    if args.command in {"serve", "ask"} and args.schema is not None and args.postgres is None:
        commands[args.command].error("--schema needs --postgres (it names the relay's tables)")
    if args.command == "serve":
        for entry in args.allow_host:
            if not valid_host(entry):
                commands["serve"].error(
                    f"--allow-host {entry!r} is not a host name, an address or HOST:PORT"
                )
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status."""
    try:
        return _main(argv)
    except BrokenPipeError:  # stdout closed early (`| head`): no traceback, no more output
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_NOT_ANSWERED


def _main(argv: Sequence[str] | None) -> int:
    args = _arguments(argv)
    if args.command == "serve":
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
    if args.command == "push":
        return run_push(args)
    if args.command == "rules":
        return run_rules(args)
    if args.command == "log":
        return run_log(args)
    if args.command == "schema":
        if args.which is None:
            print(
                f"interaction: name the schema to print: {', '.join(SCHEMAS)}"
                " (as in: interaction schema request)",
                file=sys.stderr,
            )
            return EXIT_BAD_INPUT
        schemas = {"request": request_schema, "answer": answer_schema, "tool": tool_parameters}
        print(json.dumps(schemas[args.which](), indent=2))
        sys.stdout.flush()  # a closed pipe is seen here, inside main()
        return EXIT_ANSWERED
    try:
        if args.command == "demo":
            answer = asyncio.run(_demo(choose_provider(plain=args.plain)))
        else:
            signal = _timeout(args.timeout)
            deadline = None if signal is None else time.monotonic() + args.timeout
            shared = args.redis is not None or args.postgres is not None
            request, answers = _read_request(args.file, terminal=not shared)
            request = _with_source(request, args.source)
            request = _with_assignment(request, args.assign, args.quorum)
            if signal is not None:
                request = dataclasses.replace(request, signal=signal)
            relay = _shared_relay(args)
            if relay is not None:
                answer = _ask_shared(relay, request, args)
            else:
                provider = choose_provider(answers, plain=args.plain, deadline=deadline)
                answer = asyncio.run(_ask_file(_wrapped(provider, args), request))
    except UserInteractionError as exc:
        return _fail(exc)
    except KeyboardInterrupt:
        print("interaction: interrupted", file=sys.stderr)
        return EXIT_NOT_ANSWERED
    print(_json(answer))
    sys.stdout.flush()
    return EXIT_ANSWERED


def _wrapped(
    provider: UserInteractionProvider, args: argparse.Namespace
) -> UserInteractionProvider:
    """The provider inside the rules of ``--rules`` and the audit of ``--audit``.

    A terminal's answer is this OS user's. An answer through a shared relay (``--redis``,
    ``--postgres``) was given on a page, maybe on another host: the relay names the page's
    user who gave it, and an answer by nobody named names nobody (never this OS user).
    """
    from .audit import AuditProvider, JsonlAuditLog, os_user
    from .policies import JsonFileRuleStore, PolicyProvider

    source = args.source or "cli"
    shared = args.redis is not None or args.postgres is not None
    user = None if shared else os_user()
    if args.rules is not None:
        store = JsonFileRuleStore(args.rules, key=env_key("INTERACTION_RULES_KEY"))
        provider = PolicyProvider(provider, store, source=source, answerer=user)
    if args.audit is not None:
        # One ask per process: it may as well wait for its record's fsync before exiting.
        log = JsonlAuditLog(args.audit, key=env_key("INTERACTION_AUDIT_KEY"), durable=True)
        provider = AuditProvider(provider, log, source=source, answerer=user)
    return provider


def _json(answer: AskUserQuestionAnswer) -> str:
    """The answer's wire JSON with every character the text policy calls unsafe (C1
    controls, DEL, bidirectional overrides and isolates) as a ``\\uXXXX`` escape.

    The same JSON value, but one typed by the user can no longer steer the terminal or
    reorder the line it is printed on. Such characters stand only inside JSON strings, so
    escaping them there is safe; the encoder has escaped the C0 controls already.
    """
    text = dumps(answer)
    if text.isprintable():  # every unsafe character is unprintable
        return text
    unsafe = {
        ord(char): f"\\u{ord(char):04x}"
        for char in set(text)
        if not char.isprintable() and escape_controls(char, keep_newlines=False) != char
    }
    return text.translate(unsafe)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or closed
        return False
