"""The client side on its own: what a form becomes, and what content goes back."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any, cast

import mcp.types as mcp_types
import pytest
from mcp.client.context import ClientRequestContext

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
)
from interaction.mcp import elicitation_callback, request_to_form
from interaction.testing import ScriptedProvider


def form(
    properties: dict[str, Any], required: list[str] | None = None, **extra: Any
) -> mcp_types.ElicitRequestFormParams:
    schema = {"type": "object", "properties": properties, "required": required or [], **extra}
    return mcp_types.ElicitRequestFormParams(message="Fill in", requested_schema=schema)


def context(name: str = "tests-server") -> ClientRequestContext:
    """What the callback reads of a client request context: the session's server info."""
    session = SimpleNamespace(server_info=mcp_types.Implementation(name=name, version="1"))
    return cast(ClientRequestContext, SimpleNamespace(session=session, request_id=1))


async def answer(
    params: mcp_types.ElicitRequestParams, provider: ScriptedProvider
) -> mcp_types.ElicitResult | mcp_types.ErrorData:
    return await elicitation_callback(provider)(context(), params)


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


async def test_a_skipped_optional_multi_select_omits_its_key() -> None:
    params = form({"tags": {**TAGS, "minItems": 2}, "name": {"type": "string"}})
    result = await answer(params, ScriptedProvider({"name": "x"}))
    assert result == mcp_types.ElicitResult(action="accept", content={"name": "x"})


async def test_a_default_its_own_schema_refuses_is_neither_shown_nor_sent() -> None:
    provider = ScriptedProvider({"name": "x"})
    params = form({"tags": {**TAGS, "minItems": 2, "default": ["a"]}, "name": {"type": "string"}})
    result = await answer(params, provider)
    assert result == mcp_types.ElicitResult(action="accept", content={"name": "x"})
    assert "default" not in str(provider.last_request.questions[0].detail)


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


async def test_defaults_are_pre_filled_shown_as_json_and_sent_when_skipped() -> None:
    provider = ScriptedProvider({"n": "3"})
    params = form(
        {
            "ok": {"type": "boolean", "default": True},
            "name": {"type": "string", "default": "it's"},
            "none": {"type": "string", "description": "Say.", "default": None},
            "tags": {**TAGS, "default": ["a", "c"]},
            "color": {"type": "string", "enum": ["red", "green"], "default": "green"},
            "n": {"type": "integer", "maximum": 5, "default": 4},
        },
        ["name"],
    )
    assert await answer(params, provider) == mcp_types.ElicitResult(
        action="accept",
        content={"ok": True, "name": "it's", "tags": ["a", "c"], "color": "green", "n": 3},
    )
    details = [q.detail for q in provider.last_request.questions[:-1]]
    assert details == [
        "Fill in\n\n(default: true; leave it empty to keep it)",
        '(required)\n\n(default: "it\'s"; leave it empty to keep it)',
        "Say.",
        '(default: ["a", "c"]; leave it empty to keep it)',
        '(default: "green"; leave it empty to keep it)',
        "(at most 5)\n\n(default: 4; leave it empty to keep it)",
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
                AskUserQuestionAnswerItem("interaction.send", custom="send"),
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


# ------------------------------------------------- decline, review, server name, URL mode


async def test_every_form_ends_with_send_or_decline_naming_the_server() -> None:
    provider = ScriptedProvider({"name": "x"})
    result = await answer(form({"name": {"type": "string"}}), provider)
    assert result == mcp_types.ElicitResult(action="accept", content={"name": "x"})
    decision = provider.last_request.questions[-1]
    assert decision.question == "Send these answers to tests-server?"
    assert [o.label for o in decision.options] == ["Send", "Decline"]


async def test_decline_is_sent_as_decline_and_a_dismissal_as_cancel() -> None:
    declined = await answer(
        form({"name": {"type": "string"}}),
        ScriptedProvider({"name": "x", "interaction.send": "Decline"}),
    )
    assert declined == mcp_types.ElicitResult(action="decline")
    dismissed = await answer(
        form({"name": {"type": "string"}}),
        ScriptedProvider(UserInteractionError("gone", ErrorCode.ASK_CANCELLED)),
    )
    assert dismissed == mcp_types.ElicitResult(action="cancel")


async def test_a_field_named_like_the_decision_moves_the_decision_aside() -> None:
    provider = ScriptedProvider({"interaction.send": "mine"})
    result = await answer(form({"interaction.send": {"type": "string"}}), provider)
    assert result == mcp_types.ElicitResult(action="accept", content={"interaction.send": "mine"})
    assert [q.id for q in provider.last_request.questions] == [
        "interaction.send",
        "interaction.send_",
    ]


async def test_a_hostile_server_name_is_shown_escaped_and_cut() -> None:
    provider = ScriptedProvider()
    name = "\x1b[31mevil\x1b[0m" + "n" * 200
    await elicitation_callback(provider)(context(name), form({"t": {"type": "string"}}))
    question = provider.last_request.questions[-1].question
    assert question.startswith("Send these answers to \\x1b[31mevil\\x1b[0mnnn")
    assert question.endswith("…?")
    assert "\x1b" not in question


URL = mcp_types.ElicitRequestURLParams(
    message="Log in to continue", url="https://login.example.com/auth?x=1", elicitation_id="e1"
)


async def url_answer(
    script: dict[str, Any], params: mcp_types.ElicitRequestURLParams = URL
) -> tuple[mcp_types.ElicitResult | mcp_types.ErrorData, list[str], ScriptedProvider]:
    opened: list[str] = []
    provider = ScriptedProvider(script)
    callback = elicitation_callback(provider, open_url=opened.append)
    return await callback(context(), params), opened, provider


async def test_a_url_is_shown_with_the_server_and_domain_and_opened_only_on_consent() -> None:
    result, opened, provider = await url_answer({"interaction.open": "Open the link"})
    assert result == mcp_types.ElicitResult(action="accept")
    assert opened == ["https://login.example.com/auth?x=1"]
    item = provider.last_request.questions[0]
    assert item.question == "tests-server asks you to open a link on login.example.com"
    assert item.header == "login.example.com"
    assert item.detail == (
        "Log in to continue\n\nDomain: login.example.com\nLink: https://login.example.com/auth?x=1"
    )
    declined, opened, _ = await url_answer({"interaction.open": "Decline"})
    assert (declined, opened) == (mcp_types.ElicitResult(action="decline"), [])
    skipped, opened, _ = await url_answer({})
    assert (skipped, opened) == (mcp_types.ElicitResult(action="cancel"), [])


async def test_a_look_alike_domain_is_shown_as_punycode() -> None:
    params = URL.model_copy(update={"url": "https://p\u0430ypal.com/login"})  # a Cyrillic a
    _, _, provider = await url_answer({}, params)
    assert provider.last_request.questions[0].header == "xn--pypal-4ve.com"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        (
            "javascript:alert(1)",
            "interaction opens https and http links only, not 'javascript:alert(1)'",
        ),
        (
            "file:///etc/passwd",
            "interaction opens https and http links only, not 'file:///etc/passwd'",
        ),
        (
            "https://" + "a" * 2100,
            "the URL is 2108 characters long; interaction opens at most 2048",
        ),
    ],
)
async def test_a_url_interaction_will_not_open_is_refused_before_anyone_is_asked(
    url: str, reason: str
) -> None:
    result, opened, provider = await url_answer({}, URL.model_copy(update={"url": url}))
    assert result == mcp_types.ErrorData(
        code=mcp_types.INVALID_PARAMS, message=f"interaction cannot ask this link: {reason}"
    )
    assert (opened, provider.requests) == ([], [])


# ------------------------------------------------------------------ bridge to bridge


OUR_CHOICE = cast(
    dict[str, Any],
    request_to_form(
        AskUserQuestionRequest(
            [
                AskUserQuestionItem("pkg", "Tool?", options=[AskUserQuestionOption("pnpm")]),
                AskUserQuestionItem(
                    "tags",
                    "Tags?",
                    options=[AskUserQuestionOption("a"), AskUserQuestionOption("b")],
                    multi_select=True,
                ),
            ]
        )
    )[1]["properties"],
)


async def test_our_servers_other_fields_fold_into_their_choices() -> None:
    provider = ScriptedProvider({"pkg": "bun", "tags": ["a", "zig"]})
    result = await answer(form(OUR_CHOICE), provider)
    assert result == mcp_types.ElicitResult(
        action="accept", content={"pkg__other": "bun", "tags__other": "zig", "tags": ["a"]}
    )
    assert [q.id for q in provider.last_request.questions] == ["pkg", "tags", "interaction.send"]
    chosen = await answer(form(OUR_CHOICE), ScriptedProvider({"pkg": "pnpm"}))
    assert chosen == mcp_types.ElicitResult(action="accept", content={"pkg": "pnpm"})


async def test_an_other_field_that_is_not_ours_stays_a_question_of_its_own() -> None:
    assert OUR_CHOICE["pkg__other"]["title"] == "Other… — Tool?"
    theirs = {**OUR_CHOICE, "pkg__other": {"type": "string", "title": "Something else"}}
    provider = ScriptedProvider()
    await answer(form(theirs), provider)
    assert [q.id for q in provider.last_request.questions] == [
        "pkg",
        "pkg__other",
        "tags",
        "interaction.send",
    ]


async def test_every_request_says_which_server_asks_in_its_provenance() -> None:
    provider = ScriptedProvider()
    before = datetime.now(UTC)
    await answer(form({"t": {"type": "string"}}), provider)
    await elicitation_callback(provider, open_url=list[str]().append)(context(), URL)
    for request in provider.requests:
        provenance = request.provenance
        assert provenance is not None
        assert provenance.source == "tests-server"
        assert provenance.asked_at is not None
        assert provenance.asked_at >= before.replace(microsecond=0)
    nameless = cast(
        ClientRequestContext,
        SimpleNamespace(session=SimpleNamespace(server_info=None), request_id=1),
    )
    await elicitation_callback(provider)(nameless, form({"t": {"type": "string"}}))
    assert provider.last_request.provenance is None
    assert provider.last_request.questions[-1].question == "Send these answers to the MCP server?"


async def test_a_url_that_cannot_be_parsed_or_opened_is_an_error_saying_so() -> None:
    broken, _, _ = await url_answer({}, URL.model_copy(update={"url": "https://[::1/x"}))
    assert broken == mcp_types.ErrorData(
        code=mcp_types.INVALID_PARAMS,
        message="interaction cannot ask this link: the URL 'https://[::1/x' is not a valid URL",
    )
    bad_host, _, _ = await url_answer({}, URL.model_copy(update={"url": "https://a..b/x"}))
    assert bad_host == mcp_types.ErrorData(
        code=mcp_types.INVALID_PARAMS,
        message="interaction cannot ask this link: the URL's host 'a..b' is not a valid domain"
        " name",
    )

    def fails(url: str) -> None:
        raise OSError("no browser")

    callback = elicitation_callback(
        ScriptedProvider({"interaction.open": "Open the link"}), open_url=fails
    )
    assert await callback(context(), URL) == mcp_types.ErrorData(
        code=mcp_types.INTERNAL_ERROR, message="interaction could not open the link: OSError"
    )
