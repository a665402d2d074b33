"""The A2A bridge across processes: our agent (tests/fixtures/a2a/server.py) on the SDK's
Starlette routes under uvicorn, on a free loopback port, driven by the SDK's client."""

from __future__ import annotations

import asyncio
import json
import secrets
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from a2a.client import Client, ClientConfig, create_client
from a2a.helpers.proto_helpers import get_data_parts, get_message_text, new_data_part, new_text_part
from a2a.server.agent_execution import RequestContext
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import UnsupportedOperationError
from google.protobuf.json_format import MessageToJson

from interaction import (
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    Provenance,
    UserInteractionError,
)
from interaction.a2a import (
    DATA_KEY,
    DEFAULT_TTL,
    MAX_REPLY,
    MAX_REQUEST,
    InteractiveExecutor,
    render_request,
    send_and_answer,
)
from interaction.testing import ScriptedProvider

from .helpers import import_error_without
from .loopback import announced, stop_async

SERVER = str(Path(__file__).parent / "fixtures" / "a2a" / "server.py")
INPUT_REQUIRED = TaskState.TASK_STATE_INPUT_REQUIRED


class Agent:
    """The fixture server in a subprocess, stopped by its PID."""

    def __init__(self, store: Path, key: str, ttl: str = "600") -> None:
        self.store = store
        self.key = key
        self.ttl = ttl
        self.process: asyncio.subprocess.Process | None = None
        self.url = ""

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            SERVER,
            str(self.store),
            stdout=asyncio.subprocess.PIPE,
            env={"INTERACTION_A2A_KEY": self.key, "INTERACTION_A2A_TTL": self.ttl, "PATH": ""},
        )
        self.url = f"http://127.0.0.1:{int(await announced(self.process.stdout, 'PORT ', 60))}"

    async def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            await stop_async(process, 10)


pytestmark = pytest.mark.asyncio(loop_scope="module")


async def started(store: Path) -> AsyncIterator[Agent]:
    agent = Agent(store, secrets.token_hex(32))
    try:
        await agent.start()
        yield agent
    finally:
        await agent.stop()
    assert agent.process is None


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_agent(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Agent]:
    """One server for the tests that do not stop it."""
    async for agent in started(tmp_path_factory.mktemp("tasks")):
        yield agent


@pytest_asyncio.fixture(loop_scope="module")
async def agent(tmp_path: Path) -> AsyncIterator[Agent]:
    """A server of the test's own, which it may stop and start again."""
    async for agent in started(tmp_path):
        yield agent


@pytest_asyncio.fixture(loop_scope="module")
async def client(shared_agent: Agent) -> AsyncIterator[Client]:
    opened = await create_client(shared_agent.url, ClientConfig(streaming=False))
    try:
        yield opened
    finally:
        await opened.close()


def user(text: str = "", *, task: Task | None = None, data: Any = None) -> Message:
    parts = [new_text_part(text)] if text else []
    if data is not None:
        parts.append(new_data_part(data))
    return Message(
        role=Role.ROLE_USER,
        message_id=str(uuid.uuid4()),
        task_id=task.id if task else None,
        context_id=task.context_id if task else None,
        parts=parts,
    )


async def send(client: Client, message: Message) -> Task:
    async for response in client.send_message(SendMessageRequest(message=message)):
        assert response.HasField("task")
        return response.task
    raise AssertionError("no task")


def bridge_data(task: Task) -> dict[str, Any]:
    [data] = [d[DATA_KEY] for d in get_data_parts(task.status.message.parts) if DATA_KEY in d]
    assert isinstance(data, dict)
    return data


def reply(task: Task, answer: Any, state: str | None = None) -> Message:
    state = bridge_data(task)["state"] if state is None else state
    return user(task=task, data={DATA_KEY: {"answer": answer, "state": state}})


def result_text(task: Task | Message) -> str:
    assert isinstance(task, Task)
    assert task.status.state == TaskState.TASK_STATE_COMPLETED, task.status
    return get_message_text(task.status.message)


# ------------------------------------------------------------------ with the client helper


async def test_confirm_suspends_the_task_and_the_reply_resumes_it(client: Client) -> None:
    provider = ScriptedProvider({"confirm": "Yes"})
    card = AgentCard(name="release-agent")
    result = await send_and_answer(client, user("confirm"), provider, agent_card=card)
    assert result_text(result) == "deployed"
    [request] = provider.requests
    assert [(q.id, q.question, [o.label for o in q.options]) for q in request.questions] == [
        ("confirm", "Deploy to production?", ["Yes", "No"])
    ]
    assert isinstance(result, Task)
    provenance = request.provenance
    assert provenance is not None
    assert provenance.asked_at is not None  # the server's time of asking, kept
    assert provenance == Provenance(
        source="release-agent", session=result.context_id, asked_at=provenance.asked_at
    )


async def test_a_batch_with_multi_select_and_other(client: Client) -> None:
    provider = ScriptedProvider({"pkg": "pnpm", "checks": ["lint", "mine"], "name": "Nova"})
    result = await send_and_answer(client, user("batch"), provider)
    assert json.loads(result_text(result)) == [
        ["pkg", ["pnpm"], None],
        ["checks", ["lint"], "mine"],
        ["name", [], "Nova"],
    ]
    asked = provider.last_request.questions
    assert [(q.id, q.header, q.multi_select, q.detail) for q in asked] == [
        ("pkg", "Setup", False, None),
        ("checks", None, True, None),
        ("name", None, False, "Shown on the page."),
    ]


async def test_skips(client: Client) -> None:
    provider = ScriptedProvider({})
    result = await send_and_answer(client, user("batch"), provider)
    assert json.loads(result_text(result)) == [
        ["pkg", [], None],
        ["checks", [], None],
        ["name", [], None],
    ]
    assert result_text(await send_and_answer(client, user("confirm"), provider)) == "kept"


async def test_two_asks_take_two_rounds(client: Client) -> None:
    provider = ScriptedProvider({"deploy": "Yes", "name": "Nova"})
    assert result_text(await send_and_answer(client, user("two"), provider)) == "released Nova"
    assert [r.questions[0].id for r in provider.requests] == ["deploy", "name"]


async def test_a_dismissal_cancels_the_task(client: Client) -> None:
    provider = ScriptedProvider(UserInteractionError("gone", ErrorCode.ASK_CANCELLED))
    result = await send_and_answer(client, user("confirm"), provider)
    assert isinstance(result, Task)
    assert result.status.state == TaskState.TASK_STATE_CANCELED
    stored = await client.get_task(GetTaskRequest(id=result.id))
    assert stored.status.state == TaskState.TASK_STATE_CANCELED


# ---------------------------------------------------------------- replies, by hand


async def test_the_question_message_has_the_wire_json_and_a_text_rendering(client: Client) -> None:
    task = await send(client, user("batch"))
    assert task.status.state == INPUT_REQUIRED
    data = bridge_data(task)
    assert data["request"]["questions"][1] == {
        "id": "checks",
        "question": "Which checks?",
        "options": [{"label": "lint"}, {"label": "types"}],
        "multiSelect": True,
    }
    assert get_message_text(task.status.message) == (
        "The agent needs your answers:\n"
        "1. Setup: Which package manager?\n"
        "   - npm\n"
        "   - pnpm — fast\n"
        "2. Which checks?\n"
        "   - lint\n"
        "   - types\n"
        "   (choose any)\n"
        "3. Name of the release?\n"
        "   Shown on the page.\n"
        "Reply with a data part holding one answer per question (see docs/a2a.md)."
    )


async def test_a_reply_that_does_not_fit_leaves_the_task_waiting(client: Client) -> None:
    task = await send(client, user("confirm"))
    misfit = {"answers": [{"id": "confirm", "selected": ["Maybe"]}]}
    refused = await send(client, reply(task, misfit))
    assert refused.status.state == INPUT_REQUIRED
    error = {
        "code": "BAD_ANSWER",
        "message": "answers[0].selected[0]: question confirm offers no option 'Maybe'",
    }
    assert bridge_data(refused)["error"] == error
    assert bridge_data(refused)["state"] == bridge_data(task)["state"]
    assert get_message_text(refused.status.message).startswith(
        f"Your reply was not accepted (BAD_ANSWER): {error['message']}\n\n"
    )
    fits = {"answers": [{"id": "confirm", "selected": ["Yes"]}]}
    assert result_text(await send(client, reply(refused, fits))) == "deployed"


async def test_a_reply_for_another_task_or_a_forged_state_is_refused(client: Client) -> None:
    first = await send(client, user("confirm"))
    second = await send(client, user("confirm"))
    yes = {"answers": [{"id": "confirm", "selected": ["Yes"]}]}
    crossed = await send(client, reply(second, yes, state=bridge_data(first)["state"]))
    assert crossed.status.state == INPUT_REQUIRED
    assert bridge_data(crossed)["error"] == {
        "code": "BAD_ANSWER",
        "message": "reply: interaction.state: belongs to another task's question",
    }
    body, _, _ = bridge_data(second)["state"].partition(".")
    forged = await send(client, reply(second, yes, state=f"{body}.AAAA"))
    assert bridge_data(forged)["error"]["message"] == (
        "reply: interaction.state: is not a state this server issued"
    )
    assert result_text(await send(client, reply(second, yes))) == "deployed"
    assert result_text(await send(client, reply(first, yes))) == "deployed"


async def test_an_earlier_questions_state_is_refused(client: Client) -> None:
    task = await send(client, user("two"))
    old = bridge_data(task)["state"]
    later = await send(client, reply(task, {"answers": [{"id": "deploy", "selected": ["Yes"]}]}))
    assert bridge_data(later)["request"]["questions"][0]["id"] == "name"
    again = await send(
        client, reply(later, {"answers": [{"id": "name", "selected": [], "custom": "x"}]}, old)
    )
    assert bridge_data(again)["error"]["message"] == (
        "reply: interaction.state: belongs to an earlier question of this task"
    )


async def test_plain_text_answers_a_single_question_but_not_a_batch(client: Client) -> None:
    task = await send(client, user("confirm"))
    assert result_text(await send(client, user("yes", task=task))) == "deployed"
    batch = await send(client, user("batch"))
    refused = await send(client, user("npm", task=batch))
    assert refused.status.state == INPUT_REQUIRED
    assert bridge_data(refused)["error"]["message"] == (
        "reply: interaction: the question is a batch of 3: reply with a data part"
    )


async def test_reply_size_limit_at_the_limit_and_one_past_it(client: Client) -> None:
    task = await send(client, user("batch"))
    state = bridge_data(task)["state"]

    def sized(length: int) -> dict[str, Any]:
        item = {"id": "name", "selected": [], "custom": ""}
        data = {"answer": {"answers": [item]}, "state": state}
        item["custom"] = "x" * (length - len(json.dumps(data, separators=(",", ":"))))
        return data

    over = await send(client, user(task=task, data={DATA_KEY: sized(MAX_REPLY + 1)}))
    assert bridge_data(over)["error"]["message"] == (
        f"interaction: the reply's data is longer than {MAX_REPLY} characters"
    )
    at = await send(client, user(task=task, data={DATA_KEY: sized(MAX_REPLY)}))
    assert bridge_data(at)["error"]["message"].startswith("answers: ")  # read, then checked
    text = await send(client, user("x" * (MAX_REPLY + 1), task=await send(client, user("confirm"))))
    assert (
        bridge_data(text)["error"]["message"] == f"reply: text: longer than {MAX_REPLY} characters"
    )


async def test_a_restarted_server_resumes_with_the_same_key(agent: Agent) -> None:
    yes = {"answers": [{"id": "deploy", "selected": ["Yes"]}]}
    async with await create_client(agent.url, ClientConfig(streaming=False)) as client:
        task = await send(client, user("two"))
        task = await send(client, reply(task, yes))
    await agent.stop()
    await agent.start()
    name = {"answers": [{"id": "name", "selected": [], "custom": "Nova"}]}
    async with await create_client(agent.url, ClientConfig(streaming=False)) as client:
        assert result_text(await send(client, reply(task, name))) == "released Nova"


async def test_a_server_with_another_key_does_not_trust_the_state(agent: Agent) -> None:
    async with await create_client(agent.url, ClientConfig(streaming=False)) as client:
        task = await send(client, user("confirm"))
    await agent.stop()
    agent.key = secrets.token_hex(32)
    await agent.start()
    yes = {"answers": [{"id": "confirm", "selected": ["Yes"]}]}
    async with await create_client(agent.url, ClientConfig(streaming=False)) as client:
        failed = await send(client, reply(task, yes))
    assert failed.status.state == TaskState.TASK_STATE_FAILED
    assert get_message_text(failed.status.message) == (
        "BAD_REQUEST: the task's question state is not one this server issued"
    )


async def test_a_reply_after_the_question_expired_fails_the_task(agent: Agent) -> None:
    await agent.stop()
    agent.ttl = "1e-9"  # every question has expired by the time its reply comes
    await agent.start()
    yes = {"answers": [{"id": "confirm", "selected": ["Yes"]}]}
    async with await create_client(agent.url, ClientConfig(streaming=False)) as client:
        task = await send(client, user("confirm"))
        failed = await send(client, reply(task, yes))
    assert failed.status.state == TaskState.TASK_STATE_FAILED
    assert get_message_text(failed.status.message) == (
        "ASK_TIMEOUT: the question expired before the reply came"
    )


async def test_two_replies_at_once_complete_the_task_once(
    client: Client, shared_agent: Agent
) -> None:
    """The fixture holds the first reply's run until the second reply has reached the
    server, so the second waits on the task while the first finishes it."""
    yes = {"answers": [{"id": "confirm", "selected": ["Yes"]}]}
    executed = []
    for _ in range(5):
        task = await send(client, user("gated"))
        both = await asyncio.gather(
            send(client, reply(task, yes)), send(client, reply(task, yes)), return_exceptions=True
        )
        refusal = f"Task {task.id} is in terminal state: TASK_STATE_COMPLETED"
        for sent in both:  # the task as the first reply left it, or the SDK's refusal
            if isinstance(sent, Task):
                assert result_text(sent) == "deployed"
            else:
                assert isinstance(sent, UnsupportedOperationError), sent
                assert str(sent) == refusal
        with pytest.raises(UnsupportedOperationError) as late:
            await send(client, reply(task, yes))
        assert str(late.value) == refusal
        stored = await client.get_task(GetTaskRequest(id=task.id))
        assert result_text(stored) == "deployed"
        assert (shared_agent.store / f"{task.id}.runs").read_text() == "runs\n" * 2
        executed.append((shared_agent.store / f"{task.id}.executes").read_text().count("\n"))
        assert executed[-1] in (2, 3)
    assert 3 in executed  # a second reply reached the executor after the task completed


async def test_a_reply_to_a_task_that_waits_for_no_question_fails_it(
    client: Client, shared_agent: Agent
) -> None:
    """A task whose first run never ended (its server stopped in its midst) is never run
    again by a message."""
    task = Task(id=str(uuid.uuid4()), context_id=str(uuid.uuid4()))
    task.status.state = TaskState.TASK_STATE_SUBMITTED
    task.history.append(user("gated", task=task))
    (shared_agent.store / f"{task.id}.json").write_text(MessageToJson(task), "utf-8")
    failed = await send(client, user("yes", task=task))
    assert failed.status.state == TaskState.TASK_STATE_FAILED
    assert get_message_text(failed.status.message) == (
        "BAD_ANSWER: the task is not waiting for a reply to a question"
    )
    error = {"code": "BAD_ANSWER", "message": "the task is not waiting for a reply to a question"}
    assert bridge_data(failed) == {"error": error}
    assert not (shared_agent.store / f"{task.id}.runs").exists()


async def test_the_executor_refuses_a_short_key_and_a_ttl_that_is_not_positive() -> None:
    async def work(context: RequestContext, message: Message) -> str:
        return "done"

    with pytest.raises(ValueError, match=r"^key must be at least 16 bytes$"):
        InteractiveExecutor(work, key=b"x" * 15)
    with pytest.raises(ValueError, match=r"^ttl must be positive$"):
        InteractiveExecutor(work, key=b"x" * 16, ttl=0)
    assert InteractiveExecutor(work, key=b"x" * 16).ttl == DEFAULT_TTL


async def test_a_task_cancelled_while_it_waits_takes_no_reply(client: Client) -> None:
    task = await send(client, user("confirm"))
    cancelled = await client.cancel_task(CancelTaskRequest(id=task.id))
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    with pytest.raises(Exception, match="terminal"):
        await send(client, reply(task, {"answers": [{"id": "confirm", "selected": ["Yes"]}]}))


# --------------------------------------------------------- what the client refuses


async def test_a_hostile_question_is_refused_by_the_client(client: Client) -> None:
    provider = ScriptedProvider({})
    with pytest.raises(UserInteractionError) as caught:
        await send_and_answer(client, user("hostile"), provider)
    assert (caught.value.code, caught.value.message) == (
        ErrorCode.BAD_REQUEST,
        "questions[0].question: contains control character U+001B",
    )
    assert provider.requests == []


async def test_a_refused_reply_is_a_bad_answer_for_the_caller(client: Client) -> None:
    provider = ScriptedProvider({"q": "Yes"})
    with pytest.raises(UserInteractionError) as caught:
        await send_and_answer(client, user("refusing"), provider)
    assert (caught.value.code, caught.value.message) == (
        ErrorCode.BAD_ANSWER,
        "the agent refused the reply: not today",
    )
    assert len(provider.requests) == 1


async def test_question_size_limit_at_the_limit_and_one_past_it(client: Client) -> None:
    provider = ScriptedProvider({})
    with pytest.raises(UserInteractionError) as caught:
        await send_and_answer(client, user(f"sized {MAX_REQUEST + 1}"), provider)
    assert caught.value.message == (
        f"interaction: the question's data is longer than {MAX_REQUEST} characters"
    )
    assert provider.requests == []
    result = await send_and_answer(client, user(f"sized {MAX_REQUEST}"), provider)
    assert isinstance(result, Task)
    assert result.status.state == TaskState.TASK_STATE_FAILED  # "s" is no state it issued
    assert len(provider.last_request.questions[0].detail or "") > MAX_REQUEST - 100


async def test_the_text_rendering_of_one_question() -> None:
    request = AskUserQuestionRequest(
        [AskUserQuestionItem("a", "Deploy?", options=[AskUserQuestionOption("Yes")])]
    )
    assert render_request(request) == (
        "The agent needs your answer:\nDeploy?\n   - Yes\n"
        "Reply with your answer as text, or with a data part (see docs/a2a.md)."
    )


async def test_without_the_sdk_the_import_error_names_the_extra() -> None:
    assert (
        import_error_without("a2a", "interaction.a2a")
        == 'interaction.a2a needs the A2A SDK: pip install "interaction-seam[a2a]"'
    )
