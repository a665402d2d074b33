"""The batch flow every UI drives, without a UI: every rule of moving, choosing, typing,
reviewing and sending."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    PlanReviewIntent,
    check_answer,
)
from interaction.flow import FIRST_QUESTION, NOTHING_CHOSEN, OTHER, TYPE_OR_SKIP, BatchFlow

from .helpers import CHECKS, NOTES, pkg_question
from .strategies import requests

Item = AskUserQuestionAnswerItem
Option = AskUserQuestionOption
PLAN = AskUserQuestionItem(
    "plan",
    "Approve this plan?",
    detail="1. Do it.",
    options=[Option("Revise"), Option("Approve")],
    intent=PlanReviewIntent("Approve"),
)


def flow(*questions: AskUserQuestionItem, review: bool | None = None) -> BatchFlow:
    return BatchFlow(AskUserQuestionRequest(questions or [pkg_question()]), review=review)


def labels(batch: BatchFlow) -> list[str | None]:
    """The rows as the labels they answer with (``None``: the Other row)."""
    return [None if row is OTHER else row.label for row in batch.rows]


def test_single_select_moves_wrapping_and_enter_chooses() -> None:
    batch = flow()
    assert labels(batch) == [*(option.label for option in pkg_question().options), None]
    batch.move(-1)
    assert batch.draft.cursor == 3  # wrapped to the Other row
    batch.move(1)
    assert batch.draft.cursor == 0
    batch.move(2)
    batch.enter()
    assert batch.done
    assert batch.answer() == AskUserQuestionAnswer([Item("pkg", ["yarn"])])


def test_digits_jump_and_join_into_numbers_that_exist() -> None:
    many = pkg_question(options=[Option(f"o{n}") for n in range(1, 13)])
    batch = flow(many)
    batch.digit(1)
    assert batch.draft.cursor == 0
    batch.digit(2)
    assert batch.draft.cursor == 11  # "12"
    batch.digit(3)
    assert batch.draft.cursor == 2  # "123" does not exist: 3 starts again
    batch.digit(0)
    assert batch.draft.cursor == 2
    assert batch.notice == "There is no option 0: the options are numbered 1-13."
    batch.move(1)
    assert batch.notice == ""
    batch.digit(1)
    batch.digit(3)
    assert batch.rows[batch.draft.cursor] is OTHER  # 13 is the Other row


def test_multi_select_toggles_keep_the_order_chosen() -> None:
    batch = flow(CHECKS)
    batch.move(2)
    batch.toggle()  # types
    batch.move(-2)
    batch.toggle()  # tests
    batch.move(1)
    batch.toggle()  # lint
    batch.toggle()  # and off again
    assert batch.draft.chosen == ["types", "tests"]
    batch.enter()
    assert batch.answer().answers == (Item("checks", ["types", "tests"]),)


def test_multi_select_refuses_to_confirm_nothing() -> None:
    batch = flow(CHECKS)
    batch.enter()
    assert not batch.done
    assert batch.notice == NOTHING_CHOSEN
    batch.open_text()
    batch.submit_text()
    assert batch.notice == NOTHING_CHOSEN


def test_multi_select_custom_accompanies_the_labels() -> None:
    batch = flow(CHECKS)
    batch.toggle()
    batch.open_text()
    opened = batch.mode
    batch.set_text("  docs  ")
    batch.close_text()
    assert (opened, batch.mode) == ("text", "list")
    assert batch.draft.text == "  docs  "  # kept when going back to the options
    batch.enter()
    assert batch.answer().answers == (Item("checks", ["tests"], "docs"),)


def test_space_on_the_other_row_opens_the_field() -> None:
    batch = flow(CHECKS)
    batch.move(-1)
    batch.toggle()
    assert batch.mode == "text"


def test_single_select_other_row_and_custom_answer() -> None:
    batch = flow()
    batch.move(-1)
    batch.enter()
    assert batch.mode == "text"
    batch.submit_text()
    assert batch.notice == TYPE_OR_SKIP
    assert not batch.done
    batch.set_text("bun")
    batch.submit_text()
    assert batch.answer().answers == (Item("pkg", custom="bun"),)


def test_a_question_without_options_is_a_text_field_and_blank_skips() -> None:
    batch = flow(NOTES, AskUserQuestionItem("more", "More?"))
    assert batch.mode == "text"
    assert batch.rows == ()
    batch.open_text()
    batch.close_text()  # neither leaves the field: there are no options
    assert batch.mode == "text"
    batch.set_text("   ")
    batch.submit_text()
    batch.set_text("yes")
    batch.submit_text()
    assert (batch.reviewing, batch.done) == (True, False)
    batch.enter()
    assert batch.answer().answers == (Item("notes"), Item("more", custom="yes"))


def test_skip_and_back_keep_every_draft_and_send_nothing_early() -> None:
    batch = flow(pkg_question(), CHECKS, NOTES)
    batch.back()
    assert batch.notice == "This is the first question."
    batch.move(1)
    batch.enter()  # npm
    batch.toggle()
    batch.skip()  # the toggle stays in the draft, the answer is a skip
    batch.set_text("draft")
    batch.back()
    assert (batch.index, batch.draft.chosen) == (1, ["tests"])
    batch.back()
    assert (batch.index, batch.draft.cursor) == (0, 1)
    batch.enter()
    batch.skip()
    assert (batch.index, batch.draft.text) == (2, "draft")
    assert not batch.done
    batch.submit_text()
    assert batch.reviewing
    batch.send()
    assert batch.answer().answers == (
        Item("pkg", ["npm"]),
        Item("checks"),
        Item("notes", custom="draft"),
    )


def test_plan_review_puts_the_approve_option_first() -> None:
    batch = flow(PLAN)
    assert batch.plan_review
    assert labels(batch) == ["Approve", "Revise", None]
    assert [row.primary for row in batch.rows if row is not OTHER] == [True, False]
    batch.enter()
    assert batch.answer().answers == (Item("plan", ["Approve"]),)


def test_a_batch_with_a_plan_review_intent_is_the_generic_flow() -> None:
    batch = flow(PLAN, NOTES)
    assert not batch.plan_review
    assert labels(batch) == ["Revise", "Approve", None]


ACTIONS = st.sampled_from(
    [
        "up",
        "down",
        "digit",
        "toggle",
        "enter",
        "open",
        "close",
        "type",
        "blank",
        "submit",
        "skip",
        "back",
        "forward",
    ]
)


@given(requests(), st.lists(ACTIONS, max_size=60), st.data())
def test_any_keys_give_an_answer_that_fits_the_request(
    request: AskUserQuestionRequest, actions: list[str], data: st.DataObject
) -> None:
    batch = BatchFlow(request)
    for action in [*actions, *["skip"] * len(request.questions), "enter"]:
        if batch.done:
            break
        match action:
            case "up" | "down":
                batch.move(-1 if action == "up" else 1)
            case "digit":
                batch.digit(data.draw(st.integers(0, 9)))
            case "toggle":
                if batch.mode == "list" and batch.multi:
                    batch.toggle()
            case "enter":
                if batch.reviewing or (batch.mode == "list" and batch.rows):
                    batch.enter()
            case "open":
                batch.open_text()
            case "close":
                batch.close_text()
            case "type" | "blank":
                batch.set_text(data.draw(st.text(min_size=1)) if action == "type" else " ")
            case "submit":
                if batch.mode == "text":
                    batch.submit_text()
            case "skip":
                batch.skip()
            case "back":
                batch.back()
            case "forward":
                batch.forward()
    assert batch.done
    answer = batch.answer()
    assert check_answer(request, answer) == answer


def test_esc_closes_a_field_and_dismissing_work_asks_first() -> None:
    batch = flow(pkg_question(), NOTES)
    batch.escape()
    assert (batch.dismissed, batch.confirming) == (True, False)  # untouched: at once
    batch = flow(pkg_question(), NOTES)
    batch.open_text()
    batch.set_text("bun")
    batch.escape()
    assert (batch.mode, batch.draft.text, batch.dismissed) == ("list", "bun", False)
    batch.escape()
    assert (batch.confirming, batch.notice) == (True, "Discard 1 answer? y/N")
    batch.escape()  # Esc answers no
    assert (batch.confirming, batch.notice, batch.dismissed) == (False, "", False)
    batch.enter()
    batch.submit_text()
    batch.set_text("x")
    batch.interrupt()
    assert batch.notice == "Discard 2 answers? y/N"
    batch.interrupt()  # Ctrl-C twice
    assert (batch.dismissed, batch.done) == (True, False)


def test_typed_text_that_names_an_option_selects_it() -> None:
    batch = flow()
    batch.open_text()
    batch.set_text("  NPM ")
    batch.submit_text()
    assert batch.answer().answers == (Item("pkg", ["npm"]),)
    batch = flow(CHECKS)
    batch.toggle()  # tests
    batch.open_text()
    batch.set_text("Lint")
    batch.submit_text()
    assert batch.answer().answers == (Item("checks", ["tests", "lint"]),)


def test_a_batch_ends_in_a_review_that_sends_or_goes_back_to_edit() -> None:
    batch = flow(pkg_question(), CHECKS)
    batch.enter()  # pnpm
    batch.skip()
    assert batch.reviewing
    assert [batch.status(0), batch.status(1)] == ["answered", "skipped"]
    assert batch.answers == (Item("pkg", ["pnpm (Recommended)"]), Item("checks"))
    batch.back()  # edit the last question, its draft as it was
    assert (batch.reviewing, batch.index) == (False, 1)
    batch.toggle()
    batch.enter()
    assert (batch.reviewing, batch.done) == (True, False)
    batch.enter()
    assert batch.answer().answers == (
        Item("pkg", ["pnpm (Recommended)"]),
        Item("checks", ["tests"]),
    )


def test_any_question_can_be_revisited_and_an_open_one_is_sent_as_a_skip() -> None:
    batch = flow(pkg_question(), CHECKS, NOTES)
    batch.forward()
    batch.forward()
    assert (batch.index, batch.status(0), batch.status(1)) == (2, "open", "open")
    batch.set_text("later")
    batch.submit_text()
    assert batch.reviewing
    batch.goto(0)
    assert (batch.reviewing, batch.index) == (False, 0)
    batch.enter()
    assert batch.index == 1
    batch.goto(3)  # the review step
    assert batch.reviewing
    batch.forward()  # nothing after the review
    assert batch.reviewing
    batch.send()
    assert batch.answer().answers == (
        Item("pkg", ["pnpm (Recommended)"]),
        Item("checks"),
        Item("notes", custom="later"),
    )


def test_goto_refuses_a_question_the_batch_does_not_have() -> None:
    batch = flow(pkg_question(), CHECKS)
    batch.back()
    assert batch.notice == FIRST_QUESTION
    for index in (-1, 3):
        with pytest.raises(IndexError, match=f"^there is no question {index} in this batch$"):
            batch.goto(index)


def test_a_single_question_and_review_false_send_at_once() -> None:
    single = flow()
    single.enter()
    assert (single.done, single.reviewing) == (True, False)
    direct = flow(pkg_question(), NOTES, review=False)
    direct.enter()
    direct.submit_text()
    assert direct.done
    assert direct.answer().answers == (Item("pkg", ["pnpm (Recommended)"]), Item("notes"))
    direct = flow(pkg_question(), NOTES, review=False)
    direct.forward()
    direct.forward()  # no review step to go to
    assert (direct.index, direct.reviewing) == (1, False)
