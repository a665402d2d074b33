from __future__ import annotations

import dataclasses
import inspect
import subprocess
import sys

import pytest

import interaction
from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    PlanReviewIntent,
    UnknownIntent,
)

from .helpers import FakeAgent

DOCUMENTED = [
    "BAD_TEAM",
    "NOT_ASSIGNED",
    "OTHER_LABEL",
    "RECOMMENDED_SUFFIX",
    "AbortController",
    "AbortSignal",
    "Agent",
    "AgentRegistry",
    "Approval",
    "AskSuspended",
    "AskUserQuestionAnswer",
    "AskUserQuestionAnswerItem",
    "AskUserQuestionIntent",
    "AskUserQuestionItem",
    "AskUserQuestionOption",
    "AskUserQuestionRequest",
    "Assignment",
    "ErrorCode",
    "HarnessError",
    "JSONValue",
    "LiveAgents",
    "PermissionIntent",
    "PermissionVerdict",
    "PlanReviewIntent",
    "PlanVerdict",
    "Provenance",
    "ResumedAnswer",
    "Resumption",
    "Team",
    "UnknownIntent",
    "UserInteractionError",
    "UserInteractionProvider",
    "__version__",
    "answer_item",
    "ask",
    "ask_permission",
    "ask_sync",
    "ask_text",
    "ask_text_sync",
    "cancelled_error",
    "check_answer",
    "check_request",
    "choose",
    "choose_many",
    "choose_many_sync",
    "choose_sync",
    "confirm",
    "confirm_sync",
    "current_agents",
    "current_provider",
    "escape_controls",
    "is_plan_review",
    "label_key",
    "may_answer",
    "permission_question",
    "permission_verdict",
    "provide",
    "provide_agents",
    "register_provider",
    "request_digest",
    "resume",
    "review_plan",
    "review_plan_sync",
    "split_recommended",
    "with_provenance",
]


def _isort_style(name: str) -> tuple[int, str]:
    """Constants first, then classes, then everything else, as ruff's RUF022 sorts."""
    if name.isupper():
        return 0, name
    return (1 if name[0].isupper() else 2), name


def test_all_is_pinned_sorted_and_resolvable() -> None:
    assert interaction.__all__ == DOCUMENTED
    assert interaction.__all__ == sorted(interaction.__all__, key=_isort_style)
    for name in interaction.__all__:
        assert hasattr(interaction, name), name


def test_classes_and_functions_are_defined_in_private_modules() -> None:
    defined = [
        getattr(interaction, name)
        for name in interaction.__all__
        if inspect.isclass(getattr(interaction, name))
        or inspect.isfunction(getattr(interaction, name))
    ]
    assert len(defined) > 20
    for value in defined:
        assert value.__module__.startswith("interaction._"), value


def test_import_pulls_in_no_optional_dependency() -> None:
    code = (
        "import sys, interaction, interaction.wire, interaction.tool, interaction.console,"
        " interaction.testing, interaction.cli, interaction.relay, interaction.display,"
        " interaction.integrations, interaction.spent;"
        "bad = [m for m in ('prompt_toolkit', 'starlette', 'uvicorn', 'mcp', 'pytest',"
        " 'pydantic', 'msgspec', 'claude_agent_sdk', 'pydantic_ai', 'pydantic_ai_harness',"
        " 'agents', 'openai', 'langgraph', 'langchain_core', 'acp', 'a2a', 'ag_ui')"
        " if m in sys.modules];"
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("value", "field"),
    [
        (AskUserQuestionOption("a"), "label"),
        (PlanReviewIntent("a"), "approve"),
        (UnknownIntent("x"), "kind"),
        (AskUserQuestionItem("a", "q"), "question"),
        (AskUserQuestionRequest([]), "questions"),
        (AskUserQuestionAnswerItem("a"), "selected"),
        (AskUserQuestionAnswer([]), "answers"),
    ],
)
def test_frozen_fields_cannot_be_assigned(value: object, field: str) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, field, "changed")


def test_sequences_are_stored_as_tuples_and_compare_by_value() -> None:
    a = AskUserQuestionItem("a", "q", options=[AskUserQuestionOption("x")])
    b = AskUserQuestionItem("a", "q", options=(AskUserQuestionOption("x"),))
    assert a.options == (AskUserQuestionOption("x"),)
    assert a == b
    assert hash(a) == hash(b)
    assert AskUserQuestionAnswerItem("a", ["x"]).selected == ("x",)


def test_agent_and_signal_are_left_out_of_equality() -> None:
    controller = interaction.AbortController()
    plain = AskUserQuestionRequest([AskUserQuestionItem("a", "q")])
    rich = AskUserQuestionRequest(
        [AskUserQuestionItem("a", "q")],
        agent=FakeAgent("a"),
        signal=controller.signal,
    )
    assert plain == rich


def test_plan_review_kind_and_unknown_intent_are_frozen_all_the_way_down() -> None:
    assert PlanReviewIntent("Approve").kind == "plan-review"
    intent = UnknownIntent("vote", {"choices": ["a", "b"], "meta": {"n": 1}})
    assert intent.fields["choices"] == ("a", "b")
    with pytest.raises(TypeError):
        intent.fields["meta"]["n"] = 2  # type: ignore[index]
    assert intent == UnknownIntent("vote", {"choices": ["a", "b"], "meta": {"n": 1}})
    assert hash(intent) == hash(UnknownIntent("vote", {"meta": {"n": 1}, "choices": ("a", "b")}))
