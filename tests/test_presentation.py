from __future__ import annotations

import pytest

from interaction import (
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    PlanReviewIntent,
    UnknownIntent,
    escape_controls,
    is_plan_review,
    split_recommended,
)

Option = AskUserQuestionOption
PLAN = "# Plan\n1. step"


def plan(**changes: object) -> AskUserQuestionItem:
    fields: dict[str, object] = {
        "id": "plan",
        "question": "Approve?",
        "detail": PLAN,
        "options": [Option("Approve"), Option("Revise")],
        "intent": PlanReviewIntent("Approve"),
    }
    fields.update(changes)
    return AskUserQuestionItem(**fields)  # type: ignore[arg-type]


def test_a_single_plan_review_question_is_a_plan_review() -> None:
    assert is_plan_review(AskUserQuestionRequest([plan()]))
    assert is_plan_review(AskUserQuestionRequest([plan(options=[Option("Approve")])]))


@pytest.mark.parametrize(
    "request_",
    [
        AskUserQuestionRequest([plan(), plan(id="other")]),
        AskUserQuestionRequest([plan(intent=None)]),
        AskUserQuestionRequest([plan(intent=UnknownIntent("plan-review-v2"))]),
        AskUserQuestionRequest([plan(detail=None)]),
        AskUserQuestionRequest([plan(detail="")]),
        AskUserQuestionRequest([plan(multi_select=True)]),
        AskUserQuestionRequest(
            [plan(options=[Option("Approve"), Option("Revise"), Option("Drop")])]
        ),
        AskUserQuestionRequest([plan(intent=PlanReviewIntent("Ship"))]),
        AskUserQuestionRequest([plan(options=[])]),
    ],
)
def test_anything_else_is_the_generic_flow(request_: AskUserQuestionRequest) -> None:
    assert not is_plan_review(request_)


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("pnpm (Recommended)", ("pnpm", True)),
        ("pnpm (Recommended)  ", ("pnpm", True)),
        ("pnpm(Recommended)", ("pnpm", True)),
        ("pnpm", ("pnpm", False)),
        ("(Recommended)", ("(Recommended)", False)),
        ("pnpm (recommended)", ("pnpm (recommended)", False)),
        ("(Recommended) pnpm", ("(Recommended) pnpm", False)),
    ],
)
def test_split_recommended(label: str, expected: tuple[str, bool]) -> None:
    assert split_recommended(label) == expected


def test_escape_controls_makes_every_control_visible() -> None:
    text = "\x1b[2J\x1b]0;title\x07red\x9b31m\u202eevil\r\nnext\tcol"
    assert (
        escape_controls(text) == "\\x1b[2J\\x1b]0;title\\x07red\\x9b31m\\u202eevil\\x0d\nnext\tcol"
    )
    assert escape_controls("a\nb\tc", keep_newlines=False) == "a\\x0ab\\x09c"
    assert escape_controls("plain ünïcode ✓") == "plain ünïcode ✓"
