"""The OpenAI Agents SDK: an ``ask_user_question`` ``FunctionTool`` and tool-approval resolving.

- :func:`ask_user_tool` is a ``FunctionTool`` whose schema is ``interaction.tool``'s and
  whose calls go through ``run_tool``. Its schema is not strict: strict mode makes every
  optional field (``header``, ``options``, ``multi_select``) required.
- :func:`resolve_interruptions` asks about every pending tool approval of a ``RunState``
  (``result.to_state()``) in one batch and approves or rejects each;
  :func:`run_with_approvals` runs an agent and resolves its interruptions until it ends,
  and :func:`run_with_approvals_streamed` does the same for a streamed run.

Every function asks ``provider`` when one is given, else the provider active in context.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, Final, Generic, TypeVar

try:
    from agents import (
        Agent,
        FunctionTool,
        Runner,
        RunResult,
        RunResultStreaming,
        RunState,
        StreamEvent,
        ToolApprovalItem,
        TResponseInputItem,
    )
    from agents.tool_context import ToolContext
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "interaction.integrations.openai_agents needs the OpenAI Agents SDK:"
        ' pip install "interaction-seam[openai-agents]"'
    ) from exc

from .._core import AbortSignal, AskUserQuestionItem, AskUserQuestionOption, UserInteractionProvider
from ..tool import (
    DEFAULT_LIMITS,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    ToolLimits,
    run_tool,
    tool_parameters,
)
from ._common import (
    ALWAYS_ALLOW,
    approval_item,
    ask_approvals,
    asked_by,
    checked_timeout,
    question_ids,
    timeout_signal,
    with_provider,
)

__all__ = [
    "FRAMEWORK",
    "MAX_ROUNDS",
    "ApprovedStream",
    "ask_user_tool",
    "resolve_interruptions",
    "run_with_approvals",
    "run_with_approvals_streamed",
]

State = TypeVar("State", bound="RunState[Any, Any]")
Context = TypeVar("Context")
FRAMEWORK: Final = "OpenAI Agents"
"""The source of a question when the SDK names no agent."""
MAX_ROUNDS: Final = 100
"""How many times :func:`run_with_approvals` resumes a run before it gives up."""


def ask_user_tool(
    provider: UserInteractionProvider | None = None,
    *,
    limits: ToolLimits = DEFAULT_LIMITS,
    timeout: float | None = None,
) -> FunctionTool:
    """The model-facing ``ask_user_question`` tool as a (non-strict) ``FunctionTool``.

    ``timeout`` (seconds) bounds each ask; the model then gets the ``ASK_TIMEOUT`` result.
    One that is not positive and finite is a ``ValueError`` here. Each question's provenance
    names the agent that calls the tool, the tool, and the run's ``RunConfig.group_id`` (the
    SDK's id of a conversation) as its session when it has one.
    """
    timeout = checked_timeout(timeout)

    async def invoke(context: ToolContext[Any], arguments: str) -> str:
        run_config = context.run_config
        provenance = asked_by(
            FRAMEWORK,
            agent=None if context.agent is None else context.agent.name,
            session=None if run_config is None else run_config.group_id,
            tool=context.tool_name,
        )
        result = await with_provider(
            provider,
            lambda: run_tool(
                arguments, signal=timeout_signal(timeout), limits=limits, provenance=provenance
            ),
        )
        return result.content

    return FunctionTool(
        name=TOOL_NAME,
        description=TOOL_DESCRIPTION,
        params_json_schema=tool_parameters(limits),
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )


def _arguments(item: ToolApprovalItem) -> object:
    text = item.arguments
    if text is None:
        return {}
    try:
        parsed: object = json.loads(text)
    except ValueError:
        return text
    return parsed


async def resolve_interruptions(
    state: State,
    *,
    provider: UserInteractionProvider | None = None,
    signal: AbortSignal | None = None,
) -> State:
    """Ask about every pending approval of ``state``, approve or reject each, return ``state``.

    ``Allow`` approves, ``Always allow`` approves with ``always_approve=True`` (the SDK
    then approves that tool for the agent from now on); anything else rejects with a message
    the model sees when the run resumes (``Deny``, the user's own text, a skip, a
    dismissal, a timeout, an abort), ``Always deny`` with ``always_reject=True``. Each
    question is a permission prompt (its ``PermissionIntent``), so a policy provider may
    answer it. The batch's provenance names the agent whose calls wait (when they are one
    agent's) and the tool (when they are one tool's). Resume with
    ``Runner.run(agent, state)``.
    """
    pending = state.get_interruptions()
    if not pending:
        return state
    # The call ids come from the model: an unusable or repeated one gets call-<n> instead.
    ids = question_ids([item.call_id for item in pending])
    items: list[tuple[AskUserQuestionItem, str]] = []
    for item, question_id in zip(pending, ids, strict=True):
        name = item.name or "tool"
        always = AskUserQuestionOption(ALWAYS_ALLOW, f"Run {name} now and from now on")
        question = approval_item(
            name,
            _arguments(item),
            id=question_id,
            more=[always],
            always=ALWAYS_ALLOW,
            deny_always=True,
        )
        items.append((question, name))
    agents = {item.agent.name for item in pending}
    provenance = asked_by(FRAMEWORK, agent=agents.pop() if len(agents) == 1 else None)
    verdicts = await ask_approvals(items, provider=provider, signal=signal, provenance=provenance)
    for item, verdict in zip(pending, verdicts, strict=True):
        if verdict.allowed:
            state.approve(item, always_approve=verdict.always)
        else:
            state.reject(item, always_reject=verdict.always, rejection_message=verdict.message)
    return state


async def run_with_approvals(
    agent: Agent[Context],
    input: str | list[TResponseInputItem],
    *,
    context: Context | None = None,
    provider: UserInteractionProvider | None = None,
    deny_after: float | None = None,
    max_rounds: int = MAX_ROUNDS,
) -> RunResult:
    """``Runner.run`` that resolves every tool-approval interruption through the seam.

    ``input`` is what ``Runner.run`` takes: a string or a list of input items (a
    conversation so far). ``deny_after`` (seconds) bounds each batch of approval questions
    (then they are rejected); one that is not positive and finite is a ``ValueError``
    before the run starts.
    Raises ``RuntimeError`` if the run is still interrupted after ``max_rounds`` resumptions.
    """
    deny_after = checked_timeout(deny_after, name="deny_after")
    result = await Runner.run(agent, input, context=context)
    for _ in range(max_rounds):
        if not result.interruptions:
            return result
        state = await resolve_interruptions(
            result.to_state(), provider=provider, signal=timeout_signal(deny_after)
        )
        result = await Runner.run(agent, state, context=context)
    if result.interruptions:
        raise RuntimeError(f"the run was still waiting for approvals after {max_rounds} rounds")
    return result


class ApprovedStream(Generic[Context]):
    """A streamed run that resolves its tool approvals through the seam as it goes.

    Built by :func:`run_with_approvals_streamed`. :meth:`stream_events` yields the events of
    every round, as ``RunResultStreaming.stream_events()`` does for one: when a round ends
    interrupted, its approvals are asked (one batch) and the run resumes streaming.
    :attr:`result` is the current round's ``RunResultStreaming``, the last one once the
    events end; :attr:`final_output` is its ``final_output``.
    """

    def __init__(
        self,
        agent: Agent[Context],
        input: str | list[TResponseInputItem],
        *,
        context: Context | None,
        provider: UserInteractionProvider | None,
        deny_after: float | None,
        max_rounds: int,
    ) -> None:
        self._agent = agent
        self._context = context
        self._provider = provider
        self._deny_after = deny_after
        self._max_rounds = max_rounds
        self.result: RunResultStreaming = Runner.run_streamed(agent, input, context=context)

    @property
    def final_output(self) -> Any:
        return self.result.final_output

    async def stream_events(self) -> AsyncIterator[StreamEvent]:
        """Every event of every round; ``RuntimeError`` if it is still interrupted after
        ``max_rounds`` resumptions."""
        for round in range(self._max_rounds + 1):
            async for event in self.result.stream_events():
                yield event
            if not self.result.interruptions:
                return
            if round == self._max_rounds:
                break
            state = await resolve_interruptions(
                self.result.to_state(),
                provider=self._provider,
                signal=timeout_signal(self._deny_after),
            )
            self.result = Runner.run_streamed(self._agent, state, context=self._context)
        raise RuntimeError(
            f"the run was still waiting for approvals after {self._max_rounds} rounds"
        )


def run_with_approvals_streamed(
    agent: Agent[Context],
    input: str | list[TResponseInputItem],
    *,
    context: Context | None = None,
    provider: UserInteractionProvider | None = None,
    deny_after: float | None = None,
    max_rounds: int = MAX_ROUNDS,
) -> ApprovedStream[Context]:
    """``Runner.run_streamed`` that resolves every tool-approval interruption through the
    seam: iterate ``stream_events()`` of what it returns, then read ``final_output``.

    ``input`` and ``deny_after`` are as :func:`run_with_approvals`'s (a bad ``deny_after``
    is a ``ValueError`` before the run starts).
    """
    deny_after = checked_timeout(deny_after, name="deny_after")
    return ApprovedStream(
        agent,
        input,
        context=context,
        provider=provider,
        deny_after=deny_after,
        max_rounds=max_rounds,
    )
