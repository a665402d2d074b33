"""What every benchmark area shares: the rounds, the row of a result, the common payload.

Every ratio compares subjects measured in the same run, taking turns round by round in an
order that reverses every round, as medians of rounds: load that comes and goes hits every
subject alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import subprocess
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import AnyStr, Literal

import httpx

from interaction import AskUserQuestionAnswer, AskUserQuestionRequest

# Child interpreters run as an installed package does: reading and writing bytecode. With
# PYTHONDONTWRITEBYTECODE an editable install recompiles every module at every start,
# which measures the compiler, not the import.
CHILD_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the record: ``subject`` against ``reference``, measured in the same run.

    ``headline`` puts the row's figure in the record's history table: its value when its
    target is an absolute bound in its unit (``<= 10 ms``), else its ratio.
    """

    case: str
    subject: str
    value: float
    reference: str
    reference_value: float
    unit: Literal["µs", "ms", "KiB", "trips", "answers/s"]
    target: str
    headline: bool = False

    @property
    def ratio(self) -> float:
        return self.value / self.reference_value

    @property
    def ratio_text(self) -> str:
        """The ratio as the tables print it; ``-`` against a reference of zero (a quick
        run's floor can use no measurable CPU, and some rows have nothing to compare)."""
        return f"{self.ratio:.2f}x" if self.reference_value else "-"


def turns(count: int, round_number: int) -> Sequence[int]:
    """The order ``count`` subjects take in a round: forward, then backward the next round.

    Whoever goes first in a round runs a few percent slower (caches, the CPU's clock), so
    no subject may always go first.
    """
    order = range(count)
    return order if round_number % 2 == 0 else order[::-1]


def interleaved(subjects: Sequence[Callable[[], float]], repeat: int) -> list[float]:
    """Median of each subject's per-call seconds, the subjects taking turns round by round."""
    samples: list[list[float]] = [[] for _ in subjects]
    for round_number in range(repeat):
        for index in turns(len(subjects), round_number):
            samples[index].append(subjects[index]())
    return [statistics.median(s) for s in samples]


def timed(fn: Callable[[], object], number: int) -> Callable[[], float]:
    """A round: ``number`` calls of ``fn``, and the mean seconds of one."""

    def one_round() -> float:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        return (time.perf_counter() - start) / number

    return one_round


def timed_await(
    loop: asyncio.AbstractEventLoop, make: Callable[[], Awaitable[object]], number: int
) -> Callable[[], float]:
    """A round on ``loop``: ``number`` awaits of ``make()``, and the mean seconds of one."""

    async def run() -> float:
        start = time.perf_counter()
        for _ in range(number):
            await make()
        return (time.perf_counter() - start) / number

    return lambda: loop.run_until_complete(run())


def payload(questions: int, options: int) -> dict[str, object]:
    """A request's wire form: ``questions`` questions of ``options`` options each."""
    return {
        "questions": [
            {
                "id": f"q{q}",
                "question": f"Question number {q}: which one should the agent use?",
                "header": f"Topic {q}",
                "options": [
                    {
                        "label": f"Option {o}" + (" (Recommended)" if o == 0 else ""),
                        "description": f"Because {o}",
                    }
                    for o in range(options)
                ],
                **({"multiSelect": True} if q % 2 else {}),
            }
            for q in range(questions)
        ]
    }


@dataclass(frozen=True)
class Agent:
    id: str


class Instant:
    """A provider that answers at once."""

    def __init__(self, answer: AskUserQuestionAnswer) -> None:
        self.answer = answer

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return self.answer


def table(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| case | subject | median | reference | median | ratio | target |",
        "|---|---|---:|---|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.case} | {r.subject} | {r.value:.2f} {r.unit} | {r.reference} |"
            f" {r.reference_value:.2f} {r.unit} | {r.ratio_text} | {r.target} |"
        )
    return "\n".join(lines)


async def until_up(process: subprocess.Popen[AnyStr], url: str) -> None:
    """Wait until the server ``process`` started answers a POST to ``url`` (any status);
    ``RuntimeError`` if the process ends first."""
    async with httpx.AsyncClient() as http:
        while process.poll() is None:
            with contextlib.suppress(httpx.TransportError):
                await http.post(url, json={})
                return
            await asyncio.sleep(0.05)  # the process says nothing when it is up
    raise RuntimeError(f"the server for {url} ended with {process.returncode}")
