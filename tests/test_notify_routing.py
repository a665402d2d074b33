"""Routing and escalation: each user's and group's own channels, escalation while a
question waits (on a clock the test moves), stopping the moment it settles, and the real
local receivers (aiosmtpd, a webhook receiver, a Slack stand-in)."""

from __future__ import annotations

import asyncio
import email.message
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from urllib.parse import unquote

import httpx
import pytest

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    Assignment,
    Provenance,
    Team,
    UserInteractionError,
    ask,
    permission_question,
    provide,
)
from interaction.notify import (
    DeliveryError,
    EmailNotifier,
    Escalation,
    ManualClock,
    Notifications,
    Notifier,
    Reach,
    Retry,
    Routing,
    SlackNotifier,
    Step,
    WebhookNotifier,
)
from interaction.notify._config import routing_from_specs, steps_from_specs
from interaction.redis import RedisRelay
from interaction.relay import PendingQuestion, Relay, RelayBackend
from interaction.signing import AnswerLinks
from interaction.web import WebServer

from . import loopback
from .notify_helpers import WAIT, Recorder, receiving, smtp_server
from .redis_server import RedisServer, redis_server

__all__ = ["redis_server"]  # a fixture

TEAM = Team(users=["alice", "bob", "carol", "oncall"], groups={"ops": ["alice", "bob"]})
PKG = AskUserQuestionItem("pkg", "Which package manager?", options=[AskUserQuestionOption("npm")])
ANSWER = AskUserQuestionAnswer([AskUserQuestionAnswerItem("pkg", ["npm"])])
SECRET = "a-webhook-secret-of-some-length"
MINUTE = 60.0


@asynccontextmanager
async def routed(
    routing: Routing, clock: ManualClock, steps: Sequence[Step] = (), **options: object
) -> AsyncIterator[tuple[Relay, Notifications]]:
    relay = Relay(team=TEAM)
    with provide(relay):
        notifications = Notifications(relay, steps, routing=routing, clock=clock, **options)  # type: ignore[arg-type]
        async with notifications:
            try:
                yield relay, notifications
            finally:
                relay.close()


async def asked(
    relay: Relay, clock: ManualClock, *to: str
) -> tuple[asyncio.Task[AskUserQuestionAnswer], PendingQuestion]:
    """An ask assigned to ``to`` (none: unassigned), asked now on ``clock``, once the relay
    holds it: its task and its question."""
    request = AskUserQuestionRequest(
        [PKG],
        provenance=Provenance(source="deploy-bot", asked_at=clock.now()),
        assignment=Assignment(to) if to else None,
    )
    events = relay.events(relay.position)
    task = asyncio.create_task(ask(request))
    async with asyncio.timeout(WAIT):
        async for event in events:
            if event.kind == "requested" and event.question is not None:
                await events.aclose()
                return task, event.question
    raise AssertionError("the relay closed")


def recipients(recorder: Recorder) -> list[tuple[str, str | None, tuple[str, ...]]]:
    """What ``recorder`` was told: each notice's kind, whom it was for, who was awaited."""
    return [(what, notice.to, notice.awaiting) for what, notice, _ in recorder.told]


# ---------------------------------------------------------------------------- whom


async def test_assignees_are_reached_by_their_own_channels_and_nobody_else() -> None:
    clock = ManualClock()
    mail, slack, bobs = Recorder("alice's mail"), Recorder("ops slack"), Recorder("bob's")
    everyone = Recorder("every question")
    routing = Routing({"alice": [mail], "bob": [bobs], "ops": [slack]}, team=TEAM)
    async with routed(routing, clock, [Step(everyone)]) as (relay, notifications):
        to_ops, question = await asked(relay, clock, "ops")
        assert await slack.next_attempt() == "pending"  # ops has a channel: that one
        relay.answer(question.id, ANSWER, answerer="alice")
        await to_ops
        assert await slack.next_attempt() == "settled"
        to_alice, question = await asked(relay, clock, "alice")
        assert await mail.next_attempt() == "pending"
        relay.cancel(question.id, answerer="alice")
        with pytest.raises(UserInteractionError):
            await to_alice
        assert await mail.next_attempt() == "settled"
        unassigned, question = await asked(relay, clock)  # nobody's: only the steps
        relay.answer(question.id, ANSWER)
        await unassigned
        assert [await everyone.next_attempt() for _ in range(6)] == ["pending", "settled"] * 3
        await notifications.caught_up()
    assert recipients(slack) == [("pending", "ops", ()), ("settled", "ops", ())]
    assert recipients(mail) == [("pending", "alice", ()), ("settled", "alice", ())]
    assert bobs.attempts == 0  # bob is in ops, but ops is reached by its own channel
    assert [outcome for _, _, outcome in slack.told] == [None, "answered"]


async def test_a_group_without_a_channel_is_reached_through_each_member_once() -> None:
    clock = ManualClock()
    alices, bobs, carols = Recorder("alice's"), Recorder("bob's"), Recorder("carol's")
    routing = Routing({"alice": [alices], "bob": [bobs], "carol": [carols]}, team=TEAM)
    async with routed(routing, clock) as (relay, notifications):
        task, question = await asked(relay, clock, "ops", "alice")  # alice twice over: told once
        assert await alices.next_attempt() == "pending"
        assert await bobs.next_attempt() == "pending"
        relay.answer(question.id, ANSWER, answerer="alice")
        await task
        assert await alices.next_attempt() == "settled"
        assert await bobs.next_attempt() == "settled"
        await notifications.caught_up()
    assert recipients(alices) == [("pending", "alice", ()), ("settled", "alice", ())]
    assert recipients(bobs)[0] == ("pending", "bob", ())
    assert alices.told[0][1].step == bobs.told[0][1].step == 0  # one reach, one step
    assert carols.attempts == 0


def test_reach_leaves_out_who_approved_and_says_whom_a_group_channel_waits_for() -> None:
    alices, bobs, slack = Recorder("alice's"), Recorder("bob's"), Recorder("ops slack")
    members = Routing({"alice": [alices], "bob": [bobs]}, team=TEAM)
    assert members.reach(["ops"], approved={"alice"}) == [Reach(bobs, "bob", ("bob",))]
    assert members.reach(["ops"], approved={"alice", "bob"}) == []
    assert members.reach(["ops"]) == [Reach(alices, "alice"), Reach(bobs, "bob")]
    channel = Routing({"ops": [slack], "alice": [alices]}, team=TEAM)
    assert channel.reach(["ops", "alice"], approved={"alice"}) == [Reach(slack, "ops", ("bob",))]
    assert channel.reach(["ops"], approved=set()) == [Reach(slack, "ops", ("alice", "bob"))]
    # Without a team, every name is a user's.
    assert Routing({"ops": [slack]}).reach(["ops"], approved={"ops"}) == []


def test_assignees_another_assignee_escalates_to_wait_their_turn() -> None:
    routing = Routing(
        escalations=[
            Escalation("ops", 60, "oncall"),
            Escalation("oncall", 60, "carol"),
            Escalation("alice", 60, "alice"),  # a reminder holds nobody back
        ]
    )
    assert routing.first(["ops", "oncall", "carol"]) == ("ops",)
    assert routing.first(["oncall", "carol"]) == ("oncall",)
    assert routing.first(["carol", "alice"]) == ("carol", "alice")
    looping = Routing(escalations=[Escalation("a", 60, "b"), Escalation("b", 60, "a")])
    assert looping.first(["a", "b"]) == ("a", "b")  # each waits for the other: both at once


def test_a_routing_refuses_what_it_cannot_mean() -> None:
    with pytest.raises(ValueError, match=r"^mallory is no user or group of the team$"):
        Routing({"mallory": [Recorder("m")]}, team=TEAM)
    with pytest.raises(ValueError, match=r"^nobody is no user or group of the team$"):
        Routing(escalations=[Escalation("ops", 60, "nobody")], team=TEAM)
    with pytest.raises(ValueError, match="waits more than 0 seconds, got 0"):
        Escalation("ops", 0, "ops")  # a reminder without a pause would never stop
    with pytest.raises(ValueError, match="names a user or group, got ''"):
        Escalation("", 60, "ops")


# ---------------------------------------------------------------------------- escalation


async def test_ops_first_then_on_call_after_30_minutes_and_nothing_once_it_settles() -> None:
    clock = ManualClock()
    slack, pager, boss = Recorder("ops slack"), Recorder("on-call"), Recorder("boss")
    routing = Routing(
        {"ops": [slack], "oncall": [pager], "carol": [boss]},
        [Escalation("ops", 30 * MINUTE, "oncall"), Escalation("oncall", 60 * MINUTE, "carol")],
        TEAM,
    )
    async with routed(routing, clock) as (relay, notifications):
        # oncall may answer too, but ops escalates to oncall: ops first.
        task, question = await asked(relay, clock, "ops", "oncall")
        assert await slack.next_attempt() == "pending"
        await clock.until_sleeping()
        clock.advance(30 * MINUTE - 1)
        assert pager.attempts == 0
        clock.advance(1)  # 30 minutes and it still waits: the on-call user
        assert await pager.next_attempt() == "pending"
        await clock.until_sleeping()  # carol's turn would come an hour later
        relay.answer(question.id, ANSWER, answerer="oncall")
        await task
        assert await slack.next_attempt() == "settled"
        assert await pager.next_attempt() == "settled"
        await notifications.caught_up()
        assert clock.sleeping == 0  # every timer stopped at the settle
        clock.advance(24 * 3600)
        await notifications.caught_up()
    assert boss.attempts == 0
    assert recipients(pager) == [("pending", "oncall", ()), ("settled", "oncall", ())]
    assert (slack.told[0][1].step, pager.told[0][1].step) == (0, 1)
    assert pager.told[0][1].idempotency_key == f"{question.id}.1"


async def test_an_escalation_to_its_own_source_reminds_until_it_settles() -> None:
    clock = ManualClock()
    slack = Recorder("ops slack")
    routing = Routing({"ops": [slack]}, [Escalation("ops", 60 * MINUTE, "ops")], TEAM)
    async with routed(routing, clock) as (relay, notifications):
        task, question = await asked(relay, clock, "ops")
        assert await slack.next_attempt() == "pending"
        for _ in range(3):
            await clock.until_sleeping()
            clock.advance(60 * MINUTE)
            assert await slack.next_attempt() == "pending"
        await clock.until_sleeping()  # the fourth reminder waits its hour
        relay.answer(question.id, ANSWER, answerer="alice")
        await task
        assert await slack.next_attempt() == "settled"
        await notifications.caught_up()
        assert clock.sleeping == 0
    assert [notice.step for what, notice, _ in slack.told if what == "pending"] == [0, 1, 2, 3]
    assert slack.kinds() == ["pending"] * 4 + ["settled"]  # settled once per channel


async def test_escalations_keep_one_timer_per_name_however_the_chain_loops() -> None:
    clock = ManualClock()
    ops, pager = Recorder("ops"), Recorder("on-call")
    routing = Routing(
        {"ops": [ops], "oncall": [pager]},
        [
            Escalation("ops", 10 * MINUTE, "oncall"),
            Escalation("ops", 20 * MINUTE, "oncall"),  # oncall has a timer already
            Escalation("oncall", 10 * MINUTE, "ops"),
        ],
        TEAM,
    )
    async with routed(routing, clock) as (relay, _):
        task, question = await asked(relay, clock, "ops")
        assert await ops.next_attempt() == "pending"
        await clock.until_sleeping()
        assert clock.sleeping == 1
        clock.advance(10 * MINUTE)
        assert await pager.next_attempt() == "pending"
        await clock.until_sleeping()
        assert clock.sleeping == 1  # ops, in ten minutes
        clock.advance(10 * MINUTE)
        assert await ops.next_attempt() == "pending"
        await clock.until_sleeping()
        assert clock.sleeping == 1
        relay.cancel(question.id, answerer="bob")
        with pytest.raises(UserInteractionError):
            await task
        assert await ops.next_attempt() == "settled"
        assert await pager.next_attempt() == "settled"
        assert clock.sleeping == 0
    assert ops.kinds() == ["pending", "pending", "settled"]


async def test_a_question_waiting_before_the_start_escalates_counting_from_its_ask() -> None:
    clock = ManualClock()
    slack, pager = Recorder("ops slack"), Recorder("on-call")
    routing = Routing(
        {"ops": [slack], "oncall": [pager]}, [Escalation("ops", 30 * MINUTE, "oncall")], TEAM
    )
    relay = Relay(team=TEAM)
    with provide(relay):
        task, _ = await asked(relay, clock, "ops")
        clock.advance(20 * MINUTE)  # it waited 20 minutes before notifications started
        async with Notifications(relay, [], routing=routing, clock=clock) as notifications:
            assert await slack.next_attempt() == "pending"
            await notifications.caught_up()
            await clock.until_sleeping()
            clock.advance(10 * MINUTE - 1)
            assert pager.attempts == 0
            clock.advance(1)
            assert await pager.next_attempt() == "pending"
            relay.close()
            with pytest.raises(UserInteractionError):
                await task
            await notifications.caught_up()
            assert clock.sleeping == 0


async def test_steps_still_run_for_every_question_beside_the_routes() -> None:
    clock = ManualClock()
    audit_hook, alices = Recorder("audit hook"), Recorder("alice's")
    routing = Routing({"alice": [alices]}, team=TEAM)
    async with routed(routing, clock, [Step(audit_hook)]) as (relay, notifications):
        task, question = await asked(relay, clock, "alice")
        assert await audit_hook.next_attempt() == "pending"
        assert await alices.next_attempt() == "pending"
        relay.answer(question.id, ANSWER, answerer="alice")
        await task
        await notifications.caught_up()
    assert (audit_hook.told[0][1].step, audit_hook.told[0][1].to) == (0, None)
    assert (alices.told[0][1].step, alices.told[0][1].to) == (1, "alice")


async def test_a_failing_channel_never_affects_the_ask_nor_the_other_channels() -> None:
    clock = ManualClock()
    down = Recorder("alice's", failures=99)
    refused = Recorder("bob's", failures=99, error=DeliveryError("404", permanent=True))
    pager = Recorder("on-call")
    routing = Routing(
        {"alice": [down], "bob": [refused], "oncall": [pager]},
        [Escalation("ops", 5 * MINUTE, "oncall")],
        TEAM,
    )
    async with routed(routing, clock, retry=Retry(attempts=3, first=MINUTE)) as (
        relay,
        notifications,
    ):
        task, question = await asked(relay, clock, "ops")
        assert await down.next_attempt() == "pending"
        assert await refused.next_attempt() == "pending"
        await clock.until_sleeping(2)  # alice's retry and the escalation
        clock.advance(5 * MINUTE)  # the retries come and go; the escalation comes on time
        assert await pager.next_attempt() == "pending"
        relay.answer(question.id, ANSWER, answerer="alice")
        assert await task == ANSWER
        assert await pager.next_attempt() == "settled"
        await notifications.caught_up()
    assert (refused.attempts, down.told, refused.told) == (1, [], [])


# ---------------------------------------------------------------------------- quorum

APPROVE = AskUserQuestionAnswer([AskUserQuestionAnswerItem("permission", ["Allow"])])


def deploy(clock: ManualClock, *to: str, quorum: int) -> AskUserQuestionRequest:
    """A production deploy that ``quorum`` of ``to`` must approve."""
    return AskUserQuestionRequest(
        [permission_question("Bash", "./deploy production", allow_always=None)],
        provenance=Provenance(source="deploy-bot", asked_at=clock.now()),
        assignment=Assignment(to, quorum),
    )


async def asking(
    relay: RelayBackend, request: AskUserQuestionRequest
) -> tuple[asyncio.Task[AskUserQuestionAnswer], PendingQuestion]:
    """Ask ``request`` through ``relay`` itself, once it is pending there."""
    events = relay.events((await relay.snapshot()).position)
    task = asyncio.create_task(relay.ask(request))
    async with asyncio.timeout(WAIT):
        async for event in events:
            if event.kind == "requested" and event.question is not None:
                await events.aclose()
                return task, event.question
    raise AssertionError("the relay closed")


async def test_a_quorum_question_reminds_only_who_has_not_approved_yet() -> None:
    clock = ManualClock()
    alices, bobs, carols = Recorder("alice's"), Recorder("bob's"), Recorder("carol's")
    routing = Routing(
        {"alice": [alices], "bob": [bobs], "carol": [carols]},
        [Escalation("ops", 60 * MINUTE, "ops"), Escalation("carol", 60 * MINUTE, "carol")],
        TEAM,
    )
    async with routed(routing, clock) as (relay, notifications):
        task, question = await asking(relay, deploy(clock, "ops", "carol", quorum=3))
        assert [await r.next_attempt() for r in (alices, bobs, carols)] == ["pending"] * 3
        relay.answer(question.id, APPROVE, answerer="alice")
        relay.answer(question.id, APPROVE, answerer="carol")
        await clock.until_sleeping(2)
        clock.advance(60 * MINUTE)  # the hour's reminders: bob alone still has to approve
        assert await bobs.next_attempt() == "pending"
        await clock.until_sleeping(2)  # the next hour's, set going before bob's was sent
        clock.advance(60 * MINUTE)
        assert await bobs.next_attempt() == "pending"
        await clock.until_sleeping(2)
        relay.answer(question.id, APPROVE, answerer="bob")  # the third: approved
        assert await task == APPROVE
        assert [await r.next_attempt() for r in (alices, bobs, carols)] == ["settled"] * 3
        await notifications.caught_up()
        assert clock.sleeping == 0
    assert recipients(alices) == [
        ("pending", "alice", ("alice",)),
        ("settled", "alice", ("alice",)),
    ]
    assert recipients(bobs) == [
        ("pending", "bob", ("bob",)),
        ("pending", "bob", ("bob",)),
        ("pending", "bob", ("bob",)),
        ("settled", "bob", ("bob",)),
    ]
    assert [notice.step for _, notice, _ in bobs.told] == [0, 1, 2, 2]  # none for carol
    assert carols.kinds() == ["pending", "settled"]


async def test_a_group_channel_says_whom_it_awaits_and_a_decline_stops_it_all() -> None:
    clock = ManualClock()
    slack = Recorder("ops slack")
    routing = Routing({"ops": [slack]}, [Escalation("ops", 30 * MINUTE, "ops")], TEAM)
    async with routed(routing, clock) as (relay, notifications):
        task, question = await asking(relay, deploy(clock, "ops", quorum=2))
        assert await slack.next_attempt() == "pending"
        relay.answer(question.id, APPROVE, answerer="bob")
        await clock.until_sleeping()
        clock.advance(30 * MINUTE)
        assert await slack.next_attempt() == "pending"
        await clock.until_sleeping()
        declined = AskUserQuestionAnswer([AskUserQuestionAnswerItem("permission", ["Deny"])])
        relay.answer(question.id, declined, answerer="alice")  # one decline settles it
        assert await task == declined
        assert await slack.next_attempt() == "settled"
        await notifications.caught_up()
        assert clock.sleeping == 0
    assert recipients(slack) == [
        ("pending", "ops", ("alice", "bob")),
        ("pending", "ops", ("alice",)),
        ("settled", "ops", ("alice",)),
    ]


async def test_approvals_given_on_another_host_are_read_when_each_notice_is_due(
    redis_server: RedisServer,
) -> None:
    clock = ManualClock()
    prefix = "routing-" + os.urandom(4).hex()
    notifying = RedisRelay(redis_server.url, prefix=prefix, team=TEAM)  # host A
    answering = RedisRelay(redis_server.url, prefix=prefix, team=TEAM)  # host B
    alices, bobs = Recorder("alice's"), Recorder("bob's")
    routing = Routing(
        {"alice": [alices], "bob": [bobs]}, [Escalation("ops", 60 * MINUTE, "ops")], TEAM
    )
    try:
        async with Notifications(notifying, [], routing=routing, clock=clock) as notifications:
            task, question = await asking(answering, deploy(clock, "ops", quorum=2))
            assert await alices.next_attempt() == "pending"
            assert await bobs.next_attempt() == "pending"
            await answering.submit(question.id, APPROVE, answerer="alice")  # on host B
            await notifications.caught_up()
            await clock.until_sleeping()
            clock.advance(60 * MINUTE)
            assert await bobs.next_attempt() == "pending"
            await answering.submit(question.id, APPROVE, answerer="bob")
            assert await task == APPROVE
            assert await alices.next_attempt() == "settled"
            assert await bobs.next_attempt() == "settled"
            await notifications.caught_up()
            assert clock.sleeping == 0
        assert alices.kinds() == ["pending", "settled"]
        assert recipients(bobs)[1] == ("pending", "bob", ("bob",))
    finally:
        await notifying.aclose()
        await answering.aclose()


# ---------------------------------------------------------------------------- real receivers


async def test_alice_by_mail_ops_on_slack_and_on_call_by_webhook_for_real() -> None:
    clock = ManualClock()
    with smtp_server() as (mailbox, port):
        async with (
            receiving(path="/services/T0/B0/secret") as slack_stand_in,
            receiving() as hook,
        ):
            mail = EmailNotifier(
                host="127.0.0.1", port=port, sender="bot@example.com", to=["alice@example.com"]
            )
            channels: dict[str, list[Notifier]] = {
                "alice": [mail],
                "ops": [SlackNotifier(slack_stand_in.url)],
                "oncall": [WebhookNotifier(hook.url, SECRET)],
            }
            routing = Routing(channels, [Escalation("ops", 30 * MINUTE, "oncall")], TEAM)
            async with routed(routing, clock) as (relay, notifications):
                to_alice, _ = await asked(relay, clock, "alice")
                message: email.message.EmailMessage = await mailbox.next()
                assert mailbox.envelopes == [("bot@example.com", ["alice@example.com"])]
                body = message.get_body(("plain",))
                assert body is not None
                lines = body.get_content().splitlines()
                assert lines[:2] == ["For alice", ""]
                assert lines[2].startswith("(deploy-bot")
                to_ops, ops_question = await asked(relay, clock, "ops")
                posted = (await slack_stand_in.next_call()).json()
                assert posted["blocks"][1]["elements"][0]["text"] == "For ops"
                await notifications.caught_up()
                await clock.until_sleeping()
                clock.advance(30 * MINUTE)
                sent = (await hook.next_call()).json()
                assert (sent["event"], sent["to"], sent["awaiting"]) == ("pending", "oncall", [])
                for question in relay.pending():
                    relay.answer(question.id, ANSWER, answerer="alice")
                await asyncio.gather(to_alice, to_ops)
                settled = (await hook.next_call()).json()
                assert (settled["event"], settled["id"]) == ("settled", ops_question.id)
                await notifications.caught_up()
                assert clock.sleeping == 0
            assert len(slack_stand_in.calls) == 1
            assert mailbox.messages.empty()


async def test_a_quorum_over_slack_and_a_webhook_names_who_is_still_awaited() -> None:
    clock = ManualClock()
    async with (
        receiving(path="/services/T0/B0/secret") as slack_stand_in,
        receiving() as hook,
    ):
        channels: dict[str, list[Notifier]] = {
            "ops": [SlackNotifier(slack_stand_in.url)],
            "oncall": [WebhookNotifier(hook.url, SECRET)],
        }
        escalations = [
            Escalation("ops", 30 * MINUTE, "ops"),
            Escalation("ops", 30 * MINUTE, "oncall"),
        ]
        routing = Routing(channels, escalations, TEAM)
        async with routed(routing, clock) as (relay, notifications):
            task, question = await asking(relay, deploy(clock, "ops", "oncall", quorum=2))
            first = (await slack_stand_in.next_call()).json()
            assert first["blocks"][1]["elements"][0]["text"] == (
                "For ops: awaiting approval from alice, bob"
            )
            relay.answer(question.id, APPROVE, answerer="alice")
            await clock.until_sleeping(2)
            clock.advance(30 * MINUTE)
            again = (await slack_stand_in.next_call()).json()
            assert again["blocks"][1]["elements"][0]["text"] == (
                "For ops: awaiting approval from bob"
            )
            paged = (await hook.next_call()).json()
            assert (paged["event"], paged["to"], paged["awaiting"]) == (
                "pending",
                "oncall",
                ["oncall"],
            )
            relay.answer(question.id, APPROVE, answerer="oncall")  # the second: approved
            assert await task == APPROVE
            settled = (await hook.next_call()).json()
            assert (settled["event"], settled["outcome"]) == ("settled", "answered")
            await notifications.caught_up()
            assert clock.sleeping == 0
        assert len(slack_stand_in.calls) == 2


async def test_a_link_sent_to_alice_answers_as_alice_and_one_to_a_group_as_nobody() -> None:
    clock = ManualClock()
    links = AnswerLinks(secret=b"s" * 32)
    alices, slack = Recorder("alice's"), Recorder("ops slack")
    routing = Routing({"alice": [alices], "ops": [slack]}, team=TEAM)
    users = {name: name[0] * 32 for name in TEAM.users}
    relay = Relay(team=TEAM)
    with provide(relay):
        async with WebServer(relay, links=links, users=users, team=TEAM) as server:
            notifications = Notifications(
                relay, [], routing=routing, links=links, public_url=server.base, clock=clock
            )
            async with notifications, httpx.AsyncClient(base_url=server.base) as http:
                to_alice, for_alice = await asked(relay, clock, "alice")
                to_ops, for_ops = await asked(relay, clock, "ops")
                assert await alices.next_attempt() == "pending"
                assert await slack.next_attempt() == "pending"
                sessions = []
                for recorder in (alices, slack):
                    link = recorder.told[0][1].link
                    assert link is not None
                    token = unquote(link.partition("?t=")[2])
                    origin = {"Origin": server.base, "Sec-Fetch-Site": "same-origin"}
                    opened = await http.post("/link", data={"t": token}, headers=origin)
                    assert opened.status_code == 303
                    session = opened.headers["location"].removeprefix("/#token=")
                    sessions.append({"Authorization": f"Bearer {session}"})
                me = await http.get("/api/me", headers=sessions[0])
                assert me.json() == {"user": "alice", "question": for_alice.id}
                body = {"answers": [{"id": "pkg", "selected": ["npm"]}]}
                answered = await http.post(
                    f"/api/questions/{for_alice.id}/answer", json=body, headers=sessions[0]
                )
                assert answered.status_code == 200
                assert await to_alice == ANSWER
                # The ops channel reaches no one person: its link names nobody, and a
                # question assigned to ops is answered by someone signed in as one of them.
                refused = await http.post(
                    f"/api/questions/{for_ops.id}/answer", json=body, headers=sessions[1]
                )
                assert refused.status_code == 403
                assert refused.json()["error"]["code"] == "NOT_ASSIGNED"
                relay.cancel(for_ops.id, answerer="bob")
                with pytest.raises(UserInteractionError):
                    await to_ops
        relay.close()


def test_a_link_names_its_user_under_the_signature() -> None:
    links = AnswerLinks(secret=b"s" * 32)
    token = links.token("q1", user="alice@example.com")
    assert links.verify(token) == "q1"
    body, _, mac = token.rpartition(".")
    forged = body.rpartition(".")[0] + ".Ym9i." + mac  # "bob" in place of alice
    with pytest.raises(UserInteractionError, match="is not valid"):
        links.redeem_as(forged)
    assert links.redeem_as(token) == ("q1", "alice@example.com")
    with pytest.raises(UserInteractionError, match="already used"):
        links.redeem_as(token)
    assert links.redeem_as(links.token("q2")) == ("q2", None)


# ---------------------------------------------------------------------------- configuration

ENV = {"INTERACTION_SMTP_URL": "smtp://127.0.0.1:2525", "OPS_SLACK": "https://hooks.example/x"}


def test_specs_become_a_routing() -> None:
    routing = routing_from_specs(
        users=["alice:email=alice@example.com", "alice:webhook=https://hooks.example/a"],
        groups=["ops:slack=OPS_SLACK"],
        escalations=["ops@30m=oncall", "oncall@1h=oncall"],
        environ={**ENV, "INTERACTION_WEBHOOK_SECRET": SECRET},
        team=TEAM,
    )
    assert routing is not None
    assert {name: [n.name for n in notifiers] for name, notifiers in routing.channels.items()} == {
        "alice": ["email via 127.0.0.1", "webhook https://hooks.example"],
        "ops": ["slack"],
    }
    assert routing.escalations == (
        Escalation("ops", 1800.0, "oncall"),
        Escalation("oncall", 3600.0, "oncall"),
    )
    assert routing.team is TEAM
    assert routing_from_specs(environ={}) is None
    (step,) = steps_from_specs(["slack=OPS_SLACK"], ENV)  # --notify reads a variable too
    assert step.notifier._url == ENV["OPS_SLACK"]  # type: ignore[attr-defined]
    named = routing_from_specs(escalations=["a@b.org@5m=ops"], environ={})  # a name with @
    assert named is not None
    assert named.escalations == (Escalation("a@b.org", 300.0, "ops"),)


@pytest.mark.parametrize(
    ("users", "groups", "escalations", "line"),
    [
        (
            ["alice"],
            [],
            [],
            "--notify-user 'alice': write NAME:KIND=TARGET (as in alice:email=a@x.org)",
        ),
        (["mallory:email=m@x.org"], [], [], "--notify-user mallory: mallory is not a --user"),
        (["ops:email=m@x.org"], [], [], "--notify-user ops: ops is not a --user"),
        ([], ["alice:slack=OPS_SLACK"], [], "--notify-group alice: alice is not a --group"),
        (
            ["alice:pager=x"],
            [],
            [],
            "--notify-user alice:pager: the kinds are webhook, email, slack, telegram",
        ),
        (
            ["alice:email"],
            [],
            [],
            "--notify-user alice:email=ADDRESS[,ADDRESS...] needs an address",
        ),
        (
            [],
            ["ops:slack=NO_SUCH_VARIABLE"],
            [],
            "--notify-group ops:slack=NO_SUCH_VARIABLE needs NO_SUCH_VARIABLE in the environment",
        ),
        (
            ["alice:webhook=https://hooks.example/a"],
            [],
            [],
            "--notify-user alice:webhook needs INTERACTION_WEBHOOK_SECRET in the environment",
        ),
        (
            [],
            [],
            ["ops=oncall"],
            "--escalate 'ops=oncall': write FROM@DELAY=TO (as in ops@30m=oncall)",
        ),
        (
            [],
            [],
            ["ops@soon=oncall"],
            "--escalate ops@soon=oncall: 'soon' is not a delay (write 90s, 5m, 2h or 1d)",
        ),
        (
            [],
            [],
            ["ops@0s=oncall"],
            "--escalate ops@0s=oncall: an escalation waits more than 0 seconds, got 0.0",
        ),
        (
            [],
            [],
            ["ops@5m=mallory"],
            "--escalate ops@5m=mallory: mallory is not a --user or --group",
        ),
    ],
)
def test_a_bad_route_is_one_line_naming_it(
    users: list[str], groups: list[str], escalations: list[str], line: str
) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(line)}$"):
        routing_from_specs(
            users=users, groups=groups, escalations=escalations, environ=ENV, team=TEAM
        )
    assert ENV["OPS_SLACK"] not in line


def serve(*args: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("INTERACTION_")}
    return subprocess.run(
        [sys.executable, "-m", "interaction", "serve", "--port", "0", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**clean, "OPS_SLACK": "https://hooks.slack.com/services/T0/B0/secret"},
    )


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["--user", "alice", "--notify-user", "bob:email=bob@example.com"],
            "--notify-user bob: bob is not a --user",
        ),
        (
            ["--user", "alice", "--escalate", "alice@30m=oncall"],
            "--escalate alice@30m=oncall: oncall is not a --user or --group",
        ),
        (
            ["--notify-user", "alice:email=alice@example.com"],
            "--notify-user alice:email needs INTERACTION_SMTP_URL in the environment",
        ),
    ],
)
def test_serve_refuses_a_bad_route_at_start_with_one_line(args: list[str], line: str) -> None:
    result = serve(*args)
    assert (result.returncode, result.stderr) == (2, f"interaction: {line}\n")


async def test_serve_routes_a_question_assigned_to_a_group_to_its_webhook(
    redis_server: RedisServer,
) -> None:
    prefix = "serve-routing-" + os.urandom(4).hex()
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERACTION_")}
    env |= {"INTERACTION_WEBHOOK_SECRET": SECRET, "ALICE_T": "a" * 32, "BOB_T": "b" * 32}
    team = Team(users=["alice", "bob"], groups={"ops": ["alice", "bob"]})
    asker = RedisRelay(redis_server.url, prefix=prefix, team=team)
    async with receiving() as hook:
        group = ["--group", "ops=alice,bob", "--notify-group", f"ops:webhook={hook.url}"]
        async with loopback.serve(
            *("--redis", redis_server.url, "--prefix", prefix),
            *("--user", "alice=ALICE_T", "--user", "bob=BOB_T", *group),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        ) as child:
            try:
                request = AskUserQuestionRequest([PKG], assignment=Assignment(["ops"]))
                task = asyncio.create_task(asker.ask(request))
                sent = (await hook.next_call()).json()
                assert (sent["event"], sent["to"], sent["awaiting"]) == ("pending", "ops", [])
                await asker.dismiss(sent["id"], answerer="bob")
                with pytest.raises(UserInteractionError):
                    await task
                settled = (await hook.next_call()).json()
                assert (settled["event"], settled["outcome"]) == ("settled", "cancelled")
            finally:
                child.send_signal(signal.SIGINT)
                async with asyncio.timeout(WAIT):
                    said = (await child.stderr.read()).decode() if child.stderr else ""
                    await child.wait()
                await asker.aclose()
    assert "Traceback" not in said
    assert SECRET not in said
