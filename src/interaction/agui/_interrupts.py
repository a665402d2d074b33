"""AG-UI 1.0 interrupts: a run's ask ends the run, the next run's ``resume`` answers it.

An AG-UI frontend answers a question by starting a new run, so an ask cannot wait inside
the run that made it. :class:`AGUIProvider` is the provider of one run: its
:meth:`~AGUIProvider.run` runs the agent's step under ``interaction.resume()`` with the
answers so far; the step's first new ask suspends, and the run ends with
``RUN_FINISHED {outcome: {type: "interrupt", interrupts: [one]}}``. The interrupt's ``id``
is the state (the answers so far and the digest of the pending question), signed with
HMAC-SHA256 under a key derived from the deployment's secret and redeemed at most once
through a :class:`~interaction.spent.SpentStateStore`, as the MCP bridge's
``request_state`` is: a process with the same secret and store resumes it after a
restart. The next run's resume entry for that id is checked like every answer.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import math
import os
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Final, TypeAlias

from ag_ui.core import (
    Interrupt,
    ResumeEntry,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
)

from .._core import (
    MISMATCH_MESSAGE,
    AskSuspended,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    PermissionIntent,
    PlanReviewIntent,
    Provenance,
    ResumedAnswer,
    UserInteractionError,
    answer_item,
    cancelled_error,
    check_answer,
    fault,
    request_digest,
    resume,
    with_provider,
)
from ..display import present
from ..spent import MemorySpentStore, SpentStateStore, SpentStoreUnavailable
from ..web._json import as_typed
from ..wire import answer_schema, decode_answer, encode_answer, encode_request
from ._limits import MAX_INTERRUPT_ID, MAX_PAYLOAD, MAX_RESUME_ENTRIES

__all__ = [
    "DATA_KEY",
    "DEFAULT_TTL",
    "AGUIInterrupts",
    "AGUIProvider",
    "RunEnd",
    "interrupt_reason",
]

logger = logging.getLogger("interaction.agui")

RunEnd: TypeAlias = RunFinishedEvent | RunErrorEvent
"""The event that ends a run: ``RUN_FINISHED`` (a result, an interrupt, a cancellation) or
``RUN_ERROR``."""

DATA_KEY: Final = "interaction"
"""The key of an interrupt's ``metadata`` that holds the question: ``request`` (the wire
form, provenance included), ``view`` (the display model) and, when the previous answer
was refused, ``error``."""
DEFAULT_TTL: Final = 86_400.0
"""Seconds an interrupt stays answerable."""
MIN_SECRET: Final = 32
STATE_VERSION: Final = 1

FORGED: Final = "the interrupt id is not one this endpoint issued"
OTHER_THREAD: Final = "the interrupt belongs to another thread"
SPENT: Final = "the interrupt was already answered; start a new run without resume"
EXPIRED: Final = "the interrupt expired before its answer came"
UNCHECKED: Final = "the interrupt could not be checked against the spent-state store"
NO_PAYLOAD: Final = "a resolved interrupt needs a payload: the answer"
STEP_FAILED: Final = "the agent step failed; see the server's log"
NOT_JSON: Final = "the agent step's result is not JSON"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True, slots=True)
class _State:
    """What an interrupt id holds: the answers so far and the pending question's digest."""

    answers: tuple[ResumedAnswer, ...]
    pending: str


class AGUIInterrupts:
    """Signs the interrupts of a deployment and redeems each at most once.

    ``secret`` (at least 32 bytes; a ``str`` is taken as UTF-8) is the deployment's one
    secret, by default one made now and held only by this process. ``ttl`` is how long
    an interrupt stays answerable. ``store`` keeps the nonces of answered interrupts: by
    default in this process (:class:`~interaction.spent.MemorySpentStore`); a deployment
    that restarts between runs, or runs several workers, shares one
    (:class:`~interaction.redis.RedisSpentStore`) and the secret.
    """

    def __init__(
        self,
        secret: bytes | str | None = None,
        *,
        ttl: float = DEFAULT_TTL,
        store: SpentStateStore | None = None,
    ) -> None:
        if not (math.isfinite(ttl) and ttl > 0):
            raise ValueError("the interrupt ttl must be a positive number of seconds")
        if secret is None:
            raw = os.urandom(32)
        else:
            raw = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)
            if len(raw) < MIN_SECRET:
                raise ValueError(f"the interrupt secret must be at least {MIN_SECRET} bytes")
        self._key = hmac.new(raw, b"interaction.agui/interrupt", hashlib.sha256).digest()
        self.ttl = ttl
        self.store: SpentStateStore = store if store is not None else MemorySpentStore()

    def _sign(self, body: bytes) -> str:
        return _b64(hmac.new(self._key, body, hashlib.sha256).digest())

    def seal(self, thread_id: str, state: _State) -> tuple[str, float]:
        """The interrupt id holding ``state`` for ``thread_id``, and when it expires."""
        expires = time.time() + self.ttl
        plain = {
            "v": STATE_VERSION,
            "n": secrets.token_hex(16),
            "exp": expires,
            "th": thread_id,
            "a": [[entry.digest, encode_answer(entry.answer)] for entry in state.answers],
            "p": state.pending,
        }
        body = json.dumps(plain, separators=(",", ":"), ensure_ascii=True).encode("ascii")
        return f"{_b64(body)}.{self._sign(body)}", expires

    async def open(self, thread_id: str, interrupt_id: str) -> _State:
        """The state of an interrupt id this deployment issued for ``thread_id``, now spent.

        ``BAD_REQUEST`` for an id too long, forged, altered, of another thread or already
        answered; ``ASK_TIMEOUT`` for an expired one; ``PROVIDER_FAILED`` when the store
        cannot record it (it is then refused, never redeemed).
        """
        path = "resume[0].interruptId"
        if len(interrupt_id) > MAX_INTERRUPT_ID:
            raise fault(ErrorCode.BAD_REQUEST, path, f"longer than {MAX_INTERRUPT_ID} characters")
        forged = UserInteractionError(FORGED, ErrorCode.BAD_REQUEST, path=path)
        encoded, dot, signature = interrupt_id.partition(".")
        if not dot or not interrupt_id.isascii():
            raise forged
        try:
            body = _unb64(encoded)
        except (ValueError, binascii.Error):
            raise forged from None
        if not hmac.compare_digest(self._sign(body), signature):
            raise forged
        plain = json.loads(body)  # signed by this deployment: its own shape
        if plain["v"] != STATE_VERSION:
            raise forged
        if plain["th"] != thread_id:
            raise UserInteractionError(OTHER_THREAD, ErrorCode.BAD_REQUEST, path=path)
        expires = float(plain["exp"])
        if not time.time() < expires:
            raise UserInteractionError(EXPIRED, ErrorCode.ASK_TIMEOUT, path=path)
        try:
            fresh = await self.store.spend(str(plain["n"]), expires)
        except SpentStoreUnavailable as exc:
            raise UserInteractionError(f"{UNCHECKED}: {exc}", ErrorCode.PROVIDER_FAILED) from None
        except Exception as exc:
            message = f"{UNCHECKED}: {type(exc).__name__}"
            raise UserInteractionError(message, ErrorCode.PROVIDER_FAILED) from None
        if not fresh:
            raise UserInteractionError(SPENT, ErrorCode.BAD_REQUEST, path=path)
        answers = tuple(
            ResumedAnswer(str(digest), decode_answer(answer)) for digest, answer in plain["a"]
        )
        return _State(answers, str(plain["p"]))


def interrupt_reason(request: AskUserQuestionRequest) -> str:
    """The interrupt's ``reason``, naming the request's intent: ``human_approval`` for a
    permission, ``plan_review`` for a plan review, ``input_required`` otherwise."""
    intents = [question.intent for question in request.questions]
    if any(isinstance(intent, PermissionIntent) for intent in intents):
        return "human_approval"
    if any(isinstance(intent, PlanReviewIntent) for intent in intents):
        return "plan_review"
    return "input_required"


def _payload_answer(request: AskUserQuestionRequest, payload: object) -> AskUserQuestionAnswer:
    """The answer a resolved entry's payload gives (``BAD_ANSWER`` if it does not fit).

    The payload is the wire answer (``{"answers": [...]}``) or, to a single question,
    the text the person typed or the label they chose.
    """
    if payload is None:
        raise UserInteractionError(NO_PAYLOAD, ErrorCode.BAD_ANSWER, path="resume[0].payload")
    size = len(json.dumps(payload, separators=(",", ":"), ensure_ascii=False))
    if size > MAX_PAYLOAD:
        raise fault(
            ErrorCode.BAD_ANSWER,
            "resume[0].payload",
            f"{size} characters of JSON; at most {MAX_PAYLOAD} are read",
        )
    if isinstance(payload, str):
        if len(request.questions) != 1:
            raise fault(
                ErrorCode.BAD_ANSWER,
                "resume[0].payload",
                f"the question is a batch of {len(request.questions)}: answer with"
                ' {"answers": [...]}',
            )
        item = answer_item(request.questions[0], text=payload)
        return check_answer(request, AskUserQuestionAnswer([item]))
    return check_answer(request, as_typed(request, decode_answer(payload, request)))


class AGUIProvider:
    """The provider of one AG-UI run: each ask ends the run with an interrupt.

    ``run_input`` is the run's ``RunAgentInput``; ``interrupts`` signs and redeems the
    interrupts (share one per deployment). :meth:`run` runs the agent's step and gives the
    event that ends the run. The step's asks, in order, take the answers given in earlier
    runs of the thread, then the answer of this run's resume entry; the next ask suspends
    the step and the run ends with its interrupt. A host that streams its own events
    (text messages, tool calls) sends them as usual and ends the run with the event
    :meth:`run` returns. Keep the work before each ask free of side effects: it runs again
    on every resume.
    """

    def __init__(self, run_input: RunAgentInput, interrupts: AGUIInterrupts) -> None:
        self.input = run_input
        self.interrupts = interrupts
        self._reply: tuple[str, ResumeEntry] | None = None
        self._taken: ResumedAnswer | None = None
        self._refusal: UserInteractionError | None = None

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        reply, self._reply = self._reply, None
        if reply is None:
            raise AskSuspended(request)
        digest, entry = reply
        if digest != request_digest(request):  # the step changed its question
            raise UserInteractionError(MISMATCH_MESSAGE, ErrorCode.BAD_ANSWER)
        if entry.status == "cancelled":
            raise cancelled_error()
        try:
            answer = _payload_answer(request, entry.payload)
        except UserInteractionError as error:
            self._refusal = error  # the same question again, with why
            raise AskSuspended(request) from None
        self._taken = ResumedAnswer(digest, answer)
        return answer

    async def run(self, step: Callable[[], Awaitable[object]]) -> RunEnd:
        """Run ``step()`` with this provider active; the event that ends the run.

        ``RUN_FINISHED`` with the step's result (any JSON value); with an interrupt
        outcome when it asked; with a cancelled outcome when the person cancelled the
        pending interrupt and the step let ``ASK_CANCELLED`` through. ``RUN_ERROR`` (code
        and message of the error) when the resume entry is refused (the step does not run
        then) or the step raised a ``UserInteractionError``; ``INTERNAL_ERROR`` when it
        raised anything else (logged).
        """
        try:
            state = await self._open()
        except UserInteractionError as error:
            return self._error(error.code, error.message)
        answers = () if state is None else state.answers

        async def under_resume() -> object:
            with resume(answers):
                return await step()

        try:
            result = await with_provider(self, under_resume)
        except AskSuspended as suspended:
            taken = () if self._taken is None else (self._taken,)
            return self._interrupted(suspended.request, (*answers, *taken))
        except UserInteractionError as error:
            if error.code == ErrorCode.ASK_CANCELLED:
                return self._finished(outcome=RunFinishedCancelledOutcome())
            return self._error(error.code, error.message)
        except Exception:
            logger.exception("the AG-UI step of thread %r failed", self.input.thread_id)
            return self._error("INTERNAL_ERROR", STEP_FAILED)
        try:
            json.dumps(result, allow_nan=False)
        except (TypeError, ValueError):
            return self._error("INTERNAL_ERROR", NOT_JSON)
        return self._finished(result=result)

    async def _open(self) -> _State | None:
        entries = self.input.resume or []
        if not entries:
            return None
        if len(entries) > MAX_RESUME_ENTRIES:
            raise fault(
                ErrorCode.BAD_REQUEST,
                "resume",
                f"{len(entries)} entries; a run of this agent ends with one interrupt",
            )
        entry = entries[0]
        state = await self.interrupts.open(self.input.thread_id, entry.interrupt_id)
        self._reply = (state.pending, entry)
        return state

    def _interrupted(
        self, request: AskUserQuestionRequest, answers: tuple[ResumedAnswer, ...]
    ) -> RunFinishedEvent:
        now = time.time()
        given = request.provenance or Provenance()
        request = replace(
            request,
            provenance=replace(
                given,
                session=given.session or self.input.thread_id,
                asked_at=given.asked_at or datetime.fromtimestamp(now, UTC),
            ),
        )
        token, expires = self.interrupts.seal(
            self.input.thread_id, _State(answers, request_digest(request))
        )
        view = present(request)
        data: dict[str, object] = {"request": encode_request(request), "view": view.to_json()}
        if self._refusal is not None:
            data["error"] = {"code": self._refusal.code, "message": self._refusal.message}
        questions = view.questions
        message = (
            questions[0].question
            if len(questions) == 1
            else f"{len(questions)} questions: " + "; ".join(q.question for q in questions)
        )
        interrupt = Interrupt(
            id=token,
            reason=interrupt_reason(request),
            message=message,
            response_schema=answer_schema(),
            expires_at=datetime.fromtimestamp(expires, UTC).isoformat(),
            metadata={DATA_KEY: data},
        )
        return self._finished(outcome=RunFinishedInterruptOutcome(interrupts=[interrupt]))

    def _finished(
        self,
        *,
        result: object = None,
        outcome: RunFinishedInterruptOutcome | RunFinishedCancelledOutcome | None = None,
    ) -> RunFinishedEvent:
        return RunFinishedEvent(
            thread_id=self.input.thread_id,
            run_id=self.input.run_id,
            result=result,
            outcome=outcome,
        )

    def _error(self, code: str, message: str) -> RunErrorEvent:
        return RunErrorEvent(message=message, code=code)
