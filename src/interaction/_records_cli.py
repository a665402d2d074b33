"""``interaction rules`` and ``interaction log``: the policy rules and the audit trail.

Plain tables (aligned, no third-party formatting), ``--json`` for scripts. Every string
that came from a model or a store is shown with its control characters escaped. A bad
argument or a broken store is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final, Protocol, TextIO

from ._core import UserInteractionError, escape_controls
from ._engines import Engine, EngineStores, engine_stores
from .audit import AuditLogError, read_jsonl, rotated, verify
from .policies import (
    JsonFileRuleStore,
    Rule,
    RuleStore,
    new_rule,
    rule_to_json,
)

__all__ = ["add_commands", "run_log", "run_rules"]

EXIT_OK: Final = 0
EXIT_FOUND: Final = 1
EXIT_BAD: Final = 2
RULES_ENV: Final = "INTERACTION_RULES"
RULES_KEY_ENV: Final = "INTERACTION_RULES_KEY"
AUDIT_ENV: Final = "INTERACTION_AUDIT"
AUDIT_KEY_ENV: Final = "INTERACTION_AUDIT_KEY"
QUESTION_CELLS: Final = 60
FOLLOW_SECONDS: Final = 0.25
_RELATIVE: Final = re.compile(r"(\d+)([smhd])")
_UNITS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class _Refused(Exception):
    """A bad argument or a broken store: its one line goes to stderr, exit status 2."""


class _Store(RuleStore, Protocol):
    """The stores the command opens: each can sign its whole rule set."""

    async def seal(self) -> Sequence[Rule]: ...


def env_key(name: str) -> bytes | None:
    """A key from the environment (never printed); unset or empty is none."""
    value = os.environ.get(name, "")
    return value.encode() if value else None


def add_commands(add_parser: Callable[..., argparse.ArgumentParser]) -> None:
    """Add ``rules`` and ``log`` through the subcommands' ``add_parser``."""
    rules = add_parser("rules", help="list, add, revoke or seal policy rules")
    actions = rules.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="print the rules")
    adding = actions.add_parser("add", help="add a rule such as 'Bash(npm test:*)'")
    adding.add_argument("spec", help="TOOL, or TOOL(PATTERN): see docs/policies.md")
    adding.add_argument("--deny", action="store_true", help="a deny rule (default: allow)")
    adding.add_argument("--source", help="only for requests from this source")
    adding.add_argument("--once", action="store_true", help="answer one ask, then go")
    revoking = actions.add_parser("revoke", help="remove a rule by its id")
    revoking.add_argument("id", help="the rule's id, as rules list prints it")
    sealing = actions.add_parser(
        "seal", help="sign a keyed store's rules as they stand, and print them"
    )
    for action in (listing, sealing):
        action.add_argument("--json", action="store_true", help="one JSON object per line")
    for action in (listing, adding, revoking, sealing):
        action.add_argument(
            "--store", metavar="PATH", help=f"the rules file (default: ${RULES_ENV})"
        )
        action.add_argument(
            "--redis", metavar="URL", help=f"rules in Redis (key: ${RULES_KEY_ENV})"
        )
        action.add_argument("--prefix", default="interaction", help="the Redis key prefix")
        _postgres_arguments(action, "rules in PostgreSQL (key: $" + RULES_KEY_ENV + ")")
    log = add_parser("log", help="print or verify the audit trail")
    log.add_argument("path", nargs="?", help=f"the JSONL log (default: ${AUDIT_ENV})")
    log.add_argument("--redis", metavar="URL", help="read the Redis Stream instead")
    log.add_argument("--prefix", default="interaction", help="the Redis key prefix")
    _postgres_arguments(log, "read the PostgreSQL table instead")
    log.add_argument("--json", action="store_true", help="the records as JSON lines")
    log.add_argument("--since", metavar="WHEN", help="ISO time or date, or 30s, 15m, 2h, 7d ago")
    log.add_argument("--source", help="only records from this source")
    log.add_argument("--follow", action="store_true", help="keep printing new records")
    log.add_argument(
        "--verify", action="store_true", help=f"check the hash chain (key: ${AUDIT_KEY_ENV})"
    )


def _postgres_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--postgres", metavar="URL", help=what)
    parser.add_argument("--schema", default="interaction", help="the PostgreSQL schema")


def _engine_stores(args: argparse.Namespace, rules_key: bytes | None = None) -> EngineStores | None:
    """The stores of ``--redis`` or ``--postgres``, if one is named."""
    if args.redis is not None and args.postgres is not None:
        raise _Refused("name one engine: --redis URL or --postgres URL")
    if args.redis is not None:
        engine = Engine("redis", args.redis, args.prefix)
    elif args.postgres is not None:
        engine = Engine("postgres", args.postgres, args.schema)
    else:
        return None
    try:
        return engine_stores(engine, rules_key=rules_key)
    except (ImportError, ValueError) as exc:
        raise _Refused(str(exc)) from None


# ---------------------------------------------------------------------- rules


def _store(args: argparse.Namespace) -> tuple[_Store, Callable[[], object] | None]:
    if args.redis is not None or args.postgres is not None:
        key = env_key(RULES_KEY_ENV)
        if key is None:
            flag = "--redis" if args.redis is not None else "--postgres"
            raise _Refused(f"{flag} needs the rules key in ${RULES_KEY_ENV}")
        stores = _engine_stores(args, key)
        assert stores is not None  # an engine is named
        assert stores.rules is not None  # and the key given
        return stores.rules, stores.aclose
    path = args.store or os.environ.get(RULES_ENV)
    if not path:
        raise _Refused(f"name the rules: --store PATH, --redis URL, or ${RULES_ENV}")
    return JsonFileRuleStore(path, key=env_key(RULES_KEY_ENV)), None


def run_rules(args: argparse.Namespace) -> int:
    """``interaction rules ACTION``: the exit status."""
    try:
        return asyncio.run(_rules(args, sys.stdout))
    except (_Refused, UserInteractionError) as exc:
        message = exc.message if isinstance(exc, UserInteractionError) else str(exc)
        print(f"interaction: {message}", file=sys.stderr)
        return EXIT_BAD


async def _rules(args: argparse.Namespace, out: TextIO) -> int:
    store, close = _store(args)
    try:
        if args.action in ("list", "seal"):
            rules = await (store.rules() if args.action == "list" else store.seal())
            if args.json:
                for rule in rules:
                    print(json.dumps(rule_to_json(rule), ensure_ascii=False), file=out)
            else:
                _print_table(
                    out,
                    ["ID", "EFFECT", "RULE", "SOURCE", "SCOPE", "CREATED", "BY"],
                    [_rule_row(r) for r in rules],
                )
            return EXIT_OK
        if args.action == "add":
            rule = new_rule(
                args.spec,
                "deny" if args.deny else "allow",
                source=args.source,
                scope="once" if args.once else "persisted",
                created_by=_who(),
            )
            await store.add(rule)
            print(rule.id, file=out)
            return EXIT_OK
        if not await store.revoke(args.id):
            print(
                f"interaction: no rule {escape_controls(args.id, keep_newlines=False)!r}",
                file=sys.stderr,
            )
            return EXIT_FOUND
        return EXIT_OK
    finally:
        if close is not None:
            await close()  # type: ignore[misc]  # the store's aclose


def _who() -> str | None:
    from .audit import os_user

    user = os_user()
    return None if user is None else f"{user} (cli)"


def _rule_row(rule: Rule) -> list[str]:
    return [
        rule.id,
        rule.effect,
        rule.spec,
        rule.source or "*",
        rule.scope,
        rule.created_at,
        rule.created_by or "",
    ]


def _cell(text: object) -> str:
    return escape_controls("" if text is None else str(text), keep_newlines=False)


def _print_table(out: TextIO, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    cells = [[_cell(c) for c in row] for row in rows]
    widths = [max([len(h), *(len(row[i]) for row in cells)]) for i, h in enumerate(header)]
    for row in [list(header), *cells]:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip(), file=out)


# ---------------------------------------------------------------------- log


def _since(text: str | None) -> datetime | None:
    if text is None:
        return None
    relative = _RELATIVE.fullmatch(text)
    if relative:
        return datetime.now(UTC) - timedelta(seconds=int(relative[1]) * _UNITS[relative[2]])
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise _Refused(
            f"--since {text!r}: use an ISO time or date (2026-12-05T09:00Z) or 30s, 15m, 2h, 7d"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _at(record: dict[str, object]) -> datetime | None:
    at = record.get("at")
    if type(at) is not str:
        return None
    try:
        return datetime.fromisoformat(at.replace("Z", "+00:00"))
    except ValueError:
        return None


LOG_HEADER: Final = ["TIME", "SOURCE", "TOOL", "OUTCOME", "BY", "SECS", "QUESTION"]
_FOLLOW_WIDTHS: Final = [20, 12, 10, 9, 20, 7, QUESTION_CELLS]


def _log_row(record: dict[str, object]) -> list[str]:
    by = record.get("decidedBy")
    who = record.get("answerer") if by == "human" else record.get("rule")
    questions = record.get("questions")
    first = questions[0] if isinstance(questions, list) and questions else {}
    text = ""
    if isinstance(first, dict):
        intent = first.get("intent")
        if isinstance(intent, dict) and intent.get("kind") == "permission":
            text = f"{intent.get('tool')}: {intent.get('summary')}"
        else:
            text = str(first.get("question", ""))
        if isinstance(questions, list) and len(questions) > 1:
            text += f" (+{len(questions) - 1})"
    text = _cell(text)
    if len(text) > QUESTION_CELLS:
        text = text[: QUESTION_CELLS - 1] + "…"
    at = _at(record)
    return [
        at.strftime("%Y-%m-%d %H:%M:%S") if at else _cell(record.get("at")),
        _cell(record.get("source") or ""),
        _cell(record.get("tool") or ""),
        _cell(record.get("outcome")),
        _cell(f"{by}:{who}" if by and who else by or ""),
        _cell(record.get("seconds")),
        text,
    ]


def _lines(args: argparse.Namespace) -> tuple[Callable[[], Iterator[tuple[str, bytes]]], bool]:
    """A reader of the log's lines, and whether it may start past record 1."""
    if args.redis is not None or args.postgres is not None:

        async def read() -> list[tuple[str, bytes]]:
            stores = _engine_stores(args)
            assert stores is not None
            try:
                return await stores.audit.read_all()
            finally:
                await stores.aclose()

        return (lambda: iter(asyncio.run(read()))), False
    path = args.path or os.environ.get(AUDIT_ENV)
    if not path:
        raise _Refused(f"name the log: PATH, --redis URL, or ${AUDIT_ENV}")
    if not Path(path).exists():
        raise _Refused(f"no audit log at {path}")
    return (lambda: read_jsonl(path)), rotated(path)


def run_log(args: argparse.Namespace) -> int:
    """``interaction log``: the exit status (1 when --verify finds a problem)."""
    out = sys.stdout
    try:
        since = _since(args.since)
        lines, partial = _lines(args)
        if args.verify:
            return _verify(lines(), partial, out)
        if args.follow and not args.json:
            print(
                "  ".join(
                    h.ljust(w) for h, w in zip(LOG_HEADER, _FOLLOW_WIDTHS, strict=True)
                ).rstrip(),
                file=out,
            )
        seen = _print_log(args, lines(), since, out, follow=args.follow)
        while args.follow:  # polled: a file has no portable change event
            time.sleep(FOLLOW_SECONDS)
            fresh = list(lines())
            _print_log(args, fresh[seen:], since, out, follow=True)
            seen = max(seen, len(fresh))
        return EXIT_OK
    except (_Refused, AuditLogError, UserInteractionError) as exc:
        message = str(exc) if isinstance(exc, _Refused) else exc.message
        print(f"interaction: {message}", file=sys.stderr)
        return EXIT_BAD
    except KeyboardInterrupt:
        return EXIT_OK


def _counted(count: int, noun: str) -> str:
    """``1 record``, ``3 records``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _verify(lines: Iterable[tuple[str, bytes]], partial: bool, out: TextIO) -> int:
    problems, count, head = verify(lines, key=env_key(AUDIT_KEY_ENV), whole=not partial)
    for problem in problems:
        print(f"{_cell(problem.where)}: {problem.message}", file=out)
    if problems:
        found = f"{_counted(len(problems), 'problem')} in {_counted(count, 'record')}"
        print(f"interaction: the chain is broken ({found})", file=sys.stderr)
        return EXIT_FOUND
    print(f"ok: {_counted(count, 'record')}, head {head or '-'}", file=out)
    return EXIT_OK


def _print_log(
    args: argparse.Namespace,
    lines: Iterable[tuple[str, bytes]],
    since: datetime | None,
    out: TextIO,
    *,
    follow: bool,
) -> int:
    count = 0
    rows = []
    for where, line in lines:
        count += 1
        try:
            record = json.loads(line)
        except ValueError:
            print(f"interaction: {_cell(where)}: not an audit record (skipped)", file=sys.stderr)
            continue
        if not isinstance(record, dict):
            continue
        if args.source is not None and record.get("source") != args.source:
            continue
        at = _at(record)
        if since is not None and (at is None or at < since):
            continue
        if args.json:
            print(json.dumps(record, ensure_ascii=True), file=out)
        else:
            rows.append(_log_row(record))
    if follow and not args.json:
        for row in rows:
            cells = [c.ljust(w) for c, w in zip(row, _FOLLOW_WIDTHS, strict=True)]
            print("  ".join(cells).rstrip(), file=out)
    elif not args.json:
        _print_table(out, LOG_HEADER, rows)
    out.flush()
    return count
