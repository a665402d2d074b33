"""DBOS: an ask inside a ``@DBOS.workflow()`` that survives the worker (docs/durable.md).

:class:`DBOSProvider` is a provider for code that runs in a DBOS workflow. Each ask:

1. runs one DBOS step, ``interaction.publish``, which names the question (its resume key,
   ``dbos/<workflow id>/<step id>``) and the moment it times out (the policy's seconds or
   the request's timeout signal, whichever ends first), and publishes it to a shared relay
   (Redis or PostgreSQL) under that key: any page, channel or desk answers it. A recovered
   workflow reuses the step's recorded output, and the relay's resume key makes the
   publication itself idempotent: the question is never asked twice;
2. waits with ``DBOS.recv`` on the topic ``interaction:<key>``, until the recorded deadline
   (a durable timeout: a recovered workflow waits only for what is left);
3. meanwhile this process's *watch* of the question (a keyed ask on the relay, no thread,
   no connection of its own) delivers its outcome with ``DBOS.send`` under the idempotency
   key ``<key>``, so it reaches the workflow exactly once whoever delivers it and however
   often. An answer given while no worker ran waits in the relay: the recovered
   workflow's watch finds it at once.

A message on the topic that is not a delivery of this question (another shape, another
key, an answer that does not fit) is logged on ``interaction.integrations.dbos`` and
ignored. A workflow cancelled with ``DBOS.cancel_workflow`` while it waits, or whose
deadline passed, has its question withdrawn from every page, by its key (the watch polls the
workflow's status every ``poll`` seconds).
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import logging
import time
from typing import Final, Protocol

try:
    from dbos import DBOS, WorkflowSerializationFormat
    from dbos import error as dbos_error  # DBOS's public name for its errors' module
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        'interaction.integrations.dbos needs DBOS: pip install "interaction-seam[dbos]"'
    ) from exc

from .._core import (
    AbortController,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    aborted_error,
    ask_with,
    cancelled_error,
    signal_deadline,
)
from ..policies import TimeoutPolicy
from ..relay import RELAY_UNAVAILABLE, RelayBackend
from ..wire import decode_answer, dumps

__all__ = ["MAX_MESSAGE_CHARS", "TOPIC_PREFIX", "DBOSProvider", "DurableRelay"]

LOGGER: Final = logging.getLogger("interaction.integrations.dbos")
TOPIC_PREFIX: Final = "interaction:"
"""The DBOS topic of a question is this prefix and its resume key."""
MAX_MESSAGE_CHARS: Final = 1_000_000
"""The largest answer (wire JSON characters) a delivery may carry; a longer one is ignored."""
FOREVER: Final = 10 * 365 * 86_400.0  # a recv without a deadline waits this long, then again
_OUTCOMES: Final = frozenset({"answered", "cancelled", "withdrawn"})
_RETRY_SECONDS: Final = (0.5, 1.0, 2.0, 5.0)
NOT_IN_WORKFLOW: Final = (
    "a DBOSProvider asks only inside a @DBOS.workflow() (register it there with"
    " interaction.provide; an integration handed it as provider= asks from a fresh context)"
)


class DurableRelay(RelayBackend, Protocol):
    """A shared relay (``RedisRelay``, ``PostgresRelay``): a :class:`RelayBackend` that
    withdraws a question by the resume key it was asked under."""

    async def withdraw_keyed(self, key: str) -> None:
        """Withdraw the pending question asked under ``key``; nothing if none is pending."""
        ...


class DBOSProvider:
    """A provider whose asks are durable inside a DBOS workflow.

    ``relay`` is a shared relay (``RedisRelay`` or ``PostgresRelay``) every process of the
    application reaches; ``timeout`` is the rules' :class:`~interaction.policies.TimeoutPolicy`
    (its seconds, or the request's timeout signal if that ends first, become the durable
    ``recv`` deadline; when it passes, the question is withdrawn and the policy's answer, or
    ``ASK_TIMEOUT``, ends the ask); ``poll`` is how
    often (seconds) a waiting question's workflow is checked for cancellation. Outside a
    workflow an ask is ``BAD_REQUEST``. DBOS must be launched in this process.
    """

    def __init__(
        self, relay: DurableRelay, *, timeout: TimeoutPolicy | None = None, poll: float = 1.0
    ) -> None:
        if not poll > 0:
            raise ValueError(f"poll must be a positive number of seconds, got {poll!r}")
        self.relay = relay
        self.timeout = timeout
        self.poll = poll
        self._watches: dict[str, _Watch] = {}

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        workflow_id = DBOS.workflow_id
        if not isinstance(workflow_id, str):
            raise UserInteractionError(NOT_IN_WORKFLOW, ErrorCode.BAD_REQUEST)
        published = await DBOS.run_step_async(
            {"name": "interaction.publish"}, self._publish, workflow_id, request
        )
        key, deadline, by_signal = _published(published)
        self._watch(workflow_id, key, request)  # a recovered workflow watches again
        topic = TOPIC_PREFIX + key
        try:
            while True:
                left = FOREVER if deadline is None else max(0.0, deadline - time.time())
                message = await DBOS.recv_async(topic, timeout_seconds=left)
                if message is None:
                    if deadline is not None and time.time() >= deadline:
                        await DBOS.run_step_async(
                            {"name": "interaction.withdraw"}, self._withdraw, key
                        )
                        return self._timed_out(request, by_signal=by_signal)
                    continue
                answer = _delivered(message, key, request)
                if answer is not None:
                    return answer
        finally:
            signal = request.signal
            if signal is not None and signal.aborted:
                await asyncio.shield(self._withdraw(key))

    async def _publish(
        self, workflow_id: str, request: AskUserQuestionRequest
    ) -> dict[str, object]:
        """The publish step: the key, and the deadline as wall time (the policy's seconds
        or the request's timeout signal, whichever ends first), which DBOS records."""
        key = f"dbos/{workflow_id}/{DBOS.step_id}"
        self._watch(workflow_id, key, request)
        policy = self.timeout.seconds if self.timeout is not None else None
        due = signal_deadline(request.signal) if request.signal is not None else None
        signal = None if due is None else max(0.0, due - time.monotonic())
        by_signal = signal is not None and (policy is None or signal < policy)
        seconds = signal if by_signal else policy
        deadline = None if seconds is None else time.time() + seconds
        return {"key": key, "deadline": deadline, "by_signal": by_signal}

    def _timed_out(
        self, request: AskUserQuestionRequest, *, by_signal: bool
    ) -> AskUserQuestionAnswer:
        """The outcome of a deadline that passed: ``ASK_TIMEOUT`` for the request's signal
        (as ``ask()`` words it), the policy's answer (or ``ASK_TIMEOUT``) for the rules'."""
        if by_signal or self.timeout is None:
            raise aborted_error(TimeoutError())
        return self.timeout.answer(request)

    def _watch(self, workflow_id: str, key: str, request: AskUserQuestionRequest) -> None:
        """Start this process's watch of the question under ``key``, unless it runs."""
        if key in self._watches:
            return
        watch = _Watch(self, workflow_id, key, request)
        self._watches[key] = watch
        # An empty context: the watch is no part of the workflow (DBOS would record its
        # calls as the workflow's steps) and runs after the ask returns.
        task = contextvars.Context().run(asyncio.ensure_future, watch.run())
        task.add_done_callback(lambda _: self._watches.pop(key, None))

    async def _withdraw(self, key: str) -> None:
        """Withdraw the question from every page: its watch here stops first (so that it
        cannot publish it again), then the relay withdraws it by its key."""
        watch = self._watches.get(key)
        if watch is not None:
            watch.controller.abort()
        try:
            await self.relay.withdraw_keyed(key)
        except UserInteractionError as error:  # its lifetime (question_ttl) still ends it
            LOGGER.warning("question %s: not withdrawn: %s", key, error.message)


@dataclasses.dataclass(eq=False, slots=True)
class _Watch:
    """One waiting question's keyed ask on the relay, and its delivery to the workflow."""

    provider: DBOSProvider
    workflow_id: str
    key: str
    request: AskUserQuestionRequest
    controller: AbortController = dataclasses.field(default_factory=AbortController)
    cancelled: bool = False

    async def run(self) -> None:
        keyed = dataclasses.replace(
            self.request, key=self.key, signal=self.controller.signal, agent=None
        )
        delays = iter(_RETRY_SECONDS)
        while True:
            asking = asyncio.ensure_future(ask_with(keyed, self.provider.relay))
            polling = asyncio.ensure_future(self._until_cancelled())
            try:
                await asyncio.wait({asking, polling}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                polling.cancel()
            if not asking.done():  # the workflow was cancelled: withdraw the question
                self.cancelled = True
                await self.provider._withdraw(self.key)
                await asyncio.wait({asking})
            try:
                answer = asking.result()
            except UserInteractionError as error:
                if error.code == RELAY_UNAVAILABLE and not self.controller.signal.aborted:
                    LOGGER.warning("question %s: %s; asking again", self.key, error.message)
                    await asyncio.sleep(next(delays, _RETRY_SECONDS[-1]))
                    continue
                if error.code == ErrorCode.ASK_CANCELLED:
                    await self._deliver({"outcome": "cancelled"})
                elif self.cancelled:
                    await self._deliver({"outcome": "withdrawn"})
                # Else withdrawn by its deadline or signal (the workflow has moved on), or
                # the relay closed (the keyed question waits for the next worker).
                return
            await self._deliver({"outcome": "answered", "answer": dumps(answer)})
            return

    async def _until_cancelled(self) -> None:
        while True:
            await asyncio.sleep(self.provider.poll)
            try:
                status = await DBOS.get_workflow_status_async(self.workflow_id)
            except Exception as error:  # the system database is away: look again later
                LOGGER.warning("question %s: no workflow status: %s", self.key, error)
                continue
            if status is not None and status.status == "CANCELLED":
                return

    async def _deliver(self, message: dict[str, str]) -> None:
        body = {"interaction": "delivery", "key": self.key, **message}
        delays = iter(_RETRY_SECONDS)
        while True:
            try:
                await DBOS.send_async(
                    self.workflow_id,
                    body,
                    TOPIC_PREFIX + self.key,
                    idempotency_key=self.key,
                    serialization_type=WorkflowSerializationFormat.PORTABLE,
                )
                return
            except dbos_error.DBOSNonExistentWorkflowError:
                LOGGER.warning("question %s: its workflow no longer exists", self.key)
                return
            except Exception as error:  # the system database is away: deliver again later
                LOGGER.warning("question %s: delivery failed: %s; again", self.key, error)
                await asyncio.sleep(next(delays, _RETRY_SECONDS[-1]))


def _published(output: object) -> tuple[str, float | None, bool]:
    """The key, deadline and its source that the publish step recorded."""
    assert isinstance(output, dict)
    key, deadline, by_signal = output["key"], output["deadline"], output["by_signal"]
    assert isinstance(key, str)
    assert deadline is None or isinstance(deadline, int | float)
    return key, None if deadline is None else float(deadline), by_signal is True


def _delivered(
    message: object, key: str, request: AskUserQuestionRequest
) -> AskUserQuestionAnswer | None:
    """The answer a delivery carries (or its outcome raised); ``None``, logged, for a
    message that is not a delivery of this question."""
    why = _foreign(message, key)
    if why is not None:
        LOGGER.warning("question %s: a message that is not its delivery, ignored: %s", key, why)
        return None
    assert isinstance(message, dict)
    outcome = message["outcome"]
    if outcome == "cancelled":
        raise cancelled_error()
    if outcome == "withdrawn":
        raise UserInteractionError("the workflow was cancelled", ErrorCode.ASK_ABORTED)
    try:
        return decode_answer(message["answer"], request)
    except UserInteractionError as error:
        LOGGER.warning("question %s: a delivery whose answer does not fit, ignored: %s", key, error)
        return None


def _foreign(message: object, key: str) -> str | None:
    """Why ``message`` is not a delivery for ``key``, or ``None`` when it is one."""
    if type(message) is not dict:
        return f"not an object but {type(message).__name__}"
    outcome = message.get("outcome")
    expected = {"interaction", "key", "outcome"} | ({"answer"} if outcome == "answered" else set())
    if set(message) != expected or message.get("interaction") != "delivery":
        return "not the shape of a delivery"
    if message.get("key") != key:
        return "a delivery for another question"
    if outcome not in _OUTCOMES:
        return "an unknown outcome"
    answer = message.get("answer")
    if outcome == "answered" and not (type(answer) is str and len(answer) <= MAX_MESSAGE_CHARS):
        return f"an answer that is not text of at most {MAX_MESSAGE_CHARS} characters"
    return None
