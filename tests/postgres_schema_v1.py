"""The Postgres relay's schema at version 1, as released (``statements`` copied verbatim
from ``interaction.postgres_relay._schema`` before version 2): the tests make a database
as version 1 left it and migrate it."""

from __future__ import annotations

from interaction.postgres._schema import channel, check_schema

__all__ = ["VERSION", "statements"]

VERSION = 1


def statements(schema: str) -> list[str]:
    """The DDL of ``schema``, each statement idempotent."""
    s = f'"{check_schema(schema)}"'
    notify = channel(schema)
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
  PERFORM pg_notify('{notify}', pos::text);
  RETURN pos;
END $$""",
        # Settle one question, if it is pending: the caller holds the meta lock.
        f"""CREATE OR REPLACE FUNCTION {s}.settle_one(
  p_id text, p_outcome text, p_answer text, p_settled_ms bigint, p_claim text)
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
    settled = now_, expires = now_ + p_settled_ms * interval '1 millisecond'
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
    SELECT id, state, digest, answer INTO old FROM {s}.questions
      WHERE key = p_key ORDER BY position DESC LIMIT 1;
    IF FOUND THEN
      IF old.digest = p_digest THEN
        IF old.state = 'pending' THEN
          UPDATE {s}.questions SET owner = p_owner WHERE id = old.id;
          RETURN ARRAY['attached', old.id];
        ELSIF old.state = 'answered' THEN
          RETURN ARRAY['answered', old.id, coalesce(old.answer, '')];
        ELSIF old.state = 'cancelled' THEN
          RETURN ARRAY['cancelled', old.id];
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
  p_id text, p_outcome text, p_answer text, p_settled_ms bigint, p_claim text)
RETURNS text[] LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM {s}.meta FOR UPDATE;
  RETURN {s}.settle_one(p_id, p_outcome, p_answer, p_settled_ms, p_claim);
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
