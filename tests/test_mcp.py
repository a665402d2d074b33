"""The MCP bridge with the real SDK, in one process, both directions end to end."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, cast

import mcp.types as mcp_types
import pytest
from mcp.client import Client
from mcp.client.context import ClientRequestContext
from mcp.server.mcpserver import Context, MCPServer

from interaction import (
    AbortSignal,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    ask,
    provide,
    wire,
)
from interaction.mcp import ASK_DECLINED, ElicitationProvider, elicitation_callback, request_to_form
from interaction.testing import BlockingProvider, ScriptedProvider

from .helpers import import_error_without

BATCH = {
    "questions": [
        {
            "id": "pkg",
            "header": "Tools",
            "question": "Which package manager?",
            "options": [{"label": "pnpm (Recommended)", "description": "fast"}, {"label": "npm"}],
        },
        {
            "id": "checks",
            "question": "Which checks?",
            "multiSelect": True,
            "options": [{"label": "tests"}, {"label": "lint"}, {"label": "types"}],
        },
        {"id": "notes", "question": "Anything else?", "detail": "Free text."},
        {
            "id": "plan",
            "question": "Approve the plan?",
            "detail": "# Plan\n1. ship",
            "options": [{"label": "Approve"}, {"label": "Revise"}],
            "intent": {"kind": "plan-review", "approve": "Approve"},
        },
    ]
}

BATCH_ONE = wire.decode_request(json.dumps({"questions": [BATCH["questions"][2]]})).questions


def make_server(timeout: float | None = None) -> MCPServer:
    server = MCPServer("asker")

    @server.tool()
    async def ask_batch(request_json: str, ctx: Context) -> str:
        request = wire.decode_request(request_json)
        if timeout is not None:
            request = AskUserQuestionRequest(request.questions, signal=AbortSignal.timeout(timeout))
        try:
            with provide(ElicitationProvider.from_context(ctx)):
                answer = await ask(request)
        except UserInteractionError as error:
            return f"error:{error.code}:{error.message}"
        return wire.dumps(answer)

    return server


async def call(server: MCPServer, request: object = BATCH, **client: Any) -> str:
    async with Client(server, mode="legacy", **client) as connected:
        result = await connected.call_tool("ask_batch", {"request_json": json.dumps(request)})
    content = result.content[0]
    assert isinstance(content, mcp_types.TextContent)
    return content.text


async def test_a_server_tool_asks_a_batch_and_the_clients_callback_answers() -> None:
    scripted = ScriptedProvider(
        {
            "pkg": "pnpm (Recommended) — fast",
            "checks": AskUserQuestionAnswerItem("checks", ["types", "tests"]),
            "notes": "ship it",
            "plan": "Approve",
        }
    )
    text = await call(make_server(), elicitation_callback=elicitation_callback(scripted))
    assert json.loads(text) == {
        "answers": [
            {"id": "pkg", "selected": ["pnpm (Recommended)"]},
            {"id": "checks", "selected": ["types", "tests"]},
            {"id": "notes", "selected": [], "custom": "ship it"},
            {"id": "plan", "selected": ["Approve"]},
        ]
    }
    seen = scripted.last_request.questions
    # Our server's "Other" fields are folded into their choices: one question each.
    assert [q.id for q in seen] == ["pkg", "checks", "notes", "plan", "interaction.send"]
    assert seen[0].question == "Tools: Which package manager?"
    assert [o.label for o in seen[0].options] == ["pnpm (Recommended) — fast", "npm"]
    assert seen[1].multi_select
    assert seen[2].detail == "Free text."
    assert seen[4].question == "Send these answers to asker?"


async def test_other_text_replaces_a_single_choice_and_accompanies_a_multi_choice() -> None:
    scripted = ScriptedProvider({"pkg": "bun", "checks": ["lint", "fuzzing"]})
    text = await call(make_server(), elicitation_callback=elicitation_callback(scripted))
    answers = json.loads(text)["answers"]
    assert answers[0] == {"id": "pkg", "selected": [], "custom": "bun"}
    assert answers[1] == {"id": "checks", "selected": ["lint"], "custom": "fuzzing"}
    assert answers[2] == {"id": "notes", "selected": []}  # left empty: skipped


async def test_a_client_without_the_callback_is_no_provider_not_a_hang() -> None:
    text = await call(make_server())
    assert text == (
        "error:NO_PROVIDER:the MCP client cannot answer questions:"
        " it did not declare the form elicitation capability"
    )


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ("decline", "error:ASK_DECLINED:the user declined to answer ask_user_question"),
        ("cancel", "error:ASK_CANCELLED:the user dismissed ask_user_question without answering"),
    ],
)
async def test_decline_is_ask_declined_and_cancel_is_ask_cancelled(
    action: str, expected: str
) -> None:
    async def refuse(
        context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        return mcp_types.ElicitResult(action=action)  # type: ignore[arg-type]

    assert await call(make_server(), elicitation_callback=refuse) == expected
    assert ASK_DECLINED == "ASK_DECLINED"


async def test_a_dismissal_on_the_client_side_is_cancel() -> None:
    dismissed = UserInteractionError("dismissed", ErrorCode.ASK_CANCELLED)
    text = await call(
        make_server(), elicitation_callback=elicitation_callback(ScriptedProvider(dismissed))
    )
    assert text.startswith("error:ASK_CANCELLED:")


async def test_a_timeout_cancels_the_pending_elicitation() -> None:
    blocking = BlockingProvider()
    callback = elicitation_callback(blocking)
    async with Client(make_server(timeout=0.2), mode="legacy", elicitation_callback=callback) as c:
        result = await c.call_tool("ask_batch", {"request_json": json.dumps(BATCH)})
        # Still connected: the client's pending ask was cancelled, and its cleanup ran.
        assert len(blocking.requests) == 1
        assert blocking.pending == 0
    content = result.content[0]
    assert isinstance(content, mcp_types.TextContent)
    assert content.text == "error:ASK_TIMEOUT:ask_user_question timed out before the user answered"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"pkg": "bun"}, "answers[0].selected[0]: question pkg offers no option 'bun'"),
        (
            {"checks": ["tests", "tests"]},
            "answers[1].selected[1]: question checks selects 'tests' more than once",
        ),
        ({"pkg": 3}, "elicitation: content.pkg: expected an option label, got number"),
        ({"checks": "tests"}, "elicitation: content.checks: expected an array of option labels"),
        ({"notes": False}, "elicitation: content.notes: expected a string, got boolean"),
    ],
)
async def test_content_that_violates_the_schema_is_refused(
    content: dict[str, Any], message: str
) -> None:
    async def forge(
        context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        return mcp_types.ElicitResult(action="accept", content=content)

    text = await call(make_server(), elicitation_callback=forge)
    assert text == f"error:BAD_ANSWER:{message}"


def test_the_form_has_titled_enums_arrays_strings_and_no_required_field() -> None:
    message, schema, _ = request_to_form(wire.decode_request(BATCH))
    assert message.startswith(
        "Please answer 4 questions (leave one empty to skip it):\n- Tools: Which package manager?"
    )
    properties = cast(dict[str, Any], schema["properties"])
    assert properties["pkg"] == {
        "title": "Tools: Which package manager?",
        "type": "string",
        "oneOf": [
            {"const": "pnpm (Recommended)", "title": "pnpm (Recommended) — fast"},
            {"const": "npm", "title": "npm"},
        ],
    }
    assert properties["checks"]["type"] == "array"
    assert properties["checks"]["items"] == {
        "anyOf": [{"const": c, "title": c} for c in ("tests", "lint", "types")]
    }
    assert properties["notes"] == {
        "title": "Anything else?",
        "description": "Free text.",
        "type": "string",
        "maxLength": 10_000,
    }
    assert properties["checks"]["maxItems"] == 3
    assert properties["plan__other"]["type"] == "string"
    assert schema["required"] == []


# ---------------------------------------------------------------- client side on its own


def form(
    properties: dict[str, Any], required: list[str] | None = None, message: str = "Fill in"
) -> mcp_types.ElicitRequestFormParams:
    return mcp_types.ElicitRequestFormParams(
        message=message,
        requested_schema={"type": "object", "properties": properties, "required": required or []},
    )


async def answer_form(
    params: mcp_types.ElicitRequestParams, provider: ScriptedProvider
) -> mcp_types.ElicitResult | mcp_types.ErrorData:
    callback = elicitation_callback(provider)
    return await callback(context(), params)


def context(name: str = "tests-server") -> ClientRequestContext:
    """What the callback reads of a client request context: the session's server info."""
    session = SimpleNamespace(server_info=mcp_types.Implementation(name=name, version="1"))
    return cast(ClientRequestContext, SimpleNamespace(session=session, request_id=1))


async def test_every_field_kind_becomes_a_question_and_its_value_fits() -> None:
    params = form(
        {
            "name": {"type": "string", "title": "Your name", "minLength": 2},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "ratio": {"type": "number"},
            "agree": {"type": "boolean", "title": "Agree?"},
            "color": {"type": "string", "enum": ["red", "green"]},
            "size": {"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"]},
            "tier": {
                "type": "string",
                "oneOf": [{"const": "pro", "title": "Pro plan"}, {"const": "free"}],
            },
            "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 2},
        },
        required=["name"],
        message="About you",
    )
    provider = ScriptedProvider(
        {
            "name": "Ada",
            "age": "36",
            "ratio": "0.5",
            "agree": "Yes",
            "color": "green",
            "size": "Medium",
            "tier": "Pro plan",
            "tags": ["c", "a"],
        }
    )
    result = await answer_form(params, provider)
    assert result == mcp_types.ElicitResult(
        action="accept",
        content={
            "name": "Ada",
            "age": 36,
            "ratio": 0.5,
            "agree": True,
            "color": "green",
            "size": "m",
            "tier": "pro",
            "tags": ["c", "a"],
        },
    )
    questions = provider.last_request.questions
    assert questions[0].question == "Your name"
    assert questions[0].detail == "About you\n\n(required; at least 2 characters)"
    assert [o.label for o in questions[3].options] == ["Yes", "No"]
    assert [o.label for o in questions[6].options] == ["Pro plan", "free"]
    assert questions[7].multi_select


async def test_an_answer_that_does_not_fit_is_asked_again() -> None:
    replies: Iterator[dict[str, str | None]] = iter(
        [{"age": "old", "name": None}, {"age": "200", "name": "Al"}, {"age": "40"}]
    )

    def script(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        scripted = next(replies)
        return AskUserQuestionAnswer(
            [AskUserQuestionAnswerItem(q.id, custom=scripted.get(q.id)) for q in request.questions]
        )

    provider = ScriptedProvider(script)
    params = form(
        {"name": {"type": "string"}, "age": {"type": "integer", "maximum": 150}}, required=["name"]
    )
    result = await answer_form(params, provider)
    assert result == mcp_types.ElicitResult(action="accept", content={"name": "Al", "age": 40})
    second = provider.requests[1].questions
    assert [q.id for q in second] == ["name", "age", "interaction.send"]
    assert str(second[0].detail).startswith("Please answer again: this field is required.")
    assert str(second[1].detail).startswith("Please answer again: enter a whole number.")


async def test_unexpressible_schemas_are_refused_with_a_reason() -> None:
    for properties, reason in (
        ({"where": {"type": "object", "properties": {}}}, "field 'where' has type \"object\""),
        (
            {"n": {"type": "array", "items": {"type": "integer"}}},
            "field 'n' is an array without an enum of choices;"
            " interaction asks arrays as multi-selects only",
        ),
        ({"s": {"type": "string", "enum": ["a", "A"]}}, "duplicate option label 'A'"),
        ({"t": {"type": "string", "title": "\x1b[2J"}}, "contains control character U+001B"),
    ):
        provider = ScriptedProvider()
        result = await answer_form(form(properties), provider)
        assert isinstance(result, mcp_types.ErrorData)
        assert result.message.startswith("interaction cannot ask this form: ")
        assert reason in result.message
        assert provider.requests == []


async def test_the_provider_in_context_answers_when_none_is_given() -> None:
    with provide(ScriptedProvider({"color": "red"})):
        result = await elicitation_callback()(
            context(), form({"color": {"type": "string", "enum": ["red"]}})
        )
    assert result == mcp_types.ElicitResult(action="accept", content={"color": "red"})


async def test_no_provider_on_the_client_side_is_an_error_not_a_guess() -> None:
    result = await elicitation_callback()(context(), form({"x": {"type": "string"}}))
    assert isinstance(result, mcp_types.ErrorData)
    assert result.message == "no user-interaction provider is registered (NO_PROVIDER)"


def test_without_the_sdk_the_import_error_names_the_extra() -> None:
    assert (
        import_error_without("mcp", "interaction.mcp")
        == 'interaction.mcp needs the MCP SDK: pip install "interaction-seam[mcp]"'
    )


def test_the_core_does_not_import_the_sdk() -> None:
    code = "import sys, interaction, interaction.tool, interaction.cli; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert asyncio  # the event loop module is what the tests above run on


async def test_a_repeated_bad_answer_is_an_error_after_three_tries_with_one_note() -> None:
    def script(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return AskUserQuestionAnswer(
            [AskUserQuestionAnswerItem(q.id, custom="1_000") for q in request.questions]
        )

    provider = ScriptedProvider(script)
    result = await answer_form(form({"n": {"type": "integer"}}), provider)
    assert isinstance(result, mcp_types.ErrorData)
    assert "after 3 tries" in result.message
    assert len(provider.requests) == 3
    third = str(provider.requests[2].questions[0].detail)
    assert third.count("Please answer again") == 1


async def test_on_a_legacy_connection_a_client_gone_mid_push_is_provider_failed() -> None:
    seen: asyncio.Future[UserInteractionError] = asyncio.get_running_loop().create_future()
    server = MCPServer("asker")

    @server.tool()
    async def go(ctx: Context) -> str:
        try:
            with provide(ElicitationProvider.from_context(ctx)):
                return str(await ask(AskUserQuestionRequest(BATCH_ONE)))
        except UserInteractionError as error:
            seen.set_result(error)
            return "failed"

    blocking = BlockingProvider()
    async with Client(
        server, mode="legacy", elicitation_callback=elicitation_callback(blocking)
    ) as c:
        call = asyncio.create_task(c.call_tool("go", {}))
        await asyncio.wait_for(blocking.started.wait(), 10)
    # The client left with the push pending: its call ends, and the tool's ask fails.
    with pytest.raises(Exception, match="Connection closed"):
        await call
    error = await asyncio.wait_for(seen, 10)
    assert (error.code, error.message) == (
        ErrorCode.PROVIDER_FAILED,
        "the user-interaction provider failed: MCPError: Connection closed",
    )
