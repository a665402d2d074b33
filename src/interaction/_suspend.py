"""Suspended and resumed asks: a provider that cannot wait, and the replay that resumes it.

Some hosts cannot keep a coroutine waiting for a human. An MCP server on the 2026-07-28
protocol answers the tool call with an input-required result and is called again later; a
LangGraph node raises an interrupt and is re-run from its top. Both need the same two
things from the core:

- a provider **suspends** an ask by raising :class:`AskSuspended`, which ``ask()`` lets pass
  (or, when it carries the host's own control-flow exception, raises that instead);
- the host **resumes** by re-running the code that asked inside :func:`resume`, which
  hands the stored answers to the asks in order, each only if its request has the digest
  of the one that was suspended.

The resumption lives in a context variable, beside its setter and getter, so it is seen
by the code that asks and by every context copied from it, and by nothing else.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final

from ._errors import (
    MISMATCH_MESSAGE,
    SUSPENDED_MESSAGE,
    ErrorCode,
    HarnessError,
    UserInteractionError,
    type_name,
)
from ._request_checks import check_questions
from ._types import (
    AskUserQuestionAnswer,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    PermissionIntent,
    PlanReviewIntent,
    UnknownIntent,
    thaw,
)

__all__ = [
    "AskSuspended",
    "ResumedAnswer",
    "Resumption",
    "current_resumption",
    "request_digest",
    "resume",
    "take_resumed",
]

NESTED_MESSAGE: Final = "interaction.resume() is already active in this context"


class AskSuspended(HarnessError):
    """Raised by a provider that cannot wait for the human: the host resumes the ask later.

    ``ask()`` lets it pass unchanged, never as ``PROVIDER_FAILED``; ``run_tool`` and the
    helpers re-raise it rather than render it, since it is for the host, not the model.
    When ``control`` is set (the host's own control-flow exception, such as LangGraph's
    ``GraphInterrupt``), ``ask()`` raises ``control`` instead, so the host sees its own.
    """

    request: AskUserQuestionRequest
    digest: str
    control: BaseException | None

    def __init__(
        self,
        request: AskUserQuestionRequest,
        *,
        control: BaseException | None = None,
        message: str = SUSPENDED_MESSAGE,
    ) -> None:
        if control is not None and not isinstance(control, BaseException):
            raise TypeError(f"control must be an exception, got {type_name(control)}")
        super().__init__(message, ErrorCode.ASK_SUSPENDED)
        self.request = request
        self.digest = request_digest(request)
        self.control = control

    def __reduce__(self) -> tuple[object, ...]:
        # What is process-local may not pickle (a control exception, the request's agent
        # and signal, which hold locks); the questions, the key, the provenance and the
        # message do.
        request = AskUserQuestionRequest(
            self.request.questions, key=self.request.key, provenance=self.request.provenance
        )
        return (_rebuild, (request, self.message))


def _rebuild(request: AskUserQuestionRequest, message: str) -> AskSuspended:
    return AskSuspended(request, message=message)


def _plain_item(item: AskUserQuestionItem) -> dict[str, object]:
    intent = item.intent
    plain_intent: dict[str, object] | None
    if isinstance(intent, PlanReviewIntent):
        plain_intent = {"kind": intent.kind, "approve": intent.approve}
    elif isinstance(intent, PermissionIntent):
        plain_intent = {
            "kind": intent.kind,
            "tool": intent.tool,
            "summary": intent.summary,
            "allow": intent.allow,
            "allow_always": intent.allow_always,
            "deny": intent.deny,
        }
    elif isinstance(intent, UnknownIntent):
        plain_intent = {"kind": intent.kind, "fields": thaw(intent.fields)}
    else:
        plain_intent = None
    return {
        "id": item.id,
        "question": item.question,
        "detail": item.detail,
        "header": item.header,
        "options": [[option.label, option.description] for option in item.options],
        "multi_select": item.multi_select,
        "intent": plain_intent,
    }


def request_digest(request: AskUserQuestionRequest) -> str:
    """A stable hex SHA-256 of what the human is asked, the same in every process.

    Covers every field of every question; ``agent``, ``signal``, ``key`` and ``provenance``
    are left out, as they are from equality: provenance says who asked and when, and a host
    that re-runs the code that asked (a LangGraph node, a resumed MCP call) asks the same
    question at a new ``asked_at``. A malformed request is ``BAD_REQUEST``.
    """
    if type(request) is not AskUserQuestionRequest or type(request.questions) is not tuple:
        raise UserInteractionError(
            "request: expected an AskUserQuestionRequest with a tuple of questions",
            ErrorCode.BAD_REQUEST,
            path="request",
        )
    # Imported here: json and hashlib (OpenSSL) would add ~40% to `import interaction`,
    # and only hosts that suspend ever need a digest.
    import hashlib
    import json

    check_questions(request.questions)
    plain = [_plain_item(item) for item in request.questions]
    text = json.dumps(plain, ensure_ascii=True, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


@dataclass(frozen=True, slots=True)
class ResumedAnswer:
    """The answer collected for a suspended request, known by the request's digest."""

    digest: str
    answer: AskUserQuestionAnswer


class Resumption:
    """The stored answers of one :func:`resume`, handed out in the order asks arrive."""

    __slots__ = ("_answers", "_lock", "_next")

    def __init__(self, answers: tuple[ResumedAnswer, ...]) -> None:
        self._answers = answers
        self._next = 0
        self._lock = threading.Lock()

    @property
    def consumed(self) -> int:
        """How many stored answers the asks have taken so far."""
        return self._next

    @property
    def remaining(self) -> int:
        """How many stored answers are still waiting for their ask."""
        return len(self._answers) - self._next

    def _take(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer | None:
        with self._lock:
            if self._next >= len(self._answers):
                return None
            stored = self._answers[self._next]
            self._next += 1
        if stored.digest != request_digest(request):
            raise UserInteractionError(MISMATCH_MESSAGE, ErrorCode.BAD_ANSWER)
        return stored.answer


_resumption_var: Final[contextvars.ContextVar[Resumption | None]] = contextvars.ContextVar(
    "interaction_resumption", default=None
)


@contextmanager
def resume(answers: Iterable[ResumedAnswer]) -> Iterator[Resumption]:
    """Replay stored answers: the n-th ``ask()`` in the body gets the n-th of ``answers``.

    Each ask is checked as usual first, then its request's digest must be the stored one
    (else ``BAD_ANSWER``, "the resumed question is not the one that was asked"), then the
    stored answer goes through ``check_answer``; the provider is never reached. Asks past
    the stored answers go to the provider as usual. Concurrent asks take answers in the
    order they call ``ask()``. ``ValueError`` if a resumption is already active here.
    """
    stored = tuple(answers)
    for entry in stored:
        if type(entry) is not ResumedAnswer:
            raise TypeError(f"resume() takes ResumedAnswer items, got {type_name(entry)}")
    if _resumption_var.get() is not None:
        raise ValueError(NESTED_MESSAGE)
    resumption = Resumption(stored)
    token = _resumption_var.set(resumption)
    try:
        yield resumption
    finally:
        _resumption_var.reset(token)


current_resumption: Final = _resumption_var.get
"""The resumption active in this context, or ``None`` (the variable's ``get``)."""


def take_resumed(request: AskUserQuestionRequest) -> AskUserQuestionAnswer | None:
    """The stored answer for this ask when a resumption is active and has one left."""
    resumption = _resumption_var.get()
    if resumption is None:
        return None
    return resumption._take(request)
