"""A Postgres relay keeps the stored request of each question its tail heard asked, until
it hears it settled: a host with no page streaming checks an answer against it and claims
it in one statement, with every refusal the lookup would have given. A ``resolved``
notification leaves the request out (no reader of it uses it), so it is small and carries
its row even for a question whose request could not be carried."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator

import httpx

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    ErrorCode,
)
from interaction._shared_relay import RequestCache
from interaction.postgres import PostgresRelay
from interaction.postgres._schema import MAX_PAYLOAD
from interaction.relay import RelayEvent
from interaction.web import WebServer
from interaction.wire import dumps

from .postgres_server import (
    PostgresServer,
    Statements,
    execute,
    owner_and_role_relay,
    postgres_server,
)

__all__ = ["postgres_server"]

WAIT = 10.0
ANSWER = {"answers": [{"id": "q", "selected": [], "custom": "yes"}]}


def free(text: str) -> AskUserQuestionRequest:
    return AskUserQuestionRequest([AskUserQuestionItem("q", text)])


@contextlib.asynccontextmanager
async def hosts(
    server: PostgresServer,
) -> AsyncIterator[tuple[PostgresRelay, PostgresRelay, httpx.AsyncClient]]:
    """An asker's relay, and a host's relay served by a web page that nobody streams
    (the client answers by id), on a fresh schema."""
    schema = f"h{secrets.token_hex(6)}"
    asker = PostgresRelay(server.url, schema=schema, lease_ttl=120)
    await asker.migrate()
    host = PostgresRelay(server.url, schema=schema, lease_ttl=120)
    try:
        await asker.connect()
        await host.connect()
        async with (
            WebServer(host) as web,
            httpx.AsyncClient(
                base_url=web.base, headers={"Authorization": f"Bearer {web.token}"}, timeout=WAIT
            ) as http,
        ):
            yield asker, host, http
    finally:
        await host.aclose()
        await asker.aclose()


async def heard(relay: PostgresRelay, kind: str, position: str) -> RelayEvent:
    """The next event of ``kind`` the relay's tail takes after ``position`` (its iterator
    closed again, so the host has none open)."""
    events = relay.events(position)
    try:
        while (event := await asyncio.wait_for(anext(events), WAIT)).kind != kind:
            pass
    finally:
        await events.aclose()
    return event


async def test_a_host_claims_a_question_its_tail_heard_in_one_statement(
    postgres_server: PostgresServer,
) -> None:
    async with hosts(postgres_server) as (asker, host, http):
        start = (await host.snapshot()).position
        task = asyncio.create_task(asker.ask(free("Heard?")))
        asked = await heard(host, "requested", start)
        assert host.heard_request(asked.id) == free("Heard?")
        statements = Statements(host)
        posted = await http.post(f"/api/questions/{asked.id}/answer", json=ANSWER)
        assert posted.status_code == 200, posted.text
        assert [query.split("(")[0] for query in statements.run] == [
            f'SELECT "{host.schema}".settle'
        ]
        assert (await asyncio.wait_for(task, WAIT)).answers[0].custom == "yes"
        await heard(host, "resolved", asked.position)
        assert host.heard_request(asked.id) is None  # heard settled: forgotten


async def test_a_question_settled_unheard_is_refused_as_a_lookup_would_refuse_it(
    postgres_server: PostgresServer,
) -> None:
    """A question settled by a hand that appends no event (the host never hears it) is
    still refused by the claim: the same 409 as a host that looks it up gives, for a good
    answer and a bad one alike."""
    async with hosts(postgres_server) as (asker, host, http):
        start = (await host.snapshot()).position
        task = asyncio.create_task(asker.ask(free("Settled elsewhere?")))
        asked = await heard(host, "requested", start)
        wrong = {"answers": [{"id": "nope", "selected": [], "custom": "x"}]}
        refused = await http.post(f"/api/questions/{asked.id}/answer", json=wrong)
        assert refused.status_code == 400, refused.text  # pending: a bad answer is bad
        assert refused.json()["error"]["code"] == ErrorCode.BAD_ANSWER
        await execute(
            postgres_server.url,
            f"UPDATE \"{host.schema}\".questions SET state = 'answered' WHERE id = %s",
            asked.id,
        )
        assert host.heard_request(asked.id) is not None  # still, as far as it heard
        late = await http.post(f"/api/questions/{asked.id}/answer", json=ANSWER)
        bad = await http.post(f"/api/questions/{asked.id}/answer", json=wrong)
        fresh = PostgresRelay(postgres_server.url, schema=host.schema)
        try:
            assert fresh.heard_request(asked.id) is None
            async with (
                WebServer(fresh) as web,
                httpx.AsyncClient(
                    base_url=web.base, headers={"Authorization": f"Bearer {web.token}"}
                ) as other,
            ):
                looked_up = await other.post(f"/api/questions/{asked.id}/answer", json=ANSWER)
        finally:
            await fresh.aclose()
        assert looked_up.status_code == 409
        assert looked_up.json()["error"]["code"] == "NOT_PENDING"
        for response in (late, bad):
            assert (response.status_code, response.json()) == (409, looked_up.json())
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_a_resolved_notification_carries_its_row_though_its_request_is_too_large(
    postgres_server: PostgresServer,
) -> None:
    """The ``requested`` event of a request over the payload's bound is read from the
    table; its ``resolved`` one comes in its notification: a relay that may no longer read
    the events table still sees it (a read would fail, and its iterator would say
    RELAY_UNAVAILABLE)."""
    url, schema = postgres_server.url, f"h{secrets.token_hex(6)}"
    text = "Is this long? " + "x" * MAX_PAYLOAD
    async with owner_and_role_relay(url, schema) as (owner, listener, role):
        events = listener.events((await listener.snapshot()).position)
        task = asyncio.create_task(owner.ask(free(text)))
        asked = await asyncio.wait_for(anext(events), WAIT)  # read from the table
        assert asked.question is not None
        assert asked.question.request.questions[0].question == text
        await execute(url, f'REVOKE SELECT ON "{schema}".events FROM "{role}"')
        answer = AskUserQuestionAnswer([AskUserQuestionAnswerItem("q", custom="long")])
        await owner.submit(asked.id, answer)
        assert await asyncio.wait_for(anext(events), WAIT) == RelayEvent(
            "resolved", asked.id, outcome="answered", position=""
        )
        assert (await asyncio.wait_for(task, WAIT)).answers[0].custom == "long"
        await events.aclose()


def test_the_heard_requests_are_bounded_and_decoded_only_when_asked_for() -> None:
    cache = RequestCache(heard_kept=2)
    for number in range(3):
        cache.hear(f"id{number}", dumps(free(f"Number {number}?")))
    assert cache.heard("id0") is None  # the oldest, past the bound: a lookup finds it
    assert cache.get("id1") is None  # not decoded yet
    assert cache.heard("id1") == free("Number 1?")
    assert cache.get("id1") == free("Number 1?")
    cache.settled("id1")
    assert cache.heard("id1") is None
    cache.hear("bad", "{not a request")
    assert cache.heard("bad") is None  # what no lookup would return either
    cache.forget_heard()
    assert cache.heard("id2") is None
    unkept = RequestCache()
    unkept.hear("id", dumps(free("Kept?")))
    assert unkept.heard("id") is None
