"""What the policy and audit wrappers cost an ask, against a plain ask in the same run.

    python benchmarks/policies.py           # full run
    python benchmarks/policies.py --quick   # a few iterations (CI keeps it alive)

(p1) a permission answered by a rule (an in-memory store of 50 rules, and the JSON file
store, cached) against a plain in-memory ask of the same request: target at most 2x.
(p2) an ask through ``AuditProvider`` writing to a ``JsonlAuditLog`` on this machine's
disk (flock, append, fsync per record) against the same ask without it: target at most
1 ms added. Subjects take turns round by round; each figure is a median of rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

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


@dataclass
class Row:
    case: str
    subject: str
    value_us: float
    reference: str
    reference_us: float
    target: str

    def line(self) -> str:
        ratio = self.value_us / self.reference_us
        added = self.value_us - self.reference_us
        return (
            f"| {self.case} | {self.subject} | {self.value_us:.2f} µs | {self.reference} |"
            f" {self.reference_us:.2f} µs | {ratio:.2f}x | {added:+.2f} µs | {self.target} |"
        )


def interleaved(subjects: Sequence[Callable[[], float]], repeat: int) -> list[float]:
    """Median seconds per call of each subject, taking turns (forward, then backward)."""
    samples: list[list[float]] = [[] for _ in subjects]
    for round_number in range(repeat):
        order = range(len(subjects))
        for index in order if round_number % 2 == 0 else order[::-1]:
            samples[index].append(subjects[index]())
    return [statistics.median(s) for s in samples]


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


def measure(quick: bool, directory: Path) -> list[Row]:
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
    return [
        Row(
            "(p1)",
            "answered by a rule (memory, 50)",
            memory_s * us,
            plain_ask,
            plain_s * us,
            "≤ 2x",
        ),
        Row(
            "(p1)",
            "answered by a rule (JSON file, 50)",
            file_s * us,
            plain_ask,
            plain_s * us,
            "≤ 2x",
        ),
        Row(
            "(p2)",
            "recorded by the JSONL audit",
            audited_s * us,
            plain_ask,
            plain_a * us,
            "+≤ 1000 µs",
        ),
        Row(
            "(p2)",
            "... durable=True: waits for fsync",
            durable_s * us,
            plain_ask,
            plain_a * us,
            "the disk's fsync",
        ),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few iterations")
    args = parser.parse_args(argv)
    # On this machine's disk, beside the repository: /tmp may be a RAM disk elsewhere.
    with tempfile.TemporaryDirectory(dir=Path(__file__).parent) as directory:
        rows = measure(args.quick, Path(directory))
    print("| case | subject | median | reference | median | ratio | added | target |")
    print("|---|---|---:|---|---:|---:|---:|---|")
    for row in rows:
        print(row.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
