"""The model-facing ask_user_question tool: definition, arguments, results, end to end."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest

from interaction import (
    AbortController,
    AgentRegistry,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    Provenance,
    UserInteractionError,
    provide,
    provide_agents,
)
from interaction.testing import ScriptedProvider
from interaction.tool import (
    TOOL_DESCRIPTION,
    TOOL_NAME,
    ToolLimits,
    anthropic_tool,
    openai_tool,
    render_answer,
    request_from_arguments,
    run_tool,
    run_tool_sync,
    tool_parameters,
)

from .helpers import FakeAgent

Option = AskUserQuestionOption


def test_the_schema_requires_questions_and_offers_only_label_and_description() -> None:
    schema: Any = tool_parameters()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["required"] == ["questions"]
    question = schema["properties"]["questions"]["items"]
    assert set(question["properties"]) == {"id", "question", "header", "options", "multi_select"}
    assert set(question["properties"]["options"]["items"]["properties"]) == {"label", "description"}
    assert "(Recommended)" in question["properties"]["options"]["description"]


def test_the_schema_states_the_id_limit_the_parser_enforces() -> None:
    schema: Any = tool_parameters()
    question = schema["properties"]["questions"]["items"]
    assert question["properties"]["id"]["maxLength"] == 200
    with pytest.raises(UserInteractionError) as caught:
        request_from_arguments({"questions": [{"id": "x" * 201, "question": "?"}]})
    assert "questions[0].id: is 201 characters long; the limit is 200" in caught.value.message


@pytest.mark.parametrize("bad", [0, -1, float("nan"), 2.5, "4", True, None])
def test_tool_limits_are_positive_ints(bad: object) -> None:
    # Each bound is written into the JSON Schema: NaN there is not JSON, and would turn
    # the bound off.
    with pytest.raises(
        ValueError, match=re.escape(f"ToolLimits.max_options must be a positive int, got {bad!r}")
    ):
        ToolLimits(max_options=bad)  # type: ignore[arg-type]


def test_the_wrappers_carry_the_same_parameters() -> None:
    limits = ToolLimits(max_questions=2)
    wrapped: Any = openai_tool(limits)
    assert wrapped["type"] == "function"
    assert wrapped["function"] == {
        "name": TOOL_NAME,
        "description": TOOL_DESCRIPTION,
        "parameters": tool_parameters(limits),
    }
    assert anthropic_tool(limits)["input_schema"] == tool_parameters(limits)
    assert anthropic_tool()["name"] == "ask_user_question"
    assert "stable id" in str(anthropic_tool()["description"])


def test_arguments_become_a_request_and_recommended_labels_pass_unchanged() -> None:
    request = request_from_arguments(
        {
            "questions": [
                {
                    "id": "pkg",
                    "question": "Which?",
                    "header": "Tools",
                    "options": [
                        {"label": "pnpm (Recommended)", "description": "fast"},
                        {"label": "npm"},
                    ],
                    "multi_select": False,
                    "unknown": "ignored",
                }
            ]
        }
    )
    assert request == AskUserQuestionRequest(
        [
            AskUserQuestionItem(
                "pkg",
                "Which?",
                header="Tools",
                options=[Option("pnpm (Recommended)", "fast"), Option("npm")],
            )
        ]
    )


def test_what_models_commonly_emit_is_tolerated() -> None:
    arguments = json.dumps(
        {
            "questions": json.dumps(
                [
                    {
                        "id": "a",
                        "question": "?",
                        "options": '["x", {"label": "y"}]',
                        "multiSelect": True,
                    }
                ]
            )
        }
    )
    request = request_from_arguments(arguments)
    assert request.questions[0].options == (Option("x"), Option("y"))
    assert request.questions[0].multi_select is True


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("not json", "arguments: are not valid JSON"),
        ([], "arguments: expected an object with questions, got array"),
        ({}, "questions: is required: pass an array of questions"),
        ({"questions": "nope"}, "questions: expected an array of questions, got string"),
        (
            {"questions": "[oops"},
            "questions: expected an array of questions, got a string that is not JSON",
        ),
        ({"questions": [3]}, "questions[0]: expected an object, got number"),
        ({"questions": [{"question": "?"}]}, "questions[0].id: is required"),
        ({"questions": [{"id": "a", "question": " "}]}, "questions[0].question: must not be empty"),
        (
            {"questions": [{"id": "a", "question": "?", "options": [7]}]},
            "questions[0].options[0]: expected an object with a label, got number",
        ),
        (
            {"questions": [{"id": "a", "question": "?", "multi_select": "yes"}]},
            "questions[0].multi_select: expected a boolean, got string",
        ),
        (
            {"questions": [{"id": "a", "question": "?", "header": "h" * 41}]},
            "questions[0].header: is 41 characters long; the limit is 40",
        ),
        (
            {"questions": [{"id": "a", "question": "?", "options": ["o"] * 7}]},
            "questions[0].options: has 7 options; the limit is 6",
        ),
        (
            {"questions": [{"id": str(i), "question": "?"} for i in range(5)]},
            "questions: has 5 questions; the limit is 4",
        ),
        (
            {"questions": [{"id": "a", "question": "?"}, {"id": "a", "question": "?"}]},
            "questions[1].id: duplicate question id 'a'",
        ),
        (
            {"questions": [{"id": "a", "question": "?", "options": ["x", "X"]}]},
            "questions[0].options[1].label: duplicate option label 'X' (same as 'x')",
        ),
        (
            {"questions": [{"id": "a", "question": "\x1b[31m?"}]},
            "questions[0].question: contains control character U+001B",
        ),
    ],
)
def test_faulty_arguments_get_a_message_the_model_can_act_on(
    arguments: object, message: str
) -> None:
    with pytest.raises(UserInteractionError) as info:
        request_from_arguments(arguments)
    assert info.value.code == ErrorCode.BAD_REQUEST
    assert (
        info.value.message
        == f"ask_user_question: {message}. Fix the arguments and call ask_user_question again."
    )


def test_limits_are_configurable() -> None:
    with pytest.raises(UserInteractionError, match="has 2 questions; the limit is 1"):
        request_from_arguments(
            {"questions": [{"id": "a", "question": "?"}, {"id": "b", "question": "?"}]},
            limits=ToolLimits(max_questions=1),
        )


THREE = {
    "questions": [
        {
            "id": "targets",
            "question": "Targets?",
            "multi_select": True,
            "options": [{"label": "tests"}, {"label": "docs"}],
        },
        {
            "id": "labels-only",
            "question": "Labels?",
            "multi_select": True,
            "options": [{"label": "tests"}, {"label": "docs"}],
        },
        {"id": "notes", "question": "Notes?"},
    ]
}


async def test_the_three_answer_case_renders_exactly_like_the_reference() -> None:
    scripted = ScriptedProvider(
        {
            "targets": AskUserQuestionAnswerItem("targets", ["tests", "docs"], "release notes"),
            "labels-only": ["tests"],
            "notes": "ship today",
        }
    )
    with provide(scripted):
        result = await run_tool(THREE)
    assert result.content == (
        '{"answers":[{"id":"targets","selected":["tests","docs"],"custom":"release notes"},'
        '{"id":"labels-only","selected":["tests"]},'
        '{"id":"notes","selected":[],"custom":"ship today"}]}'
    )
    assert not result.is_error


def test_render_answer_matches_the_reference_example() -> None:
    answer = AskUserQuestionAnswer([AskUserQuestionAnswerItem("pkg", ["pnpm"])])
    assert render_answer(answer) == '{"answers":[{"id":"pkg","selected":["pnpm"]}]}'


async def test_the_signal_and_agent_reach_the_provider() -> None:
    registry = AgentRegistry()
    agent = FakeAgent("lead")
    registry.enter(agent)
    controller = AbortController()
    scripted = ScriptedProvider()
    with provide_agents(registry), provide(scripted):
        await run_tool(THREE, agent=agent, signal=controller.signal)
    assert scripted.last_request.agent is agent
    assert scripted.last_request.signal is controller.signal


async def test_the_provenance_reaches_the_provider_and_is_checked_as_by_ask() -> None:
    asker = Provenance(source="planner", session="run-1", tool=TOOL_NAME)
    scripted = ScriptedProvider()
    with provide(scripted):
        await run_tool(THREE, provenance=asker)
    assert scripted.last_request.provenance == asker
    assert request_from_arguments(THREE, provenance=asker).provenance == asker
    with provide(scripted):
        bad = await run_tool(THREE, provenance=Provenance(source="two\nlines"))
    assert bad.error == {"name": "UserInteractionError", "code": "BAD_REQUEST"}
    assert bad.content.startswith("Error: provenance.source: ")
    assert len(scripted.requests) == 1  # the refused one never reached the provider


def test_the_sync_tool_carries_the_provenance_too() -> None:
    scripted = ScriptedProvider()
    with provide(scripted):
        run_tool_sync(THREE, provenance=Provenance(tool=TOOL_NAME))
    assert scripted.last_request.provenance == Provenance(tool=TOOL_NAME)


async def test_no_provider_gives_its_code_and_guidance() -> None:
    result = await run_tool(THREE)
    assert result.error == {"name": "UserInteractionError", "code": "NO_PROVIDER"}
    assert result.content.startswith("Error: no user-interaction provider is registered\n")
    assert "Do not call ask_user_question again" in result.content


async def test_a_child_agent_gets_delegated_caller_even_with_bad_arguments() -> None:
    registry = AgentRegistry()
    root, child = FakeAgent("root"), FakeAgent("child")
    registry.enter(root)
    registry.enter(child, owner=root)
    with provide_agents(registry), provide(ScriptedProvider()):
        good = await run_tool(THREE, agent=child)
        bad = await run_tool({"questions": [7]}, agent=child)
    for result in (good, bad):
        assert result.error == {"name": "UserInteractionError", "code": "DELEGATED_CALLER"}
        assert result.content == (
            "Error: human interaction is unavailable while the calling agent is owned by another"
            " live agent; include the unresolved question or decision in the child agent's"
            " final result"
        )


async def test_an_empty_batch_gives_empty_questions() -> None:
    with provide(ScriptedProvider()):
        result = await run_tool({"questions": []})
    assert result.error == {"name": "UserInteractionError", "code": "EMPTY_QUESTIONS"}
    assert result.content == "Error: ask_user_question requires at least one question"


@pytest.mark.parametrize(
    ("code", "guidance"),
    [
        (ErrorCode.ASK_CANCELLED, "Do not ask the same question again right away"),
        (ErrorCode.ASK_TIMEOUT, "The user did not answer in time."),
    ],
)
async def test_cancelled_and_timed_out_results_tell_the_model_how_to_go_on(
    code: ErrorCode, guidance: str
) -> None:
    with provide(ScriptedProvider(UserInteractionError("it ended", code))):
        result = await run_tool(THREE)
    assert result.error == {"name": "UserInteractionError", "code": code}
    assert result.content.startswith("Error: it ended\n")
    assert guidance in result.content


async def test_bad_arguments_render_as_an_error_result() -> None:
    with provide(ScriptedProvider()):
        result = await run_tool('{"questions": [{"id": 1}]}')
    assert result.error == {"name": "UserInteractionError", "code": "BAD_REQUEST"}
    assert result.content == (
        "Error: ask_user_question: questions[0].id: expected a string, got number."
        " Fix the arguments and call ask_user_question again."
    )
