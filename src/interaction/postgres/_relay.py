"""The Postgres relay: :class:`PostgresRelay`'s methods, its lease, and its tail of the
events table (each event carried by a signed ``NOTIFY``, the table read after a gap; or
polling; or, while the relay has only asked, its own questions' outcomes alone, each on
its own channel)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import secrets
import types
import weakref
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import Final

import psycopg

from .._core import (
    DISPOSED_MESSAGE,
    AskUserQuestionRequest,
    ErrorCode,
    Team,
    UserInteractionError,
    request_digest,
)
from .._shared_relay import (
    OUTCOMES,
    EventBuffer,
    Key,
    LocalWaiters,
    RequestCache,
    SharedRelay,
    not_pending,
    replay,
    stale,
    stamped,
)
from ..decisions import answerer_name
from ..relay import (
    RELAY_UNAVAILABLE,
    PendingQuestion,
    RelayEvent,
    RelaySnapshot,
)
from ..wire import approvals_from_store, dumps
from . import _schema
from ._store import Connections, Row, describe, migrate, newer, unavailable

__all__ = ["PostgresRelay"]

log: Final = logging.getLogger("interaction.postgres_relay")

READ_COUNT: Final = 500
LISTEN_SAFETY_SECONDS: Final = 5.0
"""How often a listening tail reads anyway (a notification is never lost on a live
connection, but a read costs little)."""
SIGNATURE_HEX: Final = 64
"""The hex digits of a notification's signature (HMAC-SHA256)."""
ROW_LENGTH: Final = 9
"""The columns of an event as a tail reads it (``_sql_events``), and as a notification
carries it."""


@dataclass(frozen=True, slots=True)
class AnnounceKey:
    """The key the schema's trigger signs each notification's event row with (HMAC-SHA256,
    as its two pads)."""

    inner_pad: bytes
    outer_pad: bytes

    def carried(self, payload: str) -> Row | None:
        """The event row a notification carries (its signature in hex, then the row in
        the columns of a tail's read, a JSON array), or None for a position alone or
        anything not signed with this key."""
        signature, row_text = payload[:SIGNATURE_HEX], payload[SIGNATURE_HEX:]
        data = row_text.encode()
        inner = hashlib.sha256(self.inner_pad + data).digest()
        expected = hashlib.sha256(self.outer_pad + inner).hexdigest()
        if not hmac.compare_digest(signature.encode(), expected.encode()):
            return None
        row = json.loads(row_text)  # the trigger's JSON: it parses
        if not (isinstance(row, list) and len(row) == ROW_LENGTH and type(row[0]) is int):
            return None
        return tuple(row)


class PostgresRelay(SharedRelay):
    """A :class:`~interaction.relay.RelayBackend` whose questions live in PostgreSQL.

    Every process built with the same database and ``schema`` shares the questions, as
    with :class:`~interaction.redis.RedisRelay`. ``url`` is a libpq URL or
    connection string (``postgresql://user@host:5432/db``; the password from the URL,
    ``PGPASSWORD`` or ``~/.pgpass``). Create the tables once with :meth:`migrate`.

    ``max_pending``, ``history``, ``lease_ttl``, ``question_ttl`` and ``settled_ttl`` mean
    what they mean for the Redis relay. ``listen`` wakes the tail by ``LISTEN``/``NOTIFY``;
    turn it off behind a transaction-pooling PgBouncer (which does not pass notifications
    on), and the tail polls every ``poll_interval`` seconds instead. ``connections`` bounds
    the pool (one more connection listens). ``team`` resolves the groups questions are
    assigned to, as :class:`~interaction.relay.Relay`'s does; a quorum question's approvals
    are counted by one function call, a transaction under the schema's lock row.
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str = "interaction",
        max_pending: int = 10_000,
        history: int = 10_000,
        lease_ttl: float = 15.0,
        question_ttl: float = 86_400.0,
        settled_ttl: float = 86_400.0,
        listen: bool = True,
        poll_interval: float = 0.5,
        connections: int = 16,
        team: Team | None = None,
    ) -> None:
        super().__init__()
        _schema.check_schema(schema)
        self.team = team
        if history < 1 or max_pending < 1 or connections < 1:
            raise ValueError("history, max_pending and connections must be at least 1")
        if not (lease_ttl > 0 and question_ttl > 0 and settled_ttl > 0 and poll_interval > 0):
            raise ValueError(
                "lease_ttl, question_ttl, settled_ttl and poll_interval must be positive"
            )
        self.where = describe(url)
        """Where the database is (host:port/dbname, never credentials), for messages."""
        self.schema = schema
        self.max_pending = max_pending
        self.history = history
        self.lease_ttl = lease_ttl
        self.question_ttl = question_ttl
        self.settled_ttl = settled_ttl
        self.listen = listen
        self.poll_interval = poll_interval
        self.owner = secrets.token_urlsafe(9)
        """This relay's asker id: its lease and its questions' owner."""
        self._db = Connections(url, self.where, connections)
        s = f'"{schema}"'
        self._sql_ask = f"SELECT {s}.ask(%s, %s, %s, %s, %s, %s, %s, %s, %s)"
        self._sql_settle = f"SELECT {s}.settle(%s, %s, %s, %s, %s, %s)"
        self._sql_approve = f"SELECT {s}.approve(%s, %s, %s, %s, %s, %s)"
        self._sql_heartbeat = f"SELECT {s}.heartbeat(%s, %s, %s, %s, %s)"
        self._sql_snapshot = (
            f"SELECT m.epoch, m.last_position, q.id, q.request, q.approvals FROM {s}.meta m"
            f" LEFT JOIN {s}.questions q ON q.state = 'pending' ORDER BY q.position"
        )
        self._sql_events = (
            "SELECT e.position, e.kind, e.question_id, e.outcome, q.state, q.request,"
            f" q.answer, q.answerer, q.approvals FROM {s}.events e"
            f" LEFT JOIN {s}.questions q ON q.id = e.question_id"
            " WHERE e.position > %s ORDER BY e.position LIMIT %s"
        )
        self._sql_states = (
            f"SELECT id, state, answer, answerer FROM {s}.questions WHERE id = ANY(%s)"
        )
        self._sql_question = f"SELECT state, request, approvals FROM {s}.questions WHERE id = %s"
        self._sql_keyed = f"SELECT id FROM {s}.questions WHERE key = %s AND state = 'pending'"
        self._sql_meta = f"SELECT version, epoch, last_position FROM {s}.meta"
        self._sql_key = f"SELECT inner_pad, outer_pad FROM {s}.announce_key"
        self._sql_owner_channel = f"SELECT {s}.owner_channel(%s)"
        self._announce_key: AnnounceKey | None = None
        self._own_channel: str | None = None  # None: this relay hears every event
        self._hears_all = False  # a clients' side call was made here (it hears every event)
        self._behind = False  # hearing only its own channel, the tail has read nothing since
        self._listening_to = ""  # the open listener's channel
        self._epoch: str | None = None
        self._waiters = LocalWaiters(self._unavailable)
        self._requests = RequestCache(heard_kept=max_pending)
        self._buffer = EventBuffer(self._key_of, "")
        self._iterators: weakref.WeakSet[AsyncGenerator[RelayEvent, None]] = weakref.WeakSet()
        self._changed = asyncio.Event()
        self._failure: UserInteractionError | None = None  # the tail cannot read the store
        self._notified = asyncio.Event()
        self._listener: psycopg.AsyncConnection[Row] | None = None
        self._hearing: asyncio.Task[None] | None = None  # the listener's task
        self._stopping = asyncio.Event()

    # ------------------------------------------------------------------ plumbing

    def _unavailable(self, exc: BaseException) -> UserInteractionError:
        return unavailable(self.where, exc)

    def _key_of(self, position: str) -> Key | None:
        epoch, dot, number = position.partition(".")
        if not dot or epoch != self._epoch or not number.isdecimal() or len(number) > 18:
            return None
        return (int(number), 0)

    def _position(self, number: int) -> str:
        return f"{self._epoch}.{number}"

    async def migrate(self) -> None:
        """Create (or bring up to date) the schema's tables and functions, the stores'
        of :mod:`interaction.postgres` too, and record its version; safe to run again,
        and from several processes at once."""
        if self._closed:
            raise UserInteractionError(DISPOSED_MESSAGE, ErrorCode.ASK_ABORTED)
        await migrate(self._db, self.schema, "relay", self._refused)

    def _refused(self, message: str) -> UserInteractionError:
        return UserInteractionError(message, RELAY_UNAVAILABLE)

    def _newer(self, version: int) -> UserInteractionError:
        return self._refused(newer(self.where, self.schema, "relay", version))

    async def _rows_if_made(self, query: str, params: Sequence[object] = ()) -> list[Row] | None:
        """The rows of ``query``, or None when a table or function it names does not exist
        (no migration made it, or one by an earlier build)."""
        try:
            return await self._db.run(query, params)
        except UserInteractionError as error:
            if "does not exist" not in error.message:
                raise
            return None

    async def _start(self) -> None:
        rows = await self._rows_if_made(self._sql_meta)
        if not rows:
            raise UserInteractionError(
                f"the relay's tables are not in the database at {self.where} (schema"
                f" {self.schema!r}): run `await relay.migrate()` or `interaction serve"
                " --postgres URL --migrate` once",
                RELAY_UNAVAILABLE,
            )
        version, epoch, last = rows[0]
        if version > _schema.VERSION:
            raise self._newer(version)
        if version < _schema.VERSION:
            raise UserInteractionError(
                f"the relay's tables at {self.where} (schema {self.schema!r}) are at version"
                f" {version}: run `await relay.migrate()` to bring them to {_schema.VERSION}",
                RELAY_UNAVAILABLE,
            )
        self._epoch = epoch
        self._buffer.reset(self._position(last))
        if self.listen:
            self._announce_key = await self._read_key()
            self._own_channel = await self._read_own_channel()
            self._behind = self._own_channel is not None and not self._hears_all
        await self._heartbeat()
        if self.listen:
            await self._open_listener()
        self._spawn(self._tail())
        self._spawn(self._beat())

    async def _read_key(self) -> AnnounceKey | None:
        """The key notifications are signed with; None when tables migrated by an earlier
        build have none (their notifications carry positions alone)."""
        rows = await self._rows_if_made(self._sql_key)
        return AnnounceKey(bytes(rows[0][0]), bytes(rows[0][1])) if rows else None

    async def _read_own_channel(self) -> str | None:
        """The channel this relay hears its own questions settled on; None when the tables
        were migrated by an earlier build (there is none: it hears every event) or their
        notifications are not signed."""
        if self._announce_key is None:
            return None
        rows = await self._rows_if_made(self._sql_owner_channel, [self.owner])
        if rows is None:
            return None
        own: str = rows[0][0]
        return own if len(own.encode()) <= _schema.MAX_CHANNEL else None

    def hear_every_question(self) -> None:
        """Hear every question asked and settled from now on (see
        :meth:`SharedRelay.hear_every_question`): until then, or its first call of the
        clients' side, a listening relay hears only its own questions' outcomes, on its
        own channel."""
        if not self._hears_all:
            self._hears_all = True
            self._notified.set()  # the tail listens again, to the schema's channel

    def _channel(self) -> str:
        """The channel the tail should listen to now."""
        if self._hears_all or self._own_channel is None:
            return _schema.channel(self.schema)
        return self._own_channel

    async def _heartbeat(self, *, release: bool = False) -> None:
        lease = 0 if release else self._ms(self.lease_ttl)
        params = [self.owner, lease, self._ms(self.settled_ttl), 100, self.history]
        await self._db.run(self._sql_heartbeat, params)

    # ------------------------------------------------------------------ the tail

    async def _open_listener(self) -> None:
        """Listen to :meth:`_channel`. A connection that cannot listen (or is left by a
        cancellation: the relay closing) is closed at once."""
        channel = self._channel()
        listener = None
        try:
            listener = await self._db.open()
            await listener.execute(f'LISTEN "{channel}"')
        except BaseException as exc:
            if listener is not None:
                with contextlib.suppress(psycopg.Error, OSError):
                    await listener.close()
            if isinstance(exc, psycopg.Error | OSError):
                raise self._unavailable(exc) from None
            raise
        self._listener, self._listening_to = listener, channel
        self._hearing = self._spawn(self._hear(listener, own=channel == self._own_channel))

    async def _stop_listening(self) -> None:
        """End the task that hears the listener, then close the listener (the task does,
        unless it was cancelled before it ran). Closing the connection under the task
        would leave its socket's number registered with the event loop, and the next
        connection given that number would fail."""
        hearing, listener = self._hearing, self._listener
        self._hearing = self._listener = None
        if hearing is not None:
            hearing.cancel()
            await asyncio.wait({hearing})
        if listener is not None:
            with contextlib.suppress(psycopg.Error, OSError):
                await listener.close()

    async def _hear(self, listener: psycopg.AsyncConnection[Row], *, own: bool) -> None:
        """Take the event each notification carries, when it is the next one; else (a
        gap, a position alone) wake the tail to read the table. On the relay's ``own``
        channel, wake the waiters of the question each one settles, and the tail to look
        them all up for one it does not carry. When the connection fails, let the tail
        know."""
        try:
            async for notify in listener.notifies():
                key = self._announce_key
                row = None if key is None else key.carried(notify.payload)
                if own:
                    if row is None:
                        self._notified.set()
                    elif row[1] == "resolved":
                        self._wake_settled(row)
                    continue
                last = self._last()
                if row is not None and row[0] == last + 1:
                    self._absorb([row])
                elif row is None or row[0] > last:  # (one at or before last: read already)
                    self._notified.set()
        except (psycopg.Error, OSError):
            pass
        finally:
            if self._listener is listener:  # it failed (not stopped): the tail opens another
                self._listener = None
                self._notified.set()
            with contextlib.suppress(psycopg.Error, OSError):
                await listener.close()

    def _wake_readers(self) -> None:
        # A fresh Event each time: an iterator that waits on a set one would never yield
        # again.
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def _read(self, after: int) -> list[Row]:
        return await self._db.run(self._sql_events, [after, READ_COUNT])

    def _event(self, row: Row) -> RelayEvent | None:
        """The event of a row of the events table, as its question's row bears it out."""
        number, kind, question_id, outcome, state, request, _, answerer, approvals = row
        position = self._position(number)
        if kind in {"requested", "approved"}:
            if request is None:  # gone since (expired), or never asked
                return None
            if kind == "approved" and state != "pending":  # its resolved event says all
                return None
            try:
                decoded = self._requests.remember(question_id, request)
            except UserInteractionError as error:
                log.warning(
                    "ignored the event %s: question %r is not stored as a request (%s)",
                    position,
                    question_id,
                    error.message,
                )
                return None
            question = PendingQuestion(question_id, decoded, approvals_from_store(approvals))
            if kind == "approved":  # the approver is in the outcome column
                return RelayEvent(
                    "approved",
                    question_id,
                    question,
                    position=position,
                    answerer=answerer_name(outcome),
                )
            return RelayEvent("requested", question_id, question, position=position)
        if kind != "resolved":  # no function writes one: a position, and nothing more
            return None
        if state == "pending":
            log.warning("ignored the event %s: question %r is still pending", position, question_id)
            return None
        told = (state if state in OUTCOMES else "aborted") if state is not None else outcome
        if told not in OUTCOMES:
            return None
        return RelayEvent(
            "resolved",
            question_id,
            outcome=OUTCOMES[told],
            position=position,
            answerer=answerer_name(answerer),
        )

    def _absorb(self, rows: list[Row]) -> None:
        """Take the rows the tail read: buffer their events, wake the waiters they settle,
        and keep the stored text of each question heard asked until it is heard settled
        (:meth:`heard_request`: an answer to it is checked without a lookup). With no
        event iterator open here, only what settles a local waiter is made an event:
        nobody would read the rest (a request decoded for nothing), and an iterator
        opened later at an earlier position reads those from the table."""
        buffering = self._buffering()
        waiting = self._waiters.by_id
        for row in rows:
            kind, question_id = row[1], row[2]
            if kind == "resolved":
                self._requests.settled(question_id)
            elif kind == "requested" and row[4] == "pending" and isinstance(row[5], str):
                self._requests.hear(question_id, row[5])
            wanted = buffering or (kind == "resolved" and question_id in waiting)
            event = self._event(row) if wanted else None
            if event is None:
                self._buffer.advance(self._position(row[0]))
                continue
            if buffering:
                self._buffer.add(event)
            else:
                self._buffer.advance(event.position)
            if event.kind == "resolved":
                self._wake_settled(row)
        if not buffering:
            self._buffer.reset(self._buffer.last)
        self._wake_readers()

    def _wake_settled(self, row: Row) -> None:
        """Settle the local waiters of the question a ``resolved`` event's row names, by
        the state, answer and answerer its question's columns carry."""
        self._waiters.wake(row[2], row[4], row[6] or "", row[7])

    def _last(self) -> int:
        key = self._key_of(self._buffer.last)
        return 0 if key is None else key[0]

    async def _tail(self) -> None:
        """Read the events after the buffer's last position, for ever: when a
        notification does not carry the next event (:meth:`_hear` takes those), after
        ``LISTEN_SAFETY_SECONDS`` without one, or every ``poll_interval`` without
        ``LISTEN``. After a gap (events deleted before they were read) or after the
        database was away, look each local waiter's question up again. While the relay
        hears only its own channel, read nothing: look the waiters up whenever woken (a
        notification it could not take, a new listener), until it hears every event."""
        down = False
        pause = 0.05
        while not self._closed:
            try:
                if down:
                    await self._resync()
                    down, pause, self._failure = False, 0.05, None
                self._notified.clear()
                if self._listener is not None and self._listening_to != self._channel():
                    await self._stop_listening()
                if self.listen and self._listener is None:
                    await self._open_listener()
                if self._behind:
                    if self._listening_to == self._own_channel:
                        await self._recheck()
                        await self._wait(None)
                        continue
                    self._behind = False  # it hears every event: it reads them from its start
                before = self._last()
                rows = await self._read(before)
                if rows:
                    self._absorb([row for row in rows if row[0] > self._last()])
                    if rows[0][0] != before + 1:  # deleted unread: what did they settle?
                        self._buffer.reset(self._buffer.last)
                        await self._recheck()
                    if len(rows) == READ_COUNT:
                        continue
                await self._wait()
            except (psycopg.Error, OSError, UserInteractionError) as exc:
                down = True
                if self._failure is None:  # the event iterators say so, and end
                    failure = exc if isinstance(exc, UserInteractionError) else None
                    self._failure = failure or self._unavailable(exc)
                    self._wake_readers()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), pause)
                pause = min(1.0, pause * 2)

    async def _wait(self, wake_after: float | None = LISTEN_SAFETY_SECONDS) -> None:
        """Until a notification, the relay closing, or ``wake_after`` seconds (None: no
        bound; without a listener, the next poll)."""
        timeout = wake_after if self._listener is not None else self.poll_interval
        waits = {
            asyncio.ensure_future(self._notified.wait()),
            asyncio.ensure_future(self._stopping.wait()),
        }
        try:
            await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiting in waits:
                waiting.cancel()

    async def _resync(self) -> None:
        """After the database was away: was it reset (its events are behind us, or its
        epoch changed)? Recheck the waiters."""
        rows = await self._db.run(self._sql_meta)
        if not rows or rows[0][1] != self._epoch or rows[0][2] < self._last():
            epoch = rows[0][1] if rows else self._epoch
            self._epoch = epoch
            self._requests.forget_heard()
            self._buffer.reset(self._position(rows[0][2] if rows else 0))
            self._wake_readers()
        if self.listen:  # (made anew, or migrated since: its key may be another)
            self._announce_key = await self._read_key()
            self._own_channel = await self._read_own_channel()
        await self._recheck()

    async def _recheck(self, *only: str) -> None:
        """Settle the local waiters (of ``only`` these questions, if given) whose question
        the database says is settled, or lost."""
        ids = self._waiters.published(*only)
        for start in range(0, len(ids), READ_COUNT):
            chunk = ids[start : start + READ_COUNT]
            found = {row[0]: row for row in await self._db.run(self._sql_states, [chunk])}
            for question_id in chunk:
                row = found.get(question_id)
                if row is None:
                    self._waiters.wake(question_id, None, "")
                else:
                    self._waiters.wake(question_id, row[1], row[2] or "", row[3])

    # ------------------------------------------------------------------ the asker's side

    async def _publish(self, question_id: str, request: AskUserQuestionRequest) -> list[str]:
        params: list[object] = [
            question_id,
            dumps(stamped(request)),
            self.owner,
            self._ms(self.lease_ttl),
            self.max_pending,
            self._ms(self.question_ttl),
            self._ms(self.settled_ttl),
            request.key,
            request_digest(request) if request.key else None,
        ]
        return await self._function(self._sql_ask, params)

    async def _stored_approvals(self, question_id: str) -> str | None:
        rows = await self._db.run(self._sql_question, [question_id])
        return rows[0][2] if rows else None

    async def _approve(
        self, question_id: str, approver: str, quorum: int, answer: str
    ) -> list[str]:
        claim, settled_ms = secrets.token_urlsafe(9), self._ms(self.settled_ttl)
        params: list[object] = [question_id, approver, quorum, answer, settled_ms, claim]
        return await self._function(self._sql_approve, params)

    async def _function(self, query: str, params: list[object]) -> list[str]:
        """The text array one of the schema's functions returns."""
        rows = await self._db.run(query, params)
        reply: list[str] = rows[0][0]
        return reply

    async def withdraw_keyed(self, key: str) -> None:
        """Withdraw the pending question asked under resume key ``key``, as its asker's
        signal would (``resolved/aborted``: "withdrawn by the asker"); nothing if none is
        pending. For an asker whose wait outlives its process (a durable workflow whose
        deadline passed or that was cancelled), which may not know the question's id."""
        await self.connect()
        for (question_id,) in await self._db.run(self._sql_keyed, [key]):
            await self._settle(question_id, "aborted")  # only a pending question changes

    async def _settle(
        self,
        question_id: str,
        outcome: str,
        answer: str | None = None,
        answerer: str | None = None,
    ) -> list[str]:
        claim, settled_ms = secrets.token_urlsafe(9), self._ms(self.settled_ttl)
        named = answerer_name(answerer)
        params: list[object] = [question_id, outcome, answer, settled_ms, claim, named]
        return await self._function(self._sql_settle, params)

    # ------------------------------------------------------------------ the clients' side

    async def snapshot(self) -> RelaySnapshot:
        self.hear_every_question()
        await self.connect()
        rows = await self._db.run(self._sql_snapshot)
        questions: list[PendingQuestion] = []
        for _, _, question_id, text, approvals in rows:
            if question_id is None:  # no question pending: the meta row alone
                continue
            try:
                request = self._requests.remember(question_id, text)
            except UserInteractionError as error:
                log.warning(
                    "question %r is left out: it is not stored as a request (%s)",
                    question_id,
                    error.message,
                )
                continue
            questions.append(PendingQuestion(question_id, request, approvals_from_store(approvals)))
        epoch, last = rows[0][0], rows[0][1]
        if epoch != self._epoch:  # the tables were made anew: positions start again
            self._epoch = epoch
            self._requests.forget_heard()
            self._buffer.reset(self._position(last))
            self._wake_readers()
            if self.listen:
                self._announce_key = await self._read_key()
            await self._recheck()
        return RelaySnapshot(self._position(last), tuple(questions))

    def _events_after(self, after: str) -> AsyncGenerator[RelayEvent, None]:
        self.hear_every_question()
        iterator = self._follow(after)
        self._iterators.add(iterator)  # open from now: the tail buffers for it
        return iterator

    def _buffering(self) -> bool:
        """Whether an event iterator is open here (made, and neither ended nor dropped)."""
        if not self._iterators:  # (every notification asks: the common answer at once)
            return False
        return any(
            isinstance(iterator, types.AsyncGeneratorType) and iterator.ag_frame is not None
            for iterator in self._iterators
        )

    async def _follow(self, after: str) -> AsyncGenerator[RelayEvent, None]:
        if not self._closed:
            await self.connect()
        events = replay(
            self._buffer,
            after,
            changed=lambda: self._changed,
            failure=lambda: self._failure,
            closed=lambda: self._closed,
            read_after=self._read_after,
            check_position=self._check_position,
        )
        async with contextlib.aclosing(events):
            async for event in events:
                yield event

    async def _check_position(self, position: str) -> None:
        key = self._key_of(position)
        rows = await self._db.run(self._sql_meta)
        if key is None or not rows or rows[0][1] != self._epoch or key[0] > rows[0][2]:
            raise stale()

    async def _read_after(self, position: str) -> tuple[list[RelayEvent], str]:
        """Events after ``position`` read from the database (a reader behind the buffer),
        and the position read up to; ``STALE_POSITION`` when some were deleted."""
        key = self._key_of(position)
        if key is None:
            raise stale()
        rows = await self._read(key[0])
        if not rows:  # nothing yet (the tail has not read up to a fresh snapshot's position)
            return [], position
        if rows[0][0] != key[0] + 1:  # what followed it was deleted
            raise stale()
        events = [event for row in rows if (event := self._event(row)) is not None]
        return events, self._position(rows[-1][0])

    async def lookup(self, question_id: str) -> PendingQuestion | None:
        self.hear_every_question()
        await self.connect()
        rows = await self._db.run(self._sql_question, [question_id])
        if not rows or rows[0][0] != "pending":
            return None
        try:
            request = self._requests.remember(question_id, rows[0][1])
        except UserInteractionError:
            return None
        return PendingQuestion(question_id, request, approvals_from_store(rows[0][2]))

    async def _not_pending_now(self, question_id: str) -> UserInteractionError:
        """The ``NOT_PENDING`` error for a question, saying why from its stored state."""
        rows = await self._db.run(self._sql_question, [question_id])
        return not_pending(question_id, rows[0][0] if rows else "")

    async def _shut(self, started: bool) -> None:
        self._stopping.set()
        await self._stop_listening()
        await self._cancel_tasks()
        if started and not self._behind:
            with contextlib.suppress(UserInteractionError):
                while rows := await self._read(self._last()):
                    self._absorb(rows)
        self._changed.set()
        await self._db.close()
