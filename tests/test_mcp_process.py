"""The bridge across processes: stdio servers in subprocesses, real SDK and fastmcp clients.

- our server (tests/fixtures/mcp/bridge_server.py) driven by the official SDK client in
  its default (auto, 2026-07-28) mode and in legacy mode, and by a fastmcp 4.x client;
- a fastmcp server's ``ctx.elicit`` and an official-SDK ``elicit_form`` answered by our
  client callback;
- a raw JSON-RPC client that negotiates 2025-06-18 and sees only that version's schemas.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp.types as mcp_types
import pytest
from fastmcp import Client as FastMCPClient
from fastmcp.client.elicitation import ElicitResult as FastElicitResult
from fastmcp.client.transports import StdioTransport
from mcp.client import Client
from mcp.client.context import ClientRequestContext
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from interaction import AskUserQuestionAnswer, AskUserQuestionRequest
from interaction.mcp import elicitation_callback
from interaction.testing import BlockingProvider, ScriptedProvider

from .loopback import running
from .preloaded import PEERS, preloaded

__all__ = ["preloaded"]  # a fixture
pytestmark = pytest.mark.usefixtures("preloaded")  # every peer here is forked from a zygote

FIXTURES = Path(__file__).parent / "fixtures" / "mcp"
BRIDGE = str(FIXTURES / "bridge_server.py")
FASTMCP = str(FIXTURES / "fastmcp_server.py")
SCRIPT: dict[str, Any] = {"confirm": "Yes", "text": "Nova", "choices": ["safe", "fast"]}
PUBLISHED = '{"name": "Nova", "tags": ["fast", "safe"]}'
CANCELLED = "error:ASK_CANCELLED:the user dismissed ask_user_question without answering"
MODES = ["auto", "legacy"]

Callback = Callable[
    [ClientRequestContext, mcp_types.ElicitRequestParams],
    Awaitable[mcp_types.ElicitResult | mcp_types.ErrorData],
]


def server(path: str, **env: str) -> StdioServerParameters:
    command, *args = PEERS.argv(path)
    return StdioServerParameters(command=command, args=args, env=env or None)


def text_of(result: mcp_types.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, mcp_types.TextContent)
    return content.text


async def release(callback: Callback, mode: str, **env: str) -> str:
    async with Client(server(BRIDGE, **env), mode=mode, elicitation_callback=callback) as client:  # type: ignore[arg-type]
        return text_of(await client.call_tool("release", {"version": "2.0"}))


# ------------------------------------------------------------ the official SDK client


@pytest.mark.parametrize("mode", MODES)
async def test_the_sdk_client_answers_the_same_tool_in_either_mode(mode: str) -> None:
    provider = ScriptedProvider(SCRIPT)
    assert await release(elicitation_callback(provider), mode) == PUBLISHED
    assert [r.questions[0].question for r in provider.requests] == [
        "Publish 2.0?",
        "Release name?",
        "Tags?",
    ]


class Replies:
    """An elicitation callback whose reply is set before each call, so that one connection
    (one server process) serves every case of a test; it counts the elicitations it saw."""

    def __init__(self) -> None:
        self.reply = mcp_types.ElicitResult(action="cancel")
        self.seen = 0

    async def __call__(
        self, context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        self.seen += 1
        return self.reply


@pytest.mark.parametrize("mode", MODES)
async def test_the_sdk_client_declines_cancels_and_sends_invalid_content(mode: str) -> None:
    replies = Replies()

    async def release_with(reply: mcp_types.ElicitResult) -> str:
        replies.reply, replies.seen = reply, 0
        text = text_of(await client.call_tool("release", {"version": "2.0"}))
        assert replies.seen == 1  # the first question, answered with this reply, ended it
        return text

    async with Client(server(BRIDGE), mode=mode, elicitation_callback=replies) as client:
        assert await release_with(mcp_types.ElicitResult(action="decline")) == "not published"
        assert await release_with(mcp_types.ElicitResult(action="cancel")) == CANCELLED
        invalid = mcp_types.ElicitResult(action="accept", content={"confirm": "Maybe"})
        assert await release_with(invalid) == (
            "error:BAD_ANSWER:answers[0].selected[0]: question confirm offers no option 'Maybe'"
        )
        renamed = mcp_types.ElicitResult(action="accept", content={"Confirm": "Yes"})
        assert await release_with(renamed) == (
            "error:BAD_ANSWER:elicitation: content.Confirm: the form has no such field"
        )


class Tracked(BlockingProvider):
    """A blocking provider that says when its cleanup ran."""

    def __init__(self) -> None:
        super().__init__()
        self.cleaned = asyncio.Event()

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        try:
            return await super().ask(request)
        finally:
            self.cleaned.set()


async def test_a_legacy_push_times_out_and_the_clients_ask_is_cancelled() -> None:
    blocking = Tracked()
    request = json.dumps({"questions": [{"id": "q", "question": "Wait?"}]})
    callback = elicitation_callback(blocking)
    async with Client(server(BRIDGE), mode="legacy", elicitation_callback=callback) as client:
        # Long enough for the push to reach the client on a loaded machine.
        result = await client.call_tool("ask_batch", {"request_json": request, "timeout": 2.0})
        await asyncio.wait_for(blocking.cleaned.wait(), 30)
        assert len(blocking.requests) == 1
        assert blocking.pending == 0
    assert text_of(result) == (
        "error:ASK_TIMEOUT:ask_user_question timed out before the user answered"
    )


async def test_on_2026_07_28_a_human_slower_than_the_state_ttl_gets_a_clear_error() -> None:
    async def slow(
        context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        await anyio.sleep(0.3)  # outlive the 0.1 s the fixture's state is valid for
        return mcp_types.ElicitResult(action="accept", content={"confirm": "Yes"})

    async with Client(
        server(BRIDGE, INTERACTION_STATE_TTL="0.1"), elicitation_callback=slow
    ) as client:
        with pytest.raises(MCPError) as expired:
            await client.call_tool("release", {"version": "2.0"})
    assert expired.value.error.message == (
        "the request state has expired; call the tool again without it"
    )


# ------------------------------------------------------------------- a fastmcp client


def fast_client(handler: Any, mode: str, **env: str) -> FastMCPClient[Any]:
    command, *args = PEERS.argv(BRIDGE)
    transport = StdioTransport(command=command, args=args, env=env or None)
    return FastMCPClient(transport, elicitation_handler=handler, mode=mode)


@pytest.mark.parametrize("mode", MODES)
async def test_a_fastmcp_client_answers_declines_cancels_and_sends_invalid_content(
    mode: str,
) -> None:
    seen: list[dict[str, Any]] = []

    async def answer(message: str, response_type: Any, params: Any, context: Any) -> Any:
        schema = params.requested_schema
        seen.append(schema)
        if "confirm" in schema["properties"]:
            return {"confirm": "Yes"}
        if "text" in schema["properties"]:
            return {"text": "Nova"}
        return {"choices": ["fast", "safe"]}

    async def decline(message: str, response_type: Any, params: Any, context: Any) -> Any:
        return FastElicitResult(action="decline")

    async def cancel(message: str, response_type: Any, params: Any, context: Any) -> Any:
        return FastElicitResult(action="cancel")

    async def invalid(message: str, response_type: Any, params: Any, context: Any) -> Any:
        return FastElicitResult(action="accept", content={"confirm": "No", "extra": 1})

    handlers = [answer]

    async def current(message: str, response_type: Any, params: Any, context: Any) -> Any:
        return await handlers[-1](message, response_type, params, context)

    async with fast_client(current, mode) as client:  # one server process for every case

        async def release_with(handler: Any) -> str:
            handlers.append(handler)
            result = await client.call_tool("release", {"version": "2.0"})
            content = result.content[0]
            assert isinstance(content, mcp_types.TextContent)
            return content.text

        assert await release_with(answer) == PUBLISHED
        assert [next(iter(s["properties"])) for s in seen] == ["confirm", "text", "choices"]
        assert await release_with(decline) == "not published"
        assert await release_with(cancel) == CANCELLED
        assert await release_with(invalid) == (
            "error:BAD_ANSWER:elicitation: content.extra: the form has no such field"
        )


async def test_a_fastmcp_client_that_times_out_is_told_so() -> None:
    waiting = asyncio.Event()

    async def never(message: str, response_type: Any, params: Any, context: Any) -> Any:
        await waiting.wait()  # the server's timeout cancels this request
        raise AssertionError("unreachable")

    request = json.dumps({"questions": [{"id": "q", "question": "Wait?"}]})
    async with fast_client(never, "legacy") as client:
        result = await client.call_tool("ask_batch", {"request_json": request, "timeout": 0.3})
    content = result.content[0]
    assert isinstance(content, mcp_types.TextContent)
    assert content.text == "error:ASK_TIMEOUT:ask_user_question timed out before the user answered"


async def test_a_fastmcp_client_slower_than_the_state_ttl_gets_a_clear_error() -> None:
    async def slow(message: str, response_type: Any, params: Any, context: Any) -> Any:
        await anyio.sleep(0.3)  # outlive the 0.1 s the fixture's state is valid for
        return {"confirm": "Yes"}

    async with fast_client(slow, "auto", INTERACTION_STATE_TTL="0.1") as client:
        with pytest.raises(MCPError) as expired:
            await client.call_tool("release", {"version": "2.0"})
    assert expired.value.error.message == (
        "the request state has expired; call the tool again without it"
    )


# --------------------------------------------- our callback answering other servers


class Switch:
    """A provider whose answer is set before each call."""

    def __init__(self) -> None:
        self.script: dict[str, Any] = {}
        self.requests: list[AskUserQuestionRequest] = []

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        self.requests.append(request)
        return await ScriptedProvider(self.script).ask(request)


KINDS: list[tuple[str, dict[str, Any], object]] = [
    ("str", {"value": "hi"}, "hi"),
    ("int", {"value": "42"}, 42),
    ("float", {"value": "2.5"}, 2.5),
    ("bool", {"value": "No"}, False),
    ("literal", {"value": "high"}, "high"),
    ("enum", {"value": "green"}, "green"),
    ("multi", {"value": ["z", "x"]}, ["z", "x"]),
    (
        "model",
        {"name": "Ada", "age": "36", "ratio": "0.5", "vip": "Yes", "size": "m"},
        {"name": "Ada", "age": 36, "ratio": 0.5, "vip": True, "size": "m"},
    ),
]


async def test_our_callback_answers_a_fastmcp_servers_elicit_of_every_type() -> None:
    switch = Switch()
    callback = elicitation_callback(switch)
    results = {}
    async with Client(server(FASTMCP), mode="legacy", elicitation_callback=callback) as client:
        for kind, script, _ in KINDS:  # one server process for all of them
            switch.script = script
            results[kind] = json.loads(text_of(await client.call_tool("elicit", {"kind": kind})))
            asked = [q.id for q in switch.requests[-1].questions]
            assert asked == [*script, "interaction.send"]
    assert results == {kind: data for kind, _, data in KINDS}
    *model, decision = switch.requests[-1].questions
    assert [q.question for q in model] == ["Name", "Age", "Ratio", "Vip", "Size"]
    assert decision.question == "Send these answers to fastmcp-elicit-fixture?"
    assert [o.label for o in model[4].options] == ["s", "m"]


async def test_a_skipped_required_fastmcp_field_is_asked_again_then_an_error() -> None:
    switch = Switch()
    callback = elicitation_callback(switch)
    async with Client(server(FASTMCP), mode="legacy", elicitation_callback=callback) as client:
        result = await client.call_tool("elicit", {"kind": "int"})
    assert len(switch.requests) == 3
    assert "no valid answer after 3 tries (value: this field is required)" in text_of(result)


async def test_our_callback_answers_an_official_sdk_elicit_form() -> None:
    provider = ScriptedProvider({"stars": "5", "public": "Yes", "site": "https://example.com"})
    callback = elicitation_callback(provider)
    async with Client(server(BRIDGE), mode="legacy", elicitation_callback=callback) as client:
        result = await client.call_tool("survey", {})
    assert json.loads(text_of(result)) == {
        "action": "accept",
        "content": {"stars": 5, "public": True, "site": "https://example.com"},
    }


# --------------------------------------------------------- a raw 2025-06-18 client


class RawPeer:
    """Line-delimited JSON-RPC over a subprocess's stdio, with a timeout on every read."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        await self.process.stdin.drain()

    async def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        while True:
            line = await asyncio.wait_for(self.process.stdout.readline(), 30)
            assert line, "the server closed its output"
            message: dict[str, Any] = json.loads(line)
            if message.get("method", "").startswith("notifications/"):
                continue
            return message


def keywords(value: object) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in keywords(v)}
    if isinstance(value, list):
        return {k for v in value for k in keywords(v)}
    return set()


@contextlib.asynccontextmanager
async def raw_client(version: str) -> AsyncIterator[RawPeer]:
    """Our server in a subprocess, initialized by hand at protocol ``version``."""
    pipe, null = asyncio.subprocess.PIPE, asyncio.subprocess.DEVNULL
    async with running(*PEERS.argv(BRIDGE), stdin=pipe, stdout=pipe, stderr=null) as process:
        peer = RawPeer(process)
        try:
            await peer.send(
                {
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": version,
                        "capabilities": {"elicitation": {}},
                        "clientInfo": {"name": "raw", "version": "0"},
                    },
                }
            )
            initialized = await peer.receive()
            assert initialized["result"]["protocolVersion"] == version
            await peer.send({"method": "notifications/initialized"})
            yield peer
        finally:
            assert process.stdin is not None
            process.stdin.close()
            await asyncio.wait_for(process.wait(), 30)


async def test_a_raw_2025_03_26_client_is_no_provider_saying_why() -> None:
    batch = {"questions": [{"id": "q", "question": "Go?"}]}
    async with raw_client("2025-03-26") as peer:
        await peer.send(
            {
                "id": 2,
                "method": "tools/call",
                "params": {"name": "ask_batch", "arguments": {"request_json": json.dumps(batch)}},
            }
        )
        done = await peer.receive()
    assert done["result"]["content"][0]["text"] == (
        "error:NO_PROVIDER:the MCP client cannot answer questions: it speaks protocol"
        " 2025-03-26, which has no elicitation (it came in 2025-06-18)"
    )


async def test_a_raw_2025_06_18_client_gets_only_2025_06_18_schemas() -> None:
    async with raw_client("2025-06-18") as peer:
        batch = {
            "questions": [
                {
                    "id": "pkg-manager",
                    "question": "Which package manager?",
                    "options": [{"label": "pnpm", "description": "fast"}, {"label": "npm"}],
                },
                {
                    "id": "checks",
                    "question": "Which checks?",
                    "multiSelect": True,
                    "options": [{"label": "tests"}, {"label": "lint"}],
                },
            ]
        }
        await peer.send(
            {
                "id": 2,
                "method": "tools/call",
                "params": {"name": "ask_batch", "arguments": {"request_json": json.dumps(batch)}},
            }
        )
        ask = await peer.receive()
        assert ask["method"] == "elicitation/create"
        schema = ask["params"]["requestedSchema"]
        assert not keywords(schema) & {"oneOf", "anyOf", "const", "items", "uniqueItems"}
        properties = schema["properties"]
        assert properties["pkg_manager"]["enum"] == ["pnpm", "npm"]
        assert properties["pkg_manager"]["enumNames"] == ["pnpm — fast", "npm"]
        assert {k: v["type"] for k, v in properties.items()} == {
            "pkg_manager": "string",
            "pkg_manager__other": "string",
            "checks__1": "boolean",
            "checks__2": "boolean",
            "checks__other": "string",
        }
        await peer.send(
            {
                "id": ask["id"],
                "result": {
                    "action": "accept",
                    "content": {"pkg_manager": "npm", "checks__2": True, "checks__1": False},
                },
            }
        )
        done = await peer.receive()
        assert json.loads(done["result"]["content"][0]["text"]) == {
            "answers": [
                {"id": "pkg-manager", "selected": ["npm"]},
                {"id": "checks", "selected": ["lint"]},
            ]
        }
