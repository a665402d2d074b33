"""A transport-neutral broker of pending questions (stdlib and asyncio only).

:class:`Relay` is a provider: each ask becomes a :class:`PendingQuestion` with a stable
random id, published to subscribers, and settled by the first valid :meth:`Relay.answer`
or :meth:`Relay.cancel` from any client: a terminal, a web page, another process. Every
method runs on the event loop the relay is used from.

:class:`RelayBackend` is the interface a transport (the web app, the CLI) and the asking
side rely on, so that this in-memory relay and a shared one (``interaction.redis``)
are interchangeable: :meth:`~RelayBackend.ask` (the provider), an atomic
:meth:`~RelayBackend.snapshot` of the pending questions with a *position*,
:meth:`~RelayBackend.events` after a position, :meth:`~RelayBackend.submit` (answer),
:meth:`~RelayBackend.dismiss` (cancel), :meth:`~RelayBackend.lookup` and
:meth:`~RelayBackend.aclose`. Positions are opaque strings, usable as SSE event ids; a
position the relay can no longer replay from raises ``STALE_POSITION``: take a fresh
snapshot. An answer or dismissal may name its ``answerer`` (a named web user): every
backend keeps the name with the question, tells it in the ``resolved`` event, and reports
it to the asker (an :class:`~interaction.audit.AuditProvider` around the relay records it).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
from collections import OrderedDict, deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final, Literal, Protocol, runtime_checkable

from ._core import (
    DISPOSED_MESSAGE,
    MAX_PROVENANCE_TEXT,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    aborted_error,
    cancelled_error,
    check_answer,
    check_request,
    with_provenance,
)
from .decisions import Decision, answerer_name, listening, report_decision

__all__ = [
    "NOT_PENDING",
    "RELAY_FULL",
    "RELAY_UNAVAILABLE",
    "STALE_POSITION",
    "PendingQuestion",
    "Relay",
    "RelayBackend",
    "RelayEvent",
    "RelaySnapshot",
    "Subscription",
    "end_on_abort",
    "local_host",
    "not_pending_error",
]

NOT_PENDING: Final = "NOT_PENDING"
"""Code of the error for an answer or cancel of a question that is not pending (any more)."""
RELAY_FULL: Final = "RELAY_FULL"
"""Code of the error for an ask while the relay holds its limit of pending questions."""
STALE_POSITION: Final = "STALE_POSITION"
"""Code of the error for events after a position the relay cannot replay from (too old,
from another relay, or not a position at all): take a fresh :meth:`RelayBackend.snapshot`."""
RELAY_UNAVAILABLE: Final = "RELAY_UNAVAILABLE"
"""Code of the error when a shared relay's store cannot be reached (the asks, answers and
snapshots made meanwhile fail with it; nothing is settled by it)."""

Outcome = Literal["answered", "cancelled", "aborted"]

WITHDRAWN_KEPT: Final = 10_000
"""How many withdrawn question ids the in-memory relay remembers, to word a late claim."""


def local_host() -> str | None:
    """This machine's name, for a provenance's ``host``: ``socket.gethostname()`` cut to
    the length a provenance field may have, or ``None`` when it has none or one that a
    provenance may not hold."""
    try:
        name = socket.gethostname()[:MAX_PROVENANCE_TEXT]
    except OSError:
        return None
    return name if name.strip() and name.isprintable() else None


def end_on_abort(
    request: AskUserQuestionRequest, future: asyncio.Future[AskUserQuestionAnswer]
) -> Callable[[], None]:
    """Settle ``future``, a relay's wait for the answer, with ``ASK_ABORTED`` (or
    ``ASK_TIMEOUT``) when ``request.signal`` aborts, from any thread; returns the function
    that stops listening (call it when the wait is over). (A signal aborted already was
    refused by ``check_request``.)

    ``ask()`` stops a provider by cancelling its task, once. A cancellation that a library
    below swallows is lost for good (Python 3.11's ``asyncio.wait_for``, which redis-py
    wraps each socket write in, returns the write's result instead when both land in one
    loop step, CPython gh-86296), and the relay would then wait for an answer for ever: so
    the wait ends on the signal itself as well.
    """
    signal = request.signal
    if signal is None:
        return _nothing
    loop = future.get_loop()
    waiting = True

    def settle(reason: BaseException) -> None:
        if waiting and not future.done():
            future.set_exception(aborted_error(reason))

    def on_abort(reason: BaseException) -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
            loop.call_soon_threadsafe(settle, reason)

    remove = signal.add_listener(on_abort)

    def stop() -> None:
        nonlocal waiting
        waiting = False
        remove()
        if future.done() and not future.cancelled():
            future.exception()  # taken: an ask that ended otherwise need not await it

    return stop


def _nothing() -> None:
    return None


def not_pending_error(question_id: str, *, withdrawn: bool = False) -> UserInteractionError:
    """The ``NOT_PENDING`` error every backend gives for a claim on ``question_id``:
    ``withdrawn`` by its asker, or else unknown or already settled."""
    why = "withdrawn by the asker" if withdrawn else "unknown, or already settled"
    return UserInteractionError(f"question {question_id!r} is not pending ({why})", NOT_PENDING)


@dataclass(frozen=True, slots=True)
class PendingQuestion:
    """A request waiting for an answer, under its relay id."""

    id: str
    request: AskUserQuestionRequest


@dataclass(frozen=True, slots=True)
class RelayEvent:
    """``requested`` (with the question) or ``resolved`` (with its outcome, and the
    ``answerer`` who answered or dismissed it when they were named).

    ``position`` is where the event stands in the relay's total order (an opaque string,
    usable as an SSE event id); events replayed by :meth:`Relay.subscribe` for questions
    already pending have none (``""``). Equality leaves it out.
    """

    kind: Literal["requested", "resolved"]
    id: str
    question: PendingQuestion | None = None
    outcome: Outcome | None = None
    position: str = field(default="", compare=False)
    answerer: str | None = None


@dataclass(frozen=True, slots=True)
class RelaySnapshot:
    """Every pending question (oldest first) as of ``position``, taken atomically.

    Events after ``position`` (:meth:`RelayBackend.events`) are exactly what happened
    since: a client shows ``questions``, then applies those events, and misses nothing.
    """

    position: str
    questions: tuple[PendingQuestion, ...]


@runtime_checkable
class RelayBackend(Protocol):
    """What a transport and the asking side need from a relay, whatever holds the questions.

    Every method is a coroutine (a shared relay talks to its store), except
    :meth:`events`, which returns an async iterator. Errors are
    :class:`~interaction.UserInteractionError` with ``NOT_PENDING``, ``BAD_ANSWER``,
    ``RELAY_FULL``, ``STALE_POSITION`` or ``RELAY_UNAVAILABLE``.
    """

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """The provider: hold ``request`` as a pending question until it is settled."""
        ...

    async def snapshot(self) -> RelaySnapshot:
        """The pending questions and the position they are current at, atomically."""
        ...

    def events(self, after: str) -> AsyncGenerator[RelayEvent, None]:
        """Every event after ``after``, in order, then each new one as it happens.

        The generator ends when the relay closes; it raises ``STALE_POSITION`` (on the
        first step, or later if the reader falls behind what the relay keeps) when it
        cannot replay from there. ``aclose()`` it when done (a shared relay then stops
        tailing for it).
        """
        ...

    async def lookup(self, question_id: str) -> PendingQuestion | None:
        """The question if it is pending, else None."""
        ...

    async def submit(
        self, question_id: str, answer: object, *, answerer: str | None = None
    ) -> AskUserQuestionAnswer:
        """Settle with ``answer``, checked against the stored request; first valid wins.

        ``answerer`` names who answered (a named web user; untrusted text, kept as
        :func:`~interaction.decisions.answerer_name` keeps it): the ``resolved`` event
        says it, and the asker reports it as who decided, on whichever process it asks.
        """
        ...

    async def dismiss(self, question_id: str, *, answerer: str | None = None) -> None:
        """Settle as cancelled: the asker gets ``ASK_CANCELLED`` (``answerer``: who did)."""
        ...

    async def aclose(self) -> None:
        """Stop: this relay's askers are settled (``ASK_ABORTED``), its iterators end."""
        ...


@dataclass(eq=False, slots=True)
class _Pending:
    question: PendingQuestion
    future: asyncio.Future[AskUserQuestionAnswer]
    answerer: str | None = None  # who settled it, when the client said


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


def _stale_position() -> UserInteractionError:
    return UserInteractionError(
        "the relay cannot replay events from that position; take a fresh snapshot",
        STALE_POSITION,
    )


class Relay:
    """A provider that holds each ask as a pending question until a client settles it.

    The in-memory :class:`RelayBackend` (the embedded default), with synchronous
    shorthands (:meth:`pending`, :meth:`get`, :meth:`answer`, :meth:`cancel`,
    :meth:`subscribe`, :meth:`close`) for callers on its loop.

    ``max_pending`` bounds the questions held at once (an ask beyond it is refused with
    ``RELAY_FULL``, nothing registered); ``queue_size`` bounds each subscriber's backlog,
    so one slow subscriber never blocks the askers or the other subscribers; ``history``
    is how many recent events :meth:`events` can replay from. Positions are
    ``"<relay id>.<sequence>"``: one from another relay (a restarted process) is stale.
    """

    def __init__(
        self, *, max_pending: int = 10_000, queue_size: int = 1_000, history: int = 1_000
    ) -> None:
        if history < 1:
            raise ValueError("history must be at least 1")
        self.max_pending = max_pending
        self.queue_size = queue_size
        self._pending: dict[str, _Pending] = {}
        self._subscriptions: set[Subscription] = set()
        self._closed = False
        self._epoch = secrets.token_urlsafe(6)
        self._sequence = 0  # of the last event published
        self._history: deque[RelayEvent] = deque(maxlen=history)
        self._changed = asyncio.Event()
        # Withdrawn ids, oldest first, so a late claim says "withdrawn by the asker" as on
        # a shared relay (whose store keeps the state); bounded, as ids keep coming.
        self._withdrawn: OrderedDict[str, None] = OrderedDict()

    # ------------------------------------------------------------------ the asker's side

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        check_request(request)  # also when called directly, not through ask()
        # The page says since when a question waits: the relay knows, if the asker did not say.
        request = with_provenance(request, asked_at=datetime.now(UTC))
        if self._closed:
            raise UserInteractionError(DISPOSED_MESSAGE, ErrorCode.ASK_ABORTED)
        if len(self._pending) >= self.max_pending:
            raise UserInteractionError(
                f"the relay already holds {self.max_pending} pending questions", RELAY_FULL
            )
        question = PendingQuestion(secrets.token_urlsafe(12), request)
        future: asyncio.Future[AskUserQuestionAnswer] = asyncio.get_running_loop().create_future()
        unlisten = end_on_abort(request, future)  # (not only a cancellation of the task)
        entry = self._pending[question.id] = _Pending(question, future)
        self._publish("requested", question.id, question)
        try:
            return await future
        finally:
            unlisten()
            if entry.answerer is not None and listening():  # in the asker's own context
                report_decision(Decision("human", entry.answerer))
            if self._pending.pop(question.id, None) is not None:  # withdrawn: abort or timeout
                self._withdraw(question.id)

    # ------------------------------------------------------------------ the clients' side

    def pending(self) -> list[PendingQuestion]:
        """The questions waiting now, oldest first."""
        return [entry.question for entry in self._pending.values()]

    def get(self, question_id: str) -> PendingQuestion | None:
        entry = self._pending.get(question_id)
        return None if entry is None else entry.question

    def _withdraw(self, question_id: str) -> None:
        self._withdrawn[question_id] = None
        while len(self._withdrawn) > WITHDRAWN_KEPT:
            self._withdrawn.popitem(last=False)
        self._publish("resolved", question_id, outcome="aborted")

    def _take(self, question_id: str) -> _Pending:
        entry = self._pending.get(question_id)
        if entry is None:
            raise not_pending_error(question_id, withdrawn=question_id in self._withdrawn)
        if entry.future.done():  # the asker is gone (abort or task cancel), finally not yet run
            del self._pending[question_id]
            self._withdraw(question_id)
            raise not_pending_error(question_id, withdrawn=True)
        return entry

    def answer(
        self, question_id: str, answer: object, *, answerer: str | None = None
    ) -> AskUserQuestionAnswer:
        """Settle a question with ``answer``; the first valid answer wins.

        An answer that does not fit is refused (``BAD_ANSWER``) and the question stays
        pending; an answer to a question not pending is ``NOT_PENDING``. ``answerer``
        names the person who answered (a named web user): the ask reports it to an
        :class:`~interaction.audit.AuditProvider` around the relay as who decided.
        """
        entry = self._take(question_id)
        checked = check_answer(entry.question.request, answer)
        del self._pending[question_id]
        entry.answerer = answerer_name(answerer)
        entry.future.set_result(checked)
        self._publish("resolved", question_id, outcome="answered", answerer=entry.answerer)
        return checked

    def cancel(self, question_id: str, *, answerer: str | None = None) -> None:
        """Dismiss a question: its asker gets ``ASK_CANCELLED`` (``answerer``: who did)."""
        entry = self._take(question_id)
        del self._pending[question_id]
        entry.answerer = answerer_name(answerer)
        entry.future.set_exception(cancelled_error())
        self._publish("resolved", question_id, outcome="cancelled", answerer=entry.answerer)

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
            self._withdraw(question_id)
        for subscription in list(self._subscriptions):
            subscription.close()
        self._changed.set()  # every events() iterator sees the relay closed

    @property
    def closed(self) -> bool:
        return self._closed

    # ------------------------------------------------------------------ RelayBackend

    @property
    def position(self) -> str:
        """The position of the last event published (events after it are yet to come)."""
        return f"{self._epoch}.{self._sequence}"

    async def snapshot(self) -> RelaySnapshot:
        return RelaySnapshot(self.position, tuple(self.pending()))

    def events(self, after: str) -> AsyncGenerator[RelayEvent, None]:
        return self._events_after(after)

    def _sequence_of(self, position: str) -> int:
        epoch, _, number = position.partition(".")
        if epoch == self._epoch and number.isdecimal() and len(number) <= 20:
            sequence = int(number)
            if self._replayable(sequence):
                return sequence
        raise _stale_position()

    def _replayable(self, sequence: int) -> bool:
        """Whether the events after ``sequence`` are all still in the history."""
        return self._sequence - len(self._history) <= sequence <= self._sequence

    async def _events_after(self, after: str) -> AsyncGenerator[RelayEvent, None]:
        sequence = self._sequence_of(after)
        while True:
            if sequence < self._sequence:
                if not self._replayable(sequence):  # fell behind what the history keeps
                    raise _stale_position()
                yield self._history[sequence - (self._sequence - len(self._history))]
                sequence += 1
                continue
            if self._closed:
                return
            await self._changed.wait()

    async def lookup(self, question_id: str) -> PendingQuestion | None:
        return self.get(question_id)

    async def submit(
        self, question_id: str, answer: object, *, answerer: str | None = None
    ) -> AskUserQuestionAnswer:
        return self.answer(question_id, answer, answerer=answerer)

    async def dismiss(self, question_id: str, *, answerer: str | None = None) -> None:
        self.cancel(question_id, answerer=answerer)

    async def aclose(self) -> None:
        self.close()

    def _publish(
        self,
        kind: Literal["requested", "resolved"],
        question_id: str,
        question: PendingQuestion | None = None,
        outcome: Outcome | None = None,
        answerer: str | None = None,
    ) -> None:
        self._sequence += 1
        event = RelayEvent(
            kind, question_id, question, outcome, position=self.position, answerer=answerer
        )
        self._history.append(event)
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()
        for subscription in list(self._subscriptions):
            subscription._offer(event)
