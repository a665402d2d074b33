"""What the shared relays (``redis``, ``postgres``) have in common, without a
third-party import: each process's own waiting asks, woken by a question's stored state,
the buffer of recent events its tail has read, which its event iterators replay, and
:class:`SharedRelay`, the relay's methods that do not depend on its engine.
"""

from __future__ import annotations

import abc
import asyncio
import bisect
import contextlib
import secrets
from collections import OrderedDict
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final, Literal

from ._core import (
    DISPOSED_MESSAGE,
    Approval,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    Team,
    UserInteractionError,
    approves,
    cancelled_error,
    check_answer,
    check_assignment_in,
    check_request,
    may_answer,
    not_assigned_error,
    with_provenance,
)
from .decisions import Decision, answerer_name, listening, report_decision
from .relay import (
    RELAY_FULL,
    STALE_POSITION,
    PendingQuestion,
    RelayEvent,
    end_on_abort,
    local_host,
    not_pending_error,
)
from .wire import approvals_from_store, decode_answer, decode_request, dumps

__all__ = [
    "BUFFERED",
    "OUTCOMES",
    "EventBuffer",
    "LocalWaiters",
    "RequestCache",
    "SharedRelay",
    "Waiter",
    "not_pending",
    "replay",
    "stale",
    "stamped",
]

STALE_MESSAGE: Final = "the relay cannot replay events from that position; take a fresh snapshot"
WITHDRAWN_MESSAGE: Final = (
    "the question was withdrawn by the relay (its asker's lease lapsed, or its lifetime ended)"
)
OUTCOMES: Final[dict[str, Literal["answered", "cancelled", "aborted"]]] = {
    "answered": "answered",
    "cancelled": "cancelled",
    "aborted": "aborted",
}
BUFFERED: Final = 2_000
_HOST: Final = local_host()


def stamped(request: AskUserQuestionRequest) -> AskUserQuestionRequest:
    """``request`` as a shared relay stores it: with this host and the time of asking in
    its provenance where the asker left them unsaid, so every page that serves it from the
    store can say where and since when it waits (docs/notify.md)."""
    return with_provenance(request, host=_HOST, asked_at=datetime.now(UTC))


"""How many recent events a tail keeps (at least) for its iterators."""
REQUESTS_CACHED: Final = 4_096

Key = tuple[int, int]
"""A position as something ordered: a stream id's two numbers, or a counter and 0."""


def stale() -> UserInteractionError:
    return UserInteractionError(STALE_MESSAGE, STALE_POSITION)


def not_pending(question_id: str, state: str) -> UserInteractionError:
    """``NOT_PENDING`` for a question whose stored state is ``state`` (``""``: none)."""
    return not_pending_error(question_id, withdrawn=state == "aborted")


@dataclass(eq=False, slots=True)
class Waiter:
    request: AskUserQuestionRequest
    future: asyncio.Future[AskUserQuestionAnswer]
    published: bool = False  # the store took the ask: the question exists there
    answerer: str | None = None  # who answered or dismissed it, as the store names them
    approvals: tuple[Approval, ...] = ()  # a quorum question's, read back once it settled

    def settled_by(self, answerer: str | None) -> None:
        """The store names who settled the question (untrusted: kept as
        :func:`~interaction.decisions.answerer_name` keeps it)."""
        self.answerer = answerer_name(answerer)

    def report(self) -> None:
        """Tell an audit around the relay who decided, in the asker's own context (an ask
        settled by nobody named reports nothing: the audit's own ``answerer`` stands)."""
        if self.answerer is not None and listening():
            report_decision(Decision("human", self.answerer, approvals=self.approvals))


class LocalWaiters:
    """This process's waiting asks by question id, settled by their question's stored
    state; ``unavailable`` words the error for a question the store lost."""

    def __init__(self, unavailable: Callable[[BaseException], UserInteractionError]) -> None:
        self.by_id: dict[str, list[Waiter]] = {}
        self._unavailable = unavailable

    def add(self, question_id: str, waiter: Waiter) -> None:
        self.by_id.setdefault(question_id, []).append(waiter)

    def drop(self, question_id: str, waiter: Waiter) -> None:
        waiters = self.by_id.get(question_id)
        if waiters is not None and waiter in waiters:
            waiters.remove(waiter)
            if not waiters:
                del self.by_id[question_id]

    def published(self, *only: str) -> list[str]:
        """The ids (of ``only`` these, if given) with a waiter whose ask the store took."""
        return [
            i
            for i, waiters in self.by_id.items()
            if (not only or i in only) and any(w.published for w in waiters)
        ]

    def wake(
        self, question_id: str, state: str | None, answer: str, answerer: str | None = None
    ) -> None:
        """Settle the waiters of a question by its stored ``state`` (None: lost) and the
        ``answerer`` it names."""
        if state == "pending":
            return
        for waiter in self.by_id.pop(question_id, []):
            if waiter.future.done():
                continue
            if state in ("answered", "cancelled"):
                waiter.settled_by(answerer)
            if state is None:
                lost = RuntimeError(f"question {question_id!r} was lost")
                waiter.future.set_exception(self._unavailable(lost))
            elif state == "answered":
                try:  # checked again here, against the asker's own request
                    waiter.future.set_result(decode_answer(answer, waiter.request))
                except UserInteractionError as error:
                    waiter.future.set_exception(error)
            elif state == "cancelled":
                waiter.future.set_exception(cancelled_error())
            else:
                waiter.future.set_exception(
                    UserInteractionError(WITHDRAWN_MESSAGE, ErrorCode.ASK_ABORTED)
                )

    def abort_all(self, message: str) -> None:
        """Every waiter ends with ``ASK_ABORTED`` (the relay closes)."""
        for question_id in list(self.by_id):
            for waiter in self.by_id.pop(question_id):
                if not waiter.future.done():
                    waiter.future.set_exception(
                        UserInteractionError(message, ErrorCode.ASK_ABORTED)
                    )


class RequestCache:
    """Decoded requests by question id, the most recent ones; and the stored text of the
    questions a tail heard asked and not yet heard settled (up to ``heard_kept``), decoded
    only when asked for (:meth:`heard`)."""

    def __init__(self, heard_kept: int = 0) -> None:
        self._requests: OrderedDict[str, AskUserQuestionRequest] = OrderedDict()
        self._heard: OrderedDict[str, str] = OrderedDict()
        self._heard_kept = heard_kept

    def get(self, question_id: str) -> AskUserQuestionRequest | None:
        return self._requests.get(question_id)

    def hear(self, question_id: str, text: str) -> None:
        """A tail heard ``question_id`` asked, stored as ``text`` (the oldest beyond the
        bound are forgotten: a lookup finds them)."""
        if self._heard_kept:
            self._heard[question_id] = text
            if len(self._heard) > self._heard_kept:
                self._heard.popitem(last=False)

    def settled(self, question_id: str) -> None:
        """A tail heard ``question_id`` settled."""
        self._heard.pop(question_id, None)

    def forget_heard(self) -> None:
        """The store was made anew: what the tail heard of it is gone."""
        self._heard.clear()

    def heard(self, question_id: str) -> AskUserQuestionRequest | None:
        """The request of a question the tail heard asked and not settled, or None."""
        text = self._heard.get(question_id)
        if text is None:
            return None
        try:
            return self.remember(question_id, text)
        except UserInteractionError:
            return None

    def remember(self, question_id: str, text: str) -> AskUserQuestionRequest:
        """The request stored as ``text``, decoded once (``BAD_REQUEST`` if it is none)."""
        request = self._requests.get(question_id)
        if request is None:
            request = decode_request(text)
            self._requests[question_id] = request
            if len(self._requests) > REQUESTS_CACHED:
                self._requests.popitem(last=False)
        return request


class EventBuffer:
    """The recent events a tail has read: every event after its base (the position it was
    reset to, or the last one it dropped) up to ``last``. ``key_of`` orders positions (None
    for a string that is no position of this store)."""

    def __init__(self, key_of: Callable[[str], Key | None], start: str) -> None:
        self.key_of = key_of
        self.reset(start)

    def reset(self, base: str) -> None:
        self.last = base
        self._base = self._last = self.key_of(base) or (0, 0)
        self.events: list[RelayEvent] = []
        self.keys: list[Key] = []

    def after(self, position: str) -> list[RelayEvent] | None:
        """The events after ``position``, or None when the buffer cannot tell."""
        key = self.key_of(position)
        if key is None or key < self._base or key > self._last:
            return None
        return self.events[bisect.bisect_right(self.keys, key) :]

    def advance(self, position: str) -> None:
        """The tail read up to ``position`` (an entry that is no event still moves it)."""
        self.last = position
        self._last = self.key_of(position) or self._last

    def add(self, event: RelayEvent) -> None:
        self.advance(event.position)
        self.events.append(event)
        self.keys.append(self._last)
        if len(self.events) > 2 * BUFFERED:
            self._base = self.keys[-BUFFERED - 1]
            del self.events[:-BUFFERED]
            del self.keys[:-BUFFERED]


async def replay(
    buffer: EventBuffer,
    position: str,
    *,
    changed: Callable[[], asyncio.Event],
    failure: Callable[[], UserInteractionError | None],
    closed: Callable[[], bool],
    read_after: Callable[[str], Awaitable[tuple[list[RelayEvent], str]]],
    check_position: Callable[[str], Awaitable[None]],
) -> AsyncGenerator[RelayEvent, None]:
    """A shared relay's events after ``position``, for ever: those ``buffer`` holds, and
    for a reader behind it those ``read_after`` reads from the store (the events and the
    position read up to). It waits on ``changed()`` (an event set, then replaced, when the
    buffer grows, the store fails or the relay closes), raises the store's ``failure()``
    while it cannot be read, and ends once ``closed()`` and nothing is left. A position
    the buffer cannot place is ``STALE_POSITION`` unless ``check_position`` finds the store
    still holds what follows it (an open relay's store only: a closed one ends at once)."""
    if buffer.after(position) is None:
        if buffer.key_of(position) is None:
            raise stale()
        if not closed():
            await check_position(position)
    while True:
        wake = changed()  # taken before the buffer is read: no wake-up in between is missed
        batch = buffer.after(position)
        if batch is None:
            if closed():
                return
            batch, read_up_to = await read_after(position)
            if read_up_to != position:
                for event in batch:
                    yield event
                position = read_up_to
                continue
        if batch:
            for event in batch:
                position = event.position
                yield event
            continue
        if closed():
            return
        if (error := failure()) is not None:
            raise UserInteractionError(error.message, error.code)
        await wake.wait()


class SharedRelay(abc.ABC):
    """What :class:`~interaction.redis.RedisRelay` and
    :class:`~interaction.postgres.PostgresRelay` do alike, around what each engine does
    its own way (the abstract methods): connecting once for every caller, the tasks it
    keeps, the heartbeat's round, withdrawing a question, taking an answer or a dismissal,
    and closing."""

    settled_ttl: float
    lease_ttl: float
    max_pending: int
    team: Team | None
    _waiters: LocalWaiters
    _requests: RequestCache

    def __init__(self) -> None:
        self._ready: asyncio.Future[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._withdraw_later: set[str] = set()
        self._closed = False

    # ------------------------------------------------------------------ each engine's

    @abc.abstractmethod
    async def _start(self) -> None:
        """Reach the store, check it, and start the tail and the heartbeat."""

    @abc.abstractmethod
    async def _heartbeat(self, *, release: bool = False) -> None:
        """Refresh this asker's lease (or, ``release``, give it up) and tidy the store."""

    @abc.abstractmethod
    async def _recheck(self, *only: str) -> None:
        """Settle the local waiters whose question the store says is settled, or lost."""

    @abc.abstractmethod
    async def _publish(self, question_id: str, request: AskUserQuestionRequest) -> list[str]:
        """Ask ``request`` as ``question_id`` in the store, in one step: ``["asked", id,
        position]``, ``["attached", id]`` (to the question pending under its key),
        ``["answered" or "cancelled", id, answer, answerer]`` (settled under its key) or
        ``["full"]``."""

    @abc.abstractmethod
    async def _settle(
        self, question_id: str, outcome: str, answer: str = "", answerer: str | None = None
    ) -> list[str]:
        """Settle the question if it is pending: ``["ok", ...]`` or ``[other, state]``."""

    @abc.abstractmethod
    async def _approve(
        self, question_id: str, approver: str, quorum: int, answer: str
    ) -> list[str]:
        """One approval of a quorum question, in one atomic step: ``["approved", ...]``
        (counted, still waiting), ``["again", ...]`` (that approver had approved),
        ``["settled", ...]`` (the quorum reached) or ``[other, state]``."""

    @abc.abstractmethod
    async def _stored_approvals(self, question_id: str) -> str | None:
        """The approvals stored with a question, as the store keeps them."""

    @abc.abstractmethod
    async def _not_pending_now(self, question_id: str) -> UserInteractionError:
        """The ``NOT_PENDING`` error for a question, saying why from its stored state."""

    @abc.abstractmethod
    async def lookup(self, question_id: str) -> PendingQuestion | None: ...

    @abc.abstractmethod
    def _events_after(self, after: str) -> AsyncGenerator[RelayEvent, None]: ...

    @abc.abstractmethod
    async def _shut(self, started: bool) -> None:
        """Closing, once the asks here are ended: stop the tail and the tasks, read what is
        left for the event iterators (if the relay had ``started``), close connections."""

    # ------------------------------------------------------------------ alike

    def _ms(self, seconds: float) -> int:
        return max(1, round(seconds * 1000))

    def _spawn(self, coroutine: Awaitable[None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def connect(self) -> None:
        """Reach the store, check it and start tailing it; ``RELAY_UNAVAILABLE`` if it
        cannot be (a Postgres relay's tables missing too: run its ``migrate()``).

        Called by every method on first use; call it first to fail fast (``interaction
        serve`` does).
        """
        if self._closed:
            raise UserInteractionError(DISPOSED_MESSAGE, ErrorCode.ASK_ABORTED)
        if self._ready is None:
            self._ready = asyncio.ensure_future(self._start())
        ready = self._ready
        try:
            await asyncio.shield(ready)
        except UserInteractionError:
            if self._ready is ready:
                self._ready = None  # the next call tries again
            raise

    async def _beat(self) -> None:
        """Refresh the lease, withdraw the questions of lapsed askers, retry withdrawals,
        and settle the local asks whose question was settled without an event read here."""
        while not self._closed:
            await asyncio.sleep(self.lease_ttl / 3)
            with contextlib.suppress(UserInteractionError):
                await self._heartbeat()
                await self._recheck()
                for question_id in list(self._withdraw_later):
                    await self._settle(question_id, "aborted")
                    self._withdraw_later.discard(question_id)

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        check_request(request)
        if self.team is not None and request.assignment is not None:
            check_assignment_in(self.team, request)
        await self.connect()
        waiter = Waiter(request, asyncio.get_running_loop().create_future())
        unlisten = end_on_abort(request, waiter.future)  # not only a cancellation ends it
        question_id = secrets.token_urlsafe(12)
        self._waiters.add(question_id, waiter)  # before publishing
        maybe_published = True
        try:
            reply = await self._publish(question_id, request)
            waiter.published = True
            if reply[0] != "asked":
                self._waiters.drop(question_id, waiter)
                maybe_published = reply[0] == "attached"
                if reply[0] == "full":
                    raise UserInteractionError(
                        f"the relay already holds {self.max_pending} pending questions",
                        RELAY_FULL,
                    )
                if reply[0] in ("answered", "cancelled"):  # a restarted asker: at once
                    question_id = reply[1]  # (its approvals, if any, are read from there)
                    waiter.settled_by(reply[3])
                    if reply[0] == "cancelled":
                        raise cancelled_error()
                    return decode_answer(reply[2], request)
                question_id = reply[1]  # attached to the question asked under its key
                self._waiters.add(question_id, waiter)
                await self._recheck(question_id)  # settled before we listened?
            return await waiter.future
        finally:
            unlisten()
            await self._read_approvals(question_id, waiter)
            waiter.report()
            self._waiters.drop(question_id, waiter)
            # Not settled by the store (a cancelled wait cancels the future itself, an
            # abort settles it): withdraw, unless a keyed ask ends by anything but its
            # signal (a restarted asker takes it up).
            future = waiter.future
            unsettled = future.cancelled() or not future.done()
            signal = request.signal
            aborted = signal is not None and signal.aborted
            if maybe_published and (aborted or (unsettled and request.key is None)):
                # Withdraw, even while being cancelled: shielded, so it completes.
                await asyncio.shield(self._withdraw(question_id))

    async def _read_approvals(self, question_id: str, waiter: Waiter) -> None:
        """For an audit around the relay: the approvals of a quorum question that a named
        assignee settled, read back from the store (one trip, for those questions only)."""
        assignment = waiter.request.assignment
        if assignment is None or assignment.quorum is None or waiter.answerer is None:
            return
        if not listening():
            return
        with contextlib.suppress(UserInteractionError):
            stored = await asyncio.shield(self._stored_approvals(question_id))
            waiter.approvals = approvals_from_store(stored)

    async def _withdraw(self, question_id: str) -> None:
        if self._closed:
            return
        try:
            await self._settle(question_id, "aborted")
        except UserInteractionError:
            self._withdraw_later.add(question_id)  # the heartbeat tries again

    def events(self, after: str) -> AsyncGenerator[RelayEvent, None]:
        return self._events_after(after)

    def hear_every_question(self) -> None:  # noqa: B027 - a Redis relay hears every event
        """Say this process serves the people who answer (a page, a desk): from now on its
        tail hears every question asked and settled, and keeps each one's request until it
        settles (:meth:`heard_request`). A relay's first call of the clients' side
        (:meth:`snapshot`, :meth:`events`, :meth:`lookup`, :meth:`heard_request`) does the
        same; a server calls this before its first question, so that it has heard them
        all. Until then a Postgres relay hears only its own questions' outcomes: an
        asker's process is not woken by every other asker's events. A Redis relay always
        hears every event."""

    def heard_request(self, question_id: str) -> AskUserQuestionRequest | None:
        """The request of a question this process's tail heard asked and has not heard
        settled (no trip to the store), or None: look it up. It may have settled since,
        unheard yet; a claim on it says so (``NOT_PENDING``), as one after a lookup would."""
        self.hear_every_question()
        return self._requests.heard(question_id)

    async def submit(
        self, question_id: str, answer: object, *, answerer: str | None = None
    ) -> AskUserQuestionAnswer:
        await self.connect()
        request = self._requests.get(question_id)
        if request is None:
            question = await self.lookup(question_id)
            if question is None:
                raise await self._not_pending_now(question_id)
            request = question.request
        if not may_answer(self.team, answerer, request):
            raise not_assigned_error(question_id, answerer)
        try:
            checked = check_answer(request, answer)  # a bad answer leaves it pending
        except UserInteractionError:
            if await self.lookup(question_id) is None:  # not pending any more, in fact
                raise await self._not_pending_now(question_id) from None
            raise
        quorum = None if request.assignment is None else request.assignment.quorum
        if quorum is not None and answerer is not None and approves(request, checked):
            reply = await self._approve(question_id, answerer, quorum, dumps(checked))
        else:
            reply = await self._settle(question_id, "answered", dumps(checked), answerer)
        if reply[0] not in ("ok", "settled", "approved", "again"):
            raise not_pending(question_id, reply[1])
        return checked

    async def dismiss(self, question_id: str, *, answerer: str | None = None) -> None:
        await self.connect()
        request = self._requests.get(question_id)
        if request is None:
            question = await self.lookup(question_id)
            request = None if question is None else question.request
        if request is not None and not may_answer(self.team, answerer, request):
            raise not_assigned_error(question_id, answerer)
        reply = await self._settle(question_id, "cancelled", answerer=answerer)
        if reply[0] != "ok":
            raise not_pending(question_id, reply[1])

    async def aclose(self) -> None:
        """Stop: plain questions asked here are withdrawn (``resolved/aborted``), keyed ones
        stay pending for a restarted asker; local asks end with ``ASK_ABORTED``, iterators
        end after the events up to now."""
        if self._closed:
            return
        self._closed = True
        ready, self._ready = self._ready, None
        if ready is not None and not ready.done():
            with contextlib.suppress(BaseException):
                await ready
        started = ready is not None and not ready.cancelled() and ready.exception() is None
        self._waiters.abort_all(DISPOSED_MESSAGE)
        if started:
            with contextlib.suppress(UserInteractionError):
                await self._heartbeat(release=True)
        await self._shut(started)

    async def _cancel_tasks(self) -> None:
        """Cancel the relay's tasks and wait for them to end."""
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task

    @property
    def closed(self) -> bool:
        return self._closed
