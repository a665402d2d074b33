"""``serve``'s flags: where it serves, on which engine, for whom, and who is told.

:func:`add_command` declares every flag; :mod:`interaction._serve_config` derives each
``--config`` key from them, so a flag added here has its key too. :func:`valid_host` is
what ``--allow-host`` takes; the flags' values become a server in
:mod:`interaction._serve_cli`, and its people and channels in :mod:`interaction._serve_team`.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import Final

from ._push_cli import add_serve_options as add_push_options

__all__ = ["MAX_PORT", "add_command", "valid_host"]

MAX_PORT: Final = 65535
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


def add_command(add_parser: Callable[..., argparse.ArgumentParser]) -> None:
    """Add ``serve`` and its flags through the subcommands' ``add_parser``."""
    serve = add_parser(
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
