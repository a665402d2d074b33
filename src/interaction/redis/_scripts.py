"""The Redis relay's Lua scripts: every change to the store is one of them, run by
``EVALSHA``, so it is atomic and on the server's clock (``TIME``).

Every script gets the key prefix ``"{prefix}:"`` as ``ARGV[1]`` and the fixed keys as
``KEYS`` (pending, deadlines, owners, events: all under one hash tag, so one cluster slot);
per-question keys are built from the prefix. docs/relay.md describes the key layout.
"""

from __future__ import annotations

from typing import Final

__all__ = ["ASK", "HEARTBEAT", "READ", "SETTLE", "SETTLED", "SNAPSHOT"]

PRELUDE: Final = """
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
-- An asker waits on its own inbox, not on the whole stream: each settle of a question it
-- owns adds the question's id and outcome there (its answer is read from the hash, as the
-- stream's). Only a live asker gets one, and it expires with the lease unless the asker's
-- heartbeat refreshes it. The cap bounds an inbox whose asker stalled: the asker notices
-- what was trimmed unread and looks its questions up again.
local function notify(owner, id, outcome)
  local lease_end = redis.call('ZSCORE', base .. 'owners', owner)
  if not lease_end then return end
  local inbox = base .. 'inbox:' .. owner
  -- pcall: a key of another type written there by another hand must not stop the settle
  -- half done (a script's writes are not undone); the asker's heartbeat finds it instead.
  redis.pcall('XADD', inbox, 'MAXLEN', '~', 1000, '*', 'id', id, 'outcome', outcome)
  redis.pcall('PEXPIREAT', inbox, math.floor(tonumber(lease_end)))
end
-- 'answerer' names who answered or dismissed it, when the page named them ('' or nil: nobody).
local function settle(id, outcome, answer, settled_ms, maxlen, claim, answerer)
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
  if answerer and answerer ~= '' then redis.call('HSET', q, 'answerer', answerer) end
  redis.call('PEXPIRE', q, settled_ms)
  redis.call('ZREM', base .. 'pending', id)
  redis.call('ZREM', base .. 'deadlines', id)
  if owner and owner ~= '' then
    redis.call('SREM', base .. 'owned:' .. owner, id)
    notify(owner, id, outcome)
  end
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
  redis.call('DEL', owned, base .. 'inbox:' .. owner)  -- nobody waits on it any more
  redis.call('ZREM', base .. 'owners', owner)
end
"""

# ARGV: base, id, request, owner, lease_ms, max_pending, lifetime_ms, settled_ms, maxlen,
# key, digest
ASK: Final = (
    PRELUDE
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
    local found = redis.call('HMGET', q, 'state', 'digest', 'answer', 'owner', 'answerer')
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
        return {'answered', old, found[3], found[5] or ''}
      elseif state == 'cancelled' then
        return {'cancelled', old, '', found[5] or ''}
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
-- The entry names the question; its request is read from the hash (the READ script).
local position = append(maxlen, 'kind', 'requested', 'id', id)
return {'asked', id, position}
"""
)

# ARGV: base, id, outcome, answer ('' for none), settled_ms, maxlen, claim, answerer ('' for
# nobody named). A claim that already settled it (the client retried a command whose reply
# was lost) is 'ok' too.
SETTLE: Final = (
    PRELUDE
    + """
local position, state, claim = settle(ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6],
  ARGV[7], ARGV[8])
if position then return {'ok', position} end
if state and claim == ARGV[7] then return {'ok', ''} end
return {'not_pending', state or ''}
"""
)

# ARGV: base. Returns the last position, then id, request, id, request... of the questions
# whose hash says pending (the hash is the truth, whatever the sorted set still holds).
SNAPSHOT: Final = """
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
HEARTBEAT: Final = (
    PRELUDE
    + """
local owner, lease_ms = ARGV[2], tonumber(ARGV[3])
local settled_ms, maxlen, batch = tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6])
local now = now_ms()
if lease_ms > 0 then
  redis.call('ZADD', KEYS[3], now + lease_ms, owner)
  redis.call('PEXPIRE', base .. 'inbox:' .. owner, lease_ms)  -- (none yet: nothing to do)
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

# KEYS: events, an inbox. ARGV: base, position ('' to skip the stream), count, the inbox's
# position ('' to skip it). The stream's entries after the position, each with what its
# question's hash holds (state, request, answer), and the inbox's first id and its entries
# after its position, each with its question's state and answer; all read at one moment:
# the tail sends it after its blocking XREAD on the same connection, which the server runs
# as soon as that read returns, so an entry and the hash that bears it out arrive in one
# round trip. A requested entry gets the state and the request, a resolved one (and an
# inbox entry) the state, the answer and the answerer; an entry that names no question gets
# false; a key that is no hash, the error's text.
READ: Final = """
local base, count = ARGV[1], tonumber(ARGV[3])
local function held(id, ...)
  local stored = redis.pcall('HMGET', base .. 'q:' .. id, 'state', ...)
  if type(stored) == 'table' and stored.err then return stored.err end
  return stored
end
local events = {}
if ARGV[2] ~= '' then
  local found = redis.call('XRANGE', KEYS[1], '(' .. ARGV[2], '+', 'COUNT', count)
  for i, entry in ipairs(found) do
    local fields, kind, id = entry[2], nil, nil
    for j = 1, #fields, 2 do
      if fields[j] == 'kind' then kind = fields[j + 1] elseif fields[j] == 'id' then
        id = fields[j + 1]
      end
    end
    local stored = false
    if id and (kind == 'requested' or kind == 'resolved') then
      -- A requested entry needs the request, a resolved one the answer: not both.
      if kind == 'requested' then stored = held(id, 'request')
      else stored = held(id, 'answer', 'answerer') end
    end
    events[i] = {entry[1], fields, stored}
  end
end
local first, inbox = false, {}
if ARGV[4] ~= '' then
  local oldest = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 1)
  if oldest[1] then first = oldest[1][1] end
  local found = redis.call('XRANGE', KEYS[2], '(' .. ARGV[4], '+', 'COUNT', count)
  for i, entry in ipairs(found) do
    local fields, id = entry[2], false
    for j = 1, #fields, 2 do
      if fields[j] == 'id' then id = fields[j + 1] end
    end
    inbox[i] = {entry[1], id, id and held(id, 'answer', 'answerer')}
  end
end
return {events, first, inbox}
"""

# KEYS: events (it routes the script to the prefix's slot). ARGV: base, then question ids.
# The asks a process waits on whose question is not pending any more, as id, state, answer,
# answerer, error quintuples (state false: no such question; error: the key is no hash); the
# pending ones, nearly all, cost the client nothing to read.
SETTLED: Final = """
local base = ARGV[1]
local out = {}
for i = 2, #ARGV do
  local found = redis.pcall('HMGET', base .. 'q:' .. ARGV[i], 'state', 'answer', 'answerer')
  if type(found) == 'table' and found.err then
    out[#out + 1] = ARGV[i]; out[#out + 1] = false; out[#out + 1] = false
    out[#out + 1] = false; out[#out + 1] = found.err
  elseif found[1] ~= 'pending' then
    out[#out + 1] = ARGV[i]; out[#out + 1] = found[1]; out[#out + 1] = found[2]
    out[#out + 1] = found[3]; out[#out + 1] = false
  end
end
return out
"""
