"""``AbortController`` and ``AbortSignal``, modelled on the web platform's, thread-safe."""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Final

from ._errors import ErrorCode, UserInteractionError, type_name

__all__ = ["AbortController", "AbortSignal", "short_repr"]

_log: Final = logging.getLogger("interaction")

AbortListener = Callable[[BaseException], object]


class AbortSignal:
    """Tells its holders, once, that an operation should stop, and why.

    Made by an :class:`AbortController` (or :meth:`timeout` / :meth:`any`), never directly.
    """

    __slots__ = (
        "__weakref__",
        "_deadline",
        "_holder",
        "_listeners",
        "_lock",
        "_next_key",
        "_reason",
        "_reason_traceback",
        "_timed",
    )

    def __init__(self) -> None:
        # Re-entrant: collecting a combined signal (see ``any``) unsubscribes it from its
        # sources, and the collection may run inside a source's own locked section.
        self._lock = threading.RLock()
        self._reason: BaseException | None = None
        self._reason_traceback: TracebackType | None = None
        self._listeners: dict[int, AbortListener] = {}
        self._next_key = 0
        # A timeout signal is held by the timer, and a combined signal by its sources, only
        # while it has listeners (as the web platform keeps them): one that nobody listens
        # to or refers to any more is collected before it aborts.
        self._timed = False
        self._holder: list[AbortSignal] | None = None
        self._deadline: float | None = None  # time.monotonic() of a timeout, if one is due

    @property
    def aborted(self) -> bool:
        return self._reason is not None

    @property
    def reason(self) -> BaseException | None:
        """Why the signal was aborted; ``None`` while it is not."""
        return self._reason

    def throw_if_aborted(self) -> None:
        """Raise :attr:`reason` if the signal is aborted.

        Each raise starts from the traceback the reason had when the signal was aborted,
        so raising it again and again does not grow its traceback.
        """
        reason = self._reason
        if reason is not None:
            raise reason.with_traceback(self._reason_traceback)

    def add_listener(self, callback: AbortListener) -> Callable[[], None]:
        """Call ``callback(reason)`` once on abort; at once if already aborted.

        Returns an idempotent function that removes the listener. The callback runs in
        the thread that aborts. An ``Exception`` from it is logged, never raised; the other
        listeners run all the same, and a ``KeyboardInterrupt`` or ``SystemExit`` from one
        is raised when they have (the timeout thread logs it and goes on).
        """
        with self._lock:
            reason = self._reason
            if reason is None:
                key = self._next_key
                self._next_key += 1
                if not self._listeners:
                    self._hold(True)
                self._listeners[key] = callback
                return lambda: self._remove(key)
        _call_listener(callback, reason)
        return _nothing

    def _remove(self, key: int) -> None:
        with self._lock:
            removed = self._listeners.pop(key, None)
            if removed is not None and not self._listeners:
                self._hold(False)
        # Dropped here, outside the lock: it may hold the last reference to a combination
        # of another signal, whose finalizer then takes that signal's lock. Under ours, two
        # threads removing such listeners crosswise would wait on each other for ever.
        del removed

    def _hold(self, held: bool) -> None:
        """Keep this signal alive (or stop) while it has listeners; under ``_lock``."""
        if self._timed:
            (_timers.hold if held else _timers.release)(self)
        holder = self._holder
        if holder is not None:
            holder[:] = [self] if held else []

    def _abort(self, reason: BaseException) -> None:
        listeners = self._settle(reason)
        if listeners:
            _run_listeners(listeners, reason)

    def _settle(self, reason: BaseException) -> list[AbortListener] | None:
        """Take ``reason`` and the listeners to tell; ``None`` if already aborted."""
        with self._lock:
            if self._reason is not None:
                return None
            self._reason = reason
            self._reason_traceback = reason.__traceback__
            listeners = list(self._listeners.values())
            self._listeners.clear()
            if listeners:
                self._hold(False)
            return listeners

    def __repr__(self) -> str:
        state = f"aborted, reason={self._reason!r}" if self._reason is not None else "pending"
        return f"<AbortSignal {state}>"

    @classmethod
    def timeout(cls, seconds: float) -> AbortSignal:
        """A signal that aborts with a ``TimeoutError`` after ``seconds``.

        ``seconds`` is a finite number from 0 to ``threading.TIMEOUT_MAX`` (about 292
        years); anything else, ``inf`` and ``nan`` included, is a ``ValueError``. The timer
        runs on one shared daemon thread, so no event loop is needed.
        """
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, int | float)
            or not 0 <= seconds <= MAX_TIMEOUT  # also refuses nan
        ):
            raise ValueError(
                "timeout seconds must be a non-negative number, finite and at most"
                f" {MAX_TIMEOUT:.0f}, got {short_repr(seconds)}"
            )
        signal = cls()
        signal._timed = True
        signal._deadline = time.monotonic() + float(seconds)
        _timers.schedule(float(seconds), signal)
        return signal

    @classmethod
    def any(cls, signals: Iterable[AbortSignal]) -> AbortSignal:
        """A signal that aborts, with the same reason, as soon as any of ``signals`` does.

        The sources hold the combined signal only weakly: once it is dropped, its listeners
        leave the sources, so combining with a long-lived signal does not accumulate. A
        combination of combinations, however deep, aborts in one loop, not one call deeper
        per level.
        """
        sources = list(signals)
        for source in sources:
            if not isinstance(source, AbortSignal):
                raise TypeError(f"AbortSignal.any() takes AbortSignals, got {type_name(source)}")
        combined = cls()
        due = [source._deadline for source in sources if source._deadline is not None]
        combined._deadline = min(due, default=None)
        for source in sources:
            reason = source.reason
            if reason is not None:
                combined._abort(reason)
                return combined
        removers: list[Callable[[], None]] = []

        def unsubscribe() -> None:
            for remove in removers:
                remove()

        # The finalizer holds the removers, and through them the sources, for as long as
        # the combined signal lives; calling it (on abort) or collecting the combined signal
        # unsubscribes, once.
        detach = weakref.finalize(combined, unsubscribe)
        detach.atexit = False
        target = weakref.ref(combined)
        holder: list[AbortSignal] = []  # holds the combined signal while it has listeners
        combined._holder = holder
        follow = _Follow(holder, target, detach)
        for source in sources:
            removers.append(source.add_listener(follow))
        if combined.aborted:  # a source aborted while we were subscribing
            detach()
        return combined


def signal_deadline(signal: AbortSignal) -> float | None:
    """When (``time.monotonic()``) ``signal`` times out: a :meth:`AbortSignal.timeout`
    signal's moment, the earliest of those an :meth:`AbortSignal.any` combines; ``None``
    when no timeout is due. For a host that must carry the timeout past this process
    (a durable workflow's recorded deadline)."""
    return signal._deadline


class AbortController:
    """Owns an :class:`AbortSignal` and aborts it."""

    __slots__ = ("_signal",)

    def __init__(self) -> None:
        self._signal = AbortSignal()

    @property
    def signal(self) -> AbortSignal:
        return self._signal

    def abort(self, reason: BaseException | None = None) -> None:
        """Abort the signal; later calls do nothing.

        Without ``reason`` the signal's reason is an ``ASK_ABORTED``
        :class:`UserInteractionError`. Safe from any thread.
        """
        if reason is None:
            reason = UserInteractionError("the signal was aborted", ErrorCode.ASK_ABORTED)
        elif not isinstance(reason, BaseException):
            raise TypeError(f"abort reason must be an exception, got {type_name(reason)}")
        self._signal._abort(reason)

    def __repr__(self) -> str:
        return f"<AbortController signal={self._signal!r}>"


def _nothing() -> None:
    return None


def short_repr(value: object, limit: int = 40) -> str:
    """``repr(value)`` cut to ``limit`` characters, and never the digits of a huge int
    (whose ``repr`` may raise), for messages about a bad argument."""
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**limit else "a huge int"
    return text if len(text) <= limit else f"{text[:limit]}..."


def _call_listener(listener: AbortListener, reason: BaseException) -> None:
    try:
        listener(reason)
    except Exception:
        _log.exception("an abort listener raised")


class _Follow:
    """A combined signal's listener on each of its sources (see ``AbortSignal.any``)."""

    __slots__ = ("detach", "holder", "target")

    def __init__(
        self,
        holder: list[AbortSignal],
        target: weakref.ref[AbortSignal],
        detach: Callable[[], object],
    ) -> None:
        # Through ``holder`` the sources keep a listened-to combined signal alive.
        self.holder = holder
        self.target = target
        self.detach = detach

    def __call__(self, reason: BaseException) -> None:
        listeners = self.settle(reason)
        if listeners:
            _run_listeners(listeners, reason)

    def settle(self, reason: BaseException) -> list[AbortListener] | None:
        """Abort the combined signal and unsubscribe it; its listeners, still to be told."""
        held = self.holder[:1]  # one read: another thread may empty the holder meanwhile
        signal = held[0] if held else self.target()
        listeners = signal._settle(reason) if signal is not None else None
        self.detach()
        return listeners


def _run_listeners(listeners: list[AbortListener], reason: BaseException) -> None:
    """Tell ``listeners`` of the abort, in order, and every combined signal they make abort.

    A combined signal's listeners are told where its ``_Follow`` stands, before the next
    listener of its source, as nested calls would, but from a stack of lists in one loop:
    some 3,000 combinations of combinations overflowed the call stack, and the outermost
    never aborted. Every listener runs, whatever one of them raises: an ask waiting on a
    signal must hear of the abort even when a listener before it fails.
    """
    interrupt: BaseException | None = None
    pending = [iter(listeners)]
    while pending:
        listener = next(pending[-1], None)
        if listener is None:
            pending.pop()
            continue
        try:
            if type(listener) is _Follow:
                if inner := listener.settle(reason):
                    pending.append(iter(inner))
            else:
                _call_listener(listener, reason)
        # KeyboardInterrupt, SystemExit, raised at the end; also one that lands in a settle
        # (a signal handler's Ctrl-C): the combinations after it must still abort.
        except BaseException as exc:
            if interrupt is None:
                interrupt = exc
    if interrupt is not None:
        raise interrupt


class _TimerThread:
    """One daemon thread that aborts timeout signals when they fall due.

    The heap refers to its signals weakly; a signal with listeners is held strongly in
    ``_held`` until it aborts or loses them. Entries of collected signals are dropped once
    they outnumber the live ones, so memory follows the signals still in use.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, weakref.ref[AbortSignal]]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None
        self._held: set[AbortSignal] = set()
        self._collected = 0

    def hold(self, signal: AbortSignal) -> None:
        with self._cond:
            self._held.add(signal)

    def release(self, signal: AbortSignal) -> None:
        with self._cond:
            self._held.discard(signal)

    def _forget(self, _: object) -> None:
        # A weakref callback: it may run in any thread, at any allocation, so it only counts.
        self._collected += 1

    def schedule(self, seconds: float, signal: AbortSignal) -> None:
        due = time.monotonic() + seconds
        with self._cond:
            if self._collected > len(self._heap) // 2 and len(self._heap) >= _COMPACT_AT:
                self._heap = [entry for entry in self._heap if entry[2]() is not None]
                heapq.heapify(self._heap)
                self._collected = 0
            heapq.heappush(self._heap, (due, next(self._order), weakref.ref(signal, self._forget)))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="interaction-abort-timer", daemon=True
                )
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        while True:
            try:
                self._fire_next()
            # Never let one fault stop every timeout in the process: a listener's SystemExit
            # would otherwise end this thread without a word.
            except BaseException:
                _log.exception("the abort timer failed; it goes on")

    def _fire_next(self) -> None:
        with self._cond:
            while not self._heap or self._heap[0][0] > time.monotonic():
                wait = self._heap[0][0] - time.monotonic() if self._heap else None
                self._cond.wait(None if wait is None else min(wait, MAX_TIMEOUT))
            _, _, ref = heapq.heappop(self._heap)
        signal = ref()
        if signal is not None:
            signal._abort(TimeoutError("the signal timed out"))


MAX_TIMEOUT: Final = threading.TIMEOUT_MAX
_COMPACT_AT: Final = 64
_timers: Final = _TimerThread()
