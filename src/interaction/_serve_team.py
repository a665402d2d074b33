"""``serve``'s people and channels: who answers, in which groups, and who is told of each
question.

Each function turns some of ``serve``'s flags into what the web server and the
notifications take: :func:`users_of` the named users of ``--user``, :func:`team_of` the team
of ``--group`` and ``--see-all``, :func:`check_proxy` the sign-in by a trusted proxy,
:func:`steps_of` the channels of ``--notify``, :func:`slack_of` answering in Slack and
:func:`routing_of` the routes of ``--notify-user``, ``--notify-group`` and ``--escalate``.
Each fault is a ``ValueError`` with one line, which never holds a token.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from ._core import Team, UserInteractionError

if TYPE_CHECKING:
    from .notify import Routing, SlackInteractivity, Step

__all__ = ["User", "check_proxy", "routing_of", "slack_of", "steps_of", "team_of", "users_of"]


@dataclass(frozen=True, slots=True)
class User:
    """A named user of ``serve --user``: the token, and the variable it came from (``None``
    when it was made at random, and may be printed in the user's link)."""

    name: str
    token: str
    variable: str | None = None


_VARIABLE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)


def users_of(specs: Sequence[str]) -> list[User]:
    """The users of ``--user NAME`` (a random token) and ``--user NAME=VARIABLE`` (the token
    in that environment variable); ``ValueError`` with one line, never a token, otherwise."""
    from .web._guard import check_users

    users: list[User] = []
    for spec in specs:
        name, equals, variable = spec.partition("=")
        if not equals:
            users.append(User(name, secrets.token_urlsafe(24)))
            continue
        if not _VARIABLE.fullmatch(variable):
            raise ValueError(
                f"--user {spec!r}: after = comes the name of the environment variable that"
                " holds the user's token"
            )
        token = os.environ.get(variable, "")
        if not token:
            raise ValueError(f"--user {spec!r}: ${variable} is not set")
        users.append(User(name, token, variable))
    if len({user.name for user in users}) != len(users):
        raise ValueError("--user: each user is named once")
    if users:
        try:
            check_users({user.name: user.token for user in users})
        except ValueError as exc:
            raise ValueError(f"--user: {exc}") from None
    return users


def team_of(
    users: Sequence[User],
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


def check_proxy(trusted: Sequence[str], header: str | None, users: Sequence[User]) -> None:
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


def steps_of(
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


def slack_of(
    specs: Sequence[str], slack_users: Sequence[str], anonymous: bool, named: Sequence[User]
) -> SlackInteractivity | None:
    """Answering in Slack (``--notify slack`` with ``SLACK_SIGNING_SECRET``), if on."""
    if not specs and not slack_users and not anonymous:
        return None
    from .notify._config import slack_interactivity

    names = [user.name for user in named]
    return slack_interactivity(specs, slack_users, anonymous, names, os.environ)


def routing_of(
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
