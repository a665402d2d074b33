"""Checked by mypy (tests/test_typing.py): what the public API's types say, and refuse.

Each ``# type: ignore[code]`` is an expected error: with ``warn_unused_ignores`` (part of
``--strict``), mypy fails if the error ever goes away.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Collection, Sequence
from typing import Literal, assert_type

from prompt_toolkit.input import PipeInput
from prompt_toolkit.output import DummyOutput

import interaction
from interaction import (
    AbortController,
    AbortSignal,
    Agent,
    AgentRegistry,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionIntent,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    LiveAgents,
    PlanReviewIntent,
    UserInteractionError,
    UserInteractionProvider,
)
from interaction.console import ConsoleProvider
from interaction.terminal import TerminalProvider
from interaction.testing import BlockingProvider, ScriptedProvider


async def plugin() -> None:
    request = AskUserQuestionRequest([AskUserQuestionItem("pkg", "Which?")])
    answer = await interaction.ask(request)
    assert_type(answer, AskUserQuestionAnswer)
    assert_type(answer.answers, Sequence[AskUserQuestionAnswerItem])
    assert_type(answer.answers[0].selected, Sequence[str])
    assert_type(answer.answers[0].custom, str | None)
    await interaction.ask({"questions": []})  # type: ignore[arg-type]


def vocabulary(item: AskUserQuestionItem) -> None:
    assert_type(item.intent, AskUserQuestionIntent | None)
    assert_type(PlanReviewIntent("Approve").kind, Literal["plan-review"])
    assert_type(item.options, Sequence[AskUserQuestionOption])
    item.id = "other"  # type: ignore[misc]
    AskUserQuestionOption(label=3)  # type: ignore[arg-type]
    AskUserQuestionItem("a", "q", multi_select="yes")  # type: ignore[arg-type]


def providers() -> None:
    scripted: UserInteractionProvider = ScriptedProvider({"pkg": "npm"})
    blocking: UserInteractionProvider = BlockingProvider()
    console: UserInteractionProvider = ConsoleProvider()
    not_a_provider: UserInteractionProvider = object()  # type: ignore[assignment]
    dispose = interaction.register_provider(scripted)
    assert_type(dispose, Callable[[], None])
    assert_type(interaction.current_provider(), UserInteractionProvider | None)
    del blocking, console, not_a_provider


def terminal_providers(keys: PipeInput) -> None:
    on_the_terminal: UserInteractionProvider = TerminalProvider()
    on_stderr = TerminalProvider(sys.stdin, sys.stderr)
    in_a_test = TerminalProvider(keys, DummyOutput())
    TerminalProvider("/dev/tty")  # type: ignore[call-overload]
    TerminalProvider(io.BytesIO())  # type: ignore[call-overload]
    TerminalProvider(keys, sys.stderr)  # type: ignore[arg-type]
    del on_the_terminal, on_stderr, in_a_test


def agents(registry: AgentRegistry) -> None:
    live: LiveAgents = registry
    assert_type(live.get("a"), Agent | None)
    assert_type(live.roots(), Collection[Agent])
    assert_type(interaction.current_agents(), LiveAgents | None)
    registry.enter("agent-id")  # type: ignore[arg-type]


def errors(error: UserInteractionError) -> None:
    assert_type(error.code, str)
    assert_type(error.path, str | None)
    assert_type(error.to_dict(), dict[str, str])
    assert_type(ErrorCode.NO_PROVIDER.value, Literal["NO_PROVIDER"])


def signals(controller: AbortController) -> None:
    assert_type(controller.signal, AbortSignal)
    assert_type(controller.signal.reason, BaseException | None)
    assert_type(AbortSignal.timeout(1.5), AbortSignal)
    assert_type(AbortSignal.any([controller.signal]), AbortSignal)
    controller.abort("reason")  # type: ignore[arg-type]
