"""Answering in Slack, against a local stand-in for Slack: an aiohttp server playing
Slack's side. It takes the notice at its incoming webhook, sends the page's server
signed ``block_actions`` and ``view_submission`` payloads shaped as Slack documents them
(form-encoded ``payload=``, ``X-Slack-Request-Timestamp``, ``X-Slack-Signature``), takes
the posts to each ``response_url``, and serves ``views.open`` for ``AsyncWebClient``."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from slack_sdk.models.blocks import Block

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    Assignment,
    PermissionIntent,
    Team,
    UserInteractionError,
    ask,
    provide,
)
from interaction.cli import main
from interaction.decisions import Decision, collect_decisions
from interaction.notify import (
    ManualClock,
    Notifications,
    SlackInteractivity,
    SlackNotifier,
    Step,
)
from interaction.notify._config import slack_interactivity, steps_from_specs
from interaction.notify._slack_interactive import MAX_BODY
from interaction.relay import Relay
from interaction.signing import AnswerLinks
from interaction.web import WebServer

from .loopback import free_port
from .notify_helpers import WAIT

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
ALICE, BOB, MALLORY = "U01ALICE", "U02BOB", "U03MALLORY"
TOKENS = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789ab"}
Option = AskUserQuestionOption

DEPLOY = AskUserQuestionItem(
    "run",
    "May Bash run `kubectl apply`?",
    detail="kubectl apply -f deploy.yaml",
    options=[Option("Allow"), Option("Deny"), Option("Always allow")],
    intent=PermissionIntent("Bash", "kubectl apply", "Allow", "Deny", "Always allow"),
)
SHIP = AskUserQuestionItem("ship", "Ship it?", options=[Option("Yes"), Option("No")])
PKG = AskUserQuestionItem(
    "pkg", "Which package manager?", options=[Option("pnpm"), Option("npm"), Option("yarn")]
)
LANGS = AskUserQuestionItem(
    "langs",
    "Which languages?",
    options=[Option("Python"), Option("Rust"), Option("Go")],
    multi_select=True,
)


@dataclass
class Slack:
    """Slack's side: the webhook, each ``response_url``, and ``views.open``."""

    base: str = ""
    notices: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)
    responses: asyncio.Queue[tuple[str, dict[str, Any]]] = field(default_factory=asyncio.Queue)
    opened: asyncio.Queue[tuple[str, dict[str, Any]]] = field(default_factory=asyncio.Queue)
    urls: int = 0
    hold: asyncio.Event | None = None  # when set up, each response_url post waits for it
    held: asyncio.Event = field(default_factory=asyncio.Event)

    async def hook(self, request: web.Request) -> web.Response:
        self.notices.put_nowait(json.loads(await request.read()))
        return web.Response(text="ok")

    async def respond(self, request: web.Request) -> web.Response:
        self.responses.put_nowait((request.path, json.loads(await request.read())))
        if self.hold is not None:
            self.held.set()
            await self.hold.wait()
        return web.Response(text="ok")

    async def views_open(self, request: web.Request) -> web.Response:
        self.opened.put_nowait((request.headers["Authorization"], await request.json()))
        return web.json_response({"ok": True, "view": {"id": "V0"}})

    def response_url(self) -> str:
        self.urls += 1
        return f"{self.base}/actions/T0/{self.urls}/{secrets.token_urlsafe(8)}"

    async def notice(self) -> dict[str, Any]:
        async with asyncio.timeout(WAIT):
            return await self.notices.get()

    async def response(self) -> tuple[str, dict[str, Any]]:
        async with asyncio.timeout(WAIT):
            return await self.responses.get()


@asynccontextmanager
async def slack_stand_in() -> AsyncIterator[Slack]:
    slack = Slack()
    app = web.Application()
    app.router.add_post("/services/T0/B0/hook", slack.hook)
    app.router.add_post("/actions/{team}/{n}/{secret}", slack.respond)
    app.router.add_post("/api/views.open", slack.views_open)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    slack.base = f"http://127.0.0.1:{port}"
    try:
        yield slack
    finally:
        await runner.cleanup()


def signed(body: bytes, *, secret: str = SECRET, at: int | None = None) -> dict[str, str]:
    """The headers Slack sends: v0=HMAC-SHA256 over ``v0:{timestamp}:{body}``."""
    stamp = str(int(time.time()) if at is None else at)
    digest = hmac.new(secret.encode(), b"v0:" + stamp.encode() + b":" + body, hashlib.sha256)
    return {
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": f"v0={digest.hexdigest()}",
        "Content-Type": "application/x-www-form-urlencoded",
    }


def form(payload: dict[str, Any]) -> bytes:
    return urlencode({"payload": json.dumps(payload)}).encode()


def element(message: dict[str, Any], text: str) -> dict[str, Any]:
    """The element of the notice whose text is ``text`` (a button, or the checkboxes)."""
    for block in message["blocks"]:
        if block["type"] != "actions":
            continue
        for item in block["elements"]:
            if item.get("text", {}).get("text") == text or item.get("action_id") == text:
                return dict(item)
    raise AssertionError(f"no {text!r} in {message['blocks']}")


def block_actions(
    message: dict[str, Any],
    user: str,
    action: dict[str, Any],
    response_url: str,
    state: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``block_actions`` payload as Slack documents it, for a click on ``action``."""
    payload: dict[str, Any] = {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": "T0"},
        "api_app_id": "A0",
        "token": "legacy-verification-token",
        "container": {
            "type": "message",
            "message_ts": "1700000000.000100",
            "channel_id": "C0",
            "is_ephemeral": False,
        },
        "trigger_id": "13345224609.738474920.8088930838d88f008e0",
        "team": {"id": "T0", "domain": "example"},
        "channel": {"id": "C0", "name": "approvals"},
        "message": {
            "type": "message",
            "text": message["text"],
            "blocks": message["blocks"],
            "ts": "1700000000.000100",
        },
        "response_url": response_url,
        "actions": [{**action, "block_id": "interaction.answer", "action_ts": "1700000001.1"}],
    }
    if state is not None:
        payload["state"] = {"values": state}
    return payload


def view_submission(user: str, question_id: str, words: str) -> dict[str, Any]:
    return {
        "type": "view_submission",
        "team": {"id": "T0", "domain": "example"},
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": "T0"},
        "api_app_id": "A0",
        "token": "legacy-verification-token",
        "trigger_id": "12345.98765.abcd2358fdea",
        "view": {
            "id": "V0",
            "team_id": "T0",
            "type": "modal",
            "callback_id": "interaction.other",
            "private_metadata": question_id,
            "state": {
                "values": {
                    "interaction.text": {
                        "interaction.text": {"type": "plain_text_input", "value": words}
                    }
                }
            },
            "hash": "156663117.cd33ad1f",
        },
        "response_urls": [],
    }


@dataclass
class Desk:
    relay: Relay
    server: WebServer
    slack: Slack
    interactive: SlackInteractivity
    notifications: Notifications
    http: httpx.AsyncClient

    async def post(
        self, payload: dict[str, Any], *, at: int | None = None, secret: str = SECRET
    ) -> httpx.Response:
        body = form(payload)
        headers = signed(body, secret=secret, at=at)
        return await self.http.post(
            f"{self.server.base}/slack/interactivity", content=body, headers=headers
        )

    async def click(self, message: dict[str, Any], user: str, text: str, **kw: Any) -> str:
        """A click on the button ``text``, as Slack posts it; its ``response_url``."""
        url = self.slack.response_url()
        response = await self.post(block_actions(message, user, element(message, text), url, **kw))
        assert response.status_code == 200, response.text
        assert response.content == b""
        return url


@asynccontextmanager
async def desk(
    *,
    bot_token: str | None = None,
    anonymous: bool = False,
    on_settle: bool = False,
    team: Team | None = None,
) -> AsyncIterator[Desk]:
    links = AnswerLinks(secret=b"s" * 32)
    relay = Relay(team=team)
    async with slack_stand_in() as slack:
        interactive = SlackInteractivity(
            SECRET,
            users={ALICE: "alice", BOB: "bob"},
            anonymous=anonymous,
            bot_token=bot_token,
            api_url=f"{slack.base}/api/",
        )
        hook = f"{slack.base}/services/T0/B0/hook"
        channel = SlackNotifier(hook, interactive=interactive, on_settle=on_settle)
        with provide(relay):
            async with WebServer(
                relay, links=links, users=TOKENS, slack=interactive, team=team
            ) as server:
                notifications = Notifications(
                    relay, [Step(channel)], links=links, public_url=server.base, clock=ManualClock()
                )
                async with notifications, httpx.AsyncClient() as http:
                    try:
                        yield Desk(relay, server, slack, interactive, notifications, http)
                    finally:
                        relay.close()
                        await interactive.idle()


async def asked(
    item: AskUserQuestionItem,
) -> tuple[asyncio.Task[AskUserQuestionAnswer], list[Decision]]:
    decisions: list[Decision] = []

    async def run() -> AskUserQuestionAnswer:
        with collect_decisions() as notes:
            try:
                return await ask(AskUserQuestionRequest([item]))
            finally:
                decisions.extend(notes)

    return asyncio.create_task(run()), decisions


def texts(message: dict[str, Any]) -> list[str]:
    return [
        item["text"]["text"]
        for block in message["blocks"]
        if block["type"] == "actions"
        for item in block["elements"]
        if "text" in item
    ]


# ---------------------------------------------------------------------------- answering


async def test_a_permission_is_approved_in_slack_by_the_mapped_user() -> None:
    async with desk() as d:
        task, decisions = await asked(DEPLOY)
        message = await d.slack.notice()
        for block in Block.parse_all(message["blocks"]):
            block.validate_json()  # slack_sdk's own checks
        assert texts(message) == ["Approve", "Deny", "Always allow", "Other…"]
        (question,) = d.relay.pending()
        assert element(message, "Approve")["value"] == question.id
        url = await d.click(message, ALICE, "Approve")
        answer = await task
        assert answer == AskUserQuestionAnswer([AskUserQuestionAnswerItem("run", ("Allow",))])
        assert decisions == [Decision("human", "alice")]  # the answer route's, by name
        path, replaced = await d.slack.response()
        assert url.endswith(path)
        assert replaced["replace_original"] is True
        assert (
            replaced["text"]
            == "A question waits: May Bash run `kubectl apply`?: it was answered by alice."
        )
        assert [b["type"] for b in replaced["blocks"]] == ["header", "context"]
        assert not d.relay.pending()


async def test_a_yes_no_question_is_denied() -> None:
    async with desk() as d:
        task, decisions = await asked(SHIP)
        message = await d.slack.notice()
        assert texts(message)[:2] == ["Approve", "Deny"]
        assert element(message, "Deny")["style"] == "danger"
        await d.click(message, BOB, "Deny")
        assert (await task).answers[0].selected == ("No",)
        assert decisions == [Decision("human", "bob")]
        _, replaced = await d.slack.response()
        assert replaced["text"].endswith("it was answered by bob.")


async def test_a_choice_is_answered_by_its_option_button() -> None:
    async with desk() as d:
        task, _ = await asked(PKG)
        message = await d.slack.notice()
        assert texts(message) == ["pnpm", "npm", "yarn", "Other…"]  # Other…: the page
        assert element(message, "Other…")["url"].startswith(f"{d.server.base}/link?t=")
        await d.click(message, ALICE, "yarn")
        assert (await task).answers[0].selected == ("yarn",)


async def test_a_multi_select_is_sent_with_its_ticked_boxes() -> None:
    async with desk() as d:
        task, _ = await asked(LANGS)
        message = await d.slack.notice()
        boxes = element(message, "interaction.pick")
        assert boxes["type"] == "checkboxes"
        ticked = [boxes["options"][0], boxes["options"][2]]
        # Ticking a box is a block_actions of its own: taken, nothing settled.
        tick = {**boxes, "selected_options": ticked}
        tick.pop("options")
        response = await d.post(block_actions(message, ALICE, tick, d.slack.response_url()))
        assert response.status_code == 200
        await d.interactive.idle()
        assert not task.done()
        assert len(d.relay.pending()) == 1
        state = {
            "interaction.pick": {
                "interaction.pick": {"type": "checkboxes", "selected_options": ticked}
            }
        }
        await d.click(message, ALICE, "Send", state=state)
        assert (await task).answers[0].selected == ("Python", "Go")
        # Both messages' response_urls (the tick's and Send's) are replaced.
        replaced = [await d.slack.response(), await d.slack.response()]
        assert all(body["replace_original"] for _, body in replaced)


async def test_own_words_through_the_modal() -> None:
    async with desk(bot_token="xoxb-test-token") as d:
        task, decisions = await asked(PKG)
        message = await d.slack.notice()
        url = await d.click(message, ALICE, "Other…")
        authorization, opened = await asyncio.wait_for(d.slack.opened.get(), WAIT)
        assert authorization == "Bearer xoxb-test-token"
        assert opened["trigger_id"] == "13345224609.738474920.8088930838d88f008e0"
        view = opened["view"]
        assert view["type"] == "modal"
        assert view["callback_id"] == "interaction.other"
        (question,) = d.relay.pending()
        assert view["private_metadata"] == question.id
        response = await d.post(view_submission(ALICE, question.id, "  bun, please  "))
        assert response.status_code == 200
        assert response.content == b""
        answer = await task
        assert answer.answers[0] == AskUserQuestionAnswerItem("pkg", (), "bun, please")
        assert decisions == [Decision("human", "alice")]
        path, replaced = await d.slack.response()
        assert url.endswith(path)
        assert replaced["replace_original"] is True


async def test_a_free_text_question_has_answer_and_several_questions_keep_the_link() -> None:
    async with desk(bot_token="xoxb-test-token") as d:
        free = AskUserQuestionItem("why", "Why did the deploy fail?")
        task = asyncio.create_task(ask(AskUserQuestionRequest([free])))
        assert texts(await d.slack.notice()) == ["Answer…"]  # the modal is the whole answer
        batch = asyncio.create_task(ask(AskUserQuestionRequest([SHIP, PKG])))
        message = await d.slack.notice()
        assert texts(message) == ["Answer"]  # on the page, through the answer link
        assert element(message, "Answer")["url"].startswith(f"{d.server.base}/link?t=")
        task.cancel()
        batch.cancel()


# ---------------------------------------------------------------------------- refusals


async def test_a_forged_signature_is_401_and_changes_nothing() -> None:
    async with desk() as d:
        task, _ = await asked(SHIP)
        message = await d.slack.notice()
        payload = block_actions(message, ALICE, element(message, "Approve"), d.slack.response_url())
        forged = await d.post(payload, secret="not-the-secret-at-all")
        assert forged.status_code == 401
        assert forged.json()["error"]["code"] == "UNAUTHORIZED"
        bare = await d.http.post(f"{d.server.base}/slack/interactivity", content=form(payload))
        assert bare.status_code == 401
        # A token is no way in either: the path takes a Slack signature only.
        headers = {"Authorization": f"Bearer {TOKENS['alice']}"}
        tokened = await d.http.post(
            f"{d.server.base}/slack/interactivity", content=form(payload), headers=headers
        )
        assert tokened.status_code == 401
        await d.interactive.idle()
        assert not task.done()
        assert len(d.relay.pending()) == 1
        assert d.slack.responses.empty()
        task.cancel()


async def test_a_replayed_old_timestamp_is_401() -> None:
    async with desk() as d:
        task, _ = await asked(SHIP)
        message = await d.slack.notice()
        payload = block_actions(message, ALICE, element(message, "Approve"), d.slack.response_url())
        old = await d.post(payload, at=int(time.time()) - 6 * 60)
        assert old.status_code == 401
        await d.interactive.idle()
        assert not task.done()
        assert d.slack.responses.empty()
        task.cancel()


async def test_a_double_click_answers_once_and_the_second_is_told() -> None:
    async with desk() as d:
        task, decisions = await asked(SHIP)
        message = await d.slack.notice()
        first = await d.click(message, ALICE, "Approve")
        await d.interactive.idle()
        second = await d.click(message, BOB, "Deny")
        assert (await task).answers[0].selected == ("Yes",)
        await d.interactive.idle()
        said: dict[str, list[dict[str, Any]]] = {}
        while not d.slack.responses.empty():
            path, body = d.slack.responses.get_nowait()
            said.setdefault(path, []).append(body)
        first_path, second_path = first[len(d.slack.base) :], second[len(d.slack.base) :]
        assert [b["replace_original"] for b in said[first_path]] == [True]
        told, replaced = said[second_path]
        assert told["response_type"] == "ephemeral"
        assert told["replace_original"] is False
        assert told["text"] == "Too late: it was answered by alice."
        assert replaced["replace_original"] is True
        assert decisions == [Decision("human", "alice")]


async def test_two_clicks_at_once_settle_exactly_one_answer() -> None:
    async with desk() as d:
        task, decisions = await asked(SHIP)
        message = await d.slack.notice()
        await asyncio.gather(d.click(message, ALICE, "Approve"), d.click(message, BOB, "Deny"))
        answer = await task
        await d.interactive.idle()
        assert len(decisions) == 1  # one answer reached the asker
        winner = decisions[0].name
        assert answer.answers[0].selected == (("Yes",) if winner == "alice" else ("No",))
        bodies = []
        while not d.slack.responses.empty():
            bodies.append(d.slack.responses.get_nowait()[1])
        (told,) = [b for b in bodies if b.get("response_type") == "ephemeral"]
        assert told["text"].startswith("Too late: it ")
        assert any(b["replace_original"] for b in bodies)


async def test_a_click_after_the_page_answered_is_told_and_the_message_replaced() -> None:
    async with desk(on_settle=True) as d:
        task, _ = await asked(SHIP)
        message = await d.slack.notice()
        (question,) = d.relay.pending()
        page = await d.http.post(
            f"{d.server.base}/api/questions/{question.id}/answer",
            json={"answers": [{"id": "ship", "selected": ["No"]}]},
            headers={"Authorization": f"Bearer {TOKENS['bob']}"},
        )
        assert page.status_code == 200
        assert (await task).answers[0].selected == ("No",)
        settled = await d.slack.notice()  # the channel heard the settle, and who did it
        assert settled["text"] == "A question waits: Ship it?: it was answered."
        await d.click(message, ALICE, "Approve")
        await d.interactive.idle()
        _, told = await d.slack.response()
        assert told["text"] == "Too late: it was answered by bob."  # the page's user, named
        _, replaced = await d.slack.response()
        assert replaced["replace_original"] is True
        assert replaced["text"].endswith("it was answered by bob.")


async def test_a_settle_on_the_page_replaces_a_message_someone_clicked() -> None:
    async with desk(bot_token="xoxb-test-token") as d:
        task, _ = await asked(PKG)
        message = await d.slack.notice()
        url = await d.click(message, ALICE, "Other…")  # opens the modal, settles nothing
        await d.slack.opened.get()
        (question,) = d.relay.pending()
        await d.http.post(
            f"{d.server.base}/api/questions/{question.id}/answer",
            json={"answers": [{"id": "pkg", "selected": ["npm"]}]},
            headers={"Authorization": f"Bearer {TOKENS['bob']}"},
        )
        await task
        path, replaced = await d.slack.response()  # through the notifier's settle
        assert url.endswith(path)
        assert replaced["text"].endswith("it was answered by bob.")


async def test_an_unmapped_slack_user_is_told_and_nothing_changes() -> None:
    async with desk() as d:
        task, _ = await asked(SHIP)
        message = await d.slack.notice()
        await d.click(message, MALLORY, "Approve")
        _, told = await d.slack.response()
        assert told["response_type"] == "ephemeral"
        assert told["text"].startswith(
            f"Your Slack user ({MALLORY}) is not one of this page's users"
        )
        assert not task.done()
        assert len(d.relay.pending()) == 1
        task.cancel()


async def test_assignment_and_quorum_apply_in_slack_as_on_the_page() -> None:
    """A mapped Slack user not assigned is refused as the page refuses them; a quorum
    counts each approval made in Slack and settles at the last."""
    team = Team(["alice", "bob"], {"ops": ["alice", "bob"]})
    async with desk(team=team) as d:
        only_bob = AskUserQuestionRequest([DEPLOY], assignment=Assignment(["bob"]))
        task = asyncio.create_task(ask(only_bob))
        message = await d.slack.notice()
        await d.click(message, ALICE, "Approve")
        _, told = await d.slack.response()
        assert told["response_type"] == "ephemeral"
        assert told["text"] == (
            "Your answer was not taken: question "
            f"{d.relay.pending()[0].id!r} is assigned to others: 'alice' may not settle it"
        )
        assert not task.done()
        await d.click(message, BOB, "Approve")
        assert (await task).answers[0].selected == ("Allow",)
        for _ in ("alice's click", "bob's"):  # each clicked message is replaced
            _, replaced = await d.slack.response()
            assert replaced["text"].endswith("it was answered by bob.")

        both = AskUserQuestionRequest([DEPLOY], assignment=Assignment(["ops"], quorum=2))
        task = asyncio.create_task(ask(both))
        message = await d.slack.notice()
        await d.click(message, ALICE, "Approve")
        _, told = await d.slack.response()
        assert told["text"] == (
            "Your approval is recorded (1 of 2 approved: alice); it still waits."
        )
        assert not task.done()
        await d.click(message, BOB, "Approve")
        assert (await task).answers[0].selected == ("Allow",)
        assert not d.relay.pending()


async def test_an_unmapped_slack_user_answers_when_anonymous_answers_are_allowed() -> None:
    async with desk(anonymous=True) as d:
        task, decisions = await asked(SHIP)
        message = await d.slack.notice()
        await d.click(message, MALLORY, "Approve")
        assert (await task).answers[0].selected == ("Yes",)
        assert decisions == []  # nobody named
        _, replaced = await d.slack.response()
        assert replaced["text"].endswith(f"it was answered by Slack user {MALLORY}.")


async def test_a_forged_option_is_refused_against_the_pending_question() -> None:
    async with desk() as d:
        task, _ = await asked(SHIP)
        message = await d.slack.notice()
        beyond = {**element(message, "Approve"), "action_id": "interaction.choose.7"}
        response = await d.post(block_actions(message, ALICE, beyond, d.slack.response_url()))
        assert response.status_code == 200
        _, told = await d.slack.response()
        assert told["text"] == "That does not answer this question; it still waits."
        assert not task.done()
        task.cancel()


async def test_an_oversized_body_is_413_before_it_is_read() -> None:
    async with desk() as d:
        body = b"payload=" + b"x" * MAX_BODY
        response = await d.http.post(
            f"{d.server.base}/slack/interactivity", content=body, headers=signed(body)
        )
        assert response.status_code == 413
        assert response.json()["error"]["code"] == "TOO_LARGE"


async def test_without_a_signing_secret_there_is_no_route_and_notices_are_links() -> None:
    relay = Relay()
    async with slack_stand_in() as slack:
        channel = SlackNotifier(f"{slack.base}/services/T0/B0/hook")
        links = AnswerLinks(secret=b"s" * 32)
        with provide(relay):
            async with WebServer(relay, links=links, users=TOKENS) as server:
                steps = [Step(channel)]
                notifications = Notifications(relay, steps, links=links, public_url=server.base)
                async with notifications, httpx.AsyncClient() as http:
                    task, _ = await asked(SHIP)
                    message = await slack.notice()
                    assert texts(message) == ["Answer"]  # today's link, no buttons
                    body = form({"type": "block_actions"})
                    response = await http.post(
                        f"{server.base}/slack/interactivity", content=body, headers=signed(body)
                    )
                    assert response.status_code == 401  # the token guard: no route here
                    assert response.json()["error"]["message"] == "a valid token is required"
                    relay.close()
                    with pytest.raises(UserInteractionError) as raised:
                        await task
                    assert raised.value.code == "ASK_ABORTED"


async def test_stopping_the_server_cancels_the_clicks_being_settled() -> None:
    async with slack_stand_in() as slack:
        slack.hold = asyncio.Event()  # Slack takes the post and never answers
        interactive = SlackInteractivity(SECRET, users={ALICE: "alice"})
        async with WebServer(Relay(), users=TOKENS, slack=interactive) as server:
            message = {"text": "x", "blocks": []}
            action = {"type": "button", "action_id": "interaction.choose.0", "value": "q1"}
            body = form(block_actions(message, MALLORY, action, slack.response_url()))
            async with httpx.AsyncClient() as http:
                response = await http.post(
                    f"{server.base}/slack/interactivity", content=body, headers=signed(body)
                )
            assert response.status_code == 200  # answered before the click is settled
            await asyncio.wait_for(slack.held.wait(), WAIT)
        # The server stopped with the post still out: its task was cancelled and awaited.
        assert not slack.hold.is_set()
        await asyncio.wait_for(interactive.idle(), 0.5)
        slack.hold.set()  # the stand-in's handler may end now


def test_serve_settings_make_slack_notices_answerable_in_slack() -> None:
    environ = {
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_BOT_TOKEN": "xoxb-1",
        "INTERACTION_SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T0/B0/X",
    }
    specs = ["slack@5m"]
    made = slack_interactivity(specs, ["alice=U01ALICE"], False, ["alice"], environ)
    assert made is not None
    assert made.users == {"U01ALICE": "alice"}
    assert made.modal
    assert not made.anonymous
    (step,) = steps_from_specs(specs, environ, slack=made)
    assert isinstance(step.notifier, SlackNotifier)
    assert step.notifier.interactive is made
    # No secret, or no Slack notices: links, as before.
    assert slack_interactivity(specs, [], False, ["alice"], {}) is None
    assert slack_interactivity(["email=a@x.org"], [], False, [], environ) is None
    with pytest.raises(ValueError, match="is not a Slack user id"):
        slack_interactivity(specs, ["alice=u-lower"], False, ["alice"], environ)
    with pytest.raises(ValueError, match="mapped twice"):
        slack_interactivity(specs, ["alice=U1A", "bob=U1A"], False, ["alice", "bob"], environ)


# ---------------------------------------------------------------------------- garbage

GARBAGE = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=200).map(lambda t: urlencode({"payload": t}).encode()),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(
                st.sampled_from(["type", "user", "id", "actions", "view", "state", "response_url"]),
                inner,
                max_size=5,
            )
        ),
        max_leaves=12,
    ).map(
        lambda p: (
            form({"type": "block_actions", "junk": p})
            if not isinstance(p, dict)
            else urlencode({"payload": json.dumps(p)}).encode()
        )
    ),
)


@pytest.fixture
async def waiting() -> AsyncIterator[tuple[Desk, asyncio.Task[AskUserQuestionAnswer]]]:
    """A desk with one question waiting, shared by every example of a property test."""
    async with desk() as d:
        task, _ = await asked(SHIP)
        await d.slack.notice()
        yield d, task
        task.cancel()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(body=GARBAGE, sign=st.booleans())
async def test_garbage_is_always_4xx_and_settles_nothing(
    waiting: tuple[Desk, asyncio.Task[AskUserQuestionAnswer]], body: bytes, sign: bool
) -> None:
    d, task = waiting
    headers = signed(body) if sign else {"Content-Type": "application/x-www-form-urlencoded"}
    response = await d.http.post(
        f"{d.server.base}/slack/interactivity", content=body, headers=headers
    )
    assert 400 <= response.status_code < 500, response.text
    assert response.json()["error"]["code"] in {"UNAUTHORIZED", "BAD_PAYLOAD"}
    await d.interactive.idle()
    assert not task.done()
    assert len(d.relay.pending()) == 1
    assert d.slack.responses.empty()


# ---------------------------------------------------------------------------- serve


def test_serve_refuses_a_slack_user_of_no_named_user(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
    monkeypatch.setenv("INTERACTION_SLACK_WEBHOOK_URL", "https://hooks.slack.com/services/x")
    monkeypatch.setenv("ALICE_T", TOKENS["alice"])
    argv = ["serve", "--notify", "slack", "--user", "alice=ALICE_T", "--slack-user", "bob=U02BOB"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == "interaction: --slack-user 'bob=U02BOB': there is no --user named 'bob'\n"
    assert SECRET not in err


def test_serve_refuses_slack_users_without_a_signing_secret(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SLACK_SIGNING_SECRET", raising=False)
    monkeypatch.setenv("ALICE_T", TOKENS["alice"])
    argv = ["serve", "--user", "alice=ALICE_T", "--slack-user", "alice=U01ALICE"]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        "interaction: --slack-user answers in Slack: it needs --notify slack and"
        " SLACK_SIGNING_SECRET in the environment\n"
    )
