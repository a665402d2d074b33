"""The Telegram channel end to end: python-telegram-bot's real ``Bot`` against a local
stand-in for the Bot API (tests/telegram_api.py), clicks read by long polling, answers
claimed on a real relay as the mapped named user."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    Assignment,
    PermissionIntent,
    Provenance,
    Team,
    ask,
    provide,
)
from interaction.notify import Notifications, Retry, Step, TelegramNotifier
from interaction.notify._config import steps_from_specs, telegram_users_from_specs
from interaction.notify._telegram import click_of, telegram_keyboard
from interaction.redis import RedisRelay
from interaction.relay import Relay, RelayEvent

from . import loopback
from .notify_helpers import WAIT
from .redis_server import RedisServer, redis_server
from .telegram_api import TOKEN, BotApi, Message, bot_api
from .test_notify_cli import serve

__all__ = ["redis_server"]  # a fixture

Option = AskUserQuestionOption
CHAT = 5551234
ALICE = 1001  # alice's Telegram user id
BOB = 1002
STRANGER = 9009
QUICK = Retry(attempts=3, first=0.01, factor=1.0, timeout=10.0)

PERMISSION = AskUserQuestionItem(
    "run",
    "May Bash run `rm -rf build`? <b>bold</b> *not bold*",
    detail="rm -rf build",
    options=[Option("Allow"), Option("Deny")],
    intent=PermissionIntent("Bash", "rm -rf build", allow="Allow", deny="Deny"),
)
CHOICE = AskUserQuestionItem(
    "pkg", "Which package manager?", options=[Option("pnpm"), Option("npm"), Option("yarn")]
)
MULTI = AskUserQuestionItem(
    "langs",
    "Which languages?",
    options=[Option("Python"), Option("Rust"), Option("Go")],
    multi_select=True,
)


@dataclass
class Desk:
    """A relay, the Telegram channel following it, and the stand-in Bot API."""

    api: BotApi
    relay: Relay
    notifier: TelegramNotifier
    notifications: Notifications

    async def asked(
        self, item: AskUserQuestionItem, assignment: Assignment | None = None
    ) -> tuple[asyncio.Task[AskUserQuestionAnswer], Message]:
        """Ask ``item`` and wait for the bot's message about it."""
        before = len(self.api.messages)
        request = AskUserQuestionRequest(
            [item], provenance=Provenance(source="deploy-bot"), assignment=assignment
        )
        task = asyncio.get_running_loop().create_task(ask(request))
        await self.api.until(lambda: len(self.api.messages) > before)
        return task, self.api.sent()[-1]

    def question_id(self) -> str:
        (question,) = self.relay.pending()
        return question.id


@asynccontextmanager
async def desk(
    users: dict[int, str] | None = None,
    chats: tuple[int, ...] = (CHAT,),
    team: Team | None = None,
) -> AsyncIterator[Desk]:
    async with bot_api() as api:
        relay = Relay(team=team)
        mapped = {ALICE: "alice", BOB: "bob"} if users is None else users
        notifier = TelegramNotifier(
            api.token, chats, users=mapped, base_url=api.url, poll_timeout=5, retry=QUICK
        )
        steps = [Step(notifier)]
        with provide(relay):
            async with (
                notifier.answering(relay),
                Notifications(relay, steps, retry=QUICK) as notifications,
            ):
                yield Desk(api, relay, notifier, notifications)
        relay.close()


async def settled_text(api: BotApi, message: Message) -> str:
    """The message's text once it was edited to the outcome (its keyboard gone)."""
    await api.until(lambda: message.keyboard is None and "\n\nIt " in message.text)
    return message.text.rsplit("\n\n", 1)[1]


async def test_approve_answers_as_the_mapped_user_and_the_message_says_who() -> None:
    async with desk() as d:
        task, message = await d.asked(PERMISSION)
        assert [b["text"] for b in message.buttons()] == ["Approve", "Deny"]
        assert message.text.startswith("deploy-bot asks: May Bash run `rm -rf build`?")
        assert "<b>bold</b> *not bold*" in message.text  # plain text, never parsed
        (sent,) = d.api.called("sendMessage")
        assert "parse_mode" not in sent
        events: list[RelayEvent] = []
        resolved = asyncio.Event()

        async def follow() -> None:
            async for event in d.relay.events((await d.relay.snapshot()).position):
                events.append(event)
                resolved.set()

        follower = asyncio.get_running_loop().create_task(follow())
        await asyncio.sleep(0)
        said = await d.api.click(message, ALICE, message.data_of("Approve"))
        assert said == "Answered as alice: Allow"
        answer = await task
        assert answer.answers == (AskUserQuestionAnswerItem("run", ("Allow",)),)
        async with asyncio.timeout(WAIT):
            await resolved.wait()
        follower.cancel()
        assert (events[0].kind, events[0].outcome, events[0].answerer) == (
            "resolved",
            "answered",
            "alice",
        )
        assert await settled_text(d.api, message) == "It was answered by alice: Allow."
        assert d.relay.pending() == []


async def test_deny_is_the_deny_option() -> None:
    async with desk() as d:
        task, message = await d.asked(PERMISSION)
        said = await d.api.click(message, BOB, message.data_of("Deny"))
        assert said == "Answered as bob: Deny"
        assert (await task).answers == (AskUserQuestionAnswerItem("run", ("Deny",)),)
        assert await settled_text(d.api, message) == "It was answered by bob: Deny."


async def test_a_choice_is_one_button_per_option() -> None:
    async with desk() as d:
        task, message = await d.asked(CHOICE)
        assert [b["text"] for b in message.buttons()] == ["pnpm", "npm", "yarn"]
        assert all(len(b["callback_data"].encode()) <= 64 for b in message.buttons())
        await d.api.click(message, ALICE, message.data_of("yarn"))
        assert (await task).answers == (AskUserQuestionAnswerItem("pkg", ("yarn",)),)
        assert await settled_text(d.api, message) == "It was answered by alice: yarn."


async def test_a_multi_select_toggles_then_sends() -> None:
    async with desk() as d:
        task, message = await d.asked(MULTI)
        assert [b["text"] for b in message.buttons()][-1] == "Send"
        said = await d.api.click(message, ALICE, message.data_of("Python"))
        assert said == "Chosen so far: Python. Press Send to answer."
        await d.api.click(message, BOB, message.data_of("Go"))
        assert "✅ Go" in [b["text"] for b in message.buttons()]  # everyone sees the toggles
        said = await d.api.click(message, ALICE, message.data_of("Python"))
        assert said == "Chosen so far: Go. Press Send to answer."
        assert not task.done()
        said = await d.api.click(message, ALICE, message.data_of("Send"))
        assert said == "Answered as alice: Go"
        assert (await task).answers == (AskUserQuestionAnswerItem("langs", ("Go",)),)


async def test_a_double_click_settles_once_and_the_second_is_told() -> None:
    async with desk() as d:
        task, message = await d.asked(CHOICE)
        first = await d.api.click(message, ALICE, message.data_of("npm"))
        second = await d.api.click(message, BOB, message.data_of("pnpm"))
        assert first == "Answered as alice: npm"
        assert second.startswith("Too late: ")
        assert second.endswith("Nothing changed.")
        assert (await task).answers == (AskUserQuestionAnswerItem("pkg", ("npm",)),)
        assert await settled_text(d.api, message) == "It was answered by alice: npm."


async def test_a_click_after_the_page_answered_is_told_who_did() -> None:
    async with desk() as d:
        task, message = await d.asked(CHOICE)
        stale = message.data_of("npm")  # the button as the phone still shows it
        page = AskUserQuestionAnswer([AskUserQuestionAnswerItem("pkg", ("pnpm",))])
        await d.relay.submit(d.question_id(), page, answerer="carol")  # the page's claim
        assert (await task).answers == page.answers
        assert await settled_text(d.api, message) == "It was answered by carol."
        said = await d.api.click(message, ALICE, stale)
        assert said == "Too late: It was answered by carol. Nothing changed."


async def test_a_click_quicker_than_the_send_is_not_refused() -> None:
    async with desk() as d:
        d.api.hold = asyncio.Event()  # the message shows; the bot waits for its id
        task, message = await d.asked(CHOICE)
        clicked = asyncio.get_running_loop().create_task(
            d.api.click(message, ALICE, message.data_of("npm"))
        )
        await d.api.until(lambda: d.api.served)  # the bot has the click, not the id yet
        d.api.hold.set()
        assert await clicked == "Answered as alice: npm"
        assert (await task).answers[0].selected == ("npm",)


async def test_an_unmapped_user_is_told_and_nothing_changes() -> None:
    async with desk() as d:
        task, message = await d.asked(PERMISSION)
        said = await d.api.click(message, STRANGER, message.data_of("Approve"))
        assert said == (
            f"Your Telegram account ({STRANGER}) is not mapped to a user here; nothing changed."
        )
        assert not task.done()
        assert len(d.relay.pending()) == 1
        assert message.keyboard is not None
        assert d.api.called("editMessageText") == []
        await d.api.click(message, ALICE, message.data_of("Deny"))
        assert (await task).answers[0].selected == ("Deny",)


async def test_assignment_and_quorum_apply_to_taps_as_on_the_page() -> None:
    """A mapped user not assigned is refused; a quorum counts each tap's approval and
    settles at the last."""
    async with desk(team=Team(["alice", "bob"], {"ops": ["alice", "bob"]})) as d:
        task, message = await d.asked(PERMISSION, Assignment(["bob"]))
        said = await d.api.click(message, ALICE, message.data_of("Approve"))
        assert said == (
            f"Not accepted: question {d.question_id()!r} is assigned to others:"
            " 'alice' may not settle it"
        )
        assert not task.done()
        assert await d.api.click(message, BOB, message.data_of("Approve")) == (
            "Answered as bob: Allow"
        )
        assert (await task).answers[0].selected == ("Allow",)

        task, message = await d.asked(PERMISSION, Assignment(["ops"], quorum=2))
        said = await d.api.click(message, ALICE, message.data_of("Approve"))
        assert said == "Your approval is recorded (1 of 2 approved: alice); it still waits."
        assert not task.done()
        assert await d.api.click(message, BOB, message.data_of("Approve")) == (
            "Answered as bob: Allow"
        )
        assert (await task).answers[0].selected == ("Allow",)
        assert await settled_text(d.api, message) == "It was answered by bob: Allow."


async def test_a_button_from_another_chat_or_message_is_refused() -> None:
    async with desk(chats=(CHAT, CHAT + 1)) as d:
        task, _ = await d.asked(CHOICE)
        await d.api.until(lambda: len(d.api.messages) == 2)
        first, second = d.api.sent()
        assert {first.chat, second.chat} == {CHAT, CHAT + 1}
        forged = Message(first.chat, second.id, first.text, first.keyboard)
        said = await d.api.click(forged, ALICE, first.data_of("npm"))
        assert said == "This button is not from this question's message; nothing changed."
        said = await d.api.click(first, ALICE, first.data_of("npm")[:-1] + "9")
        assert said == "This button does not fit this question; nothing changed."
        assert not task.done()
        await d.api.click(second, ALICE, second.data_of("npm"))
        assert (await task).answers[0].selected == ("npm",)
        for message in (first, second):  # every chat's message shows the outcome
            assert await settled_text(d.api, message) == "It was answered by alice: npm."


async def test_a_failing_bot_api_never_affects_the_ask(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "interaction.notify")
    async with bot_api() as api:
        api.failing = {"sendMessage": 500, "getUpdates": 502}
        relay = Relay()
        backoff = Retry(attempts=3, first=0.01, factor=2.0)
        notifier = TelegramNotifier(
            api.token, [CHAT], users={ALICE: "alice"}, base_url=api.url, retry=backoff
        )
        with provide(relay):
            async with (
                notifier.answering(relay),
                Notifications(relay, [Step(notifier)], retry=QUICK),
            ):
                task = asyncio.get_running_loop().create_task(ask(AskUserQuestionRequest([CHOICE])))
                await api.until(lambda: len(api.called("sendMessage")) == QUICK.attempts)
                await api.until(lambda: len(api.called("getUpdates")) >= 2)
                (question,) = relay.pending()
                page = AskUserQuestionAnswer([AskUserQuestionAnswerItem("pkg", ("npm",))])
                await relay.submit(question.id, page, answerer="alice")
                assert (await task).answers == page.answers
        assert api.messages == {}
    logged = caplog.text
    assert "gave up on a pending notice after 3 attempts: Telegram sendMessage" in logged
    assert "getUpdates failed (NetworkError)" in logged
    assert TOKEN not in logged


async def test_garbage_updates_through_polling_are_dropped_and_the_bot_goes_on() -> None:
    async with desk() as d:
        task, message = await d.asked(CHOICE)
        for junk in (
            "not an update",
            [1, 2],
            {"update_id": "7"},
            {"callback_query": {"id": "x"}},
            {"update_id": 10_000, "message": {"text": "hello"}},
            {"update_id": 10_001, "callback_query": None},
        ):
            await d.api.push(junk)
        said = await d.api.click(message, ALICE, message.data_of("npm"))
        assert said == "Answered as alice: npm"
        assert (await task).answers[0].selected == ("npm",)
        assert len(d.api.answers) == 1  # no junk was answered
        await d.api.until(lambda: d.api.pending_updates() == 0)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


@st.composite
def hostile_clicks(draw: st.DrawFn, ref: str, chat: int, message: int) -> object:
    """Updates that must settle nothing: anything at all, or a click that is wrong in one
    way (data not this bot's, an unmapped user, another chat or message, an action or
    option that does not fit a three-option choice)."""
    kind = draw(st.sampled_from(["json", "data", "user", "place", "action"]))
    if kind == "json":
        return draw(
            JSON | st.fixed_dictionaries({"update_id": st.integers(), "callback_query": JSON})
        )
    user, data, where = ALICE, f"{ref}:o0", (chat, message)
    if kind == "data":
        data = draw(st.text(max_size=70))
    elif kind == "user":
        user = draw(st.integers().filter(lambda n: n not in (ALICE, BOB)))
    elif kind == "place":
        where = draw(st.tuples(st.integers(), st.integers()).filter(lambda p: p != (chat, message)))
    else:
        data = draw(
            st.sampled_from([f"{ref}:o3", f"{ref}:o99", f"{ref}:t0", f"{ref}:s", f"{ref}:x1"])
        )
    return {
        "update_id": draw(st.integers(1, 2**31)),
        "callback_query": {
            "id": draw(st.text(min_size=1, max_size=10)),
            "from": {"id": user, "is_bot": False, "first_name": "P"},
            "message": {"message_id": where[1], "date": 0, "chat": {"id": where[0]}},
            "chat_instance": "1",
            "data": data,
        },
    }


def test_garbage_updates_never_crash_and_never_settle() -> None:
    with asyncio.Runner() as runner:
        stack = contextlib.AsyncExitStack()
        d = runner.run(stack.enter_async_context(desk()))
        task, message = runner.run(d.asked(CHOICE))
        ref = message.data_of("npm").split(":")[0]

        @settings(
            max_examples=150,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture],
        )
        @given(update=hostile_clicks(ref, message.chat, message.id))
        def check(update: object) -> None:
            runner.run(d.notifier.handle_update(d.relay, update))
            assert not task.done()
            assert len(d.relay.pending()) == 1

        check()
        assert message.keyboard is not None
        said = runner.run(d.api.click(message, ALICE, message.data_of("npm")))
        assert said == "Answered as alice: npm"
        assert runner.run(_result(task)).answers[0].selected == ("npm",)
        runner.run(stack.aclose())


def test_click_of_reads_only_well_typed_clicks() -> None:
    good: dict[str, Any] = {
        "update_id": 1,
        "callback_query": {
            "id": "q",
            "from": {"id": 7},
            "message": {"message_id": 3, "chat": {"id": -100}},
            "data": "abcdefgh:o1",
        },
    }
    click = click_of(good)
    assert click is not None
    assert (click.id, click.user, click.chat, click.message, click.data) == (
        "q",
        7,
        -100,
        3,
        "abcdefgh:o1",
    )
    query = good["callback_query"]
    for bad in (
        {**query, "from": {"id": True}},  # a bool is no id
        {**query, "data": "x" * 65},  # longer than Telegram's 64 bytes
        {**query, "message": {"message_id": 3}},
        {**query, "id": ""},
    ):
        assert click_of({"update_id": 1, "callback_query": bad}) is None


def test_only_one_question_with_options_gets_buttons() -> None:
    from interaction.display import present

    free = AskUserQuestionItem("why", "Why?")
    assert telegram_keyboard(present(AskUserQuestionRequest([free])), "abcdefgh") is None
    batch = AskUserQuestionRequest([CHOICE, MULTI])
    assert telegram_keyboard(present(batch), "abcdefgh") is None


def test_telegram_specs_and_users() -> None:
    env = {"TELEGRAM_BOT_TOKEN": TOKEN}
    users = telegram_users_from_specs(["alice=1001", "bob=-1002"], ["alice", "bob"])
    assert users == {1001: "alice", -1002: "bob"}
    (step,) = steps_from_specs(["telegram@5m=5551234,-1009"], env, telegram_users=users)
    assert (step.notifier.name, step.after) == ("telegram", 300.0)
    assert isinstance(step.notifier, TelegramNotifier)
    assert (step.notifier.chats, step.notifier.users) == ((5551234, -1009), users)


@pytest.mark.parametrize(
    ("args", "env", "line"),
    [
        (
            ["--notify", "telegram=5551234"],
            {},
            "--notify telegram needs TELEGRAM_BOT_TOKEN in the environment",
        ),
        (
            ["--notify", "telegram=@mychannel"],
            {"TELEGRAM_BOT_TOKEN": TOKEN},
            "--notify telegram=CHAT_ID[,CHAT_ID...] needs numeric chat ids",
        ),
        (
            ["--telegram-user", "alice=1001"],
            {"TELEGRAM_BOT_TOKEN": TOKEN},
            "--telegram-user needs --notify telegram=CHAT_ID",
        ),
        (
            ["--notify", "telegram=5551234", "--telegram-user", "alice"],
            {"TELEGRAM_BOT_TOKEN": TOKEN},
            "--telegram-user 'alice': write NAME=ID, ID the person's numeric Telegram id",
        ),
        (
            ["--notify", "telegram=1", "--telegram-user", "a=1", "--telegram-user", "b=1"],
            {"TELEGRAM_BOT_TOKEN": TOKEN},
            "--telegram-user: the Telegram id 1 is mapped twice",
        ),
        (
            ["--notify", "telegram=1", "--user", "bob", "--telegram-user", "alice=1001"],
            {"TELEGRAM_BOT_TOKEN": TOKEN},
            "--telegram-user 'alice=1001': alice is not a --user",
        ),
    ],
)
def test_a_bad_telegram_setting_is_one_clear_line_at_start(
    args: list[str], env: dict[str, str], line: str
) -> None:
    result = serve(*args, env=env)
    assert result.returncode == 2
    assert result.stderr == f"interaction: {line}\n"
    assert TOKEN not in result.stderr


async def test_serve_answers_a_click_on_a_question_asked_by_another_process(
    redis_server: RedisServer,
) -> None:
    """``serve --redis ... --notify telegram=CHAT --telegram-user alice=ID``: the question
    an asker in this process put in Redis reaches Telegram, and alice's click answers it."""
    prefix = f"tg{secrets.token_hex(4)}"
    relay = RedisRelay(redis_server.url, prefix=prefix)
    await relay.connect()
    async with contextlib.aclosing(relay), bot_api() as api:
        kept = ("INTERACTION_", "TELEGRAM_")
        env = {k: v for k, v in os.environ.items() if not k.startswith(kept)}
        env |= {"TELEGRAM_BOT_TOKEN": TOKEN, "TELEGRAM_API_URL": api.url}
        async with loopback.serve(
            *("--redis", redis_server.url, "--prefix", prefix),
            *("--notify", f"telegram={CHAT}", "--user", "alice"),
            *("--telegram-user", f"alice={ALICE}"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        ):
            with provide(relay):
                task = asyncio.get_running_loop().create_task(ask(AskUserQuestionRequest([CHOICE])))
                await api.until(lambda: len(api.messages) == 1)
                (message,) = api.sent()
                said = await api.click(message, ALICE, message.data_of("npm"))
                assert said == "Answered as alice: npm"
                assert (await task).answers == (AskUserQuestionAnswerItem("pkg", ("npm",)),)
                assert await settled_text(api, message) == "It was answered by alice: npm."


async def _result(task: asyncio.Task[AskUserQuestionAnswer]) -> AskUserQuestionAnswer:
    return await task
