from __future__ import annotations

import pytest

import interaction
from interaction import (
    AskUserQuestionAnswer,
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


# ------------------------------------------------------------------ the one answer rule


def _question(multi: bool) -> AskUserQuestionItem:
    return AskUserQuestionItem(
        "pkg",
        "Which?",
        multi_select=multi,
        options=[AskUserQuestionOption("npm"), AskUserQuestionOption("Yarn (Recommended)")],
    )


@pytest.mark.parametrize(
    ("multi", "selected", "text", "expected"),
    [
        (False, (), None, ((), None)),
        (False, (), "  \u200b ", ((), None)),
        (False, ("npm",), None, (("npm",), None)),
        (False, (), " NPM ", (("npm",), None)),
        (
            False,
            (),
            "\uff4e\uff50\uff4d",
            (("npm",), None),
        ),  # compatibility forms count as the same
        (False, ("npm",), "yarn (recommended)", (("Yarn (Recommended)",), None)),
        (False, ("npm",), " bun ", ((), "bun")),
        (True, ("npm",), "bun", (("npm",), "bun")),
        (True, ("npm",), "Yarn (Recommended)", (("npm", "Yarn (Recommended)"), None)),
        (True, ("npm", "npm"), "npm", (("npm",), None)),
        (True, (), "", ((), None)),
    ],
)
def test_answer_item_is_the_one_rule_for_typed_text(
    multi: bool,
    selected: tuple[str, ...],
    text: str | None,
    expected: tuple[tuple[str, ...], str | None],
) -> None:
    question = _question(multi)
    item = interaction.answer_item(question, selected, text)
    assert (item.id, (item.selected, item.custom)) == ("pkg", expected)
    request = AskUserQuestionRequest([question])
    assert interaction.check_answer(request, AskUserQuestionAnswer([item])).answers == (item,)


def test_a_free_text_question_keeps_its_text_as_typed_without_the_edges() -> None:
    question = AskUserQuestionItem("notes", "Anything else?")
    assert interaction.answer_item(question, text="  two\nlines  ").custom == "two\nlines"
