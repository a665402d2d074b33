"""The pydantic-ai integration: real agent runs on pydantic-ai's FunctionModel and TestModel."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from pydantic_ai import Agent, DeferredToolRequests, RunContext, ToolApproved, ToolDenied
from pydantic_ai.capabilities import AbstractCapability, HandleDeferredToolCalls
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai_harness import AskUser

from interaction import (
    AskSuspended,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionRequest,
    Provenance,
    UserInteractionError,
    UserInteractionProvider,
    provide,
    request_digest,
)
from interaction.integrations.pydantic_ai import (
    SKIPPED_ANSWER,
    answer_deferred_calls,
    answerer,
    approval_handler,
    approve_deferred,
    ask_user_toolset,
)
from interaction.relay import Relay
from interaction.testing import BlockingProvider, ScriptedProvider

from .test_integrations_common import WebPage, select

ARGS: dict[str, object] = {
    "questions": [
        {"id": "pkg", "question": "Which package manager?", "options": [{"label": "pnpm"}, "npm"]},
        {"id": "name", "question": "Project name?"},
    ]
}


def calls_then_echoes(
    tool: str, args: dict[str, object]
) -> Callable[[list[ModelMessage], AgentInfo], ModelResponse]:
    """A model that calls ``tool`` once, then says what the tool returned."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        del info
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        returns = [part for part in last.parts if isinstance(part, ToolReturnPart)]
        if returns:
            return ModelResponse(parts=[TextPart(f"tool said: {returns[0].content}")])
        return ModelResponse(parts=[ToolCallPart(tool, args, tool_call_id="call-1")])

    return model


# ---------------------------------------------------------------------------- toolset


async def test_the_toolset_asks_and_the_model_gets_the_answers() -> None:
    agent = Agent(FunctionModel(calls_then_echoes("ask_user_question", ARGS)), name="setup")
    scripted = ScriptedProvider({"pkg": "npm", "name": "seam"})
    with provide(scripted):
        result = await agent.run("set up", toolsets=[ask_user_toolset()], run_id="run-1")
    assert result.output == (
        'tool said: {"answers":[{"id":"pkg","selected":["npm"]},'
        '{"id":"name","selected":[],"custom":"seam"}]}'
    )
    (request,) = scripted.requests
    assert [q.id for q in request.questions] == ["pkg", "name"]
    # the run's agent and id, and the tool by the name the model called
    assert request.provenance == Provenance(
        source="setup", session="run-1", tool="ask_user_question"
    )


async def test_the_model_sees_the_tools_schema() -> None:
    seen: list[dict[str, object]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        del messages
        seen.extend(tool.parameters_json_schema for tool in info.function_tools)
        return ModelResponse(parts=[TextPart("no questions")])

    from interaction.tool import tool_parameters

    await Agent(FunctionModel(model), toolsets=[ask_user_toolset()]).run("hi")
    assert seen == [tool_parameters()]


async def test_the_toolset_answered_on_the_web_page() -> None:
    relay = Relay()
    agent = Agent(FunctionModel(calls_then_echoes("ask_user_question", ARGS)))
    async with WebPage(relay, select("pnpm")) as page:
        with provide(relay):
            result = await agent.run("set up", toolsets=[ask_user_toolset()])
    assert result.output == (
        'tool said: {"answers":[{"id":"pkg","selected":["pnpm"]},{"id":"name","selected":[]}]}'
    )
    assert len(page.seen) == 1


async def test_a_dismissal_and_a_timeout_are_results_the_model_can_act_on() -> None:
    relay = Relay()
    agent = Agent(FunctionModel(calls_then_echoes("ask_user_question", ARGS)))
    async with WebPage(relay, lambda request: None):
        with provide(relay):
            dismissed = await agent.run("set up", toolsets=[ask_user_toolset()])
    assert dismissed.output.startswith(
        "tool said: Error: the user dismissed ask_user_question without answering\n"
    )
    blocking = BlockingProvider()
    timed_out = await agent.run("set up", toolsets=[ask_user_toolset(blocking, timeout=0.05)])
    assert timed_out.output.startswith(
        "tool said: Error: ask_user_question timed out before the user answered\n"
    )
    assert blocking.cleaned_up == 1


async def test_bad_arguments_tell_the_model_how_to_fix_them() -> None:
    agent = Agent(FunctionModel(calls_then_echoes("ask_user_question", {"questions": "x"})))
    result = await agent.run("go", toolsets=[ask_user_toolset(ScriptedProvider())])
    assert result.output == (  # a retry prompt, which this model echoes as a return
        "tool said: ask_user_question: questions: expected an array of questions, got string."
        " Fix the arguments and call ask_user_question again."
    )


async def test_test_model_calls_the_tool_with_schema_generated_arguments() -> None:
    scripted = ScriptedProvider()
    with provide(scripted):
        result = await Agent(TestModel(call_tools=["ask_user_question"])).run(
            "go", toolsets=[ask_user_toolset()]
        )
    assert len(scripted.requests) == 1
    assert json.loads(result.output)["ask_user_question"].startswith('{"answers":[')


# ---------------------------------------------------------------------------- approvals


def approval_agent(ran: list[str]) -> Agent[None, str | DeferredToolRequests]:
    agent: Agent[None, str | DeferredToolRequests] = Agent(
        FunctionModel(calls_then_echoes("delete_file", {"path": "notes.txt"})),
        output_type=[str, DeferredToolRequests],
    )

    @agent.tool_plain(requires_approval=True)
    def delete_file(path: str) -> str:
        ran.append(path)
        return f"deleted {path}"

    return agent


async def test_deferred_approvals_are_asked_and_the_run_continues() -> None:
    ran: list[str] = []
    agent = approval_agent(ran)
    first = await agent.run("clean up")
    assert isinstance(first.output, DeferredToolRequests)
    scripted = ScriptedProvider({"call-1": "Allow"})
    results = await approve_deferred(first.output, provider=scripted)
    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=results)
    assert second.output == "tool said: deleted notes.txt"
    assert ran == ["notes.txt"]
    question = scripted.last_request.questions[0]
    assert question.id == "call-1"
    assert question.question == "Allow delete_file to run?"
    assert question.detail == 'Input:\n{\n  "path": "notes.txt"\n}'
    # asked after the run: pydantic-ai's requests name neither agent nor run, only the tool
    assert scripted.last_request.provenance == Provenance(source="pydantic-ai", tool="delete_file")


async def test_a_denial_on_the_web_page_reaches_the_model_and_the_tool_never_runs() -> None:
    ran: list[str] = []
    agent = approval_agent(ran)
    first = await agent.run("clean up")
    assert isinstance(first.output, DeferredToolRequests)
    relay = Relay()
    async with WebPage(relay, select(custom="keep it, archive instead")):
        with provide(relay):
            results = await approve_deferred(first.output)
    assert results.approvals == {
        "call-1": ToolDenied("The user denied delete_file and said: keep it, archive instead")
    }
    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=results)
    assert second.output == (
        "tool said: The user denied delete_file and said: keep it, archive instead"
    )
    assert ran == []


async def test_the_handler_resolves_approvals_inside_one_run() -> None:
    ran: list[str] = []
    agent = approval_agent(ran)
    scripted = ScriptedProvider({"call-1": "Allow"})
    result = await agent.run(
        "clean up",
        capabilities=[HandleDeferredToolCalls(handler=approval_handler(scripted))],
        run_id="run-2",
    )
    assert result.output == "tool said: deleted notes.txt"
    assert ran == ["notes.txt"]
    # asked inside the run: its agent (named after its variable by pydantic-ai) and its id
    assert scripted.last_request.provenance == Provenance(
        source="agent", session="run-2", tool="delete_file"
    )


async def test_a_timed_out_approval_denies() -> None:
    ran: list[str] = []
    agent = approval_agent(ran)
    handler = approval_handler(BlockingProvider(), timeout=0.05)
    result = await agent.run("clean up", capabilities=[HandleDeferredToolCalls(handler=handler)])
    assert result.output == (
        "tool said: delete_file was not approved:"
        " ask_user_question timed out before the user answered"
    )
    assert ran == []


async def test_nothing_to_approve_leaves_the_requests_alone() -> None:
    handler = approval_handler(ScriptedProvider())
    assert await handler(RunContext.__new__(RunContext), DeferredToolRequests()) is None
    assert (await approve_deferred(DeferredToolRequests())).approvals == {}


# ---------------------------------------------------------------------------- AskUser

HARNESS_ARGS: dict[str, object] = {
    "questions": [
        {
            "header": "Package manager",
            "question": "Which package manager?",
            "options": [{"label": "pnpm", "description": "fast"}, {"label": "npm"}],
        },
        {
            "header": "Checks",
            "question": "Which checks?",
            "options": [{"label": "types"}, {"label": "tests"}],
            "multi_select": True,
        },
        {
            "header": "License",
            "question": "Which license?",
            "options": [{"label": "MIT"}, {"label": "Apache-2.0"}],
        },
    ]
}


async def run_ask_user(provider: UserInteractionProvider | None = None) -> str:
    capability = AskUser(answerer=answerer(provider))
    agent = Agent(
        FunctionModel(calls_then_echoes("ask_user_question", HARNESS_ARGS)),
        capabilities=[capability],
    )
    return (await agent.run("set up")).output


async def test_the_ask_user_answerer_maps_headers_to_ids_and_back() -> None:
    scripted = ScriptedProvider(
        {
            "Package manager": "pnpm",
            "Checks": AskUserQuestionAnswerItem("Checks", ["tests"], custom="lint"),
        }
    )
    output = await run_ask_user(scripted)
    request = scripted.last_request
    assert [(q.id, q.header, q.multi_select) for q in request.questions] == [
        ("Package manager", "Package manager", False),
        ("Checks", "Checks", True),
        ("License", "License", False),
    ]
    assert request.questions[0].options[0].description == "fast"
    result = output.removeprefix("tool said: ")
    assert "pnpm" in result
    assert "Chose tests, and added: lint" in result
    assert SKIPPED_ANSWER in result


async def test_the_ask_user_answerer_on_the_web_page_and_its_cancel() -> None:
    relay = Relay()
    async with WebPage(relay, select("npm")):
        with provide(relay):
            answered = await run_ask_user()
    assert "npm" in answered
    async with WebPage(relay, lambda request: None):
        with provide(relay):
            declined = await run_ask_user()
    from pydantic_ai_harness.ask_user import DECLINED

    assert declined == f"tool said: {DECLINED}"


async def test_the_harness_timeout_cancels_the_question() -> None:
    from pydantic_ai_harness.ask_user import TIMED_OUT

    blocking = BlockingProvider()
    agent = Agent(
        FunctionModel(calls_then_echoes("ask_user_question", HARNESS_ARGS)),
        capabilities=[AskUser(answerer=answerer(blocking), timeout=0.05)],
    )
    result = await agent.run("set up")
    assert result.output == f"tool said: {TIMED_OUT}"
    assert blocking.cleaned_up == 1


class Suspends:
    """A provider that cannot wait: every ask is suspended for the host to resume later."""

    def __init__(self) -> None:
        self.requests: list[AskUserQuestionRequest] = []

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        self.requests.append(request)
        raise AskSuspended(request)


async def test_a_suspended_ask_defers_the_call_and_the_next_run_gets_the_answer() -> None:
    agent: Agent[None, str | DeferredToolRequests] = Agent(
        FunctionModel(calls_then_echoes("ask_user_question", ARGS)),
        output_type=[str, DeferredToolRequests],
    )
    suspends = Suspends()
    first = await agent.run("set up", toolsets=[ask_user_toolset(suspends)], run_id="run-3")
    assert isinstance(first.output, DeferredToolRequests)
    (call,) = first.output.calls
    assert call.tool_call_id == "call-1"
    # the digest of the question, and who asked it, for whoever answers it later
    assert first.output.metadata["call-1"] == {
        "digest": request_digest(suspends.requests[0]),
        "source": "agent",
        "session": "run-3",
    }
    relay = Relay()
    async with WebPage(relay, select("npm")):
        with provide(relay):
            results = await answer_deferred_calls(first.output)
    second = await agent.run(
        message_history=first.all_messages(),
        deferred_tool_results=results,
        toolsets=[ask_user_toolset(suspends)],
    )
    assert second.output == (
        'tool said: {"answers":[{"id":"pkg","selected":["npm"]},{"id":"name","selected":[]}]}'
    )
    assert len(suspends.requests) == 1  # the answer came from the next run, not the provider


# ---------------------------------------------------------------------------- hostile ids


async def test_unusable_call_ids_never_fail_the_batch_every_call_is_asked() -> None:
    ids = ["good", " ", "c\x1b"]

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        del info
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        returns = [part.content for part in last.parts if isinstance(part, ToolReturnPart)]
        if returns:
            return ModelResponse(parts=[TextPart(" | ".join(map(str, returns)))])
        return ModelResponse(
            parts=[
                ToolCallPart("delete_file", {"path": f"{n}.txt"}, tool_call_id=call_id)
                for n, call_id in enumerate(ids)
            ]
        )

    ran: list[str] = []
    agent: Agent[None, str | DeferredToolRequests] = Agent(
        FunctionModel(model), output_type=[str, DeferredToolRequests]
    )

    @agent.tool_plain(requires_approval=True)
    def delete_file(path: str) -> str:
        ran.append(path)
        return f"deleted {path}"

    first = await agent.run("clean up")
    assert isinstance(first.output, DeferredToolRequests)
    scripted = ScriptedProvider({"good": "Allow", "call-2": "Deny", "call-3": "Allow"})
    results = await approve_deferred(first.output, provider=scripted)
    assert [q.id for q in scripted.last_request.questions] == ["good", "call-2", "call-3"]
    assert results.approvals == {
        "good": ToolApproved(),
        " ": ToolDenied("The user denied delete_file"),
        "c\x1b": ToolApproved(),
    }
    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=results)
    assert sorted(ran) == ["0.txt", "2.txt"]
    assert second.output == "deleted 0.txt | The user denied delete_file | deleted 2.txt"


def test_a_bad_timeout_is_refused_when_the_toolset_or_handler_is_built() -> None:
    for build in (ask_user_toolset, approval_handler):
        with pytest.raises(ValueError, match=r"^timeout must be a positive, finite number"):
            build(timeout=0)


# ---------------------------------------------------------------------------- faults


def bad_then_good(bad: object) -> Callable[[list[ModelMessage], AgentInfo], ModelResponse]:
    """A model that calls the tool with ``bad`` arguments, then fixes them when retried."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        del info
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        retried = retry_prompts([last])
        returned = [
            p for p in last.parts if isinstance(p, ToolReturnPart) and p.outcome == "success"
        ]
        if returned:
            return ModelResponse(parts=[TextPart(f"tool said: {returned[0].content}")])
        if retried:
            good = {"questions": [{"id": "name", "question": "Project name?"}]}
            return ModelResponse(parts=[ToolCallPart("ask_user_question", good, tool_call_id="c2")])
        return ModelResponse(parts=[ToolCallPart("ask_user_question", bad, tool_call_id="c1")])  # type: ignore[arg-type]

    return model


def retry_prompts(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    """The retry prompts the model got (pydantic-ai 2: returns whose outcome is a retry)."""
    return [
        part
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.outcome == "retried"
    ]


@pytest.mark.parametrize("bad", ["[1, 2]", '"x"', "null", "42"])
async def test_arguments_that_are_not_an_object_get_a_retry_prompt(bad: object) -> None:
    agent = Agent(FunctionModel(bad_then_good(bad)))
    scripted = ScriptedProvider({"name": "seam"})
    result = await agent.run("go", toolsets=[ask_user_toolset(scripted)])
    assert result.output == 'tool said: {"answers":[{"id":"name","selected":[],"custom":"seam"}]}'
    (retry,) = retry_prompts(result.all_messages())
    assert retry.tool_name == "ask_user_question"
    # pydantic's validation error, as a plain tool gets for arguments that are not an object
    assert isinstance(retry.content, list)
    assert [(e["type"], e["msg"]) for e in retry.content] == [
        ("dict_type", "Input should be an object")
    ]
    assert len(scripted.requests) == 1  # only the fixed call reached the human


@pytest.mark.parametrize(
    "bad",
    [{"questions": "x"}, {"questions": []}, {"nothing": 1}, '{"questions": [{"id": "a"}]}'],
)
async def test_faulty_arguments_are_a_retry_with_the_seams_advice(bad: object) -> None:
    agent = Agent(FunctionModel(bad_then_good(bad)))
    result = await agent.run("go", toolsets=[ask_user_toolset(ScriptedProvider({"name": "x"}))])
    (retry,) = retry_prompts(result.all_messages())
    assert isinstance(retry.content, str)
    assert retry.content.startswith("ask_user_question") or retry.content.startswith(
        "ask_user_question requires at least one question"
    )
    assert result.output.endswith('"custom":"x"}]}')


async def test_argument_faults_use_the_retry_budget_and_the_error_hooks() -> None:
    seen: list[str] = []

    class Watch(AbstractCapability[object]):
        async def on_tool_validate_error(self, ctx, *, call, tool_def, args, error):  # type: ignore[no-untyped-def]
            seen.append(f"validate:{type(error).__name__}")
            raise error

        async def on_tool_execute_error(self, ctx, *, call, tool_def, args, error):  # type: ignore[no-untyped-def]
            seen.append(f"execute:{type(error).__name__}")
            raise error

    def always_bad(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        del info
        seen.append("model")
        bad: object = "[1]" if len(messages) == 1 else {"questions": "x"}
        return ModelResponse(parts=[ToolCallPart("ask_user_question", bad)])  # type: ignore[arg-type]

    agent = Agent(FunctionModel(always_bad), capabilities=[Watch()], retries=2)
    with pytest.raises(UnexpectedModelBehavior) as caught:
        await agent.run("go", toolsets=[ask_user_toolset(ScriptedProvider())])
    assert str(caught.value).startswith("Tool 'ask_user_question' exceeded max retries count of 2.")
    # The validation error and the retries each spend the budget; the hook sees its end.
    assert seen == [
        "model",
        "validate:ValidationError",
        "model",
        "model",
        "execute:UnexpectedModelBehavior",
    ]


@pytest.mark.parametrize(
    ("typed", "sent"),
    [("tabs\there", "tabs here"), ("👩\u200d💻", "👩💻"), ("bell\x07", "bell\ufffd")],
)
async def test_custom_text_the_seam_accepts_reaches_the_harness_in_a_form_it_accepts(
    typed: str, sent: str
) -> None:
    output = await run_ask_user(ScriptedProvider({"Package manager": typed}))
    result = json.loads(output.removeprefix("tool said: ").replace("'", '"'))
    assert result["Package manager"] == [sent]


async def test_a_question_the_harness_accepts_but_the_seam_refuses_is_a_retry() -> None:
    lookalike = {
        "questions": [
            {
                "header": "Database",
                "question": "Which database?",
                "options": [{"label": "pg"}, {"label": "pg\u3164"}],
            }
        ]
    }
    fixed = {
        "questions": [
            {**lookalike["questions"][0], "options": [{"label": "pg"}, {"label": "sqlite"}]}
        ]
    }

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        del info
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        returned = [
            p for p in last.parts if isinstance(p, ToolReturnPart) and p.outcome == "success"
        ]
        if returned:
            return ModelResponse(parts=[TextPart(f"tool said: {returned[0].content}")])
        args = fixed if retry_prompts(messages) else lookalike
        return ModelResponse(parts=[ToolCallPart("ask_user_question", args)])

    scripted = ScriptedProvider({"Database": "sqlite"})
    agent = Agent(FunctionModel(model), capabilities=[AskUser(answerer=answerer(scripted))])
    result = await agent.run("go")
    assert result.output == "tool said: {'Database': ['sqlite']}"
    (retry,) = retry_prompts(result.all_messages())
    assert retry.content == (
        "questions[0].options[1].label: duplicate option label 'pg\u3164' (same as 'pg')"
    )
    assert len(scripted.requests) == 1


async def test_a_deferred_call_whose_arguments_changed_is_refused() -> None:
    agent: Agent[None, str | DeferredToolRequests] = Agent(
        FunctionModel(calls_then_echoes("ask_user_question", ARGS)),
        output_type=[str, DeferredToolRequests],
    )
    first = await agent.run("set up", toolsets=[ask_user_toolset(Suspends())])
    assert isinstance(first.output, DeferredToolRequests)
    (call,) = first.output.calls
    changed = {"questions": [{"id": "pkg", "question": "May I delete your home directory?"}]}
    forged = DeferredToolRequests(
        calls=[ToolCallPart(call.tool_name, changed, tool_call_id=call.tool_call_id)],
        metadata=first.output.metadata,
    )
    scripted = ScriptedProvider({"pkg": "Yes"})
    with pytest.raises(UserInteractionError) as caught:
        await answer_deferred_calls(forged, provider=scripted)
    assert caught.value.code == "BAD_REQUEST"
    assert caught.value.message == "the deferred call's question does not match its digest"
    assert scripted.requests == []
    # Unchanged, it is asked, naming the run that deferred it.
    answering = ScriptedProvider({"pkg": "npm"})
    results = await answer_deferred_calls(first.output, provider=answering)
    assert list(results.calls) == ["call-1"]
    assert answering.last_request.provenance == Provenance(
        source="agent", session=first.run_id, tool="ask_user_question"
    )
