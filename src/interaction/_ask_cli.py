"""``interaction ask``: one request, read from a file or stdin, asked here or on a shared relay.

Here, the answers come from this terminal (:func:`~interaction._demo_cli.choose_provider`);
with ``--redis`` or ``--postgres`` the question waits on the page serving that store. The
request takes ``--source``, ``--assign``, ``--quorum`` and ``--timeout`` over the file's;
``--rules`` and ``--audit`` wrap the provider. Every bad input is a ``BAD_REQUEST``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import math
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final, TextIO

from ._core import (
    AbortSignal,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    Assignment,
    ErrorCode,
    Provenance,
    UserInteractionError,
    UserInteractionProvider,
    ask,
    check_provenance,
    escape_controls,
    problem_of,
    provide,
)
from ._demo_cli import add_plain_flag, choose_provider
from ._engines import engine_of, engine_relay
from ._records_cli import env_key
from .wire import decode_request, dumps

if TYPE_CHECKING:
    from .postgres import PostgresRelay
    from .redis import RedisRelay

__all__ = ["add_command", "answer_json", "ask_answer"]

MAX_TIMEOUT_SECONDS: Final = threading.TIMEOUT_MAX


def add_command(add_parser: Callable[..., argparse.ArgumentParser]) -> None:
    """Add ``ask`` through the subcommands' ``add_parser``."""
    ask_ = add_parser("ask", help="ask a request given as wire JSON; print the answer")
    add_plain_flag(ask_)
    ask_.add_argument(
        "file", nargs="?", default="-", help="the request JSON file, or - for stdin (default)"
    )
    ask_.add_argument("--timeout", type=float, metavar="SECONDS", help="give up after SECONDS")
    _assign_flags(ask_)
    shared = ask_.add_mutually_exclusive_group()
    shared.add_argument(
        "--redis",
        metavar="URL",
        help="put the question on the RedisRelay at URL (a page served with serve --redis"
        " shows it) instead of asking here",
    )
    shared.add_argument(
        "--postgres",
        metavar="URL",
        help="put the question on the PostgresRelay at URL (a page served with serve"
        " --postgres shows it) instead of asking here",
    )
    ask_.add_argument(
        "--prefix",
        help="the Redis key prefix the page serves (default interaction; needs --redis)",
    )
    ask_.add_argument(
        "--schema",
        help="the Postgres schema the page serves (default interaction; needs --postgres)",
    )
    ask_.add_argument(
        "--source",
        metavar="NAME",
        help="who asks: shown with the question (the request's provenance source), and the"
        " source the rules and the audit name (default: cli)",
    )
    ask_.add_argument(
        "--rules",
        metavar="PATH",
        help="answer permissions from the rules in PATH first; allow always adds one",
    )
    ask_.add_argument("--audit", metavar="PATH", help="record the outcome in the JSONL log PATH")


def _assign_flags(ask_: argparse.ArgumentParser) -> None:
    """``ask``'s flags of who may answer (docs/teams.md)."""
    ask_.add_argument(
        "--assign",
        action="append",
        metavar="NAME",
        help="only this user or group may answer (again for more; the page's --user and"
        " --group names; docs/teams.md)",
    )
    ask_.add_argument(
        "--quorum",
        type=int,
        metavar="N",
        help="a permission or plan-review question settles as approved when N distinct"
        " assignees approve; one decline settles it at once (needs --assign)",
    )


def ask_answer(args: argparse.Namespace) -> AskUserQuestionAnswer:
    """``ask``: the request read, completed by the flags and asked; every bad input is a
    ``BAD_REQUEST``, said before anything is asked."""
    signal = _timeout(args.timeout)
    deadline = None if signal is None else time.monotonic() + args.timeout
    shared = args.redis is not None or args.postgres is not None
    request, answers = _read_request(args.file, terminal=not shared)
    request = _with_source(request, args.source)
    request = _with_assignment(request, args.assign, args.quorum)
    if signal is not None:
        request = dataclasses.replace(request, signal=signal)
    relay = _shared_relay(args)
    if relay is not None:
        return _ask_shared(relay, request, args)
    provider = choose_provider(answers, plain=args.plain, deadline=deadline)
    return asyncio.run(_ask_file(_wrapped(provider, args), request))


async def _ask_file(
    provider: UserInteractionProvider, request: AskUserQuestionRequest
) -> AskUserQuestionAnswer:
    with provide(provider):
        return await ask(request)


def _shared_relay(args: argparse.Namespace) -> RedisRelay | PostgresRelay | None:
    """The relay of ``ask --redis`` or ``ask --postgres``; ``None`` to ask here. A missing
    extra or a bad URL, prefix or schema is a ``BAD_REQUEST`` that says so."""
    engine = engine_of(args.redis, args.prefix, args.postgres, args.schema)
    try:
        return None if engine is None else engine_relay(engine)
    except (ImportError, ValueError) as exc:
        raise UserInteractionError(str(exc), ErrorCode.BAD_REQUEST) from None


def _ask_shared(
    relay: RedisRelay | PostgresRelay, request: AskUserQuestionRequest, args: argparse.Namespace
) -> AskUserQuestionAnswer:
    """Ask through a shared relay (inside the rules and audit of ``args``): a page serving
    its store shows the question."""

    async def asking() -> AskUserQuestionAnswer:
        try:
            await relay.connect()  # a store that cannot be used is said before any wait
            print("interaction: the question waits on the page serving this store", file=sys.stderr)
            with provide(_wrapped(relay, args)):
                return await ask(request)
        finally:
            await relay.aclose()

    return asyncio.run(asking())


def _read_request(
    file: str, *, terminal: bool = True
) -> tuple[AskUserQuestionRequest, TextIO | None]:
    """The request, and where answers come from when stdin held the request (a terminal,
    unless ``terminal`` is false: the answers come from elsewhere)."""
    if file != "-":
        try:
            with open(file, "rb") as handle:
                return decode_request(handle.read()), None
        except OSError as exc:
            raise UserInteractionError(
                f"cannot read {file}: {exc.strerror}", ErrorCode.BAD_REQUEST
            ) from None
    if _is_terminal(sys.stdin):
        print(
            "interaction: reading a request (wire JSON) from stdin; end it with Ctrl-D,"
            " or pass a FILE",
            file=sys.stderr,
            flush=True,
        )
    request = decode_request(sys.stdin.buffer.read())
    if not terminal:
        return request, None
    try:
        tty = open("/dev/tty", encoding="utf-8")  # noqa: SIM115 - lives for the process
    except OSError:
        raise UserInteractionError(
            "the request came on stdin and there is no terminal to answer on;"
            " pass the request as a FILE instead",
            ErrorCode.BAD_REQUEST,
        ) from None
    return request, tty


def _with_source(request: AskUserQuestionRequest, source: str | None) -> AskUserQuestionRequest:
    """``request`` with ``--source`` as its provenance's source (it replaces the file's)."""
    if source is None:
        return request
    given = request.provenance or Provenance()
    provenance = Provenance(source, given.host, given.session, given.tool, given.asked_at)
    try:
        check_provenance(provenance)
    except UserInteractionError as error:
        raise UserInteractionError(
            f"--source: {problem_of(error)}", ErrorCode.BAD_REQUEST
        ) from None
    return dataclasses.replace(request, provenance=provenance)


def _with_assignment(
    request: AskUserQuestionRequest, assign: Sequence[str] | None, quorum: int | None
) -> AskUserQuestionRequest:
    """``request`` assigned by ``--assign`` (replacing the file's) and ``--quorum``."""
    if quorum is not None and not assign:
        raise UserInteractionError(
            "--quorum needs --assign (the users or groups who approve)", ErrorCode.BAD_REQUEST
        )
    if not assign:
        return request
    return dataclasses.replace(request, assignment=Assignment(tuple(assign), quorum))


def _timeout(seconds: float | None) -> AbortSignal | None:
    """The signal of ``--timeout``; a bad value is a ``BAD_REQUEST`` that names it."""
    if seconds is None:
        return None
    try:
        if not math.isfinite(seconds) or seconds <= 0:
            raise ValueError(seconds)
        return AbortSignal.timeout(seconds)
    except ValueError:  # also past what a timer can wait: one wording for every bad value
        raise UserInteractionError(
            f"--timeout must be a positive number of seconds up to {MAX_TIMEOUT_SECONDS:.0f},"
            f" got {seconds:g}",
            ErrorCode.BAD_REQUEST,
        ) from None


def _wrapped(
    provider: UserInteractionProvider, args: argparse.Namespace
) -> UserInteractionProvider:
    """The provider inside the rules of ``--rules`` and the audit of ``--audit``.

    A terminal's answer is this OS user's. An answer through a shared relay (``--redis``,
    ``--postgres``) was given on a page, maybe on another host: the relay names the page's
    user who gave it, and an answer by nobody named names nobody (never this OS user).
    """
    from .audit import AuditProvider, JsonlAuditLog, os_user
    from .policies import JsonFileRuleStore, PolicyProvider

    source = args.source or "cli"
    shared = args.redis is not None or args.postgres is not None
    user = None if shared else os_user()
    if args.rules is not None:
        store = JsonFileRuleStore(args.rules, key=env_key("INTERACTION_RULES_KEY"))
        provider = PolicyProvider(provider, store, source=source, answerer=user)
    if args.audit is not None:
        # One ask per process: it may as well wait for its record's fsync before exiting.
        log = JsonlAuditLog(args.audit, key=env_key("INTERACTION_AUDIT_KEY"), durable=True)
        provider = AuditProvider(provider, log, source=source, answerer=user)
    return provider


def answer_json(answer: AskUserQuestionAnswer) -> str:
    """The answer's wire JSON with every character the text policy calls unsafe (C1
    controls, DEL, bidirectional overrides and isolates) as a ``\\uXXXX`` escape.

    The same JSON value, but one typed by the user can no longer steer the terminal or
    reorder the line it is printed on. Such characters stand only inside JSON strings, so
    escaping them there is safe; the encoder has escaped the C0 controls already.
    """
    text = dumps(answer)
    if text.isprintable():  # every unsafe character is unprintable
        return text
    unsafe = {
        ord(char): f"\\u{ord(char):04x}"
        for char in set(text)
        if not char.isprintable() and escape_controls(char, keep_newlines=False) != char
    }
    return text.translate(unsafe)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or closed
        return False
