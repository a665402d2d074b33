"""``--notify`` specs as steps: ``KIND[@DELAY]=TARGET``, secrets from the environment."""

from __future__ import annotations

import re
import socket
from collections.abc import Collection, Mapping, Sequence
from typing import Final
from urllib.parse import unquote, urlsplit

from .._core import Team
from ._dispatch import Notifier, Step
from ._email import EmailNotifier
from ._routing import Escalation, Routing
from ._slack import SlackNotifier
from ._slack_interactive import SlackInteractivity
from ._telegram import API_URL, TelegramNotifier
from ._webhook import WebhookNotifier

__all__ = [
    "ENV",
    "parse_delay",
    "routing_from_specs",
    "slack_interactivity",
    "steps_from_specs",
    "telegram_users_from_specs",
]

ENV: Final = {
    "webhook": "INTERACTION_WEBHOOK_SECRET",
    "smtp": "INTERACTION_SMTP_URL",
    "smtp_password": "INTERACTION_SMTP_PASSWORD",
    "smtp_from": "INTERACTION_SMTP_FROM",
    "slack": "INTERACTION_SLACK_WEBHOOK_URL",
    "slack_signing": "SLACK_SIGNING_SECRET",
    "slack_bot": "SLACK_BOT_TOKEN",
    "telegram": "TELEGRAM_BOT_TOKEN",
    "telegram_api": "TELEGRAM_API_URL",
}
"""The environment variables the channels read their secrets and servers from."""

_DELAY: Final = re.compile(r"(\d{1,6})([smhd]?)")
_UNITS: Final = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_KINDS: Final = ("webhook", "email", "slack", "telegram")
_VARIABLE: Final = re.compile(r"[A-Z_][A-Z0-9_]*")
_CHAT: Final = re.compile(r"-?[0-9]{1,20}", re.ASCII)


def parse_delay(text: str) -> float:
    """``90``, ``90s``, ``5m``, ``2h``, ``1d`` as seconds; ``ValueError`` otherwise."""
    found = _DELAY.fullmatch(text.strip())
    if found is None:
        raise ValueError(f"{text!r} is not a delay (write 90s, 5m, 2h or 1d)")
    return float(int(found.group(1)) * _UNITS[found.group(2)])


def _need(environ: Mapping[str, str], name: str, what: str) -> str:
    value = environ.get(name, "")
    if not value:
        raise ValueError(f"{what} needs {name} in the environment")
    return value


def _email(target: str, environ: Mapping[str, str], what: str) -> EmailNotifier:
    to = [address.strip() for address in target.split(",") if address.strip()]
    url = urlsplit(_need(environ, ENV["smtp"], what))
    if url.scheme not in {"smtp", "smtps"} or not url.hostname:
        raise ValueError(f"{ENV['smtp']} is smtp://[USER@]HOST[:PORT] or smtps://...")
    try:
        port = url.port
    except ValueError:
        raise ValueError(f"{ENV['smtp']} has a bad port") from None
    sender = environ.get(ENV["smtp_from"]) or f"interaction@{socket.gethostname()}"
    return EmailNotifier(
        host=url.hostname,
        port=port,
        sender=sender,
        to=to,
        username=unquote(url.username) if url.username else None,
        password=environ.get(ENV["smtp_password"]) or None,
        use_tls=url.scheme == "smtps",
    )


def telegram_users_from_specs(specs: Sequence[str], names: Sequence[str] = ()) -> dict[int, str]:
    """The Telegram user id -> named user map of ``--telegram-user NAME=ID`` specs; with
    ``names`` (the ``--user`` names), each NAME must be one. ``ValueError``, one line."""
    users: dict[int, str] = {}
    for spec in specs:
        name, equals, number = (part.strip() for part in spec.partition("="))
        if not equals or not name or not _CHAT.fullmatch(number):
            raise ValueError(
                f"--telegram-user {spec!r}: write NAME=ID, ID the person's numeric Telegram id"
            )
        if names and name not in names:
            raise ValueError(f"--telegram-user {spec!r}: {name} is not a --user")
        if int(number) in users:
            raise ValueError(f"--telegram-user: the Telegram id {number} is mapped twice")
        users[int(number)] = name
    return users


def _telegram(
    target: str | None, environ: Mapping[str, str], users: Mapping[int, str], flag: str
) -> TelegramNotifier:
    chats = [chat.strip() for chat in (target or "").split(",") if chat.strip()]
    if not chats or not all(_CHAT.fullmatch(chat) for chat in chats):
        raise ValueError(f"{flag}=CHAT_ID[,CHAT_ID...] needs numeric chat ids")
    token = _need(environ, ENV["telegram"], flag)
    base_url = environ.get(ENV["telegram_api"]) or API_URL
    return TelegramNotifier(token, [int(chat) for chat in chats], users=users, base_url=base_url)


def _channel(
    kind: str,
    target: str | None,
    environ: Mapping[str, str],
    slack: SlackInteractivity | None = None,
    *,
    flag: str = "--notify ",
    telegram_users: Mapping[int, str] | None = None,
) -> Notifier:
    """The channel of ``KIND=TARGET``; errors begin with ``flag`` (the spec's option)."""
    if kind == "webhook":
        if not target:
            raise ValueError(f"{flag}webhook=URL needs the URL")
        return WebhookNotifier(target, _need(environ, ENV["webhook"], f"{flag}webhook"))
    if kind == "email":
        if not target:
            raise ValueError(f"{flag}email=ADDRESS[,ADDRESS...] needs an address")
        return _email(target, environ, f"{flag}email")
    if kind == "telegram":
        return _telegram(target, environ, telegram_users or {}, f"{flag}telegram")
    if target and _VARIABLE.fullmatch(target):  # the URL is a secret: kept out of ps
        return SlackNotifier(_need(environ, target, f"{flag}slack={target}"), interactive=slack)
    url = target or _need(environ, ENV["slack"], f"{flag}slack (without =URL)")
    return SlackNotifier(url, interactive=slack)


def steps_from_specs(
    specs: Sequence[str],
    environ: Mapping[str, str],
    *,
    slack: SlackInteractivity | None = None,
    telegram_users: Mapping[int, str] | None = None,
) -> list[Step]:
    """The steps of ``--notify`` specs (``webhook=URL``, ``email@30m=a@x.org``,
    ``slack@5m`` with the URL in the environment, ``telegram=CHAT_ID``); ``ValueError``
    with one line that names the bad spec, and never a secret. With ``slack``, Slack
    notices are answered in Slack; Telegram's buttons answer as ``telegram_users``."""
    steps = []
    for spec in specs:
        head, equals, target = spec.partition("=")
        kind, at, delay = head.strip().partition("@")
        if kind not in _KINDS:
            raise ValueError(f"--notify {head!r}: the kinds are {', '.join(_KINDS)}")
        try:
            after = parse_delay(delay) if at else 0.0
            given = target.strip() if equals else None
            channel = _channel(kind, given, environ, slack, telegram_users=telegram_users)
        except ValueError as exc:
            said = str(exc)
            raise ValueError(
                said if said.startswith("--notify") else f"--notify {kind}: {said}"
            ) from None
        steps.append(Step(channel, after))
    return steps


def _route(
    flag: str,
    spec: str,
    environ: Mapping[str, str],
    team: Team | None,
    slack: SlackInteractivity | None,
) -> tuple[str, Notifier]:
    """``NAME:KIND=TARGET`` of ``--notify-user`` or ``--notify-group``: the name and its
    channel. With a ``team``, the name must be one of its users, or of its groups."""
    name, colon, channel = spec.partition(":")
    name, what = name.strip(), flag.removeprefix("--notify")
    if not colon or not name:
        raise ValueError(f"{flag} {spec!r}: write NAME:KIND=TARGET (as in alice:email=a@x.org)")
    if team is not None and name not in (team.users if what == "-user" else team.groups):
        raise ValueError(f"{flag} {name}: {name} is not a -{what}")
    head, equals, target = channel.partition("=")
    kind = head.strip()
    if kind not in _KINDS:
        raise ValueError(f"{flag} {name}:{head}: the kinds are {', '.join(_KINDS)}")
    prefix = f"{flag} {name}:"
    try:
        return name, _channel(kind, target.strip() if equals else None, environ, slack, flag=prefix)
    except ValueError as exc:
        said = str(exc)
        raise ValueError(said if said.startswith(flag) else f"{prefix}{kind}: {said}") from None


def routing_from_specs(
    *,
    users: Sequence[str] = (),
    groups: Sequence[str] = (),
    escalations: Sequence[str] = (),
    environ: Mapping[str, str],
    team: Team | None = None,
    slack: SlackInteractivity | None = None,
) -> Routing | None:
    """The :class:`Routing` of ``--notify-user NAME:KIND=TARGET``, ``--notify-group
    NAME:KIND=TARGET`` and ``--escalate FROM@DELAY=TO`` (``None`` without any); a channel
    is spelled as for ``--notify`` (``slack=VARIABLE`` reads the URL from that variable).
    With a ``team`` (the deployment's ``--user`` and ``--group``), every name must be one
    of its users or groups; with ``slack``, Slack notices are answered in Slack.
    ``ValueError`` with one line naming the bad spec, and never a secret."""
    if not (users or groups or escalations):
        return None
    channels: dict[str, list[Notifier]] = {}
    for flag, specs in (("--notify-user", users), ("--notify-group", groups)):
        for spec in specs:
            name, notifier = _route(flag, spec, environ, team, slack)
            channels.setdefault(name, []).append(notifier)
    steps = []
    for spec in escalations:
        head, equals, to = spec.partition("=")
        source, at, delay = head.rpartition("@")  # a name may hold an @, a delay never
        source, to = source.strip(), to.strip()
        if not (equals and at and source and to):
            raise ValueError(f"--escalate {spec!r}: write FROM@DELAY=TO (as in ops@30m=oncall)")
        for name in (source, to):
            if team is not None and name not in team.users and name not in team.groups:
                raise ValueError(f"--escalate {spec}: {name} is not a --user or --group")
        try:
            steps.append(Escalation(source, parse_delay(delay), to))
        except ValueError as exc:
            raise ValueError(f"--escalate {spec}: {exc}") from None
    return Routing(channels, steps, team)


def slack_interactivity(
    specs: Sequence[str],
    slack_users: Sequence[str],
    anonymous: bool,
    names: Collection[str],
    environ: Mapping[str, str],
) -> SlackInteractivity | None:
    """Answering in Slack, for ``--notify slack`` with ``SLACK_SIGNING_SECRET`` set
    (``None`` without either: the notice is a link); ``--slack-user NAME=SLACK_ID`` maps
    a Slack user to the ``--user`` named ``NAME``. ``ValueError`` with one line, never a
    secret, for a bad mapping or one that cannot apply."""
    secret = environ.get(ENV["slack_signing"], "")
    slack = any(spec.partition("=")[0].partition("@")[0].strip() == "slack" for spec in specs)
    if not (secret and slack):
        if slack_users or anonymous:
            flag = "--slack-user" if slack_users else "--slack-anonymous"
            raise ValueError(
                f"{flag} answers in Slack: it needs --notify slack and"
                f" {ENV['slack_signing']} in the environment"
            )
        return None
    users: dict[str, str] = {}
    for spec in slack_users:
        name, equals, slack_id = (part.strip() for part in spec.partition("="))
        if not equals or not name or not slack_id:
            raise ValueError(f"--slack-user {spec!r}: write NAME=SLACK_USER_ID (alice=U01ABC)")
        if name not in names:
            raise ValueError(f"--slack-user {spec!r}: there is no --user named {name!r}")
        if slack_id in users:
            raise ValueError(f"--slack-user: the Slack user {slack_id!r} is mapped twice")
        users[slack_id] = name
    try:
        return SlackInteractivity(
            secret,
            users=users,
            anonymous=anonymous,
            bot_token=environ.get(ENV["slack_bot"]) or None,
        )
    except ValueError as exc:
        raise ValueError(f"--slack-user: {exc}") from None
