"""The smolagents integration: real ``ToolCallingAgent`` and ``CodeAgent`` runs on a scripted
``Model`` (smolagents' own way to plug in a model), answered by a script or the web page."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from smolagents import CodeAgent, ToolCallingAgent
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
    Model,
)

from interaction import Provenance, provide
from interaction.integrations.smolagents import AskUserTool
from interaction.relay import Relay
from interaction.testing import BlockingProvider, ScriptedProvider

from .helpers import import_error_without
from .test_integrations_common import WebPage

BATCH: dict[str, object] = {
    "questions": [
        {"id": "db", "question": "Which database?", "options": ["postgres", "sqlite"]},
        {
            "id": "extras",
            "question": "Which extras?",
            "options": ["redis", "web"],
            "multi_select": True,
        },
        {"id": "name", "question": "Project name?"},
    ]
}


def text_of(message: ChatMessage) -> str:
    content = message.content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content)
    return content or ""


class CallsThenAnswers(Model):
    """Calls ``ask_user_question`` with each of ``calls`` in turn (after an error too), then
    gives the last observation as its final answer."""

    def __init__(self, *calls: object) -> None:
        super().__init__(model_id="scripted")
        self.calls = calls
        self.turn = 0
        self.seen: list[str] = []

    def generate(
        self,
        messages: list[ChatMessage],
        stop_sequences: list[str] | None = None,
        response_format: dict[str, str] | None = None,
        tools_to_call_from: list[Any] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:
        del stop_sequences, response_format, tools_to_call_from, kwargs
        last = text_of(messages[-1])
        self.seen.append(last)
        if self.turn < len(self.calls):
            arguments = self.calls[self.turn]
            self.turn += 1
            name, call_id = "ask_user_question", f"call-{self.turn}"
        else:
            name, call_id = "final_answer", "final"
            arguments = {"answer": last.removeprefix("Observation:").strip()}
        call = ChatMessageToolCall(
            function=ChatMessageToolCallFunction(name=name, arguments=arguments),
            id=call_id,
            type="function",
        )
        return ChatMessage(role=MessageRole.ASSISTANT, content=None, tool_calls=[call])


def run_agent(*calls: object, tool: AskUserTool | None = None) -> tuple[str, CallsThenAnswers]:
    model = CallsThenAnswers(*calls)
    agent = ToolCallingAgent(
        tools=[tool or AskUserTool()], model=model, max_steps=4, verbosity_level=0
    )
    return str(agent.run("set up the project")), model


def test_a_batch_with_multi_select_other_and_skip() -> None:
    scripted = ScriptedProvider({"db": "sqlite", "extras": ["web", "redis", "docs"], "name": None})
    with provide(scripted):  # no event loop anywhere: the tool asks on one of its own
        output, _ = run_agent(BATCH)
    assert json.loads(output) == {
        "answers": [
            {"id": "db", "selected": ["sqlite"]},
            {"id": "extras", "selected": ["web", "redis"], "custom": "docs"},
            {"id": "name", "selected": []},
        ]
    }
    (request,) = scripted.requests
    assert [(q.id, q.multi_select) for q in request.questions] == [
        ("db", False),
        ("extras", True),
        ("name", False),
    ]
    # smolagents does not tell a tool its agent: the framework and the tool say who asks
    assert request.provenance == Provenance(source="smolagents", tool="ask_user_question")


def test_other_replaces_the_choice_of_a_single_select_question() -> None:
    with provide(ScriptedProvider({"db": "duckdb"})):
        output, _ = run_agent(BATCH)
    assert json.loads(output)["answers"][0] == {"id": "db", "selected": [], "custom": "duckdb"}


async def test_answered_on_the_web_page_while_its_loop_runs() -> None:
    relay = Relay()

    def page(request: dict[str, object]) -> str:
        questions = request["questions"]
        assert isinstance(questions, list)
        return json.dumps(
            {
                "answers": [
                    {"id": "db", "selected": ["postgres"]},
                    {"id": "extras", "selected": ["redis"]},
                    {"id": "name", "selected": [], "custom": "seam"},
                ]
            }
        )

    async with WebPage(relay, page) as web:
        with provide(relay):  # the agent runs in a worker: the ask runs on this loop
            output, _ = await asyncio.to_thread(run_agent, BATCH)
    assert json.loads(output)["answers"][2] == {"id": "name", "selected": [], "custom": "seam"}
    assert len(web.seen) == 1


async def test_a_dismissal_on_the_web_page_is_a_result_the_model_reads() -> None:
    relay = Relay()
    async with WebPage(relay, lambda request: None):
        with provide(relay):
            output, _ = await asyncio.to_thread(run_agent, BATCH)
    assert output.startswith(
        "Error: the user dismissed ask_user_question without answering\nThe user dismissed"
    )


def test_a_timeout_is_a_result_and_withdraws_the_question() -> None:
    blocking = BlockingProvider()
    output, _ = run_agent(BATCH, tool=AskUserTool(blocking, timeout=0.05))
    assert output.startswith("Error: ask_user_question timed out before the user answered\n")
    assert blocking.cleaned_up == 1


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        (
            {"questions": [{"id": "db"}]},
            "ask_user_question: questions[0].question: is required.",
        ),
        ({"questions": []}, "ask_user_question requires at least one question"),
        (
            {"questions": [{"id": "a", "question": "?", "options": ["x", "X"]}]},
            "ask_user_question: questions[0].options[1].label: duplicate option label",
        ),
        ({"questions": "nope"}, "Argument questions has type 'string' but should be 'array'"),
        ({"wrong": 1}, "Argument wrong is not in the tool's input schema"),
    ],
)
def test_malformed_arguments_are_an_error_the_model_sees_and_it_can_retry(
    bad: dict[str, object], error: str
) -> None:
    scripted = ScriptedProvider({"db": "postgres"})
    with provide(scripted):
        output, model = run_agent(bad, BATCH)
    assert error in model.seen[1]  # the error, shown to the model as the step's outcome
    assert json.loads(output)["answers"][0] == {"id": "db", "selected": ["postgres"]}
    assert len(scripted.requests) == 1  # only the fixed call reached the human


class WritesCode(Model):
    """A ``CodeAgent`` model: its code asks, then hands the answer back as the final answer."""

    def generate(
        self,
        messages: list[ChatMessage],
        stop_sequences: list[str] | None = None,
        response_format: dict[str, str] | None = None,
        tools_to_call_from: list[Any] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:
        del messages, stop_sequences, response_format, tools_to_call_from, kwargs
        code = (
            "Thought: I need the user's choice.\n<code>\n"
            "result = ask_user_question(questions=[{'id': 'db', 'question': 'Which database?',"
            " 'options': ['postgres', 'sqlite']}])\nfinal_answer(result)\n</code>"
        )
        return ChatMessage(role=MessageRole.ASSISTANT, content=code)


def code_agent(tool: AskUserTool, **executor: object) -> CodeAgent:
    return CodeAgent(
        tools=[tool],
        model=WritesCode(model_id="code"),
        max_steps=2,
        verbosity_level=0,
        executor_kwargs=executor,
    )


SQLITE = '{"answers":[{"id":"db","selected":["sqlite"]}]}'


def test_a_code_agent_calls_the_tool_it_was_given_a_provider_for() -> None:
    # smolagents runs the model's code in a thread of its own (for its time limit), which
    # does not copy the context: a CodeAgent's tool is given its provider.
    assert code_agent(AskUserTool(ScriptedProvider({"db": "sqlite"}))).run("pick") == SQLITE


def test_a_code_agent_without_a_time_limit_asks_the_provider_in_context() -> None:
    with provide(ScriptedProvider({"db": "sqlite"})):
        assert code_agent(AskUserTool(), timeout_seconds=None).run("pick") == SQLITE
        # With the time limit the code's thread starts from an empty context.
        limited = str(code_agent(AskUserTool()).run("pick"))
    assert limited.startswith("Error: no user-interaction provider is registered\n")


def test_an_explicit_provider_is_asked_inside_another_registration() -> None:
    mine = ScriptedProvider({"db": "postgres"})
    with provide(ScriptedProvider({"db": "sqlite"})):
        output, _ = run_agent(BATCH, tool=AskUserTool(mine))
    assert json.loads(output)["answers"][0]["selected"] == ["postgres"]
    assert len(mine.requests) == 1


def test_a_bad_timeout_is_refused_when_the_tool_is_built() -> None:
    with pytest.raises(ValueError, match="timeout must be a positive"):
        AskUserTool(timeout=-1)


def test_the_import_error_names_the_extra() -> None:
    assert import_error_without("smolagents", "interaction.integrations.smolagents") == (
        "interaction.integrations.smolagents needs smolagents:"
        ' pip install "interaction-seam[smolagents]"'
    )
