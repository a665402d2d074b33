"""The ``interaction`` command: ``interaction demo`` asks the built-in questions."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from ._agents import AgentRegistry
from ._ask import ask
from ._demo import DEMO_BATCH, DEMO_PLAN
from ._errors import ErrorCode, UserInteractionError
from ._registry import provide, provide_agents
from ._types import AskUserQuestionAnswer, AskUserQuestionRequest, UserInteractionProvider
from ._version import __version__
from .console import ConsoleProvider
from .wire import encode_answer

__all__ = ["main"]

EXIT_ANSWERED: Final = 0
EXIT_NOT_ANSWERED: Final = 1
EXIT_BAD_INPUT: Final = 2


@dataclass(frozen=True)
class _DemoAgent:
    id: str


def choose_provider(*, plain: bool) -> UserInteractionProvider:
    """The best provider available here; prompts go to stderr so stdout stays JSON."""
    del plain  # the console provider is the only one yet
    return ConsoleProvider(sys.stdin, sys.stderr)


async def _demo(provider: UserInteractionProvider) -> AskUserQuestionAnswer:
    agent = _DemoAgent("demo")
    registry = AgentRegistry()
    registry.enter(agent)
    with provide_agents(registry), provide(provider):
        batch = await ask(AskUserQuestionRequest(DEMO_BATCH, agent=agent))
        plan = await ask(AskUserQuestionRequest([DEMO_PLAN], agent=agent))
    return AskUserQuestionAnswer([*batch.answers, *plan.answers])


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="interaction", description="Ask a human through the interaction seam."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser("demo", help="ask the built-in questions and print the answer JSON")
    demo.add_argument("--plain", action="store_true", help="use the line-based console provider")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status (0 answered, 1 not answered, 2 bad input)."""
    args = _parser().parse_args(argv)
    provider = choose_provider(plain=args.plain)
    try:
        answer = asyncio.run(_demo(provider))
    except UserInteractionError as exc:
        print(f"interaction: {exc.message} ({exc.code})", file=sys.stderr)
        if exc.code in (ErrorCode.ASK_CANCELLED, ErrorCode.ASK_TIMEOUT, ErrorCode.ASK_ABORTED):
            return EXIT_NOT_ANSWERED
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interaction: interrupted", file=sys.stderr)
        return EXIT_NOT_ANSWERED
    print(json.dumps(encode_answer(answer), ensure_ascii=False, separators=(",", ":")))
    return EXIT_ANSWERED
