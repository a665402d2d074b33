"""Durable asks in DBOS workflows (interaction.integrations.dbos), across real processes.

Two set-ups: PostgreSQL holding both DBOS's system database and the relay (one server), and
SQLite for DBOS with a Redis relay. A worker process runs one workflow that asks one
question; the test process plays the page (a relay of its own) and the operator (a
``DBOSClient``): it kills the worker with SIGKILL while the workflow waits, answers while no
worker runs, starts a new worker, cancels a workflow, sends messages that are not ours.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest
from dbos import DBOSClient

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    ask,
    provide,
)
from interaction.integrations.dbos import TOPIC_PREFIX, DBOSProvider
from interaction.postgres import PostgresRelay
from interaction.redis import RedisRelay
from interaction.relay import NOT_PENDING, RelayBackend, RelayEvent

from .helpers import import_error_without
from .postgres_server import PostgresServer, postgres_server
from .redis_server import RedisServer

__all__ = ["postgres_server"]  # a fixture

Item = AskUserQuestionAnswerItem
Answer = AskUserQuestionAnswer
WAIT = 60.0  # the bound on any one wait (DBOS starts slowly on a loaded machine), never a pause

# A worker: launches DBOS (which recovers this executor's pending workflows on this loop),
# starts the workflow (or takes up the recovered one), prints its result as one JSON line.
WORKER = r"""
import asyncio, json, logging, sys, time
from dbos import DBOS, SetWorkflowID
import interaction
from interaction.integrations.dbos import DBOSProvider
from interaction.policies import TimeoutPolicy

config = json.loads(sys.argv[1])
logging.basicConfig(stream=sys.stderr, level=logging.ERROR)
logging.getLogger("interaction.integrations.dbos").setLevel(logging.WARNING)
if config["relay"] == "redis":
    from interaction.redis import RedisRelay
    relay = RedisRelay(config["relay_url"], prefix=config["space"], lease_ttl=1)
else:
    from interaction.postgres import PostgresRelay
    relay = PostgresRelay(config["relay_url"], schema=config["space"], lease_ttl=1)
timeout = TimeoutPolicy(config["timeout"]) if config["timeout"] else None
provider = DBOSProvider(relay, timeout=timeout, poll=0.1)

@DBOS.workflow()
async def review(text: str) -> str:
    with interaction.provide(provider):
        try:
            seconds = config["signal_timeout"]
            signal = interaction.AbortSignal.timeout(seconds) if seconds else None
            name = await interaction.ask_text(text, id="q", signal=signal)
        except interaction.UserInteractionError as error:
            return f"error {error.code}"
    return f"answer {name}"

async def main():
    settings = {"name": "interaction-dbos-test", "system_database_url": config["dbos_url"],
                "log_level": "ERROR", "notification_listener_polling_interval_sec": 0.05}
    if config["dbos_schema"]:
        settings["dbos_system_schema"] = config["dbos_schema"]
    DBOS(config=settings)
    DBOS.launch()
    launched = time.monotonic()
    if config["start"]:
        with SetWorkflowID(config["workflow"]):
            handle = await DBOS.start_workflow_async(review, "Who ships it?")
    else:
        handle = await DBOS.retrieve_workflow_async(config["workflow"])
    try:
        result = await handle.get_result()
    except Exception as error:
        print(json.dumps({"raised": type(error).__name__}), flush=True)
    else:
        print(json.dumps({"result": result}), flush=True)
    print(time.monotonic() - launched, file=sys.stderr, flush=True)  # how long it took
    await asyncio.to_thread(sys.stdin.read)  # a live worker, until the test lets it stop
    await relay.aclose()
    DBOS.destroy()

asyncio.run(main())
"""


@dataclass
class Setup:
    """Where DBOS keeps its system database and where the relay keeps the questions."""

    name: str
    dbos_url: str
    dbos_schema: str | None
    relay: str  # "postgres" or "redis"
    relay_url: str
    space: str  # the relay's schema or prefix
    opened: list[RelayBackend | DBOSClient] = field(default_factory=list)

    def worker(
        self,
        workflow: str,
        *,
        start: bool,
        timeout: float | None = None,
        signal_timeout: float | None = None,
    ) -> list[str]:
        config = {
            "dbos_url": self.dbos_url,
            "dbos_schema": self.dbos_schema,
            "relay": self.relay,
            "relay_url": self.relay_url,
            "space": self.space,
            "workflow": workflow,
            "start": start,
            "timeout": timeout,
            "signal_timeout": signal_timeout,
        }
        return [sys.executable, "-c", WORKER, json.dumps(config)]

    def page(self) -> RelayBackend:
        """A relay of the test process's own, as a web host's (closed after the test)."""
        page: RelayBackend
        if self.relay == "redis":
            page = RedisRelay(self.relay_url, prefix=self.space)
        else:
            page = PostgresRelay(self.relay_url, schema=self.space)
        self.opened.append(page)
        return page

    def client(self) -> DBOSClient:
        """An operator's DBOS client (destroyed after the test)."""
        client = DBOSClient(
            system_database_url=self.dbos_url, dbos_system_schema=self.dbos_schema or "dbos"
        )
        self.opened.append(client)
        return client

    async def close(self) -> None:
        for opened in self.opened:
            if isinstance(opened, DBOSClient):
                opened.destroy()
            else:
                await opened.aclose()

    def deliveries(self, workflow: str) -> int:
        """How many messages DBOS holds for ``workflow`` (consumed ones stay, marked)."""
        query = "SELECT count(*) FROM {}notifications WHERE destination_uuid = {}"
        if self.dbos_schema is None:
            path = self.dbos_url.removeprefix("sqlite:///")
            with contextlib.closing(sqlite3.connect(path)) as db:
                row = db.execute(query.format("", "?"), (workflow,)).fetchone()
        else:
            with psycopg.connect(self.dbos_url) as db:
                sql = query.format(f'"{self.dbos_schema}".', "%s")
                row = db.execute(sql.encode(), (workflow,)).fetchone()
        assert row is not None
        return int(row[0])


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with RedisServer(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture(params=["postgres", "sqlite-redis"])
async def setup(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Setup]:
    space = f"s{secrets.token_hex(5)}"
    if request.param == "postgres":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        relay = PostgresRelay(server.url, schema=space)
        await relay.migrate()
        await relay.aclose()
        made = Setup("postgres", server.url, f"dbos_{space}", "postgres", server.url, space)
    else:
        redis: RedisServer = request.getfixturevalue("redis_server")
        dbos_url = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
        made = Setup("sqlite-redis", dbos_url, None, "redis", redis.url, space)
    try:
        yield made
    finally:
        await made.close()


@contextlib.asynccontextmanager
async def process(argv: list[str]) -> AsyncIterator[asyncio.subprocess.Process]:
    """A worker process, SIGKILLed by its PID on the way out if it still runs."""
    child = await asyncio.create_subprocess_exec(
        *argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        yield child
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()


async def outcome(child: asyncio.subprocess.Process, *, stop: bool = True) -> dict[str, str]:
    """The worker's one JSON line; then (``stop``) it is let stop, and exits cleanly."""
    assert child.stdout is not None
    assert child.stderr is not None
    line = await asyncio.wait_for(child.stdout.readline(), WAIT)
    if not line:
        raise AssertionError((await child.stderr.read()).decode())
    if stop:
        await stopped(child)
    parsed: dict[str, str] = json.loads(line)
    return parsed


async def stopped(child: asyncio.subprocess.Process) -> None:
    """Let a worker that printed its outcome stop (it closes its relay and DBOS)."""
    assert child.stdin is not None
    child.stdin.close()
    assert await asyncio.wait_for(child.wait(), WAIT) == 0


async def next_event(events: AsyncGenerator[RelayEvent, None]) -> RelayEvent:
    return await asyncio.wait_for(anext(events), WAIT)


def answer(text: str) -> Answer:
    return Answer([Item("q", custom=text)])


async def published(client: DBOSClient, workflow: str) -> dict[str, Any]:
    """What the workflow's publish step recorded (polled until it is recorded)."""
    async with asyncio.timeout(WAIT):
        while True:
            steps = await asyncio.to_thread(client.list_workflow_steps, workflow)
            for step in steps:
                if step["function_name"] == "interaction.publish" and step["output"]:
                    output: dict[str, Any] = step["output"]
                    return output
            await asyncio.sleep(0.05)


async def published_key(client: DBOSClient, workflow: str) -> str:
    key: str = (await published(client, workflow))["key"]
    return key


async def test_a_worker_killed_while_waiting_is_recovered_and_gets_the_answer_given_meanwhile(
    setup: Setup,
) -> None:
    page = setup.page()
    start = await page.snapshot()
    events = page.events(start.position)
    workflow = f"wf-{secrets.token_hex(4)}"
    async with process(setup.worker(workflow, start=True)) as first:
        requested = await next_event(events)
        assert requested.question is not None
        assert requested.question.request.questions[0].question == "Who ships it?"
        with pytest.raises(UserInteractionError) as bad:
            await page.submit(requested.id, Answer([Item("other", custom="x")]))
        assert bad.value.code == ErrorCode.BAD_ANSWER  # refused at the page, still pending
        first.kill()  # SIGKILL while the workflow waits in DBOS.recv
        await first.wait()
    await page.submit(requested.id, answer("ship it"))  # no worker runs
    resolved = await next_event(events)
    assert resolved == RelayEvent("resolved", requested.id, outcome="answered")
    async with process(setup.worker(workflow, start=False)) as second:
        assert await outcome(second) == {"result": "answer ship it"}
    # Asked once: the recovered workflow reused the step's output and re-attached by key.
    after = page.events(resolved.position)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.5):
            await anext(after)
    await after.aclose()
    # Delivered once, and a second delivery under the same idempotency key is refused.
    client = setup.client()
    key = await published_key(client, workflow)
    assert setup.deliveries(workflow) == 1
    body = {"interaction": "delivery", "key": key, "outcome": "answered", "answer": "{}"}
    client.send(workflow, body, TOPIC_PREFIX + key, idempotency_key=key)
    assert setup.deliveries(workflow) == 1
    status = client.retrieve_workflow(workflow).get_status()
    assert (status.status, status.output) == ("SUCCESS", "answer ship it")
    await events.aclose()


async def test_a_cancelled_workflow_withdraws_its_question_from_every_page(setup: Setup) -> None:
    page = setup.page()
    events = page.events((await page.snapshot()).position)
    workflow = f"wf-{secrets.token_hex(4)}"
    async with process(setup.worker(workflow, start=True)) as worker:
        requested = await next_event(events)
        client = setup.client()
        await asyncio.to_thread(client.cancel_workflow, workflow)
        assert await outcome(worker, stop=False) == {"raised": "DBOSAwaitedWorkflowCancelledError"}
        assert await next_event(events) == RelayEvent("resolved", requested.id, outcome="aborted")
        await stopped(worker)
    with pytest.raises(UserInteractionError) as late:
        await page.submit(requested.id, answer("too late"))
    assert (late.value.code, late.value.message) == (
        NOT_PENDING,
        f"question {requested.id!r} is not pending (withdrawn by the asker)",
    )
    assert client.retrieve_workflow(workflow).get_status().status == "CANCELLED"
    await events.aclose()


async def test_the_rules_timeout_is_a_durable_recv_timeout_that_withdraws_the_question(
    setup: Setup,
) -> None:
    page = setup.page()
    events = page.events((await page.snapshot()).position)
    workflow = f"wf-{secrets.token_hex(4)}"
    async with process(setup.worker(workflow, start=True, timeout=1.0)) as worker:
        requested = await next_event(events)
        assert await next_event(events) == RelayEvent("resolved", requested.id, outcome="aborted")
        assert await outcome(worker) == {"result": f"error {ErrorCode.ASK_TIMEOUT}"}
    assert (await page.snapshot()).questions == ()
    await events.aclose()


@pytest.mark.parametrize("source", ["policy", "signal"])
async def test_a_deadline_that_passed_while_no_worker_ran_is_not_waited_for_again(
    setup: Setup, source: str
) -> None:
    """The rules' timeout, or the request's own timeout signal (whichever ends first), is
    recorded as a deadline: a workflow recovered after it does not wait again."""
    page = setup.page()
    events = page.events((await page.snapshot()).position)
    workflow = f"wf-{secrets.token_hex(4)}"
    timeout = 3.0
    timeouts = {"timeout": timeout} if source == "policy" else {"signal_timeout": timeout}
    async with process(setup.worker(workflow, start=True, **timeouts)) as first:
        requested = await next_event(events)
        deadline = (await published(setup.client(), workflow))["deadline"]
        first.kill()
        await first.wait()
    await asyncio.sleep(max(0.0, deadline - time.time()))  # the deadline passes, no worker runs
    assert await page.lookup(requested.id) is not None  # nobody withdrew it yet
    # The new worker's workflow builds a new signal of its own: its full timeout is not waited.
    async with process(setup.worker(workflow, start=False, **timeouts)) as second:
        assert second.stderr is not None
        assert await outcome(second, stop=False) == {"result": f"error {ErrorCode.ASK_TIMEOUT}"}
        took = float((await second.stderr.readline()).decode())
        await stopped(second)
    # The recovered recv did not wait the policy's seconds again: its deadline was recorded.
    assert took < timeout
    assert await next_event(events) == RelayEvent("resolved", requested.id, outcome="aborted")
    await events.aclose()


async def test_messages_that_are_not_a_delivery_are_logged_and_ignored(setup: Setup) -> None:
    page = setup.page()
    events = page.events((await page.snapshot()).position)
    workflow = f"wf-{secrets.token_hex(4)}"
    async with process(setup.worker(workflow, start=True)) as worker:
        assert worker.stderr is not None
        requested = await next_event(events)
        client = setup.client()
        key = await published_key(client, workflow)
        topic = TOPIC_PREFIX + key
        shape = {"interaction": "delivery", "key": key, "outcome": "answered"}
        foreign: list[tuple[object, str]] = [
            ("yes", "not an object but str"),
            ({**shape, "answer": '{"answers":[]}', "extra": 1}, "not the shape of a delivery"),
            ({**shape, "key": key + "x", "answer": "{}"}, "a delivery for another question"),
            ({**shape, "outcome": "won"}, "an unknown outcome"),
            ({**shape, "answer": "x" * 1_000_001}, "an answer that is not text of at most"),
            # BAD_ANSWER never reaches the workflow: an answer to another question id.
            ({**shape, "answer": '{"answers":[{"id":"other","custom":"forged"}]}'}, "does not fit"),
        ]
        for message, _ in foreign:
            await asyncio.to_thread(client.send, workflow, message, topic)
        for _, said in foreign:
            line = (await asyncio.wait_for(worker.stderr.readline(), WAIT)).decode()
            assert f"question {key}: " in line, line
            assert said in line, line
        assert await page.lookup(requested.id) is not None  # still waiting
        await page.submit(requested.id, answer("the real one"))
        assert await outcome(worker) == {"result": "answer the real one"}
    await events.aclose()


async def test_outside_a_workflow_an_ask_is_a_bad_request(redis_server: RedisServer) -> None:
    relay = RedisRelay(redis_server.url, prefix=f"s{secrets.token_hex(5)}")
    request = AskUserQuestionRequest([AskUserQuestionItem("q", "Who?")])
    with provide(DBOSProvider(relay)), pytest.raises(UserInteractionError) as error:
        await ask(request)
    assert (error.value.code, error.value.message) == (
        ErrorCode.BAD_REQUEST,
        "a DBOSProvider asks only inside a @DBOS.workflow() (register it there with"
        " interaction.provide; an integration handed it as provider= asks from a fresh context)",
    )
    assert (await relay.snapshot()).questions == ()
    await relay.aclose()
    with pytest.raises(ValueError, match="poll must be a positive number of seconds, got 0"):
        DBOSProvider(relay, poll=0)


def test_without_dbos_the_import_names_the_extra() -> None:
    assert import_error_without("dbos", "interaction.integrations.dbos") == (
        'interaction.integrations.dbos needs DBOS: pip install "interaction-seam[dbos]"'
    )


# A worker running a pydantic-ai agent made durable by DBOSDurability: its model (a scripted
# FunctionModel, each call a DBOS step that notes itself in a file) asks to run ``deploy``,
# which needs an approval, then asks the person a question with the ask_user_question tool,
# then answers.
AGENT_WORKER = r"""
import asyncio, json, sys
from dbos import DBOS, SetWorkflowID
from pydantic_ai import Agent
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import FunctionModel
import interaction
from interaction.integrations.dbos import DBOSProvider
from interaction.integrations.pydantic_ai import approval_handler, ask_user_toolset
from interaction.postgres import PostgresRelay

config = json.loads(sys.argv[1])
relay = PostgresRelay(config["relay_url"], schema=config["space"], lease_ttl=1)
provider = DBOSProvider(relay, poll=0.1)

def model(messages, info):
    with open(config["calls"], "a") as calls:
        calls.write("call\n")
    returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
    if returned and returned[0].tool_name == "ask_user_question":
        return ModelResponse(parts=[TextPart(f"done: {returned[0].content}")])
    if returned:
        question = {"id": "name", "question": "Release name?"}
        call = ToolCallPart("ask_user_question", {"questions": [question]}, tool_call_id="c2")
        return ModelResponse(parts=[call])
    return ModelResponse(parts=[ToolCallPart("deploy", {"target": "prod"}, tool_call_id="c1")])

agent = Agent(
    FunctionModel(model),
    name="releaser",
    toolsets=[ask_user_toolset()],
    capabilities=[
        DBOSDurability(),
        HandleDeferredToolCalls(handler=approval_handler()),
    ],
)

@agent.tool_plain(requires_approval=True)
def deploy(target: str) -> str:
    return f"deployed to {target}"

@DBOS.workflow()
async def release() -> str:
    with interaction.provide(provider):  # the workflow's context: DBOS's own lives there
        return (await agent.run("release")).output

async def main():
    DBOS(config={"name": "interaction-dbos-agent", "system_database_url": config["dbos_url"],
                 "dbos_system_schema": config["dbos_schema"], "log_level": "ERROR",
                 "notification_listener_polling_interval_sec": 0.05})
    DBOS.launch()
    if config["start"]:
        with SetWorkflowID(config["workflow"]):
            handle = await DBOS.start_workflow_async(release)
    else:
        handle = await DBOS.retrieve_workflow_async(config["workflow"])
    print(json.dumps({"output": await handle.get_result()}), flush=True)
    await asyncio.to_thread(sys.stdin.read)  # a live worker, until the test lets it stop
    await relay.aclose()
    DBOS.destroy()

asyncio.run(main())
"""


async def test_a_dbos_agents_approval_and_question_are_durable_through_a_kill(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    space = f"s{secrets.token_hex(5)}"
    page = PostgresRelay(postgres_server.url, schema=space)
    await page.migrate()
    events = page.events((await page.snapshot()).position)
    calls = tmp_path / "model-calls"
    config = {
        "dbos_url": postgres_server.url,
        "dbos_schema": f"dbos_{space}",
        "relay_url": postgres_server.url,
        "space": space,
        "workflow": f"wf-{secrets.token_hex(4)}",
        "calls": str(calls),
    }

    def worker(start: bool) -> list[str]:
        return [sys.executable, "-c", AGENT_WORKER, json.dumps({**config, "start": start})]

    try:
        async with process(worker(True)) as first:
            approval = await next_event(events)
            assert approval.question is not None
            asked = approval.question.request.questions[0]
            assert asked.question == "Allow deploy to run?"
            first.kill()  # SIGKILL while the approval waits
            await first.wait()
        await page.submit(approval.id, Answer([Item(asked.id, selected=["Allow"])]))
        assert (await next_event(events)).kind == "resolved"
        async with process(worker(False)) as second:
            question = await next_event(
                events
            )  # the next question: the approval was not asked again
            assert question.question is not None
            assert question.question.request.questions[0].question == "Release name?"
            await page.submit(question.id, Answer([Item("name", custom="v2")]))
            assert await outcome(second) == {
                "output": 'done: {"answers":[{"id":"name","selected":[],"custom":"v2"}]}'
            }
        # The model's first call was recorded as a step: the recovered run did not call it again.
        assert calls.read_text().count("call") == 3
    finally:
        await events.aclose()
        await page.aclose()
