"""The ``interaction`` command: ``demo``, ``ask``, ``schema``, ``serve``, ``rules``, ``log``
and ``push``.

Prompts go to stderr so that stdout carries only the answer JSON. Exit status: 0 answered,
1 not answered (cancelled, timed out, aborted), 2 bad input or refused request.

This module assembles the parser, checks what spans commands and dispatches; each command
lives in its own room: ``_demo_cli`` (``demo``, and the provider a terminal answers
with), ``_ask_cli`` (``ask``), ``_serve_cli`` (``serve``, its flags in ``_serve_flags``,
its people and channels in ``_serve_team``, its ``--config`` in ``_serve_config``),
``_records_cli`` (``rules``, ``log``) and ``_push_cli`` (``push keys``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from collections.abc import Sequence
from typing import Final

from ._ask_cli import add_command as add_ask_command
from ._ask_cli import answer_json, ask_answer
from ._core import ErrorCode, UserInteractionError, __version__
from ._demo_cli import add_command as add_demo_command
from ._demo_cli import demo_answer
from ._push_cli import add_command as add_push_command
from ._push_cli import run_push
from ._records_cli import add_commands as add_records_commands
from ._records_cli import run_log, run_rules
from ._serve_cli import run_serve
from ._serve_flags import add_command as add_serve_command
from ._serve_flags import valid_host
from .tool import tool_parameters
from .wire import answer_schema, request_schema

__all__ = ["main"]

EXIT_ANSWERED: Final = 0
EXIT_NOT_ANSWERED: Final = 1
EXIT_BAD_INPUT: Final = 2

EXIT_CODES: Final = """exit status:
  0  answered (the answer JSON is on stdout)
  1  not answered: dismissed, input ended, timed out or aborted
  2  bad input: a bad request, option or file (the message is on stderr)"""
_EXITS: Final = {
    "demo": EXIT_CODES,
    "ask": EXIT_CODES,
    "serve": """exit status:
  0  stopped (Ctrl-C or SIGTERM)
  2  bad input: a bad option, a missing extra, a port in use, a store that cannot be
     reached, a channel that is not configured (the message is on stderr)""",
    "schema": """exit status:
  0  printed (the schema JSON is on stdout)
  2  bad input: no schema or an unknown one named (the message is on stderr)""",
    "rules": """exit status:
  0  done (listed, added or revoked)
  1  revoke: no rule has that id
  2  bad input: a bad rule or option, a store that is corrupt or cannot be reached""",
    "log": """exit status:
  0  printed (with --verify: the chain is whole)
  1  --verify: a record was removed, reordered or edited (which one is on stderr)
  2  bad input: a bad option, a log that cannot be read""",
}
"""Each command's own exit statuses, for its ``--help``."""


def _parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The command's parser, and each subcommand's by name."""
    parser = argparse.ArgumentParser(
        prog="interaction",
        description="Ask a human through the interaction seam.",
        epilog=f"examples:\n  interaction demo\n  interaction ask request.json\n\n{EXIT_CODES}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    # Not required here: main() names an unknown flag before it says a command is missing.
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_demo_command(commands.add_parser)
    add_ask_command(commands.add_parser)
    add_serve_command(commands.add_parser)
    schema = commands.add_parser("schema", help="print a JSON Schema")
    schema.add_argument("which", nargs="?", choices=SCHEMAS, help="which schema to print")
    add_records_commands(commands.add_parser)
    add_push_command(commands.add_parser)
    for name, (description, examples) in _HELP.items():
        command = commands.choices[name]
        command.description = textwrap.fill(description, 78)
        command.epilog = "examples:\n" + "".join(f"  {line}\n" for line in examples)
        command.epilog += f"\n{_EXITS[name]}"
        command.formatter_class = argparse.RawDescriptionHelpFormatter
    return parser, {name: commands.choices[name] for name in _HELP}


SCHEMAS: Final = ("request", "answer", "tool")
_HELP: Final = {
    "demo": (
        "Ask the built-in questions (a single-select, a multi-select, a free-text question,"
        " then a plan review) and print the answer JSON. Uses the terminal UI on a terminal,"
        " line by line otherwise.",
        ["interaction demo", "interaction demo --plain", "interaction demo > answer.json"],
    ),
    "ask": (
        "Ask the request in FILE (wire JSON, see: interaction schema request) and print the"
        " answer JSON on stdout. With - (the default) the request is read from stdin, up to"
        " its end (Ctrl-D on a terminal), and the answers from the terminal.",
        [
            "interaction ask request.json",
            "interaction ask request.json --timeout 60",
            "interaction ask request.json --source deploy-bot",
            "interaction ask request.json --redis redis://127.0.0.1:6379/0",
            "interaction ask request.json --postgres postgresql://app@db.internal/app",
            "interaction ask < request.json",
            "generate-request | interaction ask -",
        ],
    ),
    "serve": (
        "Serve the web answering page, with the demo asked again and again; each answer is"
        " printed as JSON. With --redis, serve the questions pending in Redis instead,"
        " asked by any process with a RedisRelay on the same store (several hosts may"
        " serve them at once); with --postgres, those in PostgreSQL (PostgresRelay)."
        " Ctrl-C stops.",
        [
            "interaction serve",
            "interaction serve --port 0",
            "interaction serve --host 0.0.0.0",
            "interaction serve --redis redis://127.0.0.1:6379/0",
            "interaction serve --postgres postgresql://app@db.internal/app --migrate",
            "interaction serve --notify slack --notify email@30m=me@example.com",
            "interaction serve --config interaction.toml",
        ],
    ),
    "rules": (
        "List, add or revoke the policy rules that answer permission prompts before anyone"
        " sees them (see docs/policies.md for the grammar), or seal a keyed store's rules"
        " (sign them as they stand). The store is --store PATH, or $INTERACTION_RULES, or"
        " --redis URL with the key in $INTERACTION_RULES_KEY.",
        [
            "interaction rules list --store rules.json",
            "interaction rules add 'Bash(npm test:*)' --store rules.json",
            "interaction rules add 'Bash(rm:*)' --deny --store rules.json",
            "interaction rules revoke r1a2b3c4d5e6 --store rules.json",
        ],
    ),
    "log": (
        "Print the audit trail as a table (or --json lines), filtered by --since and"
        " --source; --follow keeps printing new records; --verify checks the hash chain"
        " (exit status 1 when it is broken; the key, if any, in $INTERACTION_AUDIT_KEY).",
        [
            "interaction log audit.jsonl",
            "interaction log audit.jsonl --since 2h --source ci",
            "interaction log audit.jsonl --verify",
            "interaction log --redis redis://127.0.0.1:6379/0 --follow",
        ],
    ),
    "schema": (
        "Print a JSON Schema: the request's or the answer's wire form, or the"
        " ask_user_question tool's parameters.",
        ["interaction schema request", "interaction schema answer", "interaction schema tool"],
    ),
}


def _fail(error: UserInteractionError) -> int:
    print(f"interaction: {error.message} ({error.code})", file=sys.stderr)
    if error.code in (ErrorCode.ASK_CANCELLED, ErrorCode.ASK_TIMEOUT, ErrorCode.ASK_ABORTED):
        return EXIT_NOT_ANSWERED
    return EXIT_BAD_INPUT


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    """The parsed command line; an unknown flag is named with its own command's usage."""
    parser, commands = _parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        owner = commands.get(args.command, parser) if args.command else parser
        owner.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command is None:
        parser.error("name a command: demo, ask, serve or schema (see interaction --help)")
    if args.command == "serve" and args.config is not None:
        from ._serve_config import ConfigError, with_config

        try:
            args = with_config(args, commands["serve"], lambda: parser.parse_known_args(argv)[0])
        except ConfigError as exc:
            print(f"interaction serve: {exc}", file=sys.stderr)
            raise SystemExit(EXIT_BAD_INPUT) from None
    if args.command in {"serve", "ask"} and args.prefix is not None and args.redis is None:
        commands[args.command].error("--prefix needs --redis (it names the Redis keys)")
    if args.command in {"serve", "ask"} and args.schema is not None and args.postgres is None:
        commands[args.command].error("--schema needs --postgres (it names the relay's tables)")
    if args.command == "serve":
        for entry in args.allow_host:
            if not valid_host(entry):
                commands["serve"].error(
                    f"--allow-host {entry!r} is not a host name, an address or HOST:PORT"
                )
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status."""
    try:
        return _main(argv)
    except BrokenPipeError:  # stdout closed early (`| head`): no traceback, no more output
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_NOT_ANSWERED


def _main(argv: Sequence[str] | None) -> int:
    args = _arguments(argv)
    if args.command == "serve":
        return run_serve(args)
    if args.command == "push":
        return run_push(args)
    if args.command == "rules":
        return run_rules(args)
    if args.command == "log":
        return run_log(args)
    if args.command == "schema":
        return _schema(args.which)
    try:
        answer = demo_answer(args) if args.command == "demo" else ask_answer(args)
    except UserInteractionError as exc:
        return _fail(exc)
    except KeyboardInterrupt:
        print("interaction: interrupted", file=sys.stderr)
        return EXIT_NOT_ANSWERED
    print(answer_json(answer))
    sys.stdout.flush()
    return EXIT_ANSWERED


def _schema(which: str | None) -> int:
    """``schema``: print the JSON Schema named ``which``."""
    if which is None:
        print(
            f"interaction: name the schema to print: {', '.join(SCHEMAS)}"
            " (as in: interaction schema request)",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    schemas = {"request": request_schema, "answer": answer_schema, "tool": tool_parameters}
    print(json.dumps(schemas[which](), indent=2))
    sys.stdout.flush()  # a closed pipe is seen here, inside main()
    return EXIT_ANSWERED
