"""The AG-UI endpoint and provider (interaction.agui, docs/agui.md).

The official TypeScript client (@ag-ui/client, which the tests install with ``npm ci`` in
tests/agui_client on first use) drives the endpoint over HTTP/SSE in a server process whose
interrupts survive a restart (the same secret, a Redis spent-state store); the rest runs in
process over httpx.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import os
import selectors
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from ag_ui.core import RunAgentInput
from starlette.applications import Starlette
from starlette.routing import Mount

import interaction
from interaction import (
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    PlanReviewIntent,
    UserInteractionError,
)
from interaction._errors import MISMATCH_MESSAGE
from interaction.agui import (
    MAX_INPUT_BYTES,
    MAX_INTERRUPT_ID,
    MAX_PAYLOAD,
    AGUIEndpoint,
    AGUIInterrupts,
    interrupt_reason,
)
from interaction.agui._interrupts import EXPIRED, FORGED, NO_PAYLOAD, OTHER_THREAD, SPENT
from interaction.relay import Relay
from interaction.spent import MemorySpentStore, SpentStoreUnavailable
from interaction.web import create_app
from interaction.wire import answer_schema
from tests.helpers import import_error_without
from tests.loopback import LoopbackProcess, accepts
from tests.redis_server import RedisServer, redis_server

__all__ = ["redis_server"]

ROOT = Path(__file__).resolve().parent
CLIENT = ROOT / "agui_client"
TOKEN = "agui-token-0123456789"
SECRET = "agui-secret-" + "0" * 32
REPLY_SECONDS = 60.0

JSON = dict[str, Any]


# --------------------------------------------------------------------------- processes


class EndpointProcess(LoopbackProcess):
    """tests/fixtures/agui/server.py on uvicorn, its spent states in ``redis_url``."""

    def __init__(self, redis_url: str) -> None:
        super().__init__()
        self.redis_url = redis_url

    @property
    def name(self) -> str:
        return "the AG-UI endpoint"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def spawn(self) -> subprocess.Popen[bytes]:
        env = {
            **os.environ,
            "AGUI_PORT": str(self.port),
            "AGUI_TOKEN": TOKEN,
            "AGUI_SECRET": SECRET,
            "AGUI_REDIS_URL": self.redis_url,
        }
        script = str(ROOT / "fixtures" / "agui" / "server.py")
        return subprocess.Popen([sys.executable, script], env=env, stdout=subprocess.DEVNULL)

    def ready(self) -> bool:
        return accepts(self.port)


class Driver:
    """tests/agui_client/drive.mjs: one thread of the official client, a command at a time."""

    def __init__(self, url: str, thread: str) -> None:
        node = shutil.which("node")
        assert node is not None  # the client fixture found it
        self.process = subprocess.Popen(
            [node, str(CLIENT / "drive.mjs"), url, TOKEN, thread],
            cwd=CLIENT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.selector = selectors.DefaultSelector()
        assert self.process.stdout is not None
        self.selector.register(self.process.stdout, selectors.EVENT_READ)

    def send(self, command: JSON) -> JSON:
        """The client's report of one run (bounded: a driver that hangs fails the test)."""
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None
        assert stdout is not None
        stdin.write(json.dumps(command).encode() + b"\n")
        stdin.flush()
        if not self.selector.select(REPLY_SECONDS):
            raise AssertionError(f"the client did not report within {REPLY_SECONDS}s")
        line = stdout.readline()
        assert line, "the client ended without a report"
        return cast(JSON, json.loads(line))

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        assert self.process.stdout is not None
        self.process.stdout.close()
        self.selector.close()


@pytest.fixture(scope="session")
def client() -> Path:
    """tests/agui_client with its node_modules: ``npm ci`` on first use, from the lockfile.

    Under a lock on the folder, as several test workers may need it at once.
    """
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        if os.environ.get("CI"):
            pytest.fail("node and npm are required under CI for the AG-UI client tests")
        pytest.skip("node and npm are not installed")
    folder = os.open(CLIENT, os.O_RDONLY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        if not (CLIENT / "node_modules" / "@ag-ui" / "client").is_dir():
            subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--silent"],
                cwd=CLIENT,
                check=True,
                capture_output=True,
                timeout=300,
            )
    finally:
        os.close(folder)  # and with it the lock
    return CLIENT


@pytest.fixture
def endpoint(redis_server: RedisServer) -> Iterator[EndpointProcess]:
    """An endpoint of the test's own, for a test that restarts it."""
    with EndpointProcess(redis_server.url) as process:
        yield process


@pytest.fixture(scope="module")
def shared_endpoint(redis_server: RedisServer) -> Iterator[EndpointProcess]:
    """One endpoint for the tests that do not restart it: each runs threads of its own, and
    an interrupt is bound to its thread and spent once, so none sees another's."""
    with EndpointProcess(redis_server.url) as process:
        yield process


def opening(endpoint: EndpointProcess) -> Iterator[Callable[[str], Driver]]:
    """A fixture's body: opens a driver of ``endpoint`` per thread, closes them after."""
    opened: list[Driver] = []

    def open_driver(thread: str) -> Driver:
        driver = Driver(endpoint.url, thread)
        opened.append(driver)
        return driver

    yield open_driver
    for driver in opened:
        driver.close()


@pytest.fixture
def drivers(shared_endpoint: EndpointProcess, client: Path) -> Iterator[Callable[[str], Driver]]:
    yield from opening(shared_endpoint)


@pytest.fixture
def own_drivers(endpoint: EndpointProcess, client: Path) -> Iterator[Callable[[str], Driver]]:
    yield from opening(endpoint)


def only_interrupt(report: JSON) -> JSON:
    assert report["outcome"] == "interrupt", report
    (interrupt,) = report["interrupts"]
    assert report["pending"] == [interrupt["id"]]
    return cast(JSON, interrupt)


# ------------------------------------------------------------ the official client, HTTP/SSE


def test_the_client_answers_interrupts_across_a_restart_and_a_replay_is_refused(
    endpoint: EndpointProcess, own_drivers: Callable[[str], Driver]
) -> None:
    client = own_drivers("thread-1")
    permission = only_interrupt(client.send({"op": "run"}))
    assert permission["reason"] == "human_approval"
    assert permission["message"] == "Allow shell to run with this input?"
    assert permission["responseSchema"] == answer_schema()
    data = permission["metadata"]["interaction"]
    question = data["request"]["questions"][0]
    assert question["intent"] == {
        "kind": "permission",
        "tool": "shell",
        "summary": "rm -rf build/",
        "allow": "Allow",
        "deny": "Deny",
    }
    assert data["request"]["provenance"]["session"] == "thread-1"
    assert data["view"]["provenance"]["session"] == "thread-1"
    assert [o["role"] for o in data["view"]["questions"][0]["options"]] == ["allow", "deny"]
    assert "error" not in data

    endpoint.stop()  # the interrupt outlives the process that issued it
    endpoint.relaunch()

    name = only_interrupt(client.send({"op": "answer", "status": "resolved", "payload": "Allow"}))
    assert name["reason"] == "input_required"
    assert name["metadata"]["interaction"]["request"]["questions"] == [
        {"id": "name", "question": "Name of the release?"}
    ]
    answer = {"answers": [{"id": "name", "selected": [], "custom": "v1.2"}]}
    done = client.send({"op": "answer", "status": "resolved", "payload": answer})
    assert done == {
        "outcome": "success",
        "result": {"deleted": True, "release": "v1.2", "thread": "thread-1"},
        "pending": [],
    }

    replay = [{"interruptId": permission["id"], "status": "resolved", "payload": "Allow"}]
    refused = client.send({"op": "raw", "resume": replay})
    assert refused == {
        "outcome": "error",
        "error": {"message": SPENT, "code": "BAD_REQUEST"},
        "pending": [],
    }


def test_a_cancelled_interrupt_ends_the_run_cancelled_once(
    drivers: Callable[[str], Driver],
) -> None:
    client = drivers("thread-cancel")
    permission = only_interrupt(client.send({"op": "run"}))
    assert client.send({"op": "answer", "status": "cancelled"}) == {
        "outcome": "cancelled",
        "pending": [],
    }
    again = client.send(
        {"op": "raw", "resume": [{"interruptId": permission["id"], "status": "cancelled"}]}
    )
    assert again["error"] == {"message": SPENT, "code": "BAD_REQUEST"}


def test_forged_altered_and_foreign_interrupt_ids_are_refused(
    drivers: Callable[[str], Driver],
) -> None:
    mine, other = drivers("thread-a"), drivers("thread-b")
    issued = only_interrupt(mine.send({"op": "run"}))["id"]
    body, _, signature = issued.partition(".")
    flipped = signature[:-1] + ("A" if signature[-1] != "A" else "B")
    cases = {"made-up.id": FORGED, f"{body}.{flipped}": FORGED, issued: OTHER_THREAD}
    for interrupt_id, message in cases.items():
        resume = [{"interruptId": interrupt_id, "status": "resolved", "payload": "Allow"}]
        report = other.send({"op": "raw", "resume": resume})
        assert report["error"] == {"message": message, "code": "BAD_REQUEST"}, interrupt_id
    # None of them answered anything: the id still answers its own thread, once.
    done = mine.send({"op": "answer", "status": "resolved", "payload": "Deny"})
    assert done["result"] == {"deleted": False}


def test_a_misfit_payload_asks_the_same_question_again(drivers: Callable[[str], Driver]) -> None:
    client = drivers("thread-misfit")
    first = only_interrupt(client.send({"op": "run"}))
    misfit = {"answers": [{"id": "nope", "selected": ["Allow"]}]}
    again = only_interrupt(client.send({"op": "answer", "status": "resolved", "payload": misfit}))
    assert again["id"] != first["id"]
    assert again["metadata"]["interaction"]["request"] == {
        **first["metadata"]["interaction"]["request"],
        "provenance": again["metadata"]["interaction"]["request"]["provenance"],
    }
    assert again["metadata"]["interaction"]["error"]["code"] == "BAD_ANSWER"
    assert "nope" in again["metadata"]["interaction"]["error"]["message"]
    done = client.send({"op": "answer", "status": "resolved", "payload": "Deny"})
    assert done["result"] == {"deleted": False}


def test_the_client_answers_a_hosts_own_server_through_the_provider(
    shared_endpoint: EndpointProcess,
) -> None:
    client = Driver(shared_endpoint.url + "host", "thread-host")
    try:
        first = client.send({"op": "run"})
        assert first["texts"] == ["Working"]
        ask = only_interrupt(first)
        assert ask["reason"] == "input_required"
        assert ask["metadata"]["interaction"]["request"]["questions"][0]["options"] == [
            {"label": "staging"},
            {"label": "production"},
        ]
        done = client.send({"op": "answer", "status": "resolved", "payload": "production"})
        assert done["outcome"] == "success"
        assert done["result"] == "deployed to production"
    finally:
        client.close()


# ------------------------------------------------------------------- in process, over httpx


async def delete_build(run: RunAgentInput) -> object:
    verdict = await interaction.ask_permission("shell", "rm -rf build/", always=False)
    return {"deleted": verdict.allowed}


def run_input(thread: str = "t", resume: list[JSON] | None = None, **extra: object) -> JSON:
    body: JSON = {"threadId": thread, "runId": "r", "messages": [], **extra}
    if resume is not None:
        body["resume"] = resume
    return body


@pytest.fixture
async def client_for() -> AsyncIterator[Callable[..., httpx.AsyncClient]]:
    clients: list[httpx.AsyncClient] = []

    def make(app: Any, token: str = TOKEN) -> httpx.AsyncClient:
        client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://127.0.0.1",
            headers={"authorization": f"Bearer {token}"},
        )
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.aclose()


async def events(client: httpx.AsyncClient, body: object, path: str = "/") -> list[JSON]:
    response = await client.post(path, json=body)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    chunks = [c for c in response.text.split("\n\n") if c]
    assert all(chunk.startswith("data: ") for chunk in chunks)
    return [json.loads(chunk[6:]) for chunk in chunks]


async def end_of(client: httpx.AsyncClient, body: object, path: str = "/") -> JSON:
    started, end = await events(client, body, path)
    assert started["type"] == "RUN_STARTED"
    return end


def interrupt_of(end: JSON) -> JSON:
    assert end["type"] == "RUN_FINISHED"
    assert end["outcome"]["type"] == "interrupt"
    (interrupt,) = end["outcome"]["interrupts"]
    return cast(JSON, interrupt)


def resolved(interrupt_id: str, payload: object = "Allow") -> list[JSON]:
    return [{"interruptId": interrupt_id, "status": "resolved", "payload": payload}]


def plan_review() -> AskUserQuestionRequest:
    return AskUserQuestionRequest(
        [
            AskUserQuestionItem(
                "plan",
                "Approve the plan?",
                detail="1. build\n2. ship",
                options=[AskUserQuestionOption("Approve"), AskUserQuestionOption("Revise")],
                intent=PlanReviewIntent("Approve"),
            )
        ]
    )


def test_the_reason_names_the_intent() -> None:
    text = AskUserQuestionRequest([AskUserQuestionItem("a", "Name?")])
    permission = AskUserQuestionRequest(
        [interaction.permission_question("shell", "ls"), AskUserQuestionItem("a", "Name?")]
    )
    assert interrupt_reason(text) == "input_required"
    assert interrupt_reason(plan_review()) == "plan_review"
    assert interrupt_reason(permission) == "human_approval"


async def test_a_plan_review_interrupt_is_answered_in_process(
    client_for: Callable[..., httpx.AsyncClient],
) -> None:
    async def step(run: RunAgentInput) -> object:
        answer = await interaction.ask(plan_review())
        return answer.answers[0].selected[0]

    client = client_for(AGUIEndpoint(step, token=TOKEN))
    interrupt = interrupt_of(await end_of(client, run_input()))
    assert interrupt["reason"] == "plan_review"
    assert interrupt["metadata"]["interaction"]["view"]["planReview"] is True
    end = await end_of(client, run_input(resume=resolved(interrupt["id"], "approve")))
    assert end == {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "result": "Approve"}


async def test_the_guard_is_the_web_pages(client_for: Callable[..., httpx.AsyncClient]) -> None:
    app = AGUIEndpoint(delete_build, token=TOKEN)
    client = client_for(app)
    anonymous = client_for(app, token="wrong-token-000000000")
    refused = await anonymous.post("/", json=run_input())
    assert (refused.status_code, refused.json()["error"]["code"]) == (401, "UNAUTHORIZED")
    host = await client.post("/", json=run_input(), headers={"host": "evil.example"})
    assert (host.status_code, host.json()["error"]["code"]) == (421, "BAD_HOST")
    origin = await client.post("/", json=run_input(), headers={"origin": "http://evil.example"})
    assert (origin.status_code, origin.json()["error"]["code"]) == (403, "BAD_ORIGIN")
    get = await client.get("/")
    assert (get.status_code, get.json()["error"]["code"]) == (405, "METHOD_NOT_ALLOWED")
    assert get.headers["x-content-type-options"] == "nosniff"


async def test_a_body_that_is_not_a_run_agent_input_starts_no_run(
    client_for: Callable[..., httpx.AsyncClient],
) -> None:
    asked: list[str] = []

    async def step(run: RunAgentInput) -> object:
        asked.append(run.thread_id)
        return None

    client = client_for(AGUIEndpoint(step, token=TOKEN))
    text = await client.post("/", content=b"{}", headers={"content-type": "text/plain"})
    assert (text.status_code, text.json()["error"]["code"]) == (415, "UNSUPPORTED_MEDIA_TYPE")
    big = await client.post(
        "/", content=b" " * (MAX_INPUT_BYTES + 1), headers={"content-type": "application/json"}
    )
    assert big.status_code == 413
    assert big.json()["error"] == {
        "code": "BAD_REQUEST",
        "message": f"RunAgentInput: longer than {MAX_INPUT_BYTES} bytes",
    }
    missing = await client.post("/", json={"threadId": "t", "messages": []})
    assert missing.status_code == 400
    assert missing.json()["error"] == {"code": "BAD_REQUEST", "message": "runId: Field required"}
    deep = await client.post(
        "/", content=b"[" * 300 + b"]" * 300, headers={"content-type": "application/json"}
    )
    assert deep.json()["error"]["message"] == "RunAgentInput: nested too deep"
    bad_resume = run_input(resume=[{"interruptId": "x", "status": "maybe"}])
    wrong = await client.post("/", json=bad_resume)
    assert wrong.status_code == 400
    assert wrong.json()["error"]["message"].startswith("resume.0.status: ")
    assert asked == []


async def test_resume_entries_are_bounded_and_checked(
    client_for: Callable[..., httpx.AsyncClient],
) -> None:
    client = client_for(AGUIEndpoint(delete_build, token=TOKEN))
    issued = interrupt_of(await end_of(client, run_input()))["id"]
    two = [*resolved(issued), *resolved(issued)]
    assert await end_of(client, run_input(resume=two)) == {
        "type": "RUN_ERROR",
        "message": "resume: 2 entries; a run of this agent ends with one interrupt",
        "code": "BAD_REQUEST",
    }
    long_id = "a" * (MAX_INTERRUPT_ID + 1)
    end = await end_of(client, run_input(resume=resolved(long_id)))
    assert end["message"] == f"resume[0].interruptId: longer than {MAX_INTERRUPT_ID} characters"
    no_payload = [{"interruptId": issued, "status": "resolved"}]
    again = interrupt_of(await end_of(client, run_input(resume=no_payload)))
    assert again["metadata"]["interaction"]["error"] == {
        "code": "BAD_ANSWER",
        "message": NO_PAYLOAD,
    }
    huge = "x" * MAX_PAYLOAD
    third = interrupt_of(await end_of(client, run_input(resume=resolved(again["id"], huge))))
    assert third["metadata"]["interaction"]["error"]["message"] == (
        f"resume[0].payload: {MAX_PAYLOAD + 2} characters of JSON; at most {MAX_PAYLOAD} are read"
    )
    end = await end_of(client, run_input(resume=resolved(third["id"], "Allow")))
    assert end["result"] == {"deleted": True}


async def test_a_forged_answer_never_reaches_the_step(
    client_for: Callable[..., httpx.AsyncClient],
) -> None:
    seen: list[object] = []

    async def step(run: RunAgentInput) -> object:
        verdict = await interaction.ask_permission("shell", "rm -rf /", always=False)
        seen.append(verdict.allowed)
        return verdict.allowed

    client = client_for(AGUIEndpoint(step, token=TOKEN))
    issued = interrupt_of(await end_of(client, run_input()))["id"]
    forged = {
        "an option never offered": {"answers": [{"id": "permission", "selected": ["Always"]}]},
        "a question never asked": {"answers": [{"id": "other", "selected": ["Allow"]}]},
        "not an answer": {"approved": True},
        "a number": 1,
    }
    for what, payload in forged.items():
        again = interrupt_of(await end_of(client, run_input(resume=resolved(issued, payload))))
        assert again["metadata"]["interaction"]["error"]["code"] == "BAD_ANSWER", what
        issued = again["id"]
    assert seen == []
    assert (await end_of(client, run_input(resume=resolved(issued, "Deny"))))["result"] is False
    assert seen == [False]


async def test_a_step_that_catches_a_cancellation_goes_on_and_keeps_its_provenance(
    client_for: Callable[..., httpx.AsyncClient],
) -> None:
    runs: list[str] = []
    caught: list[str] = []

    async def step(run: RunAgentInput) -> object:
        runs.append(run.run_id)
        try:
            return await interaction.ask_text("Name?", id="name")
        except UserInteractionError as error:
            caught.append(error.code)
            return await interaction.ask(
                AskUserQuestionRequest(
                    [AskUserQuestionItem("why", "Why not?")],
                    provenance=interaction.Provenance(source="deploy-bot", session="s-1"),
                )
            )

    client = client_for(AGUIEndpoint(step, token=TOKEN))
    issued = interrupt_of(await end_of(client, run_input()))["id"]
    cancel = [{"interruptId": issued, "status": "cancelled"}]
    why = interrupt_of(await end_of(client, run_input(resume=cancel)))
    provenance = why["metadata"]["interaction"]["request"]["provenance"]
    assert (provenance["source"], provenance["session"]) == ("deploy-bot", "s-1")
    assert "askedAt" in provenance
    assert caught == [ErrorCode.ASK_CANCELLED]
    refused = await end_of(client, run_input(resume=cancel))  # the spent id: the step never runs
    assert refused["message"] == SPENT
    assert len(runs) == 2


async def test_a_batch_needs_the_wire_answer(client_for: Callable[..., httpx.AsyncClient]) -> None:
    async def step(run: RunAgentInput) -> object:
        answer = await interaction.ask(
            AskUserQuestionRequest([AskUserQuestionItem("a", "A?"), AskUserQuestionItem("b", "B?")])
        )
        return [item.custom for item in answer.answers]

    client = client_for(AGUIEndpoint(step, token=TOKEN))
    interrupt = interrupt_of(await end_of(client, run_input()))
    assert interrupt["message"] == "2 questions: A?; B?"
    again = interrupt_of(await end_of(client, run_input(resume=resolved(interrupt["id"], "x"))))
    assert again["metadata"]["interaction"]["error"]["message"] == (
        'resume[0].payload: the question is a batch of 2: answer with {"answers": [...]}'
    )
    wire = {
        "answers": [
            {"id": "b", "selected": [], "custom": "2"},
            {"id": "a", "selected": [], "custom": "1"},
        ]
    }
    end = await end_of(client, run_input(resume=resolved(again["id"], wire)))
    assert end["result"] == ["1", "2"]


async def test_two_runs_resuming_one_interrupt_answer_it_once(
    client_for: Callable[..., httpx.AsyncClient],
) -> None:
    results: list[object] = []

    async def step(run: RunAgentInput) -> object:
        result = await delete_build(run)
        results.append(result)
        return result

    client = client_for(AGUIEndpoint(step, token=TOKEN))
    issued = interrupt_of(await end_of(client, run_input()))["id"]
    ends = await asyncio.gather(
        *(end_of(client, run_input(resume=resolved(issued))) for _ in range(2))
    )
    assert sorted(end["type"] for end in ends) == ["RUN_ERROR", "RUN_FINISHED"]
    assert results == [{"deleted": True}]


async def test_an_expired_interrupt_is_refused(
    client_for: Callable[..., httpx.AsyncClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [time.time()]
    monkeypatch.setattr("interaction.agui._interrupts.time.time", lambda: now[0])
    client = client_for(AGUIEndpoint(delete_build, token=TOKEN, interrupts=AGUIInterrupts(ttl=60)))
    issued = interrupt_of(await end_of(client, run_input()))
    assert issued["expiresAt"].endswith("+00:00")
    now[0] += 60
    end = await end_of(client, run_input(resume=resolved(issued["id"])))
    assert (end["code"], end["message"]) == ("ASK_TIMEOUT", EXPIRED)


async def test_a_store_that_cannot_answer_refuses_the_interrupt(
    client_for: Callable[..., httpx.AsyncClient],
) -> None:
    class Away:
        async def spend(self, nonce: str, expires_at: float) -> bool:
            raise SpentStoreUnavailable("the store at 127.0.0.1:1 did not answer")

    interrupts = AGUIInterrupts(SECRET)
    client = client_for(AGUIEndpoint(delete_build, token=TOKEN, interrupts=interrupts))
    issued = interrupt_of(await end_of(client, run_input()))["id"]
    interrupts.store = Away()
    end = await end_of(client, run_input(resume=resolved(issued)))
    assert end["code"] == "PROVIDER_FAILED"
    assert end["message"] == (
        "the interrupt could not be checked against the spent-state store:"
        " the store at 127.0.0.1:1 did not answer"
    )
    interrupts.store = MemorySpentStore()  # refused, not redeemed: it still answers once
    assert (await end_of(client, run_input(resume=resolved(issued))))["result"] == {"deleted": True}


async def test_what_the_step_raises_or_returns_ends_the_run(
    client_for: Callable[..., httpx.AsyncClient], caplog: pytest.LogCaptureFixture
) -> None:
    outcomes: dict[str, Callable[[], Awaitable[object]]] = {}

    async def refused() -> object:
        raise UserInteractionError("no provider here", ErrorCode.NO_PROVIDER)

    async def crashed() -> object:
        raise RuntimeError("secret detail")

    async def odd() -> object:
        return {1, 2}

    outcomes.update(refused=refused, crashed=crashed, odd=odd)

    async def step(run: RunAgentInput) -> object:
        return await outcomes[run.thread_id]()

    client = client_for(AGUIEndpoint(step, token=TOKEN))
    with caplog.at_level(logging.ERROR, logger="interaction.agui"):
        ends = {name: await end_of(client, run_input(name)) for name in outcomes}
    assert ends == {
        "refused": {"type": "RUN_ERROR", "message": "no provider here", "code": "NO_PROVIDER"},
        "crashed": {
            "type": "RUN_ERROR",
            "message": "the agent step failed; see the server's log",
            "code": "INTERNAL_ERROR",
        },
        "odd": {
            "type": "RUN_ERROR",
            "message": "the agent step's result is not JSON",
            "code": "INTERNAL_ERROR",
        },
    }
    assert [r.message for r in caplog.records] == ["the AG-UI step of thread 'crashed' failed"]


async def test_a_step_that_changed_its_question_is_refused(
    client_for: Callable[..., httpx.AsyncClient],
) -> None:
    questions = ["Name?"]

    async def step(run: RunAgentInput) -> object:
        return await interaction.ask_text(questions[0])

    client = client_for(AGUIEndpoint(step, token=TOKEN))
    issued = interrupt_of(await end_of(client, run_input()))["id"]
    questions[0] = "Another name?"
    end = await end_of(client, run_input(resume=resolved(issued, "x")))
    assert (end["code"], end["message"]) == ("BAD_ANSWER", MISMATCH_MESSAGE)


async def test_it_mounts_beside_the_web_page(
    client_for: Callable[..., httpx.AsyncClient],
) -> None:
    page = create_app(Relay(), token=TOKEN)
    app = Starlette(
        routes=[Mount("/agui", AGUIEndpoint(delete_build, token=TOKEN)), Mount("/", page)]
    )
    client = client_for(app)
    interrupt = interrupt_of(await end_of(client, run_input(), "/agui/"))
    end = await end_of(client, run_input(resume=resolved(interrupt["id"])), "/agui/")
    assert end["result"] == {"deleted": True}
    assert (await client.get("/")).status_code == 200


def test_secrets_and_ttls_are_checked() -> None:
    with pytest.raises(ValueError, match="at least 32 bytes"):
        AGUIInterrupts("short")
    with pytest.raises(ValueError, match="positive number of seconds"):
        AGUIInterrupts(ttl=0)
    with pytest.raises(ValueError, match="needs a token"):
        AGUIEndpoint(delete_build, token="")


def test_without_the_extra_the_import_names_it() -> None:
    assert import_error_without("ag_ui", "interaction.agui") == (
        'interaction.agui needs ag-ui-protocol and Starlette: pip install "interaction-seam[agui]"'
    )
