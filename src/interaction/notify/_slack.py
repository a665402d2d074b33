"""The Slack channel: a Block Kit message per notice through an incoming webhook."""

from __future__ import annotations

import logging
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
from slack_sdk.webhook.async_client import AsyncWebhookClient

from ._dispatch import DeliveryError, Notice, Outcome
from ._text import OUTCOME_WORDS, cut, lines_of, subject_of

__all__ = ["SlackNotifier", "escape_mrkdwn", "notice_blocks"]

# slack_sdk logs each request's URL at DEBUG when its logger's own level allows it, and an
# incoming webhook's URL is its secret: its logger here is held at INFO.
_SDK_LOG: Final = logging.getLogger("interaction.notify.slack_sdk")
_SDK_LOG.setLevel(logging.INFO)

MAX_HEADER: Final = 150
MAX_SECTION: Final = 3000
MAX_QUESTIONS: Final = 20
"""Questions shown in one message (Slack allows 50 blocks); a link opens the rest."""


def escape_mrkdwn(text: str) -> str:
    """Text for a message's ``text`` field, where Slack reads ``<...>`` as links and
    mentions (``<!channel>``): ``&``, ``<`` and ``>`` escaped as Slack asks."""
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
    from the environment). With ``on_settle``, a short message says how it ended."""

    def __init__(self, url: str, *, timeout: float = 10.0, on_settle: bool = False) -> None:
        if not url.startswith(("https://", "http://")):
            raise ValueError("a Slack webhook URL is https://hooks.slack.com/...")
        # The dispatcher retries: the client's own retry handlers are off.
        self._client = AsyncWebhookClient(
            url, timeout=int(timeout), logger=_SDK_LOG, retry_handlers=[]
        )
        self.on_settle = on_settle
        self.name = "slack"

    async def pending(self, notice: Notice) -> None:
        text = escape_mrkdwn(subject_of(notice.view))
        await self._send(text, notice_blocks(notice))

    async def settled(self, notice: Notice, outcome: Outcome | None) -> None:
        if self.on_settle:
            said = f"{subject_of(notice.view)}: it {OUTCOME_WORDS[outcome]}."
            await self._send(escape_mrkdwn(said), None)

    async def _send(self, text: str, blocks: list[Block] | None) -> None:
        try:
            reply = await self._client.send(text=text, blocks=blocks)
        except Exception as error:  # aiohttp's errors may hold the URL, its secret
            raise DeliveryError(f"could not reach Slack ({type(error).__name__})") from None
        if reply.status_code != 200:
            permanent = reply.status_code < 500 and reply.status_code != 429
            raise DeliveryError(f"Slack answered {reply.status_code}", permanent=permanent)
