"""The client side on its own: what a form becomes, and what content goes back."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any, cast

import mcp.types as mcp_types
import pytest
from mcp.client.context import ClientRequestContext

from interaction import AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionRequest
from interaction.mcp import elicitation_callback
from interaction.testing import ScriptedProvider


def form(
    properties: dict[str, Any], required: list[str] | None = None, **extra: Any
) -> mcp_types.ElicitRequestFormParams:
    schema = {"type": "object", "properties": properties, "required": required or [], **extra}
    return mcp_types.ElicitRequestFormParams(message="Fill in", requested_schema=schema)


async def answer(
    params: mcp_types.ElicitRequestParams, provider: ScriptedProvider
) -> mcp_types.ElicitResult | mcp_types.ErrorData:
    return await elicitation_callback(provider)(cast(ClientRequestContext, None), params)


def replies(*scripted: dict[str, Any]) -> ScriptedProvider:
    """A provider answering the n-th ask with the n-th mapping (text or selected labels)."""
    answers: Iterator[dict[str, Any]] = iter(scripted)

    def script(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        reply = next(answers)
        items = []
        for question in request.questions:
            value = reply.get(question.id)
            if isinstance(value, list):
                items.append(AskUserQuestionAnswerItem(question.id, value))
            else:
                items.append(AskUserQuestionAnswerItem(question.id, custom=value))
        return AskUserQuestionAnswer(items)

    return ScriptedProvider(script)


TAGS = {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}}


async def test_a_skipped_optional_multi_select_omits_its_key_so_the_default_stands() -> None:
    params = form({"tags": {**TAGS, "minItems": 2, "default": ["a"]}, "name": {"type": "string"}})
    result = await answer(params, ScriptedProvider({"name": "x"}))
    assert result == mcp_types.ElicitResult(action="accept", content={"name": "x"})


async def test_min_items_holds_when_something_is_chosen_and_a_required_skip_is_asked_again() -> (
    None
):
    provider = replies({"tags": ["a"]}, {"tags": []}, {"tags": ["a", "c"]})
    result = await answer(form({"tags": {**TAGS, "minItems": 2}}, ["tags"]), provider)
    assert result == mcp_types.ElicitResult(action="accept", content={"tags": ["a", "c"]})
    notes = [str(r.questions[0].detail).split("\n\n")[0] for r in provider.requests[1:]]
    assert notes == [
        "Please answer again: choose at least 2.",
        "Please answer again: this field is required.",
    ]


@pytest.mark.parametrize(
    "spec",
    [
        {
            "type": "string",
            "oneOf": [{"const": "a", "title": "Same"}, {"const": "b", "title": "Same"}],
        },
        {"type": "string", "enum": ["a", "b"], "enumNames": ["Same", "Same"]},
        {
            "type": "array",
            "items": {"anyOf": [{"const": "a", "title": "S"}, {"const": "b", "title": "S"}]},
        },
    ],
)
async def test_exact_duplicate_option_titles_are_refused(spec: dict[str, Any]) -> None:
    provider = ScriptedProvider()
    result = await answer(form({"f": spec}), provider)
    assert isinstance(result, mcp_types.ErrorData)
    assert result.message.startswith(
        "interaction cannot ask this form: field 'f' has two options titled"
    )
    assert provider.requests == []


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (
            {"f": {"type": "string", "pattern": "^a"}},
            "field 'f' uses 'pattern', which interaction cannot check",
        ),
        (
            {"f": {"type": "integer", "multipleOf": 2}},
            "field 'f' uses 'multipleOf', which interaction cannot check",
        ),
        (
            {"f": {"type": "string", "format": "hostname"}},
            "field 'f' has format \"hostname\"; interaction checks email, uri, date, date-time"
            " on strings only",
        ),
        (
            {"f": {"type": "array", "items": {"type": "integer"}}},
            "field 'f' is an array without an enum of choices; interaction asks arrays as"
            " multi-selects only",
        ),
        (
            {"f": {"type": "string", "enum": ["a"], "enumNames": ["A", "B"]}},
            "field 'f' has enumNames that do not name each enum value",
        ),
    ],
)
async def test_keywords_we_cannot_check_are_refused(schema: dict[str, Any], message: str) -> None:
    result = await answer(form(schema), ScriptedProvider())
    assert result == mcp_types.ErrorData(
        code=mcp_types.INVALID_PARAMS, message=f"interaction cannot ask this form: {message}"
    )


async def test_a_top_level_keyword_we_cannot_check_is_refused() -> None:
    result = await answer(
        form({"f": {"type": "string"}}, additionalProperties=False), ScriptedProvider()
    )
    assert isinstance(result, mcp_types.ErrorData)
    assert result.message == (
        "interaction cannot ask this form: the requested schema uses 'additionalProperties',"
        " which interaction cannot check"
    )


async def test_an_integer_enum_is_a_choice_so_the_content_is_one_of_its_values() -> None:
    provider = ScriptedProvider({"n": "2"})
    result = await answer(form({"n": {"type": "integer", "enum": [1, 2, 3]}}), provider)
    assert result == mcp_types.ElicitResult(action="accept", content={"n": 2})
    assert [o.label for o in provider.last_request.questions[0].options] == ["1", "2", "3"]


@pytest.mark.parametrize(
    ("fmt", "bad", "good", "hint"),
    [
        ("email", "not-an-address", "ada@example.com", "an email address such as name@example.com"),
        ("date", "2026-02-30", "2026-02-28", "a date such as 2026-07-28"),
        (
            "date-time",
            "2026-02-28 noon",
            "2026-02-28T12:00:00Z",
            "a date and time such as 2026-07-28T09:30:00Z",
        ),
        (
            "uri",
            "no scheme here",
            "https://example.com/x",
            "a URI such as https://example.com/page",
        ),
    ],
)
async def test_formats_are_checked_before_the_content_is_sent(
    fmt: str, bad: str, good: str, hint: str
) -> None:
    provider = replies({"f": bad}, {"f": good})
    result = await answer(form({"f": {"type": "string", "format": fmt}}), provider)
    assert result == mcp_types.ElicitResult(action="accept", content={"f": good})
    first_detail = str(provider.requests[0].questions[0].detail)
    assert first_detail.endswith(f"({hint})")
    assert str(provider.requests[1].questions[0].detail).startswith(
        f"Please answer again: enter {hint}."
    )


@pytest.mark.parametrize("text", ["1_000", "\uff11\uff12", "inf", "nan", "0x10", "1e400"])
async def test_numbers_parse_strictly(text: str) -> None:
    provider = replies({"n": text}, {"n": text}, {"n": "1e3"})
    result = await answer(form({"n": {"type": "number"}}), provider)
    assert result == mcp_types.ElicitResult(action="accept", content={"n": 1000.0})


async def test_defaults_are_shown_as_json_not_python() -> None:
    provider = ScriptedProvider({})
    params = form(
        {
            "ok": {"type": "boolean", "default": True},
            "name": {"type": "string", "default": "it's"},
            "none": {"type": "string", "description": "Say.", "default": None},
        }
    )
    assert await answer(params, provider) == mcp_types.ElicitResult(action="accept", content={})
    details = [q.detail for q in provider.last_request.questions]
    assert details == [
        "Fill in\n\n(default: true)",
        '(default: "it\'s")',
        "Say.\n\n(default: null)",
    ]


async def test_a_decline_never_comes_from_us_a_dismissal_is_cancel() -> None:
    from interaction import ErrorCode, UserInteractionError

    for code in (ErrorCode.ASK_CANCELLED, ErrorCode.ASK_TIMEOUT, ErrorCode.ASK_ABORTED):
        result = await answer(
            form({"f": {"type": "string"}}), ScriptedProvider(UserInteractionError("x", code))
        )
        assert result == mcp_types.ElicitResult(action="cancel")
    failed = await answer(
        form({"f": {"type": "string"}}),
        ScriptedProvider(UserInteractionError("boom", ErrorCode.BAD_ANSWER)),
    )
    assert failed == mcp_types.ErrorData(code=mcp_types.INTERNAL_ERROR, message="boom (BAD_ANSWER)")


async def test_typed_text_naming_an_option_selects_it_by_the_one_answer_rule() -> None:
    params = form(
        {
            "color": {"type": "string", "enum": ["red", "green"]},
            "tags": TAGS,
            "ok": {"type": "boolean"},
        }
    )

    def script(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return AskUserQuestionAnswer(
            [
                AskUserQuestionAnswerItem("color", custom=" RED "),
                AskUserQuestionAnswerItem("tags", ["a"], custom="c"),
                AskUserQuestionAnswerItem("ok", custom="no"),
            ]
        )

    result = await answer(params, ScriptedProvider(script))
    assert result == mcp_types.ElicitResult(
        action="accept", content={"color": "red", "tags": ["a", "c"], "ok": False}
    )


def first_note(request: AskUserQuestionRequest) -> str:
    return str(request.questions[0].detail).split("\n\n")[0]


async def test_an_integer_longer_than_python_converts_is_asked_again_never_an_error() -> None:
    limit = sys.get_int_max_str_digits()
    if limit == 0:  # pragma: no cover - only when the interpreter's limit is lifted
        pytest.skip("this interpreter converts integers of any length")
    provider = replies({"n": "9" * (limit + 1)}, {"n": "9" * limit})
    result = await answer(form({"n": {"type": "integer"}}, ["n"]), provider)
    # At the limit the whole number is kept exactly, however far beyond a float's range.
    assert result == mcp_types.ElicitResult(action="accept", content={"n": int("9" * limit)})
    assert first_note(provider.requests[1]) == "Please answer again: enter a smaller number."


@pytest.mark.parametrize("text", ["1" * 5000, "1e400", "-1e400"])
async def test_a_number_beyond_a_floats_range_is_asked_again_saying_so(text: str) -> None:
    provider = replies({"n": text}, {"n": text}, {"n": text})
    result = await answer(form({"n": {"type": "number"}}), provider)
    assert result == mcp_types.ErrorData(
        code=mcp_types.INVALID_PARAMS,
        message="interaction could not fill this form: no valid answer after 3 tries"
        " (n: enter a smaller number)",
    )
    assert [first_note(r) for r in provider.requests[1:]] == [
        "Please answer again: enter a smaller number."
    ] * 2


async def test_a_huge_integer_is_compared_with_its_bounds_exactly() -> None:
    provider = replies({"n": "9" * 400}, {"n": "7"})
    result = await answer(form({"n": {"type": "integer", "maximum": 10}}), provider)
    assert result == mcp_types.ElicitResult(action="accept", content={"n": 7})
    assert first_note(provider.requests[1]) == "Please answer again: enter a number at most 10."


@pytest.mark.parametrize(
    ("properties", "required", "message"),
    [
        pytest.param(
            {"a": {"type": "string"}},
            ["zzz", "a", "yyy"],
            "the requested schema requires 'zzz', 'yyy', which its properties do not define",
            id="required-undefined",
        ),
        pytest.param(
            {"f": {"type": "integer", "oneOf": [{"const": "a", "title": "A"}]}},
            [],
            "field 'f' has titled choices on type \"integer\"; interaction asks them on"
            " strings only",
            id="string-consts-on-an-integer",
        ),
        pytest.param(
            {
                "f": {
                    "type": "string",
                    "oneOf": [{"const": "a", "title": "A"}, {"const": "a", "title": "B"}],
                }
            },
            [],
            "field 'f' offers the value \"a\" twice",
            id="repeated-const",
        ),
        pytest.param(
            {"f": {"type": "number", "enum": [1, 1.0], "enumNames": ["one", "one again"]}},
            [],
            "field 'f' offers the value 1.0 twice",
            id="one-and-one-point-zero",
        ),
        pytest.param(
            {
                "f": {
                    "type": "array",
                    "uniqueItems": True,
                    "items": {
                        "anyOf": [{"const": "a", "title": "A"}, {"const": "a", "title": "B"}]
                    },
                }
            },
            [],
            "field 'f' offers the value \"a\" twice",
            id="repeated-item",
        ),
        pytest.param(
            {"f": {"type": "string", "enum": ["a", "bbb"], "minLength": 2}},
            [],
            "field 'f' offers \"a\", which its own minLength refuses",
            id="option-too-short",
        ),
        pytest.param(
            {"f": {"type": "integer", "enum": [1, 20], "maximum": 10}},
            [],
            "field 'f' offers 20, which its own maximum refuses",
            id="option-too-large",
        ),
        pytest.param(
            {"f": {"type": "string", "enum": ["a@b.co", "nope"], "format": "email"}},
            [],
            "field 'f' offers \"nope\", which its own format refuses",
            id="option-not-an-email",
        ),
        pytest.param(
            {"f": {"type": "string", "enum": ["x"], "oneOf": [{"const": "y"}]}},
            [],
            "field 'f' has more than one of enum, oneOf and anyOf",
            id="enum-and-oneOf",
        ),
        pytest.param(
            {"f": {"type": "boolean", "enum": [True]}},
            [],
            "field 'f' has choices on type \"boolean\"; interaction asks them on strings and"
            " numbers (and on an array's items) only",
            id="boolean-enum",
        ),
        pytest.param(
            {"f": {"type": "array", "enum": [["a"]], "items": {"enum": ["a", "b"]}}},
            [],
            "field 'f' has choices on type \"array\"; interaction asks them on strings and"
            " numbers (and on an array's items) only",
            id="array-enum",
        ),
    ],
)
async def test_a_form_no_answer_could_satisfy_is_refused_before_anyone_is_asked(
    properties: dict[str, Any], required: list[str], message: str
) -> None:
    provider = ScriptedProvider({"a": "x", "f": "a"})
    result = await answer(form(properties, required), provider)
    assert result == mcp_types.ErrorData(
        code=mcp_types.INVALID_PARAMS, message=f"interaction cannot ask this form: {message}"
    )
    assert provider.requests == []
