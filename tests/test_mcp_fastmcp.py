"""FastMCP both ways, across processes, and the matrix.

The matrix: our tools served by the official SDK (``bridge_server.py``) and by FastMCP
(``fastmcp_bridge_server.py``) by the official client with ``elicitation_callback`` and
the FastMCP client with ``fastmcp_elicitation_handler`` by stdio and streamable HTTP by
legacy (2025-11-25) and 2026-07-28. Every cell runs the same four scenarios.

FastMCP's public surface the bridge reads is pinned at the end: a change in FastMCP fails
there by name before anything else breaks.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp.types as mcp_types
import pytest
from fastmcp import Client as FastMCPClient
from fastmcp import Context as FastMCPContext
from fastmcp import FastMCP
from fastmcp.client.elicitation import ElicitResult as FastMCPElicitResult
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError
from fastmcp.server.dependencies import FastMCPRequestContext
from fastmcp.server.middleware import Middleware
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.request_state import RequestStateSecurity
from mcp.shared.exceptions import MCPError

import interaction
from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    UserInteractionProvider,
)
from interaction.mcp import (
    ElicitationProvider,
    FastMCPRefusals,
    InputRequiredBridge,
    RedisSpentStore,
    elicitation_callback,
    fastmcp_elicitation_handler,
    interactive,
)
from interaction.mcp._fastmcp import NO_REFUSALS, call_reader
from interaction.mcp._server import NOT_SUSPENDABLE_FASTMCP
from interaction.mcp._suspend import arguments_digest
from interaction.testing import ScriptedProvider
from tests.helpers import import_error_without
from tests.loopback import free_port
from tests.mcp_http import ServerProcess
from tests.preloaded import PEERS, Zygotes, preloaded
from tests.test_mcp_suspend import PlainCodec, forge

FIXTURES = Path(__file__).parent / "fixtures" / "mcp"
SERVERS = {
    "sdk": str(FIXTURES / "bridge_server.py"),
    "fastmcp": str(FIXTURES / "fastmcp_bridge_server.py"),
}
MODES = {"legacy": "legacy", "2026-07-28": "auto"}

__all__ = ["preloaded"]  # a fixture
pytestmark = pytest.mark.usefixtures("preloaded")  # every stdio peer here is forked from a zygote
SCRIPT: dict[str, Any] = {"confirm": "Yes", "text": "Nova", "choices": ["safe", "fast"]}
PUBLISHED = '{"name": "Nova", "tags": ["fast", "safe"]}'


def decline_the_text(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
    """Yes to the confirmation, then declines the text question (not a yes/no)."""
    ids = [q.id for q in request.questions]
    if "text" in ids:
        return AskUserQuestionAnswer(
            [AskUserQuestionAnswerItem(i, ("Decline",) if i == ids[-1] else ()) for i in ids]
        )
    return AskUserQuestionAnswer(
        [AskUserQuestionAnswerItem(i, ("Yes",) if i == "confirm" else ()) for i in ids]
    )


SCENARIOS: list[tuple[str, Callable[[], ScriptedProvider], str]] = [
    ("answers", lambda: ScriptedProvider(SCRIPT), PUBLISHED),
    # A decline of a yes/no question is a skip: confirm() is False.
    ("declines yes/no", lambda: ScriptedProvider({"interaction.send": "Decline"}), "not published"),
    (
        "declines text",
        lambda: ScriptedProvider(decline_the_text),
        "error:ASK_DECLINED:the user declined to answer ask_user_question",
    ),
    (
        "cancels",
        lambda: ScriptedProvider(UserInteractionError("gone", ErrorCode.ASK_CANCELLED)),
        "error:ASK_CANCELLED:the user dismissed ask_user_question without answering",
    ),
]


@asynccontextmanager
async def connected(
    server: str,
    client: str,
    transport: str,
    mode: str,
    *,
    provider: UserInteractionProvider,
    url: str,
) -> AsyncIterator[Callable[[str, dict[str, Any]], Any]]:
    """A connected client of ``client`` kind; yields ``call(tool, arguments) -> text``."""
    if client == "sdk":
        target: Any = url
        if transport == "stdio":
            command, *args = PEERS.argv(SERVERS[server])
            target = StdioServerParameters(command=command, args=args)
        callback = elicitation_callback(provider)
        async with Client(target, mode=mode, elicitation_callback=callback) as sdk:

            async def call_sdk(tool: str, arguments: dict[str, Any]) -> str:
                block = (await sdk.call_tool(tool, arguments)).content[0]
                assert isinstance(block, mcp_types.TextContent)
                return block.text

            yield call_sdk
    else:
        fast_target: Any = url
        if transport == "stdio":
            command, *args = PEERS.argv(SERVERS[server])
            fast_target = StdioTransport(command=command, args=args)
        handler = fastmcp_elicitation_handler(provider)
        async with FastMCPClient(fast_target, elicitation_handler=handler, mode=mode) as fast:

            async def call_fast(tool: str, arguments: dict[str, Any]) -> str:
                block = (await fast.call_tool(tool, arguments)).content[0]
                assert isinstance(block, mcp_types.TextContent)
                return block.text

            yield call_fast


class Switch:
    """A provider that hands each ask to the scenario's provider of the moment, so one
    connection (one server process on stdio) serves every scenario of a cell."""

    def __init__(self) -> None:
        self.current = ScriptedProvider()

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return await self.current.ask(request)


@pytest.fixture(scope="module")
def http_server(preloaded: Zygotes) -> Iterator[Callable[[str], ServerProcess]]:
    """The server of each kind over streamable HTTP, started on first use and shared by the
    matrix's HTTP cells this worker runs: each cell opens its own session and asks under its
    own request states, and none restarts the process or sets anything in it."""
    started: dict[str, ServerProcess] = {}

    def of(kind: str) -> ServerProcess:
        if kind not in started:
            started[kind] = ServerProcess(SERVERS[kind]).start()
        return started[kind]

    try:
        yield of
    finally:
        for process in started.values():
            process.stop()


@pytest.mark.parametrize("generation", list(MODES))
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("client", ["sdk", "fastmcp"])
@pytest.mark.parametrize("server", ["sdk", "fastmcp"])
async def test_the_matrix(
    server: str,
    client: str,
    transport: str,
    generation: str,
    http_server: Callable[[str], ServerProcess],
) -> None:
    url = http_server(server).url if transport == "http" else ""
    switch = Switch()
    outcomes = {}
    async with connected(
        server, client, transport, MODES[generation], provider=switch, url=url
    ) as call:
        for name, make, _ in SCENARIOS:
            switch.current = make()
            outcomes[name] = await call("release", {"version": "2.0"})
            assert switch.current.requests, name  # the scenario's provider was asked
    assert outcomes == {name: expected for name, _, expected in SCENARIOS}


# --------------------------------------------------------------------- NO_PROVIDER


async def test_a_fastmcp_tool_without_interactive_is_told_the_fastmcp_remedy() -> None:
    provider = ScriptedProvider(SCRIPT)
    async with connected("fastmcp", "sdk", "stdio", "auto", provider=provider, url="") as call:
        assert await call("unwrapped", {}) == f"error:NO_PROVIDER:{NOT_SUSPENDABLE_FASTMCP}"
    async with connected("fastmcp", "sdk", "stdio", "legacy", provider=provider, url="") as call:
        assert await call("unwrapped", {}) == "True"
    assert NOT_SUSPENDABLE_FASTMCP.endswith(
        "; put @interaction.mcp.interactive under the FastMCP tool's @server.tool"
    )


@pytest.mark.parametrize("server", ["sdk", "fastmcp"])
async def test_stateless_http_legacy_is_no_provider_for_want_of_a_channel(server: str) -> None:
    provider = ScriptedProvider(SCRIPT)
    with ServerProcess(SERVERS[server], MCP_STATELESS="1") as process:
        async with connected(
            server, "sdk", "http", "legacy", provider=provider, url=process.url
        ) as call:
            text = await call("release", {"version": "2.0"})
        async with connected(
            server, "sdk", "http", "auto", provider=provider, url=process.url
        ) as call:
            modern = await call("release", {"version": "2.0"})
    assert text == (
        "error:NO_PROVIDER:the MCP client cannot answer questions: this connection has no"
        " channel for server-to-client requests, so elicitation/create cannot reach it"
    )
    assert modern == PUBLISHED  # 2026-07-28 needs no channel: it takes rounds
    assert provider.requests  # asked only on the 2026-07-28 connection


# ------------------------------------------- the bridge's refusals, on both server kinds


def refusing_server(
    kind: str, bridge: InputRequiredBridge, *, plain: bool
) -> tuple[Any, list[str]]:
    """A server of ``kind`` with one @bridge tool, ``pick``, and the list of its runs."""
    security = (
        RequestStateSecurity(codec=PlainCodec()) if plain else bridge.request_state_security()
    )
    runs: list[str] = []

    async def ask(provider: ElicitationProvider) -> str:
        runs.append("run")
        with interaction.provide(provider):
            return str(await interaction.confirm("Pick?"))

    if kind == "sdk":
        sdk = MCPServer("picker", request_state_security=security)

        @sdk.tool()
        @bridge
        async def pick(ctx: Context) -> str:
            return await ask(ElicitationProvider.from_context(ctx))

        return sdk, runs
    fast = FastMCP("picker", request_state_security=security, middleware=[FastMCPRefusals()])

    @fast.tool(name="pick")
    @bridge
    async def pick_fast(ctx: FastMCPContext) -> str:
        return await ask(ElicitationProvider.from_context(ctx))

    return fast, runs


@asynccontextmanager
async def session_of(kind: str, server: Any) -> AsyncIterator[Any]:
    """The connected client's session (2026-07-28), for rounds driven by hand."""
    if kind == "sdk":
        async with Client(server, elicitation_callback=elicitation_callback()) as sdk:
            yield sdk.session
    else:
        handler = fastmcp_elicitation_handler()
        async with FastMCPClient(server, elicitation_handler=handler) as fast:
            yield fast.session


YES = {"ask1": mcp_types.ElicitResult(action="accept", content={"confirm": "Yes"})}
USED = "the request state was already used; call the tool again without it"
EXPIRED = "the request state has expired; call the tool again without it"
FORGED = "the request state is not one this server issued for this tool call"
STORE_DOWN = (
    "the request state could not be checked against the spent-state store:"
    " the spent-state store at {where} cannot be used: ConnectionError"
)


@pytest.mark.parametrize("refusal", ["replayed", "expired", "forged", "store down"])
@pytest.mark.parametrize("kind", ["sdk", "fastmcp"])
async def test_a_refusal_is_the_same_json_rpc_error_on_both_server_kinds(
    kind: str, refusal: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    away = RedisSpentStore(f"redis://127.0.0.1:{free_port()}/0", timeout=1.0)
    bridge = {
        "replayed": InputRequiredBridge(),
        "expired": InputRequiredBridge(ttl=1e-9),  # expired before the reply comes
        "forged": InputRequiredBridge(),
        "store down": InputRequiredBridge(store=away),
    }[refusal]
    server, runs = refusing_server(kind, bridge, plain=refusal == "forged")
    try:
        async with session_of(kind, server) as session:
            first = await session.call_tool("pick", {}, allow_input_required=True)
            assert isinstance(first, mcp_types.InputRequiredResult)
            state = first.request_state
            assert state is not None
            if refusal == "replayed":
                done = await session.call_tool("pick", {}, input_responses=YES, request_state=state)
                assert done.content[0].text == "True"
            if refusal == "forged":
                state = forge(state, lambda inner: inner[:-4] + "0000")
            before = len(runs)
            with pytest.raises(MCPError) as refused:
                await session.call_tool(
                    "pick",
                    {},
                    input_responses=YES,
                    request_state=state,
                    allow_input_required=True,
                )
    finally:
        await away.aclose()
    assert len(runs) == before  # the tool did not run for the refused call
    if refusal == "store down":
        expected = (
            mcp_types.INTERNAL_ERROR,
            STORE_DOWN.format(where=away.where),
            {"code": "PROVIDER_FAILED"},
        )
    else:
        message = {"replayed": USED, "expired": EXPIRED, "forged": FORGED}[refusal]
        expected = (mcp_types.INVALID_PARAMS, message, {"code": "BAD_REQUEST"})
    error = refused.value.error
    assert (error.code, error.message, error.data) == expected
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []  # no traceback
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_a_fastmcp_tool_on_a_server_without_the_middleware_is_told_to_add_it() -> None:
    server = FastMCP("unguarded")

    @server.tool
    @interactive
    async def pick(ctx: FastMCPContext) -> str:
        with interaction.provide(ElicitationProvider.from_context(ctx)):
            return str(await interaction.confirm("Pick?"))

    provider = ScriptedProvider({"confirm": "Yes"})
    handler = fastmcp_elicitation_handler(provider)
    async with FastMCPClient(server, elicitation_handler=handler, mode="legacy") as client:
        assert (await client.call_tool("pick", {})).content[0].text == "True"  # pushed
    async with FastMCPClient(server, elicitation_handler=handler) as client:
        result = await client.call_tool("pick", {}, raise_on_error=False)
    assert result.is_error
    assert result.content[0].text == f"Error calling tool 'pick': {NO_REFUSALS}"
    assert len(provider.requests) == 1
    assert NO_REFUSALS == (
        "an @interactive FastMCP tool on a 2026-07-28 connection needs"
        " interaction.mcp.FastMCPRefusals() among the server's middleware"
        " (FastMCP(..., middleware=[FastMCPRefusals()])), so its refusals reach the client"
        " as JSON-RPC errors"
    )


# ----------------------------------------------------- the FastMCP handler refuses


async def test_the_fastmcp_handler_refuses_a_form_it_cannot_ask_saying_why() -> None:
    server = FastMCP("refuser")

    @server.tool
    async def odd(ctx: FastMCPContext) -> str:
        result = await ctx.session.elicit_form(
            "Code?", {"type": "object", "properties": {"code": {"type": "string", "pattern": "x"}}}
        )
        return result.action

    provider = ScriptedProvider()
    handler = fastmcp_elicitation_handler(provider)
    async with FastMCPClient(server, elicitation_handler=handler, mode="legacy") as client:
        with pytest.raises(ToolError) as refused:
            await client.call_tool("odd", {})
    assert "interaction cannot ask this form: field 'code' uses 'pattern'" in str(refused.value)
    assert provider.requests == []


async def test_a_fastmcp_tools_state_binds_to_its_function_and_arguments() -> None:
    """The SDK's seal binds the wire arguments too; the bridge's own binding reads the
    function and its arguments (FastMCP has no public way to the wire's)."""
    server = FastMCP("binder")

    async def greet(name: str, ctx: FastMCPContext, times: int = 1) -> str:
        read = call_reader(greet, (), {"name": name, "ctx": ctx, "times": times})
        assert read is not None
        call = read()
        assert call is not None
        return json.dumps([call.tool, call.digest(), call.version, call.request_state])

    server.tool(greet)
    async with FastMCPClient(server) as client:
        seen = []
        for arguments in (
            {"name": "ada"},
            {"name": "ada"},
            {"name": "bob"},
            {"name": "ada", "times": 2},
        ):
            block = (await client.call_tool("greet", arguments)).content[0]
            assert isinstance(block, mcp_types.TextContent)
            seen.append(json.loads(block.text))
    assert seen[0] == seen[1]
    assert seen[0][0] == f"{__name__}.{greet_qualname()}"
    assert seen[0][1] == arguments_digest({"name": "ada", "times": 1})
    assert len({entry[1] for entry in seen}) == 3
    assert seen[0][2:] == ["2026-07-28", None]
    assert call_reader(greet, ("x",), {}) is None  # no FastMCP context among the arguments


def greet_qualname() -> str:
    return "test_a_fastmcp_tools_state_binds_to_its_function_and_arguments.<locals>.greet"


# ------------------------------------------------- FastMCP's surface, pinned by name


def test_the_fastmcp_surface_the_bridge_reads_is_still_there() -> None:
    """What ``interaction.mcp._fastmcp`` reads of FastMCP (all public names). If this
    fails, FastMCP changed: update ``_fastmcp.py`` and the "FastMCP" section of docs/mcp.md.
    """
    for name in ("session", "request_id", "request_context", "request_state", "input_responses"):
        assert isinstance(inspect.getattr_static(FastMCPContext, name), property), name
    assert "protocol_version" in FastMCPRequestContext.__dataclass_fields__
    hook = inspect.signature(Middleware.on_call_tool)
    assert list(hook.parameters) == ["self", "context", "call_next"]
    assert ToolError("refused", log_level=logging.DEBUG).log_level == logging.DEBUG
    assert "content" in FastMCPElicitResult.model_fields
    assert FastMCPElicitResult(action="decline").action == "decline"
    handler = inspect.signature(fastmcp_elicitation_handler())
    assert list(handler.parameters) == ["message", "response_type", "params", "context"]


def test_without_fastmcp_its_support_names_the_extra() -> None:
    assert import_error_without("fastmcp", "interaction.mcp._fastmcp") == (
        'interaction.mcp\'s FastMCP support needs fastmcp: pip install "interaction-seam[fastmcp]"'
    )


async def test_arguments_that_are_not_json_are_a_clear_type_error() -> None:
    server = FastMCP("odd-arguments")

    class Opaque:
        pass

    async def tool(ctx: FastMCPContext, thing: object = None) -> str:
        read = call_reader(tool, (), {"ctx": ctx, "thing": Opaque()})
        assert read is not None
        call = read()  # the arguments are read only when a state binds to them
        assert call is not None
        with pytest.raises(TypeError) as refused:
            call.digest()
        return str(refused.value)

    server.tool(tool)
    async with FastMCPClient(server) as client:
        block = (await client.call_tool("tool", {})).content[0]
    assert isinstance(block, mcp_types.TextContent)
    assert block.text == (
        "an @interactive FastMCP tool's arguments must be JSON-serializable (the request state"
        " is bound to them)"
    )


async def test_the_fastmcp_handler_names_the_requesting_server() -> None:
    server = FastMCP("named-server", middleware=[FastMCPRefusals()])

    @server.tool
    @interactive
    async def ask_name(ctx: FastMCPContext) -> str:
        import interaction

        with interaction.provide(ElicitationProvider.from_context(ctx)):
            return str(await interaction.ask_text("Name?"))

    for mode in ("auto", "legacy"):
        provider = ScriptedProvider({"text": "Ada"})
        handler = fastmcp_elicitation_handler(provider)
        async with FastMCPClient(server, elicitation_handler=handler, mode=mode) as client:
            block = (await client.call_tool("ask_name", {})).content[0]
        assert isinstance(block, mcp_types.TextContent)
        assert block.text == "Ada"
        provenance = provider.last_request.provenance
        assert provenance is not None
        assert provenance.source == "named-server"
        assert provider.last_request.questions[-1].question == (
            "Send these answers to named-server?"
        )
