"""Notifications: the dispatcher's steps, retries and escalation on a clock the test moves,
and the webhook channel against a real local HTTP receiver."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    Provenance,
    UserInteractionError,
    ask,
    provide,
    wire,
)
from interaction.notify import (
    IDEMPOTENCY_HEADER,
    DeliveryError,
    ManualClock,
    Notifications,
    Retry,
    Step,
    WebhookNotifier,
)
from interaction.redis import RedisRelay
from interaction.relay import PendingQuestion, Relay
from interaction.signing import SIGNATURE_HEADER, AnswerLinks, sign_webhook, verify_webhook

from .helpers import import_error_without
from .notify_helpers import Recorder, receiving
from .redis_server import RedisServer, redis_server

__all__ = ["redis_server"]  # a fixture

PKG = AskUserQuestionItem(
    "pkg",
    "Which package manager?",
    options=[AskUserQuestionOption("pnpm"), AskUserQuestionOption("npm")],
)
Answer = AskUserQuestionAnswer
SECRET = "a-webhook-secret-of-some-length"
PUBLIC = "https://answers.example.com"


@asynccontextmanager
async def notifying(
    steps: list[Step], clock: ManualClock, **options: object
) -> AsyncIterator[tuple[Relay, Notifications]]:
    relay = Relay()
    with provide(relay):
        async with Notifications(relay, steps, clock=clock, **options) as notifications:  # type: ignore[arg-type]
            try:
                yield relay, notifications
            finally:
                relay.close()


def asked(
    relay: Relay, provenance: Provenance | None = None
) -> asyncio.Task[AskUserQuestionAnswer]:
    return asyncio.create_task(ask(AskUserQuestionRequest([PKG], provenance=provenance)))


async def the_question(relay: Relay, notifications: Notifications) -> PendingQuestion:
    await notifications.caught_up()
    (question,) = relay.pending()
    return question


ANSWER = AskUserQuestionAnswer([AskUserQuestionAnswerItem("pkg", ["npm"])])


# ---------------------------------------------------------------------------- steps


@pytest.mark.parametrize("missing", ["aiohttp", "aiosmtplib", "slack_sdk"])
def test_without_the_extra_the_import_names_it(missing: str) -> None:
    assert import_error_without(missing, "interaction.notify") == (
        'interaction.notify needs the [notify] extra: pip install "interaction-seam[notify]"'
    )


async def test_steps_run_at_their_time_and_stop_the_moment_it_settles() -> None:
    clock = ManualClock()
    page, slack, mail = Recorder("page"), Recorder("slack"), Recorder("email")
    steps = [Step(page), Step(slack, after=300), Step(mail, after=1800)]
    async with notifying(steps, clock) as (relay, notifications):
        # The relay stamps asked_at from the wall clock; the steps count from the asker's.
        task = asked(relay, Provenance(source="bot", asked_at=clock.now()))
        question = await the_question(relay, notifications)
        assert await page.next_attempt() == "pending"
        await clock.until_sleeping(2)
        clock.advance(299)
        assert slack.told == []
        clock.advance(1)
        assert await slack.next_attempt() == "pending"
        relay.answer(question.id, ANSWER)
        await task
        assert await page.next_attempt() == "settled"
        assert await slack.next_attempt() == "settled"
        clock.advance(3600)  # the email step was cancelled: nothing more to wake
        await notifications.caught_up()
        assert clock.sleeping == 0
    assert mail.attempts == 0
    assert page.kinds() == ["pending", "settled"]
    assert [outcome for _, _, outcome in page.told] == [None, "answered"]
    assert slack.told[0][1].step == 1
    assert slack.told[0][1].idempotency_key == f"{question.id}.1"


async def test_a_question_already_waiting_is_notified_counting_from_when_it_was_asked() -> None:
    clock = ManualClock()
    relay = Relay()
    slack = Recorder("slack")
    with provide(relay):
        task = asked(relay, Provenance(asked_at=clock.now()))
        await asyncio.sleep(0)  # let the ask reach the relay
        assert relay.pending()
        clock.advance(200)  # it waited 200 s before notifications started
        async with Notifications(relay, [Step(slack, after=300)], clock=clock) as notifications:
            await notifications.caught_up()
            await clock.until_sleeping()
            clock.advance(99)
            assert slack.attempts == 0
            clock.advance(1)
            assert await slack.next_attempt() == "pending"
        relay.close()
        with pytest.raises(UserInteractionError):
            await task


async def test_a_plan_chooses_the_steps_per_request() -> None:
    clock = ManualClock()
    usual, urgent = Recorder("usual"), Recorder("urgent")

    def plan(question: PendingQuestion) -> list[Step]:
        provenance = question.request.provenance
        return [Step(urgent)] if provenance and provenance.tool == "deploy" else [Step(usual)]

    async with notifying([Step(usual)], clock, plan=plan) as (relay, notifications):
        first = asked(relay, Provenance(tool="deploy"))
        assert await urgent.next_attempt() == "pending"
        second = asked(relay, Provenance(tool="lint"))
        assert await usual.next_attempt() == "pending"
        await notifications.caught_up()
        for question in relay.pending():
            relay.cancel(question.id)
        for task in (first, second):
            with pytest.raises(UserInteractionError):
                await task
        assert await urgent.next_attempt() == "settled"
        assert await usual.next_attempt() == "settled"
    assert [what for what, _, _ in urgent.told] == ["pending", "settled"]
    assert urgent.told[1][2] == "cancelled"


# ---------------------------------------------------------------------------- retries


async def test_a_failing_channel_is_retried_with_backoff_and_never_fails_the_ask(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = ManualClock()
    flaky = Recorder("flaky", failures=2)
    retry = Retry(attempts=4, first=5, factor=3)
    async with notifying([Step(flaky)], clock, retry=retry) as (relay, notifications):
        task = asked(relay)
        question = await the_question(relay, notifications)
        assert await flaky.next_attempt() == "pending"
        await clock.until_sleeping()
        clock.advance(4.9)
        assert flaky.attempts == 1
        clock.advance(0.1)  # 5 s after the first failure
        assert await flaky.next_attempt() == "pending"
        await clock.until_sleeping()
        clock.advance(15)  # then 15 s
        assert await flaky.next_attempt() == "pending"
        relay.answer(question.id, ANSWER)
        assert await task == ANSWER
        assert await flaky.next_attempt() == "settled"
    assert flaky.kinds() == ["pending", "settled"]
    warnings = [r.getMessage() for r in caplog.records if r.name == "interaction.notify"]
    assert warnings == [
        "notify: flaky: pending notice failed (attempt 1/4): RuntimeError; again in 5s",
        "notify: flaky: pending notice failed (attempt 2/4): RuntimeError; again in 15s",
    ]


async def test_a_channel_that_never_answers_or_always_fails_is_given_up_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = ManualClock()
    down = Recorder("down", failures=99)
    refused = Recorder(
        "refused", failures=99, error=DeliveryError("it answered 404", permanent=True)
    )
    retry = Retry(attempts=2, first=1)
    async with notifying([Step(down), Step(refused)], clock, retry=retry) as (relay, notifications):
        caplog.set_level(logging.WARNING, "interaction.notify")
        task = asked(relay)
        question = await the_question(relay, notifications)
        assert await down.next_attempt() == "pending"
        assert await refused.next_attempt() == "pending"
        await clock.until_sleeping()
        clock.advance(1)
        assert await down.next_attempt() == "pending"
        relay.answer(question.id, ANSWER)  # the ask is answered whatever the channels did
        await task
        await notifications.caught_up()
    assert (down.attempts, refused.attempts) == (2, 1)  # nothing told: no settled notice
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert messages == [
        "notify: refused: pending notice refused: it answered 404",
        "notify: down: gave up on a pending notice after 2 attempts: RuntimeError",
    ]


async def test_a_channel_that_hangs_does_not_hold_the_ask() -> None:
    clock = ManualClock()
    never = asyncio.Event()

    class Hanging:
        name = "hanging"

        async def pending(self, notice: object) -> None:
            await never.wait()

        async def settled(self, notice: object, outcome: object) -> None:
            await never.wait()

    async with notifying([Step(Hanging())], clock) as (relay, notifications):
        task = asked(relay)
        question = await the_question(relay, notifications)
        relay.answer(question.id, ANSWER)
        assert (await task).answers[0].selected == ("npm",)


# ---------------------------------------------------------------------------- the webhook


def test_a_webhook_signature_verifies_and_refuses_what_was_changed() -> None:
    body = b'{"event":"pending"}'
    header = sign_webhook(SECRET, body, timestamp=1_700_000_000)
    assert header.startswith("t=1700000000,v1=")
    assert verify_webhook(SECRET, body, header, now=1_700_000_100)
    assert not verify_webhook(SECRET, body + b" ", header, now=1_700_000_100)
    assert not verify_webhook("another-secret-of-length", body, header, now=1_700_000_100)
    assert not verify_webhook(SECRET, body, header, now=1_700_000_301)  # replayed late
    assert not verify_webhook(SECRET, body, header.replace("t=17", "t=18"), now=1_800_000_000)
    assert not verify_webhook(SECRET, body, "garbage", now=1_700_000_000)
    with pytest.raises(ValueError, match="at least 16 bytes"):
        sign_webhook("short", body)


async def test_the_webhook_is_signed_retried_after_500s_and_not_sent_again_after_success(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = ManualClock()
    links = AnswerLinks(secret=b"k" * 32)
    async with receiving([500, 503]) as receiver:
        hook = WebhookNotifier(receiver.url, SECRET)
        retry = Retry(attempts=5, first=2)
        steps = [Step(hook)]
        async with notifying(steps, clock, retry=retry, links=links, public_url=PUBLIC) as (
            relay,
            notifications,
        ):
            provenance = Provenance(source="deploy-bot", host="build-7")
            task = asked(relay, provenance)
            question = await the_question(relay, notifications)
            first = await receiver.next_call()
            await clock.until_sleeping()
            clock.advance(2)
            second = await receiver.next_call()
            await clock.until_sleeping()
            clock.advance(4)
            third = await receiver.next_call()
            clock.advance(3600)  # nothing is retried after the 200
            await notifications.caught_up()
            assert receiver.idle()
            assert [c.status for c in receiver.calls] == [500, 503, 200]
            for call in (first, second, third):
                assert verify_webhook(SECRET, call.body, call.headers[SIGNATURE_HEADER])
                assert call.headers[IDEMPOTENCY_HEADER] == f"{question.id}.0"
                assert call.headers["Interaction-Event"] == "pending"
            sent = third.json()
            stored = relay.get(question.id)
            assert stored is not None
            assert sent == {
                "event": "pending",
                "id": question.id,
                "step": 0,
                "request": wire.encode_request(stored.request),
                "link": sent["link"],
            }
            assert sent["request"]["provenance"]["source"] == "deploy-bot"
            assert sent["link"].startswith(f"{PUBLIC}/link?t=v1.{question.id}.")
            relay.answer(question.id, ANSWER)
            await task
            settled = await receiver.next_call()
            assert settled.json()["event"] == "settled"
            assert settled.json()["outcome"] == "answered"
            assert settled.headers[IDEMPOTENCY_HEADER] == f"{question.id}.0.settled"
    text = caplog.text
    assert receiver.url not in text  # only the scheme, host and port are ever logged
    host = receiver.url.removesuffix("/hook")  # http://127.0.0.1:<port>
    assert f"webhook {host}: pending notice failed (attempt 1/5): it answered 500" in text


async def test_a_webhook_4xx_is_not_retried_and_an_unreachable_one_is(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = ManualClock()
    async with receiving([404]) as receiver:
        hook = WebhookNotifier(receiver.url, SECRET)
        async with notifying([Step(hook)], clock, retry=Retry(attempts=3)) as (relay, _):
            task = asked(relay)
            assert (await receiver.next_call()).status == 404
            clock.advance(3600)
            relay.close()
            with pytest.raises(UserInteractionError) as caught:
                await task
            assert caught.value.code == ErrorCode.ASK_ABORTED
        assert len(receiver.calls) == 1
    assert "pending notice refused: it answered 404" in caplog.text
    url = receiver.url  # the receiver has stopped: nobody listens there now
    async with notifying([Step(WebhookNotifier(url, SECRET))], clock, retry=Retry(attempts=2)) as (
        relay,
        _,
    ):
        task = asked(relay)
        await clock.until_sleeping()
        clock.advance(1)
        relay.close()
        with pytest.raises(UserInteractionError):
            await task
    assert "could not reach it (ClientConnectorError)" in caplog.text


def test_a_webhook_is_configured_or_refused_at_start() -> None:
    with pytest.raises(ValueError, match="http:// or https://"):
        WebhookNotifier("ftp://example.com", SECRET)
    with pytest.raises(ValueError, match="at least 16 bytes"):
        WebhookNotifier("https://example.com/hook", "short")
    assert WebhookNotifier("https://hooks.example.com/s3cr3t", SECRET).name == (
        "webhook https://hooks.example.com"
    )


async def test_notifications_follow_a_shared_relay(redis_server: RedisServer) -> None:
    prefix = "notify-" + os.urandom(4).hex()
    asker = RedisRelay(redis_server.url, prefix=prefix)
    page = RedisRelay(redis_server.url, prefix=prefix)
    chat = Recorder("chat")
    try:
        await page.connect()
        async with Notifications(page, [Step(chat)]) as notifications:
            with provide(asker):
                task = asyncio.create_task(ask(AskUserQuestionRequest([PKG])))
                assert await chat.next_attempt() == "pending"
                (_, notice, _) = chat.told[0]
                assert notice.request.provenance is not None
                assert notice.request.provenance.host is not None  # stamped by the asker
                await page.dismiss(notice.question_id)
                with pytest.raises(UserInteractionError):
                    await task
                assert await chat.next_attempt() == "settled"
                await notifications.caught_up()
        assert [(what, outcome) for what, _, outcome in chat.told] == [
            ("pending", None),
            ("settled", "cancelled"),
        ]
    finally:
        await asker.aclose()
        await page.aclose()
