"""The CrewAI integration: real ``Crew.kickoff()`` runs on a scripted ``BaseLLM`` (CrewAI's
own way to plug in a model), answered by ``ScriptedProvider`` or the in-memory relay.

CrewAI pins ``mcp<2`` and ``openai<3``, which the rest of the test extra excludes, so these
tests run in a venv of their own (``.venv-crewai``, the ``[crewai-test]`` extra; see
``.ci/run``), with ``--noconftest``: they need nothing of ``tests/conftest.py``.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from crewai import Agent, Crew, CrewOutput, Task
from crewai.llms.base_llm import BaseLLM
from crewai.tools.tool_failure import ToolFailure, ToolFailureReason
from pydantic import Field
from typing_extensions import override

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionRequest,
    Provenance,
    provide,
)
from interaction.integrations.crewai import ACCEPT, ask_user_tool, human_feedback
from interaction.relay import Relay
from interaction.testing import BlockingProvider, ScriptedProvider

# CrewAI reads its own deprecated fields (function_calling_llm, allow_code_execution...)
# on every kickoff: its warnings, not ours.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:crewai")

BATCH: dict[str, object] = {
    "questions": [
        {
            "id": "db",
            "question": "Which database?",
            "options": [{"label": "postgres"}, {"label": "sqlite"}],
        },
        {
            "id": "extras",
            "question": "Which extras?",
            "options": [{"label": "redis"}, {"label": "web"}],
            "multi_select": True,
        },
        {"id": "name", "question": "Project name?"},
    ]
}
OBSERVATION = re.compile(r"Observation:[ \t]*(.*)")  # the line the tool's result starts


def text_of(messages: str | list[Any]) -> str:
    if isinstance(messages, str):
        return messages
    return "\n".join(str(message.get("content", "")) for message in messages)


class ScriptedLLM(BaseLLM):
    """Makes each of ``calls`` in turn (ReAct text), then answers with the last observation."""

    calls: list[object] = Field(default_factory=list)
    seen: list[str] = Field(default_factory=list)
    final_answers: list[str] = Field(default_factory=list)

    @override
    def call(
        self,
        messages: str | list[Any],
        tools: list[dict[str, Any]] | None = None,
        callbacks: list[Any] | None = None,
        available_functions: dict[str, Any] | None = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> str:
        del tools, callbacks, available_functions, from_task, from_agent, response_model
        text = text_of(messages)
        self.seen.append(text)
        turn = len(self.seen) - 1
        if turn < len(self.calls):
            arguments = self.calls[turn]
            encoded = arguments if isinstance(arguments, str) else json.dumps(arguments)
            return f"Thought: I need to ask.\nAction: ask_user_question\nAction Input: {encoded}"
        observations = OBSERVATION.findall(text)
        final = observations[-1] if observations else "nothing observed"
        if self.final_answers:
            final = self.final_answers[turn - len(self.calls)]
        return f"Thought: I now know the final answer\nFinal Answer: {final}"

    def supports_function_calling(self) -> bool:
        return False


def crew(llm: ScriptedLLM, *tools: Any, human_input: bool = False) -> Crew:
    agent = Agent(
        role="Project setup",
        goal="Set the project up",
        backstory="Careful.",
        llm=llm,
        tools=list(tools),
    )
    task = Task(
        description="Set up the project.",
        expected_output="The user's choices.",
        agent=agent,
        human_input=human_input,
    )
    return Crew(agents=[agent], tasks=[task], verbose=False)


def raw(output: object) -> str:
    assert isinstance(output, CrewOutput)  # not streamed
    return output.raw


def kickoff(*calls: object, tool: Any = None) -> tuple[str, ScriptedLLM]:
    llm = ScriptedLLM(model="scripted", calls=list(calls), seen=[])
    output = crew(llm, tool if tool is not None else ask_user_tool()).kickoff()
    return raw(output), llm


def test_a_batch_with_multi_select_other_and_skip() -> None:
    scripted = ScriptedProvider({"db": "sqlite", "extras": ["web", "redis", "docs"]})
    with provide(scripted):  # a plain program: asked on a loop of the tool's own
        output, _ = kickoff(BATCH)
    assert json.loads(output) == {
        "answers": [
            {"id": "db", "selected": ["sqlite"]},
            {"id": "extras", "selected": ["web", "redis"], "custom": "docs"},
            {"id": "name", "selected": []},
        ]
    }
    assert [q.id for q in scripted.last_request.questions] == ["db", "extras", "name"]
    # CrewAI does not tell a tool its agent: the framework and the tool say who asks
    assert scripted.last_request.provenance == Provenance(source="CrewAI", tool="ask_user_question")


def test_other_replaces_a_single_select_choice() -> None:
    with provide(ScriptedProvider({"db": "duckdb"})):
        output, _ = kickoff(BATCH)
    assert json.loads(output)["answers"][0] == {"id": "db", "selected": [], "custom": "duckdb"}


async def test_answered_through_the_relay_while_its_loop_runs() -> None:
    relay = Relay()
    events = relay.subscribe()

    async def person() -> AskUserQuestionRequest:
        async for event in events:
            if event.kind == "requested" and event.question is not None:
                relay.answer(
                    event.id,
                    AskUserQuestionAnswer(
                        [
                            AskUserQuestionAnswerItem("db", ["postgres"]),
                            AskUserQuestionAnswerItem("extras"),
                            AskUserQuestionAnswerItem("name", custom="seam"),
                        ]
                    ),
                )
                return event.question.request
        raise AssertionError("the relay's events ended before a question came")

    answering = asyncio.create_task(person())
    with provide(relay):  # the crew runs in a worker thread: the ask runs on this loop
        output, _ = await asyncio.to_thread(kickoff, BATCH)
    asked = await answering
    assert asked.provenance is not None  # what the person is shown (a relay adds its time)
    assert (asked.provenance.source, asked.provenance.tool) == ("CrewAI", "ask_user_question")
    assert json.loads(output)["answers"][2] == {"id": "name", "selected": [], "custom": "seam"}
    assert relay.pending() == []


def tool_failure(output: str, llm: ScriptedLLM) -> str:
    """What the model was shown for its first call."""
    del output
    return llm.seen[1]


def test_a_dismissal_and_a_timeout_are_tool_failures_the_model_reads() -> None:
    def dismiss(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        from interaction import cancelled_error

        raise cancelled_error()

    with provide(ScriptedProvider(dismiss)):
        _, llm = kickoff(BATCH)
    assert "the user dismissed ask_user_question without answering" in llm.seen[1]
    assert "(code: ASK_CANCELLED)" in llm.seen[1]
    blocking = BlockingProvider()
    _, llm = kickoff(BATCH, tool=ask_user_tool(blocking, timeout=0.05))
    assert "ask_user_question timed out before the user answered" in llm.seen[1]
    assert "(code: ASK_TIMEOUT)" in llm.seen[1]
    assert blocking.cleaned_up == 1


def test_the_failures_are_crewais_own_reports() -> None:
    tool = ask_user_tool(BlockingProvider(), timeout=0.05)
    failed = tool.run(**BATCH)
    assert isinstance(failed, ToolFailure)
    assert (failed.reason, failed.code, failed.retryable) == (
        ToolFailureReason.TOOL_REPORTED,
        "ASK_TIMEOUT",
        False,
    )
    bad = ask_user_tool(ScriptedProvider()).run(
        questions=[{"id": "a", "question": "?", "options": [{"label": "x"}, {"label": "X"}]}]
    )
    assert isinstance(bad, ToolFailure)
    assert (bad.reason, bad.code, bad.retryable) == (
        ToolFailureReason.INVALID_INPUT,
        "BAD_REQUEST",
        True,
    )
    assert bad.message.startswith(
        "ask_user_question: questions[0].options[1].label: duplicate option label"
    )


@pytest.mark.parametrize(
    ("bad", "shown"),
    [
        (
            {
                "questions": [
                    {"id": "db", "question": "?", "options": [{"label": "x"}, {"label": "X"}]}
                ]
            },
            "duplicate option label",
        ),
        ({"questions": []}, "ask_user_question requires at least one question"),
        ({"questions": "nope"}, "arguments validation failed"),
        ("not json at all", "Action Input"),
    ],
)
def test_malformed_arguments_reach_the_model_and_it_can_retry(bad: object, shown: str) -> None:
    scripted = ScriptedProvider({"db": "postgres"})
    with provide(scripted):
        output, llm = kickoff(bad, BATCH)
    assert shown.lower() in llm.seen[1].lower()
    assert json.loads(output)["answers"][0] == {"id": "db", "selected": ["postgres"]}
    assert len(scripted.requests) == 1  # only the fixed call reached the human


def test_an_explicit_provider_is_asked_inside_another_registration() -> None:
    mine = ScriptedProvider({"db": "postgres"})
    with provide(ScriptedProvider({"db": "sqlite"})):
        output, _ = kickoff(BATCH, tool=ask_user_tool(mine))
    assert json.loads(output)["answers"][0]["selected"] == ["postgres"]


def test_a_bad_timeout_is_refused_when_the_tool_is_built() -> None:
    with pytest.raises(ValueError, match="timeout must be a positive"):
        ask_user_tool(timeout=float("inf"))


# ---------------------------------------------------------------------------- human input


def feedback_crew(*finals: str) -> tuple[Crew, ScriptedLLM]:
    llm = ScriptedLLM(model="scripted", calls=[], seen=[], final_answers=list(finals))
    return crew(llm, human_input=True), llm


def test_human_input_asks_through_the_seam_and_feedback_reruns_the_agent() -> None:
    replies = iter(["use sqlite instead", ACCEPT])

    def person(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        reply = next(replies)
        selected = [reply] if reply == ACCEPT else []
        custom = None if reply == ACCEPT else reply
        return AskUserQuestionAnswer([AskUserQuestionAnswerItem("feedback", selected, custom)])

    scripted = ScriptedProvider(person)
    team, llm = feedback_crew("postgres it is", "sqlite it is")
    with human_feedback(scripted):
        output = team.kickoff()
    assert raw(output) == "sqlite it is"
    first, second = scripted.requests
    # the request for feedback names the agent (its role) and the crew's run
    assert first.provenance == Provenance(source="Project setup", session=str(team.id))
    assert first.questions[0].detail == "Task: Set up the project.\n\nResult:\npostgres it is"
    assert second.questions[0].detail == "Task: Set up the project.\n\nResult:\nsqlite it is"
    assert [o.label for o in first.questions[0].options] == [ACCEPT]
    assert "use sqlite instead" in llm.seen[1]  # the feedback went back to the model


@pytest.mark.parametrize(
    "script",
    [{"feedback": ACCEPT}, {}, ScriptedProvider],  # accept, skip, dismissal
)
def test_accept_skip_or_dismissal_keep_the_result(script: Any) -> None:
    if script is ScriptedProvider:
        from interaction import cancelled_error

        provider = ScriptedProvider(cancelled_error())
    else:
        provider = ScriptedProvider(script)
    team, llm = feedback_crew("postgres it is")
    with human_feedback(provider):
        assert raw(team.kickoff()) == "postgres it is"
    assert len(llm.seen) == 1


def test_a_feedback_timeout_keeps_the_result_and_withdraws_the_question() -> None:
    blocking = BlockingProvider()
    team, _ = feedback_crew("postgres it is")
    with human_feedback(blocking, timeout=0.05):
        assert raw(team.kickoff()) == "postgres it is"
    assert blocking.cleaned_up == 1


def test_model_text_in_the_result_is_escaped_for_the_question() -> None:
    scripted = ScriptedProvider({"feedback": ACCEPT})
    team, _ = feedback_crew("ok\x1b[2J\u202edone")
    with human_feedback(scripted):
        team.kickoff()
    assert scripted.last_request.questions[0].detail == (
        "Task: Set up the project.\n\nResult:\nok\\x1b[2J\\u202edone"
    )


def test_the_import_error_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['crewai'] = None\n"
        "try:\n import interaction.integrations.crewai\nexcept ImportError as e:\n print(e)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == (
        'interaction.integrations.crewai needs CrewAI: pip install "interaction-seam[crewai]"'
    )


# ---------------------------------------------------------------------------- the docs

DOCS = Path(__file__).parent.parent.parent / "docs" / "integrations.md"
CREWAI_BLOCK = re.compile(r"^```python crewai\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def test_the_crewai_examples_of_the_docs_run() -> None:
    """docs/integrations.md's ```python crewai blocks run here (tests/test_docs.py runs the
    others in the main venv, which has no CrewAI)."""
    blocks = CREWAI_BLOCK.findall(DOCS.read_text("utf-8"))
    assert blocks
    for block in blocks:
        exec(compile(block, str(DOCS), "exec"), {"__name__": "docs_crewai"})
