"""The event stream (``GET /api/events``): a snapshot of what is pending, then the
relay's events as server-sent events, with keep-alives between them; resumed from a
``Last-Event-ID`` where the relay can replay, and bounded in number.

Each stream shows its reader only the questions :class:`~._access.Access` lets them see,
and tells :class:`~._answers.QuestionMemory` what it shows and how questions settle.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Final

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from .._core import UserInteractionError
from ..relay import STALE_POSITION, RelayBackend, RelayEvent, RelaySnapshot
from ._access import Access
from ._answers import QuestionMemory
from ._guard import _only, _user
from ._json import _error, question_json

__all__ = ["DEFAULT_MAX_STREAMS", "KEEPALIVE_SECONDS", "RETRY_MS", "TEXTS_KEPT", "EventStreams"]

KEEPALIVE_SECONDS: Final = 15.0
RETRY_MS: Final = 1_000
"""How long a browser waits before reconnecting a dropped stream (the SSE ``retry:``)."""
TEXTS_KEPT: Final = 1_000
"""How many recent events the app keeps as SSE text, built once for every open stream."""
DEFAULT_MAX_STREAMS: Final = 64
"""How many event streams the app keeps open at once by default."""

# Built once: json.dumps builds an encoder at every call that passes an option. No cycle
# check, as the app encodes only the fresh trees of dicts and lists it builds itself.
_EVENT_JSON: Final = json.JSONEncoder(ensure_ascii=False, check_circular=False)


def _sse(kind: str, data: object, event_id: str | None = None) -> str:
    head = f"event: {kind}\n" if event_id is None else f"id: {event_id}\nevent: {kind}\n"
    return f"{head}data: {_EVENT_JSON.encode(data)}\n\n"


def _event_json(event: RelayEvent) -> str:
    position = event.position or None
    if event.kind != "resolved":  # requested, or approved: the question as it stands
        assert event.question is not None
        return _sse(event.kind, question_json(event.question), position)
    resolved: dict[str, object] = {"id": event.id, "outcome": event.outcome}
    if event.answerer is not None:  # a named user answered or dismissed it, on any host
        resolved["answerer"] = event.answerer
    return _sse("resolved", resolved, position)


def _snapshot_json(snapshot: RelaySnapshot) -> str:
    questions = [question_json(q) for q in snapshot.questions]
    return _sse("snapshot", {"questions": questions}, snapshot.position)


class _EventStream(StreamingResponse):
    """An event stream that gives its place back however it ends, also when the client
    left before its first byte (the body's generator, never started, runs no cleanup).

    A stream the stopping server cancels (it had not ended within the server's grace,
    on a machine too busy to finish its ``closing`` event in time) ends there, quietly:
    the server is going away, and uvicorn would log the cancellation as an "Exception in
    ASGI application" with a traceback on stderr."""

    def __init__(
        self,
        content: AsyncIterator[str],
        release: Callable[[], None],
        stopping: Callable[[], bool],
    ) -> None:
        super().__init__(content, media_type="text/event-stream")
        self._release = release
        self._stopping = stopping

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        except asyncio.CancelledError:
            if not self._stopping():
                raise
        finally:
            self._release()


class _Stale(Exception):
    """The relay cannot replay from the stream's position: send a fresh snapshot."""


class EventStreams:
    """The event stream route over ``relay``: at most ``max_streams`` open at once, each
    showing what ``access`` lets its reader see, and :meth:`close` to end them all."""

    def __init__(
        self, relay: RelayBackend, max_streams: int, access: Access, memory: QuestionMemory
    ) -> None:
        self.relay = relay
        self.max_streams = max_streams
        self.access = access
        self.memory = memory
        self.open: set[asyncio.Future[None]] = set()  # each open stream's stop
        self.stopping = False
        self.texts: OrderedDict[str, str] = OrderedDict()
        self.opened = 0  # streams opened, and keep-alives sent: for tests to watch
        self.keepalives = 0

    async def events(self, request: Request) -> Response:
        """A new stream, or ``503`` while the server stops or at the limit (a ``HEAD`` gets
        the headers a ``GET`` would, and no stream behind them)."""
        if self.stopping:
            return _error(503, "STOPPING", "the server is stopping")
        if request.method == "HEAD":
            return Response(media_type="text/event-stream")
        if len(self.open) >= self.max_streams:
            message = (
                f"{self.max_streams} event streams are open, the server's limit;"
                " close a page or try again shortly"
            )
            response = _error(503, "TOO_MANY_STREAMS", message)
            response.headers["retry-after"] = "1"
            return response
        # The stream holds its place from now on, so a burst cannot overshoot the limit.
        stop: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.open.add(stop)
        last = request.headers.get("last-event-id", "").strip() or None
        stream = self._stream(last, stop, _only(request)[0], _user(request))
        return _EventStream(stream, lambda: self.open.discard(stop), lambda: self.stopping)

    async def _stream(
        self,
        last_event_id: str | None,
        stop: asyncio.Future[None],
        only: str | None,
        user: str | None = None,
    ) -> AsyncIterator[str]:
        """A snapshot of what is pending, then the events, with keep-alives in between.

        With a ``Last-Event-ID`` the relay can replay from, the stream resumes there with
        exactly the events missed; otherwise, or when the relay says the position is stale
        (even mid-stream), it sends a fresh snapshot and goes on from its position. With
        ``only`` (a one-question session), it shows that question alone.
        """
        self.opened += 1
        head = f"retry: {RETRY_MS}\n"  # goes with the first text, whatever it is
        position = last_event_id
        try:
            while True:
                if position is None:
                    snapshot = await self.relay.snapshot()
                    if only is not None or not self.access.sees_everything(user):
                        shown = tuple(
                            q
                            for q in snapshot.questions
                            if (only is None or q.id == only) and self.access.sees(user, q)
                        )
                        snapshot = RelaySnapshot(snapshot.position, shown)
                    for question in snapshot.questions:
                        self.memory.shown(question)
                    yield head + _snapshot_json(snapshot)
                    head = ""
                    position = snapshot.position
                try:
                    following = self._follow(position, stop, only, user)
                    async with contextlib.aclosing(following) as texts:
                        async for text in texts:
                            yield head + text
                            head = ""
                except _Stale:
                    position = None  # too far behind, or a position from elsewhere
                    continue
                return
        except UserInteractionError as error:  # the relay's store is down, say
            yield head + _sse("unavailable", {"code": error.code, "message": error.message})
        finally:
            self.open.discard(stop)

    async def _follow(
        self,
        position: str,
        stop: asyncio.Future[None],
        only: str | None = None,
        user: str | None = None,
    ) -> AsyncGenerator[str, None]:
        """The events after ``position`` as SSE text, until the relay closes or ``stop``.

        The stream reads the relay's iterator itself, so a new event wakes it at once (a
        pump task in between cost one more turn of the loop per event). It reads the next
        event only once the last one is sent, so the relay's own rules for a reader that
        falls behind hold. A keep-alive spell or ``stop`` ends the wait through
        ``asyncio.timeout``, which also ends that iterator (its read is cancelled): the next
        wait opens a new one after the last event read, and the relay replays what came
        meanwhile, nothing lost or doubled. Raises :class:`_Stale` when the relay cannot
        replay from ``position``.
        """
        loop = asyncio.get_running_loop()
        waiting: list[asyncio.Timeout] = []  # the wait in progress, for stop to end at once

        def end_wait(_: object) -> None:
            for wait in waiting:
                wait.reschedule(loop.time())

        stop.add_done_callback(end_wait)
        events: AsyncGenerator[RelayEvent, None] | None = None
        try:
            while not stop.done():
                if events is None:
                    events = self.relay.events(position)
                try:
                    async with asyncio.timeout(KEEPALIVE_SECONDS) as wait:
                        waiting.append(wait)
                        try:
                            event = await anext(events)
                        finally:
                            waiting.clear()
                except StopAsyncIteration:
                    yield _sse("closing", {"reason": "closed"})
                    return
                except TimeoutError:
                    if not wait.expired():
                        raise  # the relay's own, not a keep-alive spell's end
                    with contextlib.suppress(Exception):  # ended by the cancelled read
                        await events.aclose()
                    events = None  # a new one at the next wait
                    if not stop.done():
                        self.keepalives += 1
                        yield ": keep-alive\n\n"
                    continue
                except UserInteractionError as error:
                    if error.code == STALE_POSITION:
                        raise _Stale from None
                    raise
                if event.position:
                    position = event.position
                self.memory.learn(event)
                hidden = event.question is not None and not self.access.sees(user, event.question)
                if (only is None or event.id == only) and not hidden:
                    yield self._event_text(event)
            yield _sse("closing", {"reason": "stopped"})
        finally:
            stop.remove_done_callback(end_wait)
            if events is not None:
                with contextlib.suppress(Exception):
                    await events.aclose()

    def close(self) -> None:
        """End every open event stream (with a ``closing`` event) and refuse new ones."""
        self.stopping = True
        for stop in list(self.open):
            if not stop.done():
                stop.set_result(None)

    def _event_text(self, event: RelayEvent) -> str:
        """The SSE text of ``event``, built once however many streams send it.

        A position names one event in the relay's total order, so it is the key; an event
        without one is built each time.
        """
        if not event.position:
            return _event_json(event)
        text = self.texts.get(event.position)
        if text is None:
            text = self.texts[event.position] = _event_json(event)
            if len(self.texts) > TEXTS_KEPT:
                self.texts.popitem(last=False)
        return text
