"""The notifier seam and its dispatcher: who is told when a question waits, and when.

:class:`Notifications` listens to a relay (any :class:`~interaction.relay.RelayBackend`)
beside the asks, never inside them: for each question that becomes pending it runs the
deployment's :class:`Step` list (a channel, and how long after the question was asked),
each step only while the question still waits; when it settles, the pending steps stop
and every channel that was told hears how it ended. A channel that fails is logged and
retried with backoff (:class:`Retry`), in its own task: nothing here can block or fail
an ask. Time comes from a :class:`Clock`, so tests move it instead of waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import heapq
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Final, Literal, Protocol

from .._core import AskUserQuestionRequest, UserInteractionError
from ..display import RequestView, present
from ..relay import STALE_POSITION, PendingQuestion, RelayBackend, RelayEvent
from ..signing import AnswerLinks

__all__ = [
    "SYSTEM_CLOCK",
    "Clock",
    "DeliveryError",
    "ManualClock",
    "Notice",
    "Notifications",
    "Notifier",
    "Outcome",
    "Retry",
    "Step",
]

log: Final = logging.getLogger("interaction.notify")

Outcome = Literal["answered", "cancelled", "aborted"]


class DeliveryError(Exception):
    """A channel could not deliver; the message is safe to log (it holds no secret).

    ``permanent`` failures (a 4xx from a webhook, say) are not retried.
    """

    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


@dataclass(frozen=True, slots=True)
class Notice:
    """What a channel is told about one question at one step.

    ``view`` is the display model (every model string escaped); ``link`` the signed,
    single-use answer link for this notice (``None`` without a public URL);
    ``idempotency_key`` is the same for the same question and step however often the
    notice is retried or re-sent after a restart. ``answerer`` is who settled the
    question (a named user, on any host), in the notice a channel's ``settled`` gets.
    """

    question_id: str
    request: AskUserQuestionRequest
    view: RequestView
    link: str | None
    step: int
    idempotency_key: str
    answerer: str | None = None


class Notifier(Protocol):
    """A channel: told when a question becomes pending and when it settles.

    ``name`` is for logs and must hold no secret (a webhook's host, not its URL). A method
    raises (best a :class:`DeliveryError`) when it could not deliver; the dispatcher
    retries it.
    """

    @property
    def name(self) -> str: ...

    async def pending(self, notice: Notice) -> None: ...

    async def settled(self, notice: Notice, outcome: Outcome | None) -> None: ...


@dataclass(frozen=True, slots=True)
class Step:
    """Tell ``notifier`` ``after`` seconds after the question was asked, if it still waits."""

    notifier: Notifier
    after: float = 0.0

    def __post_init__(self) -> None:
        if not self.after >= 0:
            raise ValueError(f"a step's delay must be 0 or more seconds, got {self.after!r}")


@dataclass(frozen=True, slots=True)
class Retry:
    """How a failed delivery is retried: ``attempts`` in all, waiting ``first`` seconds,
    then ``factor`` times longer each time, at most ``longest``; each attempt may take
    ``timeout`` seconds."""

    attempts: int = 5
    first: float = 1.0
    factor: float = 2.0
    longest: float = 300.0
    timeout: float = 30.0

    def delay(self, attempt: int) -> float:
        """The wait after failed attempt ``attempt`` (1-based)."""
        return float(min(self.longest, self.first * self.factor ** (attempt - 1)))


class Clock(Protocol):
    """Where the dispatcher reads the time and waits."""

    def now(self) -> datetime: ...

    async def sleep(self, seconds: float) -> None: ...


class _SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


SYSTEM_CLOCK: Final[Clock] = _SystemClock()


@dataclass(order=True)
class _Sleeper:
    due: datetime
    order: int
    wake: asyncio.Future[None] = field(compare=False)


class ManualClock:
    """A clock that stands still until :meth:`advance` moves it: for tests, never a wait."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = datetime(2026, 1, 1, tzinfo=UTC) if start is None else start
        self._sleepers: list[_Sleeper] = []
        self._order = 0
        self._slept = asyncio.Event()

    def now(self) -> datetime:
        return self._now

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        self._order += 1
        wake = asyncio.get_running_loop().create_future()
        heapq.heappush(
            self._sleepers, _Sleeper(self._now + timedelta(seconds=seconds), self._order, wake)
        )
        self._slept.set()
        try:
            await wake
        finally:
            if any(s.wake is wake for s in self._sleepers):  # cancelled: it waits no more
                self._sleepers = [s for s in self._sleepers if s.wake is not wake]
                heapq.heapify(self._sleepers)

    @property
    def sleeping(self) -> int:
        """How many sleeps are waiting for time to move."""
        return len(self._sleepers)

    async def until_sleeping(self, count: int = 1) -> None:
        """Wait until at least ``count`` sleeps wait for time to move (so that
        :meth:`advance` wakes them): a test's sync point, never a pause."""
        while len(self._sleepers) < count:
            self._slept.clear()
            await self._slept.wait()

    def advance(self, seconds: float) -> None:
        """Move time on; every sleep that is then due wakes (in due order)."""
        self._now += timedelta(seconds=seconds)
        while self._sleepers and self._sleepers[0].due <= self._now:
            sleeper = heapq.heappop(self._sleepers)
            if not sleeper.wake.done():
                sleeper.wake.set_result(None)


@dataclass(eq=False)
class _Tracked:
    """A question being notified about: its step tasks and what each channel was told."""

    question: PendingQuestion
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    calling: set[asyncio.Task[None]] = field(default_factory=set)  # mid-call: left to finish
    told: dict[int, tuple[Notifier, Notice]] = field(default_factory=dict)  # by id(notifier)
    settled: bool = False
    outcome: Outcome | None = None
    answerer: str | None = None
    closed: set[int] = field(default_factory=set)  # channels told how it ended


class Notifications:
    """Runs ``steps`` for every question pending on ``relay``; an async context manager.

    ``plan(question)`` may choose other steps for a question (by its provenance's source
    or tool, say): the per-request override of the deployment's steps. ``links`` and
    ``public_url`` make each notice's answer link; without them notices have none.
    Questions already pending when it starts are notified too, each step at its time
    counted from the question's ``asked_at``.
    """

    def __init__(
        self,
        relay: RelayBackend,
        steps: Sequence[Step],
        *,
        plan: Callable[[PendingQuestion], Sequence[Step]] | None = None,
        links: AnswerLinks | None = None,
        public_url: str | None = None,
        retry: Retry = Retry(),  # frozen: one default serves every call
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.relay = relay
        self.steps = tuple(steps)
        self.plan = plan
        self.links = links
        self.public_url = public_url
        self.retry = retry
        self.clock = clock
        self._tracked: dict[str, _Tracked] = {}
        self._runner: asyncio.Task[None] | None = None
        self._settling: set[asyncio.Task[bool]] = set()
        self._position = ""
        self._moved = asyncio.Event()

    async def __aenter__(self) -> Notifications:
        self._runner = asyncio.get_running_loop().create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop: no more notices; deliveries in flight are cancelled."""
        tasks: list[asyncio.Task[None] | asyncio.Task[bool]] = [
            t for tracked in self._tracked.values() for t in tracked.tasks
        ]
        tasks += [*self._settling, *([self._runner] if self._runner else [])]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        self._tracked.clear()

    async def caught_up(self) -> None:
        """Wait until every relay event so far has been seen (for tests and shutdown)."""
        target = (await self.relay.snapshot()).position
        while self._position != target:
            self._moved.clear()
            await self._moved.wait()

    # ------------------------------------------------------------------ following the relay

    async def _run(self) -> None:
        failures = 0
        while True:
            try:
                snapshot = await self.relay.snapshot()
                self._reconcile(snapshot.questions)
                self._seen(snapshot.position)
                async for event in self.relay.events(snapshot.position):
                    failures = 0
                    self._apply(event)
                    self._seen(event.position)
                return  # the relay closed
            except UserInteractionError as error:
                if error.code != STALE_POSITION:
                    failures += 1
                    wait = self.retry.delay(min(failures, 10))
                    log.warning("notify: the relay failed (%s); again in %gs", error.code, wait)
                    await self.clock.sleep(wait)
            except Exception as error:  # never the asks: notices only stop a while
                failures += 1
                wait = self.retry.delay(min(failures, 10))
                log.error(
                    "notify: following the relay failed (%s); again in %gs",
                    type(error).__name__,
                    wait,
                )
                await self.clock.sleep(wait)

    def _seen(self, position: str) -> None:
        if position:
            self._position = position
            self._moved.set()

    def _reconcile(self, pending: Sequence[PendingQuestion]) -> None:
        ids = {question.id for question in pending}
        for question_id in [q for q in self._tracked if q not in ids]:
            self._settle(question_id, None)
        for question in pending:
            if question.id not in self._tracked:
                self._start(question)

    def _apply(self, event: RelayEvent) -> None:
        if event.kind == "requested" and event.question is not None:
            if event.id not in self._tracked:
                self._start(event.question)
        elif event.kind == "resolved":
            self._settle(event.id, event.outcome, event.answerer)

    def _start(self, question: PendingQuestion) -> None:
        tracked = self._tracked[question.id] = _Tracked(question)
        steps = self.plan(question) if self.plan is not None else self.steps
        provenance = question.request.provenance
        asked = provenance.asked_at if provenance is not None else None
        waited = 0.0 if asked is None else (self.clock.now() - asked).total_seconds()
        loop = asyncio.get_running_loop()
        for index, step in enumerate(steps):
            delay = max(0.0, step.after - max(0.0, waited))
            task = loop.create_task(self._step(tracked, index, step, delay))
            tracked.tasks.add(task)
            task.add_done_callback(tracked.tasks.discard)

    def _settle(
        self, question_id: str, outcome: Outcome | None, answerer: str | None = None
    ) -> None:
        tracked = self._tracked.pop(question_id, None)
        if tracked is None:
            return
        tracked.settled, tracked.outcome, tracked.answerer = True, outcome, answerer
        for task in tracked.tasks - tracked.calling:
            task.cancel()  # the steps still to come, and their retries, stop here
        # A call already made may have reached its channel: it finishes, and that channel
        # then hears how the question ended too (see _step).
        for notifier, notice in list(tracked.told.values()):
            self._closing(tracked, notifier, notice)

    def _closing(self, tracked: _Tracked, notifier: Notifier, notice: Notice) -> None:
        """Tell ``notifier`` how the question ended, once per channel."""
        if id(notifier) in tracked.closed:
            return
        tracked.closed.add(id(notifier))
        ended = dataclasses.replace(notice, answerer=tracked.answerer)
        call = functools.partial(notifier.settled, ended, tracked.outcome)
        told = asyncio.get_running_loop().create_task(self._deliver(notifier, "settled", call))
        self._settling.add(told)
        told.add_done_callback(self._settling.discard)

    # ------------------------------------------------------------------ delivering

    async def _step(self, tracked: _Tracked, index: int, step: Step, delay: float) -> None:
        if delay > 0:
            await self.clock.sleep(delay)
        question = tracked.question
        link = None
        if self.links is not None and self.public_url is not None:
            link = self.links.link(question.id, self.public_url)
        notice = Notice(
            question.id,
            question.request,
            present(question.request),
            link,
            index,
            f"{question.id}.{index}",
        )
        call = functools.partial(step.notifier.pending, notice)
        if await self._deliver(step.notifier, "pending", call, tracked):
            tracked.told[id(step.notifier)] = (step.notifier, notice)
            if tracked.settled:  # it settled while this call was out
                self._closing(tracked, step.notifier, notice)

    async def _deliver(
        self,
        notifier: Notifier,
        what: str,
        call: Callable[[], Awaitable[None]],
        tracked: _Tracked | None = None,
    ) -> bool:
        """Call until it succeeds, at most ``retry.attempts`` times; true when it did.

        With ``tracked`` (a pending notice), a settlement stops the retries.
        """
        retry = self.retry
        task = asyncio.current_task()
        for attempt in range(1, retry.attempts + 1):
            if tracked is not None and tracked.settled:
                return False
            try:
                async with asyncio.timeout(retry.timeout):
                    if tracked is not None and task is not None:
                        tracked.calling.add(task)
                    try:
                        await call()
                    finally:
                        if tracked is not None and task is not None:
                            tracked.calling.discard(task)
                return True
            except DeliveryError as error:
                why = str(error)
                if error.permanent:
                    log.error("notify: %s: %s notice refused: %s", notifier.name, what, why)
                    return False
            except TimeoutError:
                why = f"no answer in {retry.timeout:g}s"
            except Exception as error:  # a channel must never fail an ask
                why = type(error).__name__  # its message may hold a URL with a secret
            if attempt == retry.attempts:
                log.error(
                    "notify: %s: gave up on a %s notice after %d attempts: %s",
                    notifier.name,
                    what,
                    attempt,
                    why,
                )
                return False
            wait = retry.delay(attempt)
            log.warning(
                "notify: %s: %s notice failed (attempt %d/%d): %s; again in %gs",
                notifier.name,
                what,
                attempt,
                retry.attempts,
                why,
                wait,
            )
            await self.clock.sleep(wait)
        return False
