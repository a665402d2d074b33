"""The Redis relay's public side: :class:`RedisRelay`'s methods, its lease and heartbeat.

The scripts it runs are in ``_scripts``, its reading of the stream in ``_tail``, and what
it makes of the store's replies in ``_stream``.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncGenerator, Awaitable
from typing import TypeVar

import redis.asyncio as aioredis
from redis.commands.core import AsyncScript
from redis.exceptions import RedisError

from .._core import (
    AskUserQuestionRequest,
    Team,
    UserInteractionError,
    request_digest,
)
from .._shared_relay import LocalWaiters, SharedRelay, not_pending, replay, stamped
from ..decisions import answerer_name
from ..relay import PendingQuestion, RelayEvent, RelaySnapshot
from ..wire import approvals_from_store, dumps
from . import _scripts
from ._stream import call, client, entries, readable, strings, text, unavailable
from ._tail import TAIL_BLOCK_MS, Tail, log

__all__ = ["RedisRelay"]

_T = TypeVar("_T")


class RedisRelay(SharedRelay):
    """A :class:`~interaction.relay.RelayBackend` whose questions live in Redis (or Valkey).

    Every process built with the same ``url`` and ``prefix`` shares the questions: one may
    ask, another show them on a page and take the answer. ``max_pending`` bounds the
    questions pending at once in the store (``RELAY_FULL``); ``history`` is the stream's
    approximate ``MAXLEN``, how many events a reconnecting client can resume from;
    ``lease_ttl`` is how long (seconds) this process's questions survive it unrefreshed
    (it refreshes every third of that); ``question_ttl`` is a question's lifetime;
    ``settled_ttl`` how long a settled question is kept, for a restarted keyed asker and
    for late claims. The store is reached on first use (or :meth:`connect`); when it
    cannot be, every method raises ``RELAY_UNAVAILABLE``. ``team`` resolves the groups
    questions are assigned to, as :class:`~interaction.relay.Relay`'s does; a quorum
    question's approvals are counted by one script, atomically across hosts.
    """

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "interaction",
        max_pending: int = 10_000,
        history: int = 10_000,
        lease_ttl: float = 15.0,
        question_ttl: float = 86_400.0,
        settled_ttl: float = 86_400.0,
        team: Team | None = None,
    ) -> None:
        super().__init__()
        self.team = team
        if not prefix or any(c in prefix for c in "{}"):
            raise ValueError(f"the prefix must be non-empty, without braces: {prefix!r}")
        if history < 1 or max_pending < 1:
            raise ValueError("history and max_pending must be at least 1")
        if not (lease_ttl > 0 and question_ttl > 0 and settled_ttl > 0):
            raise ValueError("lease_ttl, question_ttl and settled_ttl must be positive")
        # from_url raises ValueError for a URL that is not redis://, rediss:// or unix://.
        self._client = client(url, 10.0)
        self._tail_client = client(url, TAIL_BLOCK_MS / 1000 + 10, single=True)
        kwargs = self._client.connection_pool.connection_kwargs
        self.where = str(kwargs.get("path") or f"{kwargs.get('host')}:{kwargs.get('port')}")
        """Where the store is (host:port or socket path, never credentials), for messages."""
        self.prefix = prefix
        self.max_pending = max_pending
        self.history = history
        self.lease_ttl = lease_ttl
        self.question_ttl = question_ttl
        self.settled_ttl = settled_ttl
        self.owner = secrets.token_urlsafe(9)
        """This relay's asker id: its lease and its questions' owner."""
        base = f"{{{prefix}}}:"
        self._base = base
        self._pending_key = base + "pending"
        self._deadlines_key = base + "deadlines"
        self._owners_key = base + "owners"
        self._events_key = base + "events"
        keys = [self._pending_key, self._deadlines_key, self._owners_key, self._events_key]
        self._keys = keys
        self._ask_script = self._client.register_script(_scripts.ASK)
        self._settle_script = self._client.register_script(_scripts.SETTLE)
        self._approve_script = self._client.register_script(_scripts.APPROVE)
        self._snapshot_script = self._client.register_script(_scripts.SNAPSHOT)
        self._heartbeat_script = self._client.register_script(_scripts.HEARTBEAT)
        self._waiters = LocalWaiters(self._unavailable)
        self._tail = Tail(
            self._client,
            self._tail_client,
            base,
            self.where,
            self._waiters,
            owner=self.owner,
            lease_ms=self._ms(lease_ttl),
        )
        self._requests = self._tail.requests

    # ------------------------------------------------------------------ plumbing

    def _unavailable(self, exc: BaseException) -> UserInteractionError:
        return unavailable(self.where, exc)

    async def _call(self, awaitable: Awaitable[_T]) -> _T:
        """Await a command; a failure of the store is ``RELAY_UNAVAILABLE``."""
        return await call(self.where, awaitable)

    async def _start(self) -> None:
        last = entries(await self._call(self._client.xrevrange(self._events_key, count=1)))
        self._tail.buffer.reset(last[0][0] if last else "0-0")
        await self._heartbeat()
        self._spawn(self._tail.run())
        self._spawn(self._beat())

    async def _heartbeat(self, *, release: bool = False) -> None:
        lease = 0 if release else self._ms(self.lease_ttl)
        args: list[str | int] = [
            self._base,
            self.owner,
            lease,
            self._ms(self.settled_ttl),
            self.history,
            100,
        ]
        await self._script(self._heartbeat_script, args)

    # ------------------------------------------------------------------ the asker's side

    async def _publish(self, question_id: str, request: AskUserQuestionRequest) -> list[str]:
        args: list[str | int] = [
            self._base,
            question_id,
            dumps(stamped(request)),
            self.owner,
            self._ms(self.lease_ttl),
            self.max_pending,
            self._ms(self.question_ttl),
            self._ms(self.settled_ttl),
            self.history,
            request.key or "",
            request_digest(request) if request.key else "",
        ]
        return await self._script(self._ask_script, args)

    async def _stored_approvals(self, question_id: str) -> str | None:
        (stored,) = await self._fields(question_id, "approvals")
        return stored

    async def _approve(
        self, question_id: str, approver: str, quorum: int, answer: str
    ) -> list[str]:
        args: list[str | int] = [
            self._base,
            question_id,
            approver,
            quorum,
            answer,
            self._ms(self.settled_ttl),
            self.history,
            secrets.token_urlsafe(9),
        ]
        return await self._script(self._approve_script, args)

    async def withdraw_keyed(self, key: str) -> None:
        """Withdraw the pending question asked under resume key ``key``, as its asker's
        signal would (``resolved/aborted``: "withdrawn by the asker"); nothing if none is
        pending. For an asker whose wait outlives its process (a durable workflow whose
        deadline passed or that was cancelled), which may not know the question's id."""
        await self.connect()
        question_id = text(await self._call(self._client.get(self._base + "key:" + key)))
        if question_id is not None:
            await self._settle(question_id, "aborted")  # only a pending question changes

    async def _settle(
        self, question_id: str, outcome: str, answer: str = "", answerer: str | None = None
    ) -> list[str]:
        args: list[str | int] = [
            self._base,
            question_id,
            outcome,
            answer,
            self._ms(self.settled_ttl),
            self.history,
            secrets.token_urlsafe(9),
            answerer_name(answerer) or "",
        ]
        return await self._script(self._settle_script, args)

    async def _script(self, script: AsyncScript, args: list[str | int]) -> list[str]:
        return strings(await self._call(script(keys=self._keys, args=args)))

    async def _fields(self, question_id: str, *names: str) -> list[str | None]:
        """``HMGET`` of the question's hash."""
        key = self._base + "q:" + question_id
        reply: object = await self._call(self._client.hmget(key, list(names)))
        assert isinstance(reply, list)
        return [text(value) for value in reply]

    # ------------------------------------------------------------------ the clients' side

    async def snapshot(self) -> RelaySnapshot:
        await self.connect()
        reply = await self._script(self._snapshot_script, [self._base])
        questions: list[PendingQuestion] = []
        for index in range(1, len(reply) - 2, 3):
            question_id = reply[index]
            if not (readable(question_id) and readable(reply[index + 1])):
                log.warning(
                    "question %r is left out: its request holds bytes that are not UTF-8",
                    question_id,
                )
                continue
            with contextlib.suppress(UserInteractionError):  # an unreadable one is left out
                request = self._tail.requests.remember(question_id, reply[index + 1])
                approvals = approvals_from_store(reply[index + 2])
                questions.append(PendingQuestion(question_id, request, approvals))
        return RelaySnapshot(reply[0], tuple(questions))

    async def _events_after(self, after: str) -> AsyncGenerator[RelayEvent, None]:
        if not self._closed:
            await self.connect()
        tail = self._tail
        following = not self._closed
        try:
            if following:
                await tail.follow()  # the tail reads the stream while this is open
            events = replay(
                tail.buffer,
                after,
                changed=lambda: tail.changed,
                failure=lambda: tail.failure,
                closed=lambda: self._closed,
                read_after=tail.read_after,
                check_position=tail.check_position,
            )
            async with contextlib.aclosing(events):
                async for event in events:
                    yield event
        finally:
            if following:
                tail.unfollow()

    async def lookup(self, question_id: str) -> PendingQuestion | None:
        await self.connect()
        state, stored, approvals = await self._fields(question_id, "state", "request", "approvals")
        if state != "pending" or stored is None or not readable(stored):
            return None
        try:
            request = self._tail.requests.remember(question_id, stored)
        except UserInteractionError:
            return None
        return PendingQuestion(question_id, request, approvals_from_store(approvals))

    async def _not_pending_now(self, question_id: str) -> UserInteractionError:
        """The ``NOT_PENDING`` error for a question, saying why from its stored state."""
        (state,) = await self._fields(question_id, "state")
        return not_pending(question_id, state or "")

    async def _recheck(self, *only: str) -> None:
        await self._tail.recheck(*only)

    async def _shut(self, started: bool) -> None:
        self._tail.closed = True
        self._tail.stopping.set()  # the tail leaves its blocking read
        await self._cancel_tasks()
        if started:
            with contextlib.suppress(UserInteractionError, RedisError, OSError):
                await self._tail.drain()
        self._tail.changed.set()
        for store in (self._client, self._tail_client):
            await _close(store)
        if (read := self._tail.abandoned) is not None:  # its connection is closed: it ends now
            read.cancel()
            await asyncio.wait({read}, timeout=1.0)
            if read.done() and not read.cancelled():
                read.exception()  # retrieved: it is expected to have failed
            # Any command the read sent after the client closed took a connection again
            # (the client takes one for the first command that finds none): closed again,
            # the client holds none once the read has ended.
            await _close(self._tail_client)


async def _close(store: aioredis.Redis) -> None:
    """Release the client's own connection, if it holds one, and close its pool's."""
    await store.aclose()
    with contextlib.suppress(RedisError, OSError):
        await store.connection_pool.disconnect()  # the client does not own it
