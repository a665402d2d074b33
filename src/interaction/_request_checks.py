"""The request checks ``ask()`` makes, callable on their own by providers and relays.

Every structural fault is a ``BAD_REQUEST`` whose message starts with the path of the
fault (``questions[1].options[0].label: ...``), also kept as ``error.path``. Each check has
a fast pass that only says "certainly fine" and a detailed pass that finds and names the
first fault; ``tests/test_bad_request.py`` keeps the two in agreement.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, TypeGuard, cast

from ._abort import AbortSignal
from ._agents import admit
from ._errors import (
    EMPTY_MESSAGE,
    ErrorCode,
    UserInteractionError,
    aborted_error,
    bad_request,
    type_name,
)
from ._provenance import check_provenance
from ._team import check_assignment
from ._text_policy import UNSAFE, UNSAFE_EXCEPT_LINES, check_text, is_blank, label_key
from ._types import (
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    PermissionIntent,
    PlanReviewIntent,
    UnknownIntent,
)

__all__ = ["check_caller", "check_questions", "check_request", "questions_from_json"]


def _check_admission(agent: object) -> None:
    try:
        agent_id = agent.id  # type: ignore[attr-defined]  # a plain read: every ask makes it
    except AttributeError:
        agent_id = None
    except Exception as exc:  # a property that raises is a fault of the request
        raise bad_request("agent.id", f"reading it raised {type(exc).__name__}") from None
    if type(agent_id) is not str:
        raise bad_request("agent.id", f"expected a string, got {type_name(agent_id)}")
    admit(agent, agent_id)


def _check_option(option: object, path: str) -> str:
    if type(option) is not AskUserQuestionOption:
        raise bad_request(path, f"expected an AskUserQuestionOption, got {type_name(option)}")
    check_text(option.label, f"{path}.label", nonblank=True)
    check_text(option.description, f"{path}.description", block=True, optional=True)
    return option.label


def _check_item(item: object, path: str, seen_ids: set[str]) -> None:
    if type(item) is not AskUserQuestionItem:
        raise bad_request(path, f"expected an AskUserQuestionItem, got {type_name(item)}")
    check_text(item.id, f"{path}.id", nonblank=True)
    if item.id in seen_ids:
        raise bad_request(f"{path}.id", f"duplicate question id {item.id!r}")
    seen_ids.add(item.id)
    check_text(item.question, f"{path}.question", block=True, nonblank=True)
    check_text(item.detail, f"{path}.detail", block=True, optional=True)
    check_text(item.header, f"{path}.header", optional=True)
    options = item.options
    if type(options) is not tuple:
        raise bad_request(
            f"{path}.options", f"expected a sequence of options, got {type_name(options)}"
        )
    seen_labels: dict[str, str] = {}
    for index, option in enumerate(options):
        option_path = f"{path}.options[{index}]"
        label = _check_option(option, option_path)
        key = label_key(label)
        if key in seen_labels:
            raise bad_request(
                f"{option_path}.label",
                f"duplicate option label {label!r} (same as {seen_labels[key]!r})",
            )
        seen_labels[key] = label
    if not isinstance(item.multi_select, bool):
        raise bad_request(
            f"{path}.multi_select", f"expected a bool, got {type_name(item.multi_select)}"
        )
    intent = item.intent
    if type(intent) is PlanReviewIntent:
        check_text(intent.approve, f"{path}.intent.approve")
    elif type(intent) is PermissionIntent:
        check_text(intent.tool, f"{path}.intent.tool", nonblank=True)
        check_text(intent.summary, f"{path}.intent.summary")
        check_text(intent.allow, f"{path}.intent.allow")
        check_text(intent.deny, f"{path}.intent.deny")
        check_text(intent.allow_always, f"{path}.intent.allow_always", optional=True)
    elif type(intent) is UnknownIntent:
        check_text(intent.kind, f"{path}.intent.kind", nonblank=True)
    elif intent is not None:
        raise bad_request(
            f"{path}.intent",
            "expected a PlanReviewIntent, PermissionIntent or UnknownIntent,"
            f" got {type_name(intent)}",
        )


def _clean_permission(intent: PermissionIntent) -> bool:
    """Whether :func:`_check_item` would accept the permission intent's texts."""
    tool = intent.tool
    if not (_line_ok(tool) and _filled(tool)):
        return False
    texts: tuple[object, ...] = (intent.summary, intent.allow, intent.deny)
    always = intent.allow_always
    if always is not None:
        texts = (*texts, always)
    return all(_line_ok(text) for text in texts)


def _check_intent(item: AskUserQuestionItem) -> None:
    intent = item.intent
    if intent is None:
        return
    if item.detail is None or is_blank(item.detail):
        if isinstance(intent, PlanReviewIntent):
            problem = "without the detail it reviews"
        else:
            problem = "without the detail an intent requires"
        raise UserInteractionError(
            f"question {item.id} declares intent {intent.kind} {problem}", ErrorCode.BAD_INTENT
        )
    if isinstance(intent, PlanReviewIntent) and all(
        option.label != intent.approve for option in item.options
    ):
        raise UserInteractionError(
            f'question {item.id} declares intent plan-review whose approve label "{intent.approve}"'
            " names none of its options",
            ErrorCode.BAD_INTENT,
        )
    if isinstance(intent, PermissionIntent):
        _check_permission(item, intent)


def _check_permission(item: AskUserQuestionItem, intent: PermissionIntent) -> None:
    if item.multi_select:
        raise UserInteractionError(
            f"question {item.id} declares intent permission on a multi-select question",
            ErrorCode.BAD_INTENT,
        )
    roles = [("allow", intent.allow), ("deny", intent.deny)]
    if intent.allow_always is not None:
        roles.insert(1, ("allow_always", intent.allow_always))
    named: dict[str, str] = {}
    for role, label in roles:
        if all(option.label != label for option in item.options):
            raise UserInteractionError(
                f'question {item.id} declares intent permission whose {role} label "{label}"'
                " names none of its options",
                ErrorCode.BAD_INTENT,
            )
        if label in named:
            raise UserInteractionError(
                f"question {item.id} declares intent permission whose {named[label]} and {role}"
                f' labels both name "{label}"',
                ErrorCode.BAD_INTENT,
            )
        named[label] = role


# The fast passes below judge each text with str methods, inline because they run for
# every text of every request:
# - isprintable() is false for every character UNSAFE refuses (controls, format characters
#   such as the bidirectional overrides, surrogates) and for a few more (newline, tab, other
#   spaces), so only a text that is not printable goes to the regex;
# - an ASCII text is blank exactly when strip() leaves nothing (no invisible character is
#   ASCII), and an ASCII label's label_key is lower().strip().


_TextCheck = Callable[[object], bool]

LOOK_CLOSER: Final = 0
"""The fast pass's word for a batch that may hold a fault: the detailed checks name it."""
CLEAN: Final = 1
"""A batch the detailed checks would accept, in which no question declares an intent."""
CLEAN_WITH_INTENTS: Final = 2
"""A batch the detailed checks would accept; its intents are checked next (``BAD_INTENT``)."""


def _line_ok(text: object) -> TypeGuard[str]:
    """A string :func:`check_text` accepts on one line (its emptiness aside)."""
    return type(text) is str and (text.isprintable() or UNSAFE.search(text) is None)


def _block_ok(text: object) -> TypeGuard[str]:
    """A string :func:`check_text` accepts as a block, line breaks allowed."""
    return type(text) is str and (text.isprintable() or UNSAFE_EXCEPT_LINES.search(text) is None)


def _filled(text: str) -> bool:
    """Whether ``text`` holds something visible."""
    return bool(text.strip()) if text.isascii() else not is_blank(text)


def _label_key_or_none(label: object) -> str | None:
    """A clean label's duplicate key, or ``None`` when the label needs a closer look."""
    # The text checks of _line_ok, inline: this runs for every option of every decode.
    if type(label) is not str or not (label.isprintable() or UNSAFE.search(label) is None):
        return None
    if label.isascii():
        return label.lower().strip() or None
    if is_blank(label):
        return None
    return label_key(label)


def _clean_options(options: tuple[object, ...]) -> bool:
    """Whether :func:`_check_item` would accept these options (the rules of
    :func:`_options_from_json`)."""
    keys: set[str] = set()
    for option in options:
        if type(option) is not AskUserQuestionOption:
            return False
        # The checks of _label_key_or_none and _block_ok, inline: this runs for every option
        # of every ask, and three calls per option were a tenth of check_request.
        label = option.label
        if type(label) is not str or not (label.isprintable() or UNSAFE.search(label) is None):
            return False
        if label.isascii():
            key = label.lower().strip()
            if not key:
                return False
        elif is_blank(label):
            return False
        else:
            key = label_key(label)
        keys.add(key)
        description = option.description
        if description is not None and (
            type(description) is not str
            or not (description.isprintable() or UNSAFE_EXCEPT_LINES.search(description) is None)
        ):
            return False
    return len(keys) == len(options)


def _clean_intent(intent: object) -> bool:
    """Whether :func:`_check_item` would accept the intent's texts."""
    if type(intent) is PlanReviewIntent:
        return _line_ok(intent.approve)
    if type(intent) is PermissionIntent:
        return _clean_permission(intent)
    if type(intent) is UnknownIntent:
        kind = intent.kind
        return _line_ok(kind) and _filled(kind)
    return False


def _clean_texts(item: AskUserQuestionItem) -> bool:
    """Whether :func:`_check_item` would accept the question's id, text, detail and header."""
    # The checks of _line_ok, _block_ok and _filled, inline: this runs for every question.
    qid = item.id
    text = item.question
    detail = item.detail
    header = item.header
    if (
        type(qid) is not str
        or type(text) is not str
        or not (qid.isprintable() or UNSAFE.search(qid) is None)
        or not (text.isprintable() or UNSAFE_EXCEPT_LINES.search(text) is None)
        or not (qid.strip() if qid.isascii() else not is_blank(qid))
        or not (text.strip() if text.isascii() else not is_blank(text))
    ):
        return False
    if detail is not None and (
        type(detail) is not str
        or not (detail.isprintable() or UNSAFE_EXCEPT_LINES.search(detail) is None)
    ):
        return False
    return header is None or (
        type(header) is str and (header.isprintable() or UNSAFE.search(header) is None)
    )


def _clean_questions(questions: tuple[object, ...]) -> int:
    """A fast pass that is :data:`LOOK_CLOSER` (falsy) unless the detailed checks would
    accept the batch; then it is :data:`CLEAN`, or :data:`CLEAN_WITH_INTENTS` when a
    question declares an intent, so a batch without one skips a second loop.

    Each question's texts, options and intent are looked at in turn; duplicate ids at the
    end, and only in a batch of more than one.
    """
    verdict = CLEAN
    for item in questions:
        if type(item) is not AskUserQuestionItem:
            return LOOK_CLOSER
        options = item.options
        if (
            type(options) is not tuple
            or type(item.multi_select) is not bool
            or not _clean_texts(item)
            or (options and not _clean_options(options))
        ):
            return LOOK_CLOSER
        intent = item.intent
        if intent is not None:
            if not _clean_intent(intent):
                return LOOK_CLOSER
            verdict = CLEAN_WITH_INTENTS
    count = len(questions)
    if count > 1:  # every item is a question now
        checked = cast("tuple[AskUserQuestionItem, ...]", questions)
        if len({item.id for item in checked}) != count:
            return LOOK_CLOSER
    return verdict


def _optional_from_json(value: dict[str, object], key: str, ok: _TextCheck) -> bool:
    """Whether ``value[key]`` passes ``ok`` or is absent (a key present with null is a fault)."""
    text = value.get(key)
    if text is None:
        return key not in value
    return ok(text)


def _options_from_json(raw: object) -> tuple[AskUserQuestionOption, ...] | None:
    """One question's options for :func:`questions_from_json` (rules of ``_clean_options``)."""
    if type(raw) is not list:
        return None
    options: list[AskUserQuestionOption] = []
    keys: set[str] = set()
    for value in raw:
        if type(value) is not dict:
            return None
        label = value.get("label")
        key = _label_key_or_none(label)
        if key is None:
            return None
        keys.add(key)
        # The checks of _optional_from_json and _block_ok, inline: this runs for every option.
        description = value.get("description")
        if description is not None:
            if type(description) is not str or not (
                description.isprintable() or UNSAFE_EXCEPT_LINES.search(description) is None
            ):
                return None
        elif "description" in value:
            return None
        options.append(AskUserQuestionOption(cast("str", label), description))
    if len(keys) != len(options):
        return None
    return tuple(options)


def _question_from_json(value: object) -> AskUserQuestionItem | None:
    """One question without an intent for :func:`questions_from_json`, or ``None``."""
    if type(value) is not dict or "intent" in value:
        return None
    get = value.get
    qid, text = get("id"), get("question")
    if (
        not _line_ok(qid)
        or not _block_ok(text)
        or not _filled(qid)
        or not _filled(text)
        or not _optional_from_json(value, "detail", _block_ok)
        or not _optional_from_json(value, "header", _line_ok)
    ):
        return None
    multi = get("multiSelect", False)
    if type(multi) is not bool:
        return None
    options: tuple[AskUserQuestionOption, ...] = ()
    raw_options = get("options")
    if raw_options is not None:
        built = _options_from_json(raw_options)
        if built is None:
            return None
        options = built
    elif "options" in value:
        return None
    return AskUserQuestionItem(qid, text, get("detail"), get("header"), options, multi)


def questions_from_json(raw: object) -> tuple[AskUserQuestionItem, ...] | None:
    """Checked questions straight from parsed wire JSON, or ``None`` to decode in detail.

    One pass that checks while it builds: it accepts only what the wire's detailed decode
    followed by :func:`check_questions` would accept, and builds the same objects
    (``tests/test_wire.py`` keeps the two in agreement). Items with an intent take the
    detailed path.
    """
    if type(raw) is not list:
        return None
    items: list[AskUserQuestionItem] = []
    for value in raw:
        item = _question_from_json(value)
        if item is None:
            return None
        items.append(item)
    if len({item.id for item in items}) != len(items):
        return None
    return tuple(items)


def check_questions(questions: tuple[object, ...]) -> None:
    """The structural (``BAD_REQUEST``) checks of a batch of questions, in order."""
    if _clean_questions(questions) == LOOK_CLOSER:
        _check_questions_in_detail(questions)


def _check_questions_in_detail(questions: tuple[object, ...]) -> None:
    seen_ids: set[str] = set()
    for index, item in enumerate(questions):
        _check_item(item, f"questions[{index}]", seen_ids)


def _check_signal(signal: object) -> None:
    if signal is not None:
        if not isinstance(signal, AbortSignal):
            raise bad_request("signal", f"expected an AbortSignal, got {type_name(signal)}")
        if signal.aborted:
            raise aborted_error(signal.reason) from signal.reason


def check_caller(signal: object, agent: object) -> None:
    """The signal and admission checks of ``ask()``, for callers that parse questions later."""
    _check_signal(signal)
    if agent is not None:
        _check_admission(agent)


def check_request(request: object) -> AskUserQuestionRequest:
    """Make every check ``ask()`` makes before it reaches a provider, in the same order.

    That is: an already aborted signal, the resume key, the provenance, no question, agent
    admission (only when an agent is supplied), structure, intents, the assignment. Returns
    ``request`` unchanged; the provider check is not made, so a relay or provider may call
    this on a request it received.
    """
    if type(request) is not AskUserQuestionRequest:
        raise bad_request(
            "request", f"expected an AskUserQuestionRequest, got {type_name(request)}"
        )
    # The calls below are made only when there is something to check: this runs on every ask.
    signal, key, agent = request.signal, request.key, request.agent
    if signal is not None:
        _check_signal(signal)
    if key is not None:
        check_text(key, "key", nonblank=True)
    if request.provenance is not None:
        check_provenance(request.provenance)
    questions = request.questions
    if type(questions) is not tuple:
        raise bad_request(
            "questions", f"expected a sequence of questions, got {type_name(questions)}"
        )
    if not questions:
        raise UserInteractionError(EMPTY_MESSAGE, ErrorCode.EMPTY_QUESTIONS)
    if agent is not None:
        _check_admission(agent)
    verdict = _clean_questions(questions)
    if verdict != CLEAN:
        if verdict == LOOK_CLOSER:
            _check_questions_in_detail(questions)
        for item in questions:
            if item.intent is not None:
                _check_intent(item)
    if request.assignment is not None:
        check_assignment(request)
    return request
