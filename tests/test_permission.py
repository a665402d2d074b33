"""The permission intent: its checks, its wire form and digest, and how every UI presents it."""

from __future__ import annotations

import dataclasses
import io
import json
from typing import Any

import jsonschema
import pytest

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    PermissionIntent,
    UnknownIntent,
    UserInteractionError,
    ask,
    check_request,
    provide,
    request_digest,
    wire,
)
from interaction.console import ConsoleProvider
from interaction.display import PermissionView, present
from interaction.flow import BatchFlow
from interaction.relay import PendingQuestion
from interaction.terminal._text import plain
from interaction.terminal._view import Viewport, paint
from interaction.web._json import question_json

Option = AskUserQuestionOption


def as_json(value: object) -> Any:
    """A JSON document as plain, freely indexable data."""
    return json.loads(json.dumps(value))


INTENT = PermissionIntent("Bash", "npm test", "Allow", "Deny", "Always allow")


def permission_question(
    intent: PermissionIntent = INTENT,
    *,
    detail: str | None = "npm test --watch=false",
    multi_select: bool = False,
    options: tuple[str, ...] = ("Allow", "Always allow", "Deny"),
) -> AskUserQuestionItem:
    return AskUserQuestionItem(
        "perm",
        "Allow Bash to run this command?",
        detail=detail,
        options=[Option(label) for label in options],
        multi_select=multi_select,
        intent=intent,
    )


def refusal(item: AskUserQuestionItem) -> UserInteractionError:
    with pytest.raises(UserInteractionError) as caught:
        check_request(AskUserQuestionRequest([item]))
    return caught.value


# ---------------------------------------------------------------------- checks


def test_a_well_formed_permission_question_passes_the_checks() -> None:
    request = AskUserQuestionRequest([permission_question()])
    assert check_request(request) is request
    without_always = PermissionIntent("Read", "/etc/hosts", "Allow", "Deny")
    check_request(AskUserQuestionRequest([permission_question(without_always)]))


@pytest.mark.parametrize(
    ("intent", "options", "message"),
    [
        (
            PermissionIntent("Bash", "ls", "Yes", "Deny"),
            ("Allow", "Deny"),
            'question perm declares intent permission whose allow label "Yes" names none of'
            " its options",
        ),
        (
            PermissionIntent("Bash", "ls", "Allow", "No"),
            ("Allow", "Deny"),
            'question perm declares intent permission whose deny label "No" names none of'
            " its options",
        ),
        (
            PermissionIntent("Bash", "ls", "Allow", "Deny", "Always"),
            ("Allow", "Deny"),
            'question perm declares intent permission whose allow_always label "Always" names'
            " none of its options",
        ),
        (
            PermissionIntent("Bash", "ls", "Allow", "Allow"),
            ("Allow", "Deny"),
            "question perm declares intent permission whose allow and deny labels both"
            ' name "Allow"',
        ),
        (
            PermissionIntent("Bash", "ls", "Allow", "Deny", "Allow"),
            ("Allow", "Deny"),
            "question perm declares intent permission whose allow and allow_always labels both"
            ' name "Allow"',
        ),
        (  # labels are compared exactly, as plan-review's approve is
            PermissionIntent("Bash", "ls", "allow", "Deny"),
            ("Allow", "Deny"),
            'question perm declares intent permission whose allow label "allow" names none of'
            " its options",
        ),
    ],
)
def test_each_role_must_name_its_own_option(
    intent: PermissionIntent, options: tuple[str, ...], message: str
) -> None:
    error = refusal(permission_question(intent, options=options))
    assert (error.code, error.message) == (ErrorCode.BAD_INTENT, message)


def test_a_permission_needs_a_detail_and_a_single_choice() -> None:
    error = refusal(permission_question(detail=None))
    assert (error.code, error.message) == (
        ErrorCode.BAD_INTENT,
        "question perm declares intent permission without the detail an intent requires",
    )
    error = refusal(permission_question(multi_select=True))
    assert (error.code, error.message) == (
        ErrorCode.BAD_INTENT,
        "question perm declares intent permission on a multi-select question",
    )


@pytest.mark.parametrize(
    ("intent", "message"),
    [
        (
            PermissionIntent(" ", "ls", "Allow", "Deny"),
            "questions[0].intent.tool: must not be empty",
        ),
        (
            PermissionIntent("Bash", "rm -rf /\nls", "Allow", "Deny"),
            "questions[0].intent.summary: contains control character U+000A",
        ),
        (
            PermissionIntent("Bash", "ls", "Allow", "Deny", 3),  # type: ignore[arg-type]
            "questions[0].intent.allow_always: expected a string, got int",
        ),
        (
            PermissionIntent("Bash\u202e", "ls", "Allow", "Deny"),
            "questions[0].intent.tool: contains bidirectional override character U+202E",
        ),
        (
            PermissionIntent("Bash", "ls", None, "Deny"),  # type: ignore[arg-type]
            "questions[0].intent.allow: expected a string, got None",
        ),
    ],
)
def test_the_intents_texts_are_structural_faults(intent: PermissionIntent, message: str) -> None:
    error = refusal(permission_question(intent))
    assert (error.code, error.message) == (ErrorCode.BAD_REQUEST, message)


def test_the_kind_permission_is_not_an_unknown_intent() -> None:
    with pytest.raises(UserInteractionError) as caught:
        UnknownIntent("permission", {"tool": "Bash"})
    assert caught.value.code == ErrorCode.BAD_INTENT
    assert caught.value.message == "intent.kind: permission is PermissionIntent's kind"


def test_it_is_a_standard_frozen_slotted_dataclass() -> None:
    assert dataclasses.is_dataclass(PermissionIntent)
    assert not hasattr(INTENT, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        INTENT.tool = "Read"  # type: ignore[misc]
    assert INTENT.kind == "permission"
    assert dataclasses.replace(INTENT, summary="ls") == PermissionIntent(
        "Bash", "ls", "Allow", "Deny", "Always allow"
    )


# ---------------------------------------------------------------------- wire and digest


def test_the_wire_carries_every_field_both_ways_and_the_schema_names_them() -> None:
    request = AskUserQuestionRequest([permission_question()])
    encoded = as_json(wire.encode_request(request))
    assert encoded["questions"][0]["intent"] == {
        "kind": "permission",
        "tool": "Bash",
        "summary": "npm test",
        "allow": "Allow",
        "allowAlways": "Always allow",
        "deny": "Deny",
    }
    wire_names = {"allow_always": "allowAlways"}
    names = {wire_names.get(f.name, f.name) for f in dataclasses.fields(PermissionIntent)}
    assert set(encoded["questions"][0]["intent"]) == names | {"kind"}
    assert wire.decode_request(wire.dumps(request)) == request
    assert wire.decode_request(encoded) == request
    jsonschema.validate(encoded, wire.REQUEST_SCHEMA)
    schema = as_json(wire.REQUEST_SCHEMA)["$defs"]["intent"]["allOf"][1]["then"]
    assert set(schema["properties"]) == names
    once = dataclasses.replace(INTENT, allow_always=None)
    no_always = AskUserQuestionRequest([permission_question(once)])
    assert "allowAlways" not in wire.dumps(no_always)
    assert wire.decode_request(wire.dumps(no_always)) == no_always


def test_a_wire_permission_missing_a_field_is_a_located_fault() -> None:
    document = as_json(wire.encode_request(AskUserQuestionRequest([permission_question()])))
    del document["questions"][0]["intent"]["deny"]
    with pytest.raises(UserInteractionError) as caught:
        wire.decode_request(json.dumps(document))
    assert (caught.value.code, caught.value.message) == (
        ErrorCode.BAD_REQUEST,
        "questions[0].intent.deny: is required",
    )
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, wire.REQUEST_SCHEMA)


def test_the_digest_sees_every_field_of_the_intent() -> None:
    changes: dict[str, Any] = {
        "tool": "Read",
        "summary": "npm publish",
        "allow": "Always allow",
        "deny": "Allow",
        "allow_always": None,
    }
    assert set(changes) == {f.name for f in dataclasses.fields(PermissionIntent)}
    base = AskUserQuestionRequest([permission_question()])
    digests = {request_digest(base)}
    for name, value in changes.items():
        changed = dataclasses.replace(INTENT, **{name: value})
        digests.add(request_digest(AskUserQuestionRequest([permission_question(changed)])))
    assert len(digests) == 1 + len(changes)


# ---------------------------------------------------------------------- presentation


def test_the_display_model_marks_the_prompt_and_each_role_escaped() -> None:
    intent = PermissionIntent("Ba\x1bsh", "rm -rf \x1b[2J", "Allow", "Deny", "Always allow")
    question = permission_question(intent)
    view = present(AskUserQuestionRequest([question])).questions[0]
    assert view.permission == PermissionView("Ba\\x1bsh", "rm -rf \\x1b[2J")
    assert [(o.label, o.role) for o in view.options] == [
        ("Allow", "allow"),
        ("Always allow", "allow-always"),
        ("Deny", "deny"),
    ]
    page = as_json(present(AskUserQuestionRequest([question])).to_json())["questions"]
    assert page[0]["permission"] == {"tool": "Ba\\x1bsh", "summary": "rm -rf \\x1b[2J"}
    assert [o["role"] for o in page[0]["options"]] == ["allow", "allow-always", "deny"]


def test_a_question_without_the_intent_has_no_roles() -> None:
    plain_question = dataclasses.replace(permission_question(), intent=None)
    view = present(AskUserQuestionRequest([plain_question])).questions[0]
    assert view.permission is None
    assert {o.role for o in view.options} == {None}


async def test_the_console_presents_a_permission_prompt_and_answers_with_labels() -> None:
    output = io.StringIO()
    with provide(ConsoleProvider(io.StringIO("2\n"), output)):
        answer = await ask(AskUserQuestionRequest([permission_question()]))
    assert answer == AskUserQuestionAnswer([AskUserQuestionAnswerItem("perm", ["Always allow"])])
    assert output.getvalue() == (
        "\n── Permission · Bash ──\n"
        "Allow Bash to run this command?\n"
        "  Bash: npm test\n"
        "  │ npm test --watch=false\n"
        "  1. Allow [allow once]\n"
        "  2. Always allow [allow always]\n"
        "  3. Deny [deny]\n"
        "  4. Other…\n"
        "Choose 1-4, or type an edited input or a reply (an empty line skips).\n"
        "> "
    )


async def test_an_edit_comes_back_as_custom_text_never_as_an_allow() -> None:
    with provide(ConsoleProvider(io.StringIO("npm test -- --bail\n"), io.StringIO())):
        answer = await ask(AskUserQuestionRequest([permission_question()]))
    assert answer.answers == (AskUserQuestionAnswerItem("perm", (), "npm test -- --bail"),)


def test_the_terminal_shows_the_tool_the_input_and_the_roles() -> None:
    flow = BatchFlow(AskUserQuestionRequest([permission_question()]))
    shown = paint(flow, Viewport(), 80, 24)
    rows = [plain(row) for row in shown.above]
    assert rows[:3] == [
        "── Permission · Bash ──",
        "Allow Bash to run this command?",
        "  Bash: npm test",
    ]
    assert "❯ 1. Allow [allow once]" in rows
    assert "  2. Always allow [allow always]" in rows
    assert "  3. Deny [deny]" in rows


def test_the_page_receives_the_permission_view() -> None:
    request = AskUserQuestionRequest([permission_question()])
    data = as_json(question_json(PendingQuestion("q1", request)))
    assert data["view"]["questions"][0]["permission"] == {
        "tool": "Bash",
        "summary": "npm test",
    }
