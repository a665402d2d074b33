"""Answering in Slack: the notice's buttons, and Slack's clicks on them.

:class:`SlackInteractivity` builds a one-question notice as Block Kit buttons (with
``slack_sdk``'s block models) and takes what Slack posts to the app's Request URL: it
checks the signature (``slack_sdk.signature.SignatureVerifier``), reads the payload, and
settles the click in a task of its own, so that Slack hears back at once. A click is
only a wish: its question id and option are checked again against the question as it
waits, and the answer goes through the page's own answer route (an :class:`AnswerDesk`),
under the name the Slack user is mapped to. Once a question settles, every message whose
``response_url`` a click gave is replaced with how it ended and who decided.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Protocol, TypeVar
from urllib.parse import parse_qs

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    CheckboxesElement,
    ContextBlock,
    HeaderBlock,
    InputBlock,
    Option,
    PlainTextInputElement,
    PlainTextObject,
    SectionBlock,
)
from slack_sdk.models.views import View
from slack_sdk.signature import Clock, SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from .._core import AskUserQuestionAnswer, AskUserQuestionRequest, answer_item, label_key
from ..display import QuestionView, RequestView, present
from ._dispatch import Notice, Outcome
from ._text import OUTCOME_WORDS, cut, lines_of, subject_of

__all__ = [
    "MAX_BODY",
    "MAX_OWN_WORDS",
    "AnswerDesk",
    "SlackInteractivity",
]

log: Final = logging.getLogger("interaction.notify")
_V = TypeVar("_V")

MAX_BODY: Final = 256 * 1024
"""The largest interaction payload read (bytes, form-encoded): a click on a notice,
whose message Slack echoes back, is a few kilobytes; the modal's text at most
:data:`MAX_OWN_WORDS` characters. A larger body is ``413`` before it is read."""
MAX_OWN_WORDS: Final = 3000
"""The most characters the "Other…" modal takes (Slack's own limit for a text field)."""
MAX_BUTTONS: Final = 24
"""Options shown as buttons (Slack allows 25 elements in an actions block, one is
"Other…"); a question with more is answered on the page."""
MAX_CHECKBOXES: Final = 10
"""Options shown as a checkbox group (Slack's limit); a question with more is answered
on the page."""
MAX_KEPT: Final = 1_000
"""Questions whose messages (``response_url``), subjects and outcomes are remembered."""
URLS_KEPT: Final = 5
"""``response_url``s remembered per question (Slack takes five posts on each)."""
MAX_QUESTION_ID: Final = 64

CHOOSE: Final = "interaction.choose."
PICK: Final = "interaction.pick"
SEND: Final = "interaction.send"
OTHER: Final = "interaction.other"
OPEN: Final = "interaction.open"
TEXT: Final = "interaction.text"
MODAL: Final = "interaction.other"

_SLACK_USER: Final = re.compile(r"[A-Z0-9]{2,32}", re.ASCII)
_YES_NO: Final = (label_key("Yes"), label_key("No"))


class AnswerDesk(Protocol):
    """What the page's server lends the Slack side: the question as it waits now, and
    the page's own answer route, taken as a named user (``None``: nobody named)."""

    async def request_of(self, question_id: str) -> AskUserQuestionRequest | None: ...

    async def answer(
        self, question_id: str, answer: AskUserQuestionAnswer, user: str | None
    ) -> tuple[int, str, str]:
        """The route's status, error code and message (``""`` and ``""`` on success)."""
        ...


class BadPayload(ValueError):
    """A body that is not one of the interaction payloads this server handles."""


@dataclass(frozen=True, slots=True)
class _Click:
    """What a person did in Slack, as read from a signed payload (still untrusted)."""

    kind: str  # choose, send, other, open, pick, words
    question_id: str
    user: str
    response_url: str | None = None
    trigger_id: str | None = None
    option: int | None = None
    picked: tuple[int, ...] = ()
    words: str | None = None


@dataclass(frozen=True, slots=True)
class _Decided:
    outcome: Outcome | None
    who: str | None


def _button(text: str, action_id: str, value: str, style: str | None = None) -> ButtonElement:
    return ButtonElement(
        text=PlainTextObject(text=cut(text, 75)), action_id=action_id, value=value, style=style
    )


def _shape(question: QuestionView) -> str | None:
    """How a question's options are offered in Slack, or ``None`` (on the page only)."""
    if question.multi_select:
        return "checkboxes" if 0 < len(question.options) <= MAX_CHECKBOXES else None
    if len(question.options) > MAX_BUTTONS:
        return None
    return "buttons"


def _is_yes_no(question: QuestionView) -> bool:
    keys = tuple(label_key(option.label) for option in question.options)
    return not question.multi_select and sorted(keys) == sorted(_YES_NO)


def _option_buttons(question: QuestionView, question_id: str) -> list[ButtonElement]:
    """A button per option: Approve / Deny for a permission or a yes/no question."""
    yes_no = _is_yes_no(question)
    buttons = []
    for index, option in enumerate(question.options):
        text, style = option.text, "primary" if option.primary else None
        if option.role == "allow" or (yes_no and label_key(option.label) == _YES_NO[0]):
            text, style = "Approve", "primary"
        elif option.role == "deny" or (yes_no and label_key(option.label) == _YES_NO[1]):
            text, style = "Deny", "danger"
        buttons.append(_button(text, f"{CHOOSE}{index}", question_id, style))
    order = {"primary": 0, "danger": 1}
    if yes_no or question.permission is not None:  # Approve, Deny, then the rest
        buttons.sort(key=lambda button: order.get(button.style or "", 2))
    return buttons


class SlackInteractivity:
    """Slack's side of answering in Slack: the buttons, and what comes of a click.

    ``signing_secret`` is the app's (Basic Information, "Signing Secret"; read it from
    ``SLACK_SIGNING_SECRET``); ``users`` maps Slack user ids (``U01ABC``) to the page's
    named users, under whose name their answers are taken; an unmapped Slack user may
    answer only with ``anonymous``. With ``bot_token`` (``SLACK_BOT_TOKEN``), "Other…"
    opens a modal through ``views.open`` at ``api_url``; without one, it is a link to
    the page. Pass the same object to :class:`~interaction.notify.SlackNotifier` (the
    buttons) and to :class:`~interaction.web.WebServer` (``slack=``: the Request URL,
    ``POST /slack/interactivity``). ``max_body`` is the largest body that route reads.
    """

    def __init__(
        self,
        signing_secret: str,
        *,
        users: Mapping[str, str] | None = None,
        anonymous: bool = False,
        bot_token: str | None = None,
        api_url: str = "https://slack.com/api/",
        timeout: float = 10.0,
        clock: Clock | None = None,
    ) -> None:
        if not signing_secret.strip():
            raise ValueError("the Slack signing secret is empty")
        self._verifier = SignatureVerifier(signing_secret, clock or Clock())
        self.users = dict(users or {})
        for slack_id in self.users:
            if not _SLACK_USER.fullmatch(slack_id):
                raise ValueError(f"{slack_id[:40]!r} is not a Slack user id (U01ABC...)")
        self.anonymous = anonymous
        self.max_body = MAX_BODY
        self._bot_token = bot_token or None
        self.api_url = api_url
        self.timeout = timeout
        self._tasks: set[asyncio.Task[None]] = set()
        self._urls: OrderedDict[str, list[tuple[str, str]]] = OrderedDict()
        self._subjects: OrderedDict[str, str] = OrderedDict()
        self._decided: OrderedDict[str, _Decided] = OrderedDict()

    @property
    def modal(self) -> bool:
        """Whether "Other…" opens a modal (a bot token is configured)."""
        return self._bot_token is not None

    # ------------------------------------------------------------------ the message

    def blocks(self, notice: Notice) -> list[Block] | None:
        """The notice's blocks with its choices as buttons, or ``None`` when it is
        answered on the page (several questions, too many options)."""
        view = notice.view
        if len(view.questions) != 1 or len(notice.question_id) > MAX_QUESTION_ID:
            return None
        question = view.questions[0]
        shape = _shape(question)
        if shape is None:
            return None
        self._keep(self._subjects, notice.question_id, subject_of(view))
        blocks = _head(view)
        qid = notice.question_id
        elements: list[ButtonElement] = []
        if shape == "checkboxes":
            options = [
                Option(value=str(index), text=PlainTextObject(text=cut(option.text, 75)))
                for index, option in enumerate(question.options)
            ]
            picker = CheckboxesElement(action_id=PICK, options=options)
            blocks.append(ActionsBlock(block_id=PICK, elements=[picker]))
            elements.append(_button("Send", SEND, qid, "primary"))
        else:
            elements += _option_buttons(question, qid)
        own = question.other or "Answer…"
        if self.modal:
            elements.append(_button(own, OTHER, qid))
        elif notice.link is not None:
            link = ButtonElement(
                text=PlainTextObject(text=own), action_id=OPEN, value=qid, url=notice.link
            )
            elements.append(link)
        if elements:
            blocks.append(ActionsBlock(block_id="interaction.answer", elements=elements))
        return blocks

    # ------------------------------------------------------------------ Slack's requests

    def receive(self, body: bytes, headers: Mapping[str, str], desk: AnswerDesk) -> int:
        """Take one request Slack posted to the Request URL: ``401`` without a valid
        signature (or older than 5 minutes), ``400`` for a payload this server does not
        handle, else ``200`` at once while the click is settled in a task of its own."""
        try:
            valid = self._verifier.is_valid_request(body, headers)
        except (ValueError, UnicodeDecodeError):  # a timestamp that is no number, say
            valid = False
        if not valid:
            return 401
        try:
            click = _click(body)
        except BadPayload as exc:
            log.warning("slack: a signed payload was refused: %s", exc)
            return 400
        if click is None:
            return 200  # something Slack tells that needs no answer
        task = asyncio.get_running_loop().create_task(self._settle(click, desk))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return 200

    async def idle(self) -> None:
        """Wait until every click taken so far is settled (for tests and shutdown)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def aclose(self) -> None:
        """Stop: the clicks still being settled are cancelled, and awaited."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task

    # ------------------------------------------------------------------ settling

    async def _settle(self, click: _Click, desk: AnswerDesk) -> None:
        try:
            await self._act(click, desk)
        except Exception as error:  # a click must never take the server down
            log.error("slack: a click failed: %s", type(error).__name__)
            await self._tell(click, "That did not work; the question still waits.")

    async def _act(self, click: _Click, desk: AnswerDesk) -> None:
        qid = click.question_id
        if click.response_url is not None:
            urls = self._urls.get(qid, [])
            if (click.user, click.response_url) not in urls:
                urls = [*urls, (click.user, click.response_url)][-URLS_KEPT:]
            self._keep(self._urls, qid, urls)
        if click.kind in ("pick", "open"):  # a box ticked, the page opened: nothing to settle
            return
        name = self.users.get(click.user)
        if name is None and not self.anonymous:
            await self._tell(
                click,
                f"Your Slack user ({click.user}) is not one of this page's users, so your"
                " answer was not taken: ask whoever runs it to map you (--slack-user).",
            )
            return
        request = await desk.request_of(qid)
        if request is None:
            await self._late(click, None)
            return
        view = present(request)
        self._keep(self._subjects, qid, subject_of(view))
        if click.kind == "other":
            await self._open_modal(click, view)
            return
        answer = _answer_of(click, request, view)
        if answer is None:
            await self._tell(click, "That does not answer this question; it still waits.")
            return
        status, code, message = await desk.answer(qid, answer, name)
        if status == 200:
            await self.settled(qid, "answered", name or f"Slack user {click.user}")
        elif code == "NOT_PENDING":
            await self._late(click, message)
        else:
            await self._tell(click, f"Your answer was not taken: {message}")

    async def _late(self, click: _Click, message: str | None) -> None:
        """A click on a question that no longer waits: told, and its message replaced."""
        decided = self._decided.get(click.question_id)
        if decided is not None:
            said = _outcome_line(decided)
        else:
            said = f"It no longer waits ({message})." if message else "It no longer waits."
        await self._tell(click, f"Too late: {said[:1].lower()}{said[1:]}")
        if decided is not None:
            await self._replace(click.question_id, decided)

    async def _open_modal(self, click: _Click, view: RequestView) -> None:
        if self._bot_token is None or click.trigger_id is None:
            await self._tell(click, "Answer this one on the page.")
            return
        question = view.questions[0]
        modal = View(
            type="modal",
            callback_id=MODAL,
            private_metadata=click.question_id,
            title=PlainTextObject(text="Your answer"),
            submit=PlainTextObject(text="Send"),
            close=PlainTextObject(text="Cancel"),
            blocks=[
                SectionBlock(text=PlainTextObject(text=cut("\n".join(lines_of(question)), 3000))),
                InputBlock(
                    block_id=TEXT,
                    label=PlainTextObject(text="In your own words"),
                    element=PlainTextInputElement(
                        action_id=TEXT, multiline=True, max_length=MAX_OWN_WORDS
                    ),
                ),
            ],
        )
        client = AsyncWebClient(token=self._bot_token, base_url=self.api_url, timeout=10)
        response = await client.views_open(trigger_id=click.trigger_id, view=modal)
        if not response.get("ok"):
            log.warning("slack: views.open failed: %s", response.get("error"))
            await self._tell(click, "The form could not open; answer on the page.")

    async def settled(self, question_id: str, outcome: Outcome | None, who: str | None) -> None:
        """A question settled (here, on the page, anywhere): remember how, and replace
        every message a click on it gave a ``response_url`` for."""
        known = self._decided.get(question_id)
        if who is None and known is not None and known.outcome == outcome:
            who = known.who  # an unnamed Slack user this process saw answer
        decided = _Decided(outcome, who)
        self._keep(self._decided, question_id, decided)
        await self._replace(question_id, decided)

    async def _replace(self, question_id: str, decided: _Decided) -> None:
        urls = self._urls.pop(question_id, [])
        subject = self._subjects.get(question_id)
        said = _outcome_line(decided)
        text = f"{subject}: {said[:1].lower()}{said[1:]}" if subject else said
        blocks: list[Block] = []
        if subject:
            blocks.append(HeaderBlock(text=PlainTextObject(text=cut(subject, 150))))
        blocks.append(ContextBlock(elements=[PlainTextObject(text=cut(said, 3000))]))
        for url in dict.fromkeys(url for _, url in urls):
            await self._post(url, text=text, blocks=blocks, replace_original=True)

    async def _tell(self, click: _Click, text: str) -> None:
        """An ephemeral message to the person who clicked (the modal's: through the
        ``response_url`` of their click that opened it)."""
        url = click.response_url
        if url is None:
            urls = self._urls.get(click.question_id, [])
            url = next((u for user, u in reversed(urls) if user == click.user), None)
        if url is None:
            log.info("slack: nowhere to tell %s: %s", click.user, text)
            return
        await self._post(url, text=text, response_type="ephemeral", replace_original=False)

    async def _post(
        self,
        url: str,
        *,
        text: str,
        blocks: list[Block] | None = None,
        response_type: str | None = None,
        replace_original: bool,
    ) -> None:
        client = AsyncWebhookClient(url, timeout=max(1, round(self.timeout)))
        try:
            response = await client.send(
                text=text,
                blocks=blocks,
                response_type=response_type,
                replace_original=replace_original,
            )
        except Exception as error:  # the URL holds a capability: never logged
            log.warning("slack: a response_url post failed: %s", type(error).__name__)
            return
        if response.status_code != 200:
            log.warning("slack: a response_url post was answered %d", response.status_code)

    @staticmethod
    def _keep(kept: OrderedDict[str, _V], key: str, value: _V) -> None:
        kept[key] = value
        kept.move_to_end(key)
        while len(kept) > MAX_KEPT:
            kept.popitem(last=False)


def _head(view: RequestView) -> list[Block]:
    """The header, who asks and the question (plain text: model text cannot link)."""
    blocks: list[Block] = [HeaderBlock(text=PlainTextObject(text=cut(subject_of(view), 150)))]
    if view.provenance is not None and (said := view.provenance.summary()):
        blocks.append(ContextBlock(elements=[PlainTextObject(text=cut(said, 3000))]))
    question = view.questions[0]
    text = cut("\n".join(lines_of(question)), 3000)
    blocks.append(SectionBlock(text=PlainTextObject(text=text)))
    return blocks


def _outcome_line(decided: _Decided) -> str:
    words = OUTCOME_WORDS[decided.outcome]
    by = f" by {decided.who}" if decided.who and decided.outcome != "aborted" else ""
    return f"It {words}{by}."


def _answer_of(
    click: _Click, request: AskUserQuestionRequest, view: RequestView
) -> AskUserQuestionAnswer | None:
    """The answer a click makes, checked against the question as it waits; ``None``
    when the click does not fit it (a stale message, a forged value)."""
    if len(request.questions) != 1:
        return None
    question, shown = request.questions[0], view.questions[0]
    options = shown.options
    if click.kind == "choose":
        if shown.multi_select or click.option is None or not 0 <= click.option < len(options):
            return None
        item = answer_item(question, [options[click.option].label])
    elif click.kind == "send":
        picked = click.picked
        if not shown.multi_select or not picked or any(i >= len(options) for i in picked):
            return None
        item = answer_item(question, [options[i].label for i in sorted(set(picked))])
    elif click.kind == "words":
        if click.words is None or not click.words.strip():
            return None
        item = answer_item(question, (), click.words)
    else:
        return None
    return AskUserQuestionAnswer([item])


# ---------------------------------------------------------------------------- payloads


def _str(value: object, what: str, most: int = 4096) -> str:
    if not isinstance(value, str) or not value or len(value) > most:
        raise BadPayload(f"{what} is not a string of 1-{most} characters")
    return value


def _obj(value: object, what: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise BadPayload(f"{what} is not an object")
    return value


def _payload(body: bytes) -> dict[str, object]:
    """The JSON of a form-encoded ``payload=``, as Slack posts every interaction."""
    try:
        text = body.decode("ascii")
        form = parse_qs(text, keep_blank_values=True, strict_parsing=True, max_num_fields=8)
    except (UnicodeDecodeError, ValueError):
        raise BadPayload("the body is not a form") from None
    values = form.get("payload", [])
    if len(values) != 1:
        raise BadPayload("the form has no single payload")
    try:
        payload = json.loads(values[0])
    except (ValueError, RecursionError):
        raise BadPayload("the payload is not JSON") from None
    return _obj(payload, "the payload")


def _user_of(payload: dict[str, object]) -> str:
    user = _str(_obj(payload.get("user"), "user").get("id"), "user.id", 32)
    if not _SLACK_USER.fullmatch(user):
        raise BadPayload("user.id is not a Slack user id")
    return user


def _click(body: bytes) -> _Click | None:
    """What a signed body asks for; ``None`` for a payload that needs nothing done."""
    payload = _payload(body)
    kind = payload.get("type")
    if kind == "block_actions":
        return _block_action(payload)
    if kind == "view_submission":
        return _submission(payload)
    if kind == "view_closed":
        return None
    raise BadPayload("the payload's type is not one this server handles")


def _block_action(payload: dict[str, object]) -> _Click:
    user = _user_of(payload)
    url = _str(payload.get("response_url"), "response_url")
    if not url.startswith(("https://", "http://")):
        raise BadPayload("response_url is not a URL")
    trigger = payload.get("trigger_id")
    trigger_id = trigger if isinstance(trigger, str) and len(trigger) <= 256 else None
    actions = payload.get("actions")
    if not isinstance(actions, list) or not actions:
        raise BadPayload("actions is not a list of actions")
    action = _obj(actions[0], "an action")
    action_id = _str(action.get("action_id"), "action_id", 255)
    if action_id == PICK:  # a box ticked: the question is the Send button's
        qid = _send_value(payload)
        return _Click("pick", qid, user, url)
    qid = _str(action.get("value"), "the action's value", MAX_QUESTION_ID)
    if action_id.startswith(CHOOSE):
        index = action_id.removeprefix(CHOOSE)
        if not (index.isascii() and index.isdigit() and len(index) <= 3):
            raise BadPayload("the option is not a number")
        return _Click("choose", qid, user, url, trigger_id, option=int(index))
    if action_id == SEND:
        return _Click("send", qid, user, url, trigger_id, picked=_picked(payload))
    if action_id == OTHER:
        return _Click("other", qid, user, url, trigger_id)
    if action_id == OPEN:
        return _Click("open", qid, user, url)
    raise BadPayload("the action is not one of this server's buttons")


def _send_value(payload: dict[str, object]) -> str:
    """The question id a checkbox belongs to: the Send button's value in the message."""
    message = _obj(payload.get("message"), "message")
    blocks = message.get("blocks")
    if isinstance(blocks, list):
        for block in blocks:
            if isinstance(block, dict) and isinstance(block.get("elements"), list):
                for element in block["elements"]:
                    if isinstance(element, dict) and element.get("action_id") == SEND:
                        return _str(element.get("value"), "Send's value", MAX_QUESTION_ID)
    raise BadPayload("the message has no Send button")


def _picked(payload: dict[str, object]) -> tuple[int, ...]:
    """The boxes ticked when Send was clicked, from the payload's ``state``."""
    state = payload.get("state")
    if state is None:  # Slack sends no state when nothing in the message holds one
        return ()
    values = _obj(_obj(state, "state").get("values"), "state.values")
    block = values.get(PICK)
    if block is None:
        return ()
    chosen = _obj(_obj(block, "the checkboxes' block").get(PICK), "the checkboxes' state")
    options = chosen.get("selected_options", [])
    if not isinstance(options, list) or len(options) > MAX_CHECKBOXES:
        raise BadPayload("selected_options is not a list of options")
    picked = []
    for option in options:
        value = _str(_obj(option, "an option").get("value"), "an option's value", 3)
        if not (value.isascii() and value.isdigit()):
            raise BadPayload("an option's value is not a number")
        picked.append(int(value))
    return tuple(picked)


def _submission(payload: dict[str, object]) -> _Click:
    user = _user_of(payload)
    view = _obj(payload.get("view"), "view")
    if view.get("callback_id") != MODAL:
        raise BadPayload("the view is not this server's")
    qid = _str(view.get("private_metadata"), "private_metadata", MAX_QUESTION_ID)
    values = _obj(_obj(view.get("state"), "view.state").get("values"), "view.state.values")
    field = _obj(_obj(values.get(TEXT), "the text block").get(TEXT), "the text field")
    words = _str(field.get("value"), "the text", MAX_OWN_WORDS)
    return _Click("words", qid, user, words=words)
