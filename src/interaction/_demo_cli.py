"""``interaction demo``, and the provider a session on this terminal answers with.

:func:`choose_provider` and its ``--plain`` flag are ``ask``'s too: the terminal UI when
it can run, the console provider otherwise, prompts on stderr either way.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from ._core import (
    AgentRegistry,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    UserInteractionProvider,
    ask,
    provide,
    provide_agents,
)
from ._demo import DEMO_BATCH, DEMO_PLAN
from .console import ConsoleProvider

__all__ = ["add_command", "add_plain_flag", "choose_provider", "demo_answer"]


def add_command(add_parser: Callable[..., argparse.ArgumentParser]) -> None:
    """Add ``demo`` through the subcommands' ``add_parser``."""
    demo = add_parser("demo", help="ask the built-in questions and print the answer JSON")
    add_plain_flag(demo)


def add_plain_flag(command: argparse.ArgumentParser) -> None:
    """``--plain``, which keeps :func:`choose_provider` off the terminal UI."""
    command.add_argument(
        "--plain",
        action="store_true",
        help="ask line by line even where the terminal UI could run",
    )


def demo_answer(args: argparse.Namespace) -> AskUserQuestionAnswer:
    """``demo``: the built-in questions asked on this terminal, and their answers."""
    return asyncio.run(_demo(choose_provider(plain=args.plain)))


@dataclass(frozen=True)
class _DemoAgent:
    id: str


def choose_provider(
    answers: TextIO | None = None, *, plain: bool = False, deadline: float | None = None
) -> UserInteractionProvider:
    """The provider for this session, reading answers from ``answers`` (stdin by default).

    The terminal UI when the ``[terminal]`` extra is installed and both ``answers`` and
    stderr are terminals, unless ``plain``; the console provider otherwise. Prompts go to
    stderr, so stdout carries only the answer. The terminal UI counts down to ``deadline``
    (a ``time.monotonic()`` instant).
    """
    source = answers if answers is not None else sys.stdin
    if not plain and source.isatty() and sys.stderr.isatty():
        try:
            from .terminal import TerminalProvider
        except ImportError:
            pass
        else:
            return TerminalProvider(source, sys.stderr, deadline=deadline)
    return ConsoleProvider(source, sys.stderr)


async def _demo(provider: UserInteractionProvider) -> AskUserQuestionAnswer:
    agent = _DemoAgent("demo")
    registry = AgentRegistry()
    registry.enter(agent)
    with provide_agents(registry), provide(provider):
        batch = await ask(AskUserQuestionRequest(DEMO_BATCH, agent=agent))
        plan = await ask(AskUserQuestionRequest([DEMO_PLAN], agent=agent))
    return AskUserQuestionAnswer([*batch.answers, *plan.answers])
