"""The Redis relay's tail: one blocking ``XREAD`` per process, on the process's own inbox
(its askers' settles) and, while event iterators are open, on the whole stream; every entry
checked against its question's hash, the waiters it settles woken, the events it bears out
kept for the process's event iterators."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.typing import EncodableT, KeyT, StreamIdT

from .._core import UserInteractionError
from .._shared_relay import OUTCOMES, EventBuffer, LocalWaiters, RequestCache, stale
from ..decisions import answerer_name
from ..relay import PendingQuestion, RelayEvent
from ..wire import approvals_from_store
from . import _scripts
from ._stream import StreamState, call, entries, key_of, readable, text, unavailable

__all__ = ["Checked", "Tail", "log"]

log: Final = logging.getLogger("interaction.redis_relay")

READ_COUNT: Final = 500
TAIL_BLOCK_MS: Final = 5_000
LINGER: Final = 5.0
"""Seconds the tail keeps reading the stream after the last event iterator closed: a page
that reloads, or a stream a keep-alive spell ended, opens the next one within that."""

Checked = tuple[str, Mapping[str, str], str | None]
"""A stream entry as its hash bears it out: position, fields kept, the stored state."""
Stored = tuple[str | None, str | None, str | None, str | None]
"""What a question's hash holds: its state, request, answer and answerer (None: no such
field)."""
Found = tuple[str, Mapping[str, str], Stored]
"""A stream entry as read: position, fields, and what its question's hash held then."""
Read = tuple[list[Found], str | None, list[object]]
"""The read script's reply: the stream's entries, the inbox's first id and its entries."""


class Tail:
    """This process's reader of its inbox after ``inbox_last`` and, while it has event
    iterators (``follow``), of the stream after ``buffer.last``.

    ``changed`` is set (and replaced) whenever the buffer grows, the store fails or the
    relay closes; ``failure`` is the ``RELAY_UNAVAILABLE`` error while the tail cannot read
    the store. The relay sets ``closed`` and ``stopping`` when it closes.
    """

    def __init__(
        self,
        client: aioredis.Redis,
        tail_client: aioredis.Redis,
        base: str,
        where: str,
        waiters: LocalWaiters,
        *,
        owner: str,
        lease_ms: int,
    ) -> None:
        self._client = client
        self._tail_client = tail_client
        self._read_script = client.register_script(_scripts.READ)
        self._base = base
        self._events_key = base + "events"
        self._inbox_key = base + "inbox:" + owner
        self._lease_ms = lease_ms
        self._where = where
        self._waiters = waiters
        # A fresh owner's inbox does not exist yet: all it will hold is ours to read.
        self.inbox_last = "0-0"
        self.following = False  # whether the tail's current read takes the stream too
        self._readers = 0
        self._linger_until = 0.0
        self.requests = RequestCache()
        self.buffer = EventBuffer(key_of, "0-0")
        self.changed = asyncio.Event()
        self.failure: UserInteractionError | None = None
        self.closed = False
        self.stopping = asyncio.Event()
        self.abandoned: asyncio.Future[Any] | None = None

    async def follow(self) -> None:
        """An event iterator opens: the tail reads the stream until it closes (and for
        ``LINGER`` after). A tail blocked on the inbox alone is poked awake by an entry
        there (which names no question), so it takes the stream up at once."""
        self._readers += 1
        if not self.following:
            # A poke that fails costs no event: the tail takes the stream up when its read
            # ends anyway (within TAIL_BLOCK_MS), and a store that is away fails the tail
            # too, which then says so to the iterators.
            with contextlib.suppress(RedisError, OSError):
                async with self._client.pipeline(transaction=False) as pipe:
                    pipe.xadd(self._inbox_key, {"poke": "1"}, maxlen=1000, approximate=True)
                    # A poke may be the inbox's first entry: it must expire with the lease.
                    pipe.pexpire(self._inbox_key, self._lease_ms)
                    await pipe.execute()

    def unfollow(self) -> None:
        """An event iterator closed."""
        self._readers -= 1
        if self._readers == 0:
            self._linger_until = time.monotonic() + LINGER

    def _wants_stream(self) -> bool:
        return self._readers > 0 or time.monotonic() < self._linger_until

    def _wake_readers(self) -> None:
        # A fresh Event each time: an iterator that waits on a set one would never yield
        # again, and the loop (this tail too) would spin on it for ever.
        changed, self.changed = self.changed, asyncio.Event()
        changed.set()

    def event(self, position: str, fields: Mapping[str, str]) -> RelayEvent | None:
        question_id = fields.get("id", "")
        kind = fields.get("kind")
        if kind in {"requested", "approved"}:
            try:
                request = self.requests.remember(question_id, fields.get("request", ""))
            except UserInteractionError:  # not a request: nothing a client could show
                return None
            approvals = approvals_from_store(fields.get("approvals"))
            question = PendingQuestion(question_id, request, approvals)
            if kind == "approved":
                approver = answerer_name(fields.get("answerer"))
                return RelayEvent(
                    "approved", question_id, question, position=position, answerer=approver
                )
            return RelayEvent("requested", question_id, question, position=position)
        outcome = fields.get("outcome")
        if outcome not in OUTCOMES:
            return None
        return RelayEvent(
            "resolved",
            question_id,
            outcome=OUTCOMES[outcome],
            position=position,
            answerer=answerer_name(fields.get("answerer")),
        )

    def checked(self, found: Sequence[Found]) -> list[Checked]:
        """The entries as the questions' hashes bear them out, with each one's stored state.

        Only the scripts write a hash and its entry, atomically; an entry written into the
        stream by another hand (a ``requested`` whose request is not the stored one, a
        ``resolved`` for a question still pending) is logged and kept as a bare position,
        so it settles nothing and shows nothing. A ``requested`` entry carries the stored
        request (the scripts' entries name only the question), a ``resolved`` one the
        stored outcome, answer and answerer, never its own.
        """
        return [self._check(position, raw, stored) for position, raw, stored in found]

    def _check(self, position: str, raw: Mapping[str, str], stored: Stored) -> Checked:
        """One entry as its question's hash bears it out (see :meth:`checked`)."""
        state, request, answer, answerer = stored
        fields = self._readable(position, raw)
        kind = fields.get("kind")
        if kind not in ("requested", "resolved", "approved"):  # no script writes one
            return (position, {}, None)
        if kind == "requested" and request is None:  # gone since (or never asked)
            return (position, {}, None)
        if kind == "approved":  # shown while it waits; once settled, its resolved says all
            shown = state == "pending" and request is not None and readable(request)
            approved = {**fields, "request": request or "", "approvals": answer or ""}
            return (position, approved if shown else {}, None)
        why = _not_borne_out(kind, fields, state, request)
        if why is not None:
            question_id = fields.get("id", "")
            log.warning("ignored the stream entry %s: question %r %s", position, question_id, why)
            return (position, {}, None)
        if kind == "requested":  # the entry names it; the hash holds the request
            return (position, {**fields, "request": request or ""}, state)
        if state is None:  # the hash is gone: nobody is named by the entry's word alone
            return (position, {k: v for k, v in fields.items() if k != "answerer"}, state)
        outcome = state if state in OUTCOMES else "aborted"
        settled = {**fields, "outcome": outcome, "answer": answer or "", "answerer": answerer or ""}
        return (position, settled, state)

    def _read_keys_args(
        self, after: str, inbox_after: str = ""
    ) -> tuple[list[str], list[str | int]]:
        """The read script's keys and arguments, after ``after`` in the stream ('': not the
        stream) and after ``inbox_after`` in the inbox ('': not the inbox)."""
        keys = [self._events_key, self._inbox_key]
        return keys, [self._base, after, READ_COUNT, inbox_after]

    async def _pipelined(
        self, store: aioredis.Redis, queue: Callable[[Pipeline], object]
    ) -> list[Any]:
        """Run the commands ``queue`` puts in a pipeline, where the read script goes by its
        digest (``EVALSHA``): the script's text is not sent at every read. A store that
        does not hold the script (it restarted, or its scripts were flushed) answers
        ``NOSCRIPT``: the script is loaded and the pipeline runs again. (A pipeline of
        redis-py's own ``Script`` objects would ask ``SCRIPT EXISTS`` at every run.)"""
        async with store.pipeline(transaction=False) as pipe:
            queue(pipe)
            try:
                replies: list[Any] = await pipe.execute()
            except NoScriptError:
                await store.script_load(_scripts.READ)
            else:
                return replies
        async with store.pipeline(transaction=False) as pipe:
            queue(pipe)
            replies = await pipe.execute()
            return replies

    def parsed(self, reply: object) -> Read:
        """The read script's reply: the stream's entries (``found``), the inbox's first
        id (None: no inbox) and its entries, as they came."""
        assert isinstance(reply, list)
        events, first, inbox = reply
        assert isinstance(inbox, list)
        return self.found(events), text(first), inbox

    def found(self, reply: object) -> list[Found]:
        """The stream's entries in the read script's reply, each with what its question's
        hash holds.

        A key that is not a hash (no script writes one) reads as no question: refused as a
        whole, the batch would be read again and again, and the tail would go no further.
        """
        assert isinstance(reply, list)
        found: list[Found] = []
        for entry_id, flat, held in reply:
            pairs = zip(flat[::2], flat[1::2], strict=True)  # an entry's fields come in pairs
            fields = {text(k) or "": text(v) or "" for k, v in pairs}
            stored: Stored = (None, None, None, None)
            if isinstance(held, list):
                if fields.get("kind") == "requested":
                    state, request = (text(item) for item in held)
                    stored = (state, request, None, None)
                elif fields.get("kind") == "approved":  # the approvals in the answer's place
                    state, request, approvals = (text(item) for item in held)
                    stored = (state, request, approvals, None)
                else:
                    state, answer, answerer = (text(item) for item in held)
                    stored = (state, None, answer, answerer)
            elif held is not None:  # the error's text in its place: WRONGTYPE
                question_id = fields.get("id", "")
                log.warning("question %r is not stored as a question: %s", question_id, held)
            found.append((text(entry_id) or "", fields, stored))
        return found

    async def read(self, after: str) -> list[Checked]:
        """The entries after ``after``, checked, in one round trip."""
        keys, args = self._read_keys_args(after)
        found, _, _ = self.parsed(await call(self._where, self._read_script(keys, args)))
        return self.checked(found)

    @staticmethod
    def _readable(position: str, fields: Mapping[str, str]) -> Mapping[str, str]:
        """The fields, or none when one is not UTF-8 text (but for a ``resolved`` entry's
        answer, which is taken from the hash: the asker refuses a bad one there)."""
        if all(readable(k) and (k == "answer" or readable(v)) for k, v in fields.items()):
            return fields
        log.warning("ignored the stream entry %s: it holds bytes that are not UTF-8", position)
        return {}

    def absorb(self, checked: Sequence[Checked]) -> None:
        """Take the checked entries the tail read: buffer them, wake the waiters they settle."""
        for position, fields, state in checked:
            event = self.event(position, fields)
            if event is None:
                self.buffer.advance(position)
                continue
            self.buffer.add(event)
            if event.kind == "resolved":
                self._waiters.wake(
                    event.id, state, fields.get("answer", ""), fields.get("answerer")
                )
        self._wake_readers()

    async def deliver(self, first: str | None, inbox: Sequence[object]) -> None:
        """Wake the waiters the inbox's entries settle, by their questions' hashes; when
        entries after ``inbox_last`` may have been trimmed unread (its first id is past
        it) or the inbox is gone, look each waiting question up again."""
        last = key_of(self.inbox_last) or (0, 0)
        lost = last != (0, 0) and (first is None or (key_of(first) or (0, 0)) > last)
        for entry in inbox:
            assert isinstance(entry, list)
            entry_id, named, held = entry
            self.inbox_last = text(entry_id) or self.inbox_last
            question_id = text(named)
            if question_id is None:  # a poke: it only woke the tail
                continue
            if not readable(question_id):
                log.warning(
                    "ignored the inbox entry %s: it holds bytes that are not UTF-8",
                    self.inbox_last,
                )
                continue
            if isinstance(held, list):
                state, answer, answerer = (text(item) for item in held)
                self._waiters.wake(question_id, state, answer or "", answerer)
            else:  # the error's text in its place: WRONGTYPE
                log.warning("question %r is not stored as a question: %s", question_id, held)
                self._waiters.wake(question_id, None, "")
        if lost:
            if first is None:  # expired, or the store lost it: the next one starts anew
                self.inbox_last = "0-0"
            await self.recheck()

    async def stream_state(self) -> StreamState:
        try:
            info: object = await self._client.xinfo_stream(self._events_key)
        except ResponseError as exc:
            if "no such key" in str(exc).lower():
                return StreamState()
            raise
        return StreamState.of(info)

    async def run(self) -> None:
        """Read the inbox, and the stream after the buffer's last position while event
        iterators want it, for ever; on a gap or after the store was away, look each local
        waiter's question up again."""
        down = False
        pause = 0.05
        while not self.closed:  # (the client may turn a cancelled read into an error)
            try:
                if down:
                    await self._resync()
                    down, pause, self.failure = False, 0.05, None
                # Taking the stream up again, the tail goes on from where it left it, so
                # the buffer holds every event since then (or, trimmed, it resets).
                following = self.following = self._wants_stream()
                read = asyncio.ensure_future(self._wait_and_read(following))
                stopping = asyncio.ensure_future(self.stopping.wait())
                try:
                    await asyncio.wait({read, stopping}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    stopping.cancel()
                    if not read.done():  # closing: aclose() ends it with its connection
                        self.abandoned = read
                if not read.done():
                    return
                found, first, inbox = self.parsed(read.result())
                await self.deliver(first, inbox)
                before = self.buffer.last
                # A first entry that names ``before`` as its predecessor follows on without
                # a gap; otherwise (or from a writer that does not say) ask XINFO.
                if found:
                    self.absorb(self.checked(found))
                    if found[0][1].get("prev") != before:
                        state = await self.stream_state()
                        if state.lost_after(key_of(before) or (0, 0)):  # trimmed unread
                            self.buffer.reset(self.buffer.last)
                            await self.recheck()
            except (RedisError, OSError, UserInteractionError) as exc:
                down = True
                if self.failure is None:  # the event iterators say so, and end
                    failure = exc if isinstance(exc, UserInteractionError) else None
                    self.failure = failure or unavailable(self._where, exc)
                    self._wake_readers()
                await asyncio.sleep(pause)
                pause = min(1.0, pause * 2)

    async def _wait_and_read(self, following: bool) -> object:
        """Block until the inbox (or, ``following``, the stream) holds an entry after the
        tail's position there, then read the entries and their hashes: a blocked client's
        next command waits in the server until the block ends, so both go out together and
        come back in one round trip.

        Both go straight on the connection of the tail's own client (a single-connection
        client: the tail has one read in flight at a time). A redis-py ``Pipeline`` per
        wake-up (its command stack, its reply callbacks, the pool's get and release) cost
        about a twentieth of a question's trip across hosts (benchmarks/RESULTS.md, (m)).
        The relay's ``aclose`` closes the client and its pool, and the connection with them
        (a read blocked on it ends)."""
        streams: dict[KeyT, StreamIdT] = {self._inbox_key: self.inbox_last}
        after = ""
        if following:
            after = self.buffer.last
            streams = {self._events_key: after, **streams}
        keys, args = self._read_keys_args(after, self.inbox_last)
        commands: list[list[EncodableT]] = [
            ["XREAD", "COUNT", 1, "BLOCK", TAIL_BLOCK_MS, "STREAMS", *streams, *streams.values()],
            ["EVALSHA", self._read_script.sha, len(keys), *keys, *args],
        ]
        connection = self._tail_client.connection
        if connection is None:  # the first read: the client takes its one connection
            await self._tail_client.initialize()
            connection = self._tail_client.connection
            assert connection is not None
        retried = False
        while True:
            try:
                await connection.send_packed_command(connection.pack_commands(commands))
                await connection.read_response()  # what woke it (the script's reply says all)
                return await connection.read_response()
            except NoScriptError:  # (both replies are in: the connection is in step)
                if retried:
                    raise
                await self._tail_client.script_load(_scripts.READ)
            except BaseException as exc:
                # A reply may be left unread (an error answered the XREAD, or the read was
                # cut off): dropped with the connection, which the next send opens again.
                await connection.disconnect(nowait=True)
                # One immediate retry, as the relay's clients make: after the store
                # restarted, the held connection was dead.
                lost = isinstance(exc, (RedisConnectionError, RedisTimeoutError))
                if retried or not lost or self.closed:
                    raise
            retried = True

    async def _resync(self) -> None:
        """After the store was away: was it reset (its stream or the inbox is behind us)?
        Recheck waiters."""
        last = (await self.stream_state()).last
        if last < (key_of(self.buffer.last) or (0, 0)):  # the store lost its data
            self.buffer.reset(f"{last[0]}-{last[1]}")
            self._wake_readers()
        newest = entries(await self._client.xrevrange(self._inbox_key, count=1))
        if not newest or (key_of(newest[0][0]) or (0, 0)) < (key_of(self.inbox_last) or (0, 0)):
            self.inbox_last = "0-0"  # what it holds came after we lost the store
        await self.recheck()

    async def recheck(self, *only: str) -> None:
        """Settle the local waiters (of ``only`` these questions, if given) whose question
        the store says is settled, or lost."""
        ids = self._waiters.published(*only)
        for start in range(0, len(ids), READ_COUNT):
            chunk = ids[start : start + READ_COUNT]
            script = self._client.eval(_scripts.SETTLED, 1, self._events_key, self._base, *chunk)
            reply: object = await call(self._where, script)
            assert isinstance(reply, list)
            for index in range(0, len(reply), 5):
                question_id, state, answer, answerer, error = (
                    text(v) for v in reply[index : index + 5]
                )
                if error is not None:
                    log.warning("question %r is not stored as a question: %s", question_id, error)
                self._waiters.wake(question_id or "", state, answer or "", answerer)

    async def check_position(self, position: str) -> None:
        """``STALE_POSITION`` unless the stream still holds what follows ``position``."""
        key = key_of(position)
        state = await call(self._where, self.stream_state())
        if key is None or key > state.last or state.lost_after(key):
            raise stale()

    async def read_after(self, position: str) -> tuple[list[RelayEvent], str]:
        """Events after ``position`` read from the store (a reader behind the buffer), and
        the position read up to."""
        keys, args = self._read_keys_args(position)

        def queue(pipe: Pipeline) -> None:
            pipe.evalsha(self._read_script.sha, len(keys), *keys, *args)
            pipe.xinfo_stream(self._events_key)

        read, info = await call(self._where, self._pipelined(self._client, queue))
        found, _, _ = self.parsed(read)
        if StreamState.of(info).lost_after(key_of(position) or (0, 0)):
            raise stale()
        checked = self.checked(found)
        events = [e for p, fields, _ in checked if (e := self.event(p, fields)) is not None]
        return events, found[-1][0] if found else position

    async def drain(self) -> None:
        """Read what is left after the buffer's last position for the iterators (the relay
        closes); a tail on its inbox alone has no iterators to give it to."""
        while self.following and (checked := await self.read(self.buffer.last)):
            self.absorb(checked)


def _not_borne_out(
    kind: str, fields: Mapping[str, str], state: str | None, request: str | None
) -> str | None:
    """Why a ``requested`` or ``resolved`` entry is not what its question's hash says, if
    it is not."""
    if kind == "requested" and request != fields.get("request", request):
        return "was not asked with that request"
    if kind == "requested" and not readable(request or ""):
        return "holds a request that is not UTF-8"
    if kind == "resolved" and state == "pending":
        return "is still pending"
    return None
