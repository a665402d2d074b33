"""``AbortController`` and ``AbortSignal``, modelled on the web platform's, thread-safe."""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Final

from ._errors import ErrorCode, UserInteractionError

__all__ = ["AbortController", "AbortSignal"]

_log: Final = logging.getLogger("interaction")

AbortListener = Callable[[BaseException], object]


class AbortSignal:
    """Tells its holders, once, that an operation should stop, and why.

    Made by an :class:`AbortController` (or :meth:`timeout` / :meth:`any`), never directly.
    """

    __slots__ = ("__weakref__", "_listeners", "_lock", "_next_key", "_reason")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reason: BaseException | None = None
        self._listeners: dict[int, AbortListener] = {}
        self._next_key = 0

    @property
    def aborted(self) -> bool:
        return self._reason is not None

    @property
    def reason(self) -> BaseException | None:
        """Why the signal was aborted; ``None`` while it is not."""
        return self._reason

    def throw_if_aborted(self) -> None:
        """Raise :attr:`reason` if the signal is aborted."""
        reason = self._reason
        if reason is not None:
            raise reason

    def add_listener(self, callback: AbortListener) -> Callable[[], None]:
        """Call ``callback(reason)`` once on abort; at once if already aborted.

        Returns an idempotent function that removes the listener. The callback runs in
        the thread that aborts; an exception from it is logged, never raised.
        """
        with self._lock:
            reason = self._reason
            if reason is None:
                key = self._next_key
                self._next_key += 1
                self._listeners[key] = callback
                return lambda: self._remove(key)
        _call_listener(callback, reason)
        return _nothing

    def _remove(self, key: int) -> None:
        with self._lock:
            self._listeners.pop(key, None)

    def _abort(self, reason: BaseException) -> None:
        with self._lock:
            if self._reason is not None:
                return
            self._reason = reason
            listeners = list(self._listeners.values())
            self._listeners.clear()
        for listener in listeners:
            _call_listener(listener, reason)

    def __repr__(self) -> str:
        state = f"aborted, reason={self._reason!r}" if self._reason is not None else "pending"
        return f"<AbortSignal {state}>"

    @classmethod
    def timeout(cls, seconds: float) -> AbortSignal:
        """A signal that aborts with a ``TimeoutError`` after ``seconds``.

        The timer runs on one shared daemon thread, so no event loop is needed.
        """
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
            raise ValueError(f"timeout seconds must be a non-negative number, got {seconds!r}")
        signal = cls()
        _timers.schedule(seconds, signal)
        return signal

    @classmethod
    def any(cls, signals: Iterable[AbortSignal]) -> AbortSignal:
        """A signal that aborts, with the same reason, as soon as any of ``signals`` does."""
        sources = list(signals)
        combined = cls()
        for source in sources:
            if source.aborted:
                assert source.reason is not None
                combined._abort(source.reason)
                return combined
        removers: list[Callable[[], None]] = []

        def follow(reason: BaseException) -> None:
            combined._abort(reason)
            for remove in removers:
                remove()

        for source in sources:
            removers.append(source.add_listener(follow))
        if combined.aborted:  # a source aborted while we were subscribing
            for remove in removers:
                remove()
        return combined


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
            raise TypeError(f"abort reason must be an exception, got {type(reason).__name__}")
        self._signal._abort(reason)

    def __repr__(self) -> str:
        return f"<AbortController signal={self._signal!r}>"


def _nothing() -> None:
    return None


def _call_listener(listener: AbortListener, reason: BaseException) -> None:
    try:
        listener(reason)
    except Exception:
        _log.exception("an abort listener raised")


class _TimerThread:
    """One daemon thread that aborts timeout signals when they fall due."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, AbortSignal]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def schedule(self, seconds: float, signal: AbortSignal) -> None:
        due = time.monotonic() + seconds
        with self._cond:
            heapq.heappush(self._heap, (due, next(self._order), signal))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="interaction-abort-timer", daemon=True
                )
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    wait = self._heap[0][0] - time.monotonic() if self._heap else None
                    self._cond.wait(wait)
                _, _, signal = heapq.heappop(self._heap)
            signal._abort(TimeoutError("the signal timed out"))


_timers: Final = _TimerThread()
