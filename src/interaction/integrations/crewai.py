"""CrewAI: a ready ``ask_user_question`` tool, and the human-input path of a task.

- :func:`ask_user_tool` is a CrewAI ``BaseTool`` with ``interaction.tool``'s schema. CrewAI
  runs tools from plain code, so each call goes through ``run_tool_sync`` (``_run``; the
  awaitable ``run_tool`` for ``_arun``): the ask runs on the loop the provider was
  registered on, or on a fresh loop of the tool's thread (docs/providers.md, "Sync
  callers"). An answer is the tool's result; anything else is a ``ToolFailure``, CrewAI's
  own report of a tool that ran but did not succeed: arguments the model must fix
  (``INVALID_INPUT``, retryable), a dismissal, a timeout, no provider (``TOOL_REPORTED``,
  with the seam's code and what the model should do next).
- :class:`FeedbackProvider` is a CrewAI ``HumanInputProvider``: with
  ``Task(human_input=True)`` the agent's result is put to the human through the seam
  instead of ``input()`` on the terminal; :func:`human_feedback` makes it CrewAI's
  provider for a ``with`` block.

Each question's provenance says who asks: a question of the tool names the tool, with
CrewAI as its source (CrewAI does not tell a tool its agent); a request for feedback names
the agent's role and the crew's id.

Every function asks ``provider`` when one is given, else the provider active in context.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

try:
    from crewai.agents.parser import AgentFinish
    from crewai.core.providers.human_input import (
        AsyncExecutorContext,
        ExecutorContext,
        reset_provider,
        set_provider,
    )
    from crewai.tools import BaseTool
    from crewai.tools.tool_failure import ToolFailure, ToolFailureReason
    from crewai.utilities.pydantic_schema_utils import create_model_from_schema
    from pydantic import PrivateAttr
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        'interaction.integrations.crewai needs CrewAI: pip install "interaction-seam[crewai]"'
    ) from exc

from .._core import (
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    HarnessError,
    UserInteractionProvider,
    ask,
    ask_sync,
    escape_controls,
)
from ..tool import (
    DEFAULT_LIMITS,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    ToolLimits,
    ToolResult,
    run_tool,
    run_tool_sync,
    tool_parameters,
)
from ._common import (
    STOPPED,
    asked_by,
    checked_timeout,
    timeout_signal,
    with_provider,
    with_provider_sync,
)

__all__ = ["ACCEPT", "FRAMEWORK", "FeedbackProvider", "ask_user_tool", "human_feedback"]

FRAMEWORK: Final = "CrewAI"
"""The source of the tool's questions: CrewAI does not tell a tool which agent calls it."""

ACCEPT: Final = "Accept"
"""The option of the feedback question that takes the agent's result as it is."""
_RETRIED: Final = frozenset({ErrorCode.BAD_REQUEST, ErrorCode.EMPTY_QUESTIONS})


def _outcome(result: ToolResult) -> str | ToolFailure:
    """The tool's answer text, or the ``ToolFailure`` CrewAI records and shows the model."""
    if result.error is None:
        return result.content
    code = result.error["code"]
    return ToolFailure(
        message=result.content.removeprefix("Error: "),
        reason=ToolFailureReason.INVALID_INPUT
        if code in _RETRIED
        else ToolFailureReason.TOOL_REPORTED,
        code=code,
        retryable=code in _RETRIED,
    )


class _AskUserTool(BaseTool):
    """The ``ask_user_question`` tool; build it with :func:`ask_user_tool`."""

    _provider: UserInteractionProvider | None = PrivateAttr(default=None)
    _loop: asyncio.AbstractEventLoop | None = PrivateAttr(default=None)
    _limits: ToolLimits = PrivateAttr(default=DEFAULT_LIMITS)
    _timeout: float | None = PrivateAttr(default=None)

    def _run(self, **arguments: Any) -> str | ToolFailure:
        return _outcome(
            with_provider_sync(
                self._provider,
                lambda: run_tool_sync(
                    arguments,
                    signal=timeout_signal(self._timeout),
                    limits=self._limits,
                    provenance=asked_by(FRAMEWORK, tool=self.name),
                ),
                loop=self._loop,
            )
        )

    async def _arun(self, **arguments: Any) -> str | ToolFailure:
        return _outcome(
            await with_provider(
                self._provider,
                lambda: run_tool(
                    arguments,
                    signal=timeout_signal(self._timeout),
                    limits=self._limits,
                    provenance=asked_by(FRAMEWORK, tool=self.name),
                ),
            )
        )


def ask_user_tool(
    provider: UserInteractionProvider | None = None,
    *,
    loop: asyncio.AbstractEventLoop | None = None,
    limits: ToolLimits = DEFAULT_LIMITS,
    timeout: float | None = None,
) -> BaseTool:
    """The model-facing ``ask_user_question`` tool for a CrewAI ``Agent(tools=[...])``.

    ``provider`` is asked when given (registered on ``loop``, the event loop it lives on,
    if any), else the provider active where the crew runs. ``timeout`` (seconds) bounds
    each ask (then a ``ToolFailure`` with ``ASK_TIMEOUT``); one that is not positive and
    finite is a ``ValueError`` here.
    """
    timeout = checked_timeout(timeout)
    tool = _AskUserTool(
        name=TOOL_NAME,
        description=TOOL_DESCRIPTION,
        args_schema=create_model_from_schema(
            dict(tool_parameters(limits)), model_name="AskUserQuestionArguments"
        ),
    )
    tool._provider = provider
    tool._loop = loop
    tool._limits = limits
    tool._timeout = timeout
    return tool


# ---------------------------------------------------------------------------- human input


def _output_text(answer: AgentFinish) -> str:
    output = answer.output
    return output if isinstance(output, str) else output.model_dump_json()


class FeedbackProvider:
    """A CrewAI ``HumanInputProvider`` that asks for feedback through the seam.

    For a task with ``human_input=True`` each result is one question, "Is this result
    what you wanted?", with the task and the result as its detail and one option,
    :data:`ACCEPT`. Text of the user's own is feedback: the agent works on it and the new
    result is asked about again. ``Accept``, a skip, a dismissal or a timeout take the
    result as it is, as an empty reply does on CrewAI's terminal prompt. Training runs get
    one round, as with CrewAI's own provider.
    """

    def __init__(
        self,
        provider: UserInteractionProvider | None = None,
        *,
        loop: asyncio.AbstractEventLoop | None = None,
        timeout: float | None = None,
    ) -> None:
        self._provider = provider
        self._loop = loop
        self._timeout = checked_timeout(timeout)

    def _request(self, answer: AgentFinish, context: ExecutorContext) -> AskUserQuestionRequest:
        task = context.task
        parts = [] if task is None else [f"Task: {task.description}"]
        parts.append(f"Result:\n{_output_text(answer)}")
        return AskUserQuestionRequest(
            [
                AskUserQuestionItem(
                    "feedback",
                    "Is this result what you wanted? Accept it, or say what to change.",
                    detail=escape_controls("\n\n".join(parts)),
                    header="Review",
                    options=[AskUserQuestionOption(ACCEPT, "Use this result as it is")],
                )
            ],
            signal=timeout_signal(self._timeout),
            provenance=asked_by(
                FRAMEWORK,
                agent=context.agent.role,
                session=None if context.crew is None else context.crew.id,
            ),
        )

    def setup_messages(self, context: ExecutorContext) -> bool:
        del context
        return False  # CrewAI's own message setup

    def post_setup_messages(self, context: ExecutorContext) -> None:
        del context

    def _ask(self, answer: AgentFinish, context: ExecutorContext) -> str | None:
        request = self._request(answer, context)
        try:
            reply = with_provider_sync(self._provider, lambda: ask_sync(request), loop=self._loop)
        except HarnessError as error:
            if error.code in STOPPED:
                return None
            raise
        return reply.answers[0].custom

    async def _ask_async(self, answer: AgentFinish, context: ExecutorContext) -> str | None:
        request = self._request(answer, context)
        try:
            reply = await with_provider(self._provider, lambda: ask(request))
        except HarnessError as error:
            if error.code in STOPPED:
                return None
            raise
        return reply.answers[0].custom

    def handle_feedback(
        self, formatted_answer: AgentFinish, context: ExecutorContext
    ) -> AgentFinish:
        """Ask about the result until the user accepts it (CrewAI's sync path)."""
        answer = formatted_answer
        while context.ask_for_human_input:
            feedback = self._ask(answer, context)
            if context._is_training_mode():
                context._handle_crew_training_output(answer, feedback or "")
                if feedback is not None:
                    context.messages.append(context._format_feedback_message(feedback))
                    answer = context._invoke_loop()
                    context._handle_crew_training_output(answer)
                context.ask_for_human_input = False
            elif feedback is None:
                context.ask_for_human_input = False
            else:
                context.messages.append(context._format_feedback_message(feedback))
                answer = context._invoke_loop()
        return answer

    async def handle_feedback_async(
        self, formatted_answer: AgentFinish, context: AsyncExecutorContext
    ) -> AgentFinish:
        """Ask about the result until the user accepts it (CrewAI's async path)."""
        answer = formatted_answer
        while context.ask_for_human_input:
            feedback = await self._ask_async(answer, context)
            if context._is_training_mode():
                context._handle_crew_training_output(answer, feedback or "")
                if feedback is not None:
                    context.messages.append(context._format_feedback_message(feedback))
                    answer = await context._ainvoke_loop()
                    context._handle_crew_training_output(answer)
                context.ask_for_human_input = False
            elif feedback is None:
                context.ask_for_human_input = False
            else:
                context.messages.append(context._format_feedback_message(feedback))
                answer = await context._ainvoke_loop()
        return answer

    @staticmethod
    def _get_output_string(answer: AgentFinish) -> str:
        return _output_text(answer)


@contextmanager
def human_feedback(
    provider: UserInteractionProvider | None = None,
    *,
    loop: asyncio.AbstractEventLoop | None = None,
    timeout: float | None = None,
) -> Iterator[FeedbackProvider]:
    """Make a :class:`FeedbackProvider` CrewAI's human-input provider for the ``with`` body.

    CrewAI keeps its provider in a context variable, so the crews kicked off in the body
    (and in contexts copied from it) ask through the seam.
    """
    feedback = FeedbackProvider(provider, loop=loop, timeout=timeout)
    token = set_provider(feedback)
    try:
        yield feedback
    finally:
        reset_provider(token)
