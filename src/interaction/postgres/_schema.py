"""The Postgres relay's schema: its tables and the functions that change them.

Every change is one call of a PL/pgSQL function, so one round trip and one transaction.
Each function first locks the schema's one ``meta`` row (``FOR UPDATE``): writers take
turns, as Redis runs one script at a time, and event positions, handed out from a counter
on that row while it is locked, are in commit order with no gaps (a sequence would hand
them out in call order, and a reader could pass a number whose transaction commits
later). The lock row also counts the pending questions, so an ask checks
``max_pending`` without counting rows; each heartbeat counts them again. ``migrate()``
runs :func:`statements` in one transaction, under an advisory lock and (when the tables
are there) the meta row, taken before any table as the functions take it, and records
:data:`VERSION`; running it again changes nothing.

The same schema holds the tables of :mod:`interaction.postgres`'s stores (rules, the audit
trail, spent states, used answer links, push subscriptions), so one ``migrate()``, of the
relay or of any store, creates them all. They are not behind the relay's lock row: each
store's change takes its own turn (the rule set's row, the audit trail's next ``seq``, a
nonce's key, a subscription's endpoint). A store that finds its own tables missing says to
run ``migrate()``.

Version 2 added ``questions.answerer`` (who answered or dismissed a question, when the page
named them) and the ``p_answerer`` argument of ``settle``; rows written before it have none.
It also holds ``questions.approvals`` (a quorum question's approvals, ``[[name, ms], ...]``)
and ``approve``, which counts one approval under the meta lock; a database migrated by an
earlier build of version 2 gets them at the next ``migrate()`` (every statement is
idempotent).

Every event row is announced on the schema's channel when its transaction commits, by a
deferred trigger on ``events``: the payload is the row a tail would read (the event's
columns and its question's, as the transaction leaves them, a JSON array; a ``resolved``
event's without the request, which no reader of it uses), or its position alone when that
would pass :data:`MAX_PAYLOAD`. The same transaction writes both, so the
payload is as trusted as the row. As any role that can connect may send a notification on
the channel, the payload is signed (HMAC-SHA256 under a key in ``announce_key``, which
``migrate()`` makes) and a tail takes only a payload signed so. A listening tail reads the
table only after a gap, a payload of a position alone (or unsigned), a reconnect, or a
quiet spell. A database migrated by an
earlier build of version 2 announced positions alone, from ``append_event``, which tails
still read by (the next ``migrate()`` moves the announcement to the trigger).

A ``resolved`` event is also announced, with the same payload, to its question's owner
on the owner's own channel (the schema's ``owner_channel()``, ``<schema>_o_<owner>``), so a
process that only asks hears its own questions settled and not every other asker's
events. A database migrated by an earlier build has no ``owner_channel`` function: its
relays hear the schema's channel alone (the next ``migrate()`` brings the owners').
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["MAX_CHANNEL", "MAX_PAYLOAD", "VERSION", "channel", "check_schema", "statements"]

VERSION: Final = 2
"""The schema this module writes; ``meta.version`` records the one a database holds."""

_SCHEMA_NAME: Final = re.compile(r"[a-z_][a-z0-9_]{0,39}")


def check_schema(schema: str) -> str:
    """``schema`` if it is a plain lower-case SQL name (it is written into the SQL)."""
    if not _SCHEMA_NAME.fullmatch(schema):
        raise ValueError(
            f"the schema must be a lower-case SQL name (a-z, 0-9, _; up to 40): {schema!r}"
        )
    return schema


MAX_PAYLOAD: Final = 7999
"""The longest notification payload PostgreSQL sends (it refuses 8000 bytes or more)."""


MAX_CHANNEL: Final = 63
"""The longest channel name PostgreSQL takes (``NAMEDATALEN`` less one), in bytes."""


def channel(schema: str) -> str:
    """The ``LISTEN``/``NOTIFY`` channel of a schema's events."""
    return f"{schema}_relay_events"


def statements(schema: str) -> list[str]:
    """The DDL of ``schema``, each statement idempotent."""
    s = f'"{check_schema(schema)}"'
    notify = channel(schema)
    owner_prefix = f"{schema}_o_"
    return [
        f"CREATE SCHEMA IF NOT EXISTS {s}",
        f"""CREATE TABLE IF NOT EXISTS {s}.meta (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  version integer NOT NULL,
  epoch text NOT NULL,
  last_position bigint NOT NULL DEFAULT 0,
  pending integer NOT NULL DEFAULT 0
)""",
        f"""CREATE TABLE IF NOT EXISTS {s}.questions (
  id text PRIMARY KEY,
  request text NOT NULL,
  state text NOT NULL,
  owner text NOT NULL DEFAULT '',
  position bigint NOT NULL,
  asked timestamptz NOT NULL,
  deadline timestamptz NOT NULL,
  key text,
  digest text,
  answer text,
  claim text,
  settled timestamptz,
  expires timestamptz
)""",
        # Version 2: who settled it (rows of version 1 have none), and the settle functions
        # that take the name (their version 1 forms go first: a call would be ambiguous).
        f"ALTER TABLE {s}.questions ADD COLUMN IF NOT EXISTS answerer text",
        f"ALTER TABLE {s}.questions ADD COLUMN IF NOT EXISTS approvals text",
        f"DROP FUNCTION IF EXISTS {s}.settle(text, text, text, bigint, text)",
        f"DROP FUNCTION IF EXISTS {s}.settle_one(text, text, text, bigint, text)",
        f"CREATE INDEX IF NOT EXISTS questions_pending ON {s}.questions (position)"
        " WHERE state = 'pending'",
        f"CREATE INDEX IF NOT EXISTS questions_owner ON {s}.questions (owner)"
        " WHERE state = 'pending'",
        f"CREATE INDEX IF NOT EXISTS questions_deadline ON {s}.questions (deadline)"
        " WHERE state = 'pending'",
        f"CREATE INDEX IF NOT EXISTS questions_key ON {s}.questions (key, position)"
        " WHERE key IS NOT NULL",
        f"CREATE INDEX IF NOT EXISTS questions_expires ON {s}.questions (expires)"
        " WHERE expires IS NOT NULL",
        f"""CREATE TABLE IF NOT EXISTS {s}.events (
  position bigint PRIMARY KEY,
  kind text NOT NULL,
  question_id text NOT NULL,
  outcome text
)""",
        f"""CREATE TABLE IF NOT EXISTS {s}.owners (
  owner text PRIMARY KEY,
  lease_ends timestamptz NOT NULL
)""",
        *_stores(s),
        # The next free position: after the counter, and after any row another hand
        # wrote (which readers pass over); one such a hand is still writing is waited
        # for, and then passed too. A taken position must not fail the call: the counter
        # would roll back with it, and every call after it would fail the same way.
        f"""CREATE OR REPLACE FUNCTION {s}.append_event(p_kind text, p_id text, p_outcome text)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE pos bigint;
BEGIN
  LOOP
    UPDATE {s}.meta SET last_position = greatest(last_position,
        coalesce((SELECT max(position) FROM {s}.events), 0)) + 1
      RETURNING last_position INTO pos;
    INSERT INTO {s}.events (position, kind, question_id, outcome)
      VALUES (pos, p_kind, p_id, p_outcome) ON CONFLICT (position) DO NOTHING;
    EXIT WHEN FOUND;
  END LOOP;
  RETURN pos;
END $$""",
        # The key of the notifications' HMAC-SHA256 (any role that can connect may send
        # a notification; only one that can read this table can sign one): a 64-byte
        # key, XORed with HMAC's two pads, written by migrate().
        f"""CREATE TABLE IF NOT EXISTS {s}.announce_key (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  inner_pad bytea NOT NULL,
  outer_pad bytea NOT NULL
)""",
        # The channel on which a question's owner (an asker's relay) hears it settled.
        f"""CREATE OR REPLACE FUNCTION {s}.owner_channel(p_owner text)
RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT '{owner_prefix}' || p_owner $$""",
        # Each event row, as a tail would read it (the row and its question's, as the
        # transaction leaves them), is announced when the transaction commits: a
        # notification carries it, so a listening tail reads nothing. A row over the
        # payload's bound is announced by its position alone (the tail reads the table).
        # A resolved event's row leaves out the request, which no reader of it uses:
        # every host hears every notification, and hashes and parses what it carries. It
        # also goes to the question's owner, on its own channel (while the name fits).
        f"""CREATE OR REPLACE FUNCTION {s}.announce_event()
RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE payload text; owner_ text; owned text; k record;
BEGIN
  SELECT inner_pad, outer_pad INTO k FROM {s}.announce_key;
  SELECT json_build_array(NEW.position, NEW.kind, NEW.question_id, NEW.outcome, q.state,
      CASE WHEN NEW.kind = 'resolved' THEN NULL ELSE q.request END,
      q.answer, q.answerer, q.approvals)::text, q.owner INTO payload, owner_
    FROM (SELECT 1) one LEFT JOIN {s}.questions q ON q.id = NEW.question_id;
  IF k.inner_pad IS NULL OR octet_length(payload) > {MAX_PAYLOAD} - 64 THEN
    payload := NEW.position::text;
  ELSE  -- HMAC-SHA256 of the row, in hex, then the row
    payload := encode(sha256(k.outer_pad || sha256(k.inner_pad || convert_to(payload, 'UTF8'))),
      'hex') || payload;
  END IF;
  PERFORM pg_notify('{notify}', payload);
  IF NEW.kind = 'resolved' AND owner_ <> '' THEN  -- and to its owner, on its own channel
    owned := {s}.owner_channel(owner_);
    IF octet_length(owned) <= {MAX_CHANNEL} THEN
      PERFORM pg_notify(owned, payload);
    END IF;
  END IF;
  RETURN NULL;
END $$""",
        f"""DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_trigger
      WHERE tgrelid = '{s}.events'::regclass AND tgname = 'events_announce') THEN
    CREATE CONSTRAINT TRIGGER events_announce AFTER INSERT ON {s}.events
      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION {s}.announce_event();
  END IF;
END $$""",
        # Settle one question, if it is pending: the caller holds the meta lock.
        f"""CREATE OR REPLACE FUNCTION {s}.settle_one(
  p_id text, p_outcome text, p_answer text, p_settled_ms bigint, p_claim text,
  p_answerer text DEFAULT NULL)
RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE q record; pos bigint; now_ timestamptz := clock_timestamp();
BEGIN
  SELECT state, claim INTO q FROM {s}.questions WHERE id = p_id;
  IF NOT FOUND THEN RETURN ARRAY['not_pending', '']; END IF;
  IF q.state IS DISTINCT FROM 'pending' THEN
    IF p_claim IS NOT NULL AND q.claim = p_claim THEN RETURN ARRAY['ok', '']; END IF;
    RETURN ARRAY['not_pending', coalesce(q.state, '')];
  END IF;
  UPDATE {s}.questions SET state = p_outcome, answer = p_answer, claim = p_claim,
    answerer = p_answerer, settled = now_,
    expires = now_ + p_settled_ms * interval '1 millisecond'
    WHERE id = p_id;
  UPDATE {s}.meta SET pending = pending - 1;
  pos := {s}.append_event('resolved', p_id, p_outcome);
  RETURN ARRAY['ok', pos::text];
END $$""",
        # An owner's pending questions: keyed ones wait (no owner), plain ones are withdrawn.
        f"""CREATE OR REPLACE FUNCTION {s}.release_owner(p_owner text, p_settled_ms bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE q record;
BEGIN
  FOR q IN SELECT id, key FROM {s}.questions
      WHERE owner = p_owner AND state = 'pending' ORDER BY position LOOP
    IF q.key IS NOT NULL THEN
      UPDATE {s}.questions SET owner = '' WHERE id = q.id;
    ELSE
      PERFORM {s}.settle_one(q.id, 'aborted', NULL, p_settled_ms, NULL);
    END IF;
  END LOOP;
  DELETE FROM {s}.owners WHERE owner = p_owner;
END $$""",
        f"""CREATE OR REPLACE FUNCTION {s}.ask(
  p_id text, p_request text, p_owner text, p_lease_ms bigint, p_max_pending integer,
  p_lifetime_ms bigint, p_settled_ms bigint, p_key text, p_digest text)
RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE old record; pos bigint; now_ timestamptz; n_pending integer;
BEGIN
  PERFORM 1 FROM {s}.meta FOR UPDATE;
  IF EXISTS (SELECT 1 FROM {s}.questions WHERE id = p_id) THEN
    RETURN ARRAY['asked', p_id, ''];  -- the client retried a call whose reply was lost
  END IF;
  now_ := clock_timestamp();
  INSERT INTO {s}.owners (owner, lease_ends)
    VALUES (p_owner, now_ + p_lease_ms * interval '1 millisecond')
    ON CONFLICT (owner) DO UPDATE SET lease_ends = excluded.lease_ends;
  IF p_key IS NOT NULL THEN
    SELECT id, state, digest, answer, answerer INTO old FROM {s}.questions
      WHERE key = p_key ORDER BY position DESC LIMIT 1;
    IF FOUND THEN
      IF old.digest = p_digest THEN
        IF old.state = 'pending' THEN
          UPDATE {s}.questions SET owner = p_owner WHERE id = old.id;
          RETURN ARRAY['attached', old.id];
        ELSIF old.state = 'answered' THEN
          RETURN ARRAY['answered', old.id, coalesce(old.answer, ''),
            coalesce(old.answerer, '')];
        ELSIF old.state = 'cancelled' THEN
          RETURN ARRAY['cancelled', old.id, '', coalesce(old.answerer, '')];
        END IF;
      ELSIF old.state = 'pending' THEN  -- replaced by a different question
        PERFORM {s}.settle_one(old.id, 'aborted', NULL, p_settled_ms, NULL);
      END IF;
    END IF;
  END IF;
  SELECT m.pending INTO n_pending FROM {s}.meta m;  -- less one replaced just now
  IF n_pending >= p_max_pending THEN RETURN ARRAY['full']; END IF;
  UPDATE {s}.meta SET pending = pending + 1;
  pos := {s}.append_event('requested', p_id, NULL);
  INSERT INTO {s}.questions (id, request, state, owner, position, asked, deadline, key, digest)
    VALUES (p_id, p_request, 'pending', p_owner, pos, now_,
      now_ + p_lifetime_ms * interval '1 millisecond', p_key, p_digest);
  RETURN ARRAY['asked', p_id, pos::text];
END $$""",
        f"""CREATE OR REPLACE FUNCTION {s}.settle(
  p_id text, p_outcome text, p_answer text, p_settled_ms bigint, p_claim text,
  p_answerer text)
RETURNS text[] LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM {s}.meta FOR UPDATE;
  RETURN {s}.settle_one(p_id, p_outcome, p_answer, p_settled_ms, p_claim, p_answerer);
END $$""",
        # One approval of a quorum question, under the meta lock (so two hosts' approvals
        # take turns and exactly one settles it): the approver joins the row's approvals
        # once; the approval that makes the quorum settles it as answered, any other
        # appends an 'approved' event naming the approver (in the outcome column).
        f"""CREATE OR REPLACE FUNCTION {s}.approve(
  p_id text, p_approver text, p_quorum integer, p_answer text, p_settled_ms bigint,
  p_claim text)
RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE q record; list jsonb; pos bigint; settled text[];
BEGIN
  PERFORM 1 FROM {s}.meta FOR UPDATE;
  SELECT state, claim, approvals INTO q FROM {s}.questions WHERE id = p_id;
  IF NOT FOUND THEN RETURN ARRAY['not_pending', '']; END IF;
  IF q.state IS DISTINCT FROM 'pending' THEN
    IF q.claim = p_claim THEN RETURN ARRAY['ok', '']; END IF;
    RETURN ARRAY['not_pending', coalesce(q.state, '')];
  END IF;
  list := coalesce(q.approvals::jsonb, '[]'::jsonb);
  IF EXISTS (SELECT 1 FROM jsonb_array_elements(list) e WHERE e->>0 = p_approver) THEN
    RETURN ARRAY['again', '', list::text];
  END IF;
  list := list || jsonb_build_array(jsonb_build_array(p_approver,
    floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint));
  UPDATE {s}.questions SET approvals = list::text WHERE id = p_id;
  IF jsonb_array_length(list) >= p_quorum THEN
    settled := {s}.settle_one(p_id, 'answered', p_answer, p_settled_ms, p_claim, p_approver);
    RETURN ARRAY['settled', settled[2], list::text];
  END IF;
  pos := {s}.append_event('approved', p_id, p_approver);
  RETURN ARRAY['approved', pos::text, list::text];
END $$""",
        # Refresh (or, at a lease of 0, release) this owner; release the lapsed owners,
        # withdraw the questions whose lifetime ended, drop the settled rows whose time is
        # up and the events beyond the history; a bounded batch of each per call.
        f"""CREATE OR REPLACE FUNCTION {s}.heartbeat(
  p_owner text, p_lease_ms bigint, p_settled_ms bigint, p_batch integer, p_history bigint)
RETURNS integer[] LANGUAGE plpgsql AS $$
DECLARE dead text; expired text; now_ timestamptz; n_dead integer := 0;
  n_expired integer := 0; last bigint;
BEGIN
  SELECT last_position INTO last FROM {s}.meta FOR UPDATE;
  now_ := clock_timestamp();
  IF p_lease_ms > 0 THEN
    INSERT INTO {s}.owners (owner, lease_ends)
      VALUES (p_owner, now_ + p_lease_ms * interval '1 millisecond')
      ON CONFLICT (owner) DO UPDATE SET lease_ends = excluded.lease_ends;
  ELSE
    PERFORM {s}.release_owner(p_owner, p_settled_ms);
  END IF;
  FOR dead IN SELECT owner FROM {s}.owners WHERE lease_ends < now_ LIMIT p_batch LOOP
    PERFORM {s}.release_owner(dead, p_settled_ms);
    n_dead := n_dead + 1;
  END LOOP;
  FOR expired IN SELECT id FROM {s}.questions
      WHERE state = 'pending' AND deadline < now_ ORDER BY deadline LIMIT p_batch LOOP
    PERFORM {s}.settle_one(expired, 'aborted', NULL, p_settled_ms, NULL);
    n_expired := n_expired + 1;
  END LOOP;
  DELETE FROM {s}.questions WHERE id IN (
    SELECT id FROM {s}.questions WHERE expires < now_ LIMIT p_batch * 10);
  DELETE FROM {s}.events WHERE position <= last - p_history;
  -- The count the asks keep (a row settled by another hand is not counted out there).
  UPDATE {s}.meta SET pending = (SELECT count(*) FROM {s}.questions WHERE state = 'pending');
  RETURN ARRAY[n_dead, n_expired];
END $$""",
    ]


def _stores(s: str) -> list[str]:
    """The DDL of the stores' tables (``s`` is the quoted schema)."""
    return [
        # The rules, each its signed JSON by id, and the signed manifest of the whole set
        # (one row, absent until the first change): interaction.postgres.PostgresRuleStore.
        f"CREATE TABLE IF NOT EXISTS {s}.rules (id text PRIMARY KEY, rule text NOT NULL)",
        f"""CREATE TABLE IF NOT EXISTS {s}.rule_set (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  manifest text
)""",
        # Set the manifest and add, remove (or, for 'seal', leave) one rule, only if the
        # manifest is still p_expected (NULL: none); whether it was.
        f"""CREATE OR REPLACE FUNCTION {s}.change_rules(
  p_expected text, p_manifest text, p_op text, p_id text, p_rule text)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE current_ text;
BEGIN
  INSERT INTO {s}.rule_set (one, manifest) VALUES (true, NULL) ON CONFLICT (one) DO NOTHING;
  SELECT manifest INTO current_ FROM {s}.rule_set FOR UPDATE;
  IF current_ IS DISTINCT FROM p_expected THEN RETURN false; END IF;
  UPDATE {s}.rule_set SET manifest = p_manifest;
  IF p_op = 'add' THEN
    INSERT INTO {s}.rules (id, rule) VALUES (p_id, p_rule)
      ON CONFLICT (id) DO UPDATE SET rule = excluded.rule;
  ELSIF p_op = 'remove' THEN
    DELETE FROM {s}.rules WHERE id = p_id;
  END IF;
  RETURN true;
END $$""",
        # The audit trail: one row per record, its seq unique, so of two hosts chaining a
        # record after one head exactly one writes it (interaction.postgres.PostgresAuditLog).
        f"""CREATE TABLE IF NOT EXISTS {s}.audit (
  seq bigint PRIMARY KEY,
  digest text NOT NULL,
  record text NOT NULL
)""",
        # Spent states' nonces until their states expire (interaction.postgres.PostgresSpentStore),
        # and used answer links' until the links do (interaction.postgres.PostgresUsedLinks).
        *_nonces(s, "spent", "spend"),
        *_nonces(s, "used_links", "use_link"),
        # Web Push subscriptions, one per endpoint, each its JSON with its named user
        # (interaction.postgres.PostgresPushSubscriptionStore).
        f"""CREATE TABLE IF NOT EXISTS {s}.push_subscriptions (
  endpoint text PRIMARY KEY,
  subscription text NOT NULL
)""",
    ]


def _nonces(s: str, table: str, function: str) -> list[str]:
    """The DDL of a table of nonces, each kept until it expires, and of the function that
    records one (``s`` is the quoted schema)."""
    return [
        f"""CREATE TABLE IF NOT EXISTS {s}.{table} (
  nonce text PRIMARY KEY,
  expires timestamptz NOT NULL
)""",
        f"CREATE INDEX IF NOT EXISTS {table}_expires ON {s}.{table} (expires)",
        # Forget a bounded batch of expired nonces (rows another call is forgetting are
        # skipped), then record p_nonce; whether it was fresh (or its entry had expired).
        f"""CREATE OR REPLACE FUNCTION {s}.{function}(
  p_nonce text, p_expires double precision, p_batch integer)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE now_ timestamptz := clock_timestamp();
BEGIN
  DELETE FROM {s}.{table} WHERE nonce IN (
    SELECT nonce FROM {s}.{table} WHERE expires < now_ LIMIT p_batch FOR UPDATE SKIP LOCKED);
  INSERT INTO {s}.{table} AS old (nonce, expires) VALUES (p_nonce, to_timestamp(p_expires))
    ON CONFLICT (nonce) DO UPDATE SET expires = excluded.expires WHERE old.expires < now_;
  RETURN FOUND;
END $$""",
    ]
