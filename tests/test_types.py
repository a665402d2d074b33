"""The vocabulary classes (and the display, tool and terminal classes declared the same way)
behave as ``@dataclass(frozen=True, slots=True)`` of their fields.

At run time they are built without compiling methods or loading ``dataclasses``
(``interaction._frozen``), with ``__init__`` written by hand; each is held here to a standard
dataclass made from the same ``dataclasses.fields()``, so a field added to one but not the
other is caught.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
import threading
import typing
from typing import Any, ClassVar

import pytest

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    PlanReviewIntent,
    PlanVerdict,
    Provenance,
    ResumedAnswer,
    UnknownIntent,
    wire,
)
from interaction._core import frozen_dataclass, set_field
from interaction._frozen import field
from interaction._types import stored_item, stored_request
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
        ((), None, None, None, None),
        ((AskUserQuestionItem("a", "q"),), None, None, "k", Provenance("bot")),
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
        if f.default_factory is not dataclasses.MISSING:
            assert ours[f.name].default == f.default_factory()
        else:
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
    # copy.replace() (Python 3.13+) calls __replace__, which 3.13's dataclasses define.
    assert ours[0].__replace__(**changes) == changed
    assert ours[0].__replace__() == ours[0]
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        ours[0].__replace__(nope=1)
    by_keyword = cls(**dict(zip(cls.__slots__, first, strict=True)))  # type: ignore[attr-defined]
    assert by_keyword == ours[0]


def _fresh_class() -> type[Any]:
    """A new class each call, so its dataclass introspection has not been read yet."""

    @frozen_dataclass(frozen=True, slots=True)
    class Pair:
        """Two fields, one left out of equality."""

        left: int
        right: list[int] = field(default_factory=list, compare=False)
        tag: ClassVar[str] = "pair"

        def __init__(self, left: int, right: list[int] | None = None) -> None:
            set_field(self, "left", left)
            set_field(self, "right", [] if right is None else right)

    return Pair


@dataclasses.dataclass(frozen=True, slots=True)
class _StandardPair:
    left: int
    right: list[int] = dataclasses.field(default_factory=list, compare=False)
    tag: ClassVar[str] = "pair"


FIRST_READS: dict[str, Any] = {
    "fields": lambda cls: [(f.name, f.type, f.compare) for f in dataclasses.fields(cls)],
    "is_dataclass of an instance": lambda cls: dataclasses.is_dataclass(cls(1)),
    "replace": lambda cls: dataclasses.replace(cls(1, [2]), left=3).left,
    "asdict": lambda cls: dataclasses.asdict(cls(1, [2])),
    "params": lambda cls: repr(cls.__dataclass_params__).split("(", 1)[1],
    "fields of an instance": lambda cls: sorted(cls(1).__dataclass_fields__),
}


@pytest.mark.parametrize("read", list(FIRST_READS), ids=str)
def test_the_first_introspection_reads_what_a_standard_dataclass_has(read: str) -> None:
    cls = _fresh_class()
    assert type(cls.__dict__["__dataclass_fields__"]) is not dict  # not made yet
    first = FIRST_READS[read](cls)
    assert first == FIRST_READS[read](_StandardPair)
    # Both attributes are plain values on the class from then on, as on a standard one.
    assert type(cls.__dict__["__dataclass_fields__"]) is dict
    standard_params = _StandardPair.__dataclass_params__  # type: ignore[attr-defined]
    assert type(cls.__dict__["__dataclass_params__"]) is type(standard_params)
    assert FIRST_READS[read](cls) == first
    # A class variable is recorded as a standard dataclass records it, and is no field.
    tag, standard_tag = cls.__dataclass_fields__["tag"], _StandardPair.__dataclass_fields__["tag"]
    assert tag._field_type is standard_tag._field_type  # type: ignore[attr-defined]


def test_a_subclass_read_first_inherits_the_fields_as_from_a_standard_dataclass() -> None:
    parent = _fresh_class()

    class Child(parent):  # type: ignore[misc, valid-type]
        pass

    assert [f.name for f in dataclasses.fields(Child)] == ["left", "right"]
    assert dataclasses.replace(Child(1, [2]), left=3) == Child(3, [2])
    assert dataclasses.asdict(Child(1, [2])) == {"left": 1, "right": [2]}
    assert type(parent.__dict__["__dataclass_fields__"]) is dict  # made for the parent
    assert "__dataclass_fields__" not in Child.__dict__  # and inherited, as usual


def test_threads_reading_first_at_once_get_the_same_fields() -> None:
    cls = _fresh_class()
    start = threading.Barrier(8)
    seen: list[tuple[dataclasses.Field[Any], ...]] = []

    def read() -> None:
        start.wait()
        seen.append(dataclasses.fields(cls))

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 8
    for fields in seen:
        assert all(a is b for a, b in zip(fields, seen[0], strict=True))


def test_a_read_made_while_another_class_s_metadata_is_made_completes() -> None:
    # A finalizer or a signal handler may read one class's fields while another's are
    # being made; the first read held a lock over the making, and the second waited on
    # it for ever. Here a class variable's descriptor makes the nested read.
    inner = _fresh_class()

    class ReadsInner:
        def __get__(self, instance: object, owner: type) -> str:
            return ",".join(f.name for f in dataclasses.fields(inner))

    @frozen_dataclass(frozen=True, slots=True)
    class Outer:
        value: int
        names: ClassVar[str] = ReadsInner()  # type: ignore[assignment]

        def __init__(self, value: int) -> None:
            set_field(self, "value", value)

    found: list[list[str]] = []
    reader = threading.Thread(
        target=lambda: found.append(list(Outer.__dataclass_fields__)), daemon=True
    )
    reader.start()
    reader.join(timeout=20)  # a bound on a hang, not a pause: the read takes microseconds
    assert not reader.is_alive()
    assert found == [["value", "names"]]


def test_fields_left_out_of_equality_stay_out_of_it() -> None:
    items = (AskUserQuestionItem("a", "q"),)
    assert AskUserQuestionRequest(items, key="one") == AskUserQuestionRequest(items, key="two")
    assert hash(AskUserQuestionRequest(items, key="one")) == hash(AskUserQuestionRequest(items))
    assert "key='one'" in repr(AskUserQuestionRequest(items, key="one"))


def test_the_drafted_objects_are_what_the_constructors_make() -> None:
    # The decoder builds through drafts whose class is then reassigned (see _types.OptionDraft).
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
        (stored_item("pkg", "Which?", "d", "h", (option,), True, PlanReviewIntent("npm")), item),
        (stored_item("a", "q", None, None, (), False, None), AskUserQuestionItem("a", "q")),
        (stored_request((item,)), request),
    ]
    for built, constructed in pairs:
        assert type(built) is type(constructed)
        assert repr(built) == repr(constructed)  # every slot is set, with the same value
        assert built == constructed
        assert hash(built) == hash(constructed)
        assert pickle.loads(pickle.dumps(built)) == constructed
        with pytest.raises(dataclasses.FrozenInstanceError):
            built.id = "x"  # type: ignore[attr-defined]  # any name, as for a dataclass
