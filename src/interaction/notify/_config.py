"""``--notify`` specs as steps: ``KIND[@DELAY]=TARGET``, secrets from the environment."""

from __future__ import annotations

import re
import socket
from collections.abc import Collection, Mapping, Sequence
from typing import Final
from urllib.parse import unquote, urlsplit

from ._dispatch import Notifier, Step
from ._email import EmailNotifier
from ._slack import SlackNotifier
from ._slack_interactive import SlackInteractivity
from ._webhook import WebhookNotifier

__all__ = ["ENV", "parse_delay", "slack_interactivity", "steps_from_specs"]

ENV: Final = {
    "webhook": "INTERACTION_WEBHOOK_SECRET",
    "smtp": "INTERACTION_SMTP_URL",
    "smtp_password": "INTERACTION_SMTP_PASSWORD",
    "smtp_from": "INTERACTION_SMTP_FROM",
    "slack": "INTERACTION_SLACK_WEBHOOK_URL",
    "slack_signing": "SLACK_SIGNING_SECRET",
    "slack_bot": "SLACK_BOT_TOKEN",
}
"""The environment variables the channels read their secrets and servers from."""

_DELAY: Final = re.compile(r"(\d{1,6})([smhd]?)")
_UNITS: Final = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_KINDS: Final = ("webhook", "email", "slack")


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


def _email(target: str, environ: Mapping[str, str]) -> EmailNotifier:
    to = [address.strip() for address in target.split(",") if address.strip()]
    url = urlsplit(_need(environ, ENV["smtp"], "--notify email"))
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


def _channel(
    kind: str,
    target: str | None,
    environ: Mapping[str, str],
    slack: SlackInteractivity | None = None,
) -> Notifier:
    if kind == "webhook":
        if not target:
            raise ValueError("--notify webhook=URL needs the URL")
        return WebhookNotifier(target, _need(environ, ENV["webhook"], "--notify webhook"))
    if kind == "email":
        if not target:
            raise ValueError("--notify email=ADDRESS[,ADDRESS...] needs an address")
        return _email(target, environ)
    url = target or _need(environ, ENV["slack"], "--notify slack (without =URL)")
    return SlackNotifier(url, interactive=slack)


def steps_from_specs(
    specs: Sequence[str],
    environ: Mapping[str, str],
    *,
    slack: SlackInteractivity | None = None,
) -> list[Step]:
    """The steps of ``--notify`` specs (``webhook=URL``, ``email@30m=a@x.org``,
    ``slack@5m`` with the URL in the environment); ``ValueError`` with one line that
    names the bad spec, and never a secret. With ``slack``, Slack notices are answered
    in Slack."""
    steps = []
    for spec in specs:
        head, equals, target = spec.partition("=")
        kind, at, delay = head.strip().partition("@")
        if kind not in _KINDS:
            raise ValueError(f"--notify {head!r}: the kinds are {', '.join(_KINDS)}")
        try:
            after = parse_delay(delay) if at else 0.0
            channel = _channel(kind, target.strip() if equals else None, environ, slack)
        except ValueError as exc:
            said = str(exc)
            raise ValueError(
                said if said.startswith("--notify") else f"--notify {kind}: {said}"
            ) from None
        steps.append(Step(channel, after))
    return steps


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
