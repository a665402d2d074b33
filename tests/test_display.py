"""The display model: model text escaped once, badges split, plan-review order decided once."""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from interaction import (
    OTHER_LABEL,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    PlanReviewIntent,
)
from interaction._core import escape_controls
from interaction._text_policy import UNSAFE, UNSAFE_EXCEPT_LINES
from interaction.display import OptionView, QuestionView, RequestView, present

HOSTILE = "\x1b[2J\x1b]0;pwned\x07<b>hi</b>\u202e"


def test_every_model_string_is_escaped_and_labels_stay_the_values() -> None:
    request = AskUserQuestionRequest(
        [
            AskUserQuestionItem(
                "pkg",
                f"Which?{HOSTILE}\nsecond line",
                header=f"Pkg{HOSTILE}",
                detail=f"plan\n{HOSTILE}",
                options=[
                    AskUserQuestionOption("pnpm (Recommended)", f"fast{HOSTILE}\nsmall"),
                    AskUserQuestionOption("npm"),
                ],
            )
        ]
    )
    view = present(request)
    (question,) = view.questions
    escaped = "\\x1b[2J\\x1b]0;pwned\\x07<b>hi</b>\\u202e"
    assert question.question == f"Which?{escaped}\nsecond line"
    assert question.header == f"Pkg{escaped}"
    assert question.detail == f"plan\n{escaped}"
    assert question.options == (
        OptionView("pnpm (Recommended)", "pnpm", True, f"fast{escaped}\nsmall", False),
        OptionView("npm", "npm", False, None, False),
    )
    assert question.other == OTHER_LABEL
    assert not view.plan_review


def test_one_line_fields_escape_newlines_too() -> None:
    item = AskUserQuestionItem("q", "Q?", header="a\nb", options=[AskUserQuestionOption("x\ny")])
    # A label with a newline is refused by ask(); the view still never draws one raw.
    (question,) = present(AskUserQuestionRequest([item])).questions
    assert question.header == "a\\x0ab"
    assert question.options[0].text == "x\\x0ay"


def test_a_plan_review_puts_the_approve_option_first_as_the_primary_action() -> None:
    item = AskUserQuestionItem(
        "plan",
        "Approve?",
        detail="# Plan",
        options=[AskUserQuestionOption("Revise"), AskUserQuestionOption("Approve")],
        intent=PlanReviewIntent("Approve"),
    )
    view = present(AskUserQuestionRequest([item]))
    assert view.plan_review
    assert [(o.label, o.primary) for o in view.questions[0].options] == [
        ("Approve", True),
        ("Revise", False),
    ]


def test_a_plan_review_intent_that_cannot_be_honoured_keeps_the_request_order() -> None:
    item = AskUserQuestionItem(
        "plan",
        "Approve?",
        detail="# Plan",
        multi_select=True,
        options=[AskUserQuestionOption("Revise"), AskUserQuestionOption("Approve")],
        intent=PlanReviewIntent("Approve"),
    )
    view = present(AskUserQuestionRequest([item]))
    assert not view.plan_review
    assert [(o.label, o.primary) for o in view.questions[0].options] == [
        ("Revise", False),
        ("Approve", False),
    ]


def test_a_free_text_question_has_no_other_entry() -> None:
    view = present(AskUserQuestionRequest([AskUserQuestionItem("notes", "Else?")]))
    assert view == RequestView(
        (QuestionView("notes", "Else?", None, None, (), False, None),), plan_review=False
    )


def test_to_json_is_plain_json_with_camel_case_keys() -> None:
    item = AskUserQuestionItem(
        "pkg", "Which?", multi_select=True, options=[AskUserQuestionOption("a (Recommended)")]
    )
    data = present(AskUserQuestionRequest([item])).to_json()
    assert json.loads(json.dumps(data)) == {
        "planReview": False,
        "provenance": None,
        "questions": [
            {
                "id": "pkg",
                "question": "Which?",
                "header": None,
                "detail": None,
                "multiSelect": True,
                "other": OTHER_LABEL,
                "permission": None,
                "options": [
                    {
                        "label": "a (Recommended)",
                        "text": "a",
                        "recommended": True,
                        "description": None,
                        "primary": False,
                        "role": None,
                    }
                ],
            }
        ],
    }


UNSAFE_SAMPLES = "\x00\x1b\n\t\x7f\x85\x9f\u202a\u202e\u2066\u2069\ud800\udfff"


@given(st.text(st.one_of(st.characters(), st.sampled_from(UNSAFE_SAMPLES))), st.booleans())
def test_escaping_makes_exactly_the_patterns_escapes(text: str, keep_newlines: bool) -> None:
    """A text with nothing to escape is returned as it is (the printable fast path), and
    any other gets exactly the escapes the pattern makes."""
    pattern = UNSAFE_EXCEPT_LINES if keep_newlines else UNSAFE

    def visible(match: re.Match[str]) -> str:
        code = ord(match.group())
        return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"

    assert escape_controls(text, keep_newlines=keep_newlines) == pattern.compiled().sub(
        visible, text
    )
