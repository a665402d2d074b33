"""The email channel: a plain-text and HTML mail per notice, sent with aiosmtplib."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime
from typing import Final

import aiosmtplib

from ._dispatch import DeliveryError, Notice, Outcome
from ._text import OUTCOME_WORDS, lines_of, recipient_of, subject_of

__all__ = ["EmailNotifier", "notice_mail"]

_NOT_ATEXT: Final = re.compile(r"[^A-Za-z0-9_.-]")
_STYLE: Final = "font-family:system-ui,sans-serif;line-height:1.5;max-width:40rem"


def _domain(address: str) -> str:
    return address.rpartition("@")[2] or "localhost"


def message_id(notice: Notice, sender: str, settled: bool = False) -> str:
    """The ``Message-ID`` of a notice's mail: the same on every retry, so an inbox drops a
    duplicate, and known to the settle mail, which names it to thread with it."""
    key = _NOT_ATEXT.sub("-", notice.idempotency_key)  # a relay's ids are URL-safe already
    tail = ".settled" if settled else ""
    return f"<interaction.{key}{tail}@{_domain(sender)}>"


def _headed(subject: str, sender: str, to: tuple[str, ...], message_id: str) -> EmailMessage:
    message = EmailMessage()
    message["Subject"] = subject
    message["From"] = sender
    message["To"] = ", ".join(to)
    message["Date"] = format_datetime(datetime.now(UTC))  # RFC 5322 §3.6: required
    message["Message-ID"] = message_id
    return message


def notice_mail(notice: Notice, sender: str, to: tuple[str, ...]) -> EmailMessage:
    """The mail of a pending notice: the questions as text and as HTML (every model
    string escaped for HTML), who asks, and the signed answer link."""
    view = notice.view
    text: list[str] = []
    parts: list[str] = [f'<div style="{_STYLE}">']
    if (recipient := recipient_of(notice)) is not None:
        text += [recipient, ""]
        parts.append(f"<p><strong>{html.escape(recipient)}</strong></p>")
    if view.provenance is not None and (said := view.provenance.summary()):
        text += [f"({said})", ""]
        parts.append(f'<p style="color:#555">{html.escape(said)}</p>')
    for question in view.questions:
        lines = lines_of(question)
        text += [*lines, ""]
        body = "<br>".join(html.escape(line) for line in lines)
        parts.append(f"<p>{body}</p>")
    if notice.link is not None:
        text += [f"Answer: {notice.link}", "(the link works once, for this question only)"]
        href = html.escape(notice.link, quote=True)
        parts.append(
            f'<p><a href="{href}" style="font-weight:600">Answer this question</a></p>'
            '<p style="color:#555">The link works once, for this question only.</p>'
        )
    parts.append("</div>")
    message = _headed(subject_of(view), sender, to, message_id(notice, sender))
    message.set_content("\n".join(text) + "\n")
    message.add_alternative("\n".join(parts) + "\n", subtype="html")
    return message


class EmailNotifier:
    """Mails each pending notice to ``to`` from ``sender`` through an SMTP server.

    ``use_tls`` connects with TLS (port 465); otherwise STARTTLS is used when the server
    offers it. ``password`` is read by the caller from the environment, never logged.
    With ``on_settle``, a short mail says how the question ended.
    """

    def __init__(  # the SMTP settings, all keyword-only
        self,
        *,
        host: str,
        sender: str,
        to: tuple[str, ...] | list[str],
        port: int | None = None,
        username: str | None = None,
        password: str | None = None,
        use_tls: bool = False,
        timeout: float = 30.0,
        on_settle: bool = False,
    ) -> None:
        recipients = tuple(to)
        if not recipients or not all("@" in address for address in (sender, *recipients)):
            raise ValueError("email needs a sender and at least one recipient address")
        self.host, self.port, self.sender, self.to = host, port, sender, recipients
        self._username, self._password = username, password
        self.use_tls, self.timeout, self.on_settle = use_tls, timeout, on_settle
        self.name = f"email via {host}"

    async def pending(self, notice: Notice) -> None:
        await self._send(notice_mail(notice, self.sender, self.to))

    async def settled(self, notice: Notice, outcome: Outcome | None) -> None:
        if not self.on_settle:
            return
        subject = "Re: " + subject_of(notice.view)
        message = _headed(subject, self.sender, self.to, message_id(notice, self.sender, True))
        first = message_id(notice, self.sender)  # the pending mail's: the thread's start
        message["In-Reply-To"] = first
        message["References"] = first
        message.set_content(f"The question {OUTCOME_WORDS[outcome]}; the link no longer works.\n")
        await self._send(message)

    async def _send(self, message: EmailMessage) -> None:
        try:
            await aiosmtplib.send(
                message,
                hostname=self.host,
                port=self.port,
                username=self._username,
                password=self._password,
                use_tls=self.use_tls,
                timeout=self.timeout,
            )
        except aiosmtplib.SMTPResponseException as error:
            permanent = 500 <= error.code < 600  # 5xx: SMTP's "do not retry"
            raise DeliveryError(f"the server said {error.code}", permanent=permanent) from None
        except (aiosmtplib.SMTPException, OSError) as error:
            raise DeliveryError(f"could not send ({type(error).__name__})") from None
