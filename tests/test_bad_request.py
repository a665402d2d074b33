"""Structural faults and untyped callers: BAD_REQUEST naming the place, never a traceback."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from interaction import (
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    PermissionIntent,
    PlanReviewIntent,
    UnknownIntent,
    UserInteractionError,
    check_request,
)
from interaction._request_checks import (
    CLEAN,
    CLEAN_WITH_INTENTS,
    _check_item,
    _clean_questions,
)

from .helpers import pkg_question
from .strategies import requests

Option = AskUserQuestionOption


def q(**fields: Any) -> AskUserQuestionItem:
    return pkg_question(**fields)


CASES: list[tuple[object, str]] = [
    ({"questions": []}, "request: expected an AskUserQuestionRequest, got dict"),
    (None, "request: expected an AskUserQuestionRequest, got None"),
    (AskUserQuestionRequest(None), "questions: expected a sequence of questions, got None"),  # type: ignore[arg-type]
    (AskUserQuestionRequest("abc"), "questions: expected a sequence of questions, got str"),  # type: ignore[arg-type]
    (
        AskUserQuestionRequest([q()], signal="soon"),  # type: ignore[arg-type]
        "signal: expected an AbortSignal, got str",
    ),
    (
        AskUserQuestionRequest([{"id": "a", "question": "q"}]),  # type: ignore[list-item]
        "questions[0]: expected an AskUserQuestionItem, got dict",
    ),
    (AskUserQuestionRequest([q(id="")]), "questions[0].id: must not be empty"),
    (AskUserQuestionRequest([q(id=" ")]), "questions[0].id: must not be empty"),
    (AskUserQuestionRequest([q(id=None)]), "questions[0].id: expected a string, got None"),
    (
        AskUserQuestionRequest([q(), q(question="again")]),
        "questions[1].id: duplicate question id 'pkg'",
    ),
    (AskUserQuestionRequest([q(question="")]), "questions[0].question: must not be empty"),
    (AskUserQuestionRequest([q(question=3)]), "questions[0].question: expected a string, got int"),
    (AskUserQuestionRequest([q(detail=["x"])]), "questions[0].detail: expected a string, got list"),
    (AskUserQuestionRequest([q(header=1.5)]), "questions[0].header: expected a string, got float"),
    (
        AskUserQuestionRequest([q(options="ab")]),
        "questions[0].options: expected a sequence of options, got str",
    ),
    (
        AskUserQuestionRequest([q(options=[{"label": "a"}])]),
        "questions[0].options[0]: expected an AskUserQuestionOption, got dict",
    ),
    (
        AskUserQuestionRequest([q(options=["npm"])]),
        "questions[0].options[0]: expected an AskUserQuestionOption, got str",
    ),
    (
        AskUserQuestionRequest([q(options=[Option("")])]),
        "questions[0].options[0].label: must not be empty",
    ),
    (
        AskUserQuestionRequest([q(options=[Option(None)])]),  # type: ignore[arg-type]
        "questions[0].options[0].label: expected a string, got None",
    ),
    (
        AskUserQuestionRequest([q(options=[Option("a", 7)])]),  # type: ignore[arg-type]
        "questions[0].options[0].description: expected a string, got int",
    ),
    (
        AskUserQuestionRequest([q(options=[Option("npm"), Option("NPM")])]),
        "questions[0].options[1].label: duplicate option label 'NPM' (same as 'npm')",
    ),
    (
        AskUserQuestionRequest([q(options=[Option("\uff4e\uff50\uff4d"), Option("npm")])]),
        "questions[0].options[1].label: duplicate option label 'npm'"
        " (same as '\uff4e\uff50\uff4d')",
    ),
    (
        AskUserQuestionRequest([q(multi_select=1)]),
        "questions[0].multi_select: expected a bool, got int",
    ),
    (
        AskUserQuestionRequest([q(intent="plan-review")]),
        "questions[0].intent: expected a PlanReviewIntent, PermissionIntent or UnknownIntent,"
        " got str",
    ),
    (
        AskUserQuestionRequest([q(detail="d", intent=PlanReviewIntent(None))]),  # type: ignore[arg-type]
        "questions[0].intent.approve: expected a string, got None",
    ),
    (
        AskUserQuestionRequest([q(detail="d", intent=UnknownIntent(""))]),
        "questions[0].intent.kind: must not be empty",
    ),
    (
        AskUserQuestionRequest([q(header="\x1b[31mred")]),
        "questions[0].header: contains control character U+001B",
    ),
    (
        AskUserQuestionRequest([q(header="two\nlines")]),
        "questions[0].header: contains control character U+000A",
    ),
    (
        AskUserQuestionRequest([q(question="what\r")]),
        "questions[0].question: contains control character U+000D",
    ),
    (
        AskUserQuestionRequest([q(detail="ok\n\tok\x07")]),
        "questions[0].detail: contains control character U+0007",
    ),
    (
        AskUserQuestionRequest([q(options=[Option("a\u202eb")])]),
        "questions[0].options[0].label: contains bidirectional override character U+202E",
    ),
    (
        AskUserQuestionRequest([q(options=[Option("a", "x\u2067y")])]),
        "questions[0].options[0].description: contains bidirectional override character U+2067",
    ),
    (
        AskUserQuestionRequest([q(id="a\x9bb")]),
        "questions[0].id: contains control character U+009B",
    ),
    (
        AskUserQuestionRequest([q(question="half \ud800")]),
        "questions[0].question: contains unpaired surrogate U+D800",
    ),
    (
        AskUserQuestionRequest([q(), AskUserQuestionItem("b", "ok", options=[Option("\t")])]),
        "questions[1].options[0].label: must not be empty",
    ),
]


@pytest.mark.parametrize(("request_", "message"), CASES)
def test_each_structural_fault_names_its_place(request_: object, message: str) -> None:
    with pytest.raises(UserInteractionError) as info:
        check_request(request_)
    assert info.value.code == ErrorCode.BAD_REQUEST
    assert info.value.message == message
    assert info.value.path == message.split(":", 1)[0]


def test_newlines_and_tabs_are_allowed_where_text_is_prose() -> None:
    question = q(
        question="Which one?\n\tThink.",
        detail="# Plan\n\n- a\n\t- b",
        options=[Option("npm", "line one\nline two")],
    )
    check_request(AskUserQuestionRequest([question]))


# Anything an untyped caller might pass, in any field.
junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=5),
    st.binary(max_size=3),
    st.lists(st.text(max_size=3), max_size=3),
    st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
    st.just(object()),
)


def sometimes_junk(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(good, junk)


untyped_options = st.builds(
    Option, sometimes_junk(st.text(min_size=1, max_size=4)), sometimes_junk(st.none())
)
untyped_items = st.builds(
    AskUserQuestionItem,
    id=sometimes_junk(st.text(min_size=1, max_size=4)),
    question=sometimes_junk(st.text(min_size=1, max_size=8)),
    detail=sometimes_junk(st.none()),
    header=sometimes_junk(st.none()),
    options=sometimes_junk(st.lists(sometimes_junk(untyped_options), max_size=3)),
    multi_select=sometimes_junk(st.booleans()),
    intent=sometimes_junk(
        st.one_of(
            st.none(),
            st.builds(PlanReviewIntent, junk),
            st.builds(
                PermissionIntent,
                sometimes_junk(st.text(max_size=3)),
                sometimes_junk(st.text(max_size=3)),
                sometimes_junk(st.text(min_size=1, max_size=4)),
                sometimes_junk(st.text(min_size=1, max_size=4)),
                sometimes_junk(st.none()),
            ),
            st.builds(UnknownIntent, junk),
        )
    ),
)
untyped_requests = st.one_of(
    junk,
    st.builds(
        AskUserQuestionRequest, sometimes_junk(st.lists(sometimes_junk(untyped_items), max_size=3))
    ),
)


@given(untyped_requests)
def test_untyped_input_gets_a_user_interaction_error_or_passes(request_: object) -> None:
    outcome: object = None
    try:
        check_request(request_)
    except UserInteractionError as error:
        outcome = (error.code, bool(error.message))
    allowed = {ErrorCode.BAD_REQUEST, ErrorCode.EMPTY_QUESTIONS, ErrorCode.BAD_INTENT}
    assert outcome is None or outcome in {(code, True) for code in allowed}


def _detailed_checks_pass(questions: tuple[object, ...]) -> bool:
    seen: set[str] = set()
    try:
        for index, item in enumerate(questions):
            _check_item(item, f"questions[{index}]", seen)
    except UserInteractionError:
        return False
    return True


@given(untyped_requests)
def test_the_fast_pass_never_accepts_what_the_detailed_checks_refuse(request_: object) -> None:
    questions = getattr(request_, "questions", None)
    if isinstance(questions, tuple):
        assert not _clean_questions(questions) or _detailed_checks_pass(questions)


@given(requests())
def test_the_fast_pass_accepts_every_valid_batch(request_: AskUserQuestionRequest) -> None:
    assert _clean_questions(tuple(request_.questions))


@given(requests())
def test_the_fast_pass_says_whether_a_valid_batch_declares_an_intent(
    request_: AskUserQuestionRequest,
) -> None:
    # check_request checks intents (BAD_INTENT) only when the fast pass says there is one.
    questions = tuple(request_.questions)
    declared = any(question.intent is not None for question in questions)
    assert _clean_questions(questions) == (CLEAN_WITH_INTENTS if declared else CLEAN)
