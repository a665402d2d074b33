"""The vocabulary: frozen dataclasses for questions, requests and answers, and the provider seam."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol, TypeAlias

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
    """Store a list or tuple as a tuple; leave anything else for validation to name."""
    if isinstance(value, list | tuple):
        return tuple(value)
    return value


def _freeze(value: object) -> object:
    if isinstance(value, Mapping):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


def _thaw(value: object) -> object:
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class AskUserQuestionOption:
    """One selectable answer; ``label`` is both what the user sees and the selected value."""

    label: str
    description: str | None = None


@dataclass(frozen=True, slots=True)
class PlanReviewIntent:
    """The question reviews the plan in its ``detail``; ``approve`` names the approving option."""

    approve: str
    kind: ClassVar[Literal["plan-review"]] = "plan-review"


@dataclass(frozen=True, slots=True)
class UnknownIntent:
    """An intent tag this version does not know, kept verbatim so it round-trips.

    ``fields`` holds every wire field but ``kind``, frozen. UIs render the generic flow.
    """

    kind: str
    fields: Mapping[str, JSONValue] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", _freeze(self.fields))

    def __hash__(self) -> int:
        import json  # only unknown intents need it: kept off the import path

        return hash((self.kind, json.dumps(_thaw(self.fields), sort_keys=True, default=repr)))


AskUserQuestionIntent: TypeAlias = PlanReviewIntent | UnknownIntent
"""A caller-declared presentation intent; it shapes presentation only, never the answer."""


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


@dataclass(frozen=True, slots=True)
class AskUserQuestionRequest:
    """A request for a human answer.

    ``agent`` is the exact live calling agent, ``signal`` the owning step's abort signal;
    both are process-local, never on the wire, and left out of equality.
    """

    questions: Sequence[AskUserQuestionItem]
    agent: Agent | None = field(default=None, compare=False)
    signal: AbortSignal | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "questions", _as_tuple(self.questions))


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


@dataclass(frozen=True, slots=True)
class AskUserQuestionAnswer:
    """The human's answer: one item per question id."""

    answers: Sequence[AskUserQuestionAnswerItem]

    def __post_init__(self) -> None:
        object.__setattr__(self, "answers", _as_tuple(self.answers))


class UserInteractionProvider(Protocol):
    """UI-side provider: collects a human answer to a request that ``ask()`` has checked."""

    async def ask(self, request: AskUserQuestionRequest, /) -> AskUserQuestionAnswer: ...
