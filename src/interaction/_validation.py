"""The checks ``ask()`` makes, callable on their own by providers and relays.

Every fault is a :class:`UserInteractionError` whose message starts with the path of the
fault (``questions[1].options[0].label: ...``), also kept as ``error.path``.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

from ._abort import AbortSignal
from ._agents import current_agents, is_root
from ._errors import ErrorCode, UserInteractionError, aborted_error
from ._types import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    PlanReviewIntent,
    UnknownIntent,
)

__all__ = ["check_answer", "check_request"]

EMPTY_MESSAGE: Final = "ask_user_question requires at least one question"
NOT_LIVE_MESSAGE: Final = (
    "human interaction requires the exact live calling agent when an agent is supplied"
)
DELEGATED_MESSAGE: Final = (
    "human interaction is unavailable while the calling agent is owned by another live agent;"
    " include the unresolved question or decision in the child agent's final result"
)

# C0 and C1 controls and DEL, bidirectional embeddings/overrides/isolates, lone surrogates:
# refused in requests, and made visible by escape_controls. Prose may hold newline and tab.
UNSAFE: Final = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
UNSAFE_EXCEPT_LINES: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
SURROGATE: Final = re.compile("[\ud800-\udfff]")
# Default-ignorable code points and format (Cf) characters: nothing a reader can see. A text
# made only of them is blank, and labels that differ only by them are look-alikes.
INVISIBLE: Final = re.compile(
    "[\u00ad\u034f\u061c\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160"
    "\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164"
    "\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
_ZWJ: Final = "\u200d"


def _type_name(value: object) -> str:
    return "None" if value is None else type(value).__name__


def _bad_request(path: str, problem: str) -> UserInteractionError:
    return UserInteractionError(f"{path}: {problem}", ErrorCode.BAD_REQUEST, path=path)


def _bad_answer(path: str, problem: str) -> UserInteractionError:
    return UserInteractionError(f"{path}: {problem}", ErrorCode.BAD_ANSWER, path=path)


def _describe_char(char: str) -> str:
    code = ord(char)
    if 0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069:
        kind = "bidirectional override character"
    elif 0xD800 <= code <= 0xDFFF:
        kind = "unpaired surrogate"
    else:
        kind = "control character"
    return f"contains {kind} U+{code:04X}"


def _is_emoji_joint(text: str, index: int) -> bool:
    """Whether the ZWJ at ``index`` joins two pictographs (as in 👨\u200d👩\u200d👧)."""
    before = text[index - 1] if index > 0 else ""
    after = text[index + 1] if index + 1 < len(text) else ""
    if before == "\ufe0f" and index > 1:  # emoji presentation selector before the joiner
        before = text[index - 2]
    return (
        bool(before)
        and bool(after)
        and unicodedata.category(before) in ("So", "Sk")
        and unicodedata.category(after) == "So"
    )


def visible_text(text: str) -> str:
    """``text`` without its invisible characters, keeping the joiners inside emoji."""
    if INVISIBLE.search(text) is None:
        return text
    return INVISIBLE.sub(
        lambda m: m.group() if m.group() == _ZWJ and _is_emoji_joint(text, m.start()) else "",
        text,
    )


def is_blank(text: str) -> bool:
    """Whether ``text`` shows nothing: only white space and invisible characters."""
    return not text.strip() or not visible_text(text).strip()


def _check_text(
    value: object, path: str, *, block: bool = False, optional: bool = False, nonblank: bool = False
) -> None:
    """A string without forbidden characters; ``block`` text may hold newlines and tabs.

    Only an exact ``str`` is a string here: a subclass could lie about its contents.
    """
    if value is None and optional:
        return
    if type(value) is not str:
        raise _bad_request(path, f"expected a string, got {_type_name(value)}")
    if nonblank and not value.strip():
        raise _bad_request(path, "must not be empty")
    found = (UNSAFE_EXCEPT_LINES if block else UNSAFE).search(value)
    if found:
        raise _bad_request(path, _describe_char(found.group()))
    if nonblank and is_blank(value):
        raise _bad_request(path, "must not be empty: it has only invisible characters")


def label_key(label: str) -> str:
    """The form in which two labels count as the same.

    Compatibility form, case, surrounding white space and invisible characters do not count.
    """
    return visible_text(unicodedata.normalize("NFKC", label)).casefold().strip()


def _check_admission(agent: object) -> None:
    try:
        agent_id = getattr(agent, "id", None)
    except Exception as exc:  # a property that raises is a fault of the request
        raise _bad_request("agent.id", f"reading it raised {type(exc).__name__}") from None
    if type(agent_id) is not str:
        raise _bad_request("agent.id", f"expected a string, got {_type_name(agent_id)}")
    registry = current_agents()
    if registry is None or registry.get(agent_id) is not agent:
        raise UserInteractionError(NOT_LIVE_MESSAGE, ErrorCode.CALLER_NOT_LIVE)
    if not is_root(registry, agent):
        raise UserInteractionError(DELEGATED_MESSAGE, ErrorCode.DELEGATED_CALLER)


def _check_option(option: object, path: str) -> str:
    if type(option) is not AskUserQuestionOption:
        raise _bad_request(path, f"expected an AskUserQuestionOption, got {_type_name(option)}")
    _check_text(option.label, f"{path}.label", nonblank=True)
    _check_text(option.description, f"{path}.description", block=True, optional=True)
    return option.label


def _check_item(item: object, path: str, seen_ids: set[str]) -> None:
    if type(item) is not AskUserQuestionItem:
        raise _bad_request(path, f"expected an AskUserQuestionItem, got {_type_name(item)}")
    _check_text(item.id, f"{path}.id", nonblank=True)
    if item.id in seen_ids:
        raise _bad_request(f"{path}.id", f"duplicate question id {item.id!r}")
    seen_ids.add(item.id)
    _check_text(item.question, f"{path}.question", block=True, nonblank=True)
    _check_text(item.detail, f"{path}.detail", block=True, optional=True)
    _check_text(item.header, f"{path}.header", optional=True)
    options = item.options
    if type(options) is not tuple:
        raise _bad_request(
            f"{path}.options", f"expected a sequence of options, got {_type_name(options)}"
        )
    seen_labels: dict[str, str] = {}
    for index, option in enumerate(options):
        option_path = f"{path}.options[{index}]"
        label = _check_option(option, option_path)
        key = label_key(label)
        if key in seen_labels:
            raise _bad_request(
                f"{option_path}.label",
                f"duplicate option label {label!r} (same as {seen_labels[key]!r})",
            )
        seen_labels[key] = label
    if not isinstance(item.multi_select, bool):
        raise _bad_request(
            f"{path}.multi_select", f"expected a bool, got {_type_name(item.multi_select)}"
        )
    intent = item.intent
    if type(intent) is PlanReviewIntent:
        _check_text(intent.approve, f"{path}.intent.approve")
    elif type(intent) is UnknownIntent:
        _check_text(intent.kind, f"{path}.intent.kind", nonblank=True)
    elif intent is not None:
        raise _bad_request(
            f"{path}.intent",
            f"expected a PlanReviewIntent or UnknownIntent, got {_type_name(intent)}",
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
            raise _bad_request("signal", f"expected an AbortSignal, got {_type_name(signal)}")
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
        raise _bad_request(
            "request", f"expected an AskUserQuestionRequest, got {_type_name(request)}"
        )
    _check_signal(request.signal)
    _check_text(request.key, "key", optional=True, nonblank=True)
    questions = request.questions
    if type(questions) is not tuple:
        raise _bad_request(
            "questions", f"expected a sequence of questions, got {_type_name(questions)}"
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


def _check_answer_item(
    item: object, path: str, questions: dict[str, AskUserQuestionItem], answered: set[str]
) -> str:
    if type(item) is not AskUserQuestionAnswerItem:
        raise _bad_answer(path, f"expected an AskUserQuestionAnswerItem, got {_type_name(item)}")
    if type(item.id) is not str:
        raise _bad_answer(f"{path}.id", f"expected a string, got {_type_name(item.id)}")
    question = questions.get(item.id)
    if question is None:
        raise _bad_answer(f"{path}.id", f"no question has id {item.id!r}")
    qid = item.id
    if qid in answered:
        raise _bad_answer(f"{path}.id", f"question {qid} is answered more than once")
    answered.add(qid)
    selected = item.selected
    if type(selected) is not tuple:
        raise _bad_answer(
            f"{path}.selected", f"expected a sequence of labels, got {_type_name(selected)}"
        )
    offered = {option.label for option in question.options}
    chosen: set[str] = set()
    for index, label in enumerate(selected):
        label_path = f"{path}.selected[{index}]"
        if type(label) is not str:
            raise _bad_answer(label_path, f"expected a string, got {_type_name(label)}")
        if not offered:
            raise _bad_answer(
                label_path, f"question {qid} offers no options, so none can be selected"
            )
        if label not in offered:
            raise _bad_answer(label_path, f"question {qid} offers no option {label!r}")
        if label in chosen:
            raise _bad_answer(label_path, f"question {qid} selects {label!r} more than once")
        chosen.add(label)
    if not question.multi_select and len(selected) > 1:
        raise _bad_answer(
            f"{path}.selected",
            f"question {qid} is single-select but {len(selected)} labels are selected",
        )
    custom = item.custom
    if custom is not None:
        if type(custom) is not str:
            raise _bad_answer(f"{path}.custom", f"expected a string, got {_type_name(custom)}")
        if found := SURROGATE.search(custom):
            raise _bad_answer(f"{path}.custom", _describe_char(found.group()))
        if is_blank(custom):
            raise _bad_answer(
                f"{path}.custom", f"question {qid} has a blank custom answer (leave it out to skip)"
            )
        if selected and not question.multi_select:
            raise _bad_answer(
                f"{path}.custom",
                f"question {qid} is single-select, so a custom answer replaces the choice"
                " and cannot accompany a selected label",
            )
    return qid


_SCAN_LIMIT: Final = 8
# A custom answer with either is looked at closely: it may be blank or unencodable.
_SUSPECT_CUSTOM: Final = re.compile(f"{SURROGATE.pattern[:-1]}{INVISIBLE.pattern[1:]}")


def _is_clean_answer(request: AskUserQuestionRequest, answer: object) -> bool:
    """A fast pass: ``True`` only for a fitting answer already in question order."""
    if type(answer) is not AskUserQuestionAnswer:
        return False
    items, questions = answer.answers, request.questions
    if type(items) is not tuple or len(items) != len(questions):
        return False
    for item, question in zip(items, questions, strict=True):
        if (
            type(item) is not AskUserQuestionAnswerItem
            or type(item.id) is not str
            or item.id != question.id
        ):
            return False
        selected, custom = item.selected, item.custom
        if type(selected) is not tuple:
            return False
        count = len(selected)
        if count > 1 and (not question.multi_select or len(set(selected)) != count):
            return False
        if count:
            options = question.options
            # A set past a few labels keeps the check linear when thousands are selected.
            offered = options if count < _SCAN_LIMIT else {o.label for o in options}
            for label in selected:
                if type(label) is not str:
                    return False
                if offered is options:
                    if all(o.label != label for o in options):
                        return False
                elif label not in offered:
                    return False
        if custom is not None and (
            type(custom) is not str
            or not custom.strip()
            or (count and not question.multi_select)
            or _SUSPECT_CUSTOM.search(custom)
        ):
            return False
    return True


def check_answer(request: AskUserQuestionRequest, answer: object) -> AskUserQuestionAnswer:
    """Check a provider's ``answer`` against a checked ``request`` (``BAD_ANSWER`` if unfit).

    Returns the answer with its items in question order.
    """
    if _is_clean_answer(request, answer):
        assert isinstance(answer, AskUserQuestionAnswer)
        return answer
    if type(answer) is not AskUserQuestionAnswer:
        raise _bad_answer("answer", f"expected an AskUserQuestionAnswer, got {_type_name(answer)}")
    items = answer.answers
    if type(items) is not tuple:
        raise _bad_answer(
            "answers", f"expected a sequence of answer items, got {_type_name(items)}"
        )
    questions = {item.id: item for item in request.questions}
    answered: set[str] = set()
    by_id: dict[str, AskUserQuestionAnswerItem] = {}
    for index, item in enumerate(items):
        qid = _check_answer_item(item, f"answers[{index}]", questions, answered)
        assert isinstance(item, AskUserQuestionAnswerItem)
        by_id[qid] = item
    for question in request.questions:
        if question.id not in by_id:
            raise _bad_answer("answers", f"question {question.id} has no answer")
    ordered = tuple(by_id[question.id] for question in request.questions)
    if ordered == items:
        return answer
    return AskUserQuestionAnswer(ordered)
