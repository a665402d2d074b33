"""The SDKs' own forms of "always" and "edit", and permission prompts a policy can answer."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from agents import (
    Agent,
    Model,
    ModelResponse,
    ModelSettings,
    Runner,
    Usage,
    function_tool,
    set_tracing_disabled,
)
from agents.items import TResponseInputItem, TResponseStreamEvent
from claude_agent_sdk import (
    PermissionResultAllow,
    PermissionResultDeny,
    PermissionUpdate,
    ToolPermissionContext,
)
from claude_agent_sdk.types import PermissionRuleValue
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from pydantic_ai import DeferredToolRequests, ToolApproved, ToolDenied
from pydantic_ai.messages import ToolCallPart
from typing_extensions import override

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    PermissionIntent,
    cancelled_error,
    provide,
)
from interaction.integrations._common import approval_item, input_summary
from interaction.integrations.claude_agent_sdk import decide
from interaction.integrations.openai_agents import resolve_interruptions
from interaction.integrations.pydantic_ai import approve_deferred
from interaction.policies import MemoryRuleStore, PolicyProvider
from interaction.testing import ScriptedProvider

set_tracing_disabled(True)


def test_the_input_summary_is_the_whole_input_on_one_line() -> None:
    assert input_summary({"command": "npm test", "description": "tests"}) == "npm test"
    assert input_summary({"command": "ls\nrm -rf ~"}) == "ls\\x0arm -rf ~"
    assert input_summary({"file_path": "src/a.py", "content": "x"}) == "src/a.py"
    assert input_summary({"q": [1, 2]}) == '{"q":[1,2]}'
    long = "echo " + "a" * 10_000 + "; rm -rf ~"
    assert input_summary({"command": long}) == long  # never cut: a rule sees all of it


def test_every_approval_question_is_a_permission_prompt() -> None:
    item = approval_item("Bash", {"command": "make"}, always="Always", deny_always=True)
    assert item.intent == PermissionIntent("Bash", "make", "Allow", "Deny", "Always")
    assert [option.label for option in item.options] == ["Allow", "Deny", "Always deny"]


# ---------------------------------------------------------------------------- OpenAI Agents


class OneCallPerTurn(Model):
    """Calls ``delete_file`` on each path in turn, one per model turn, then echoes."""

    def __init__(self, *paths: str) -> None:
        self.paths = list(paths)

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
        items = [] if isinstance(input, str) else input
        outputs = [
            str(item.get("output"))
            for item in items
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]
        if len(outputs) < len(self.paths):
            n = len(outputs)
            call = ResponseFunctionToolCall(
                arguments=json.dumps({"path": self.paths[n]}),
                call_id=f"call-{n + 1}",
                name="delete_file",
                type="function_call",
                id=f"fc-{n + 1}",
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        text = ResponseOutputText(text=" | ".join(outputs), type="output_text", annotations=[])
        message = ResponseOutputMessage(
            id="msg", content=[text], role="assistant", status="completed", type="message"
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError


def deleting_agent(ran: list[str]) -> Agent[None]:
    @function_tool(needs_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return f"deleted {path}"

    return Agent(name="cleaner", model=OneCallPerTurn("a.txt", "b.txt"), tools=[delete_file])


async def test_always_allow_approves_the_tool_for_the_rest_of_the_run() -> None:
    ran: list[str] = []
    agent = deleting_agent(ran)
    first = await Runner.run(agent, "clean up")
    human = ScriptedProvider({"call-1": "Always allow"})
    second = await Runner.run(agent, await resolve_interruptions(first.to_state(), provider=human))
    assert second.interruptions == []  # b.txt ran without a second question
    assert ran == ["a.txt", "b.txt"]
    assert len(human.requests) == 1
    question = human.last_request.questions[0]
    assert [o.label for o in question.options] == ["Allow", "Always allow", "Deny", "Always deny"]
    assert question.intent == PermissionIntent(
        "delete_file", "a.txt", "Allow", "Deny", "Always allow"
    )


async def test_always_deny_rejects_the_tool_for_the_rest_of_the_run() -> None:
    ran: list[str] = []
    agent = deleting_agent(ran)
    first = await Runner.run(agent, "clean up")
    human = ScriptedProvider({"call-1": "Always deny"})
    second = await Runner.run(agent, await resolve_interruptions(first.to_state(), provider=human))
    assert second.interruptions == []
    assert ran == []
    assert second.final_output == (
        "The user denied delete_file, from now on | The user denied delete_file, from now on"
    )


# ---------------------------------------------------------------------------- Claude Agent SDK


def npm_test_context() -> ToolPermissionContext:
    rule = PermissionUpdate(
        "addRules", [PermissionRuleValue("Bash", "npm test:*")], "allow", destination="session"
    )
    return ToolPermissionContext(
        suggestions=[PermissionUpdate("setMode", mode="acceptEdits"), rule]
    )


async def test_claude_allow_always_returns_the_suggestion_and_a_policy_remembers_it() -> None:
    label = "Allow, and always allow Bash(npm test:*) for this session"
    human = ScriptedProvider({"permission": label})
    policy = PolicyProvider(human, MemoryRuleStore())
    first = await decide("Bash", {"command": "npm test"}, npm_test_context(), provider=policy)
    assert isinstance(first, PermissionResultAllow)
    assert first.updated_permissions == [npm_test_context().suggestions[1]]
    intent = human.last_request.questions[0].intent
    assert isinstance(intent, PermissionIntent)
    assert (intent.tool, intent.summary, intent.allow_always) == ("Bash", "npm test", label)
    second = await decide("Bash", {"command": "npm test"}, npm_test_context(), provider=policy)
    assert second == PermissionResultAllow()  # the rule answered: nobody was asked
    assert len(human.requests) == 1


async def test_claude_denial_goes_on_and_dismissal_interrupts() -> None:
    denied = await decide(
        "Bash", {"command": "rm -rf /"}, provider=ScriptedProvider({"permission": "Deny"})
    )
    assert denied == PermissionResultDeny(message="The user denied Bash")
    dismissed = await decide(
        "Bash", {"command": "rm -rf /"}, provider=ScriptedProvider(cancelled_error())
    )
    assert isinstance(dismissed, PermissionResultDeny)
    assert dismissed.interrupt is True


# ---------------------------------------------------------------------------- pydantic-ai


async def test_an_edit_is_asked_again_and_its_allow_overrides_the_arguments() -> None:
    requests = DeferredToolRequests(
        approvals=[ToolCallPart("delete_file", {"path": "/"}, tool_call_id="call-1")]
    )
    replies = iter(['{"path": "/tmp/x"}', "Allow"])
    human = ScriptedProvider()
    seen: list[AskUserQuestionRequest] = []

    async def answer(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        seen.append(request)
        return await ScriptedProvider({"call-1": next(replies)}).ask(request)

    human.script = answer
    results = await approve_deferred(requests, provider=human)
    assert results.approvals == {"call-1": ToolApproved(override_args={"path": "/tmp/x"})}
    assert [r.questions[0].question for r in seen] == [
        "Allow delete_file to run?",
        "Allow delete_file to run with your edited input?",
    ]
    intent = seen[1].questions[0].intent
    assert isinstance(intent, PermissionIntent)
    assert intent.summary == "/tmp/x"


async def test_a_reply_that_is_no_edit_denies_and_edits_are_bounded() -> None:
    requests = DeferredToolRequests(
        approvals=[ToolCallPart("delete_file", {"path": "/"}, tool_call_id="call-1")]
    )
    reply = await approve_deferred(requests, provider=ScriptedProvider({"call-1": "not that"}))
    assert reply.approvals == {
        "call-1": ToolDenied("The user denied delete_file and said: not that")
    }
    always_editing = ScriptedProvider({"call-1": '{"path": "/again"}'})
    bounded = await approve_deferred(requests, provider=always_editing)
    assert isinstance(bounded.approvals["call-1"], ToolDenied)
    assert len(always_editing.requests) == 4  # the first question and three edits
    with provide(ScriptedProvider({"call-1": "Allow"})):
        plain = await approve_deferred(requests)
    assert plain.approvals == {"call-1": ToolApproved()}
