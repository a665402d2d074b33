"""Server-side forms by protocol version, their property names, and what content may say."""

from __future__ import annotations

from typing import Any, cast

import pytest

from interaction import (
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
)
from interaction.mcp import form_to_answer, request_to_form

REQUEST = AskUserQuestionRequest(
    [
        AskUserQuestionItem(
            "pkg-manager",
            "Which package manager?",
            header="Tools",
            options=[AskUserQuestionOption("pnpm", "fast"), AskUserQuestionOption("npm")],
        ),
        AskUserQuestionItem(
            "checks",
            "Which checks?",
            options=[AskUserQuestionOption("tests"), AskUserQuestionOption("lint")],
            multi_select=True,
        ),
        AskUserQuestionItem("pkg_manager", "Which registry?"),
    ]
)


def keywords(value: object) -> set[str]:
    """Every key used anywhere in a JSON value."""
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in keywords(v)}
    if isinstance(value, list):
        return {k for v in value for k in keywords(v)}
    return set()


def test_a_2025_06_18_peer_gets_enum_and_enum_names_and_one_boolean_per_option() -> None:
    _, schema, fields = request_to_form(REQUEST, "2025-06-18")
    properties = cast(dict[str, Any], schema["properties"])
    assert list(properties) == [
        "pkg_manager_2",
        "pkg_manager_2__other",
        "checks__1",
        "checks__2",
        "checks__other",
        "pkg_manager",
    ]
    assert properties["pkg_manager_2"] == {
        "title": "Tools: Which package manager?",
        "type": "string",
        "enum": ["pnpm", "npm"],
        "enumNames": ["pnpm — fast", "npm"],
    }
    assert properties["checks__1"] == {
        "type": "boolean",
        "title": "Which checks? — tests",
        "default": False,
    }
    assert not keywords(schema) & {"oneOf", "anyOf", "items", "const", "uniqueItems"}
    assert [f.option_keys for f in fields] == [(), ("checks__1", "checks__2"), ()]


def test_2025_11_25_and_later_get_titled_one_of_and_arrays() -> None:
    for version in ("2025-11-25", "2026-07-28"):
        _, schema, _ = request_to_form(REQUEST, version)
        properties = cast(dict[str, Any], schema["properties"])
        assert properties["pkg_manager_2"]["oneOf"] == [
            {"const": "pnpm", "title": "pnpm — fast"},
            {"const": "npm", "title": "npm"},
        ]
        assert properties["checks"]["type"] == "array"
        assert "enumNames" not in keywords(schema)


def test_every_property_name_is_an_identifier() -> None:
    odd = AskUserQuestionRequest(
        [AskUserQuestionItem(i, f"Q {i}?") for i in ("1st", "a b", "ü", "ok_1", "a-b", "a_b")]
    )
    _, schema, fields = request_to_form(odd)
    names = list(cast(dict[str, Any], schema["properties"]))
    assert names == ["q_1st", "a_b_2", "_", "ok_1", "a_b_3", "a_b"]
    assert all(name.isidentifier() and name.isascii() for name in names)
    assert [f.question.id for f in fields] == ["1st", "a b", "ü", "ok_1", "a-b", "a_b"]


def test_the_booleans_of_a_2025_06_18_multi_select_give_its_selection() -> None:
    _, _, fields = request_to_form(REQUEST, "2025-06-18")
    answer = form_to_answer(
        fields,
        {"pkg_manager_2": "npm", "checks__2": True, "checks__1": False, "pkg_manager": "npmjs"},
    )
    assert answer.answers == (
        AskUserQuestionAnswerItem("pkg-manager", ("npm",)),
        AskUserQuestionAnswerItem("checks", ("lint",)),
        AskUserQuestionAnswerItem("pkg_manager", (), "npmjs"),
    )


@pytest.mark.parametrize(
    ("version", "content", "message"),
    [
        (
            "2025-11-25",
            {"pkg-manager": "npm"},
            "elicitation: content.pkg-manager: the form has no such field",
        ),
        (
            "2025-11-25",
            {"checks__1": True},
            "elicitation: content.checks__1: the form has no such field",
        ),
        (
            "2025-06-18",
            {"checks": ["lint"]},
            "elicitation: content.checks: the form has no such field",
        ),
        (
            "2025-06-18",
            {"checks__1": "yes"},
            "elicitation: content.checks__1: expected a boolean, got string",
        ),
    ],
)
def test_content_keys_we_did_not_send_are_bad_answer(
    version: str, content: dict[str, object], message: str
) -> None:
    _, _, fields = request_to_form(REQUEST, version)
    with pytest.raises(UserInteractionError) as caught:
        form_to_answer(fields, content)
    assert caught.value.code == ErrorCode.BAD_ANSWER
    assert caught.value.message == message


def test_other_text_follows_the_one_answer_rule() -> None:
    _, _, fields = request_to_form(REQUEST)
    answer = form_to_answer(
        fields,
        {
            "pkg_manager_2": "pnpm",
            "pkg_manager_2__other": " NPM ",
            "checks": ["tests"],
            "checks__other": "Lint",
            "pkg_manager": "  npmjs  ",
        },
    )
    assert answer.answers == (
        AskUserQuestionAnswerItem("pkg-manager", ("npm",)),
        AskUserQuestionAnswerItem("checks", ("tests", "lint")),
        AskUserQuestionAnswerItem("pkg_manager", (), "npmjs"),
    )
