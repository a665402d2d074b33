"""The Web Push channel end to end, against a stand-in push service on loopback: what
each device receives (the VAPID token checked with the deployment's public key, the
payload decrypted with the device's own keys), private mode, gone devices removed,
failures retried for the devices still owed, and the ask never held up by any of it."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    Assignment,
    Provenance,
    Team,
    UserInteractionError,
    ask,
    provide,
)
from interaction.notify import (
    ManualClock,
    Notice,
    Notifications,
    PushNotifier,
    Retry,
    Step,
    VapidKeys,
    push_payload,
)
from interaction.notify._push import MAX_PAYLOAD
from interaction.push import (
    BAD_SUBSCRIPTION,
    MemoryPushSubscriptionStore,
    PushSubscription,
    parse_subscription,
)
from interaction.relay import Relay
from interaction.signing import AnswerLinks

from .loopback import free_port
from .notify_helpers import WAIT
from .push_helpers import Device, fresh, push_service, vapid_claims

DEPLOY = AskUserQuestionItem("deploy", "Deploy build 7 to production?", header="Deploy")
OTHER = AskUserQuestionItem("notes", "Anything else?")
FROM_BOT = Provenance(source="deploy-bot", host="build-7")
SUBJECT = "mailto:ops@example.org"
KEYS = VapidKeys.generate()


def asked(item: AskUserQuestionItem = DEPLOY) -> AskUserQuestionRequest:
    return AskUserQuestionRequest([item], provenance=FROM_BOT)


async def answer_all(relay: Relay, *tasks: asyncio.Task[AskUserQuestionAnswer]) -> None:
    for question in relay.pending():
        item = question.request.questions[0]
        relay.answer(
            question.id, AskUserQuestionAnswer([AskUserQuestionAnswerItem(item.id, custom="ok")])
        )
    for task in tasks:
        assert (await task).answers[0].custom == "ok"


class WatchedStore(MemoryPushSubscriptionStore):
    """The in-memory store, telling a test each endpoint it was asked to remove."""

    def __init__(self) -> None:
        super().__init__()
        self.removed: asyncio.Queue[str] = asyncio.Queue()

    async def remove(self, endpoint: str) -> bool:
        found = await super().remove(endpoint)
        self.removed.put_nowait(endpoint)
        return found

    async def next_removed(self) -> str:
        async with asyncio.timeout(WAIT):
            return await self.removed.get()


async def store_of(*devices: Device) -> WatchedStore:
    store = WatchedStore()
    for device in devices:
        await store.add(device.subscription())
    return store


async def test_a_device_receives_who_asks_and_what_signed_and_encrypted_to_it() -> None:
    async with push_service() as service:
        phone = service.device("phone")
        channel = PushNotifier(await store_of(phone), KEYS, subject=SUBJECT)
        relay = Relay()
        links = AnswerLinks()
        with provide(relay):
            async with Notifications(
                relay, [Step(channel)], links=links, public_url="https://q.example.org"
            ):
                task = asyncio.create_task(ask(asked()))
                delivery = await service.next_delivery()
                (question,) = relay.pending()
                assert delivery.device == "phone"
                assert delivery.headers["TTL"] == "3600"
                assert delivery.headers["Urgency"] == "high"
                claims = vapid_claims(delivery.headers["Authorization"], KEYS.public)
                fresh(claims, service.base, SUBJECT)
                payload = phone.decrypt(delivery)
                url = payload.pop("url")
                assert payload == {
                    "id": question.id,
                    "source": "deploy-bot",
                    "title": "Question from deploy-bot",
                    "body": "Deploy: Deploy build 7 to production?",
                    "count": 1,
                }
                assert url.startswith("https://q.example.org/link?t=")  # opens that question
                assert links.verify(url.partition("?t=")[2]) == question.id
                await answer_all(relay, task)


async def test_an_assigned_question_reaches_the_devices_of_those_its_page_shows_it_to() -> None:
    team = Team(["alice", "dave", "erin"], {"ops": ["alice"]}, see_all=["erin"])
    async with push_service() as service:
        phones = [service.device(name) for name in ("alice", "dave", "erin")]
        store = WatchedStore()
        for phone in phones:
            await store.add(phone.subscription(phone.name))
        channel = PushNotifier(store, KEYS, subject=SUBJECT, team=team)
        relay = Relay(team=team)
        with provide(relay):
            async with Notifications(relay, [Step(channel)]):
                for_ops = AskUserQuestionRequest([DEPLOY], assignment=Assignment(["ops"]))
                first = asyncio.create_task(ask(for_ops))
                told = {(await service.next_delivery()).device for _ in range(2)}
                assert told == {"alice", "erin"}  # dave's page does not show it
                second = asyncio.create_task(ask(asked(OTHER)))
                told = {(await service.next_delivery()).device for _ in range(3)}
                assert told == {"alice", "dave", "erin"}
                first.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await first
                await answer_all(relay, second)


class ToldNotifier(PushNotifier):
    """The real channel, telling a test each question whose notice it has sent to every
    device it meant to (so a test can see that no other device was told)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.told: asyncio.Queue[str] = asyncio.Queue()

    async def pending(self, notice: Notice) -> None:
        await super().pending(notice)
        self.told.put_nowait(notice.question_id)

    async def next_told(self) -> str:
        async with asyncio.timeout(WAIT):
            return await self.told.get()


async def test_a_question_naming_nobody_takes_the_default_assignment_as_the_page_does() -> None:
    # serve --assign-default ops: a question that names nobody is for ops to settle, and
    # only ops (and erin, who sees all) have it on their page; so only their devices ring.
    team = Team(["alice", "dave", "erin"], {"ops": ["alice"]}, see_all=["erin"])
    async with push_service() as service:
        phones = {name: service.device(name) for name in ("alice", "dave", "erin")}
        store = WatchedStore()
        for phone in phones.values():
            await store.add(phone.subscription(phone.name))
        channel = ToldNotifier(
            store, KEYS, subject=SUBJECT, team=team, default_assignment=Assignment(["ops"])
        )
        relay = Relay(team=team)
        with provide(relay):
            async with Notifications(relay, [Step(channel)]):
                tasks = [asyncio.create_task(ask(asked()))]
                try:
                    first = await channel.next_told()
                    tasks.append(  # its own assignment wins over the default
                        asyncio.create_task(
                            ask(AskUserQuestionRequest([OTHER], assignment=Assignment(["dave"])))
                        )
                    )
                    second = await channel.next_told()
                    told = [
                        (d.device, phones[d.device].decrypt(d)["id"]) for d in service.deliveries
                    ]
                    assert len(told) == 4
                    assert set(told) == {
                        ("alice", first),
                        ("erin", first),
                        ("dave", second),
                        ("erin", second),
                    }  # dave's page does not show the first, nor alice's the second
                finally:
                    for task in tasks:
                        task.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await task


async def test_private_mode_sends_the_source_and_a_count_and_no_question_text() -> None:
    async with push_service() as service:
        phone = service.device("phone")
        channel = PushNotifier(await store_of(phone), KEYS, subject=SUBJECT, private=True)
        relay = Relay()
        with provide(relay):
            async with Notifications(relay, [Step(channel)]):
                first = asyncio.create_task(ask(asked()))
                one = await service.next_delivery()
                second = asyncio.create_task(ask(asked(OTHER)))
                two = await service.next_delivery()
                texts = [phone.decrypt(one), phone.decrypt(two)]
                await answer_all(relay, first, second)
    assert [(t["title"], t["body"], t["count"], t["url"]) for t in texts] == [
        ("Question from deploy-bot", "1 question waits", 1, None),
        ("Question from deploy-bot", "2 questions wait", 2, None),
    ]
    for delivery in (one, two):
        plain = str(phone.decrypt(delivery))
        assert "Deploy" not in plain
        assert "Anything" not in plain


async def test_a_device_whose_push_service_says_404_or_410_is_removed_and_not_retried(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "interaction.notify")
    async with push_service() as service:
        gone, expired, kept = (
            service.device("gone", 410),
            service.device("expired", 404),
            service.device("kept"),
        )
        store = await store_of(gone, expired, kept)
        clock = ManualClock()
        relay = Relay()
        with provide(relay):
            async with Notifications(
                relay, [Step(PushNotifier(store, KEYS, subject=SUBJECT))], clock=clock
            ) as notes:
                task = asyncio.create_task(ask(asked()))
                arrived = {(await service.next_delivery()).device for _ in range(3)}
                assert arrived == {"gone", "expired", "kept"}
                removed = {await store.next_removed(), await store.next_removed()}
                assert removed == {gone.endpoint, expired.endpoint}
                await answer_all(relay, task)
                await notes.caught_up()
        assert [s.endpoint for s in await store.subscriptions()] == [kept.endpoint]
        assert clock.sleeping == 0  # nothing waits to be retried
        assert len(service.deliveries) == 3
    assert caplog.text.count("a device has gone (its push service said so); removed") == 2
    assert "failed" not in caplog.text


async def test_a_failing_push_service_is_retried_for_the_devices_still_owed_and_never_holds_the_ask(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with push_service() as service:
        busy, fine = service.device("busy", 503, 429), service.device("fine")
        clock = ManualClock()
        relay = Relay()
        channel = PushNotifier(await store_of(busy, fine), KEYS, subject=SUBJECT)
        with provide(relay):
            async with Notifications(relay, [Step(channel)], clock=clock, retry=Retry(attempts=3)):
                task = asyncio.create_task(ask(asked()))
                first = {(await service.next_delivery()).device for _ in range(2)}
                assert first == {"busy", "fine"}
                await clock.until_sleeping()
                clock.advance(1)
                again = await service.next_delivery()
                await clock.until_sleeping()
                clock.advance(2)
                last = await service.next_delivery()
                assert [again.device, again.status, last.device, last.status] == [
                    "busy",
                    429,
                    "busy",
                    201,
                ]
                assert busy.decrypt(last)["body"] == "Deploy: Deploy build 7 to production?"
                await answer_all(relay, task)
        assert [d.device for d in service.deliveries].count("fine") == 1
    assert (
        "web push: pending notice failed (attempt 1/3): 1 of 2 devices could not be reached"
        in caplog.text
    )
    assert (
        "web push: pending notice failed (attempt 2/3): 1 of 1 devices could not be reached"
        in caplog.text
    )


async def test_an_unreachable_push_service_never_fails_the_ask(
    caplog: pytest.LogCaptureFixture,
) -> None:
    nowhere = Device("nowhere", f"http://127.0.0.1:{free_port()}/push/nowhere")
    clock = ManualClock()
    relay = Relay()
    channel = PushNotifier(await store_of(nowhere), KEYS, subject=SUBJECT)
    with provide(relay):
        async with Notifications(relay, [Step(channel)], clock=clock, retry=Retry(attempts=2)):
            task = asyncio.create_task(ask(asked()))
            await clock.until_sleeping()
            await answer_all(relay, task)  # answered while the push waits to be retried
    assert (
        "web push: pending notice failed (attempt 1/2): 1 of 1 devices could not be reached"
        in caplog.text
    )
    assert "nowhere" not in caplog.text  # the endpoint (a capability URL) is never logged


async def test_a_push_store_that_fails_is_retried_and_never_fails_the_ask(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from interaction.redis import RedisPushSubscriptionStore

    store = RedisPushSubscriptionStore(f"redis://127.0.0.1:{free_port()}/0")
    clock = ManualClock()
    relay = Relay()
    with provide(relay):
        channel = PushNotifier(store, KEYS, subject=SUBJECT)
        async with Notifications(relay, [Step(channel)], clock=clock, retry=Retry(attempts=2)):
            task = asyncio.create_task(ask(asked()))
            await clock.until_sleeping()
            await answer_all(relay, task)
    await store.aclose()
    assert "web push: pending notice failed (attempt 1/2): PushStoreUnavailable" in caplog.text


def test_a_payload_fits_a_push_message_however_long_the_question() -> None:
    from interaction.display import present
    from interaction.notify import Notice

    long = AskUserQuestionItem("q", "x" * 10_000, header="H")
    request = AskUserQuestionRequest([long, OTHER], provenance=Provenance(source="s" * 200))
    notice = Notice(
        "id1", request, present(request), "https://q.example.org/link?t=" + "a" * 5000, 0, "id1.0"
    )
    payload = push_payload(notice, private=False, waiting=3)
    assert len(payload) <= MAX_PAYLOAD
    assert b'"url":null' in payload  # a link too long to fit: the page's own way instead
    assert b"(+1 more)" in payload


def test_vapid_keys_round_trip_and_a_bad_key_or_subject_is_refused_without_showing_it() -> None:
    keys = VapidKeys.generate()
    assert VapidKeys.from_private(keys.private) == keys
    assert keys.private not in repr(keys)
    with pytest.raises(ValueError, match="not 32 bytes of base64url") as caught:
        VapidKeys.from_private("not-a-key!")
    assert "not-a-key" not in str(caught.value)
    with pytest.raises(ValueError, match="mailto: or https:"):
        PushNotifier(MemoryPushSubscriptionStore(), keys, subject="ops@example.org")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=80),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
ENDPOINTS = st.sampled_from(
    ["https://push.example.net/x", "http://127.0.0.1:9/x", "https://[::1]:9/x", "https://h:99999/x"]
) | st.text(max_size=40)
KEY_TEXT = st.text(st.sampled_from("AQBEabz09-_=+/!"), max_size=100)


@given(
    st.one_of(
        JSON,
        st.fixed_dictionaries(
            {
                "endpoint": ENDPOINTS,
                "keys": st.fixed_dictionaries({"p256dh": KEY_TEXT, "auth": KEY_TEXT}),
            }
        ),
    ),
    st.booleans(),
)
def test_any_json_is_a_checked_subscription_or_bad_subscription_never_a_crash(
    data: object, loopback: bool
) -> None:
    refused: UserInteractionError | None = None
    try:
        subscription = parse_subscription(data, "alice", allow_http_loopback=loopback)
    except UserInteractionError as error:
        refused = error
    if refused is not None:
        assert refused.code == BAD_SUBSCRIPTION
        assert refused.message.startswith("push subscription: ")
        return
    assert subscription.endpoint.startswith("https://") or loopback
    assert (
        len(base64.urlsafe_b64decode(subscription.auth + "=" * (-len(subscription.auth) % 4))) == 16
    )
    assert PushSubscription.from_json(subscription.to_json()) == subscription
