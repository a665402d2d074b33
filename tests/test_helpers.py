"""The one-call helpers: what they ask, and what they return."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from interaction import (
    AbortController,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    ErrorCode,
    PlanReviewIntent,
    PlanVerdict,
    UserInteractionError,
    ask_text,
    choose,
    choose_many,
    confirm,
    is_plan_review,
    provide,
    review_plan,
)
from interaction.testing import ScriptedProvider

Option = AskUserQuestionOption


async def test_choose_asks_one_single_select_question() -> None:
    controller = AbortController()
    scripted = ScriptedProvider({"choice": "npm"})
    with provide(scripted):
        assert (
            await choose(
                "Which?", ["pnpm", Option("npm", "d")], header="Tools", signal=controller.signal
            )
            == "npm"
        )
    request = scripted.last_request
    assert request.questions == (
        AskUserQuestionItem(
            "choice", "Which?", header="Tools", options=[Option("pnpm"), Option("npm", "d")]
        ),
    )
    assert request.signal is controller.signal


@pytest.mark.parametrize(("script", "expected"), [("bun", "bun"), (None, None)])
async def test_choose_returns_text_of_ones_own_or_none(
    script: str | None, expected: str | None
) -> None:
    with provide(ScriptedProvider({"choice": script})):
        assert await choose("Which?", ["pnpm", "npm"]) == expected


async def test_choose_many_keeps_the_order_chosen_and_custom() -> None:
    item = AskUserQuestionAnswerItem("choices", ["docs", "tests"], "notes")
    scripted = ScriptedProvider({"choices": item})
    with provide(scripted):
        assert await choose_many("Which?", ["tests", "docs"]) == item
    assert scripted.last_request.questions[0].multi_select


@pytest.mark.parametrize(
    ("script", "expected"),
    [("Yes", True), ("No", False), (None, False), ("sure, go ahead", False)],
)
async def test_confirm_is_true_only_for_yes(script: str | None, expected: bool) -> None:
    scripted = ScriptedProvider({"confirm": script})
    with provide(scripted):
        assert await confirm("Allow `rm -rf build/`?", detail="in /repo") is expected
    assert [o.label for o in scripted.last_request.questions[0].options] == ["Yes", "No"]


async def test_confirm_with_own_labels() -> None:
    with provide(ScriptedProvider({"confirm": "Allow once"})):
        assert await confirm("Run it?", yes="Allow once", no="Deny")


async def test_ask_text() -> None:
    scripted = ScriptedProvider({"text": "call it v2"})
    with provide(scripted):
        assert await ask_text("Release name?") == "call it v2"
    assert scripted.last_request.questions[0].options == ()
    with provide(ScriptedProvider()):
        assert await ask_text("Release name?") is None


@pytest.mark.parametrize(
    ("script", "verdict"),
    [
        ("Approve", PlanVerdict(True, "Approve")),
        ("Revise", PlanVerdict(False, "Revise")),
        ("do step 2 first", PlanVerdict(False, None, "do step 2 first")),
        (None, PlanVerdict(False)),
    ],
)
async def test_review_plan_returns_a_typed_verdict(
    script: str | None, verdict: PlanVerdict
) -> None:
    scripted = ScriptedProvider({"plan": script})
    with provide(scripted):
        assert await review_plan("# Plan\n1. ship") == verdict
    request = scripted.last_request
    assert is_plan_review(request)
    assert request.questions[0].intent == PlanReviewIntent("Approve")
    assert request.questions[0].detail == "# Plan\n1. ship"


async def test_review_plan_with_several_declines_is_the_generic_flow() -> None:
    scripted = ScriptedProvider({"plan": "Drop it"})
    with provide(scripted):
        verdict = await review_plan("# Plan", decline=["Revise", "Drop it"])
    assert verdict == PlanVerdict(False, "Drop it")
    assert not is_plan_review(scripted.last_request)


async def test_helpers_raise_the_seams_errors() -> None:
    with pytest.raises(UserInteractionError) as info:
        await confirm("Allow?")
    assert info.value.code == ErrorCode.NO_PROVIDER
    with provide(ScriptedProvider()), pytest.raises(UserInteractionError) as info:
        await choose("Which?", ["a", "A"])
    assert info.value.code == ErrorCode.BAD_REQUEST


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: choose("Proceed?", "yes"),
            "options: expected a sequence of labels or options, got str",
        ),
        (
            lambda: choose_many("Which?", None),  # type: ignore[arg-type]
            "options: expected a sequence of labels or options, got None",
        ),
        (
            lambda: review_plan("# Plan", decline="Revise"),
            "decline: expected a sequence of labels or options, got str",
        ),
    ],
)
async def test_options_must_be_a_sequence_not_a_lone_string(
    call: Callable[[], Awaitable[object]], message: str
) -> None:
    scripted = ScriptedProvider()
    with provide(scripted), pytest.raises(UserInteractionError) as info:
        await call()
    assert (info.value.code, info.value.message) == (ErrorCode.BAD_REQUEST, message)
    assert scripted.requests == []
