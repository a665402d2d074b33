"""The Claude Agent SDK integration, end to end through the public ``query(..., transport=...)``.

:class:`FakeCLI` plays the Claude CLI's side of the control protocol (what
``claude_agent_sdk._internal.query`` speaks): it answers ``initialize``, waits for the user
message, sends ``can_use_tool`` control requests and reads the SDK's ``control_response``,
may withdraw a request with ``control_cancel_request``, and ends the turn with a result.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import math
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import mcp.types as mcp_types
import pytest
from claude_agent_sdk import (
    ClaudeAgentOptions,
    ClaudeSDKClient,
    PermissionResultAllow,
    PermissionResultDeny,
    PermissionUpdate,
    ResultMessage,
    ToolPermissionContext,
    Transport,
    query,
)
from claude_agent_sdk.types import PermissionRuleValue
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionRequest,
    Provenance,
    provide,
)
from interaction.integrations.claude_agent_sdk import (
    answered_input,
    ask_user_question_request,
    can_use_tool,
    decide,
    main,
    permission_prompt_server,
    suggestion_label,
)
from interaction.relay import Relay
from interaction.testing import BlockingProvider, ScriptedProvider

from .loopback import free_port
from .test_integrations_common import HOLD, WAIT, WebPage, select

Script = Callable[["FakeCLI"], Awaitable[None]]


class FakeCLI(Transport):
    """The CLI's end of the stream-json control protocol, driven by a script."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.inbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.responses: dict[str, dict[str, Any]] = {}
        self.prompts: list[str] = []
        self.ended = False
        self._arrived = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self._counter = 0
        self.failure: BaseException | None = None

    async def connect(self) -> None:
        pass

    def is_ready(self) -> bool:
        return True

    async def write(self, data: str) -> None:
        for line in data.splitlines():
            message = json.loads(line)
            if message["type"] == "control_request":
                assert message["request"]["subtype"] == "initialize"
                self.send(
                    {
                        "type": "control_response",
                        "response": {
                            "subtype": "success",
                            "request_id": message["request_id"],
                            "response": {"commands": []},
                        },
                    }
                )
            elif message["type"] == "control_response":
                response = message["response"]
                async with self._arrived:
                    self.responses[response["request_id"]] = response
                    self._arrived.notify_all()
            elif message["type"] == "user":
                self.prompts.append(message["message"]["content"])
                self._task = asyncio.create_task(self._play())

    async def _play(self) -> None:
        try:
            await self.script(self)
        except BaseException as exc:  # reported by run(), after the turn ends
            self.failure = exc
        self.send(
            {
                "type": "result",
                "subtype": "success",
                "duration_ms": 1,
                "duration_api_ms": 1,
                "is_error": False,
                "num_turns": 1,
                "session_id": "s",
                "result": "done",
            }
        )

    def send(self, message: dict[str, Any]) -> None:
        self.inbox.put_nowait(message)

    async def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        while (message := await self.inbox.get()) is not None:
            yield message

    async def end_input(self) -> None:
        self.ended = True
        self.inbox.put_nowait(None)  # the CLI exits once its stdin closes

    async def close(self) -> None:
        self.inbox.put_nowait(None)
        if self._task is not None:
            self._task.cancel()

    def ask_permission(self, tool_name: str, tool_input: dict[str, Any], **extra: Any) -> str:
        self._counter += 1
        request_id = f"perm-{self._counter}"
        self.send(
            {
                "type": "control_request",
                "request_id": request_id,
                "request": {
                    "subtype": "can_use_tool",
                    "tool_name": tool_name,
                    "input": tool_input,
                    "tool_use_id": f"toolu_{self._counter}",
                    **extra,
                },
            }
        )
        return request_id

    async def response(self, request_id: str) -> dict[str, Any]:
        async with self._arrived:
            await asyncio.wait_for(
                self._arrived.wait_for(lambda: request_id in self.responses), WAIT
            )
        return self.responses[request_id]

    async def permission(
        self, tool_name: str, tool_input: dict[str, Any], **extra: Any
    ) -> dict[str, Any]:
        """Ask for permission and return the decision the SDK sent back."""
        response = await self.response(self.ask_permission(tool_name, tool_input, **extra))
        assert response["subtype"] == "success", response
        decision: dict[str, Any] = response["response"]
        return decision


async def run(script: Script, callback: Any) -> tuple[FakeCLI, list[object]]:
    cli = FakeCLI(script)
    messages: list[object] = []
    options = ClaudeAgentOptions(can_use_tool=callback)
    async for message in query(prompt="go", options=options, transport=cli):
        messages.append(message)
    if cli.failure is not None:
        raise cli.failure
    return cli, messages


QUESTIONS: list[dict[str, Any]] = [
    {
        "question": "Which package manager?",
        "header": "Tooling",
        "options": [
            {"label": "pnpm", "description": "fast"},
            {"label": "npm", "description": "default"},
        ],
        "multiSelect": False,
    },
    {
        "question": "Which checks should run?",
        "header": "Checks",
        "options": [
            {"label": "types", "description": "mypy"},
            {"label": "tests", "description": ""},
        ],
        "multiSelect": True,
    },
    {
        "question": "Anything else?",
        "header": "Notes",
        "options": [{"label": "No", "description": "nothing"}],
        "multiSelect": False,
    },
]


# ---------------------------------------------------------------------------- AskUserQuestion


async def test_ask_user_question_is_answered_keyed_by_question_text_through_a_script() -> None:
    decisions: list[dict[str, Any]] = []

    async def script(cli: FakeCLI) -> None:
        decisions.append(await cli.permission("AskUserQuestion", {"questions": QUESTIONS}))

    scripted = ScriptedProvider(
        {"q1": "pnpm", "q2": AskUserQuestionAnswerItem("q2", ["tests", "types"], "lint too")}
    )
    with provide(scripted):
        cli, messages = await run(script, can_use_tool())
    assert decisions == [
        {
            "behavior": "allow",
            "updatedInput": {
                "questions": QUESTIONS,
                "answers": {
                    "Which package manager?": "pnpm",
                    "Which checks should run?": ["tests", "types", "lint too"],
                },
                "annotations": {"Anything else?": {"unanswered": "skipped"}},
            },
        }
    ]
    (request,) = scripted.requests
    assert request.key == "toolu_1"  # the CLI's tool_use_id is the resume key
    assert [(q.id, q.question, q.header, q.multi_select) for q in request.questions] == [
        ("q1", "Which package manager?", "Tooling", False),
        ("q2", "Which checks should run?", "Checks", True),
        ("q3", "Anything else?", "Notes", False),
    ]
    assert [(o.label, o.description) for o in request.questions[0].options] == [
        ("pnpm", "fast"),
        ("npm", "default"),
    ]
    assert cli.prompts == ["go"]
    assert cli.ended
    assert isinstance(messages[-1], ResultMessage)


async def test_ask_user_question_answered_on_the_web_page() -> None:
    decisions: list[dict[str, Any]] = []

    async def script(cli: FakeCLI) -> None:
        decisions.append(await cli.permission("AskUserQuestion", {"questions": QUESTIONS[:1]}))

    relay = Relay()
    async with WebPage(relay, select(custom="yarn, please")) as page:
        with provide(relay):
            await run(script, can_use_tool())
    assert decisions[0]["updatedInput"] == {
        "questions": QUESTIONS[:1],
        "answers": {"Which package manager?": "yarn, please"},
    }
    assert [q.request.questions[0].question for q in page.seen] == ["Which package manager?"]


async def test_a_batch_with_repeated_question_texts_is_refused_without_asking() -> None:
    decisions: list[dict[str, Any]] = []

    async def script(cli: FakeCLI) -> None:
        repeated = [QUESTIONS[0], {**QUESTIONS[1], "question": "Which package manager?"}]
        decisions.append(await cli.permission("AskUserQuestion", {"questions": repeated}))

    scripted = ScriptedProvider()
    with provide(scripted):
        await run(script, can_use_tool())
    assert decisions == [
        {
            "behavior": "deny",
            "message": "AskUserQuestion: questions[1].question: repeats questions[0].question;"
            " the answers are keyed by question text, so every question must be worded"
            " differently (BAD_REQUEST)",
        }
    ]
    assert scripted.requests == []


@pytest.mark.parametrize(
    ("tool_input", "message"),
    [
        ({}, "AskUserQuestion: questions: expected an array, got null"),
        (
            {"questions": [{"question": 3}]},
            "AskUserQuestion: questions[0].question: expected a string, got number",
        ),
        (
            {"questions": [{"question": "Q?", "multiSelect": "yes"}]},
            "AskUserQuestion: questions[0].multiSelect: expected a boolean, got string",
        ),
        (
            {"questions": [{"question": "Q?", "options": [{"label": "a"}, {"label": "a"}]}]},
            "AskUserQuestion: questions[0].options[1].label: ",
        ),
    ],
)
async def test_a_malformed_ask_user_question_is_denied_with_its_fault(
    tool_input: dict[str, Any], message: str
) -> None:
    scripted = ScriptedProvider()
    result = await decide("AskUserQuestion", tool_input, provider=scripted)
    assert isinstance(result, PermissionResultDeny)
    assert result.message.startswith(message)
    assert result.message.endswith("(BAD_REQUEST)")
    assert scripted.requests == []


def test_answered_input_adds_only_answers_and_annotations() -> None:
    tool_input = {"questions": QUESTIONS[:2], "metadata": {"source": "x"}}
    request = ask_user_question_request(tool_input)
    from interaction import AskUserQuestionAnswer

    answer = AskUserQuestionAnswer(
        [AskUserQuestionAnswerItem("q1", ["npm"]), AskUserQuestionAnswerItem("q2", ["types"])]
    )
    assert answered_input(tool_input, request, answer) == {
        "questions": QUESTIONS[:2],
        "metadata": {"source": "x"},
        "answers": {"Which package manager?": "npm", "Which checks should run?": ["types"]},
    }


# ---------------------------------------------------------------------------- other tools

SUGGESTION = {
    "type": "addRules",
    "rules": [{"toolName": "Bash", "ruleContent": "npm test"}],
    "behavior": "allow",
    "destination": "session",
}


async def test_another_tool_is_an_allow_deny_question_with_the_suggestions() -> None:
    decisions: list[dict[str, Any]] = []

    async def script(cli: FakeCLI) -> None:
        extra = {
            "permission_suggestions": [SUGGESTION],
            "title": "Claude wants to run npm test",
            "display_name": "Run command",
            "description": "Runs the test suite",
            "decision_reason": "not in the allow list",
        }
        decisions.append(await cli.permission("Bash", {"command": "npm test"}, **extra))
        decisions.append(await cli.permission("Bash", {"command": "npm test"}, **extra))

    labels = iter(["Allow, and always allow Bash(npm test) for this session", "Allow"])
    scripted = ScriptedProvider(
        lambda request: ScriptedProvider({"permission": next(labels)}).ask(request)
    )
    with provide(scripted):
        await run(script, can_use_tool())
    assert decisions == [
        {
            "behavior": "allow",
            "updatedInput": {"command": "npm test"},
            "updatedPermissions": [SUGGESTION],
        },
        {"behavior": "allow", "updatedInput": {"command": "npm test"}},
    ]
    question = scripted.requests[0].questions[0]
    assert question.question == "Claude wants to run npm test"
    assert question.header == "Run command"
    assert [o.label for o in question.options] == [
        "Allow",
        "Allow, and always allow Bash(npm test) for this session",
        "Deny",
        "Deny, and stop",
    ]
    assert question.detail == (
        'Runs the test suite\n\nWhy: not in the allow list\n\nInput:\n{\n  "command": "npm test"\n}'
    )


async def test_deny_and_own_text_on_the_web_page_carry_a_message() -> None:
    decisions: list[dict[str, Any]] = []

    async def script(cli: FakeCLI) -> None:
        decisions.append(await cli.permission("Write", {"file_path": "/etc/passwd"}))
        decisions.append(await cli.permission("Write", {"file_path": "/etc/passwd"}))

    answers = iter([select("Deny"), select(custom="write it to /tmp instead")])
    relay = Relay()

    def answer(request: dict[str, object]) -> str:
        return next(answers)(request)

    async with WebPage(relay, answer):
        with provide(relay):
            await run(script, can_use_tool())
    assert decisions == [
        {"behavior": "deny", "message": "The user denied Write"},
        {"behavior": "deny", "message": "The user denied Write and said: write it to /tmp instead"},
    ]


async def test_a_dismissed_question_is_dismissed_and_a_dismissed_permission_interrupts() -> None:
    decisions: list[dict[str, Any]] = []

    async def script(cli: FakeCLI) -> None:
        decisions.append(await cli.permission("Bash", {"command": "ls"}))
        decisions.append(await cli.permission("AskUserQuestion", {"questions": QUESTIONS[:2]}))

    relay = Relay()
    async with WebPage(relay, lambda request: None):
        with provide(relay):
            await run(script, can_use_tool())
    assert (
        decisions
        == [
            {
                "behavior": "deny",
                "message": "Bash was not approved: the user dismissed ask_user_question without"
                " answering",
                "interrupt": True,
            },
            {  # the CLI's own form of a dismissal: it tells the model nobody answered
                "behavior": "allow",
                "updatedInput": {
                    "questions": QUESTIONS[:2],
                    "answers": {},
                    "annotations": {
                        "Which package manager?": {"unanswered": "dismissed"},
                        "Which checks should run?": {"unanswered": "dismissed"},
                    },
                },
            },
        ]
    )


async def test_a_timeout_denies_and_withdraws_the_question() -> None:
    decisions: list[dict[str, Any]] = []

    async def script(cli: FakeCLI) -> None:
        decisions.append(await cli.permission("Bash", {"command": "ls"}))

    relay = Relay()
    async with WebPage(relay) as page:
        with provide(relay):
            await run(script, can_use_tool(timeout=0.05))
        await page.wait(lambda: len(page.withdrawn) == 1)
    assert decisions == [
        {
            "behavior": "deny",
            "message": "Bash was not approved: ask_user_question timed out before the user"
            " answered",
        }
    ]
    assert relay.pending() == []


async def test_control_cancel_request_withdraws_the_question_from_the_ui() -> None:
    decisions: list[dict[str, Any]] = []
    relay = Relay()
    page = WebPage(relay, lambda request: HOLD)

    async def script(cli: FakeCLI) -> None:
        withdrawn = cli.ask_permission("Bash", {"command": "sleep 100"})
        await page.wait(lambda: len(page.seen) == 1)
        cli.send({"type": "control_cancel_request", "request_id": withdrawn})
        await page.wait(lambda: page.withdrawn == [page.seen[0].id])
        page.answer = select("Allow")
        decisions.append(await cli.permission("Bash", {"command": "ls"}))
        assert withdrawn not in cli.responses  # the CLI abandoned it: no response is sent

    async with page:
        with provide(relay):
            await run(script, can_use_tool())
    assert decisions == [{"behavior": "allow", "updatedInput": {"command": "ls"}}]
    assert relay.pending() == []


async def test_an_explicit_provider_is_used_inside_another_registration() -> None:
    decisions: list[dict[str, Any]] = []

    async def script(cli: FakeCLI) -> None:
        decisions.append(await cli.permission("Read", {"file_path": "a.txt"}))

    outer, mine = ScriptedProvider(), ScriptedProvider({"permission": "Allow"})
    with provide(outer):
        await run(script, can_use_tool(mine))
    assert decisions == [{"behavior": "allow", "updatedInput": {"file_path": "a.txt"}}]
    assert outer.requests == []
    assert len(mine.requests) == 1


async def test_without_a_provider_the_call_is_denied_not_crashed() -> None:
    result = await decide("Read", {"file_path": "a.txt"})
    assert result == PermissionResultDeny(
        message="Read was not approved: no user-interaction provider is registered"
    )


def test_suggestion_labels_say_what_is_remembered_and_where() -> None:
    assert (
        suggestion_label(
            PermissionUpdate(
                "addRules", [PermissionRuleValue("Read")], "allow", destination="userSettings"
            )
        )
        == "Allow, and always allow Read in all projects (user settings)"
    )
    assert suggestion_label(PermissionUpdate("setMode", mode="acceptEdits")) == (
        "Allow, and switch to acceptEdits mode for this session"
    )
    assert (
        suggestion_label(
            PermissionUpdate("addDirectories", directories=["/srv\x1b]0;x"], destination="session")
        )
        == "Allow, and allow /srv\\x1b]0;x for this session"
    )


async def test_an_aborted_ask_denies() -> None:
    from interaction import AbortController

    controller = AbortController()
    blocking = BlockingProvider()
    task = asyncio.create_task(decide("Read", {}, provider=blocking, signal=controller.signal))
    await asyncio.wait_for(blocking.started.wait(), WAIT)
    controller.abort()
    result = await task
    assert result == PermissionResultDeny(
        message="Read was not approved: ask_user_question was aborted before the user answered"
    )
    assert isinstance(
        await decide("Read", {}, provider=ScriptedProvider({"permission": "Allow"})),
        PermissionResultAllow,
    )


# ---------------------------------------------------------------------------- MCP tool


async def call_prompt(server: Any, arguments: dict[str, Any]) -> dict[str, Any]:
    async with Client(server, mode="legacy") as client:
        result = await client.call_tool("permission_prompt", arguments)
    (content,) = result.content
    assert isinstance(content, mcp_types.TextContent)
    decoded: dict[str, Any] = json.loads(content.text)
    return decoded


async def test_the_permission_prompt_tool_answers_in_the_clis_shape() -> None:
    scripted = ScriptedProvider({"permission": "Allow", "q1": "npm"})
    server = permission_prompt_server(scripted)
    allowed = await call_prompt(
        server, {"tool_name": "Bash", "input": {"command": "ls"}, "tool_use_id": "toolu_1"}
    )
    assert allowed == {"behavior": "allow", "updatedInput": {"command": "ls"}}
    assert scripted.requests[0].key == "toolu_1"
    answered = await call_prompt(
        server, {"tool_name": "AskUserQuestion", "input": {"questions": QUESTIONS[:1]}}
    )
    assert answered == {
        "behavior": "allow",
        "updatedInput": {"questions": QUESTIONS[:1], "answers": {"Which package manager?": "npm"}},
    }


async def test_the_permission_prompt_tool_denies_through_the_web_page() -> None:
    relay = Relay()
    async with WebPage(relay, select("Deny")):
        with provide(relay):
            denied = await call_prompt(
                permission_prompt_server(), {"tool_name": "Bash", "input": {"command": "rm"}}
            )
    assert denied == {"behavior": "deny", "message": "The user denied Bash"}


async def test_the_permission_prompt_tool_denies_on_timeout() -> None:
    server = permission_prompt_server(BlockingProvider(), timeout=0.05)
    denied = await call_prompt(server, {"tool_name": "Bash", "input": {}})
    assert denied == {
        "behavior": "deny",
        "message": "Bash was not approved: ask_user_question timed out before the user answered",
    }


async def first_question_on_the_stream(http: httpx.AsyncClient) -> dict[str, Any]:
    """The question in the stream's opening snapshot, or in the first ``requested`` event.

    Which one depends on whether the CLI's call reached the server before the stream opened.
    """
    async with http.stream("GET", "/api/events") as events:
        async for line in events.aiter_lines():
            if not line.startswith("data: "):
                continue
            data: dict[str, Any] = json.loads(line.removeprefix("data: "))
            if "request" in data:
                return data
            if data.get("questions"):
                first: dict[str, Any] = data["questions"][0]
                return first
    raise AssertionError("the stream ended before a question arrived")


async def test_the_stdio_server_asks_on_the_web_page_and_answers_the_cli() -> None:
    """``python -m interaction.integrations.claude_agent_sdk``, as ``claude -p`` runs it."""
    port, token = free_port(), "t0ken-for-the-test"
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "interaction.integrations.claude_agent_sdk",
            "--port",
            str(port),
            "--token",
            token,
        ],
    )
    async with (
        Client(params) as client,
        httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", headers={"authorization": f"Bearer {token}"}
        ) as http,
    ):
        call = asyncio.create_task(
            client.call_tool(
                "permission_prompt", {"tool_name": "Bash", "input": {"command": "make"}}
            )
        )
        question = await first_question_on_the_stream(http)
        assert question["request"]["questions"][0]["options"] == [
            {"label": "Allow", "description": "Run Bash this once"},
            {"label": "Deny", "description": "Do not run Bash"},
            {"label": "Deny, and stop", "description": "Do not run Bash, and stop the turn"},
        ]
        posted = await http.post(
            f"/api/questions/{question['id']}/answer",
            json={"answers": [{"id": "permission", "selected": ["Allow"]}]},
        )
        assert posted.status_code == 200
        result = await asyncio.wait_for(call, WAIT)
    (content,) = result.content
    assert isinstance(content, mcp_types.TextContent)
    assert json.loads(content.text) == {"behavior": "allow", "updatedInput": {"command": "make"}}


async def test_the_callback_runs_in_the_context_captured_at_connect() -> None:
    decisions: list[dict[str, Any]] = []

    async def script(cli: FakeCLI) -> None:
        decisions.append(await cli.permission("Read", {"file_path": "a.txt"}))

    cli = FakeCLI(script)
    client = ClaudeSDKClient(ClaudeAgentOptions(can_use_tool=can_use_tool()), transport=cli)
    scripted = ScriptedProvider({"permission": "Allow"})

    async def converse() -> list[object]:
        await client.query("go")
        return [message async for message in client.receive_response()]

    with provide(scripted):
        await client.connect()
        # The conversation runs where no provider is registered: the connect() context asks.
        messages = await asyncio.get_running_loop().create_task(
            converse(), context=contextvars.Context()
        )
    await client.disconnect()
    assert isinstance(messages[-1], ResultMessage)
    assert decisions == [{"behavior": "allow", "updatedInput": {"file_path": "a.txt"}}]
    assert len(scripted.requests) == 1


async def test_hostile_question_text_is_denied_with_its_fault_and_never_shown() -> None:
    scripted = ScriptedProvider()
    hostile = {"questions": [{"question": "Pick \x1b]0;owned\x07 one", "options": []}]}
    result = await decide("AskUserQuestion", hostile, provider=scripted)
    assert result == PermissionResultDeny(
        message="AskUserQuestion: questions[0].question: contains control character U+001B"
        " (BAD_REQUEST)"
    )
    assert scripted.requests == []


async def test_a_hostile_tool_title_and_input_are_shown_escaped() -> None:
    scripted = ScriptedProvider({"permission": "Deny"})
    context = ToolPermissionContext(title="Run \x1b[2J\u202etxt.exe", tool_use_id="toolu_9")
    await decide("Bash", {"command": "echo \x1b[31m"}, context, provider=scripted)
    question = scripted.last_request.questions[0]
    assert question.question == "Run \\x1b[2J\\u202etxt.exe"
    assert question.detail == 'Input:\n{\n  "command": "echo \\u001b[31m"\n}'


def test_the_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "interaction-mcp-permission"
    out = subprocess.run([str(script), "--help"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("usage: interaction-mcp-permission")
    assert "--permission-prompt-tool" in out.stdout


# ---------------------------------------------------------------------------- hostile input


@pytest.mark.parametrize("tool_use_id", ["", "  ", "toolu\x1b[2J", "\u202etoolu"])
async def test_an_unusable_tool_use_id_is_no_resume_key_and_never_a_denial(
    tool_use_id: str,
) -> None:
    scripted = ScriptedProvider({"permission": "Allow", "q1": "npm"})
    context = ToolPermissionContext(tool_use_id=tool_use_id)
    allowed = await decide("Bash", {"command": "ls"}, context, provider=scripted)
    answered = await decide(
        "AskUserQuestion", {"questions": QUESTIONS[:1]}, context, provider=scripted
    )
    assert allowed == PermissionResultAllow()
    assert answered == PermissionResultAllow(
        updated_input={"questions": QUESTIONS[:1], "answers": {"Which package manager?": "npm"}}
    )
    assert [request.key for request in scripted.requests] == [None, None]
    prompted = await call_prompt(
        permission_prompt_server(scripted),
        {"tool_name": "Bash", "input": {}, "tool_use_id": tool_use_id},
    )
    assert prompted == {"behavior": "allow", "updatedInput": {}}


BAD_TIMEOUT = (
    "timeout must be a positive, finite number of seconds (at most {max:.0f}), got {shown}"
)


@pytest.mark.parametrize(
    ("timeout", "shown"), [(-1.0, "-1.0"), (0, "0"), (math.nan, "nan"), (math.inf, "inf")]
)
def test_a_bad_timeout_is_refused_when_the_callback_or_server_is_built(
    timeout: float, shown: str
) -> None:
    message = BAD_TIMEOUT.format(max=threading.TIMEOUT_MAX, shown=shown)
    with pytest.raises(ValueError, match=r"^timeout must be") as callback:
        can_use_tool(timeout=timeout)
    with pytest.raises(ValueError, match=r"^timeout must be") as server:
        permission_prompt_server(timeout=timeout)
    assert str(callback.value) == str(server.value) == message


class AllowsAfterTheTimeout:
    """Allows once the request's timeout has fired, without yielding to the loop first."""

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        fired = threading.Event()
        assert request.signal is not None
        request.signal.add_listener(lambda reason: fired.set())
        assert fired.wait(WAIT)
        return AskUserQuestionAnswer([AskUserQuestionAnswerItem("permission", ["Allow"])])


async def test_an_expired_timeout_denies_even_when_the_answer_raced_it() -> None:
    callback = can_use_tool(AllowsAfterTheTimeout(), timeout=0.01)
    denied = await callback("Bash", {"command": "ls"}, ToolPermissionContext())
    assert denied == PermissionResultDeny(
        message="Bash was not approved: ask_user_question timed out before the user answered"
    )


# ---------------------------------------------------------------------------- the script


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (
            ["--timeout", "-1"],
            "argument --timeout: a timeout is a positive, finite number of seconds, got '-1'",
        ),
        (
            ["--timeout", "0"],
            "argument --timeout: a timeout is a positive, finite number of seconds, got '0'",
        ),
        (
            ["--timeout", "nan"],
            "argument --timeout: a timeout is a positive, finite number of seconds, got 'nan'",
        ),
        (
            ["--timeout", "inf"],
            "argument --timeout: a timeout is a positive, finite number of seconds, got 'inf'",
        ),
        (["--port", "99999"], "argument --port: a port is from 0 to 65535, got 99999"),
        (["--port", "-5"], "argument --port: a port is from 0 to 65535, got -5"),
        (["--port", "http"], "argument --port: not a port number: 'http'"),
    ],
)
def test_a_bad_port_or_timeout_is_a_usage_error(
    argv: list[str], problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert (
        capsys.readouterr().err.splitlines()[-1] == f"interaction-mcp-permission: error: {problem}"
    )


def test_a_page_that_cannot_be_served_is_a_one_line_error() -> None:
    # In a subprocess, as it is run: the failed bind's socket dies with the process.
    script = Path(sys.executable).parent / "interaction-mcp-permission"

    def serve(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(script), *argv],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        in_use = serve("--port", str(port))
    # 192.0.2.1 (TEST-NET-1) is never an address of this machine, and needs no DNS.
    foreign = serve("--host", "192.0.2.1")
    assert (in_use.returncode, in_use.stdout, in_use.stderr) == (
        1,
        "",
        f"interaction-mcp-permission: error: cannot serve the web page on 127.0.0.1:{port}:"
        " Address already in use\n",
    )
    assert (foreign.returncode, foreign.stdout, foreign.stderr) == (
        1,
        "",
        "interaction-mcp-permission: error: cannot serve the web page on 192.0.2.1:0:"
        " Cannot assign requested address\n",
    )


# ---------------------------------------------------------------------------- faults


def option(n: int) -> dict[str, Any]:
    return {"label": f"option {n}", "description": ""}


@pytest.mark.parametrize(
    ("questions", "fault"),
    [
        (
            [{**QUESTIONS[0], "options": [option(n) for n in range(1000)]}],
            "questions[0].options: has 1000 options; the limit is 6",
        ),
        (
            [{**QUESTIONS[0], "question": f"Question {n}?"} for n in range(50)],
            "questions: has 50 questions; the limit is 4",
        ),
        (
            [{**QUESTIONS[0], "question": "x" * 1_000_000}],
            "questions[0].question: is 1000000 characters long; the limit is 1000",
        ),
        (
            [{**QUESTIONS[0], "header": "h" * 41}],
            "questions[0].header: is 41 characters long; the limit is 40",
        ),
        (
            [{**QUESTIONS[0], "options": [{"label": "l" * 81}, option(1)]}],
            "questions[0].options[0].label: is 81 characters long; the limit is 80",
        ),
        (
            [{**QUESTIONS[0], "options": [{"label": "a", "description": "d" * 301}, option(1)]}],
            "questions[0].options[0].description: is 301 characters long; the limit is 300",
        ),
    ],
)
async def test_ask_user_question_beyond_the_tools_limits_is_denied_without_asking(
    questions: list[dict[str, Any]], fault: str
) -> None:
    decisions: list[dict[str, Any]] = []

    async def script(cli: FakeCLI) -> None:
        decisions.append(await cli.permission("AskUserQuestion", {"questions": questions}))

    scripted = ScriptedProvider({"q1": "pnpm"})
    await run(script, can_use_tool(scripted))
    assert decisions == [{"behavior": "deny", "message": f"AskUserQuestion: {fault} (BAD_REQUEST)"}]
    assert scripted.requests == []


async def test_wider_limits_let_a_bigger_batch_through() -> None:
    from interaction.tool import ToolLimits

    decisions: list[dict[str, Any]] = []
    questions = [{**QUESTIONS[0], "question": f"Question {n}?"} for n in range(5)]

    async def script(cli: FakeCLI) -> None:
        decisions.append(await cli.permission("AskUserQuestion", {"questions": questions}))

    scripted = ScriptedProvider({})
    await run(script, can_use_tool(scripted, limits=ToolLimits(max_questions=5)))
    assert decisions[0]["behavior"] == "allow"
    assert len(scripted.last_request.questions) == 5


async def test_deny_and_stop_interrupts_the_turn() -> None:
    decisions: list[dict[str, Any]] = []

    async def script(cli: FakeCLI) -> None:
        decisions.append(await cli.permission("Bash", {"command": "rm -rf /"}))

    scripted = ScriptedProvider({"permission": "Deny, and stop"})
    await run(script, can_use_tool(scripted))
    assert decisions == [
        {"behavior": "deny", "message": "The user denied Bash and stopped", "interrupt": True}
    ]
    labels = [o.label for o in scripted.last_request.questions[0].options]
    assert labels == ["Allow", "Deny", "Deny, and stop"]


async def test_the_permission_prompt_tool_carries_the_interrupt() -> None:
    from interaction.integrations.claude_agent_sdk import permission_prompt

    text = await permission_prompt(
        "Bash", {"command": "make"}, provider=ScriptedProvider({"permission": "Deny, and stop"})
    )
    assert json.loads(text) == {
        "behavior": "deny",
        "message": "The user denied Bash and stopped",
        "interrupt": True,
    }


# ---------------------------------------------------------------------------- provenance


async def test_the_asking_subagent_and_tool_are_the_requests_provenance() -> None:
    scripted = ScriptedProvider({"permission": "Allow", "q1": "npm"})
    context = ToolPermissionContext(tool_use_id="toolu_1", agent_id="researcher-7")
    await decide("Bash", {"command": "ls"}, context, provider=scripted)
    await decide("AskUserQuestion", {"questions": QUESTIONS[:1]}, context, provider=scripted)
    await decide("Bash", {"command": "ls"}, ToolPermissionContext(), provider=scripted)
    assert [request.provenance for request in scripted.requests] == [
        Provenance(source="subagent researcher-7", tool="Bash"),
        Provenance(source="subagent researcher-7", tool="AskUserQuestion"),
        Provenance(tool="Bash"),  # the main agent has no agent_id
    ]


@pytest.mark.parametrize("agent_id", ["", "\u200b", "a\x1b[2Jb", "x" * 300])
async def test_an_odd_agent_id_is_shown_safely_and_never_a_denial(agent_id: str) -> None:
    scripted = ScriptedProvider({"permission": "Allow"})
    context = ToolPermissionContext(agent_id=agent_id)
    assert await decide("Bash", {}, context, provider=scripted) == PermissionResultAllow()
    provenance = scripted.last_request.provenance
    assert provenance is not None
    assert provenance.source in (None, "subagent a\\x1b[2Jb", "subagent " + "x" * 191)
