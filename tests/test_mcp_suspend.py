"""2026-07-28 connections: asks become input-required results and resume the tool."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Awaitable, Callable
from typing import Any, cast

import mcp.types as mcp_types
import pytest
from mcp.client import Client
from mcp.client.context import ClientRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import UnexpectedToolError
from mcp.server.request_state import RequestStateSecurity
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError

import interaction
from interaction import ErrorCode, UserInteractionError, spent
from interaction.mcp import (
    ElicitationProvider,
    InputRequiredBridge,
    InteractiveMCPServer,
    MemorySpentStore,
    _suspend,
    elicitation_callback,
    interactive,
)
from interaction.testing import ScriptedProvider


class PlainCodec:
    """A codec that does not protect anything, so the tests can forge what is under it."""

    def seal(self, payload: bytes) -> str:
        return base64.urlsafe_b64encode(payload).decode()

    def unseal(self, token: str) -> bytes:
        return base64.urlsafe_b64decode(token)


def make_server(bridge: InputRequiredBridge = interactive, *, plain: bool = False) -> MCPServer:
    security = RequestStateSecurity(codec=PlainCodec()) if plain else None
    server = MCPServer("releaser", request_state_security=security)
    runs: list[str] = []

    @server.tool()
    @bridge
    async def release(version: str, ctx: Context) -> str:
        runs.append(version)
        try:
            with interaction.provide(ElicitationProvider.from_context(ctx)):
                if not await interaction.confirm(f"Publish {version}?"):
                    return "not published"
                name = await interaction.ask_text("Release name?")
                tags = await interaction.choose_many("Tags?", ["fast", "safe", "small"])
        except UserInteractionError as error:
            return f"error:{error.code}:{error.message}"
        return json.dumps({"name": name, "tags": list(tags.selected), "runs": len(runs)})

    @server.tool()
    @bridge
    async def persist(ctx: Context) -> str:
        outcomes = []
        with interaction.provide(ElicitationProvider.from_context(ctx)):
            for n in range(2):
                try:
                    outcomes.append(await interaction.ask_text(f"Name {n}?"))
                except UserInteractionError as error:
                    outcomes.append(error.code)
        return json.dumps(outcomes)

    @server.tool()
    @bridge
    async def can_ask(ctx: Context) -> str:
        return str(ElicitationProvider.from_context(ctx).supports_elicitation())

    @server.tool()
    async def can_push(ctx: Context) -> str:
        return str(ElicitationProvider.from_context(ctx).supports_elicitation())

    @server.tool()
    async def unwrapped(ctx: Context) -> str:
        try:
            with interaction.provide(ElicitationProvider.from_context(ctx)):
                return str(await interaction.confirm("Go?"))
        except UserInteractionError as error:
            return f"error:{error.code}:{error.message}"

    return server


def text_of(result: mcp_types.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, mcp_types.TextContent)
    return content.text


UNUSED = elicitation_callback(ScriptedProvider())
"""Declares the capability; the tests that drive rounds by hand never reach it."""

SCRIPT: dict[str, Any] = {"confirm": "Yes", "text": "Nova", "choices": ["safe", "fast"]}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_same_tool_asks_three_times_on_both_generations(mode: str) -> None:
    provider = ScriptedProvider(SCRIPT)
    callback = elicitation_callback(provider)
    async with Client(make_server(), mode=mode, elicitation_callback=callback) as client:
        result = await client.call_tool("release", {"version": "2.0"})
    answer = json.loads(text_of(result))
    assert answer["name"] == "Nova"
    assert sorted(answer["tags"]) == ["fast", "safe"]
    # A push runs the tool once; input-required rounds run it once per question plus one.
    assert answer["runs"] == (4 if mode == "auto" else 1)
    assert [r.questions[0].question for r in provider.requests] == [
        "Publish 2.0?",
        "Release name?",
        "Tags?",
    ]


async def test_each_round_is_an_input_required_result_with_the_form_and_a_state() -> None:
    async with Client(make_server(), elicitation_callback=UNUSED) as client:
        first = await client.session.call_tool(
            "release", {"version": "2.0"}, allow_input_required=True
        )
        assert isinstance(first, mcp_types.InputRequiredResult)
        assert first.input_requests is not None
        assert list(first.input_requests) == ["ask1"]
        form = first.input_requests["ask1"]
        assert isinstance(form, mcp_types.ElicitRequest)
        assert isinstance(form.params, mcp_types.ElicitRequestFormParams)
        assert form.params.message == "Publish 2.0?"
        assert form.params.requested_schema["properties"]["confirm"]["oneOf"] == [
            {"const": "Yes", "title": "Yes"},
            {"const": "No", "title": "No"},
        ]
        assert first.request_state
        second = await client.session.call_tool(
            "release",
            {"version": "2.0"},
            input_responses={
                "ask1": mcp_types.ElicitResult(action="accept", content={"confirm": "Yes"})
            },
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert isinstance(second, mcp_types.InputRequiredResult)
        assert second.input_requests is not None
        assert list(second.input_requests) == ["ask2"]

        # The same state again is a replay: refused, whatever the response says.
        with pytest.raises(MCPError) as replayed:
            await client.session.call_tool(
                "release",
                {"version": "2.0"},
                input_responses={
                    "ask1": mcp_types.ElicitResult(action="accept", content={"confirm": "No"})
                },
                request_state=first.request_state,
                allow_input_required=True,
            )
    assert replayed.value.error.message == (
        "the request state was already used; call the tool again without it"
    )
    assert replayed.value.error.data == {"code": "BAD_REQUEST"}


def forge(token: str, change: Any) -> str:
    """The token with the bridge's state under it changed (the SDK codec here is plain)."""
    envelope = json.loads(base64.urlsafe_b64decode(token))
    envelope["s"] = change(envelope["s"])
    return base64.urlsafe_b64encode(json.dumps(envelope).encode()).decode()


def tamper_answer(inner: str) -> str:
    encoded, _, signature = inner.partition(".")
    body = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
    body["answers"] = [["0" * 64, {"answers": [{"id": "confirm", "selected": ["Yes"]}]}]]
    raw = base64.urlsafe_b64encode(json.dumps(body).encode()).decode().rstrip("=")
    return f"{raw}.{signature}"


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(tamper_answer, id="altered-answers"),
        pytest.param(lambda inner: inner[:-4] + "0000", id="altered-signature"),
        pytest.param(lambda inner: "not a state", id="garbage"),
        pytest.param(lambda inner: inner.partition(".")[0] + ".ü", id="non-ascii-signature"),
    ],
)
@pytest.mark.parametrize("served", ["decorated", "interactive server"])
async def test_a_forged_state_is_a_clear_error_never_an_answer(change: Any, served: str) -> None:
    server = (
        make_server(plain=True) if served == "decorated" else make_interactive_server(plain=True)
    )
    async with Client(server, elicitation_callback=UNUSED) as client:
        first = await client.session.call_tool(
            "release", {"version": "2.0"}, allow_input_required=True
        )
        assert isinstance(first, mcp_types.InputRequiredResult)
        assert first.request_state is not None
        with pytest.raises(MCPError) as refused:
            await client.session.call_tool(
                "release",
                {"version": "2.0"},
                input_responses={
                    "ask1": mcp_types.ElicitResult(action="accept", content={"confirm": "Yes"})
                },
                request_state=forge(first.request_state, change),
                allow_input_required=True,
            )
    assert refused.value.error.message == (
        "the request state is not one this server issued for this tool call"
    )
    assert refused.value.error.data == {"code": "BAD_REQUEST"}


async def test_a_state_signed_under_another_key_is_refused() -> None:
    other = InputRequiredBridge(b"k" * 32)
    async with Client(make_server(other, plain=True), elicitation_callback=UNUSED) as client:
        first = await client.session.call_tool(
            "release", {"version": "2.0"}, allow_input_required=True
        )
    assert isinstance(first, mcp_types.InputRequiredResult)
    assert first.request_state is not None
    again = make_server(InputRequiredBridge(b"j" * 32), plain=True)
    async with Client(again, elicitation_callback=UNUSED) as client:
        with pytest.raises(MCPError) as refused:
            await client.session.call_tool(
                "release", {"version": "2.0"}, request_state=first.request_state
            )
    assert refused.value.error.data == {"code": "BAD_REQUEST"}


async def test_a_declined_yes_no_question_is_a_no_and_a_cancel_is_ask_cancelled() -> None:
    async def decline(
        context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        return mcp_types.ElicitResult(action="decline")

    async def cancel(
        context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        return mcp_types.ElicitResult(action="cancel")

    for mode in ("auto", "legacy"):
        async with Client(make_server(), mode=mode, elicitation_callback=decline) as client:
            declined = text_of(await client.call_tool("release", {"version": "2.0"}))
        async with Client(make_server(), mode=mode, elicitation_callback=cancel) as client:
            cancelled = text_of(await client.call_tool("release", {"version": "2.0"}))
        assert declined == "not published"
        assert (
            cancelled
            == "error:ASK_CANCELLED:the user dismissed ask_user_question without answering"
        )


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_after_a_cancel_the_calls_later_asks_are_cancelled_too_on_2026_07_28(
    mode: str,
) -> None:
    calls = []

    async def cancel(
        context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        calls.append(params)
        return mcp_types.ElicitResult(action="cancel")

    async with Client(make_server(), mode=mode, elicitation_callback=cancel) as client:
        text = text_of(await client.call_tool("persist", {}))
    assert json.loads(text) == ["ASK_CANCELLED", "ASK_CANCELLED"]
    # A push asks each time; a suspended call is not asked again once the user cancelled.
    assert len(calls) == (1 if mode == "auto" else 2)


async def test_a_declined_text_question_is_ask_declined() -> None:
    async def script(
        context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        assert isinstance(params, mcp_types.ElicitRequestFormParams)
        if "confirm" in params.requested_schema["properties"]:
            return mcp_types.ElicitResult(action="accept", content={"confirm": "Yes"})
        return mcp_types.ElicitResult(action="decline")

    async with Client(make_server(), elicitation_callback=script) as client:
        text = text_of(await client.call_tool("release", {"version": "2.0"}))
    assert text == "error:ASK_DECLINED:the user declined to answer ask_user_question"


async def test_without_the_bridge_or_the_capability_it_is_no_provider_saying_what_lacks() -> None:
    callback = elicitation_callback(ScriptedProvider({"confirm": "Yes"}))
    async with Client(make_server(), elicitation_callback=callback) as client:
        unwrapped = text_of(await client.call_tool("unwrapped", {}))
    async with Client(make_server()) as client:
        incapable = text_of(await client.call_tool("release", {"version": "2.0"}))
    assert unwrapped == (
        "error:NO_PROVIDER:the MCP client cannot answer questions pushed during a tool call:"
        " it speaks protocol 2026-07-28 or later, where a server asks through an"
        " input-required result; serve it from an interaction.mcp.InteractiveMCPServer"
        " (or with @interaction.mcp.interactive)"
    )
    assert incapable == (
        "error:NO_PROVIDER:the MCP client cannot answer questions:"
        " it did not declare the form elicitation capability"
    )


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("auto", {"can_ask": "True", "can_push": "False"}),
        ("legacy", {"can_ask": "True", "can_push": "True"}),
    ],
)
async def test_supports_elicitation_says_whether_an_ask_can_reach_the_client(
    mode: str, expected: dict[str, str]
) -> None:
    async with Client(make_server(), mode=mode, elicitation_callback=UNUSED) as client:
        seen = {name: text_of(await client.call_tool(name, {})) for name in expected}
    async with Client(make_server(), mode=mode) as client:
        incapable = {name: text_of(await client.call_tool(name, {})) for name in expected}
    assert seen == expected
    assert incapable == {"can_ask": "False", "can_push": "False"}


def test_a_short_key_and_a_tool_without_context_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 32 bytes"):
        InputRequiredBridge(b"short")

    async def no_context(version: str) -> str:
        return version

    with pytest.raises(TypeError, match="takes the MCP Context"):
        asyncio.run(interactive(no_context)("2.0"))
    assert ErrorCode.ASK_SUSPENDED == "ASK_SUSPENDED"


class FakeSession:
    """Just what ElicitationProvider reads from a ServerSession."""

    def __init__(
        self, version: str, can_send: bool, capabilities: mcp_types.ClientCapabilities
    ) -> None:
        self.protocol_version = version
        self.can_send_request = can_send
        self.client_capabilities = capabilities


FORM = mcp_types.ClientCapabilities(elicitation=mcp_types.ElicitationCapability())
URL_ONLY = mcp_types.ClientCapabilities(
    elicitation=mcp_types.ElicitationCapability(url=mcp_types.UrlElicitationCapability())
)


@pytest.mark.parametrize(
    ("version", "can_send", "capabilities", "message"),
    [
        (
            "2025-11-25",
            False,
            FORM,
            "the MCP client cannot answer questions: this connection has no channel for"
            " server-to-client requests, so elicitation/create cannot reach it",
        ),
        (
            "2024-11-05",
            True,
            FORM,
            "the MCP client cannot answer questions: it speaks protocol 2024-11-05,"
            " which has no elicitation (it came in 2025-06-18)",
        ),
        (
            "2025-11-25",
            True,
            URL_ONLY,
            "the MCP client cannot answer questions:"
            " it did not declare the form elicitation capability",
        ),
    ],
)
async def test_a_client_that_cannot_be_asked_is_no_provider_naming_what_it_lacks(
    version: str, can_send: bool, capabilities: mcp_types.ClientCapabilities, message: str
) -> None:
    provider = ElicitationProvider(
        cast(ServerSession, FakeSession(version, can_send, capabilities))
    )
    assert not provider.supports_elicitation()
    with interaction.provide(provider), pytest.raises(UserInteractionError) as caught:
        await interaction.confirm("Go?")
    assert (caught.value.code, caught.value.message) == (ErrorCode.NO_PROVIDER, message)


def make_interactive_server(*, plain: bool = False) -> InteractiveMCPServer:
    """Plain tool code, no decorator: the server makes the asks work on 2026-07-28."""
    security = RequestStateSecurity(codec=PlainCodec()) if plain else None
    server = InteractiveMCPServer("releaser", request_state_security=security)
    runs: list[str] = []

    @server.tool()
    async def release(version: str, ctx: Context) -> str:
        runs.append(version)
        with interaction.provide(ElicitationProvider.from_context(ctx)):
            if not await interaction.confirm(f"Publish {version}?"):
                return "not published"
            name = await interaction.ask_text("Release name?")
        return json.dumps({"name": name, "runs": len(runs)})

    @server.tool()
    @interactive
    async def wrapped(ctx: Context) -> str:
        with interaction.provide(ElicitationProvider.from_context(ctx)):
            return str(await interaction.ask_text("Release name?"))

    @server.tool()
    async def broken(ctx: Context) -> str:
        raise RuntimeError("a bug in the tool")

    return server


@pytest.mark.parametrize(("mode", "runs"), [("auto", 3), ("legacy", 1)])
async def test_an_interactive_server_runs_plain_tools_on_both_generations(
    mode: str, runs: int
) -> None:
    provider = ScriptedProvider({"confirm": "Yes", "text": "Nova"})
    callback = elicitation_callback(provider)
    server = make_interactive_server()
    async with Client(server, mode=mode, elicitation_callback=callback) as client:
        released = json.loads(text_of(await client.call_tool("release", {"version": "2.0"})))
        wrapped = text_of(await client.call_tool("wrapped", {}))
        broken = await client.call_tool("broken", {})
    assert released == {"name": "Nova", "runs": runs}
    assert wrapped == "Nova"  # one round owns the state: no "already used" from a second
    assert broken.is_error
    assert text_of(broken) == "Error executing tool broken"
    assert [r.questions[0].question for r in provider.requests] == [
        "Publish 2.0?",
        "Release name?",
        "Release name?",
    ]


async def test_an_interactive_server_called_directly_raises_as_mcpserver_does() -> None:
    with pytest.raises(UnexpectedToolError, match=r"^Error executing tool broken$"):
        await make_interactive_server().call_tool("broken", {})


# ------------------------------------------------ a response that does not fit its form


def make_tolerant_server() -> tuple[InteractiveMCPServer, list[str]]:
    """A tool that catches each ask's error and asks on: a misfit must never reach it."""
    server = InteractiveMCPServer("tolerant")
    errors: list[str] = []

    @server.tool()
    async def tolerant(ctx: Context) -> str:
        outcomes = []
        with interaction.provide(ElicitationProvider.from_context(ctx)):
            asks: list[Callable[[], Awaitable[str | None]]] = [
                lambda: interaction.choose("Region?", ["eu", "us"], id="region"),
                lambda: interaction.ask_text("Name?", id="name"),
            ]
            for ask in asks:
                try:
                    outcomes.append(str(await ask()))
                except UserInteractionError as error:
                    errors.append(f"{error.code}:{error.message}")
                    outcomes.append(f"<{error.code}>")
        return " ".join(outcomes)

    return server, errors


def accept(**content: Any) -> mcp_types.ElicitResult:
    return mcp_types.ElicitResult(action="accept", content=content)


def only_form(result: object) -> tuple[str, str]:
    """The one input request's key and message of an input-required result."""
    assert isinstance(result, mcp_types.InputRequiredResult)
    assert result.input_requests is not None
    ((key, form),) = result.input_requests.items()
    assert isinstance(form, mcp_types.ElicitRequest)
    assert isinstance(form.params, mcp_types.ElicitRequestFormParams)
    return key, form.params.message


MISFIT = "elicitation: content.nope: the form has no such field"


async def test_a_response_that_does_not_fit_is_bad_answer_and_replayed_as_such() -> None:
    server, errors = make_tolerant_server()
    async with Client(server, elicitation_callback=UNUSED) as client:

        async def call(state: str | None = None, **responses: Any) -> Any:
            return await client.session.call_tool(
                "tolerant",
                {},
                input_responses=responses or None,
                request_state=state,
                allow_input_required=True,
            )

        first = await call()
        assert only_form(first) == ("ask1", "Region?")
        # The tool catches the refusal and asks on: the refusal is that ask's outcome.
        second = await call(first.request_state, ask1=accept(nope="x"))
        assert only_form(second) == ("ask2", "Name?")
        assert errors == [f"BAD_ANSWER:{MISFIT}"]
        done = await call(second.request_state, ask2=accept(name="Nova"))
    assert isinstance(done, mcp_types.CallToolResult)
    # The last round met the same refusal at the first ask and the answer at the second.
    assert text_of(done) == "<BAD_ANSWER> Nova"
    assert errors == [f"BAD_ANSWER:{MISFIT}"] * 2


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_tool_that_asks_on_after_a_misfit_ends_the_same_on_both_generations(
    mode: str,
) -> None:
    server, _ = make_tolerant_server()
    messages: list[str] = []
    replies = iter([accept(nope="x"), accept(region="mars"), accept(name="N")])

    async def callback(
        context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        messages.append(params.message)
        return next(replies)

    async with Client(server, mode=mode, elicitation_callback=callback) as client:
        result = await client.call_tool("tolerant", {})
    # Each question reached the client once, on either generation, and nothing was lost.
    assert text_of(result) == "<BAD_ANSWER> <BAD_ANSWER>"
    assert messages == ["Region?", "Name?"]


async def test_a_replayed_refusal_keeps_its_code_message_and_path() -> None:
    server = InteractiveMCPServer("refusals")
    seen: list[tuple[str, str, str | None]] = []

    @server.tool()
    async def pick(ctx: Context) -> str:
        with interaction.provide(ElicitationProvider.from_context(ctx)):
            try:
                await interaction.choose("Region?", ["eu", "us"], id="region")
            except UserInteractionError as error:
                seen.append((error.code, error.message, error.path))
            return str(await interaction.ask_text("Name?", id="name"))

    async with Client(server, elicitation_callback=UNUSED) as client:
        first = await client.session.call_tool("pick", {}, allow_input_required=True)
        assert isinstance(first, mcp_types.InputRequiredResult)
        second = await client.session.call_tool(
            "pick",
            {},
            input_responses={"ask1": accept(region="mars")},
            request_state=first.request_state,
            allow_input_required=True,
        )
        assert only_form(second) == ("ask2", "Name?")
        assert isinstance(second, mcp_types.InputRequiredResult)
        done = await client.session.call_tool(
            "pick",
            {},
            input_responses={"ask2": accept(name="Nova")},
            request_state=second.request_state,
            allow_input_required=True,
        )
    assert isinstance(done, mcp_types.CallToolResult)
    assert text_of(done) == "Nova"
    refusal = (
        "BAD_ANSWER",
        "answers[0].selected[0]: question region offers no option 'mars'",
        "answers[0].selected[0]",
    )
    assert seen == [refusal, refusal]


async def test_a_cancel_is_still_ask_cancelled_and_the_calls_later_asks_too() -> None:
    server, errors = make_tolerant_server()
    async with Client(server, elicitation_callback=UNUSED) as client:
        first = await client.session.call_tool("tolerant", {}, allow_input_required=True)
        assert isinstance(first, mcp_types.InputRequiredResult)
        done = await client.session.call_tool(
            "tolerant",
            {},
            input_responses={"ask1": mcp_types.ElicitResult(action="cancel")},
            request_state=first.request_state,
            allow_input_required=True,
        )
    assert isinstance(done, mcp_types.CallToolResult)
    assert text_of(done) == "<ASK_CANCELLED> <ASK_CANCELLED>"
    assert (
        errors
        == [
            "ASK_CANCELLED:the user dismissed ask_user_question without answering",
        ]
        * 2
    )


async def test_a_question_changed_between_rounds_is_bad_answer_never_asked_again() -> None:
    server = InteractiveMCPServer("changing")
    question = {"text": "Deploy v1?"}

    @server.tool()
    async def deploy(ctx: Context) -> str:
        try:
            with interaction.provide(ElicitationProvider.from_context(ctx)):
                return str(await interaction.confirm(question["text"], id="go"))
        except UserInteractionError as error:
            return f"error:{error.code}:{error.message}"

    async with Client(server, elicitation_callback=UNUSED) as client:
        first = await client.session.call_tool("deploy", {}, allow_input_required=True)
        assert isinstance(first, mcp_types.InputRequiredResult)
        assert only_form(first) == ("ask1", "Deploy v1?")
        question["text"] = "Deploy v2?"
        done = await client.session.call_tool(
            "deploy",
            {},
            input_responses={"ask1": accept(go="Yes")},
            request_state=first.request_state,
            allow_input_required=True,
        )
    assert isinstance(done, mcp_types.CallToolResult)
    assert text_of(done) == ("error:BAD_ANSWER:the resumed question is not the one that was asked")


async def test_after_a_changed_question_the_asks_that_follow_keep_their_places() -> None:
    server = InteractiveMCPServer("changing-then-more")
    runs: list[int] = []

    @server.tool()
    async def profile(ctx: Context) -> str:
        runs.append(len(runs) + 1)
        outcomes = []
        with interaction.provide(ElicitationProvider.from_context(ctx)):
            for question in (f"Name (run {min(len(runs), 2)})?", "City?"):
                try:
                    outcomes.append(str(await interaction.ask_text(question)))
                except UserInteractionError as error:
                    outcomes.append(f"<{error.code}>")
        return " ".join(outcomes)

    async with Client(server, elicitation_callback=UNUSED) as client:
        first = await client.session.call_tool("profile", {}, allow_input_required=True)
        assert only_form(first) == ("ask1", "Name (run 1)?")
        assert isinstance(first, mcp_types.InputRequiredResult)
        second = await client.session.call_tool(
            "profile",
            {},
            input_responses={"ask1": accept(text="Ada")},
            request_state=first.request_state,
            allow_input_required=True,
        )
        # The changed question is refused, and that refusal is its outcome from now on.
        assert only_form(second) == ("ask2", "City?")
        assert isinstance(second, mcp_types.InputRequiredResult)
        done = await client.session.call_tool(
            "profile",
            {},
            input_responses={"ask2": accept(text="Paris")},
            request_state=second.request_state,
            allow_input_required=True,
        )
    assert isinstance(done, mcp_types.CallToolResult)
    assert text_of(done) == "<BAD_ANSWER> Paris"
    assert runs == [1, 2, 3]


# ------------------------------------------------------------------- spent nonces


class Clock:
    """A wall clock the test sets, standing in for ``time`` in the bridge's module."""

    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now


def a_call(state: str | None = None) -> _suspend.Call:
    """A call of tool ``t`` as the bridge reads it (no session: these tests never ask)."""
    return _suspend.Call(cast(ServerSession, None), "2026-07-28", state, None, "t", dict)


async def refusal(bridge: InputRequiredBridge, state: str) -> str:
    with pytest.raises(UserInteractionError) as refused:
        await bridge.open(a_call(state))
    assert refused.value.code == ErrorCode.BAD_REQUEST
    return refused.value.message


EXPIRED = "the request state has expired; call the tool again without it"
USED = "the request state was already used; call the tool again without it"


async def test_spent_nonces_are_forgotten_from_the_front_up_to_the_first_live_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock(1000.0)
    monkeypatch.setattr(spent, "time", clock)
    store = MemorySpentStore()
    assert await store.spend("a", 1010.0)
    assert await store.spend("b", 1012.0)
    assert await store.spend("late", 1011.0)  # opened out of the order it was sealed in
    clock.now = 1011.5
    assert await store.spend("c", 1021.5)
    # "a" expired and is forgotten; "b" is live, so the scan stops there and "late",
    # expired behind it, is forgotten later, never early.
    assert ("a" in store, "b" in store, "late" in store, len(store)) == (False, True, True, 3)
    assert not await store.spend("b", 1012.0)
    clock.now = 1030.0
    assert await store.spend("d", 1040.0)
    assert ("d" in store, len(store)) == (True, 1)


async def test_a_clock_stepped_back_never_makes_a_forgotten_state_usable_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock(1000.0)
    monkeypatch.setattr(_suspend, "time", clock)
    monkeypatch.setattr(spent, "time", clock)
    store = MemorySpentStore()
    bridge = InputRequiredBridge(ttl=10, store=store)
    first = bridge.seal(a_call(), [], "ask1", "digest")
    await bridge.open(a_call(first))
    clock.now = 1010.5
    second = bridge.seal(a_call(), [], "ask1", "digest")
    await bridge.open(a_call(second))
    assert len(store) == 1  # the first state's nonce is forgotten as expired
    clock.now = 1001.0  # the wall clock steps back: the first state looks valid again
    assert await refusal(bridge, first) == EXPIRED
    assert await refusal(bridge, second) == USED


async def test_after_a_clock_step_back_new_calls_still_take_their_rounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock(5000.0)
    monkeypatch.setattr(_suspend, "time", clock)
    server = make_server(InputRequiredBridge(ttl=10))
    async with Client(server, elicitation_callback=UNUSED) as client:

        async def two_rounds() -> str:
            first = await client.session.call_tool(
                "release", {"version": "2.0"}, allow_input_required=True
            )
            assert isinstance(first, mcp_types.InputRequiredResult)
            second = await client.session.call_tool(
                "release",
                {"version": "2.0"},
                input_responses={"ask1": accept(confirm="No")},
                request_state=first.request_state,
                allow_input_required=True,
            )
            assert isinstance(second, mcp_types.CallToolResult)
            return text_of(second)

        before = await two_rounds()
        clock.now = 1000.0  # far more than the ttl back: states are sealed from 5000 still
        after = await two_rounds()
    assert before == after == "not published"


def altered(token: str) -> str:
    """The token with one character in its middle changed (an end one may be padding)."""
    middle = len(token) // 2
    return token[:middle] + ("B" if token[middle] == "A" else "A") + token[middle + 1 :]


async def test_with_the_sdks_default_seal_a_forged_state_is_refused_by_the_sdk_first() -> None:
    async with Client(make_server(), elicitation_callback=UNUSED) as client:
        first = await client.session.call_tool(
            "release", {"version": "2.0"}, allow_input_required=True
        )
        assert isinstance(first, mcp_types.InputRequiredResult)
        assert first.request_state is not None
        with pytest.raises(MCPError) as refused:
            await client.session.call_tool(
                "release",
                {"version": "2.0"},
                input_responses={"ask1": accept(confirm="Yes")},
                request_state=altered(first.request_state),
                allow_input_required=True,
            )
    assert (refused.value.error.code, refused.value.error.message) == (
        mcp_types.INVALID_PARAMS,
        "Invalid or expired requestState",
    )
    assert refused.value.error.data == {"reason": "invalid_request_state"}
