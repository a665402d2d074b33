"""The request checks ``ask()`` makes, callable on their own by providers and relays.

Every structural fault is a ``BAD_REQUEST`` whose message starts with the path of the
fault (``questions[1].options[0].label: ...``), also kept as ``error.path``. Each check has
a fast pass that only says "certainly fine" and a detailed pass that finds and names the
first fault; ``tests/test_bad_request.py`` keeps the two in agreement.
"""

from __future__ import annotations

from typing import Final

from ._abort import AbortSignal
from ._agents import current_agents, is_root
from ._errors import (
    DELEGATED_MESSAGE,
    EMPTY_MESSAGE,
    NOT_LIVE_MESSAGE,
    ErrorCode,
    UserInteractionError,
    aborted_error,
    bad_request,
    type_name,
)
from ._text_policy import UNSAFE, UNSAFE_EXCEPT_LINES, check_text, is_blank, label_key
from ._types import (
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    PlanReviewIntent,
    UnknownIntent,
)

__all__ = ["check_caller", "check_questions", "check_request", "questions_from_json"]


def _check_admission(agent: object) -> None:
    try:
        agent_id = getattr(agent, "id", None)
    except Exception as exc:  # a property that raises is a fault of the request
        raise bad_request("agent.id", f"reading it raised {type(exc).__name__}") from None
    if type(agent_id) is not str:
        raise bad_request("agent.id", f"expected a string, got {type_name(agent_id)}")
    registry = current_agents()
    if registry is None or registry.get(agent_id) is not agent:
        raise UserInteractionError(NOT_LIVE_MESSAGE, ErrorCode.CALLER_NOT_LIVE)
    if not is_root(registry, agent):
        raise UserInteractionError(DELEGATED_MESSAGE, ErrorCode.DELEGATED_CALLER)


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
    elif type(intent) is UnknownIntent:
        check_text(intent.kind, f"{path}.intent.kind", nonblank=True)
    elif intent is not None:
        raise bad_request(
            f"{path}.intent",
            f"expected a PlanReviewIntent or UnknownIntent, got {type_name(intent)}",
        )


def _check_intent(item: AskUserQuestionItem) -> None:
    intent = item.intent
    if intent is None:
        return
    if item.detail is None or not item.detail.strip():
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


def _is_clean_text(value: object, bucket: list[str]) -> bool:
    """Collect an optional string for one regex pass; ``False`` for anything else."""
    if value is None:
        return True
    if type(value) is str:
        bucket.append(value)
        return True
    return False


def _fast_blank(text: str) -> bool:
    # Invisible characters are all outside ASCII, and most text is ASCII.
    return not text.strip() or (not text.isascii() and is_blank(text))


def _clean_questions(questions: tuple[object, ...]) -> bool:
    """A fast pass that is ``True`` only for batches the detailed checks would accept.

    ``False`` means "look closer": the detailed checks then find and name the fault.
    """
    lines: list[str] = []
    blocks: list[str] = []
    ids: set[str] = set()
    for item in questions:
        if type(item) is not AskUserQuestionItem:
            return False
        qid, text = item.id, item.question
        if (
            type(qid) is not str
            or type(text) is not str
            or _fast_blank(qid)
            or _fast_blank(text)
            or qid in ids
            or type(item.multi_select) is not bool
            or type(item.options) is not tuple
            or not _is_clean_text(item.detail, blocks)
            or not _is_clean_text(item.header, lines)
        ):
            return False
        ids.add(qid)
        lines.append(qid)
        blocks.append(text)
        keys: set[str] = set()
        for option in item.options:
            if type(option) is not AskUserQuestionOption:
                return False
            label = option.label
            if type(label) is not str or _fast_blank(label):
                return False
            if not _is_clean_text(option.description, blocks):
                return False
            lines.append(label)
            keys.add(label.lower().strip() if label.isascii() else label_key(label))
        if len(keys) != len(item.options):
            return False
        intent = item.intent
        if intent is not None:
            if type(intent) is PlanReviewIntent:
                if type(intent.approve) is not str:
                    return False
                lines.append(intent.approve)
            elif type(intent) is UnknownIntent:
                if type(intent.kind) is not str or _fast_blank(intent.kind):
                    return False
                lines.append(intent.kind)
            else:
                return False
    return not UNSAFE.search("".join(lines)) and not UNSAFE_EXCEPT_LINES.search("".join(blocks))


_ABSENT: Final = object()


def _optional_text(data: dict[str, object], key: str, bucket: list[str]) -> str | object | None:
    """The string under ``key``, ``None`` when absent, ``_ABSENT`` for anything else."""
    value = data.get(key, _ABSENT)
    if value is _ABSENT:
        return None
    if type(value) is str:
        bucket.append(value)
        return value
    return _ABSENT


def questions_from_json(raw: object) -> tuple[AskUserQuestionItem, ...] | None:
    """Checked questions straight from parsed wire JSON, or ``None`` to decode in detail.

    One pass that checks while it builds: it accepts only what the wire's detailed decode
    followed by :func:`check_questions` would accept, and builds the same objects
    (``tests/test_wire.py`` keeps the two in agreement). Items with an intent take the
    detailed path.
    """
    if type(raw) is not list:
        return None
    lines: list[str] = []
    blocks: list[str] = []
    ids: set[str] = set()
    items: list[AskUserQuestionItem] = []
    for value in raw:
        if type(value) is not dict or "intent" in value:
            return None
        qid, text = value.get("id"), value.get("question")
        if type(qid) is not str or type(text) is not str or qid in ids:
            return None
        if _fast_blank(qid) or _fast_blank(text):
            return None
        ids.add(qid)
        lines.append(qid)
        blocks.append(text)
        detail = _optional_text(value, "detail", blocks)
        header = _optional_text(value, "header", lines)
        multi = value.get("multiSelect", False)
        raw_options = value.get("options", ())
        if detail is _ABSENT or header is _ABSENT or type(multi) is not bool:
            return None
        if type(raw_options) is not list and raw_options != ():
            return None
        options: list[AskUserQuestionOption] = []
        keys: set[str] = set()
        for raw_option in raw_options:
            if type(raw_option) is not dict:
                return None
            label = raw_option.get("label")
            if type(label) is not str or _fast_blank(label):
                return None
            description = _optional_text(raw_option, "description", blocks)
            if description is _ABSENT:
                return None
            lines.append(label)
            keys.add(label.lower().strip() if label.isascii() else label_key(label))
            options.append(AskUserQuestionOption(label, description))  # type: ignore[arg-type]
        if len(keys) != len(options):
            return None
        items.append(AskUserQuestionItem(qid, text, detail, header, options, multi))  # type: ignore[arg-type]
    if UNSAFE.search("".join(lines)) or UNSAFE_EXCEPT_LINES.search("".join(blocks)):
        return None
    return tuple(items)


def check_questions(questions: tuple[object, ...]) -> None:
    """The structural (``BAD_REQUEST``) checks of a batch of questions, in order."""
    if _clean_questions(questions):
        return
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

    That is: an already aborted signal, the resume key, no question, agent admission (only
    when an agent is supplied), structure, intents. Returns ``request`` unchanged; the
    provider check is not made, so a relay or provider may call this on a request it
    received.
    """
    if type(request) is not AskUserQuestionRequest:
        raise bad_request(
            "request", f"expected an AskUserQuestionRequest, got {type_name(request)}"
        )
    _check_signal(request.signal)
    check_text(request.key, "key", optional=True, nonblank=True)
    questions = request.questions
    if type(questions) is not tuple:
        raise bad_request(
            "questions", f"expected a sequence of questions, got {type_name(questions)}"
        )
    if not questions:
        raise UserInteractionError(EMPTY_MESSAGE, ErrorCode.EMPTY_QUESTIONS)
    if request.agent is not None:
        _check_admission(request.agent)
    check_questions(questions)
    for item in questions:
        assert isinstance(item, AskUserQuestionItem)
        _check_intent(item)
    return request
