"""Answering and dismissing a question: the page's two routes, and the same answer taken
in another channel (a Slack or Telegram click) under a named user's name.

Every answer, wherever it comes from, goes through :meth:`Answers._answer`: the question
as asked (from what a stream showed, else the relay), the body read within its bound and
decoded against it, the assignment checked, the relay's claim, and the quorum's progress.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from typing import Final

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from .._core import (
    Approval,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    not_assigned_error,
    quorum_progress,
)
from .._shared_relay import SharedRelay
from ..relay import NOT_PENDING, PendingQuestion, RelayBackend, RelayEvent, not_pending_error
from ..wire import decode_answer, encode_answer, encode_approvals
from ._access import Access
from ._guard import _user
from ._json import ANSWER_JSON, _error, _is_json, as_typed, status_of

__all__ = ["MAX_BODY", "OUTCOMES_KEPT", "REQUESTS_KEPT", "Answers", "PageDesk", "QuestionMemory"]

MAX_BODY: Final = 1 << 20
"""The largest answer read, in bytes."""
OUTCOMES_KEPT: Final = 10_000
"""How many settled question ids the app remembers, to say why a late claim is refused."""
REQUESTS_KEPT: Final = 1_000
"""How many requests of questions its streams showed the app keeps, to check an answer
without asking a shared relay's store for the question again."""

_WHY: Final = {
    "answered": "was already answered (in another tab or client)",
    "cancelled": "was already dismissed (in another tab or client)",
}


@dataclass(frozen=True, slots=True)
class Refusal:
    """A claim refused: its status, error code and message, and for a question that is
    not pending, how it settled when this app saw it happen (``outcome``)."""

    status: int
    code: str
    message: str
    outcome: str | None = None

    def response(self) -> JSONResponse:
        extra = {} if self.outcome is None else {"outcome": self.outcome}
        return _error(self.status, self.code, self.message, **extra)


@dataclass(frozen=True, slots=True)
class _Waiting:
    """An approval short of the quorum: recorded, and the question waits on."""

    quorum: int
    approvals: tuple[Approval, ...]


class QuestionMemory:
    """What the app remembers of the questions it served: how recent ones settled (seen
    by a stream or done here), to say why a late claim is refused, and, over a shared
    relay (``keeps_requests``), the requests its streams showed, to check the page's
    answer without a trip to the relay's store."""

    def __init__(self, keeps_requests: bool) -> None:
        self.keeps_requests = keeps_requests
        self.outcomes: OrderedDict[str, str] = OrderedDict()
        self.requests: OrderedDict[str, AskUserQuestionRequest] = OrderedDict()

    def remember(self, question_id: str, outcome: str) -> None:
        """Keep how a question settled (seen by a stream or done here), to tell late claims."""
        self.outcomes[question_id] = outcome
        self.outcomes.move_to_end(question_id)
        while len(self.outcomes) > OUTCOMES_KEPT:
            self.outcomes.popitem(last=False)
        self.requests.pop(question_id, None)

    def learn(self, event: RelayEvent) -> None:
        """Take what a stream's event tells: a question shown, or how one settled."""
        if event.kind == "resolved" and event.outcome is not None:
            self.remember(event.id, event.outcome)
        elif event.question is not None:
            self.shown(event.question)

    def shown(self, question: PendingQuestion) -> None:
        """Keep the request of a question a stream showed: the page's answer to it comes
        next, and is checked against it without a trip to the relay's store."""
        if not self.keeps_requests:
            return
        if question.id in self.outcomes:  # settled: a stream behind the others shows it late
            return
        self.requests[question.id] = question.request
        if len(self.requests) > REQUESTS_KEPT:
            self.requests.popitem(last=False)

    def refusal(self, question_id: str, error: UserInteractionError) -> Refusal:
        """The refusal of a claim that failed with ``error``; for a question that is not
        pending, a 409 in the relay's words, or what this app saw happen to it (answered
        or dismissed here, or on a stream)."""
        if error.code != NOT_PENDING:
            return Refusal(status_of(error.code), error.code, error.message)
        outcome = self.outcomes.get(question_id)
        if outcome == "aborted":  # the relay's one wording, whatever the backend
            message = not_pending_error(question_id, withdrawn=True).message
            return Refusal(409, NOT_PENDING, message, outcome)
        if outcome is not None:
            return Refusal(409, NOT_PENDING, f"question {question_id!r} {_WHY[outcome]}", outcome)
        return Refusal(409, NOT_PENDING, error.message)


async def _read_text(chunks: AsyncIterable[bytes]) -> str:
    """The body as text for the wire to parse: UTF-8 only (``json.loads`` would also
    take UTF-16 and UTF-32 bytes), at most ``MAX_BODY`` bytes."""
    body = bytearray()
    try:
        async for chunk in chunks:
            body += chunk
            if len(body) > MAX_BODY:
                raise UserInteractionError("the answer is too large", ErrorCode.BAD_ANSWER)
    except ClientDisconnect:  # it left, or its request timed out: nobody reads a reply
        message = "answer: the client left before the answer arrived"
        raise UserInteractionError(message, ErrorCode.BAD_ANSWER) from None
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        raise UserInteractionError("answer: not valid UTF-8", ErrorCode.BAD_ANSWER) from None


async def _one(body: bytes) -> AsyncIterator[bytes]:
    yield body


class Answers:
    """The answer and cancel routes over ``relay``, under ``access``'s checks, and
    :meth:`answer_as` for an answer taken in another channel."""

    def __init__(self, relay: RelayBackend, access: Access, memory: QuestionMemory) -> None:
        self.relay = relay
        self.access = access
        self.memory = memory
        self._heard = None
        if isinstance(relay, SharedRelay):  # from the start: it checks answers against them
            relay.hear_every_question()
            self._heard = relay.heard_request

    def _known(self, question_id: str) -> AskUserQuestionRequest | None:
        """The request of a question a stream here showed, or a shared relay's tail heard
        asked, neither seen settled since; None: look it up."""
        asked = self.memory.requests.get(question_id)
        if asked is None and self._heard is not None:
            asked = self._heard(question_id)
        return asked

    async def answer(self, request: Request) -> Response:
        """``POST /api/questions/{id}/answer``: the answer (200), or the approvals so far
        of a quorum still short (202), or the refusal."""
        question_id = request.path_params["id"]
        media = request.headers.get("content-type")
        if media is not None and media != "application/json" and not _is_json(media):
            message = "an answer is sent as application/json (UTF-8)"
            return _error(415, "UNSUPPORTED_MEDIA_TYPE", message)
        try:
            taken = await self._answer(question_id, request.stream(), _user(request))
        except UserInteractionError as error:
            return self.memory.refusal(question_id, error).response()
        if isinstance(taken, _Waiting):
            approvals = encode_approvals(taken.approvals)
            return JSONResponse(
                {"pending": True, "quorum": taken.quorum, "approvals": approvals}, status_code=202
            )
        body = ANSWER_JSON.encode(encode_answer(taken)).encode()
        return Response(body, media_type="application/json")

    async def answer_as(
        self, question_id: str, body: bytes, user: str | None
    ) -> tuple[int, str, str]:
        """The page's own answer, for an answer taken elsewhere (a Slack click) under
        ``user``'s name: every check it makes applies unchanged. Its status, and its
        error's code and message (``""`` on success); ``202`` with ``"1 of 2 approved:
        alice"`` for an approval short of a quorum."""
        try:
            taken = await self._answer(question_id, _one(body), user)
        except UserInteractionError as error:
            refusal = self.memory.refusal(question_id, error)
            return refusal.status, refusal.code, refusal.message
        if isinstance(taken, _Waiting):
            return 202, "", quorum_progress(taken.approvals, taken.quorum)
        return 200, "", ""

    async def _answer(
        self, question_id: str, body: AsyncIterable[bytes], user: str | None
    ) -> AskUserQuestionAnswer | _Waiting:
        """The answer in ``body`` to ``question_id``, by ``user``: the answer the relay
        took, or the approvals so far of a quorum still short; ``UserInteractionError``
        when it is refused (the body is read only once the question is found)."""
        # The request a stream showed (or the relay's tail heard) saves a trip to the
        # store; one settled since then is refused by the relay's claim below, as one
        # settled after a lookup would be.
        asked = self._known(question_id)
        seen = asked is not None
        if asked is None:
            question = await self.relay.lookup(question_id)
            if question is None:
                raise await self._why_not_pending(question_id)
            asked = question.request
        try:
            decoded = decode_answer(await _read_text(body), asked)
        except UserInteractionError:
            if seen and await self.relay.lookup(question_id) is None:  # settled since
                raise await self._why_not_pending(question_id) from None
            raise
        typed = as_typed(asked, decoded)
        if not self.access.may_settle(user, asked):
            raise not_assigned_error(question_id, user)
        checked = await self.relay.submit(question_id, typed, answerer=user)
        quorum = None if asked.assignment is None else asked.assignment.quorum
        if quorum is not None and (still := await self.relay.lookup(question_id)):
            return _Waiting(quorum, still.approvals)
        self.memory.remember(question_id, "answered")
        return checked

    async def cancel(self, request: Request) -> Response:
        """``POST /api/questions/{id}/cancel``: the question dismissed (204), or the refusal."""
        question_id = request.path_params["id"]
        user = _user(request)
        try:
            if self.access.default_assignment is not None:  # the relay knows the request's own
                asked = self._known(question_id)
                if asked is None and (question := await self.relay.lookup(question_id)):
                    asked = question.request
                if asked is not None and not self.access.may_settle(user, asked):
                    raise not_assigned_error(question_id, user)
            await self.relay.dismiss(question_id, answerer=user)
        except UserInteractionError as error:
            return self.memory.refusal(question_id, error).response()
        self.memory.remember(question_id, "cancelled")
        return Response(status_code=204)

    async def _why_not_pending(self, question_id: str) -> UserInteractionError:
        """The relay's ``NOT_PENDING`` error for a question its lookup did not find.

        A claim with no answer (``None``) asks it: every backend says why a question is
        not pending in its own words, and ``None`` can settle nothing (``BAD_ANSWER``).
        """
        try:
            await self.relay.submit(question_id, None)
        except UserInteractionError as error:
            if error.code == NOT_PENDING:
                return error
        return not_pending_error(question_id)


class PageDesk:
    """What the other channels (Slack, Telegram) may do here: read a question as it
    waits, and answer it through :meth:`Answers.answer_as` (an ``AnswerDesk``)."""

    def __init__(self, relay: RelayBackend, answers: Answers) -> None:
        self._relay = relay
        self._answers = answers

    async def request_of(self, question_id: str) -> AskUserQuestionRequest | None:
        question = await self._relay.lookup(question_id)
        return None if question is None else question.request

    async def answer(
        self, question_id: str, answer: AskUserQuestionAnswer, user: str | None
    ) -> tuple[int, str, str]:
        body = ANSWER_JSON.encode(encode_answer(answer)).encode()
        return await self._answers.answer_as(question_id, body, user)
