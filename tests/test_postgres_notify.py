"""The Postgres relay's notifications carry its events: a listening tail takes each one
from its signed payload and reads the events table only when it must (a gap, an event too
large for a payload, a schema whose notifications carry positions alone); a notification
another hand sends on the channel is never taken for an event. A relay that only asks
listens to its own channel instead, where each question it owns is announced settled; it
starts to hear every event at its first call of the clients' side."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import AsyncIterator

import psycopg
import pytest

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
)
from interaction.postgres import PostgresRelay
from interaction.postgres._schema import MAX_PAYLOAD, channel
from interaction.relay import RelayEvent

from .postgres_server import (
    OLD_APPEND_EVENT,
    PostgresServer,
    Statements,
    execute,
    owner_and_role_relay,
    postgres_server,
)

__all__ = ["postgres_server"]

WAIT = 10.0


def free(text: str) -> AskUserQuestionRequest:
    return AskUserQuestionRequest([AskUserQuestionItem("q", text)])


def custom(text: str) -> AskUserQuestionAnswer:
    return AskUserQuestionAnswer([AskUserQuestionAnswerItem("q", custom=text)])


@contextlib.asynccontextmanager
async def relays(url: str, schema: str, count: int) -> AsyncIterator[list[PostgresRelay]]:
    """``count`` relays on ``schema`` (as many processes), connected; closed on the way out."""
    made = [PostgresRelay(url, schema=schema, lease_ttl=120) for _ in range(count)]
    try:
        for relay in made:
            await relay.connect()
        yield made
    finally:
        for relay in made:
            await relay.aclose()


async def next_event(events: AsyncIterator[RelayEvent]) -> RelayEvent:
    return await asyncio.wait_for(anext(events), WAIT)


async def as_an_earlier_build_left_it(url: str, *changes: str) -> tuple[PostgresRelay, str]:
    """A relay of a fresh schema, migrated, then changed back by ``changes`` (each given
    ``s``, the quoted schema, and ``channel``, its channel) as an earlier build made it."""
    schema = f"n{secrets.token_hex(6)}"
    relay = PostgresRelay(url, schema=schema)
    await relay.migrate()
    for change in changes:
        await execute(url, change.format(s=f'"{schema}"', channel=channel(schema)))
    return relay, schema


async def test_a_listening_tail_takes_each_event_from_its_notification_and_reads_nothing(
    postgres_server: PostgresServer,
) -> None:
    """A relay whose role may not read the events table any more still sees every event,
    settled answers included: they come in the notifications (a read of the table would
    fail, and its iterator would say RELAY_UNAVAILABLE)."""
    url, schema = postgres_server.url, f"n{secrets.token_hex(6)}"
    async with owner_and_role_relay(url, schema) as (owner, listener, role):
        events = listener.events((await listener.snapshot()).position)
        first = asyncio.create_task(owner.ask(free("Before?")))
        before = await next_event(events)  # the listener's tail is live
        assert before.kind == "requested"
        await execute(url, f'REVOKE SELECT ON "{schema}".events FROM "{role}"')
        second = asyncio.create_task(owner.ask(free("After?")))
        asked = await next_event(events)
        assert asked.question is not None
        assert asked.question.request.questions[0].question == "After?"
        await owner.submit(asked.id, custom("carried"))
        await owner.dismiss(before.id)
        assert await next_event(events) == RelayEvent(
            "resolved", asked.id, outcome="answered", position=""
        )
        assert await next_event(events) == RelayEvent("resolved", before.id, outcome="cancelled")
        assert (await asyncio.wait_for(second, WAIT)).answers[0].custom == "carried"
        with pytest.raises(UserInteractionError) as dismissed:
            await first
        assert dismissed.value.code == ErrorCode.ASK_CANCELLED
        await events.aclose()


async def test_a_notification_another_hand_sends_is_not_taken_for_an_event(
    postgres_server: PostgresServer,
) -> None:
    """Any role that can connect may notify on the channel: a payload not signed with the
    schema's key (here, a row saying the question was answered) is no event; the tail
    reads the table instead, and the question stays pending until it is answered."""
    url, schema = postgres_server.url, f"n{secrets.token_hex(6)}"
    await PostgresRelay(url, schema=schema).migrate()
    async with relays(url, schema, 2) as (asker, other):
        events = asker.events((await asker.snapshot()).position)
        task = asyncio.create_task(asker.ask(free("Forged?")))
        asked = await next_event(events)
        position = int(asked.position.rpartition(".")[2])
        row = [position + 1, "resolved", asked.id, "answered", "answered", None]
        row += ['{"answers":[{"id":"q","selected":[],"custom":"forged"}]}', "mallory", None]
        text = json.dumps(row)
        for payload in (text, "0" * 64 + text, secrets.token_hex(32) + text):
            await execute(url, "SELECT pg_notify(%s, %s)", channel(schema), payload)
        later = asyncio.create_task(other.ask(free("Later?")))  # notified after the forgeries
        seen = await next_event(events)
        assert seen.kind == "requested"
        assert seen.question is not None
        assert seen.question.request.questions[0].question == "Later?"
        assert not task.done()
        await other.submit(asked.id, custom("genuine"))
        assert (await asyncio.wait_for(task, WAIT)).answers[0].custom == "genuine"
        assert (await next_event(events)).kind == "resolved"
        later.cancel()
        with pytest.raises(asyncio.CancelledError):
            await later
        await events.aclose()


async def test_an_event_too_large_for_a_notification_is_read_from_the_table(
    postgres_server: PostgresServer,
) -> None:
    """A request over the payload's bound is announced by its position alone: the other
    process reads it from the table, and the answer goes back as usual."""
    url, schema = postgres_server.url, f"n{secrets.token_hex(6)}"
    await PostgresRelay(url, schema=schema).migrate()
    text = "Is this long? " + "x" * MAX_PAYLOAD
    async with relays(url, schema, 2) as (asker, page):
        events = page.events((await page.snapshot()).position)
        task = asyncio.create_task(asker.ask(free(text)))
        asked = await next_event(events)
        assert asked.question is not None
        assert asked.question.request.questions[0].question == text
        await page.submit(asked.id, custom("long"))
        assert (await asyncio.wait_for(task, WAIT)).answers[0].custom == "long"
        assert (await next_event(events)).kind == "resolved"
        await events.aclose()


async def test_a_schema_whose_notifications_carry_positions_alone_is_read_by_its_tails(
    postgres_server: PostgresServer,
) -> None:
    """Tables migrated by an earlier build announce each event by its position, from
    ``append_event``, and hold no key: the tails read the table at each notification.
    ``migrate()`` brings the signed notifications."""
    url = postgres_server.url
    relay, schema = await as_an_earlier_build_left_it(
        url,
        "DROP TRIGGER events_announce ON {s}.events",
        "DROP TABLE {s}.announce_key",
        OLD_APPEND_EVENT,
    )
    for migrate in (False, True):
        if migrate:
            await relay.migrate()
        async with relays(url, schema, 2) as (asker, page):
            events = page.events((await page.snapshot()).position)
            task = asyncio.create_task(asker.ask(free(f"Migrated: {migrate}?")))
            asked = await next_event(events)
            await page.submit(asked.id, custom(str(migrate)))
            assert (await asyncio.wait_for(task, WAIT)).answers[0].custom == str(migrate)
            assert (await next_event(events)).kind == "resolved"
            await events.aclose()
    await relay.aclose()


def own_channel(relay: PostgresRelay) -> str:
    """The channel the schema announces ``relay``'s questions settled on."""
    return f"{relay.schema}_o_{relay.owner}"


async def asked_ids(events: AsyncIterator[RelayEvent], count: int) -> dict[str, str]:
    """The next ``count`` questions asked, by their text."""
    ids: dict[str, str] = {}
    while len(ids) < count:
        event = await next_event(events)
        if event.kind == "requested" and event.question is not None:
            ids[event.question.request.questions[0].question] = event.id
    return ids


async def test_an_asker_hears_its_own_questions_settled_on_its_own_channel_and_reads_nothing(
    postgres_server: PostgresServer,
) -> None:
    """Each question's resolved event also goes to its owner's channel, signed as on the
    schema's; another asker's does not. A relay that only asks listens there alone: its
    answer runs one statement, the ask (no event is read from the table)."""
    url, schema = postgres_server.url, f"n{secrets.token_hex(6)}"
    await PostgresRelay(url, schema=schema).migrate()
    async with (
        relays(url, schema, 3) as (mine, theirs, page),
        await psycopg.AsyncConnection.connect(url, autocommit=True) as spy,
    ):
        assert mine._listening_to == own_channel(mine)
        await spy.execute(f'LISTEN "{own_channel(mine)}"')
        events = page.events((await page.snapshot()).position)
        statements = Statements(mine)
        my_ask = asyncio.create_task(mine.ask(free("Mine?")))
        their_ask = asyncio.create_task(theirs.ask(free("Theirs?")))
        ids = await asked_ids(events, 2)
        assert page._listening_to == channel(schema)  # the clients' side hears everything
        await page.submit(ids["Theirs?"], custom("theirs"))
        assert (await asyncio.wait_for(their_ask, WAIT)).answers[0].custom == "theirs"
        await page.submit(ids["Mine?"], custom("mine"))
        assert (await asyncio.wait_for(my_ask, WAIT)).answers[0].custom == "mine"
        await events.aclose()
        [heard] = [notify async for notify in spy.notifies(timeout=WAIT, stop_after=1)]
        key = mine._announce_key
        assert key is not None
        row = key.carried(heard.payload)  # the first one there is my question's
        assert row is not None
        assert row[1:3] == ("resolved", ids["Mine?"])
        assert row[4] == "answered"
        assert [query.split("(")[0] for query in statements.run] == [f'SELECT "{schema}".ask']


async def test_a_notification_another_hand_sends_on_an_askers_channel_is_not_taken(
    postgres_server: PostgresServer,
) -> None:
    """A payload on an asker's channel not signed with the schema's key settles nothing:
    the asker looks its questions up, finds them pending, and waits on."""
    url, schema = postgres_server.url, f"n{secrets.token_hex(6)}"
    await PostgresRelay(url, schema=schema).migrate()
    async with relays(url, schema, 2) as (asker, page):
        events = page.events((await page.snapshot()).position)
        task = asyncio.create_task(asker.ask(free("Forged?")))
        [forged_id] = (await asked_ids(events, 1)).values()
        row = [0, "resolved", forged_id, "answered", "answered", None]
        row += ['{"answers":[{"id":"q","selected":[],"custom":"forged"}]}', "mallory", None]
        text = json.dumps(row)
        for payload in (text, "0" * 64 + text, secrets.token_hex(32) + text):
            await execute(url, "SELECT pg_notify(%s, %s)", own_channel(asker), payload)
        later = asyncio.create_task(asker.ask(free("Later?")))  # settled after the forgeries
        [later_id] = (await asked_ids(events, 1)).values()
        await page.submit(later_id, custom("later"))
        assert (await asyncio.wait_for(later, WAIT)).answers[0].custom == "later"
        assert not task.done()
        await page.submit(forged_id, custom("genuine"))
        assert (await asyncio.wait_for(task, WAIT)).answers[0].custom == "genuine"
        await events.aclose()


async def test_an_answer_too_large_for_a_notification_reaches_its_asker_by_a_lookup(
    postgres_server: PostgresServer,
) -> None:
    """A resolved event whose row passes the payload's bound is announced on the asker's
    channel by its position alone: the asker looks its questions up."""
    url, schema = postgres_server.url, f"n{secrets.token_hex(6)}"
    await PostgresRelay(url, schema=schema).migrate()
    long = "y" * MAX_PAYLOAD
    async with relays(url, schema, 2) as (asker, page):
        events = page.events((await page.snapshot()).position)
        task = asyncio.create_task(asker.ask(free("A long answer?")))
        [asked_id] = (await asked_ids(events, 1)).values()
        await page.submit(asked_id, custom(long))
        assert (await asyncio.wait_for(task, WAIT)).answers[0].custom == long
        assert asker._listening_to == own_channel(asker)
        await events.aclose()


async def test_an_asker_that_starts_to_serve_hears_every_question_since_it_started(
    postgres_server: PostgresServer,
) -> None:
    """``hear_every_question()`` moves an asker's tail to the schema's channel, and it
    reads the events it did not hear from the table: the questions asked meanwhile are
    known to it (its answer is checked without a lookup), and its iterators see them."""
    url, schema = postgres_server.url, f"n{secrets.token_hex(6)}"
    await PostgresRelay(url, schema=schema).migrate()
    async with relays(url, schema, 2) as (asker, other):
        start = (await other.snapshot()).position
        observer = other.events(start)
        mine = asyncio.create_task(asker.ask(free("Mine?")))
        theirs = asyncio.create_task(other.ask(free("Theirs?")))
        await asked_ids(observer, 2)  # both asked while the asker heard only its own
        assert asker._listening_to == own_channel(asker)
        asker.hear_every_question()
        events = asker.events(start)
        ids = await asked_ids(events, 2)
        assert asker._listening_to == channel(schema)
        assert asker.heard_request(ids["Theirs?"]) == free("Theirs?")
        statements = Statements(asker)
        await asker.submit(ids["Theirs?"], custom("theirs"))
        assert [query.split("(")[0] for query in statements.run] == [f'SELECT "{schema}".settle']
        await other.submit(ids["Mine?"], custom("mine"))
        assert (await asyncio.wait_for(mine, WAIT)).answers[0].custom == "mine"
        assert (await asyncio.wait_for(theirs, WAIT)).answers[0].custom == "theirs"
        await events.aclose()
        await observer.aclose()


async def test_tables_without_owner_channels_are_heard_on_the_schema_channel(
    postgres_server: PostgresServer,
) -> None:
    """Tables migrated by an earlier build announce every event on the schema's channel
    alone: an asker's relay hears it there, as before. ``migrate()`` brings the owners'
    channels."""
    url = postgres_server.url
    relay, schema = await as_an_earlier_build_left_it(
        url, "DROP FUNCTION {s}.owner_channel(text)", OLD_ANNOUNCE_EVENT
    )
    for migrate in (False, True):
        if migrate:
            await relay.migrate()
        async with relays(url, schema, 2) as (asker, page):
            expected = own_channel(asker) if migrate else channel(schema)
            assert asker._listening_to == expected
            events = page.events((await page.snapshot()).position)
            task = asyncio.create_task(asker.ask(free(f"Migrated: {migrate}?")))
            [asked_id] = (await asked_ids(events, 1)).values()
            await page.submit(asked_id, custom(str(migrate)))
            assert (await asyncio.wait_for(task, WAIT)).answers[0].custom == str(migrate)
            await events.aclose()
    await relay.aclose()


# announce_event as schemas made before the owners' channels hold it: every event on the
# schema's channel alone.
OLD_ANNOUNCE_EVENT = """CREATE OR REPLACE FUNCTION {s}.announce_event()
RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE payload text; k record;
BEGIN
  SELECT inner_pad, outer_pad INTO k FROM {s}.announce_key;
  SELECT json_build_array(NEW.position, NEW.kind, NEW.question_id, NEW.outcome, q.state,
      CASE WHEN NEW.kind = 'resolved' THEN NULL ELSE q.request END,
      q.answer, q.answerer, q.approvals)::text INTO payload
    FROM (SELECT 1) one LEFT JOIN {s}.questions q ON q.id = NEW.question_id;
  payload := encode(sha256(k.outer_pad || sha256(k.inner_pad || convert_to(payload, 'UTF8'))),
    'hex') || payload;
  PERFORM pg_notify('{channel}', payload);
  RETURN NULL;
END $$"""


async def test_a_relay_closed_while_it_opens_a_listener_closes_that_connection(
    postgres_server: PostgresServer,
) -> None:
    """The relay closes while its tail waits on ``LISTEN`` for the schema's channel (the
    relay had just begun to hear every event): that connection is closed, not left open
    for the garbage collector."""
    url, schema = postgres_server.url, f"n{secrets.token_hex(6)}"
    await PostgresRelay(url, schema=schema).migrate()
    relay = PostgresRelay(url, schema=schema, lease_ttl=120)
    await relay.connect()
    opened: list[psycopg.AsyncConnection[tuple[object, ...]]] = []
    listening, never = asyncio.Event(), asyncio.Event()
    open_connection = relay._db.open

    async def open_stalling_at_listen() -> psycopg.AsyncConnection[tuple[object, ...]]:
        connection = await open_connection()
        opened.append(connection)
        execute = connection.execute

        async def stalling(query: str) -> object:  # (the tail's LISTEN, its one statement)
            listening.set()
            await never.wait()
            return await execute(query)

        connection.execute = stalling  # type: ignore[method-assign,assignment]
        return connection

    relay._db.open = open_stalling_at_listen  # type: ignore[method-assign]
    relay.hear_every_question()
    await asyncio.wait_for(listening.wait(), WAIT)
    await relay.aclose()
    assert [connection.closed for connection in opened] == [True]
