"""Who decided, when the answer comes from a remote peer: the MCP client (by the name of its
``clientInfo``), the ACP client (its ``client_info``), the A2A caller (the server's
authenticated user). Each bridge runs end to end with the other side's SDK, an
``AuditProvider`` around it writing a real JSONL log; the record names the peer."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, cast

import acp
import httpx
import pytest
import uvicorn
from a2a.client import ClientConfig, create_client
from a2a.helpers.proto_helpers import get_message_text, new_text_part
from a2a.server.agent_execution import RequestContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Role,
    Task,
    TaskState,
)
from acp.schema import (
    AgentCapabilities as ACPAgentCapabilities,
)
from acp.schema import (
    ClientCapabilities,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
)
from hypothesis import given
from hypothesis import strategies as st
from mcp import types as mcp_types
from mcp.client import Client
from mcp.server.mcpserver import Context
from starlette.applications import Starlette
from starlette.authentication import (
    AuthCredentials,
    AuthenticationBackend,
    BaseUser,
    SimpleUser,
)
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection

import interaction
from interaction import UserInteractionError, cancelled_error, escape_controls, provide
from interaction.a2a import InteractiveExecutor, send_and_answer
from interaction.acp import ACPProvider, InteractionClient
from interaction.audit import AuditProvider, JsonlAuditLog, read_jsonl, verify
from interaction.decisions import MAX_NAME, Decision, peer_decision
from interaction.mcp import ElicitationProvider, InteractiveMCPServer, elicitation_callback
from interaction.testing import ScriptedProvider

LOCAL = "the-servers-own-user"
"""The ``answerer`` given to each AuditProvider: it must never be the one recorded."""


def outcomes(path: Path) -> list[tuple[Any, ...]]:
    records = [json.loads(line) for _, line in read_jsonl(path)]
    assert verify(read_jsonl(path))[0] == []
    return [(r["outcome"], r["decidedBy"], r["answerer"]) for r in records]


# ------------------------------------------------------------------------------ the name


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("zed", Decision("human", "zed")),
        ("  claude-code \n", Decision("human", "claude-code")),
        ("\x1b[31mred\x1b[0m", Decision("human", "\\x1b[31mred\\x1b[0m")),
        ("a\u202eb", Decision("human", "a\\u202eb")),
        ("n" * MAX_NAME, Decision("human", "n" * MAX_NAME)),
        ("n" * (MAX_NAME + 1), Decision("human", "n" * MAX_NAME + "…")),
        ("", Decision("human")),
        ("   ", Decision("human")),
        (None, Decision("human")),
        (42, Decision("human")),
    ],
)
def test_a_peers_name_is_kept_stripped_escaped_and_bounded(
    given: object, expected: Decision
) -> None:
    assert peer_decision(given) == expected


@given(st.text())
def test_any_peer_name_is_recorded_bounded_and_with_no_control_character(name: str) -> None:
    decision = peer_decision(name)
    assert decision.by == "human"
    if decision.name is None:
        assert not name.strip()
        return
    assert len(decision.name) <= MAX_NAME + 1
    assert escape_controls(decision.name, keep_newlines=False) == decision.name
    assert decision.name == peer_decision(decision.name).name or len(decision.name) > MAX_NAME


# ----------------------------------------------------------------------------------- MCP


def mcp_server(path: Path) -> tuple[InteractiveMCPServer, JsonlAuditLog]:
    server = InteractiveMCPServer("release-bot")
    log = JsonlAuditLog(path)

    @server.tool()
    async def release(ctx: Context) -> str:
        audited = AuditProvider(ElicitationProvider.from_context(ctx), log, answerer=LOCAL)
        with provide(audited):
            try:
                return "published" if await interaction.confirm("Publish 2.0?") else "kept"
            except UserInteractionError as error:
                return error.code

    return server, log


async def call_release(
    server: InteractiveMCPServer, mode: str, human: ScriptedProvider, name: str
) -> str:
    info = mcp_types.Implementation(name=name, version="1.0")
    async with Client(
        server, mode=mode, elicitation_callback=elicitation_callback(human), client_info=info
    ) as client:
        result = await client.call_tool("release", {})
    content = result.content[0]
    assert isinstance(content, mcp_types.TextContent)
    return content.text


# auto negotiates 2026-07-28 (input-required rounds); legacy is 2025-11-25 (a push)
ROUNDS = {"auto": [("suspended", None, None)], "legacy": []}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_mcp_the_clients_name_is_who_answered(tmp_path: Path, mode: str) -> None:
    server, log = mcp_server(tmp_path / "audit.jsonl")
    text = await call_release(server, mode, ScriptedProvider({"confirm": "Yes"}), "zed-test")
    log.close()
    assert text == "published"
    assert outcomes(tmp_path / "audit.jsonl") == [
        *ROUNDS[mode],
        ("answered", "human", "zed-test"),
    ]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_mcp_a_cancel_on_the_client_is_the_clients_decision(
    tmp_path: Path, mode: str
) -> None:
    server, log = mcp_server(tmp_path / "audit.jsonl")
    text = await call_release(server, mode, ScriptedProvider(cancelled_error()), "zed-test")
    log.close()
    assert text == "ASK_CANCELLED"
    assert outcomes(tmp_path / "audit.jsonl") == [
        *ROUNDS[mode],
        ("cancelled", "human", "zed-test"),
    ]


async def test_mcp_a_hostile_client_name_is_recorded_escaped_and_cut(tmp_path: Path) -> None:
    server, log = mcp_server(tmp_path / "audit.jsonl")
    name = "\x1b]0;pwned\x07" + "x" * 300
    await call_release(server, "legacy", ScriptedProvider({"confirm": "No"}), name)
    log.close()
    ((outcome, by, answerer),) = outcomes(tmp_path / "audit.jsonl")
    assert (outcome, by) == ("answered", "human")
    assert answerer == ("\\x1b]0;pwned\\x07" + "x" * 300)[:MAX_NAME] + "…"


# ----------------------------------------------------------------------------------- ACP


class ReleaseAgent:
    """An ACP agent whose turn asks through an audited ACPProvider."""

    def __init__(self, log: JsonlAuditLog, *, tell_client_info: bool = True) -> None:
        self.log = log
        self.tell_client_info = tell_client_info
        self.conn: Any = None
        self.capabilities: ClientCapabilities | None = None
        self.client_info: Implementation | None = None
        self.outcomes: list[str] = []

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self.capabilities = client_capabilities
        self.client_info = client_info
        return InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=ACPAgentCapabilities(),
            agent_info=Implementation(name="release-agent", version="1.0"),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id="s1")

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        asker = ACPProvider(
            self.conn,
            session_id,
            client_capabilities=self.capabilities,
            client_info=self.client_info if self.tell_client_info else None,
        )
        with provide(AuditProvider(asker, self.log, answerer=LOCAL)):
            try:
                if await interaction.confirm("Publish 2.0?"):
                    pm = await interaction.choose("Which package manager?", ["npm", "pnpm"])
                    self.outcomes.append(f"published with {pm}")
            except UserInteractionError as error:
                self.outcomes.append(error.code)
        return PromptResponse(stop_reason="end_turn")


async def acp_turn(agent: ReleaseAgent, human: ScriptedProvider, name: str) -> None:
    editor = InteractionClient(human)
    left, right = socket.socketpair()
    agent_reader, agent_writer = await asyncio.open_connection(sock=left)
    editor_reader, editor_writer = await asyncio.open_connection(sock=right)
    serving = asyncio.create_task(
        acp.run_agent(cast(Any, agent), agent_writer, agent_reader, use_unstable_protocol=True)
    )
    try:
        conn = acp.connect_to_agent(
            editor, editor_writer, editor_reader, use_unstable_protocol=True
        )
        forms = ElicitationCapabilities(form=ElicitationFormCapabilities())
        await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(elicitation=forms),
            client_info=Implementation(name=name, version="0.1"),
        )
        session = await conn.new_session(cwd="/")
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("release")])
        await conn.close()
    finally:
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
        for writer in (agent_writer, editor_writer):
            writer.close()
            await writer.wait_closed()


async def test_acp_the_clients_name_is_who_answered_a_permission_and_a_form(
    tmp_path: Path,
) -> None:
    log = JsonlAuditLog(tmp_path / "audit.jsonl")
    agent = ReleaseAgent(log)
    await acp_turn(agent, ScriptedProvider({"permission": "Yes", "choice": "pnpm"}), "zed")
    log.close()
    assert agent.outcomes == ["published with pnpm"]
    assert outcomes(tmp_path / "audit.jsonl") == [
        ("answered", "human", "zed"),  # session/request_permission
        ("answered", "human", "zed"),  # elicitation/create
    ]


async def test_acp_a_cancel_is_the_clients_and_no_info_names_nobody(tmp_path: Path) -> None:
    log = JsonlAuditLog(tmp_path / "audit.jsonl")
    agent = ReleaseAgent(log, tell_client_info=False)
    await acp_turn(agent, ScriptedProvider(cancelled_error()), "zed")
    log.close()
    assert agent.outcomes == ["ASK_CANCELLED"]
    # The person at the client decided, so the local answerer is not named for them.
    assert outcomes(tmp_path / "audit.jsonl") == [("cancelled", "human", None)]


# ----------------------------------------------------------------------------------- A2A


class BearerUsers(AuthenticationBackend):
    """The server's authentication: a bearer token names its user."""

    def __init__(self, users: dict[str, str]) -> None:
        self.users = users

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        scheme, _, token = conn.headers.get("authorization", "").partition(" ")
        name = self.users.get(token) if scheme.lower() == "bearer" else None
        return None if name is None else (AuthCredentials(["authenticated"]), SimpleUser(name))


async def release(context: RequestContext, message: Message) -> str:
    if not await interaction.confirm("Publish 2.0?", id="publish"):
        return "not published"
    checks = await interaction.choose_many("Which checks first?", ["lint", "types"])
    return f"published after {', '.join(checks.selected)}"


@contextlib.asynccontextmanager
async def a2a_agent(
    wrap: Callable[[interaction.UserInteractionProvider], interaction.UserInteractionProvider],
) -> AsyncIterator[tuple[str, AgentCard]]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    card = AgentCard(
        name="release-agent",
        description="Publishes releases, after asking.",
        version="1.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="release", name="release", description="Release", tags=["ops"])],
    )
    executor = InteractiveExecutor(release, key=b"a key of at least 16 bytes", wrap=wrap)
    handler = DefaultRequestHandler(
        agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card
    )
    app = Starlette(
        routes=create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/"),
        middleware=[
            Middleware(AuthenticationMiddleware, backend=BearerUsers({"alice-token": "alice"}))
        ],
    )
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield url, card
    finally:
        server.should_exit = True
        await serving
        sock.close()


@pytest.mark.parametrize(
    ("token", "who"), [("alice-token", "alice"), (None, None)], ids=["authenticated", "anonymous"]
)
async def test_a2a_the_authenticated_caller_is_who_answered(
    tmp_path: Path, token: str | None, who: str | None
) -> None:
    log = JsonlAuditLog(tmp_path / "audit.jsonl")
    human = ScriptedProvider({"publish": "Yes", "choices": ["types", "lint"]})
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    async with (
        a2a_agent(lambda bridge: AuditProvider(bridge, log, answerer=LOCAL)) as (url, card),
        httpx.AsyncClient(headers=headers) as http,
    ):
        client = await create_client(url, ClientConfig(streaming=False, httpx_client=http))
        try:
            message = Message(
                role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[new_text_part("go")]
            )
            task = await send_and_answer(client, message, human, agent_card=card)
        finally:
            await client.close()
    log.close()
    assert isinstance(task, Task)
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_message_text(task.status.message) == "published after types, lint"
    # Each run of the work: the reply's answer once (the asks before it are replayed by
    # resume(), which no provider sees), then the next question's suspension.
    assert outcomes(tmp_path / "audit.jsonl") == [
        ("suspended", None, None),
        ("answered", "human", who),
        ("suspended", None, None),
        ("answered", "human", who),
    ]
