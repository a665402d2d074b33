"""The page's side of Web Push: the subscription routes (named users, bounds, checks),
and in Chromium the "Notify this device" offer and the service worker's push and click
handlers.

Chromium's headless build has no push service to subscribe with, so the worker's
handlers are driven by events dispatched inside the worker (``self.dispatchEvent(new
PushEvent(...))``, then a ``NotificationEvent`` for the shown notification): the
worker's own code runs as it would for a real push and a real tap, and each event's
``waitUntil`` promises are collected so the test awaits them. What the browser alone
does is not covered here: receiving and decrypting the push (the stand-in push service
tests check the sender's side of that wire, tests/test_notify_push.py), and a real tap's
user activation, which ``client.focus()`` needs (a synthetic click is refused focus, so
the test checks the page moved to the question, which the worker tells it first).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from playwright.async_api import Browser, Page, Worker

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    provide,
)
from interaction.display import present
from interaction.notify import Notice, push_payload
from interaction.push import MAX_SUBSCRIPTION_BODY, MemoryPushSubscriptionStore
from interaction.relay import PendingQuestion, Relay
from interaction.web import WebPush, WebServer

from .notify_helpers import WAIT
from .push_helpers import Device, b64
from .test_phone_page import READY, asking

KEY = "BExampleExampleExampleExampleExampleExampleExampleExampleExampleExampleExampleExamplA"
ALICE, BOB = "alice-token-0123456789", "bob-token-0123456789ab"
DEPLOY = AskUserQuestionItem("deploy", "Deploy build 7 to production?")
ROLLBACK = AskUserQuestionItem("rollback", "Roll back build 6?")


@asynccontextmanager
async def push_server(
    *, per_user: int = 10, users: bool = True
) -> AsyncIterator[tuple[Relay, WebServer, MemoryPushSubscriptionStore]]:
    store = MemoryPushSubscriptionStore()
    relay = Relay()
    with provide(relay):
        push = WebPush(store, KEY, per_user=per_user, allow_http_loopback=True)
        named = {"alice": ALICE, "bob": BOB} if users else None
        async with WebServer(relay, users=named, push=push) as server:
            try:
                yield relay, server, store
            finally:
                relay.close()


def as_user(server: WebServer, token: str) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"}
    return httpx.AsyncClient(base_url=server.base, headers=headers, timeout=30)


async def asked_both(relay: Relay) -> tuple[asyncio.Task[AskUserQuestionAnswer], ...]:
    """Ask DEPLOY, then ROLLBACK (from deploy-bot); return once the relay has both."""
    position = relay.position
    tasks = asking(DEPLOY, source="deploy-bot"), asking(ROLLBACK, source="deploy-bot")
    seen = 0
    async with asyncio.timeout(WAIT):
        async for event in relay.events(position):
            seen += event.kind == "requested"
            if seen == 2:
                break
    return tasks


async def settle(relay: Relay, tasks: tuple[asyncio.Task[AskUserQuestionAnswer], ...]) -> None:
    """Answer every question still pending, and see each ask get its answer."""
    for question in relay.pending():
        item = question.request.questions[0]
        relay.answer(
            question.id, AskUserQuestionAnswer([AskUserQuestionAnswerItem(item.id, custom="ok")])
        )
    for task in tasks:
        assert (await task).answers[0].custom == "ok"


def later_of(relay: Relay) -> PendingQuestion:
    (later,) = [q for q in relay.pending() if q.request.questions[0].id == "rollback"]
    return later


def device(name: str) -> Device:
    return Device(name, f"https://push.example.net/send/{name}")


async def test_a_named_user_subscribes_a_device_and_only_they_can_unsubscribe_it() -> None:
    async with (
        push_server() as (_, server, store),
        as_user(server, ALICE) as alice,
        as_user(server, BOB) as bob,
    ):
        offer = await alice.get("/api/push")
        assert offer.json() == {"publicKey": KEY}
        phone = device("phone")
        assert (
            await alice.post("/api/push/subscribe", json=phone.as_browser_json())
        ).status_code == 201
        assert list(await store.subscriptions()) == [phone.subscription("alice")]
        gone = await bob.post("/api/push/unsubscribe", json={"endpoint": phone.endpoint})
        assert gone.status_code == 404
        assert gone.json()["error"] == {
            "code": "NOT_FOUND",
            "message": "this device is not subscribed",
        }
        assert (
            await alice.post("/api/push/unsubscribe", json={"endpoint": phone.endpoint})
        ).status_code == 204
        assert list(await store.subscriptions()) == []


async def test_subscriptions_need_the_token_and_each_user_keeps_a_bounded_number() -> None:
    async with push_server(per_user=2) as (_, server, store), as_user(server, ALICE) as alice:
        async with httpx.AsyncClient(base_url=server.base) as nobody:
            assert (await nobody.get("/api/push")).status_code == 401
            refused = await nobody.post("/api/push/subscribe", json=device("x").as_browser_json())
            assert refused.status_code == 401
        for name in ("one", "two"):
            assert (
                await alice.post("/api/push/subscribe", json=device(name).as_browser_json())
            ).status_code == 201
        again = await alice.post("/api/push/subscribe", json=device("one").as_browser_json())
        assert again.status_code == 201  # the same device, subscribed again: replaced
        third = await alice.post("/api/push/subscribe", json=device("three").as_browser_json())
        assert third.status_code == 409
        assert third.json()["error"] == {
            "code": "TOO_MANY_DEVICES",
            "message": "at most 2 devices are notified per user",
        }
        assert len(await store.subscriptions()) == 2


BAD = [
    ([], "push subscription: not a JSON object"),
    (
        {"endpoint": "http://push.example.net/x", "keys": {}},
        "push subscription: endpoint is not an https:// URL",
    ),
    (
        {"endpoint": "https://u:p@push.example.net/x"},
        "push subscription: endpoint is not an https:// URL with a host",
    ),
    (
        {"endpoint": "https://push.example.net/" + "x" * 2048},
        "push subscription: endpoint is not a URL of at most 2048 characters",
    ),
    (
        {"endpoint": "https://push.example.net/x"},
        "push subscription: keys is not an object with p256dh and auth",
    ),
    (
        {
            "endpoint": "https://push.example.net/x",
            "keys": {"p256dh": b64(b"\x04" * 64), "auth": b64(b"a" * 16)},
        },
        "push subscription: keys.p256dh is 64 bytes, not 65",
    ),
    (
        {
            "endpoint": "https://push.example.net/x",
            "keys": {"p256dh": b64(b"\x02" * 65), "auth": b64(b"a" * 16)},
        },
        "push subscription: keys.p256dh is not an uncompressed P-256 point",
    ),
    (
        {
            "endpoint": "https://push.example.net/x",
            "keys": {"p256dh": b64(b"\x04" * 65), "auth": "!!!!"},
        },
        "push subscription: keys.auth is not base64url",
    ),
]


@pytest.mark.parametrize(("body", "message"), BAD)
async def test_a_subscription_no_browser_makes_is_refused_with_what_is_wrong(
    body: object, message: str
) -> None:
    async with push_server() as (_, server, store), as_user(server, ALICE) as alice:
        refused = await alice.post("/api/push/subscribe", json=body)
        assert refused.status_code == 400
        assert refused.json()["error"] == {"code": "BAD_SUBSCRIPTION", "message": message}
        assert list(await store.subscriptions()) == []


async def test_a_body_over_the_limit_is_refused_and_a_loopback_endpoint_needs_the_option() -> None:
    async with push_server() as (_, server, _store), as_user(server, ALICE) as alice:
        large = await alice.post(
            "/api/push/subscribe", content=b"{" + b" " * MAX_SUBSCRIPTION_BODY + b"}"
        )
        assert large.status_code == 413
        assert (
            large.json()["error"]["message"]
            == f"push subscription: more than {MAX_SUBSCRIPTION_BODY} bytes"
        )
    store = MemoryPushSubscriptionStore()
    relay = Relay()
    push = WebPush(store, KEY)
    async with (
        WebServer(relay, users={"alice": ALICE}, push=push) as server,
        as_user(server, ALICE) as alice,
    ):
        local = Device("local", "http://127.0.0.1:9/push/local").as_browser_json()
        refused = await alice.post("/api/push/subscribe", json=local)
        assert (
            refused.json()["error"]["message"]
            == "push subscription: endpoint is not an https:// URL"
        )


# ---------------------------------------------------------------------- in Chromium

DISPATCH = """async ([kind, arg]) => {
  let event;
  if (kind === "push") event = new PushEvent("push", { data: arg });
  else {
    const [note] = await self.registration.getNotifications({ tag: arg });
    event = new NotificationEvent("notificationclick", { notification: note });
  }
  const waits = [];
  Object.defineProperty(event, "waitUntil", { value: (promise) => waits.push(promise) });
  self.dispatchEvent(event);
  await Promise.allSettled(waits);
  return (await self.registration.getNotifications()).map(
    (n) => ({ title: n.title, body: n.body, tag: n.tag, data: n.data }));
}"""
"""Dispatch a push (``arg``: its data) or a click on the notification tagged ``arg``
inside the worker, await what its handler gave ``waitUntil``, and list the notifications
then shown."""


async def worker_of(page: Page) -> Worker:
    await page.evaluate(READY)
    workers = page.context.service_workers
    return workers[0] if workers else await page.context.wait_for_event("serviceworker")


@pytest.mark.full_chromium  # notifications and push: see tests/conftest.py
async def test_the_worker_shows_a_push_and_a_tap_brings_the_page_to_its_question(
    browser: Browser,
) -> None:
    async with push_server() as (relay, server, _):
        context = await browser.new_context()
        await context.grant_permissions(["notifications"], origin=server.base)
        try:
            page = await context.new_page()
            await page.goto(f"{server.base}/#token={ALICE}")
            worker = await worker_of(page)
            tasks = await asked_both(relay)
            await page.get_by_test_id("question-text").filter(has_text=DEPLOY.question).wait_for()
            later = later_of(relay)
            notice = Notice(
                later.id, later.request, present(later.request), None, 0, f"{later.id}.0"
            )
            payload = push_payload(notice, private=False, waiting=2).decode()
            shown = await worker.evaluate(DISPATCH, ["push", payload])
            assert shown == [
                {
                    "title": "Question from deploy-bot",
                    "body": ROLLBACK.question,
                    "tag": later.id,
                    "data": {"id": later.id, "url": ""},
                }
            ]
            left = await worker.evaluate(DISPATCH, ["click", later.id])
            assert left == []  # the tapped notification is closed
            await page.get_by_test_id("question-text").filter(has_text=ROLLBACK.question).wait_for()
            await settle(relay, tasks)
        finally:
            await context.close()


@pytest.mark.full_chromium  # notifications and push: see tests/conftest.py
async def test_the_page_offers_push_only_when_the_server_sends_it_and_opens_a_linked_question(
    browser: Browser,
) -> None:
    async with push_server() as (relay, server, _):
        page = await browser.new_page()
        try:
            tasks = await asked_both(relay)
            later = later_of(relay)
            await page.goto(f"{server.base}/#token={ALICE}&question={later.id}")
            await page.get_by_test_id("question-text").filter(has_text=ROLLBACK.question).wait_for()
            await page.get_by_test_id("push-subscribe").wait_for()
            assert await page.get_by_test_id("push-subscribe").inner_text() == "Notify this device"
            # Headless Chromium has no push service: the page says the browser would not.
            await page.get_by_test_id("push-subscribe").click()
            await page.get_by_test_id("notice").filter(has_text="would not subscribe").wait_for()
            assert await page.get_by_test_id("push-subscribe").is_enabled()
            await settle(relay, tasks)
        finally:
            await page.close()
    relay = Relay()
    async with WebServer(relay, users={"alice": ALICE}) as server:
        page = await browser.new_page()
        try:
            await page.goto(f"{server.base}/#token={ALICE}")
            await page.get_by_text("connected", exact=True).wait_for()
            assert await page.get_by_test_id("push-subscribe").count() == 0
            assert (
                await page.evaluate(
                    "fetch('/api/push', {headers: {Authorization: 'Bearer "
                    + ALICE
                    + "'}}).then(r => r.status)"
                )
            ) == 404
        finally:
            await page.close()
