"""The Postgres relay's notifications carry its events: a listening tail takes each one
from its signed payload and reads the events table only when it must (a gap, an event too
large for a payload, a schema whose notifications carry positions alone); a notification
another hand sends on the channel is never taken for an event."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import AsyncIterator

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
    url, schema = postgres_server.url, f"n{secrets.token_hex(6)}"
    relay = PostgresRelay(url, schema=schema)
    await relay.migrate()
    s = f'"{schema}"'
    await execute(url, f"DROP TRIGGER events_announce ON {s}.events")
    await execute(url, f"DROP TABLE {s}.announce_key")
    await execute(url, OLD_APPEND_EVENT.format(s=s, channel=channel(schema)))
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
