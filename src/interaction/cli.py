"""The ``interaction`` command: ``demo``, ``ask`` and ``schema``.

Prompts go to stderr so that stdout carries only the answer JSON. Exit status: 0 answered,
1 not answered (cancelled, timed out, aborted), 2 bad input or refused request.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, TextIO

from ._core import (
    AbortSignal,
    AgentRegistry,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    UserInteractionProvider,
    __version__,
    ask,
    provide,
    provide_agents,
)
from ._demo import DEMO_BATCH, DEMO_PLAN
from .console import ConsoleProvider
from .tool import tool_parameters
from .wire import answer_schema, decode_request, dumps, request_schema

__all__ = ["main"]

EXIT_ANSWERED: Final = 0
EXIT_NOT_ANSWERED: Final = 1
EXIT_BAD_INPUT: Final = 2


@dataclass(frozen=True)
class _DemoAgent:
    id: str


def choose_provider(
    answers: TextIO | None = None, *, plain: bool = False
) -> UserInteractionProvider:
    """The provider for this session, reading answers from ``answers`` (stdin by default).

    The terminal UI when the ``[terminal]`` extra is installed and both ``answers`` and
    stderr are terminals, unless ``plain``; the console provider otherwise. Prompts go to
    stderr, so stdout carries only the answer.
    """
    source = answers if answers is not None else sys.stdin
    if not plain and source.isatty() and sys.stderr.isatty():
        try:
            from .terminal import TerminalProvider
        except ImportError:
            pass
        else:
            return TerminalProvider(source, sys.stderr)
    return ConsoleProvider(source, sys.stderr)


async def _demo(provider: UserInteractionProvider) -> AskUserQuestionAnswer:
    agent = _DemoAgent("demo")
    registry = AgentRegistry()
    registry.enter(agent)
    with provide_agents(registry), provide(provider):
        batch = await ask(AskUserQuestionRequest(DEMO_BATCH, agent=agent))
        plan = await ask(AskUserQuestionRequest([DEMO_PLAN], agent=agent))
    return AskUserQuestionAnswer([*batch.answers, *plan.answers])


async def _ask_file(
    provider: UserInteractionProvider, request: AskUserQuestionRequest
) -> AskUserQuestionAnswer:
    with provide(provider):
        return await ask(request)


async def _serve_demo(host: str, port: int, allow_hosts: Sequence[str] = ()) -> None:
    from .relay import Relay
    from .web import WebServer

    relay = Relay()
    async with WebServer(relay, host=host, port=port, hosts=allow_hosts) as server:
        print(f"interaction: answer at {server.url}", file=sys.stderr, flush=True)
        with provide(relay):
            try:
                while True:  # the demo, asked again each time it is answered
                    for questions in (DEMO_BATCH, (DEMO_PLAN,)):
                        try:
                            answer = await ask(AskUserQuestionRequest(questions))
                        except UserInteractionError as error:
                            print(f"interaction: {error.message} ({error.code})", file=sys.stderr)
                            continue
                        print(dumps(answer), flush=True)
            finally:
                relay.close()


def _serve(host: str, port: int, allow_hosts: Sequence[str] = ()) -> int:
    try:
        import interaction.web  # noqa: F401
    except ImportError as exc:
        print(f"interaction: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how one stops serving
            asyncio.run(_serve_demo(host, port, allow_hosts))
    except ValueError as exc:  # a bad --allow-host
        print(f"interaction: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_ANSWERED


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="interaction", description="Ask a human through the interaction seam."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser("demo", help="ask the built-in questions and print the answer JSON")
    ask_ = commands.add_parser("ask", help="ask a request given as wire JSON; print the answer")
    for command in (demo, ask_):
        command.add_argument(
            "--plain",
            action="store_true",
            help="ask line by line even where the terminal UI could run",
        )
    ask_.add_argument(
        "file", nargs="?", default="-", help="the request JSON file, or - for stdin (default)"
    )
    ask_.add_argument("--timeout", type=float, metavar="SECONDS", help="give up after SECONDS")
    serve = commands.add_parser(
        "serve", help="serve the answering page, with the demo asked again and again"
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks one)")
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="a Host the page is reached by when bound beyond loopback (repeatable)",
    )
    schema = commands.add_parser("schema", help="print a JSON Schema")
    schema.add_argument("which", choices=["request", "answer", "tool"])
    return parser


def _fail(error: UserInteractionError) -> int:
    print(f"interaction: {error.message} ({error.code})", file=sys.stderr)
    if error.code in (ErrorCode.ASK_CANCELLED, ErrorCode.ASK_TIMEOUT, ErrorCode.ASK_ABORTED):
        return EXIT_NOT_ANSWERED
    return EXIT_BAD_INPUT


def _read_request(file: str) -> tuple[AskUserQuestionRequest, TextIO | None]:
    """The request, and where answers come from when stdin held the request."""
    if file != "-":
        try:
            with open(file, "rb") as handle:
                return decode_request(handle.read()), None
        except OSError as exc:
            raise UserInteractionError(
                f"cannot read {file}: {exc.strerror}", ErrorCode.BAD_REQUEST
            ) from None
    request = decode_request(sys.stdin.buffer.read())
    try:
        terminal = open("/dev/tty", encoding="utf-8")  # noqa: SIM115 - lives for the process
    except OSError:
        raise UserInteractionError(
            "the request came on stdin and there is no terminal to answer on;"
            " pass the request as a FILE instead",
            ErrorCode.BAD_REQUEST,
        ) from None
    return request, terminal


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args.host, args.port, args.allow_host)
    if args.command == "schema":
        schemas = {"request": request_schema, "answer": answer_schema, "tool": tool_parameters}
        print(json.dumps(schemas[args.which](), indent=2))
        return EXIT_ANSWERED
    try:
        if args.command == "demo":
            answer = asyncio.run(_demo(choose_provider(plain=args.plain)))
        else:
            request, answers = _read_request(args.file)
            if args.timeout is not None:
                request = AskUserQuestionRequest(
                    request.questions, signal=AbortSignal.timeout(args.timeout)
                )
            provider = choose_provider(answers, plain=args.plain)
            answer = asyncio.run(_ask_file(provider, request))
    except UserInteractionError as exc:
        return _fail(exc)
    except KeyboardInterrupt:
        print("interaction: interrupted", file=sys.stderr)
        return EXIT_NOT_ANSWERED
    print(dumps(answer))
    return EXIT_ANSWERED
