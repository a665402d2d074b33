"""Every field of every vocabulary class reaches every place the shape is written out.

The question's shape is derived by hand in several places for speed: the checks (fast and
detailed), the wire codec (encode, fast and detailed decode), both JSON Schemas, the tool
schema and the tool parser. These tests enumerate the dataclass fields, so a field added
to a class fails here until each derivation handles it, or is listed as left out on purpose.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from typing import Any

import jsonschema
import pytest

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    Assignment,
    ErrorCode,
    PlanReviewIntent,
    Provenance,
    UnknownIntent,
    UserInteractionError,
    check_answer,
    check_request,
    request_digest,
    wire,
)
from interaction.tool import request_from_arguments, tool_parameters

VOCABULARY = (
    AskUserQuestionOption,
    PlanReviewIntent,
    UnknownIntent,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    AskUserQuestionAnswerItem,
    AskUserQuestionAnswer,
    Provenance,
)
PROCESS_LOCAL = {"agent", "signal", "key"}  # never on the wire, left out of equality
WIRE_NAME = {"multi_select": "multiSelect", "asked_at": "askedAt"}  # the others keep theirs
# The model-facing tool leaves these out on purpose: a model does not write plan-review
# intents or long details; a plugin does, in Python.
NOT_IN_TOOL = {"detail", "intent"}

OPTION = AskUserQuestionOption("npm", description="the default")
ITEM = AskUserQuestionItem(
    "pkg",
    "Which package manager?",
    detail="The plan\n1. install",
    header="Package manager",
    options=[OPTION, AskUserQuestionOption("yarn")],
    multi_select=False,
    intent=PlanReviewIntent("npm"),
)
MULTI = AskUserQuestionItem(
    "checks",
    "Which checks?",
    options=[AskUserQuestionOption("tests"), AskUserQuestionOption("lint")],
    multi_select=True,
    intent=UnknownIntent("x-future", {"weight": 2}),
    detail="why",
)
PROVENANCE = Provenance("bot", "build-7", "run-1", "deploy", datetime(2026, 1, 2, tzinfo=UTC))
ASSIGNMENT = Assignment(["ops", "alice"])
REQUEST = AskUserQuestionRequest([ITEM, MULTI], provenance=PROVENANCE, assignment=ASSIGNMENT)
ANSWER = AskUserQuestionAnswer(
    [
        AskUserQuestionAnswerItem("pkg", selected=["npm"]),
        AskUserQuestionAnswerItem("checks", selected=["tests"], custom="and types"),
    ]
)
SAMPLES: dict[type, object] = {
    AskUserQuestionOption: OPTION,
    PlanReviewIntent: ITEM.intent,
    UnknownIntent: MULTI.intent,
    AskUserQuestionItem: ITEM,
    AskUserQuestionRequest: REQUEST,
    AskUserQuestionAnswerItem: ANSWER.answers[1],
    AskUserQuestionAnswer: ANSWER,
    Provenance: PROVENANCE,
}


def plain(value: object) -> Any:
    """A JSON document as plain, freely indexable data."""
    return json.loads(json.dumps(value))


def wire_fields(cls: type) -> list[str]:
    return [
        WIRE_NAME.get(f.name, f.name)
        for f in dataclasses.fields(cls)
        if f.name not in PROCESS_LOCAL and f.name != "fields"
    ]


def test_every_sample_sets_every_field_away_from_its_default() -> None:
    # The derivation tests below only prove something if each field carries a value.
    for cls in VOCABULARY:
        sample = SAMPLES[cls]
        for f in dataclasses.fields(cls):
            if f.name in PROCESS_LOCAL:
                continue
            value = getattr(sample, f.name)
            default = f.default if f.default is not dataclasses.MISSING else None
            if f.default_factory is not dataclasses.MISSING:
                default = f.default_factory()
            assert value not in (None, (), False, default) or f.name == "multi_select", (
                cls.__name__,
                f.name,
            )


def test_the_codec_carries_every_field_both_ways() -> None:
    encoded = wire.encode_request(REQUEST)
    pkg, checks = plain(encoded)["questions"]
    assert set(wire_fields(AskUserQuestionItem)) - {"multiSelect"} <= set(pkg)
    assert "multiSelect" in checks
    assert set(pkg["options"][0]) == set(wire_fields(AskUserQuestionOption))
    answer_item = plain(wire.encode_answer(ANSWER))["answers"][1]
    assert set(answer_item) == set(wire_fields(AskUserQuestionAnswerItem))
    assert set(plain(encoded)["provenance"]) == set(wire_fields(Provenance))
    assert set(plain(encoded)) == set(wire_fields(AskUserQuestionRequest))
    for decoded in (wire.decode_request(json.dumps(encoded)), wire.decode_request(encoded)):
        assert decoded == REQUEST  # the fast decode, then the detailed one
        assert decoded.provenance == PROVENANCE  # not part of ==
        assert decoded.assignment == ASSIGNMENT  # nor this
    assert wire.decode_answer(wire.dumps(ANSWER), REQUEST) == ANSWER


def test_both_json_schemas_name_every_wire_field() -> None:
    defs = plain(wire.REQUEST_SCHEMA)["$defs"]
    for name, cls in (
        ("question", AskUserQuestionItem),
        ("option", AskUserQuestionOption),
        ("provenance", Provenance),
    ):
        assert set(defs[name]["properties"]) == set(wire_fields(cls)), name
    request = plain(wire.REQUEST_SCHEMA)["properties"]
    assert set(request) == set(wire_fields(AskUserQuestionRequest))
    items = plain(wire.ANSWER_SCHEMA)["properties"]["answers"]["items"]
    assert set(items["properties"]) == set(wire_fields(AskUserQuestionAnswerItem))
    jsonschema.validate(wire.encode_request(REQUEST), wire.REQUEST_SCHEMA)
    jsonschema.validate(wire.encode_answer(ANSWER), wire.ANSWER_SCHEMA)


def test_the_tool_schema_and_parser_take_every_model_facing_field() -> None:
    question = plain(tool_parameters())["properties"]["questions"]["items"]
    expected = {f.name for f in dataclasses.fields(AskUserQuestionItem)} - NOT_IN_TOOL
    assert set(question["properties"]) == expected
    assert set(question["properties"]["options"]["items"]["properties"]) == {
        f.name for f in dataclasses.fields(AskUserQuestionOption)
    }
    arguments = {
        "questions": [
            {
                "id": "pkg",
                "question": "Which?",
                "header": "Pkg",
                "options": [{"label": "npm", "description": "default"}, {"label": "yarn"}],
                "multi_select": True,
            }
        ]
    }
    jsonschema.validate(arguments, tool_parameters())
    (parsed,) = request_from_arguments(arguments).questions
    assert parsed == AskUserQuestionItem(
        "pkg",
        "Which?",
        header="Pkg",
        options=[AskUserQuestionOption("npm", "default"), AskUserQuestionOption("yarn")],
        multi_select=True,
    )


def _replace(sample: object, name: str, value: object) -> object:
    copy = object.__new__(type(sample))
    for f in dataclasses.fields(sample):  # type: ignore[arg-type]
        object.__setattr__(copy, f.name, value if f.name == name else getattr(sample, f.name))
    return copy


@pytest.mark.parametrize(
    "name", [f.name for f in dataclasses.fields(AskUserQuestionItem) if f.name != "intent"]
)
def test_the_request_checks_look_at_every_question_field(name: str) -> None:
    broken = _replace(ITEM, name, 3.5)
    with pytest.raises(UserInteractionError) as caught:
        check_request(AskUserQuestionRequest([broken]))  # type: ignore[list-item]
    assert caught.value.code == ErrorCode.BAD_REQUEST
    assert caught.value.path == f"questions[0].{name}"


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(AskUserQuestionOption)])
def test_the_request_checks_look_at_every_option_field(name: str) -> None:
    broken = _replace(OPTION, name, 3.5)
    item = _replace(_replace(ITEM, "options", (broken,)), "intent", None)
    with pytest.raises(UserInteractionError) as caught:
        check_request(AskUserQuestionRequest([item]))  # type: ignore[list-item]
    assert caught.value.path == f"questions[0].options[0].{name}"


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(AskUserQuestionRequest)])
def test_the_request_checks_look_at_every_request_field(name: str) -> None:
    with pytest.raises(UserInteractionError) as caught:
        check_request(_replace(REQUEST, name, 3.5))
    # Any object with a string id may be an agent, so a float is refused for its id.
    assert caught.value.path == ("agent.id" if name == "agent" else name)


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(Provenance)])
def test_the_request_checks_look_at_every_provenance_field(name: str) -> None:
    broken = _replace(PROVENANCE, name, 3.5)
    with pytest.raises(UserInteractionError) as caught:
        check_request(AskUserQuestionRequest([ITEM], provenance=broken))  # type: ignore[arg-type]
    assert caught.value.code == ErrorCode.BAD_REQUEST
    assert caught.value.path == f"provenance.{name}"


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(AskUserQuestionAnswerItem)])
def test_the_answer_check_looks_at_every_answer_field(name: str) -> None:
    broken = _replace(ANSWER.answers[1], name, 3.5)
    with pytest.raises(UserInteractionError) as caught:
        check_answer(REQUEST, AskUserQuestionAnswer([ANSWER.answers[0], broken]))  # type: ignore[list-item]
    assert caught.value.code == ErrorCode.BAD_ANSWER
    assert caught.value.path == f"answers[1].{name}"


def test_the_digest_sees_every_question_field() -> None:
    changes: dict[str, object] = {
        "id": "other",
        "question": "Other?",
        "detail": "other",
        "header": "other",
        "options": (AskUserQuestionOption("npm", "changed"), AskUserQuestionOption("yarn")),
        "multi_select": True,
        "intent": PlanReviewIntent("yarn"),
    }
    assert set(changes) == {f.name for f in dataclasses.fields(AskUserQuestionItem)}
    digests = {request_digest(REQUEST)}
    for name, value in changes.items():
        changed = _replace(ITEM, name, value)
        digests.add(request_digest(AskUserQuestionRequest([changed, MULTI])))  # type: ignore[list-item]
    assert len(digests) == 1 + len(changes)
