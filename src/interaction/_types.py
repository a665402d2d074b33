"""The vocabulary: frozen dataclasses for questions, requests and answers, and the provider seam."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import FrozenInstanceError, dataclass, field
from types import MappingProxyType
from typing import ClassVar, Final, Literal, Protocol, TypeAlias, TypeVar

# AbortSignal and Agent are imported at run time, not only for mypy, so that
# typing.get_type_hints() resolves every field of AskUserQuestionRequest (it raised
# NameError); neither module imports this one.
from ._abort import AbortSignal
from ._agents import Agent
from ._errors import ErrorCode, UserInteractionError, fault, type_name
from ._provenance import Provenance
from ._team import Assignment
from ._text_policy import SURROGATE, UNSAFE, describe_char

__all__ = [
    "AskUserQuestionAnswer",
    "AskUserQuestionAnswerItem",
    "AskUserQuestionIntent",
    "AskUserQuestionItem",
    "AskUserQuestionOption",
    "AskUserQuestionRequest",
    "JSONValue",
    "PermissionIntent",
    "PlanReviewIntent",
    "UnknownIntent",
    "UserInteractionProvider",
    "as_plain",
]

JSONValue: TypeAlias = (
    "str | int | float | bool | Sequence[JSONValue] | Mapping[str, JSONValue] | None"
)
"""A JSON value as the wire carries it (frozen: arrays are tuples, objects read-only)."""


MAX_INTENT_DEPTH: Final = 64
"""How deeply an unknown intent's fields may nest arrays and objects."""

MAX_INTENT_DIGITS: Final = 4000
"""How many digits an integer in an unknown intent's fields may have: a longer one could
not be written out as text (``repr``, ``json.dumps`` and the digest refuse over 4,300)."""
_SHORT_INT_BITS: Final = 13287  # 2**13287 < 10**4000: no int this short has 4,001 digits


def _bad_intent_field(path: str, problem: str) -> UserInteractionError:
    return fault(ErrorCode.BAD_INTENT, path, problem)


_SCALARS: Final = frozenset({bool, type(None), str, int, float})


def _freeze(value: object, path: str = "intent", depth: int = 0) -> object:
    """A read-only copy of a JSON value; ``BAD_INTENT`` for anything the wire cannot carry."""
    if type(value) in _SCALARS:
        return _checked_scalar(value, path)
    if depth >= MAX_INTENT_DEPTH:
        raise _bad_intent_field(path, f"nests more than {MAX_INTENT_DEPTH} levels deep")
    if isinstance(value, Mapping):
        return _freeze_mapping(value, path, depth)
    if isinstance(value, list | tuple):
        return tuple(_freeze(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value))
    raise _bad_intent_field(path, f"expected a JSON value, got {type_name(value)}")


def _checked_scalar(value: object, path: str) -> object:
    """A JSON scalar (exactly a bool, None, str, int or float) that the wire can carry."""
    kind = type(value)
    if isinstance(value, str) and kind is str:
        if not value.isascii() and SURROGATE.search(value):
            raise _bad_intent_field(path, "contains an unpaired surrogate")
    elif isinstance(value, int) and kind is int:
        if value.bit_length() > _SHORT_INT_BITS and abs(value) >= 10**MAX_INTENT_DIGITS:
            raise _bad_intent_field(path, f"has more than {MAX_INTENT_DIGITS} digits")
    elif isinstance(value, float) and not math.isfinite(value):
        raise _bad_intent_field(path, f"expected a finite number, got {value!r}")
    return value


def _freeze_mapping(value: Mapping[object, object], path: str, depth: int) -> object:
    frozen: dict[str, object] = {}
    for key, item in value.items():
        if type(key) is not str:
            raise _bad_intent_field(path, f"expected string keys, got {type_name(key)}")
        # The key goes into paths and messages that terminals show: no controls in it.
        if not key.isprintable() and (found := UNSAFE.search(key)) is not None:
            raise _bad_intent_field(path, f"key {key!r} {describe_char(found.group())}")
        if depth == 0 and key == "kind":
            raise _bad_intent_field(path, "must not hold kind, which is the intent's own")
        frozen[key] = _freeze(item, f"{path}.{key}", depth + 1)
    return MappingProxyType(frozen)


def _hashable(value: object) -> object:
    """A hashable stand-in that is equal, and hashes equal, exactly when the values are equal."""
    if isinstance(value, Mapping):
        return frozenset((k, _hashable(v)) for k, v in value.items())
    if isinstance(value, tuple):
        return tuple(_hashable(v) for v in value)
    return value


def as_plain(value: object) -> object:
    """A ``dict``, ``list`` or ``str`` subclass as the plain value its storage holds.

    Parsed JSON from a host may be of subclasses, which can override ``get``, ``__iter__``
    or ``strip`` to lie or raise; their C storage cannot. Anything else is returned as is.
    """
    kind = type(value)
    if kind is dict or kind is list or kind is str:
        return value
    if isinstance(value, dict):
        return dict(dict.items(value))
    if isinstance(value, list):
        return list(list.__iter__(value))
    if isinstance(value, str):
        return str.__str__(value)
    return value


def thaw(value: object) -> object:
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value


_T = TypeVar("_T")


def _frozen_for_every_name(cls: type[_T]) -> type[_T]:
    """Make assigning or deleting any attribute of ``cls``'s objects a ``FrozenInstanceError``.

    ``@dataclass(frozen=True, slots=True)`` raises it for a field, but for any other name
    Python 3.11 to 3.13 raise a confusing ``TypeError`` (CPython issue gh-105936, fixed in
    3.14, where every name raises it as here).
    """

    def __setattr__(self: object, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self: object, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    cls.__setattr__ = __setattr__  # type: ignore[method-assign]
    cls.__delattr__ = __delattr__  # type: ignore[method-assign]
    return cls


@_frozen_for_every_name
@dataclass(frozen=True, slots=True)
class AskUserQuestionOption:
    """One selectable answer; ``label`` is both what the user sees and the selected value."""

    label: str
    description: str | None = None


@_frozen_for_every_name
@dataclass(frozen=True, slots=True)
class PlanReviewIntent:
    """The question reviews the plan in its ``detail``; ``approve`` names the approving option."""

    approve: str
    kind: ClassVar[Literal["plan-review"]] = "plan-review"


@_frozen_for_every_name
@dataclass(frozen=True, slots=True)
class PermissionIntent:
    """The question asks whether ``tool`` may run with the input its ``detail`` shows.

    ``summary`` is that input on one line (a shell command, a path: what a policy rule's
    pattern is matched against, and what the person reads first). ``allow``, ``deny`` and
    the optional ``allow_always`` name the options that allow this once, deny, and allow
    this and the like from now on; ``ask()`` refuses (``BAD_INTENT``) a label that names
    none of the question's options, two roles naming one option, and a multi-select
    question. Text of one's own in the answer is the person's edit of the input or their
    reply, never an allow: the plugin checks it again.
    """

    tool: str
    summary: str
    allow: str
    deny: str
    allow_always: str | None = None
    kind: ClassVar[Literal["permission"]] = "permission"


def _no_fields() -> Mapping[str, JSONValue]:
    return MappingProxyType({})


@_frozen_for_every_name
@dataclass(frozen=True, slots=True)
class UnknownIntent:
    """An intent tag this version does not know, kept verbatim so it round-trips.

    ``fields`` holds every wire field but ``kind``, frozen; its values must be JSON values
    that the wire can write out (finite numbers, integers of at most 4,000 digits, no
    unpaired surrogates, at most 64 levels deep) under keys without control characters,
    else the constructor raises ``BAD_INTENT``, as it does for the kinds ``plan-review``
    and ``permission`` (those are :class:`PlanReviewIntent` and :class:`PermissionIntent`).
    UIs render the generic flow.
    """

    kind: str
    fields: Mapping[str, JSONValue] = field(default_factory=_no_fields)

    def __post_init__(self) -> None:
        kind, fields = self.kind, self.fields
        if type(kind) is str and kind == PlanReviewIntent.kind:  # it would come back as one
            raise _bad_intent_field("intent.kind", "plan-review is PlanReviewIntent's kind")
        if type(kind) is str and kind == PermissionIntent.kind:
            raise _bad_intent_field("intent.kind", "permission is PermissionIntent's kind")
        if not isinstance(fields, Mapping):
            raise _bad_intent_field("intent.fields", f"expected an object, got {type_name(fields)}")
        try:
            frozen = _freeze(fields, "intent")
        except UserInteractionError:
            raise
        except Exception as exc:  # a mapping whose items() raises, say
            raise _bad_intent_field(
                "intent.fields", f"could not be read: {type(exc).__name__}"
            ) from None
        object.__setattr__(self, "fields", frozen)  # a frozen dataclass's own way to store

    def __hash__(self) -> int:
        return hash((self.kind, _hashable(self.fields)))

    def __reduce__(self) -> tuple[object, ...]:
        # The read-only mappings cannot be pickled or deep-copied; their plain form can.
        return (UnknownIntent, (self.kind, thaw(self.fields)))


AskUserQuestionIntent: TypeAlias = PlanReviewIntent | PermissionIntent | UnknownIntent
"""A caller-declared presentation intent; it shapes presentation only, never the answer."""


# The classes below store a list given for a sequence field as a tuple (``__post_init__``),
# so a value is immutable all the way down. Anything else is stored as given, subclasses of
# list and tuple too (one may override ``__iter__`` to lie or raise), for validation to name.


@_frozen_for_every_name
@dataclass(frozen=True, slots=True)
class AskUserQuestionItem:
    """One question; ``id`` is echoed in its answer so batched questions stay routable."""

    id: str
    question: str
    detail: str | None = None
    header: str | None = None
    options: Sequence[AskUserQuestionOption] = ()
    multi_select: bool = False
    intent: AskUserQuestionIntent | None = None

    def __post_init__(self) -> None:
        if type(self.options) is list:
            object.__setattr__(self, "options", tuple(self.options))


@_frozen_for_every_name
@dataclass(frozen=True, slots=True)
class AskUserQuestionRequest:
    """A request for a human answer.

    ``agent`` is the exact live calling agent, ``signal`` the owning step's abort signal,
    ``key`` a resume key the host derives from its own identity for the step (a durable
    relay re-attaches a restarted asker by it); all three are process-local, never on the
    wire, and left out of equality. ``provenance`` says where the request comes from: it
    goes on the wire, but it is about the request, not what the human is asked, so it is
    left out of equality too (and of ``request_digest``). ``assignment`` says who may
    answer it (users and groups) and, for one permission or plan-review question, how many
    of them must approve (:class:`~interaction.Assignment`); it goes on the wire and is
    left out of equality for the same reason.
    """

    questions: Sequence[AskUserQuestionItem]
    agent: Agent | None = field(default=None, compare=False)
    signal: AbortSignal | None = field(default=None, compare=False)
    key: str | None = field(default=None, compare=False)
    provenance: Provenance | None = field(default=None, compare=False)
    assignment: Assignment | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if type(self.questions) is list:
            object.__setattr__(self, "questions", tuple(self.questions))


@_frozen_for_every_name
@dataclass(frozen=True, slots=True)
class AskUserQuestionAnswerItem:
    """The answer to one question: selected option labels and an optional free-text answer.

    An item with no ``selected`` and no ``custom`` is a skipped question.
    """

    id: str
    selected: Sequence[str] = ()
    custom: str | None = None

    def __post_init__(self) -> None:
        if type(self.selected) is list:
            object.__setattr__(self, "selected", tuple(self.selected))


@_frozen_for_every_name
@dataclass(frozen=True, slots=True)
class AskUserQuestionAnswer:
    """The human's answer: one item per question id."""

    answers: Sequence[AskUserQuestionAnswerItem]

    def __post_init__(self) -> None:
        if type(self.answers) is list:
            object.__setattr__(self, "answers", tuple(self.answers))


class UserInteractionProvider(Protocol):
    """UI-side provider: collects a human answer to a request that ``ask()`` has checked."""

    async def ask(self, request: AskUserQuestionRequest, /) -> AskUserQuestionAnswer: ...
