"""What the policy and audit wrappers cost an ask, against a plain ask in the same run.

(s) a permission answered by a rule (an in-memory store of 50 rules, and the JSON file
store, cached) against a plain in-memory ask of the same request: target at most 2x.
(t) an ask through ``AuditProvider`` writing to a ``JsonlAuditLog`` on this machine's
disk (flock, append, fsync per record): the time it adds to the same ask without it,
target at most 1 ms. Subjects take turns round by round; each figure is a median of rounds.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from timing import Row, interleaved

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionRequest,
    UserInteractionProvider,
    ask,
    permission_question,
    provide,
)
from interaction.audit import AuditProvider, JsonlAuditLog
from interaction.policies import JsonFileRuleStore, MemoryRuleStore, PolicyProvider, Rule, new_rule

REQUEST = AskUserQuestionRequest([permission_question("Bash", "npm test --bail", id="q")])
ALLOWED = AskUserQuestionAnswer([AskUserQuestionAnswerItem("q", ("Allow",))])


class Answering:
    """The plain in-memory provider: the answer, at once."""

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return ALLOWED


def asking(
    loop: asyncio.AbstractEventLoop, provider: UserInteractionProvider, number: int
) -> Callable[[], float]:
    """One round: ``number`` asks through ``provider``, seconds per ask."""

    async def run() -> float:
        with provide(provider):
            start = time.perf_counter()
            for _ in range(number):
                await ask(REQUEST)
            return (time.perf_counter() - start) / number

    return lambda: loop.run_until_complete(run())


def rules() -> list[Rule]:
    """49 rules that do not match, then the one that does: a store a team might keep."""
    others = [new_rule(f"Bash(make target-{n}:*)") for n in range(40)]
    others += [new_rule(f"Read(src/{n}/**)") for n in range(5)]
    others += [new_rule(f"Bash(rm -rf /{n}:*)", "deny") for n in range(4)]
    return [*others, new_rule("Bash(npm test:*)")]


TITLE = "policies and audit: a rule's answer, the audit writer"


def measure(quick: bool) -> list[Row]:
    # On this machine's disk, beside the repository: /tmp may be a RAM disk elsewhere.
    with tempfile.TemporaryDirectory(dir=Path(__file__).parent) as directory:
        return measure_in(quick, Path(directory))


def measure_in(quick: bool, directory: Path) -> list[Row]:
    number, repeat = (50, 3) if quick else (2000, 15)
    audit_number, audit_repeat = (20, 3) if quick else (300, 11)
    loop = asyncio.new_event_loop()
    try:
        stored = rules()
        memory = MemoryRuleStore(stored)
        json_store = JsonFileRuleStore(directory / "rules.json")
        for rule in stored:
            loop.run_until_complete(json_store.add(rule))
        plain = Answering()
        by_memory = PolicyProvider(plain, memory)
        by_file = PolicyProvider(plain, json_store)
        plain_s, memory_s, file_s = interleaved(
            [
                asking(loop, plain, number),
                asking(loop, by_memory, number),
                asking(loop, by_file, number),
            ],
            repeat,
        )
        size = 256 * 1024 * 1024
        log = JsonlAuditLog(directory / "audit.jsonl", max_bytes=size)
        durable = JsonlAuditLog(directory / "durable.jsonl", max_bytes=size, durable=True)
        audited = AuditProvider(plain, log, source="bench", answerer="bench")
        waiting = AuditProvider(plain, durable, source="bench", answerer="bench")
        plain_a, audited_s, durable_s = interleaved(
            [
                asking(loop, plain, audit_number),
                asking(loop, audited, audit_number),
                asking(loop, waiting, audit_number),
            ],
            audit_repeat,
        )
        log.close()
        durable.close()
    finally:
        loop.close()
    us = 1e6
    plain_ask = "plain in-memory ask"
    by_rule = "(s) a permission answered by a rule"
    audit = "(t) an ask recorded by the JSONL audit (flock, append, fsync)"
    return [
        Row(
            by_rule,
            "a store of 50 in memory",
            memory_s * us,
            plain_ask,
            plain_s * us,
            "µs",
            "<= 2x",
        ),
        Row(
            by_rule,
            "a JSON file store of 50",
            file_s * us,
            plain_ask,
            plain_s * us,
            "µs",
            "<= 2x",
            headline=True,
        ),
        Row(
            audit,
            "time added to the ask",
            (audited_s - plain_a) * us,
            "the 1 ms target",
            1000.0,
            "µs",
            "<= 1000 µs",
            headline=True,
        ),
        Row(
            audit,
            "... durable=True (waits for the disk's fsync): time added",
            (durable_s - plain_a) * us,
            "the 1 ms target",
            1000.0,
            "µs",
            "-",
        ),
    ]
