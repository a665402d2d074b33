"""The vocabulary classes (and the display, tool and terminal classes declared the same way)
behave as ``@dataclass(frozen=True, slots=True)`` of their fields.

Each is held here to a standard dataclass made from the same ``dataclasses.fields()``, so a
``__post_init__`` that normalises a field (a list stored as a tuple, an intent's fields
frozen) or a hand-written ``__hash__`` keeps what a dataclass of those fields does.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
import sys
import typing
from typing import Any

import pytest

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    Assignment,
    PlanReviewIntent,
    PlanVerdict,
    Provenance,
    ResumedAnswer,
    UnknownIntent,
    wire,
)
from interaction.display import (
    OptionView,
    PermissionView,
    ProvenanceView,
    QuestionView,
    RequestView,
)
from interaction.terminal._text import Line
from interaction.terminal._view import Screen
from interaction.tool import ToolLimits, ToolResult

OPTION = AskUserQuestionOption("npm", "default")
ANSWER = AskUserQuestionAnswer((AskUserQuestionAnswerItem("pkg", ("npm",)),))
# Two samples per class, field values in field order; the second differs in every field.
SAMPLES: dict[type, tuple[tuple[Any, ...], tuple[Any, ...]]] = {
    AskUserQuestionOption: (("npm", None), ("yarn", "fast")),
    PlanReviewIntent: (("Approve",), ("Go",)),
    AskUserQuestionItem: (
        ("pkg", "Which?", None, None, (), False, None),
        ("ci", "CI?", "detail", "CI", (OPTION,), True, PlanReviewIntent("npm")),
    ),
    AskUserQuestionRequest: (
        ((), None, None, None, None, None),
        ((AskUserQuestionItem("a", "q"),), None, None, "k", Provenance("bot"), Assignment(["a"])),
    ),
    AskUserQuestionAnswerItem: (("pkg", (), None), ("ci", ("npm",), "mine")),
    AskUserQuestionAnswer: (((),), (ANSWER.answers,)),
    ResumedAnswer: (("0" * 64, ANSWER), ("1" * 64, AskUserQuestionAnswer(()))),
    PlanVerdict: ((True, None, None), (False, "Revise", "more tests")),
    # The UIs' and the tool's frozen classes are built the same way.
    OptionView: (
        ("a", "a", False, None, False, None),
        ("b (Recommended)", "b", True, "d", True, "deny"),
    ),
    QuestionView: (
        ("q", "Q?", None, None, (), False, None, None),
        (
            "r",
            "R?",
            "h",
            "d",
            (OptionView("a", "a", False, None, False),),
            True,
            "Other…",
            PermissionView("Bash", "ls"),
        ),
    ),
    RequestView: (
        ((), False, None),
        (
            (QuestionView("q", "Q?", None, None, (), False, None),),
            True,
            ProvenanceView("bot", None, None, None, None),
        ),
    ),
    ToolLimits: ((4, 6, 40, 80, 300, 1000), (1, 2, 3, 4, 5, 6)),
    ToolResult: (("ok", None), ("no", {"name": "UserInteractionError", "code": "X"})),
    Line: (([("", "a")], "", "", True), ([("b", "c")], "  ", "    ", False)),
    Screen: (([], [], []), ([[("", "a")]], [("", "> ")], [[("", "b")]])),
}


def _standard(cls: type) -> type:
    """A standard frozen, slotted dataclass with ``cls``'s fields."""
    specs = []
    for f in dataclasses.fields(cls):
        kwargs: dict[str, Any] = {"compare": f.compare, "repr": f.repr}
        if f.default is not dataclasses.MISSING:
            kwargs["default"] = f.default
        if f.default_factory is not dataclasses.MISSING:
            kwargs["default_factory"] = f.default_factory
        specs.append((f.name, f.type, dataclasses.field(**kwargs)))
    return dataclasses.make_dataclass(cls.__name__, specs, frozen=True, slots=True)


@pytest.mark.parametrize("cls", [*SAMPLES, UnknownIntent], ids=lambda cls: cls.__name__)
def test_the_class_has_the_shape_of_a_standard_dataclass(cls: type) -> None:
    standard = _standard(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    assert cls.__slots__ == tuple(names)  # type: ignore[attr-defined]
    assert cls.__match_args__ == standard.__match_args__  # type: ignore[attr-defined]
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    assert (params.init, params.repr, params.eq, params.frozen) == (True, True, True, True)
    ours = inspect.signature(cls).parameters
    theirs = inspect.signature(standard).parameters
    assert list(ours) == list(theirs) == names
    for f in dataclasses.fields(cls):
        assert ours[f.name].kind == theirs[f.name].kind
        assert ours[f.name].default == theirs[f.name].default


@pytest.mark.parametrize("cls", [*SAMPLES, UnknownIntent], ids=lambda cls: cls.__name__)
def test_every_field_s_annotation_resolves_at_run_time(cls: type) -> None:
    # What pydantic, cattrs and hypothesis' from_type read; the request's agent and signal
    # were imported for mypy only, so resolving its hints raised NameError.
    hints = typing.get_type_hints(cls)
    assert [name for name in hints if name in cls.__slots__] == list(cls.__slots__)  # type: ignore[attr-defined]


def _hash(value: object) -> int | str:
    """The hash, or how hashing failed (a field holding a list or a dict)."""
    try:
        return hash(value)
    except TypeError as error:
        return str(error)


@pytest.mark.parametrize("cls", list(SAMPLES), ids=lambda cls: cls.__name__)
def test_the_class_behaves_as_a_standard_dataclass(cls: type) -> None:
    standard = _standard(cls)
    first, second = SAMPLES[cls]
    ours = [cls(*first), cls(*first), cls(*second)]
    theirs = [standard(*first), standard(*first), standard(*second)]
    for value, reference in zip(ours, theirs, strict=True):
        assert repr(value) == repr(reference)
        assert _hash(value) == _hash(reference)
        assert dataclasses.astuple(value) == dataclasses.astuple(reference)
        for clone in (pickle.loads(pickle.dumps(value)), copy.copy(value), copy.deepcopy(value)):
            assert clone == value
            assert type(clone) is cls
    assert (ours[0] == ours[1], ours[0] == ours[2]) == (True, False)
    assert (theirs[0] == theirs[1], theirs[0] == theirs[2]) == (True, False)
    assert ours[0] != theirs[0]  # another class: not equal, as between two dataclasses
    changes = dict(zip(ours[0].__slots__, second, strict=True))
    changed = dataclasses.replace(ours[0], **changes)
    assert changed == ours[2]
    if sys.version_info >= (3, 13):  # copy.replace() and dataclasses' __replace__ are new
        assert copy.replace(ours[0], **changes) == changed  # type: ignore[attr-defined, unused-ignore]
        assert copy.replace(ours[0]) == ours[0]  # type: ignore[attr-defined, unused-ignore]
        with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
            copy.replace(ours[0], nope=1)  # type: ignore[attr-defined, unused-ignore]
    by_keyword = cls(**dict(zip(cls.__slots__, first, strict=True)))  # type: ignore[attr-defined]
    assert by_keyword == ours[0]


def test_fields_left_out_of_equality_stay_out_of_it() -> None:
    items = (AskUserQuestionItem("a", "q"),)
    assert AskUserQuestionRequest(items, key="one") == AskUserQuestionRequest(items, key="two")
    assert hash(AskUserQuestionRequest(items, key="one")) == hash(AskUserQuestionRequest(items))
    assert "key='one'" in repr(AskUserQuestionRequest(items, key="one"))


def test_the_decoded_objects_are_what_the_constructors_make() -> None:
    option = AskUserQuestionOption("npm", "fast")
    item = AskUserQuestionItem("pkg", "Which?", "d", "h", (option,), True, PlanReviewIntent("npm"))
    request = AskUserQuestionRequest((item,))
    decoded = wire.decode_request(
        '{"questions": [{"id": "pkg", "question": "Which?", "header": "h",'
        ' "options": [{"label": "npm", "description": "fast"}, {"label": "yarn"}]}]}'
    )
    pairs: list[tuple[object, object]] = [
        (decoded.questions[0].options[0], option),
        (decoded.questions[0].options[1], AskUserQuestionOption("yarn")),
        (
            decoded.questions[0],
            AskUserQuestionItem(
                "pkg", "Which?", header="h", options=(option, AskUserQuestionOption("yarn"))
            ),
        ),
        (decoded, AskUserQuestionRequest(decoded.questions)),
        (wire.decode_request(wire.dumps(request)), request),
    ]
    for built, constructed in pairs:
        assert type(built) is type(constructed)
        assert repr(built) == repr(constructed)  # every slot is set, with the same value
        assert built == constructed
        assert hash(built) == hash(constructed)
        assert pickle.loads(pickle.dumps(built)) == constructed
        with pytest.raises(dataclasses.FrozenInstanceError):
            built.id = "x"  # type: ignore[attr-defined]  # any name, as for a dataclass
