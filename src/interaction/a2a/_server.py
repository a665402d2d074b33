"""Server side: an ``AgentExecutor`` whose work asks, suspending the task for each ask.

Each ``interaction.ask()`` of the work suspends (``AskSuspended``): the task moves to
``input-required`` with the questions, and ``execute`` returns. The client's reply calls
``execute`` again; the work runs again from its top under ``interaction.resume()`` with
the answers so far, so the asks it already made get their answers and the next one
suspends again. The answers so far travel in the task's status message as state signed
with HMAC-SHA256 under a key only the server holds, so a restarted server (with the same
key and a persistent task store) resumes the task too.
"""

from __future__ import annotations

import asyncio
import base64
import contextvars
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Final, TypeAlias

from a2a.helpers.proto_helpers import (
    get_message_text,
    new_data_part,
    new_task_from_user_message,
    new_text_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Message, Role, Task, TaskState

from .._core import (
    MISMATCH_MESSAGE,
    AskSuspended,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    Provenance,
    ResumedAnswer,
    UserInteractionError,
    UserInteractionProvider,
    answer_item,
    check_answer,
    fault,
    provide,
    request_digest,
    resume,
)
from ..decisions import listening, peer_decision, report_decision
from ..wire import decode_answer, decode_request, encode_answer, encode_request
from ._common import DATA_KEY, MAX_REPLY, MAX_REQUEST, payload, render_request, text_field

TaskWork: TypeAlias = Callable[[RequestContext, Message], Awaitable[str]]
"""The agent's work: given the request context and the message that started the task, the
text of its result. It may call ``interaction.ask()`` and the helpers as often as it needs."""
Wrap: TypeAlias = Callable[[UserInteractionProvider], UserInteractionProvider]
"""What puts a provider wrapper (an audit, a policy) around the bridge's own provider."""

DEFAULT_TTL: Final = 86_400.0
"""Seconds a question waits for its reply before the task fails with ``ASK_TIMEOUT``."""

_DOMAIN: Final = b"interaction-a2a-state-v1."
_MIN_KEY: Final = 16
EXPIRED_MESSAGE: Final = "the question expired before the reply came"
NOT_WAITING_MESSAGE: Final = "the task is not waiting for a reply to a question"
_FINISHED: Final = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_REJECTED,
    }
)


class _Suspending:
    """The provider of a task's work: it cannot wait, so every ask suspends the task, but
    the first, which takes the client's reply to the question pending before this run (the
    asks before it took their stored answers from ``resume()``)."""

    def __init__(self, reply: ResumedAnswer | None, caller: str | None) -> None:
        self.reply = reply
        self.caller = caller
        self.taken: ResumedAnswer | None = None

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        reply, self.reply = self.reply, None
        if reply is None:
            raise AskSuspended(request)
        if reply.digest != request_digest(request):
            raise UserInteractionError(MISMATCH_MESSAGE, ErrorCode.BAD_ANSWER)
        self.taken = reply
        if listening():
            report_decision(peer_decision(self.caller))
        return reply.answer


def _caller(context: RequestContext) -> str | None:
    """The caller's name, when the server authenticated it (``ServerCallContext.user``)."""
    user = context.call_context.user
    return user.user_name if user.is_authenticated else None


@dataclass(frozen=True, slots=True)
class _State:
    """A suspended task's pending question and the answers so far.

    ``key`` is the pending ask's resume key, ``<task id>#<n>`` for its n-th ask.
    """

    task_id: str
    context_id: str
    key: str
    request: AskUserQuestionRequest
    answers: tuple[ResumedAnswer, ...]
    expires: float


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _first_user_message(task: Task, fallback: Message) -> Message:
    for message in task.history:
        if message.role == Role.ROLE_USER:
            return message
    return fallback


def _asked_now(
    request: AskUserQuestionRequest, context_id: str, now: float
) -> AskUserQuestionRequest:
    """The request with its provenance's session (the task's context) and time of asking
    filled in where the work left them out; neither counts in its digest."""
    given = request.provenance or Provenance()
    return replace(
        request,
        provenance=replace(
            given,
            session=given.session or context_id,
            asked_at=given.asked_at or datetime.fromtimestamp(now, UTC),
        ),
    )


class InteractiveExecutor(AgentExecutor):
    """An A2A ``AgentExecutor`` running ``work``, whose asks suspend the task for the client.

    ``work(context, message)`` is the agent's work for the task ``message`` started; it
    may ask as usual (``interaction.ask()``, ``confirm()``, …). Each ask moves the task to
    ``input-required`` with an agent message of two parts: a text rendering of the
    questions, for any client, and a data part ``{"interaction": {"request": <wire
    request>, "state": <signed state>}}``. The client replies in the same task with a data
    part ``{"interaction": {"answer": <wire answer>, "state": <the same state>}}`` (or, to
    a single question, with plain text, read as a typed answer). A reply that does not fit
    (``BAD_ANSWER``: a misfit answer, a state this server did not issue, a reply meant
    for another task or an earlier question, more than ``MAX_REPLY`` characters) leaves
    the task ``input-required`` with the same question and the error in the message.
    When the work returns, the task completes with its text; when it raises a
    ``UserInteractionError``, the task fails with its code and message. A message to a
    finished task changes nothing (the SDK refuses one that was not already queued), and
    one to a task that waits for no question of ours fails it with ``BAD_ANSWER``: the
    work never runs again. Each question's provenance gets the task's context as its
    session and the time it was asked, where the work gave none.

    ``key`` signs the state (HMAC-SHA256, at least 16 bytes; a random one per process by
    default): a restarted server resumes its tasks only with the same key and a task
    store that outlives it. ``ttl`` is how long a question waits for its reply.
    Keep the work before each ask free of side effects: it runs again on every reply.

    ``wrap`` puts a provider wrapper around the bridge's own provider for every run of the
    work, e.g. ``lambda bridge: AuditProvider(bridge, log)``: the audit records each
    question's suspension, and the reply's answer with the caller as who decided (the
    authenticated user of the reply's request, ``ServerCallContext.user``, else nobody).
    """

    def __init__(
        self,
        work: TaskWork,
        *,
        key: bytes | None = None,
        ttl: float = DEFAULT_TTL,
        wrap: Wrap | None = None,
    ) -> None:
        if key is not None and (not isinstance(key, bytes) or len(key) < _MIN_KEY):
            raise ValueError(f"key must be at least {_MIN_KEY} bytes")
        if not ttl > 0:
            raise ValueError("ttl must be positive")
        self.work = work
        self.wrap = wrap
        self._key = key if key is not None else secrets.token_bytes(32)
        self.ttl = ttl

    # ------------------------------------------------------------------ signed state

    def _sign(self, body: str) -> str:
        return _b64(hmac.new(self._key, _DOMAIN + body.encode("ascii"), hashlib.sha256).digest())

    def seal(self, state: _State) -> str:
        plain = {
            "task": state.task_id,
            "context": state.context_id,
            "key": state.key,
            "request": encode_request(state.request),
            "answers": [[a.digest, encode_answer(a.answer)] for a in state.answers],
            "expires": state.expires,
        }
        body = _b64(json.dumps(plain, separators=(",", ":")).encode("utf-8"))
        return f"{body}.{self._sign(body)}"

    def unseal(self, token: str) -> _State | None:
        """The state ``token`` holds, or ``None`` unless this server's key signed it."""
        body, dot, given = token.partition(".")
        if not dot or not token.isascii() or not hmac.compare_digest(self._sign(body), given):
            return None
        plain = json.loads(_unb64(body))
        return _State(
            task_id=plain["task"],
            context_id=plain["context"],
            key=plain["key"],
            request=decode_request(plain["request"]),
            answers=tuple(
                ResumedAnswer(digest, decode_answer(answer)) for digest, answer in plain["answers"]
            ),
            expires=plain["expires"],
        )

    # ----------------------------------------------------------------------- the task

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        task_id, context_id = context.task_id, context.context_id
        assert message is not None
        assert task_id is not None
        assert context_id is not None
        updater = TaskUpdater(event_queue, task_id, context_id)
        task = context.current_task
        if task is None:
            await event_queue.enqueue_event(new_task_from_user_message(message))
            await self._run(context, message, (), updater)
            return
        if task.status.state in _FINISHED:
            # A reply queued behind the one that finished the task: the SDK refuses a
            # message to a finished task before it reaches us, but one that was already
            # waiting when the task finished is handed to us. It changes nothing.
            return
        token = self._pending_token(task)
        if token is None:  # nothing of ours waits for a reply: the work never runs again
            await self._fail(updater, ErrorCode.BAD_ANSWER, NOT_WAITING_MESSAGE)
            return
        pending = self.unseal(token)
        if pending is None or (pending.task_id, pending.context_id) != (task_id, context_id):
            await self._fail(
                updater, "BAD_REQUEST", "the task's question state is not one this server issued"
            )
            return
        if time.time() > pending.expires:
            await self._fail(updater, ErrorCode.ASK_TIMEOUT, EXPIRED_MESSAGE)
            return
        try:
            answer = self._read_reply(message, pending, token)
        except UserInteractionError as error:
            await self._suspend(updater, token, pending.request, error)
            return
        reply = ResumedAnswer(request_digest(pending.request), answer)
        first = _first_user_message(task, message)
        await self._run(context, first, pending.answers, updater, reply)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id, context.context_id
        assert task_id is not None
        assert context_id is not None
        await TaskUpdater(event_queue, task_id, context_id).cancel()

    def _pending_token(self, task: Task) -> str | None:
        if task.status.state != TaskState.TASK_STATE_INPUT_REQUIRED:
            return None
        try:
            data = payload(
                task.status.message.parts, MAX_REQUEST, ErrorCode.BAD_REQUEST, "question"
            )
        except UserInteractionError:
            return None
        state = None if data is None else data.get("state")
        return state if isinstance(state, str) else None

    def _read_reply(self, message: Message, pending: _State, token: str) -> AskUserQuestionAnswer:
        """The answer a client's reply gives to the pending question (``BAD_ANSWER`` if unfit)."""
        data = payload(message.parts, MAX_REPLY, ErrorCode.BAD_ANSWER, "reply")
        request = pending.request
        if data is None:
            text = get_message_text(message)
            if len(request.questions) != 1:
                raise fault(
                    ErrorCode.BAD_ANSWER,
                    DATA_KEY,
                    f"the question is a batch of {len(request.questions)}: reply with a data part",
                    source="reply",
                )
            if len(text) > MAX_REPLY:
                raise fault(
                    ErrorCode.BAD_ANSWER,
                    "text",
                    f"longer than {MAX_REPLY} characters",
                    source="reply",
                )
            return check_answer(
                request, AskUserQuestionAnswer([answer_item(request.questions[0], text=text)])
            )
        given = text_field(data, "state", ErrorCode.BAD_ANSWER)
        if given != token:
            other = self.unseal(given)
            if other is None:
                problem = "is not a state this server issued"
            elif other.task_id != pending.task_id:
                problem = "belongs to another task's question"
            else:
                problem = "belongs to an earlier question of this task"
            raise fault(ErrorCode.BAD_ANSWER, f"{DATA_KEY}.state", problem, source="reply")
        return decode_answer(data.get("answer"), request)

    async def _run(
        self,
        context: RequestContext,
        first: Message,
        answers: tuple[ResumedAnswer, ...],
        updater: TaskUpdater,
        reply: ResumedAnswer | None = None,
    ) -> None:
        bridge = _Suspending(reply, _caller(context))
        provider = bridge if self.wrap is None else self.wrap(bridge)

        async def work() -> str:
            with provide(provider), resume(answers):
                return await self.work(context, first)

        try:
            # A fresh context: the work's asks meet our provider whatever the server's has.
            text = await asyncio.get_running_loop().create_task(
                work(), context=contextvars.Context()
            )
        except AskSuspended as suspended:
            if bridge.taken is not None:
                answers = (*answers, bridge.taken)
            now = time.time()
            request = _asked_now(suspended.request, updater.context_id, now)
            state = _State(
                task_id=updater.task_id,
                context_id=updater.context_id,
                key=f"{updater.task_id}#{len(answers) + 1}",
                request=request,
                answers=answers,
                expires=now + self.ttl,
            )
            await self._suspend(updater, self.seal(state), request, None)
            return
        except UserInteractionError as error:
            await self._fail(updater, error.code, error.message)
            return
        await updater.complete(updater.new_agent_message([new_text_part(text)]))

    async def _suspend(
        self,
        updater: TaskUpdater,
        token: str,
        request: AskUserQuestionRequest,
        error: UserInteractionError | None,
    ) -> None:
        data: dict[str, object] = {"request": encode_request(request), "state": token}
        text = render_request(request)
        if error is not None:
            data["error"] = {"code": error.code, "message": error.message}
            text = f"Your reply was not accepted ({error.code}): {error.message}\n\n{text}"
        parts = [new_text_part(text), new_data_part({DATA_KEY: data})]
        await updater.requires_input(updater.new_agent_message(parts))

    async def _fail(self, updater: TaskUpdater, code: str, message: str) -> None:
        data = {DATA_KEY: {"error": {"code": code, "message": message}}}
        parts = [new_text_part(f"{code}: {message}"), new_data_part(data)]
        await updater.failed(updater.new_agent_message(parts))
