"""The Telegram channel: a bot message per waiting question, answered with its buttons.

A notice is a plain-text message (never parsed as HTML or Markdown: model text cannot
format, link or mention) to each configured chat, with an inline keyboard for a request
of one question with options: Approve / Deny for a permission, one button per option for
a choice, toggles and Send for a multi-select. Anything else (own words, a batch of
questions, free text) is answered on the page through the notice's answer link.

Clicks come back through the bot's own update source, long polling (``getUpdates``,
started by :meth:`TelegramNotifier.answering`): it needs no public URL, and only Telegram,
reached with the bot's token, hands out updates, so nothing else can forge a click. A
click's ``callback_data`` is a short reference that is never trusted: it must name a
question this bot sent to that very chat and message, the clicking Telegram user must be
mapped to a named user, and the answer is taken as the page takes it: through the page's
own answer route when ``serve`` lends it (:class:`AnswerDesk`), else through the one claim
every UI makes (``RelayBackend.submit(answerer=...)``); either way the relay decides
whether the question still waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import secrets
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, LinkPreviewOptions
from telegram.error import BadRequest, Forbidden, InvalidToken, RetryAfter, TelegramError
from telegram.request import HTTPXRequest

from .._core import (
    AskUserQuestionAnswer,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    UserInteractionError,
    answer_item,
    quorum_progress,
)
from ..display import RequestView
from ..relay import NOT_PENDING, RelayBackend
from ._dispatch import SYSTEM_CLOCK, Clock, DeliveryError, Notice, Outcome, Retry, Step
from ._slack_interactive import AnswerDesk
from ._text import OUTCOME_WORDS, cut, lines_of, subject_of

__all__ = [
    "API_URL",
    "MAX_OPTIONS",
    "MAX_TEXT",
    "TelegramNotifier",
    "answering",
    "telegram_keyboard",
    "telegram_text",
]

log: Final = logging.getLogger("interaction.notify")

API_URL: Final = "https://api.telegram.org/bot"
MAX_TEXT: Final = 4096
"""Telegram's longest message text; a longer notice is cut (the link opens the rest)."""
MAX_BUTTON: Final = 64
MAX_OPTIONS: Final = 20
"""Options shown as buttons; a question with more is answered on the page."""
MAX_ALERT: Final = 200
"""Telegram's longest ``answerCallbackQuery`` text."""
MAX_UPDATES: Final = 100
"""Updates asked for in one ``getUpdates`` (Telegram's own bound)."""
SETTLED_KEPT: Final = 10_000
"""How many settled questions' outcomes the bot remembers, to tell a late click."""

_RETRY: Final = Retry()
_CALLBACK: Final = re.compile(r"([A-Za-z0-9_-]{8}):(?:([ot])([0-9]{1,2})|(s))", re.ASCII)
_BUTTON_NAMES: Final = {"allow": "Approve", "allow-always": "Always approve", "deny": "Deny"}


def telegram_text(notice: Notice) -> str:
    """The message: who asks, each question as plain lines, and the answer link."""
    view = notice.view
    parts = [subject_of(view)]
    if view.provenance is not None and (said := view.provenance.summary()):
        parts.append(said)
    parts += ["\n".join(lines_of(question)) for question in view.questions]
    tail = ""
    if notice.link is not None:
        tail = f"\n\nAnswer on the page (once, this question only): {notice.link}"
    return cut("\n\n".join(parts), MAX_TEXT - len(tail)) + tail


def _answerable(view: RequestView) -> bool:
    """Whether buttons can answer the request: one question, with a few options."""
    return len(view.questions) == 1 and 0 < len(view.questions[0].options) <= MAX_OPTIONS


def telegram_keyboard(
    view: RequestView, ref: str, chosen: frozenset[int] = frozenset()
) -> InlineKeyboardMarkup | None:
    """The buttons of a request buttons can answer (``None`` otherwise); each button's
    ``callback_data`` is ``<ref>:o<n>`` (choose option n), ``<ref>:t<n>`` (toggle it) or
    ``<ref>:s`` (send the toggled ones), at most 12 bytes of Telegram's 64."""
    if not _answerable(view):
        return None
    question = view.questions[0]
    rows: list[list[InlineKeyboardButton]] = []
    for index, option in enumerate(question.options):
        text = _BUTTON_NAMES[option.role] if option.role is not None else option.text
        if question.multi_select:
            mark = "✅ " if index in chosen else "▫️ "
            rows.append(
                [
                    InlineKeyboardButton(
                        cut(mark + text, MAX_BUTTON), callback_data=f"{ref}:t{index}"
                    )
                ]
            )
        else:
            rows.append(
                [InlineKeyboardButton(cut(text, MAX_BUTTON), callback_data=f"{ref}:o{index}")]
            )
    if question.multi_select:
        rows.append([InlineKeyboardButton("Send", callback_data=f"{ref}:s")])
    if question.permission is not None and len(rows) <= 3:
        rows = [[button for row in rows for button in row]]  # Approve / Deny side by side
    return InlineKeyboardMarkup(rows)


class _RawUpdates(HTTPXRequest):
    """The ``getUpdates`` request, which keeps the updates as Telegram sent them and hands
    the library none (through ``parse_json_payload``, its documented seam): the library's
    parsing of a batch fails whole on one malformed update, and the ids that confirm the
    batch are lost with it. This module reads each update itself, as untrusted input."""

    def __init__(self, timeout: float) -> None:
        super().__init__(
            connection_pool_size=1,
            read_timeout=timeout,
            write_timeout=timeout,
            connect_timeout=timeout,
        )
        self.updates: list[object] = []

    def parse_json_payload(self, payload: bytes) -> dict[str, object]:  # type: ignore[override]
        parsed: object = super().parse_json_payload(payload)
        if not isinstance(parsed, dict):
            return {"ok": False, "description": "not an object"}
        result = parsed.get("result")
        if parsed.get("ok") is not True or not isinstance(result, list):
            return parsed
        self.updates = list(result[:MAX_UPDATES])
        return {**parsed, "result": []}


@dataclass(eq=False)
class _Sent:
    """A question this bot sent: its messages by chat, and a multi-select's toggles."""

    question_id: str
    request: AskUserQuestionRequest
    view: RequestView
    ref: str
    text: str
    messages: dict[int, int] = field(default_factory=dict)  # chat id -> message id
    chosen: set[int] = field(default_factory=set)
    # What a click here answers, and who clicked: set before the answer is submitted, since
    # the relay may report the question settled before the submission returns.
    decided: tuple[str, str] | None = None
    sent: asyncio.Event = field(default_factory=asyncio.Event)  # each chat tried once


@dataclass(frozen=True, slots=True)
class _Click:
    """A callback query, once every field it needs was found with its type."""

    id: str
    user: int
    chat: int
    message: int
    data: str


def _int(value: object) -> int | None:
    return value if type(value) is int else None


def click_of(update: object) -> _Click | None:
    """The button click an update holds, or ``None`` for anything else or anything
    malformed (every field is checked: an update is untrusted input)."""
    if not isinstance(update, dict):
        return None
    query = update.get("callback_query")
    if not isinstance(query, dict):
        return None
    sender, message, data, query_id = (
        query.get("from"),
        query.get("message"),
        query.get("data"),
        query.get("id"),
    )
    if not (isinstance(sender, dict) and isinstance(message, dict)):
        return None
    chat = message.get("chat")
    user, message_id = _int(sender.get("id")), _int(message.get("message_id"))
    chat_id = _int(chat.get("id")) if isinstance(chat, dict) else None
    if user is None or message_id is None or chat_id is None:
        return None
    if not (isinstance(query_id, str) and 0 < len(query_id) <= 64):
        return None
    if not (isinstance(data, str) and len(data.encode("utf-8", "replace")) <= 64):
        return None
    return _Click(query_id, user, chat_id, message_id, data)


def _outcome_line(outcome: Outcome | None, answerer: str | None, decided: str | None) -> str:
    line = f"It {OUTCOME_WORDS[outcome]}"
    if answerer is not None and outcome in ("answered", "cancelled"):
        line += f" by {answerer}"
    if decided is not None and outcome == "answered":
        line += f": {decided}"
    return line + "."


class TelegramNotifier:
    """Sends each pending notice to the Telegram ``chats`` (numeric chat ids) through the
    bot of ``token`` (read it from ``TELEGRAM_BOT_TOKEN``), with buttons that answer it, and
    edits each message to the outcome, and who decided, once it settles anywhere.

    ``users`` maps a Telegram user id to the named user a click answers as; a click by
    anyone else is told so and changes nothing. ``base_url`` is the Bot API's (a local
    Bot API server, or a test's stand-in). Clicks are read only while
    :meth:`answering` runs.
    """

    def __init__(
        self,
        token: str,
        chats: Sequence[int],
        *,
        users: Mapping[int, str] | None = None,
        base_url: str = API_URL,
        timeout: float = 10.0,
        poll_timeout: int = 30,
        retry: Retry = _RETRY,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        if not token or any(c.isspace() or c == "/" for c in token):
            raise ValueError("a Telegram bot token is the BotFather's 123456:ABC-DEF... text")
        if not chats or any(type(chat) is not int for chat in chats):
            raise ValueError("Telegram chats are given by their numeric ids")
        if not base_url.startswith(("https://", "http://")):
            raise ValueError("a Telegram Bot API URL is https://... (or http:// on loopback)")
        self.chats = tuple(dict.fromkeys(chats))
        self.users = dict(users or {})
        self.timeout = timeout
        self.poll_timeout = poll_timeout
        self.retry = retry
        self.clock = clock
        self.name = "telegram"
        self._sending = HTTPXRequest(
            connection_pool_size=8,
            read_timeout=timeout,
            write_timeout=timeout,
            connect_timeout=timeout,
        )
        self._polling = _RawUpdates(timeout)
        self._bot = Bot(
            token, base_url=base_url, request=self._sending, get_updates_request=self._polling
        )
        self._sent: dict[str, _Sent] = {}  # by question id
        self._refs: dict[str, _Sent] = {}  # by callback reference
        self._settled: OrderedDict[str, str] = OrderedDict()  # reference -> outcome line
        self._desk: AnswerDesk | None = None

    # ------------------------------------------------------------------ the notifier

    async def pending(self, notice: Notice) -> None:
        sent = self._sent.get(notice.question_id)
        if sent is None:
            ref = secrets.token_urlsafe(6)
            sent = _Sent(
                notice.question_id, notice.request, notice.view, ref, telegram_text(notice)
            )
            self._sent[notice.question_id] = self._refs[ref] = sent
        keyboard = telegram_keyboard(sent.view, sent.ref, frozenset(sent.chosen))
        failed: list[TelegramError] = []
        for chat in self.chats:
            if chat in sent.messages:  # sent before a failure elsewhere, or by an earlier step
                continue
            try:
                message = await self._bot.send_message(
                    chat,
                    sent.text,
                    reply_markup=keyboard,
                    link_preview_options=LinkPreviewOptions(is_disabled=True),
                )
            except TelegramError as error:
                failed.append(error)
                continue
            sent.messages[chat] = message.message_id
        sent.sent.set()
        if failed:
            raise _delivery_error(failed[0], "sendMessage")

    async def settled(self, notice: Notice, outcome: Outcome | None) -> None:
        sent = self._sent.get(notice.question_id)
        if sent is None:
            return
        said = sent.decided[1] if sent.decided and sent.decided[0] == notice.answerer else None
        line = _outcome_line(outcome, notice.answerer, said)
        self._remember(sent.ref, line)
        failed: list[TelegramError] = []
        for chat, message in list(sent.messages.items()):
            try:  # without reply_markup, the keyboard goes: nobody clicks a stale button
                await self._bot.edit_message_text(
                    f"{cut(sent.text, MAX_TEXT - len(line) - 2)}\n\n{line}",
                    chat_id=chat,
                    message_id=message,
                    link_preview_options=LinkPreviewOptions(is_disabled=True),
                )
            except BadRequest as error:  # gone, or already showing this: nothing to edit
                log.warning("notify: telegram: a message was not edited: %s", _said(error))
            except TelegramError as error:
                failed.append(error)
                continue
            del sent.messages[chat]
        if failed:
            raise _delivery_error(failed[0], "editMessageText")
        self._refs.pop(sent.ref, None)
        self._sent.pop(notice.question_id, None)

    def _remember(self, ref: str, line: str) -> None:
        self._settled[ref] = line
        if len(self._settled) > SETTLED_KEPT:
            self._settled.popitem(last=False)

    # ------------------------------------------------------------------ the clicks

    @contextlib.asynccontextmanager
    async def answering(
        self, relay: RelayBackend, desk: AnswerDesk | None = None
    ) -> AsyncIterator[TelegramNotifier]:
        """Read the bot's updates (long polling) while inside, answering clicks on
        ``relay`` (through ``desk``, the page's answer route, when given); on the way
        out, stop and close the bot's connections."""
        self._desk = desk
        task = asyncio.get_running_loop().create_task(self._poll(relay))
        try:
            yield self
        finally:
            self._desk = None
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            await self._sending.shutdown()
            await self._polling.shutdown()

    async def _poll(self, relay: RelayBackend) -> None:
        offset: int | None = None
        failures = 0
        while True:
            try:
                await self._bot.get_updates(
                    offset,
                    MAX_UPDATES,
                    self.poll_timeout,
                    ["callback_query"],
                    read_timeout=self.timeout,
                )
            except TelegramError as error:
                failures += 1
                wait = self.retry.delay(min(failures, 10))
                log.warning(
                    "notify: telegram: getUpdates failed (%s); again in %gs", _said(error), wait
                )
                await self.clock.sleep(wait)
                continue
            failures = 0
            batch = self._polling.updates
            ids = [
                i
                for u in batch
                if isinstance(u, dict) and (i := _int(u.get("update_id"))) is not None
            ]
            if ids:
                offset = max(ids) + 1  # confirmed: Telegram never sends these again
            elif batch:  # nothing to confirm them by: wait rather than spin on them
                await self.clock.sleep(self.retry.delay(1))
            for update in batch:
                await self.handle_update(relay, update)

    async def handle_update(self, relay: RelayBackend, update: object) -> None:
        """Act on one update from the bot's update source: a click on one of this bot's
        buttons is answered (never raises: a bad update is dropped, and logged)."""
        click = click_of(update)
        if click is None:
            return
        try:
            said = await self._click(relay, click)
        except UserInteractionError as error:  # the relay could not be reached, say
            said = f"Nothing changed: {error.message}"
        except Exception as error:  # one bad click must not stop the bot
            log.error("notify: telegram: a click failed (%s)", type(error).__name__)
            said = "Nothing changed: something went wrong here."
        try:
            await self._bot.answer_callback_query(click.id, cut(said, MAX_ALERT))
        except TelegramError as error:
            log.warning("notify: telegram: answerCallbackQuery failed: %s", _said(error))

    async def _click(self, relay: RelayBackend, click: _Click) -> str:
        found = _CALLBACK.fullmatch(click.data)
        if found is None:
            return "This button is not one of this bot's; nothing changed."
        sent = await self._sent_for(found.group(1), click)
        if isinstance(sent, str):
            return sent
        user = self.users.get(click.user)
        if user is None:
            return (
                f"Your Telegram account ({click.user}) is not mapped to a user here;"
                " nothing changed."
            )
        if not _answerable(sent.view):
            return "This question is answered on the page; nothing changed."
        return await self._act(relay, sent, found, user)

    async def _sent_for(self, ref: str, click: _Click) -> _Sent | str:
        """The message ``ref`` names, if the click came from it; else what to tell."""
        sent = self._refs.get(ref)
        if sent is None:
            line = self._settled.get(ref)
            return (
                f"Too late: {line} Nothing changed."
                if line
                else ("This question no longer waits here; nothing changed.")
            )
        if click.chat in self.chats and click.chat not in sent.messages:
            # A click quicker than sendMessage's answer: its message id is on its way.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.timeout):
                    await sent.sent.wait()
        if sent.messages.get(click.chat) != click.message:
            return "This button is not from this question's message; nothing changed."
        return sent

    async def _act(self, relay: RelayBackend, sent: _Sent, found: re.Match[str], user: str) -> str:
        """What the button does: answer with an option, send the ticked ones, or tick."""
        question = sent.request.questions[0]
        view = sent.view.questions[0]
        index = int(found.group(3)) if found.group(3) is not None else -1
        action = found.group(2) or found.group(4)
        if action == "s" and view.multi_select:
            labels = [o.label for i, o in enumerate(view.options) if i in sent.chosen]
            return await self._submit(relay, sent, question, labels, user)
        if not (0 <= index < len(view.options)) or (action == "t") != view.multi_select:
            return "This button does not fit this question; nothing changed."
        if action == "o":
            return await self._submit(relay, sent, question, [view.options[index].label], user)
        return await self._tick(relay, sent, index)

    async def _tick(self, relay: RelayBackend, sent: _Sent, index: int) -> str:
        """Tick or untick a multi-select's option, on every message of the question."""
        if await relay.lookup(sent.question_id) is None:
            return "Too late: it no longer waits. Nothing changed."
        sent.chosen ^= {index}
        keyboard = telegram_keyboard(sent.view, sent.ref, frozenset(sent.chosen))
        for chat, message in list(sent.messages.items()):
            with contextlib.suppress(TelegramError):
                await self._bot.edit_message_reply_markup(chat, message, reply_markup=keyboard)
        options = sent.view.questions[0].options
        names = ", ".join(options[i].text for i in sorted(sent.chosen)) or "nothing"
        return f"Chosen so far: {names}. Press Send to answer."

    async def _submit(
        self,
        relay: RelayBackend,
        sent: _Sent,
        question: AskUserQuestionItem,
        labels: list[str],
        user: str,
    ) -> str:
        answer = AskUserQuestionAnswer([answer_item(question, labels)])
        decided = ", ".join(labels) or "nothing chosen"
        sent.decided = (user, decided)
        if self._desk is not None:
            status, code, message = await self._desk.answer(sent.question_id, answer, user)
        else:
            status, code, message = 200, "", ""
            try:
                await relay.submit(sent.question_id, answer, answerer=user)
                assignment = sent.request.assignment
                if assignment is not None and assignment.quorum is not None:
                    still = await relay.lookup(sent.question_id)
                    if still is not None:  # an approval short of the quorum: it waits on
                        status = 202
                        message = quorum_progress(still.approvals, assignment.quorum)
            except UserInteractionError as error:
                status, code, message = 400, error.code, error.message
        if status != 200:
            sent.decided = None
        if code == NOT_PENDING:
            return "Too late: it was settled already. Nothing changed."
        if status == 202:  # an approval short of the question's quorum
            return f"Your approval is recorded ({message}); it still waits."
        if status != 200:
            return f"Not accepted: {message}"
        return f"Answered as {user}: {decided}"


def _said(error: TelegramError) -> str:
    """What a Telegram error may show in a log: its kind and Telegram's description,
    never a URL (the token is in the path)."""
    if isinstance(error, (InvalidToken, Forbidden, BadRequest, RetryAfter)):
        return f"{type(error).__name__}: {cut(error.message, 200)}"
    return type(error).__name__


def _delivery_error(error: TelegramError, method: str) -> DeliveryError:
    permanent = isinstance(error, (InvalidToken, Forbidden, BadRequest))
    return DeliveryError(f"Telegram {method}: {_said(error)}", permanent=permanent)


@contextlib.asynccontextmanager
async def answering(
    steps: Sequence[Step], relay: RelayBackend, desk: AnswerDesk | None = None
) -> AsyncIterator[None]:
    """Read the clicks of every Telegram channel among ``steps`` (see
    :meth:`TelegramNotifier.answering`) while inside: how ``serve`` starts them."""
    async with contextlib.AsyncExitStack() as stack:
        for notifier in dict.fromkeys(
            s.notifier for s in steps if isinstance(s.notifier, TelegramNotifier)
        ):
            await stack.enter_async_context(notifier.answering(relay, desk))
        yield
