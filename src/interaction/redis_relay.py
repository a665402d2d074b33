"""A :class:`~interaction.relay.RelayBackend` on Redis (extra ``[redis]``): pending questions
that outlive the asking process and are shared by every host using the same store.

:class:`RedisRelay` keeps each question in a hash, the pending ids in a sorted set and the
``requested``/``resolved`` events in a Stream whose entry ids are the positions (the SSE
event ids); every change is one Lua script (``EVALSHA``), so it is atomic and first-claim-
wins. Each process tails the stream with one blocking ``XREAD`` and wakes its own waiters
and event iterators from it. An asking process holds a lease, refreshed while it lives;
when it lapses, any live process withdraws the dead asker's plain questions, while those
asked with a resume key (``AskUserQuestionRequest.key``) stay pending for the restarted
asker, which asks again with the same key and gets the stored answer at once. See
docs/relay.md for the key layout, the guarantees and the failure table.
"""

from __future__ import annotations

try:
    import redis.asyncio as aioredis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.commands.core import AsyncScript
    from redis.exceptions import RedisError, ResponseError
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        'interaction.redis_relay needs the redis client: pip install "interaction-seam[redis]"'
        " (the interaction[redis] extra)"
    ) from exc

import asyncio
import bisect
import contextlib
import logging
import re
import secrets
from collections import OrderedDict
from collections.abc import AsyncGenerator, Awaitable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Literal, TypeVar

from ._core import (
    DISPOSED_MESSAGE,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    cancelled_error,
    check_answer,
    check_request,
    request_digest,
    with_provenance,
)
from .relay import (
    RELAY_FULL,
    RELAY_UNAVAILABLE,
    STALE_POSITION,
    PendingQuestion,
    RelayEvent,
    RelaySnapshot,
    local_host,
    not_pending_error,
)
from .wire import decode_answer, decode_request, dumps

__all__ = ["RedisRelay"]

_T = TypeVar("_T")
_log: Final = logging.getLogger("interaction.redis_relay")
_HOST: Final = local_host()

_POSITION: Final = re.compile(r"(\d{1,20})-(\d{1,20})")
_STALE_MESSAGE: Final = "the relay cannot replay events from that position; take a fresh snapshot"
_WITHDRAWN_MESSAGE: Final = (
    "the question was withdrawn by the relay (its asker's lease lapsed, or its lifetime ended)"
)
_OUTCOMES: Final[dict[str, Literal["answered", "cancelled", "aborted"]]] = {
    "answered": "answered",
    "cancelled": "cancelled",
    "aborted": "aborted",
}
_READ_COUNT: Final = 500
_CONNECTIONS: Final = 16
_BUFFER: Final = 2_000
_REQUESTS_CACHED: Final = 4_096
_TAIL_BLOCK_MS: Final = 5_000

# ---------------------------------------------------------------------------- scripts
# Every script gets the key prefix "{prefix}:" as ARGV[1] and the fixed keys as KEYS (all
# under one hash tag, so one cluster slot); per-question keys are built from the prefix.

_PRELUDE: Final = """
local base = ARGV[1]
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- Every event names the position before it ('prev'): a reader that finds its own last
-- position there knows nothing between was trimmed away unread, without asking XINFO.
local function append(maxlen, ...)
  local prev = redis.call('GET', base .. 'last') or ''
  local position = redis.call('XADD', base .. 'events', 'MAXLEN', '~', maxlen, '*',
    'prev', prev, ...)
  redis.call('SET', base .. 'last', position)
  return position
end
local function settle(id, outcome, answer, settled_ms, maxlen, claim)
  local q = base .. 'q:' .. id
  local found = redis.call('HMGET', q, 'state', 'owner', 'key', 'claim')
  local state, owner, key = found[1], found[2], found[3]
  if state ~= 'pending' then
    -- Not pending (settled by a hand outside these scripts, or gone): its ids are dropped
    -- from the sets, so that neither the snapshot nor the deadline sweep keeps meeting it.
    redis.call('ZREM', base .. 'pending', id)
    redis.call('ZREM', base .. 'deadlines', id)
    return false, state, found[4]
  end
  redis.call('HSET', q, 'state', outcome, 'claim', claim or '')
  if answer ~= '' then redis.call('HSET', q, 'answer', answer) end
  redis.call('PEXPIRE', q, settled_ms)
  redis.call('ZREM', base .. 'pending', id)
  redis.call('ZREM', base .. 'deadlines', id)
  if owner and owner ~= '' then redis.call('SREM', base .. 'owned:' .. owner, id) end
  if key and key ~= '' then
    local index = base .. 'key:' .. key
    if redis.call('GET', index) == id then
      if outcome == 'aborted' then redis.call('DEL', index)
      else redis.call('PEXPIRE', index, settled_ms) end
    end
  end
  if answer ~= '' then
    return append(maxlen, 'kind', 'resolved', 'id', id, 'outcome', outcome, 'answer', answer)
  end
  return append(maxlen, 'kind', 'resolved', 'id', id, 'outcome', outcome)
end
local function release(owner, settled_ms, maxlen)
  local owned = base .. 'owned:' .. owner
  for _, id in ipairs(redis.call('SMEMBERS', owned)) do
    local key = redis.call('HGET', base .. 'q:' .. id, 'key')
    if key and key ~= '' then
      redis.call('HSET', base .. 'q:' .. id, 'owner', '')
    else
      settle(id, 'aborted', '', settled_ms, maxlen)
    end
  end
  redis.call('DEL', owned)
  redis.call('ZREM', base .. 'owners', owner)
end
"""

# ARGV: base, id, request, owner, lease_ms, max_pending, lifetime_ms, settled_ms, maxlen,
# key, digest
_ASK: Final = (
    _PRELUDE
    + """
local id, request, owner = ARGV[2], ARGV[3], ARGV[4]
local lease_ms, max_pending = tonumber(ARGV[5]), tonumber(ARGV[6])
local lifetime_ms, settled_ms, maxlen = tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9]
local key, digest = ARGV[10], ARGV[11]
if redis.call('EXISTS', base .. 'q:' .. id) == 1 then
  return {'asked', id, ''}  -- the client retried a command whose reply was lost
end
local now = now_ms()
redis.call('ZADD', KEYS[3], now + lease_ms, owner)
if key ~= '' then
  local old = redis.call('GET', base .. 'key:' .. key)
  if old then
    local q = base .. 'q:' .. old
    local found = redis.call('HMGET', q, 'state', 'digest', 'answer', 'owner')
    local state = found[1]
    if state and found[2] == digest then
      if state == 'pending' then
        if found[4] and found[4] ~= '' then
          redis.call('SREM', base .. 'owned:' .. found[4], old)
        end
        redis.call('HSET', q, 'owner', owner)
        redis.call('SADD', base .. 'owned:' .. owner, old)
        return {'attached', old}
      elseif state == 'answered' then
        return {'answered', old, found[3]}
      elseif state == 'cancelled' then
        return {'cancelled', old}
      end
    elseif state == 'pending' then
      settle(old, 'aborted', '', settled_ms, maxlen)  -- replaced by a different question
    end
  end
end
if redis.call('ZCARD', KEYS[1]) >= max_pending then return {'full'} end
local q = base .. 'q:' .. id
if key ~= '' then
  redis.call('HSET', q, 'request', request, 'state', 'pending', 'owner', owner,
    'created', now, 'key', key, 'digest', digest)
  redis.call('SET', base .. 'key:' .. key, id, 'PX', lifetime_ms + settled_ms)
else
  redis.call('HSET', q, 'request', request, 'state', 'pending', 'owner', owner, 'created', now)
end
redis.call('PEXPIRE', q, lifetime_ms + settled_ms)
redis.call('ZADD', KEYS[1], redis.call('INCR', base .. 'seq'), id)
redis.call('ZADD', KEYS[2], now + lifetime_ms, id)
redis.call('SADD', base .. 'owned:' .. owner, id)
local position = append(maxlen, 'kind', 'requested', 'id', id, 'request', request)
return {'asked', id, position}
"""
)

# ARGV: base, id, outcome, answer ('' for none), settled_ms, maxlen, claim. A claim that
# already settled it (the client retried a command whose reply was lost) is 'ok' too.
_SETTLE: Final = (
    _PRELUDE
    + """
local position, state, claim = settle(ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6],
  ARGV[7])
if position then return {'ok', position} end
if state and claim == ARGV[7] then return {'ok', ''} end
return {'not_pending', state or ''}
"""
)

# ARGV: base. Returns the last position, then id, request, id, request... of the questions
# whose hash says pending (the hash is the truth, whatever the sorted set still holds).
_SNAPSHOT: Final = """
local base = ARGV[1]
local last = redis.call('XREVRANGE', KEYS[4], '+', '-', 'COUNT', 1)
local out = {'0-0'}
if last[1] then out[1] = last[1][1] end
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local found = redis.call('HMGET', base .. 'q:' .. id, 'state', 'request')
  local request = found[2]
  if found[1] == 'pending' and request then
    out[#out + 1] = id
    out[#out + 1] = request
  end
end
return out
"""

# ARGV: base, owner, lease_ms ('0': release this owner now), settled_ms, maxlen, batch
_HEARTBEAT: Final = (
    _PRELUDE
    + """
local owner, lease_ms = ARGV[2], tonumber(ARGV[3])
local settled_ms, maxlen, batch = tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6])
local now = now_ms()
if lease_ms > 0 then
  redis.call('ZADD', KEYS[3], now + lease_ms, owner)
else
  release(owner, settled_ms, maxlen)
end
local dead = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', '(' .. now, 'LIMIT', 0, batch)
for _, other in ipairs(dead) do release(other, settled_ms, maxlen) end
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. now, 'LIMIT', 0, batch)
for _, id in ipairs(expired) do settle(id, 'aborted', '', settled_ms, maxlen) end
return {#dead, #expired}
"""
)


def _key_of(position: str) -> tuple[int, int] | None:
    match = _POSITION.fullmatch(position)
    return None if match is None else (int(match[1]), int(match[2]))


def _stale() -> UserInteractionError:
    return UserInteractionError(_STALE_MESSAGE, STALE_POSITION)


def _not_pending(question_id: str, state: str) -> UserInteractionError:
    return not_pending_error(question_id, withdrawn=state == "aborted")


def _text(value: object) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


def _strings(value: object) -> list[str]:
    """A reply that is a flat array (of strings and integers) as strings."""
    assert isinstance(value, list)
    return [_text(item) or "" for item in value]


def _entries(value: object) -> list[tuple[str, dict[str, str]]]:
    """Stream entries (``XRANGE``, or one stream of an ``XREAD``) as ids and fields."""
    assert isinstance(value, list)
    entries = []
    for entry_id, fields in value:
        assert isinstance(fields, dict)
        entries.append(
            (_text(entry_id) or "", {_text(k) or "": _text(v) or "" for k, v in fields.items()})
        )
    return entries


@dataclass(frozen=True, slots=True)
class _StreamState:
    """What ``XINFO STREAM`` tells: the last id, the first id kept, and whether any entry
    was ever trimmed away (``max-deleted-entry-id`` does not count trims on Redis 7.0)."""

    last: tuple[int, int] = (0, 0)
    first: tuple[int, int] = (0, 0)
    trimmed: bool = False

    @classmethod
    def of(cls, info: object) -> _StreamState:
        assert isinstance(info, dict)
        last = _key_of(_text(info.get("last-generated-id")) or "0-0") or (0, 0)
        entry = info.get("first-entry")
        first = _key_of(_text(entry[0]) or "") if isinstance(entry, list | tuple) else None
        added, length = info.get("entries-added"), info.get("length")
        trimmed = added is None or length is None or int(added) > int(length)
        return cls(last, first or last, trimmed)

    def lost_after(self, key: tuple[int, int]) -> bool:
        """Whether entries after ``key`` may have been trimmed (an entry at or before it
        was, so what followed it may be gone too)."""
        return self.trimmed and key < self.first


def _client(url: str, timeout: float) -> aioredis.Redis:
    """A client that fails at once when the store is away.

    One immediate retry on a connection error: after the server restarted, a pooled
    connection is dead and the retry takes a fresh one. The scripts are safe to run twice
    (an ask by its id, a settle by its claim token).
    """
    # A bounded pool that makes a burst of asks wait for a connection, not fail.
    pool = aioredis.BlockingConnectionPool.from_url(
        url,
        max_connections=_CONNECTIONS,
        timeout=timeout,
        decode_responses=True,
        socket_timeout=timeout,
        socket_connect_timeout=2.0,
        retry=Retry(NoBackoff(), 1),
    )
    return aioredis.Redis(connection_pool=pool)


@dataclass(eq=False, slots=True)
class _Waiter:
    request: AskUserQuestionRequest
    future: asyncio.Future[AskUserQuestionAnswer]
    published: bool = False  # the ask script ran: the question's hash exists


class _Buffer:
    """The recent events the tail has read: every event after its base (the position it
    was reset to, or the last one it dropped) up to ``last``."""

    def __init__(self) -> None:
        self.reset("0-0")

    def reset(self, base: str) -> None:
        self.last = base
        self._base = self._last = _key_of(base) or (0, 0)
        self.events: list[RelayEvent] = []
        self.keys: list[tuple[int, int]] = []

    def after(self, position: str) -> list[RelayEvent] | None:
        """The events after ``position``, or None when the buffer cannot tell."""
        key = _key_of(position)
        if key is None or key < self._base or key > self._last:
            return None
        return self.events[bisect.bisect_right(self.keys, key) :]

    def advance(self, position: str) -> None:
        """The tail read up to ``position`` (an entry that is no event still moves it)."""
        self.last = position
        self._last = _key_of(position) or self._last

    def add(self, event: RelayEvent) -> None:
        self.advance(event.position)
        self.events.append(event)
        self.keys.append(self._last)
        if len(self.events) > 2 * _BUFFER:
            self._base = self.keys[-_BUFFER - 1]
            del self.events[:-_BUFFER]
            del self.keys[:-_BUFFER]


class RedisRelay:
    """A :class:`~interaction.relay.RelayBackend` whose questions live in Redis (or Valkey).

    Every process built with the same ``url`` and ``prefix`` shares the questions: one may
    ask, another show them on a page and take the answer. ``max_pending`` bounds the
    questions pending at once in the store (``RELAY_FULL``); ``history`` is the stream's
    approximate ``MAXLEN``, how many events a reconnecting client can resume from;
    ``lease_ttl`` is how long (seconds) this process's questions survive it unrefreshed
    (it refreshes every third of that); ``question_ttl`` is a question's lifetime;
    ``settled_ttl`` how long a settled question is kept, for a restarted keyed asker and
    for late claims. The store is reached on first use (or :meth:`connect`); when it
    cannot be, every method raises ``RELAY_UNAVAILABLE``.
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
    ) -> None:
        if not prefix or any(c in prefix for c in "{}"):
            raise ValueError(f"the prefix must be non-empty, without braces: {prefix!r}")
        if history < 1 or max_pending < 1:
            raise ValueError("history and max_pending must be at least 1")
        if not (lease_ttl > 0 and question_ttl > 0 and settled_ttl > 0):
            raise ValueError("lease_ttl, question_ttl and settled_ttl must be positive")
        # from_url raises ValueError for a URL that is not redis://, rediss:// or unix://.
        self._client = _client(url, 10.0)
        self._tail_client = _client(url, _TAIL_BLOCK_MS / 1000 + 10)
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
        self._ask_script = self._client.register_script(_ASK)
        self._settle_script = self._client.register_script(_SETTLE)
        self._snapshot_script = self._client.register_script(_SNAPSHOT)
        self._heartbeat_script = self._client.register_script(_HEARTBEAT)
        self._waiters: dict[str, list[_Waiter]] = {}
        self._requests: OrderedDict[str, AskUserQuestionRequest] = OrderedDict()
        self._buffer = _Buffer()
        self._changed = asyncio.Event()
        self._ready: asyncio.Future[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._withdraw_later: set[str] = set()
        self._closed = False
        self._stopping = asyncio.Event()
        self._abandoned: asyncio.Future[Any] | None = None
        self._failure: UserInteractionError | None = None  # the tail cannot read the store

    # ------------------------------------------------------------------ plumbing

    def _unavailable(self, exc: BaseException) -> UserInteractionError:
        return UserInteractionError(
            f"the relay's store at {self.where} cannot be used: {exc}", RELAY_UNAVAILABLE
        )

    async def _call(self, awaitable: Awaitable[_T]) -> _T:
        """Await a command; a failure of the store is ``RELAY_UNAVAILABLE``."""
        try:
            return await awaitable
        except (RedisError, OSError) as exc:
            raise self._unavailable(exc) from None

    def _ms(self, seconds: float) -> int:
        return max(1, round(seconds * 1000))

    def _spawn(self, coroutine: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def connect(self) -> None:
        """Reach the store and start tailing it; ``RELAY_UNAVAILABLE`` if it cannot be.

        Called by every method on first use; call it first to fail fast (``interaction
        serve --redis`` does).
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

    async def _start(self) -> None:
        last = _entries(await self._call(self._client.xrevrange(self._events_key, count=1)))
        self._buffer.reset(last[0][0] if last else "0-0")
        await self._heartbeat()
        self._spawn(self._tail())
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

    async def _beat(self) -> None:
        """Refresh the lease, withdraw the questions of lapsed askers, retry withdrawals,
        and settle the local asks whose hash was settled without an event read here."""
        while not self.closed:
            await asyncio.sleep(self.lease_ttl / 3)
            with contextlib.suppress(UserInteractionError):
                await self._heartbeat()
                await self._recheck()
                for question_id in list(self._withdraw_later):
                    await self._settle(question_id, "aborted")
                    self._withdraw_later.discard(question_id)

    # ------------------------------------------------------------------ the tail

    def _event(self, position: str, fields: Mapping[str, str]) -> RelayEvent | None:
        question_id = fields.get("id", "")
        if fields.get("kind") == "requested":
            try:
                request = self._remember(question_id, fields.get("request", ""))
            except UserInteractionError:  # not a request: nothing a client could show
                return None
            question = PendingQuestion(question_id, request)
            return RelayEvent("requested", question_id, question, position=position)
        outcome = fields.get("outcome")
        if outcome not in _OUTCOMES:
            return None
        return RelayEvent("resolved", question_id, outcome=_OUTCOMES[outcome], position=position)

    def _remember(self, question_id: str, text: str) -> AskUserQuestionRequest:
        request = self._requests.get(question_id)
        if request is None:
            request = decode_request(text)
            self._requests[question_id] = request
            if len(self._requests) > _REQUESTS_CACHED:
                self._requests.popitem(last=False)
        return request

    async def _checked(
        self, entries: Sequence[tuple[str, Mapping[str, str]]]
    ) -> list[tuple[str, Mapping[str, str], str | None]]:
        """The entries as the questions' hashes bear them out, with each one's stored state.

        Only the scripts write a hash and its entry, atomically; an entry written into the
        stream by another hand (a ``requested`` whose request is not the stored one, a
        ``resolved`` for a question still pending) is logged and kept as a bare position,
        so it settles nothing and shows nothing. A ``resolved`` entry carries the stored
        outcome and answer, never its own.
        """
        kinds = ("requested", "resolved")
        ids = list(dict.fromkeys(f.get("id", "") for _, f in entries if f.get("kind") in kinds))
        found = await self._stored(ids, "state", "request", "answer")
        stored = dict(zip(ids, found, strict=True))
        checked: list[tuple[str, Mapping[str, str], str | None]] = []
        for position, fields in entries:
            kind, question_id = fields.get("kind"), fields.get("id", "")
            if kind not in kinds:  # no script writes one: a position, and nothing more
                checked.append((position, {}, None))
                continue
            state, request, answer = stored[question_id]
            if kind == "requested" and request is None:  # gone since (or never asked)
                checked.append((position, {}, None))
                continue
            if kind == "requested" and request != fields.get("request"):
                why = "was not asked with that request"
            elif kind == "requested" and state != "pending":  # settled since: nothing to show
                checked.append((position, {}, None))
                continue
            elif kind == "resolved" and state == "pending":
                why = "is still pending"
            else:
                kept = fields
                if kind == "resolved" and state is not None:
                    outcome = state if state in _OUTCOMES else "aborted"
                    kept = {**fields, "outcome": outcome, "answer": answer or ""}
                checked.append((position, kept, state))
                continue
            _log.warning("ignored the stream entry %s: question %r %s", position, question_id, why)
            checked.append((position, {}, None))
        return checked

    async def _stored(self, ids: Sequence[str], *names: str) -> list[list[str | None]]:
        """``HMGET`` of each question's hash, in one round trip, one reply per id.

        A key that is not a hash (no script writes one) reads as no question: refused as a
        whole, the batch would be read again and again, and the tail would go no further.
        """
        if not ids:
            return []
        async with self._client.pipeline(transaction=False) as pipe:
            for question_id in ids:
                pipe.hmget(self._base + "q:" + question_id, list(names))
            replies: list[object] = await self._call(pipe.execute(raise_on_error=False))
        stored: list[list[str | None]] = []
        for question_id, reply in zip(ids, replies, strict=True):
            if isinstance(reply, list):
                stored.append([_text(value) for value in reply])
            else:  # a ResponseError in its place: WRONGTYPE
                _log.warning("question %r is not stored as a question: %s", question_id, reply)
                stored.append([None] * len(names))
        return stored

    def _absorb(self, entries: Sequence[tuple[str, Mapping[str, str], str | None]]) -> None:
        """Take the checked entries the tail read: buffer them, wake the waiters they settle."""
        for position, fields, state in entries:
            event = self._event(position, fields)
            if event is None:
                self._buffer.advance(position)
                continue
            self._buffer.add(event)
            if event.kind == "resolved":
                self._wake(event.id, state, fields.get("answer", ""))
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def _wake(self, question_id: str, state: str | None, answer: str) -> None:
        """Settle the local waiters of a question by its stored ``state`` (None: lost)."""
        if state == "pending":
            return
        for waiter in self._waiters.pop(question_id, []):
            if waiter.future.done():
                continue
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
                    UserInteractionError(_WITHDRAWN_MESSAGE, ErrorCode.ASK_ABORTED)
                )

    async def _stream_state(self) -> _StreamState:
        try:
            info: object = await self._client.xinfo_stream(self._events_key)
        except ResponseError as exc:
            if "no such key" in str(exc).lower():
                return _StreamState()
            raise
        return _StreamState.of(info)

    async def _tail(self) -> None:
        """Read the stream after the buffer's last position, for ever; on a gap or after
        the store was away, look each local waiter's question up again."""
        down = False
        pause = 0.05
        while not self.closed:  # (the client may turn a cancelled read into an error)
            try:
                if down:
                    await self._resync()
                    down, pause, self._failure = False, 0.05, None
                read = asyncio.ensure_future(
                    self._tail_client.xread(
                        {self._events_key: self._buffer.last},
                        count=_READ_COUNT,
                        block=_TAIL_BLOCK_MS,
                    )
                )
                stopping = asyncio.ensure_future(self._stopping.wait())
                try:
                    await asyncio.wait({read, stopping}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    stopping.cancel()
                    if not read.done():  # closing: aclose() ends it with its connection
                        self._abandoned = read
                if not read.done():
                    return
                reply = read.result()
                entries = _entries(reply[0][1]) if isinstance(reply, list) and reply else []
                before = self._buffer.last
                # A first entry that names ``before`` as its predecessor follows on without
                # a gap; otherwise (or from a writer that does not say) ask XINFO.
                if entries:
                    self._absorb(await self._checked(entries))
                    if entries[0][1].get("prev") != before:
                        state = await self._stream_state()
                        if state.lost_after(_key_of(before) or (0, 0)):  # trimmed unread
                            self._buffer.reset(self._buffer.last)
                            await self._recheck()
            except (RedisError, OSError, UserInteractionError) as exc:
                down = True
                if self._failure is None:  # the event iterators say so, and end
                    failure = exc if isinstance(exc, UserInteractionError) else None
                    self._failure = failure or self._unavailable(exc)
                    changed, self._changed = self._changed, asyncio.Event()
                    changed.set()
                await asyncio.sleep(pause)
                pause = min(1.0, pause * 2)

    async def _resync(self) -> None:
        """After the store was away: was it reset (its stream is behind us)? Recheck waiters."""
        last = (await self._stream_state()).last
        if last < (_key_of(self._buffer.last) or (0, 0)):  # the store lost its data
            self._buffer.reset(f"{last[0]}-{last[1]}")
            # A fresh Event, as _absorb makes: an iterator that waits on a set one would
            # never yield again, and the loop (this tail too) would spin on it for ever.
            changed, self._changed = self._changed, asyncio.Event()
            changed.set()
        await self._recheck()

    async def _recheck(self, *only: str) -> None:
        """Settle the local waiters (of ``only`` these questions, if given) whose question
        the store says is settled, or lost."""
        ids = [
            i
            for i, waiters in self._waiters.items()
            if (not only or i in only) and any(w.published for w in waiters)
        ]
        for start in range(0, len(ids), _READ_COUNT):
            chunk = ids[start : start + _READ_COUNT]
            for question_id, (state, answer) in zip(
                chunk, await self._stored(chunk, "state", "answer"), strict=True
            ):
                self._wake(question_id, state, answer or "")

    # ------------------------------------------------------------------ the asker's side

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        check_request(request)
        await self.connect()
        waiter = _Waiter(request, asyncio.get_running_loop().create_future())
        question_id = secrets.token_urlsafe(12)
        self._waiters.setdefault(question_id, []).append(waiter)  # before publishing
        maybe_published = True
        try:
            # Where the question comes from, where the asker left it unsaid (see docs/notify.md).
            stamped = with_provenance(request, host=_HOST, asked_at=datetime.now(UTC))
            args: list[str | int] = [
                self._base,
                question_id,
                dumps(stamped),
                self.owner,
                self._ms(self.lease_ttl),
                self.max_pending,
                self._ms(self.question_ttl),
                self._ms(self.settled_ttl),
                self.history,
                request.key or "",
                request_digest(request) if request.key else "",
            ]
            reply = await self._script(self._ask_script, args)
            waiter.published = True
            if reply[0] != "asked":
                self._drop(question_id, waiter)
                maybe_published = reply[0] == "attached"
                if reply[0] == "full":
                    raise UserInteractionError(
                        f"the relay already holds {self.max_pending} pending questions",
                        RELAY_FULL,
                    )
                if reply[0] == "answered":  # a restarted asker: the stored answer at once
                    return decode_answer(reply[2], request)
                if reply[0] == "cancelled":
                    raise cancelled_error()
                question_id = reply[1]  # attached to the question asked under its key
                self._waiters.setdefault(question_id, []).append(waiter)
                await self._recheck(question_id)  # settled before we listened?
            return await waiter.future
        finally:
            self._drop(question_id, waiter)
            # Not settled (a cancelled wait cancels the future itself): withdraw, unless a
            # keyed ask ends by anything but its signal (a restarted asker takes it up).
            future = waiter.future
            if maybe_published and (future.cancelled() or not future.done()):
                signal = request.signal
                if request.key is None or (signal is not None and signal.aborted):
                    # Withdraw, even while being cancelled: shielded, so it completes.
                    await asyncio.shield(self._withdraw(question_id))

    def _drop(self, question_id: str, waiter: _Waiter) -> None:
        waiters = self._waiters.get(question_id)
        if waiters is not None and waiter in waiters:
            waiters.remove(waiter)
            if not waiters:
                del self._waiters[question_id]

    async def _withdraw(self, question_id: str) -> None:
        if self._closed:
            return
        try:
            await self._settle(question_id, "aborted")
        except UserInteractionError:
            self._withdraw_later.add(question_id)  # the heartbeat tries again

    async def _settle(self, question_id: str, outcome: str, answer: str = "") -> list[str]:
        args: list[str | int] = [
            self._base,
            question_id,
            outcome,
            answer,
            self._ms(self.settled_ttl),
            self.history,
            secrets.token_urlsafe(9),
        ]
        return await self._script(self._settle_script, args)

    async def _script(self, script: AsyncScript, args: list[str | int]) -> list[str]:
        return _strings(await self._call(script(keys=self._keys, args=args)))

    async def _fields(self, question_id: str, *names: str) -> list[str | None]:
        """``HMGET`` of the question's hash."""
        key = self._base + "q:" + question_id
        reply: object = await self._call(self._client.hmget(key, list(names)))
        assert isinstance(reply, list)
        return [_text(value) for value in reply]

    # ------------------------------------------------------------------ the clients' side

    async def snapshot(self) -> RelaySnapshot:
        await self.connect()
        reply = await self._script(self._snapshot_script, [self._base])
        questions: list[PendingQuestion] = []
        for index in range(1, len(reply) - 1, 2):
            question_id = reply[index]
            with contextlib.suppress(UserInteractionError):  # an unreadable one is left out
                questions.append(
                    PendingQuestion(question_id, self._remember(question_id, reply[index + 1]))
                )
        return RelaySnapshot(reply[0], tuple(questions))

    def events(self, after: str) -> AsyncGenerator[RelayEvent, None]:
        return self._events_after(after)

    async def _events_after(self, after: str) -> AsyncGenerator[RelayEvent, None]:
        if not self._closed:
            await self.connect()
        position = after
        if self._buffer.after(position) is None:
            if _key_of(position) is None:
                raise _stale()
            if not self._closed:
                await self._check_position(position)
        while True:
            changed = self._changed
            batch = self._buffer.after(position)
            if batch is None:
                if self._closed:
                    return
                batch, read_up_to = await self._read_after(position)
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
            if self._closed:
                return
            if (failure := self._failure) is not None:
                raise UserInteractionError(failure.message, failure.code)
            await changed.wait()

    async def _check_position(self, position: str) -> None:
        key = _key_of(position)
        state = await self._call(self._stream_state())
        if key is None or key > state.last or state.lost_after(key):
            raise _stale()

    async def _read_after(self, position: str) -> tuple[list[RelayEvent], str]:
        """Events after ``position`` read from the store (a reader behind the buffer), and
        the position read up to."""
        async with self._client.pipeline(transaction=False) as pipe:
            pipe.xrange(self._events_key, min=f"({position}", count=_READ_COUNT)
            pipe.xinfo_stream(self._events_key)
            read, info = await self._call(pipe.execute())
        entries = _entries(read)
        if _StreamState.of(info).lost_after(_key_of(position) or (0, 0)):
            raise _stale()
        checked = await self._checked(entries)
        events = [e for p, fields, _ in checked if (e := self._event(p, fields)) is not None]
        return events, entries[-1][0] if entries else position

    async def lookup(self, question_id: str) -> PendingQuestion | None:
        await self.connect()
        state, text = await self._fields(question_id, "state", "request")
        if state != "pending" or text is None:
            return None
        try:
            return PendingQuestion(question_id, self._remember(question_id, text))
        except UserInteractionError:
            return None

    async def submit(self, question_id: str, answer: object) -> AskUserQuestionAnswer:
        await self.connect()
        request = self._requests.get(question_id)
        if request is None:
            question = await self.lookup(question_id)
            if question is None:
                raise await self._not_pending_now(question_id)
            request = question.request
        try:
            checked = check_answer(request, answer)  # a bad answer leaves it pending
        except UserInteractionError:
            if await self.lookup(question_id) is None:  # not pending any more, in fact
                raise await self._not_pending_now(question_id) from None
            raise
        reply = await self._settle(question_id, "answered", dumps(checked))
        if reply[0] != "ok":
            raise _not_pending(question_id, reply[1])
        return checked

    async def _not_pending_now(self, question_id: str) -> UserInteractionError:
        """The ``NOT_PENDING`` error for a question, saying why from its stored state."""
        (state,) = await self._fields(question_id, "state")
        return _not_pending(question_id, state or "")

    async def dismiss(self, question_id: str) -> None:
        await self.connect()
        reply = await self._settle(question_id, "cancelled")
        if reply[0] != "ok":
            raise _not_pending(question_id, reply[1])

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
        for question_id in list(self._waiters):
            for waiter in self._waiters.pop(question_id):
                if not waiter.future.done():
                    waiter.future.set_exception(
                        UserInteractionError(DISPOSED_MESSAGE, ErrorCode.ASK_ABORTED)
                    )
        if started:
            with contextlib.suppress(UserInteractionError):
                await self._heartbeat(release=True)
        self._stopping.set()  # the tail leaves its blocking read
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        if started:
            with contextlib.suppress(UserInteractionError, RedisError, OSError):
                while entries := _entries(
                    await self._call(
                        self._client.xrange(
                            self._events_key, min=f"({self._buffer.last}", count=_READ_COUNT
                        )
                    )
                ):
                    self._absorb(await self._checked(entries))
        self._changed.set()
        for client in (self._client, self._tail_client):
            await client.aclose()
            with contextlib.suppress(RedisError, OSError):
                await client.connection_pool.disconnect()  # the client does not own it
        if (read := self._abandoned) is not None:  # its connection is closed: it ends now
            read.cancel()
            await asyncio.wait({read}, timeout=1.0)
            if read.done() and not read.cancelled():
                read.exception()  # retrieved: it is expected to have failed

    @property
    def closed(self) -> bool:
        return self._closed
