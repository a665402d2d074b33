"""At most once across restarts and workers: real server processes over streamable HTTP,
one secret, one real redis-server as the spent-state store.

Each test drives the 2026-07-28 rounds by hand (``allow_input_required``), so a state
issued by one process can be sent to another: a restarted one, a second worker, a server
under another secret.
"""

from __future__ import annotations

import asyncio
import math
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import mcp.types as mcp_types
import pytest
from mcp.client import Client
from mcp.client.context import ClientRequestContext
from mcp.server.request_state import InvalidRequestState
from mcp.shared.exceptions import MCPError

from interaction.mcp import (
    SECRET_VARIABLE,
    InputRequiredBridge,
    InteractiveMCPServer,
    MemorySpentStore,
    RedisSpentStore,
    SpentStoreUnavailable,
)
from tests.helpers import import_error_without
from tests.loopback import free_port
from tests.mcp_http import InterpreterProcess, ServerProcess
from tests.preloaded import preloaded
from tests.redis_server import RedisServer

BRIDGE = str(Path(__file__).parent / "fixtures" / "mcp" / "bridge_server.py")
USED = "the request state was already used; call the tool again without it"
EXPIRED = "the request state has expired; call the tool again without it"
FORGED = "the request state is not one this server issued for this tool call"

__all__ = ["preloaded"]  # a fixture
pytestmark = pytest.mark.usefixtures("preloaded")  # the servers are forks of a zygote


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with RedisServer(tmp_path_factory.mktemp("redis")) as server:
        yield server


def worker(
    redis: RedisServer, secret: str, *, prefix: str, forked: bool = True, **env: str
) -> ServerProcess:
    """A server process (not started) sharing ``secret`` and the store under ``prefix``."""
    return (ServerProcess if forked else InterpreterProcess)(
        BRIDGE,
        **{SECRET_VARIABLE: secret, "INTERACTION_REDIS_URL": redis.url, **env},
        INTERACTION_REDIS_PREFIX=prefix,
    )


async def never(
    context: ClientRequestContext, params: mcp_types.ElicitRequestParams
) -> mcp_types.ElicitResult:
    """Declares the elicitation capability; the rounds are driven by hand, never through it."""
    raise AssertionError("the tests answer the rounds themselves")


def accept(**content: str) -> mcp_types.ElicitResult:
    return mcp_types.ElicitResult(action="accept", content=dict(content))


async def first_round(url: str) -> str:
    """The state of ``release``'s first ask, from the server at ``url``."""
    async with Client(url, elicitation_callback=never) as client:
        first = await client.session.call_tool(
            "release", {"version": "2.0"}, allow_input_required=True
        )
    assert isinstance(first, mcp_types.InputRequiredResult)
    assert list(first.input_requests or {}) == ["ask1"]
    assert first.request_state is not None
    return first.request_state


async def answer(url: str, state: str, **content: str) -> str:
    """The next round at ``url``: its result, or the message of the error it is refused with."""
    async with Client(url, elicitation_callback=never) as client:
        try:
            result = await client.session.call_tool(
                "release",
                {"version": "2.0"},
                input_responses={"ask1": accept(**content)},
                request_state=state,
                allow_input_required=True,
            )
        except MCPError as error:
            return error.error.message
    assert isinstance(result, mcp_types.InputRequiredResult | mcp_types.CallToolResult)
    if isinstance(result, mcp_types.InputRequiredResult):
        return f"next:{','.join(result.input_requests or {})}"
    block = result.content[0]
    assert isinstance(block, mcp_types.TextContent)
    return block.text


async def test_a_restart_between_rounds_resumes_and_a_replay_after_it_is_refused(
    redis: RedisServer,
) -> None:
    secret = secrets.token_hex(32)
    with worker(redis, secret, prefix="restart") as process:
        state = await first_round(process.url)
        process.restart()
        assert await answer(process.url, state, confirm="No") == "not published"
        process.restart()
        assert await answer(process.url, state, confirm="Yes") == USED


async def test_two_workers_behind_one_redis_refuse_the_second_redemption(
    redis: RedisServer,
) -> None:
    secret = secrets.token_hex(32)
    with (
        worker(redis, secret, prefix="workers") as one,
        worker(redis, secret, prefix="workers") as two,
    ):
        state = await first_round(one.url)
        assert await answer(two.url, state, confirm="Yes") == "next:ask2"
        assert await answer(one.url, state, confirm="No") == USED
        assert await answer(two.url, state, confirm="No") == USED
        # At the same moment on both workers: exactly one redemption wins.
        state = await first_round(two.url)
        raced = await asyncio.gather(
            answer(one.url, state, confirm="No"), answer(two.url, state, confirm="No")
        )
        assert sorted(raced) == sorted(["not published", USED])


async def test_without_a_shared_store_a_restart_forgets_what_was_spent(
    redis: RedisServer,
) -> None:
    """Why a restarting deployment needs the shared store: the in-process one forgets."""
    secret = secrets.token_hex(32)
    with ServerProcess(BRIDGE, **{SECRET_VARIABLE: secret}) as process:
        state = await first_round(process.url)
        assert await answer(process.url, state, confirm="No") == "not published"
        assert await answer(process.url, state, confirm="No") == USED
        process.restart()
        assert await answer(process.url, state, confirm="No") == "not published"


async def test_an_expired_state_is_refused_after_a_restart(redis: RedisServer) -> None:
    secret = secrets.token_hex(32)
    restarting = worker(redis, secret, prefix="expired", forked=False, INTERACTION_STATE_TTL="0.5")
    with restarting as process:
        state = await first_round(process.url)
        process.restart()  # an interpreter's start: longer than the state's half second
        assert await answer(process.url, state, confirm="No") == EXPIRED


async def test_a_state_of_another_secret_or_another_server_name_is_refused(
    redis: RedisServer,
) -> None:
    with (
        worker(redis, secrets.token_hex(32), prefix="foreign") as ours,
        worker(redis, secrets.token_hex(32), prefix="foreign") as theirs,
    ):
        state = await first_round(theirs.url)
        # The SDK's seal, under a key derived from the other secret, is refused first.
        assert await answer(ours.url, state, confirm="Yes") == "Invalid or expired requestState"
    secret = secrets.token_hex(32)
    with (
        worker(redis, secret, prefix="foreign") as ours,
        worker(redis, secret, prefix="foreign", MCP_SERVER_NAME="another-service") as theirs,
    ):
        state = await first_round(theirs.url)
        # Same secret, another service: the SDK's audience claim refuses it.
        assert await answer(ours.url, state, confirm="Yes") == "Invalid or expired requestState"
        assert await answer(theirs.url, state, confirm="No") == "not published"


async def test_a_redis_store_refuses_twice_and_fails_closed_when_redis_is_away(
    redis: RedisServer,
) -> None:
    store = RedisSpentStore(redis.url, prefix="unit")
    try:
        assert await store.spend("n1", 2e9)
        assert not await store.spend("n1", 2e9)
        assert await store.spend("n2", 2e9)
    finally:
        await store.aclose()
    away = RedisSpentStore(f"redis://127.0.0.1:{free_port()}/0", timeout=1.0)
    try:
        with pytest.raises(SpentStoreUnavailable) as failed:
            await away.spend("n1", 2e9)
    finally:
        await away.aclose()
    assert str(failed.value) == (
        f"the spent-state store at {away.where} cannot be used: ConnectionError"
    )


async def test_a_server_whose_store_is_away_refuses_the_state_and_does_not_resume() -> None:
    dead = f"127.0.0.1:{free_port()}"
    env = {SECRET_VARIABLE: secrets.token_hex(32), "INTERACTION_REDIS_URL": f"redis://{dead}/0"}
    with ServerProcess(BRIDGE, **env) as process:
        state = await first_round(process.url)
        assert await answer(process.url, state, confirm="No") == (
            "the request state could not be checked against the spent-state store:"
            f" the spent-state store at {dead} cannot be used: ConnectionError"
        )


async def test_a_memory_store_refuses_twice() -> None:
    store = MemorySpentStore()
    assert await store.spend("n", 2e9)
    assert not await store.spend("n", 2e9)
    assert len(store) == 1


# ------------------------------------------------------------------ configuration


def test_the_secret_comes_from_the_environment_and_is_never_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(SECRET_VARIABLE, raising=False)
    with pytest.raises(ValueError, match="is not set") as unset:
        InputRequiredBridge.from_env()
    assert str(unset.value) == (
        "the environment variable INTERACTION_MCP_SECRET (the request-state secret) is not set"
    )
    monkeypatch.setenv(SECRET_VARIABLE, "tooshort-secret-value")
    with pytest.raises(ValueError, match="at least 32 bytes") as short:
        InputRequiredBridge.from_env()
    assert str(short.value) == (
        "the environment variable INTERACTION_MCP_SECRET must hold at least 32 bytes"
    )
    assert "tooshort" not in str(short.value)
    monkeypatch.setenv(SECRET_VARIABLE, "s" * 32)
    bridge = InputRequiredBridge.from_env(ttl=5)
    assert (bridge.shared, bridge.ttl, InputRequiredBridge().shared) == (True, 5, False)


def test_one_secret_gives_the_same_keys_to_every_process_and_other_secrets_others() -> None:
    one, again, other = (InputRequiredBridge(s, ttl=30) for s in ("a" * 32, b"a" * 32, "b" * 32))
    security = one.request_state_security()
    assert security.ttl == 90.0  # the bridge's ttl plus the 60 s margin
    sealed = security.codec.seal(b"state")
    assert again.request_state_security().codec.unseal(sealed) == b"state"
    with pytest.raises(InvalidRequestState):
        other.request_state_security().codec.unseal(sealed)


@pytest.mark.parametrize("ttl", [0.0, -1.0, math.inf, math.nan])
def test_a_ttl_that_is_not_a_positive_finite_number_is_refused(ttl: float) -> None:
    with pytest.raises(ValueError, match="positive number of seconds"):
        InputRequiredBridge(ttl=ttl)


def test_interactive_mcp_server_keys_the_sdks_seal_from_a_given_secret_only() -> None:
    shared = InputRequiredBridge("c" * 32)
    assert isinstance(InteractiveMCPServer("keyed", bridge=shared), InteractiveMCPServer)
    with pytest.raises(ValueError, match="has no name"):  # the SDK: shared keys need a name
        InteractiveMCPServer(bridge=shared)
    InteractiveMCPServer(bridge=InputRequiredBridge())  # a process-local secret: no need


def test_without_the_redis_extra_the_store_names_it() -> None:
    assert import_error_without("redis", "interaction.redis_spent") == (
        "interaction.redis_spent.RedisSpentStore needs the redis client:"
        ' pip install "interaction-seam[redis]"'
    )


def test_interaction_mcp_loads_neither_redis_nor_fastmcp() -> None:
    code = (
        "import sys, interaction.mcp; print('redis' in sys.modules, 'fastmcp' in sys.modules);"
        " interaction.mcp.RedisSpentStore; print('redis' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "True"]
