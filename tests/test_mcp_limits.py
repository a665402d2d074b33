"""Every remote entry of the bridge has a size limit, tested at the limit and one past it;
a refusal quotes at most a bounded prefix of what it refuses."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

import mcp.types as mcp_types
import pytest
from mcp.client import Client
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError

from interaction import (
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    check_answer,
)
from interaction.mcp import (
    InputRequiredBridge,
    InteractiveMCPServer,
    _limits,
    _suspend,
    form_to_answer,
    request_to_form,
)
from interaction.mcp._client import answer_form
from interaction.mcp._limits import (
    MAX_ARGUMENTS_BYTES,
    MAX_CONTENT_BYTES,
    MAX_FIELDS,
    MAX_MESSAGE,
    MAX_OPTIONS,
    MAX_SCHEMA_BYTES,
    MAX_STATE,
    MAX_TEXT,
    QUOTE,
)
from interaction.mcp._suspend import arguments_digest
from interaction.testing import ScriptedProvider

TEXT = AskUserQuestionRequest([AskUserQuestionItem("name", "Name?")])
CHOICE = AskUserQuestionRequest(
    [
        AskUserQuestionItem(
            "pick",
            "Pick?",
            options=[AskUserQuestionOption("red"), AskUserQuestionOption("green")],
        )
    ]
)
MULTI = AskUserQuestionRequest(
    [
        AskUserQuestionItem(
            "tags",
            "Tags?",
            options=[AskUserQuestionOption("a"), AskUserQuestionOption("b")],
            multi_select=True,
        )
    ]
)


def refused(request: AskUserQuestionRequest, content: Mapping[str, object]) -> UserInteractionError:
    _, _, fields = request_to_form(request)
    with pytest.raises(UserInteractionError) as error:
        check_answer(request, form_to_answer(fields, content))
    assert error.value.code == ErrorCode.BAD_ANSWER
    return error.value


def answered(request: AskUserQuestionRequest, content: Mapping[str, object]) -> object:
    _, _, fields = request_to_form(request)
    return form_to_answer(fields, content).answers[0]


# ----------------------------------------------------------- answers our server reads


def test_our_forms_carry_max_length_and_max_items() -> None:
    _, text, _ = request_to_form(TEXT)
    _, choice, _ = request_to_form(CHOICE)
    _, multi, _ = request_to_form(MULTI)
    properties = [cast(dict[str, Any], s["properties"]) for s in (text, choice, multi)]
    assert properties[0]["name"]["maxLength"] == MAX_TEXT
    assert properties[1]["pick__other"]["maxLength"] == MAX_TEXT
    assert properties[2]["tags"]["maxItems"] == 2
    assert properties[2]["tags__other"]["maxLength"] == MAX_TEXT


def test_a_text_answer_at_the_limit_is_read_and_one_past_it_is_refused() -> None:
    assert cast(Any, answered(TEXT, {"name": "x" * MAX_TEXT})).custom == "x" * MAX_TEXT
    assert refused(TEXT, {"name": "x" * (MAX_TEXT + 1)}).message == (
        "elicitation: content.name: the text is 10001 characters long; at most 10000 are read"
    )
    other = {"pick__other": "y" * (MAX_TEXT + 1)}
    assert cast(Any, answered(CHOICE, {"pick__other": "y" * MAX_TEXT})).custom == "y" * MAX_TEXT
    assert refused(CHOICE, other).message == (
        "elicitation: content.pick__other: the text is 10001 characters long;"
        " at most 10000 are read"
    )


def test_content_at_the_byte_limit_is_read_and_one_byte_more_is_refused() -> None:
    many = AskUserQuestionRequest([AskUserQuestionItem(f"q{n}", f"Q{n}?") for n in range(27)])
    content: dict[str, object] = {f"q{n}": "z" * 9800 for n in range(27)}
    size = len(json.dumps(content, separators=(",", ":")))
    content["q26"] = "z" * (9800 - (size - MAX_CONTENT_BYTES))
    assert len(json.dumps(content, separators=(",", ":"))) == MAX_CONTENT_BYTES
    _, _, fields = request_to_form(many)
    assert len(form_to_answer(fields, content).answers) == 27
    content["q26"] = cast(str, content["q26"]) + "z"
    assert refused(many, content).message == (
        f"elicitation: content: the content is {MAX_CONTENT_BYTES + 1} bytes long;"
        f" at most {MAX_CONTENT_BYTES} are read"
    )


def test_a_multi_select_of_as_many_labels_as_options_is_read_and_one_more_is_refused() -> None:
    assert cast(Any, answered(MULTI, {"tags": ["a", "b"]})).selected == ("a", "b")
    assert refused(MULTI, {"tags": ["a", "b", "a"]}).message == (
        "elicitation: content.tags: expected at most 2 option labels, got 3"
    )


def test_a_huge_label_is_refused_quoting_a_bounded_prefix() -> None:
    # Up to QUOTE characters (longer than any option here): the seam's own refusal.
    assert refused(CHOICE, {"pick": "x" * QUOTE}).message == (
        f"answers[0].selected[0]: question pick offers no option {'x' * QUOTE!r}"
    )
    assert refused(CHOICE, {"pick": "x" * (QUOTE + 1)}).message == (
        f"elicitation: content.pick: the form offers no option {'x' * QUOTE!r}…"
        f" ({QUOTE + 1} characters)"
    )
    huge = refused(CHOICE, {"pick": "x" * 100_000})
    assert huge.message == (
        f"elicitation: content.pick: the form offers no option {'x' * QUOTE!r}… (100000 characters)"
    )
    assert len(huge.message) < 200


def test_a_huge_unknown_field_name_is_quoted_cut() -> None:
    error = refused(TEXT, {"k" * 10_000: "v"})
    assert error.message == f"elicitation: content.{'k' * QUOTE}…: the form has no such field"


@pytest.mark.parametrize(
    ("request_", "content", "message"),
    [
        (TEXT, {"name": None}, "content.name: expected a string, got null"),
        (CHOICE, {"pick": None}, "content.pick: expected an option label, got null"),
        (MULTI, {"tags": None}, "content.tags: expected an array of option labels"),
    ],
)
def test_null_is_not_a_skip(
    request_: AskUserQuestionRequest, content: dict[str, object], message: str
) -> None:
    assert refused(request_, content).message == f"elicitation: {message}"


def a_call(state: str) -> _suspend.Call:
    return _suspend.Call(cast(ServerSession, None), "2026-07-28", state, None, "t", dict)


async def test_a_request_state_at_the_limit_is_opened_and_one_past_it_is_refused() -> None:
    bridge = InputRequiredBridge()
    with pytest.raises(UserInteractionError) as forged:
        await bridge.open(a_call("a" * MAX_STATE))
    assert forged.value.message == _suspend.BAD_STATE  # read, then found not ours
    with pytest.raises(UserInteractionError) as long:
        await bridge.open(a_call("a" * (MAX_STATE + 1)))
    assert long.value.message == (
        f"the request state is {MAX_STATE + 1} characters long; at most {MAX_STATE} are read"
    )


async def test_tool_arguments_at_the_limit_are_read_and_one_byte_more_is_refused() -> None:
    def sized(n: int) -> dict[str, str]:
        return {"a": "x" * (n - len('{"a":""}'))}

    assert len(json.dumps(sized(MAX_ARGUMENTS_BYTES), separators=(",", ":"))) == (
        MAX_ARGUMENTS_BYTES
    )
    assert len(arguments_digest(sized(MAX_ARGUMENTS_BYTES))) == 64
    with pytest.raises(UserInteractionError) as refused:
        arguments_digest(sized(MAX_ARGUMENTS_BYTES + 1))
    assert (refused.value.code, refused.value.path, refused.value.message) == (
        ErrorCode.BAD_REQUEST,
        "arguments",
        f"the tool's arguments are {MAX_ARGUMENTS_BYTES + 1} bytes long as JSON;"
        f" at most {MAX_ARGUMENTS_BYTES} are read",
    )


async def test_a_2026_07_28_call_with_arguments_past_the_limit_is_refused_before_it_runs() -> None:
    server = InteractiveMCPServer("big")
    runs: list[int] = []

    @server.tool()
    async def take(blob: str) -> str:
        runs.append(len(blob))
        return "ran"

    async with Client(server) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("take", {"blob": "x" * MAX_ARGUMENTS_BYTES})
        assert (await client.call_tool("take", {"blob": "x"})).content[0] == (
            mcp_types.TextContent(type="text", text="ran")
        )
    async with Client(server, mode="legacy") as client:  # legacy never reads them
        await client.call_tool("take", {"blob": "x" * MAX_ARGUMENTS_BYTES})
    assert refused.value.error.data == {"code": "BAD_REQUEST"}
    assert runs == [1, MAX_ARGUMENTS_BYTES]


# ------------------------------------------------------------ forms our client asks


def form(properties: dict[str, Any], message: str = "Fill it") -> mcp_types.ElicitRequestFormParams:
    return mcp_types.ElicitRequestFormParams(
        message=message, requested_schema={"type": "object", "properties": properties}
    )


async def fill(params: mcp_types.ElicitRequestFormParams) -> str:
    """``accept`` (everything skipped) or the refusal's message."""
    result = await answer_form(params, ScriptedProvider())
    if isinstance(result, mcp_types.ErrorData):
        return result.message
    assert result.action == "accept"
    return "accept"


CANNOT = "interaction cannot ask this form: "


async def test_a_message_at_the_limit_is_asked_and_one_past_it_is_refused() -> None:
    text = {"t": {"type": "string"}}
    assert await fill(form(text, "m" * MAX_MESSAGE)) == "accept"
    assert await fill(form(text, "m" * (MAX_MESSAGE + 1))) == (
        CANNOT + "the message is 10001 characters long; interaction shows at most 10000"
    )


async def test_fields_up_to_the_limit_are_asked_and_one_more_is_refused() -> None:
    def fields(n: int) -> dict[str, Any]:
        return {f"f{i}": {"type": "string"} for i in range(n)}

    assert await fill(form(fields(MAX_FIELDS))) == "accept"
    assert await fill(form(fields(MAX_FIELDS + 1))) == (
        CANNOT + f"the requested schema has {MAX_FIELDS + 1} fields; interaction asks at most"
        f" {MAX_FIELDS}"
    )


@pytest.mark.parametrize("keyword", ["enum", "oneOf"])
async def test_choices_up_to_the_limit_are_asked_and_one_more_is_refused(keyword: str) -> None:
    def field(n: int) -> dict[str, Any]:
        values = [f"v{i}" for i in range(n)]
        if keyword == "enum":
            return {"c": {"type": "string", "enum": values}}
        return {"c": {"type": "string", "oneOf": [{"const": v, "title": v} for v in values]}}

    assert await fill(form(field(MAX_OPTIONS))) == "accept"
    assert await fill(form(field(MAX_OPTIONS + 1))) == (
        CANNOT + f"field 'c' offers {MAX_OPTIONS + 1} choices; interaction asks at most"
        f" {MAX_OPTIONS}"
    )


async def test_a_million_value_enum_is_refused_in_a_short_message() -> None:
    values = [str(n) for n in range(10**6)]
    message = await fill(form({"c": {"type": "string", "enum": values}}))
    assert message.startswith(CANNOT + "the requested schema is ")
    assert len(message) < 200


@pytest.mark.parametrize("where", ["title", "description", "label"])
async def test_texts_at_the_limit_are_shown_and_one_past_it_is_refused(where: str) -> None:
    def field(n: int) -> dict[str, Any]:
        if where == "label":
            return {"c": {"type": "string", "enum": ["x" * n, "y"]}}
        return {"c": {"type": "string", where: "x" * n}}

    assert await fill(form(field(MAX_TEXT))) == "accept"
    name = "an option of field 'c'" if where == "label" else f"the {where} of field 'c'"
    assert await fill(form(field(MAX_TEXT + 1))) == (
        CANNOT + f"{name} is 10001 characters long; interaction shows at most 10000"
    )


async def test_a_schema_at_the_byte_limit_is_asked_and_one_byte_more_is_refused() -> None:
    per = MAX_TEXT - 100
    properties = {f"f{i:02}": {"type": "string", "description": "d" * per} for i in range(27)}
    params = form(properties)
    size = len(json.dumps(params.requested_schema, separators=(",", ":")))
    properties["f26"]["description"] = "d" * (per - (size - MAX_SCHEMA_BYTES))
    assert len(json.dumps(form(properties).requested_schema, separators=(",", ":"))) == (
        MAX_SCHEMA_BYTES
    )
    assert await fill(form(properties)) == "accept"
    properties["f26"]["description"] += "d"
    assert await fill(form(properties)) == (
        CANNOT + f"the requested schema is {MAX_SCHEMA_BYTES + 1} bytes long; interaction asks"
        f" at most {MAX_SCHEMA_BYTES}"
    )


def test_quote_cuts_to_the_bound_and_says_how_long_the_text_was() -> None:
    assert _limits.quote("short") == "'short'"
    assert _limits.quote("q" * QUOTE) == repr("q" * QUOTE)
    assert _limits.quote("q" * (QUOTE + 1)) == f"{'q' * QUOTE!r}… ({QUOTE + 1} characters)"


def test_content_that_is_not_json_is_judged_by_its_fields_not_its_size() -> None:
    """``form_to_answer`` is public: a direct caller may pass values JSON cannot hold."""
    error = refused(TEXT, {"name": {1, 2}})
    assert error.message == "elicitation: content.name: expected a string, got set"
