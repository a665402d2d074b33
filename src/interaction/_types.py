"""The vocabulary: frozen dataclasses for questions, requests and answers, and the provider seam."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import FrozenInstanceError, dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar, Final, Literal, Protocol, TypeAlias, TypeVar

from ._errors import ErrorCode, UserInteractionError, fault

if TYPE_CHECKING:
    from ._abort import AbortSignal
    from ._agents import Agent

__all__ = [
    "AskUserQuestionAnswer",
    "AskUserQuestionAnswerItem",
    "AskUserQuestionIntent",
    "AskUserQuestionItem",
    "AskUserQuestionOption",
    "AskUserQuestionRequest",
    "JSONValue",
    "PlanReviewIntent",
    "UnknownIntent",
    "UserInteractionProvider",
]

JSONValue: TypeAlias = (
    "str | int | float | bool | Sequence[JSONValue] | Mapping[str, JSONValue] | None"
)
"""A JSON value as the wire carries it (frozen: arrays are tuples, objects read-only)."""


def _as_tuple(value: object) -> object:
    """Store a list or tuple as a tuple; leave anything else for validation to name.

    Subclasses are left too: one may override ``__iter__`` to lie or raise.
    """
    if type(value) is list or type(value) is tuple:
        return tuple(value)
    return value


MAX_INTENT_DEPTH: Final = 64
"""How deeply an unknown intent's fields may nest arrays and objects."""


def _bad_intent_field(path: str, problem: str) -> UserInteractionError:
    return fault(ErrorCode.BAD_INTENT, path, problem)


def _freeze(value: object, path: str = "intent", depth: int = 0) -> object:
    """A read-only copy of a JSON value; ``BAD_INTENT`` for anything the wire cannot carry."""
    kind = type(value)
    if kind is str or kind is bool or kind is int or value is None:
        return value
    if kind is float:
        if not math.isfinite(value):  # type: ignore[arg-type]  # float, checked above
            raise _bad_intent_field(path, f"expected a finite number, got {value!r}")
        return value
    if depth >= MAX_INTENT_DEPTH:
        raise _bad_intent_field(path, f"nests more than {MAX_INTENT_DEPTH} levels deep")
    if isinstance(value, Mapping):
        frozen: dict[str, object] = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _bad_intent_field(path, f"expected string keys, got {type(key).__name__}")
            frozen[key] = _freeze(item, f"{path}.{key}", depth + 1)
        return MappingProxyType(frozen)
    if isinstance(value, list | tuple):
        return tuple(_freeze(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value))
    raise _bad_intent_field(path, f"expected a JSON value, got {kind.__name__}")


def _hashable(value: object) -> object:
    """A hashable stand-in that is equal, and hashes equal, exactly when the values are equal."""
    if isinstance(value, Mapping):
        return frozenset((k, _hashable(v)) for k, v in value.items())
    if isinstance(value, tuple):
        return tuple(_hashable(v) for v in value)
    return value


def thaw(value: object) -> object:
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value


_T = TypeVar("_T")


def _frozen(cls: type[_T]) -> type[_T]:
    """Make assignment raise ``FrozenInstanceError`` for every name.

    CPython's frozen ``__setattr__`` of a ``slots=True`` dataclass refers to the class from
    before slots were added, so assigning a name that is not a field raised a confusing
    ``TypeError`` from ``super()`` instead.
    """

    def __setattr__(self: object, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self: object, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    cls.__setattr__ = __setattr__  # type: ignore[method-assign]
    cls.__delattr__ = __delattr__  # type: ignore[method-assign]
    return cls


@_frozen
@dataclass(frozen=True, slots=True)
class AskUserQuestionOption:
    """One selectable answer; ``label`` is both what the user sees and the selected value."""

    label: str
    description: str | None = None


@_frozen
@dataclass(frozen=True, slots=True)
class PlanReviewIntent:
    """The question reviews the plan in its ``detail``; ``approve`` names the approving option."""

    approve: str
    kind: ClassVar[Literal["plan-review"]] = "plan-review"


@_frozen
@dataclass(frozen=True, slots=True)
class UnknownIntent:
    """An intent tag this version does not know, kept verbatim so it round-trips.

    ``fields`` holds every wire field but ``kind``, frozen; its values must be JSON values
    (finite numbers, at most 64 levels deep), else the constructor raises ``BAD_INTENT``.
    UIs render the generic flow.
    """

    kind: str
    fields: Mapping[str, JSONValue] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        fields = self.fields
        if not isinstance(fields, Mapping):
            raise _bad_intent_field(
                "intent.fields", f"expected an object, got {type(fields).__name__}"
            )
        try:
            frozen = _freeze(fields, "intent")
        except UserInteractionError:
            raise
        except Exception as exc:  # a mapping whose items() raises, say
            raise _bad_intent_field(
                "intent.fields", f"could not be read: {type(exc).__name__}"
            ) from None
        object.__setattr__(self, "fields", frozen)

    def __hash__(self) -> int:
        return hash((self.kind, _hashable(self.fields)))

    def __reduce__(self) -> tuple[object, ...]:
        # The read-only mappings cannot be pickled or deep-copied; their plain form can.
        return (UnknownIntent, (self.kind, thaw(self.fields)))


AskUserQuestionIntent: TypeAlias = PlanReviewIntent | UnknownIntent
"""A caller-declared presentation intent; it shapes presentation only, never the answer."""


@_frozen
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
        object.__setattr__(self, "options", _as_tuple(self.options))


@_frozen
@dataclass(frozen=True, slots=True)
class AskUserQuestionRequest:
    """A request for a human answer.

    ``agent`` is the exact live calling agent, ``signal`` the owning step's abort signal,
    ``key`` a resume key the host derives from its own identity for the step (a durable
    relay re-attaches a restarted asker by it); all three are process-local, never on the
    wire, and left out of equality.
    """

    questions: Sequence[AskUserQuestionItem]
    agent: Agent | None = field(default=None, compare=False)
    signal: AbortSignal | None = field(default=None, compare=False)
    key: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "questions", _as_tuple(self.questions))


@_frozen
@dataclass(frozen=True, slots=True)
class AskUserQuestionAnswerItem:
    """The answer to one question: selected option labels and an optional free-text answer.

    An item with no ``selected`` and no ``custom`` is a skipped question.
    """

    id: str
    selected: Sequence[str] = ()
    custom: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "selected", _as_tuple(self.selected))


@_frozen
@dataclass(frozen=True, slots=True)
class AskUserQuestionAnswer:
    """The human's answer: one item per question id."""

    answers: Sequence[AskUserQuestionAnswerItem]

    def __post_init__(self) -> None:
        object.__setattr__(self, "answers", _as_tuple(self.answers))


class UserInteractionProvider(Protocol):
    """UI-side provider: collects a human answer to a request that ``ask()`` has checked."""

    async def ask(self, request: AskUserQuestionRequest, /) -> AskUserQuestionAnswer: ...
