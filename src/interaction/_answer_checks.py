"""The answer check: a provider's answer must fit the request it answers (``BAD_ANSWER``)."""

from __future__ import annotations

from typing import Final

from ._errors import UserInteractionError, bad_answer, bad_request, type_name
from ._request_checks import check_questions
from ._text_policy import INVISIBLE, SURROGATE, LazyPattern, describe_char, is_blank
from ._types import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionRequest,
)

__all__ = ["check_answer", "fit_answer", "fit_in_detail", "is_clean_answer"]


def _check_answer_item(
    item: object, path: str, questions: dict[str, AskUserQuestionItem], answered: set[str]
) -> str:
    if type(item) is not AskUserQuestionAnswerItem:
        raise bad_answer(path, f"expected an AskUserQuestionAnswerItem, got {type_name(item)}")
    if type(item.id) is not str:
        raise bad_answer(f"{path}.id", f"expected a string, got {type_name(item.id)}")
    question = questions.get(item.id)
    if question is None:
        raise bad_answer(f"{path}.id", f"no question has id {item.id!r}")
    qid = item.id
    if qid in answered:
        raise bad_answer(f"{path}.id", f"question {qid} is answered more than once")
    answered.add(qid)
    selected = item.selected
    if type(selected) is not tuple:
        raise bad_answer(
            f"{path}.selected", f"expected a sequence of labels, got {type_name(selected)}"
        )
    offered = {option.label for option in question.options}
    chosen: set[str] = set()
    for index, label in enumerate(selected):
        label_path = f"{path}.selected[{index}]"
        if type(label) is not str:
            raise bad_answer(label_path, f"expected a string, got {type_name(label)}")
        if not offered:
            raise bad_answer(
                label_path, f"question {qid} offers no options, so none can be selected"
            )
        if label not in offered:
            raise bad_answer(label_path, f"question {qid} offers no option {label!r}")
        if label in chosen:
            raise bad_answer(label_path, f"question {qid} selects {label!r} more than once")
        chosen.add(label)
    if not question.multi_select and len(selected) > 1:
        raise bad_answer(
            f"{path}.selected",
            f"question {qid} is single-select but {len(selected)} labels are selected",
        )
    custom = item.custom
    if custom is not None:
        if type(custom) is not str:
            raise bad_answer(f"{path}.custom", f"expected a string, got {type_name(custom)}")
        if found := SURROGATE.search(custom):
            raise bad_answer(f"{path}.custom", describe_char(found.group()))
        if is_blank(custom):
            raise bad_answer(
                f"{path}.custom", f"question {qid} has a blank custom answer (leave it out to skip)"
            )
        if selected and not question.multi_select:
            raise bad_answer(
                f"{path}.custom",
                f"question {qid} is single-select, so a custom answer replaces the choice"
                " and cannot accompany a selected label",
            )
    return qid


_SCAN_LIMIT: Final = 8
# A custom answer with either is looked at closely: it may be blank or unencodable.
_SUSPECT_CUSTOM: Final = LazyPattern(f"{SURROGATE.pattern[:-1]}{INVISIBLE.pattern[1:]}")


def _clean_selection(question: AskUserQuestionItem, selected: tuple[object, ...]) -> bool:
    """Whether every selected label is a string naming one of the question's options, and a
    selection of more than one is on a multi-select question without a repeat."""
    count = len(selected)
    options = question.options
    if count < _SCAN_LIMIT:  # a few labels: scanning the options beats building a set
        for label in selected:
            if type(label) is not str:
                return False
            for option in options:
                if option.label == label:
                    break
            else:
                return False
    else:  # sets keep the check linear when thousands are selected
        for label in selected:
            if type(label) is not str:
                return False
        if not {option.label for option in options}.issuperset(selected):
            return False
    # Only strings reach the set, so it cannot meet an unhashable label.
    return count == 1 or (question.multi_select and len(set(selected)) == count)


def _clean_custom(question: AskUserQuestionItem, custom: object, selected: int) -> bool:
    """Whether a custom answer is a visible string, beside a selection only when the
    question is multi-select."""
    return (
        type(custom) is str
        and bool(custom.strip())
        and (not selected or question.multi_select)
        # ASCII holds neither surrogates nor invisible characters: no regex needed.
        and (custom.isascii() or _SUSPECT_CUSTOM.search(custom) is None)
    )


def is_clean_answer(request: AskUserQuestionRequest, answer: AskUserQuestionAnswer) -> bool:
    """A fast pass: ``True`` only for a fitting answer already in question order.

    ``answer`` is exactly an ``AskUserQuestionAnswer`` (every caller looks first).
    """
    items, questions = answer.answers, request.questions
    if type(items) is not tuple or len(items) != len(questions):
        return False
    # The lengths are equal (checked above). A counter beats zip(), enumerate() and range():
    # zip's iterator and pair tuples were a fifth of this whole check for one question (a
    # third on Python 3.12), and the other two cost about twice the counter.
    index = 0
    for item in items:
        question = questions[index]
        index += 1  # noqa: SIM113
        if type(item) is not AskUserQuestionAnswerItem:
            return False
        item_id, selected, custom = item.id, item.selected, item.custom
        if type(item_id) is not str or item_id != question.id or type(selected) is not tuple:
            return False
        if selected and not _clean_selection(question, selected):
            return False
        if custom is not None and not _clean_custom(question, custom, len(selected)):
            return False
    return True


def check_answer(request: AskUserQuestionRequest, answer: object) -> AskUserQuestionAnswer:
    """Check a provider's ``answer`` against a checked ``request`` (``BAD_ANSWER`` if unfit).

    Returns the answer with its items in question order. ``request`` is one that
    :func:`check_request` accepts, as every provider and relay receives: this looks only
    that it is an ``AskUserQuestionRequest`` with a tuple of questions (else
    ``BAD_REQUEST``), and names a fault of an unchecked request (``BAD_REQUEST``) only when
    the fault trips the answer check.
    """
    if type(request) is not AskUserQuestionRequest or type(request.questions) is not tuple:
        raise bad_request(
            "request",
            "expected an AskUserQuestionRequest with a tuple of questions,"
            f" got {type_name(request)}",
        )
    try:
        return fit_answer(request, answer)
    except UserInteractionError:
        raise
    except Exception as exc:
        unexpected = exc
    # A request nobody checked: name its fault, out here so it is not chained to the slip.
    check_questions(request.questions)
    raise unexpected


def fit_answer(request: AskUserQuestionRequest, answer: object) -> AskUserQuestionAnswer:
    """:func:`check_answer` for a request already checked, as ``ask()`` has."""
    if type(answer) is AskUserQuestionAnswer and is_clean_answer(request, answer):
        return answer
    return fit_in_detail(request, answer)


def fit_in_detail(request: AskUserQuestionRequest, answer: object) -> AskUserQuestionAnswer:
    """:func:`fit_answer` past its fast pass: name the fault, or put the items in order."""
    if type(answer) is not AskUserQuestionAnswer:
        raise bad_answer("answer", f"expected an AskUserQuestionAnswer, got {type_name(answer)}")
    items = answer.answers
    if type(items) is not tuple:
        raise bad_answer("answers", f"expected a sequence of answer items, got {type_name(items)}")
    questions = {item.id: item for item in request.questions}
    answered: set[str] = set()
    by_id: dict[str, AskUserQuestionAnswerItem] = {}
    for index, item in enumerate(items):
        qid = _check_answer_item(item, f"answers[{index}]", questions, answered)
        assert isinstance(item, AskUserQuestionAnswerItem)
        by_id[qid] = item
    for question in request.questions:
        if question.id not in by_id:
            raise bad_answer("answers", f"question {question.id} has no answer")
    ordered = tuple(by_id[question.id] for question in request.questions)
    if ordered == items:
        return answer
    return AskUserQuestionAnswer(ordered)
