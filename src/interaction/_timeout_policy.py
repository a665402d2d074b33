""":class:`TimeoutPolicy`, what happens when nobody answers, and :func:`timeout_for`."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from ._core import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    ErrorCode,
    PermissionIntent,
    UserInteractionError,
    aborted_error,
)


@dataclass(frozen=True, slots=True)
class TimeoutPolicy:
    """What happens when nobody answers within ``seconds`` (``None``: keep waiting).

    Each question is then answered with the option labelled ``choose`` when it has one,
    else a permission with its deny label; a question answered neither way makes the ask
    fail with ``ASK_TIMEOUT``. ``choose`` never allows a permission (its allow or allow
    always label) unless ``allow`` says so explicitly: without it, the deny label stands.
    A timeout answers its one ask only: a ``choose`` naming the allow always label answers
    with the allow label, so no rule is made for a decision nobody made.
    """

    seconds: float | None
    choose: str | None = None
    allow: bool = False

    def __post_init__(self) -> None:
        seconds = self.seconds
        if seconds is not None and (
            type(seconds) not in (int, float) or not math.isfinite(seconds) or seconds <= 0
        ):
            raise UserInteractionError(
                f"a timeout is a positive number of seconds, got {seconds!r}",
                ErrorCode.BAD_REQUEST,
            )

    def answer(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """The answer this policy gives to ``request``, or ``ASK_TIMEOUT``."""
        items = []
        for question in request.questions:
            label = self._label(question)
            if label is None:
                raise aborted_error(TimeoutError())
            items.append(AskUserQuestionAnswerItem(question.id, (label,)))
        return AskUserQuestionAnswer(items)

    def _label(self, question: AskUserQuestionItem) -> str | None:
        intent = question.intent
        chosen = self.choose
        if chosen is not None and any(option.label == chosen for option in question.options):
            if not isinstance(intent, PermissionIntent):
                return chosen
            if chosen == intent.allow_always:
                return intent.allow if self.allow else intent.deny
            if self.allow or chosen != intent.allow:
                return chosen
        return intent.deny if isinstance(intent, PermissionIntent) else None


_TIMEOUT: ContextVar[TimeoutPolicy | None] = ContextVar("interaction_timeout", default=None)


def timeout_override() -> TimeoutPolicy | None:
    """The policy :func:`timeout_for` set for the asks of this context, if any."""
    return _TIMEOUT.get()


@contextlib.contextmanager
def timeout_for(policy: TimeoutPolicy) -> Iterator[None]:
    """Use ``policy`` for the asks made inside the block, instead of the provider's."""
    token = _TIMEOUT.set(policy)
    try:
        yield
    finally:
        _TIMEOUT.reset(token)
