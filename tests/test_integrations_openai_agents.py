"""The OpenAI Agents SDK integration: real ``Runner.run`` loops on a scripted ``Model``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from agents import (
    Agent,
    FunctionTool,
    Model,
    ModelResponse,
    ModelSettings,
    RunConfig,
    Runner,
    Usage,
    function_tool,
    set_tracing_disabled,
)
from agents.exceptions import UserError
from agents.items import TResponseInputItem, TResponseStreamEvent
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from typing_extensions import override

from interaction import (
    AskSuspended,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionRequest,
    Provenance,
    provide,
)
from interaction.integrations.openai_agents import (
    ask_user_tool,
    resolve_interruptions,
    run_with_approvals,
    run_with_approvals_streamed,
)
from interaction.relay import Relay
from interaction.testing import BlockingProvider, ScriptedProvider
from interaction.tool import tool_parameters

from .test_integrations_common import WebPage, select

set_tracing_disabled(True)  # no exporter, no network


class CallsThenEchoes(Model):
    """A model that makes the given tool calls once, then says what the tools returned."""

    def __init__(
        self, *calls: tuple[str, dict[str, object]], call_ids: list[str] | None = None
    ) -> None:
        self.calls = calls
        self.call_ids = call_ids or [f"call-{index + 1}" for index in range(len(calls))]
        self.tools_seen: list[object] = []

    @override
    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        self.tools_seen = list(tools)
        items = [] if isinstance(input, str) else input
        outputs = [
            str(item.get("output"))
            for item in items
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]
        if outputs:
            text = ResponseOutputText(text=" | ".join(outputs), type="output_text", annotations=[])
            message = ResponseOutputMessage(
                id="msg-1", content=[text], role="assistant", status="completed", type="message"
            )
            return ModelResponse(output=[message], usage=Usage(), response_id=None)
        output: list[Any] = [
            ResponseFunctionToolCall(
                arguments=json.dumps(arguments),
                call_id=self.call_ids[index],
                name=name,
                type="function_call",
                id=f"fc-{index + 1}",
            )
            for index, (name, arguments) in enumerate(self.calls)
        ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    @override
    async def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        **kwargs: Any,
    ) -> AsyncIterator[TResponseStreamEvent]:
        """The same response, streamed as the one event a runner needs: completed."""
        response = await self.get_response(
            system_instructions, input, model_settings, tools, output_schema, handoffs, tracing
        )
        yield ResponseCompletedEvent(
            type="response.completed",
            sequence_number=0,
            response=Response(
                id="resp-1",
                created_at=0,
                model="scripted",
                object="response",
                output=response.output,
                parallel_tool_calls=False,
                tool_choice="auto",
                tools=[],
            ),
        )


ARGS: dict[str, object] = {
    "questions": [
        {"id": "pkg", "question": "Which package manager?", "options": ["pnpm", "npm"]},
        {
            "id": "checks",
            "question": "Which checks?",
            "options": ["types", "tests"],
            "multi_select": True,
        },
    ]
}


async def test_the_tool_asks_and_the_model_gets_the_answers() -> None:
    model = CallsThenEchoes(("ask_user_question", ARGS))
    agent = Agent(name="setup", model=model, tools=[ask_user_tool()])
    scripted = ScriptedProvider(
        {"pkg": "npm", "checks": AskUserQuestionAnswerItem("checks", ["tests"])}
    )
    with provide(scripted):
        result = await Runner.run(agent, "set up", run_config=RunConfig(group_id="chat-7"))
    assert result.final_output == (
        '{"answers":[{"id":"pkg","selected":["npm"]},{"id":"checks","selected":["tests"]}]}'
    )
    # the agent that called the tool, the tool, and the run's conversation
    assert scripted.last_request.provenance == Provenance(
        source="setup", session="chat-7", tool="ask_user_question"
    )
    (tool,) = model.tools_seen
    assert isinstance(tool, FunctionTool)
    assert tool.strict_json_schema is False
    assert tool.params_json_schema == tool_parameters()


async def test_the_tool_answered_on_the_web_page_and_dismissed() -> None:
    agent = Agent(
        name="setup", model=CallsThenEchoes(("ask_user_question", ARGS)), tools=[ask_user_tool()]
    )
    relay = Relay()
    async with WebPage(relay, select("pnpm")):
        with provide(relay):
            answered = await Runner.run(agent, "set up")
    assert answered.final_output == (
        '{"answers":[{"id":"pkg","selected":["pnpm"]},{"id":"checks","selected":[]}]}'
    )
    async with WebPage(relay, lambda request: None):
        with provide(relay):
            dismissed = await Runner.run(agent, "set up")
    assert str(dismissed.final_output).startswith(
        "Error: the user dismissed ask_user_question without answering\n"
    )


async def test_the_tool_times_out_into_a_result() -> None:
    blocking = BlockingProvider()
    agent = Agent(
        name="setup",
        model=CallsThenEchoes(("ask_user_question", ARGS)),
        tools=[ask_user_tool(blocking, timeout=0.05)],
    )
    result = await Runner.run(agent, "set up")
    assert str(result.final_output).startswith(
        "Error: ask_user_question timed out before the user answered\n"
    )
    assert blocking.cleaned_up == 1


# ---------------------------------------------------------------------------- approvals


def approval_agent(ran: list[str]) -> Agent[None]:
    @function_tool(needs_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return f"deleted {path}"

    model = CallsThenEchoes(("delete_file", {"path": "a.txt"}), ("delete_file", {"path": "b.txt"}))
    return Agent(name="cleaner", model=model, tools=[delete_file])


async def test_interruptions_are_asked_in_one_batch_and_the_run_continues() -> None:
    ran: list[str] = []
    agent = approval_agent(ran)
    first = await Runner.run(agent, "clean up")
    assert [item.name for item in first.interruptions] == ["delete_file", "delete_file"]
    scripted = ScriptedProvider({"call-1": "Allow", "call-2": "Deny"})
    state = await resolve_interruptions(first.to_state(), provider=scripted)
    second = await Runner.run(agent, state)
    assert ran == ["a.txt"]
    assert second.final_output == "deleted a.txt | The user denied delete_file"
    questions = scripted.last_request.questions
    assert [(q.id, q.question) for q in questions] == [
        ("call-1", "Allow delete_file to run?"),
        ("call-2", "Allow delete_file to run?"),
    ]
    assert questions[1].detail == 'Input:\n{\n  "path": "b.txt"\n}'
    assert scripted.last_request.provenance == Provenance(source="cleaner", tool="delete_file")


async def test_run_with_approvals_on_the_web_page() -> None:
    ran: list[str] = []
    relay = Relay()

    def answer(request: dict[str, object]) -> str:
        questions = request["questions"]
        assert isinstance(questions, list)
        return json.dumps(
            {
                "answers": [
                    {"id": questions[0]["id"], "selected": [], "custom": "not a.txt"},
                    {"id": questions[1]["id"], "selected": ["Allow"]},
                ]
            }
        )

    async with WebPage(relay, answer):
        with provide(relay):
            result = await run_with_approvals(approval_agent(ran), "clean up")
    assert ran == ["b.txt"]
    assert result.final_output == "The user denied delete_file and said: not a.txt | deleted b.txt"


async def test_timed_out_approvals_reject_every_call() -> None:
    ran: list[str] = []
    blocking = BlockingProvider()
    result = await run_with_approvals(
        approval_agent(ran), "clean up", provider=blocking, deny_after=0.05
    )
    assert ran == []
    denied = "delete_file was not approved: ask_user_question timed out before the user answered"
    assert result.final_output == f"{denied} | {denied}"
    assert blocking.cleaned_up == 1


async def test_an_explicit_provider_inside_another_registration() -> None:
    ran: list[str] = []
    outer, mine = ScriptedProvider(), ScriptedProvider({"call-1": "Allow", "call-2": "Allow"})
    with provide(outer):
        await run_with_approvals(approval_agent(ran), "clean up", provider=mine)
    assert ran == ["a.txt", "b.txt"]
    assert outer.requests == []


async def test_a_suspended_ask_ends_the_run_with_the_suspension_as_cause() -> None:
    class Suspends:
        async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
            raise AskSuspended(request)

    agent = Agent(
        name="setup",
        model=CallsThenEchoes(("ask_user_question", ARGS)),
        tools=[ask_user_tool(Suspends())],
    )
    with pytest.raises(UserError) as caught:
        await Runner.run(agent, "set up")
    assert isinstance(caught.value.__cause__, AskSuspended)


@pytest.mark.parametrize("bad", [" ", "c\x1b", "\u202ec"])
async def test_an_unusable_call_id_never_fails_the_batch_every_call_is_asked(bad: str) -> None:
    ran: list[str] = []

    @function_tool(needs_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return f"deleted {path}"

    model = CallsThenEchoes(
        ("delete_file", {"path": "a.txt"}), ("delete_file", {"path": "b.txt"}), call_ids=[bad, "ok"]
    )
    agent = Agent(name="cleaner", model=model, tools=[delete_file])
    scripted = ScriptedProvider({"call-1": "Deny", "ok": "Allow"})
    result = await run_with_approvals(agent, "clean up", provider=scripted)
    assert [q.id for q in scripted.last_request.questions] == ["call-1", "ok"]
    assert ran == ["b.txt"]
    assert result.final_output == "The user denied delete_file | deleted b.txt"


async def test_a_bad_timeout_is_refused_before_anything_runs() -> None:
    with pytest.raises(ValueError, match=r"^timeout must be a positive, finite number"):
        ask_user_tool(timeout=-1)
    model = CallsThenEchoes(("delete_file", {"path": "a.txt"}))
    with pytest.raises(ValueError, match=r"^deny_after must be a positive, finite number"):
        await run_with_approvals(
            Agent(name="a", model=model, tools=[ask_user_tool()]), "go", deny_after=float("nan")
        )
    assert model.tools_seen == []  # the model was never called (it would see the tool)


# ---------------------------------------------------------------------------- streamed, lists


async def test_a_streamed_run_resolves_its_approvals_and_streams_every_round() -> None:
    ran: list[str] = []
    scripted = ScriptedProvider({"call-1": "Allow", "call-2": "Deny"})
    stream = run_with_approvals_streamed(approval_agent(ran), "clean up", provider=scripted)
    kinds = [event.type async for event in stream.stream_events()]
    assert ran == ["a.txt"]
    assert stream.final_output == "deleted a.txt | The user denied delete_file"
    assert stream.result.interruptions == []
    assert len(scripted.requests) == 1  # one batch for both calls
    assert kinds.count("raw_response_event") == 2  # the interrupted round and the resumed one
    assert "run_item_stream_event" in kinds


async def test_a_streamed_run_with_the_tool_and_a_timeout() -> None:
    ran: list[str] = []
    blocking = BlockingProvider()
    stream = run_with_approvals_streamed(
        approval_agent(ran), "clean up", provider=blocking, deny_after=0.05
    )
    async for _ in stream.stream_events():
        pass
    denied = "delete_file was not approved: ask_user_question timed out before the user answered"
    assert stream.final_output == f"{denied} | {denied}"
    assert ran == []


async def test_a_streamed_run_that_keeps_asking_stops_after_max_rounds() -> None:
    scripted = ScriptedProvider({"call-1": "Allow", "call-2": "Allow"})
    stream = run_with_approvals_streamed(
        approval_agent([]), "clean up", provider=scripted, max_rounds=0
    )
    with pytest.raises(RuntimeError) as caught:
        async for _ in stream.stream_events():
            pass
    assert str(caught.value) == "the run was still waiting for approvals after 0 rounds"
    assert scripted.requests == []


def test_a_bad_deny_after_is_refused_before_a_streamed_run_starts() -> None:
    with pytest.raises(ValueError, match="deny_after must be a positive"):
        run_with_approvals_streamed(approval_agent([]), "go", deny_after=float("nan"))


async def test_a_list_input_runs_with_approvals() -> None:
    ran: list[str] = []
    conversation: list[TResponseInputItem] = [
        {"role": "user", "content": "clean up"},
        {"role": "assistant", "content": "Which files?"},
        {"role": "user", "content": "a.txt and b.txt"},
    ]
    scripted = ScriptedProvider({"call-1": "Allow", "call-2": "Allow"})
    result = await run_with_approvals(approval_agent(ran), conversation, provider=scripted)
    assert ran == ["a.txt", "b.txt"]
    assert result.final_output == "deleted a.txt | deleted b.txt"
    stream = run_with_approvals_streamed(approval_agent(ran), conversation, provider=scripted)
    async for _ in stream.stream_events():
        pass
    assert stream.final_output == "deleted a.txt | deleted b.txt"
