"""The Slack channel: a Block Kit message per notice through an incoming webhook."""

from __future__ import annotations

import json
from typing import Final

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    HeaderBlock,
    PlainTextObject,
    SectionBlock,
)

from ._dispatch import DeliveryError, Notice, Outcome
from ._http import post_json
from ._slack_interactive import SlackInteractivity
from ._text import OUTCOME_WORDS, cut, lines_of, subject_of

__all__ = ["SlackNotifier", "escape_mrkdwn", "notice_blocks"]

MAX_HEADER: Final = 150
MAX_SECTION: Final = 3000
MAX_QUESTIONS: Final = 20
"""Questions shown in one message (Slack allows 50 blocks); a link opens the rest."""


def escape_mrkdwn(text: str) -> str:
    """Text for a message's ``text`` field, where Slack reads ``<...>`` as links and
    mentions (``<!channel>``): ``&``, ``<`` and ``>`` escaped as Slack asks. The channel
    also sends ``"mrkdwn": false``, so ``*bold*``, ``_it_`` and ``~strike~`` stay text."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def notice_blocks(notice: Notice) -> list[Block]:
    """The message: a header naming the question, who asks, each question as plain text
    (never mrkdwn: model text cannot link or mention), and a button to the answer link."""
    view = notice.view
    blocks: list[Block] = [
        HeaderBlock(text=PlainTextObject(text=cut(subject_of(view), MAX_HEADER)))
    ]
    if view.provenance is not None and (said := view.provenance.summary()):
        blocks.append(ContextBlock(elements=[PlainTextObject(text=cut(said, MAX_SECTION))]))
    for question in view.questions[:MAX_QUESTIONS]:
        text = cut("\n".join(lines_of(question)), MAX_SECTION)
        blocks.append(SectionBlock(text=PlainTextObject(text=text)))
    if notice.link is not None:
        button = ButtonElement(
            text=PlainTextObject(text="Answer"),
            url=notice.link,
            action_id="answer",
            style="primary",
        )
        blocks.append(ActionsBlock(elements=[button]))
        note = "The button works once, for this question only."
        blocks.append(ContextBlock(elements=[PlainTextObject(text=note)]))
    return blocks


class SlackNotifier:
    """Posts each pending notice to a Slack incoming webhook (``url`` is its secret: read it
    from the environment). With ``on_settle``, a short message says how it ended. A
    redirect is never followed: it would re-post the answer link to the host it names.

    With ``interactive`` (a :class:`SlackInteractivity`, whose Request URL the page's
    server serves), a one-question notice carries its choices as buttons answered in
    Slack, and once the question settles the messages clicked are replaced with how it
    ended; without it, the notice is a link to the page."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 10.0,
        on_settle: bool = False,
        interactive: SlackInteractivity | None = None,
    ) -> None:
        if not url.startswith(("https://", "http://")):
            raise ValueError("a Slack webhook URL is https://hooks.slack.com/...")
        self._url = url
        self.timeout = timeout
        self.on_settle = on_settle
        self.interactive = interactive
        self.name = "slack"

    async def pending(self, notice: Notice) -> None:
        text = escape_mrkdwn(subject_of(notice.view))
        blocks = None if self.interactive is None else self.interactive.blocks(notice)
        await self._send(text, notice_blocks(notice) if blocks is None else blocks)

    async def settled(self, notice: Notice, outcome: Outcome | None) -> None:
        if self.interactive is not None:
            await self.interactive.settled(notice.question_id, outcome, notice.answerer)
        if self.on_settle:
            said = f"{subject_of(notice.view)}: it {OUTCOME_WORDS[outcome]}."
            await self._send(escape_mrkdwn(said), None)

    async def _send(self, text: str, blocks: list[Block] | None) -> None:
        # The fallback ``text`` (notifications, and where blocks do not show) is never
        # read as mrkdwn: the question's own ``*``, ``_`` and ``~`` stay as typed.
        message: dict[str, object] = {"text": text, "mrkdwn": False}
        if blocks is not None:
            message["blocks"] = [block.to_dict() for block in blocks]
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
        headers = {"Content-Type": "application/json; charset=utf-8"}
        status = await post_json(self._url, body, headers, seconds=self.timeout, peer="Slack")
        if status != 200:
            permanent = status < 500 and status != 429
            raise DeliveryError(f"Slack answered {status}", permanent=permanent)
