"""A transport-neutral broker of pending questions (stdlib and asyncio only).

:class:`Relay` is a provider: each ask becomes a :class:`PendingQuestion` with a stable
random id, published to subscribers, and settled by the first valid :meth:`Relay.answer`
or :meth:`Relay.cancel` from any client: a terminal, a web page, another process. Every
method runs on the event loop the relay is used from.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Final, Literal

from ._core import (
    DISPOSED_MESSAGE,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    cancelled_error,
    check_answer,
    check_request,
)

__all__ = [
    "NOT_PENDING",
    "RELAY_FULL",
    "PendingQuestion",
    "Relay",
    "RelayEvent",
    "Subscription",
]

NOT_PENDING: Final = "NOT_PENDING"
"""Code of the error for an answer or cancel of a question that is not pending (any more)."""
RELAY_FULL: Final = "RELAY_FULL"
"""Code of the error for an ask while the relay holds its limit of pending questions."""

Outcome = Literal["answered", "cancelled", "aborted"]


@dataclass(frozen=True, slots=True)
class PendingQuestion:
    """A request waiting for an answer, under its relay id."""

    id: str
    request: AskUserQuestionRequest


@dataclass(frozen=True, slots=True)
class RelayEvent:
    """``requested`` (with the question) or ``resolved`` (with its outcome)."""

    kind: Literal["requested", "resolved"]
    id: str
    question: PendingQuestion | None = None
    outcome: Outcome | None = None


@dataclass(eq=False, slots=True)
class _Pending:
    question: PendingQuestion
    future: asyncio.Future[AskUserQuestionAnswer]


class Subscription:
    """The events of one subscriber: every pending question first, then what happens.

    Iterate it with ``async for``; it ends when the relay closes or when the subscriber
    falls :attr:`Relay.queue_size` events behind (``lagged`` is then true: reconnect, and
    the pending questions are replayed).
    """

    def __init__(self, relay: Relay, size: int) -> None:
        self._relay = relay
        self._queue: asyncio.Queue[RelayEvent | None] = asyncio.Queue(size + 1)
        self._size = size
        self.closed = False
        self.lagged = False

    def _offer(self, event: RelayEvent) -> None:
        if self.closed:
            return
        if self._queue.qsize() >= self._size:
            self.lagged = True
            self._end()
            return
        self._queue.put_nowait(event)

    def _end(self) -> None:
        if not self.closed:
            self.closed = True
            self._queue.put_nowait(None)  # room is kept for the end marker
            self._relay._subscriptions.discard(self)

    def close(self) -> None:
        """Stop receiving events."""
        self._end()

    def __aiter__(self) -> AsyncIterator[RelayEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[RelayEvent]:
        while (event := await self._queue.get()) is not None:
            yield event


class Relay:
    """A provider that holds each ask as a pending question until a client settles it.

    ``max_pending`` bounds the questions held at once (an ask beyond it is refused with
    ``RELAY_FULL``, nothing registered); ``queue_size`` bounds each subscriber's backlog,
    so one slow subscriber never blocks the askers or the other subscribers.
    """

    def __init__(self, *, max_pending: int = 10_000, queue_size: int = 1_000) -> None:
        self.max_pending = max_pending
        self.queue_size = queue_size
        self._pending: dict[str, _Pending] = {}
        self._subscriptions: set[Subscription] = set()
        self._closed = False

    # ------------------------------------------------------------------ the asker's side

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        check_request(request)  # also when called directly, not through ask()
        if self._closed:
            raise UserInteractionError(DISPOSED_MESSAGE, ErrorCode.ASK_ABORTED)
        if len(self._pending) >= self.max_pending:
            raise UserInteractionError(
                f"the relay already holds {self.max_pending} pending questions", RELAY_FULL
            )
        question = PendingQuestion(secrets.token_urlsafe(12), request)
        future: asyncio.Future[AskUserQuestionAnswer] = asyncio.get_running_loop().create_future()
        self._pending[question.id] = _Pending(question, future)
        self._publish(RelayEvent("requested", question.id, question))
        try:
            return await future
        finally:
            if self._pending.pop(question.id, None) is not None:  # withdrawn: abort or timeout
                self._publish(RelayEvent("resolved", question.id, outcome="aborted"))

    # ------------------------------------------------------------------ the clients' side

    def pending(self) -> list[PendingQuestion]:
        """The questions waiting now, oldest first."""
        return [entry.question for entry in self._pending.values()]

    def get(self, question_id: str) -> PendingQuestion | None:
        entry = self._pending.get(question_id)
        return None if entry is None else entry.question

    def _take(self, question_id: str) -> _Pending:
        entry = self._pending.get(question_id)
        if entry is None:
            raise UserInteractionError(
                f"question {question_id!r} is not pending (unknown, or already settled)",
                NOT_PENDING,
            )
        if entry.future.done():  # the asker is gone (abort or task cancel), finally not yet run
            del self._pending[question_id]
            self._publish(RelayEvent("resolved", question_id, outcome="aborted"))
            raise UserInteractionError(
                f"question {question_id!r} is not pending (withdrawn by the asker)", NOT_PENDING
            )
        return entry

    def answer(self, question_id: str, answer: object) -> AskUserQuestionAnswer:
        """Settle a question with ``answer``; the first valid answer wins.

        An answer that does not fit is refused (``BAD_ANSWER``) and the question stays
        pending; an answer to a question not pending is ``NOT_PENDING``.
        """
        entry = self._take(question_id)
        checked = check_answer(entry.question.request, answer)
        del self._pending[question_id]
        entry.future.set_result(checked)
        self._publish(RelayEvent("resolved", question_id, outcome="answered"))
        return checked

    def cancel(self, question_id: str) -> None:
        """Dismiss a question: its asker gets ``ASK_CANCELLED``."""
        entry = self._take(question_id)
        del self._pending[question_id]
        entry.future.set_exception(cancelled_error())
        self._publish(RelayEvent("resolved", question_id, outcome="cancelled"))

    def subscribe(self) -> Subscription:
        """A new subscription, which first receives every pending question."""
        # Room for the whole replay on top of the usual backlog.
        subscription = Subscription(self, self.queue_size + len(self._pending))
        if self._closed:
            subscription.close()
            return subscription
        self._subscriptions.add(subscription)
        for entry in self._pending.values():
            subscription._offer(RelayEvent("requested", entry.question.id, entry.question))
        return subscription

    def close(self) -> None:
        """Settle every pending question (``ASK_ABORTED``) and end every subscription."""
        self._closed = True
        for question_id, entry in list(self._pending.items()):
            del self._pending[question_id]
            if not entry.future.done():
                entry.future.set_exception(
                    UserInteractionError(DISPOSED_MESSAGE, ErrorCode.ASK_ABORTED)
                )
            self._publish(RelayEvent("resolved", question_id, outcome="aborted"))
        for subscription in list(self._subscriptions):
            subscription.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def _publish(self, event: RelayEvent) -> None:
        for subscription in list(self._subscriptions):
            subscription._offer(event)
