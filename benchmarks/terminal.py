"""The terminal UI: from starting ``interaction ask`` to the first question painted.

(f) from starting ``interaction ask FILE`` on a fresh pseudo-terminal to the first question
painted by the terminal UI, against running ``python -c "import prompt_toolkit"`` to its
end (and, for comparison, the same with ``--plain``, the console provider).
"""

from __future__ import annotations

import json
import os
import pty
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial

from timing import CHILD_ENV, Row, payload, turns

TITLE = "the terminal UI: start to first question painted"


def first_paint_seconds(argv: list[str], marker: bytes) -> float:
    """Seconds from starting ``argv`` on a fresh pseudo-terminal until ``marker`` is written.

    Cursor position requests are answered as a terminal would; the process is then killed.
    """
    controller, terminal = pty.openpty()
    environment = {**CHILD_ENV, "TERM": "xterm-256color"}
    start = time.perf_counter()
    process = subprocess.Popen(
        argv, stdin=terminal, stdout=terminal, stderr=terminal, env=environment, close_fds=True
    )
    os.close(terminal)
    seen = b""
    try:
        while marker not in seen:
            if not select.select([controller], [], [], 30)[0]:
                raise RuntimeError(f"{marker!r} was not painted within 30 s: {seen[-500:]!r}")
            chunk = os.read(controller, 65536)
            if b"\x1b[6n" in chunk:
                os.write(controller, b"\x1b[1;1R")
            seen += chunk
        return time.perf_counter() - start
    finally:
        process.kill()
        process.wait()
        os.close(controller)


def run_seconds(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, env=CHILD_ENV)
    return time.perf_counter() - start


def measure(quick: bool) -> list[Row]:
    """(f) Process start to the first question painted by ``interaction ask`` in a terminal."""
    repeat = 3 if quick else 21
    ask = [sys.executable, "-m", "interaction", "ask"]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as request:
        json.dump(payload(1, 3), request)
    marker = b"Question number 0"
    try:
        first_paint_seconds([*ask, request.name], marker)  # writes the bytecode
        subjects: list[Callable[[], float]] = [
            partial(first_paint_seconds, [*ask, request.name], marker),
            partial(first_paint_seconds, [*ask, "--plain", request.name], marker),
            partial(run_seconds, [sys.executable, "-c", "import prompt_toolkit"]),
        ]
        samples: list[list[float]] = [[], [], []]
        for round_number in range(repeat):  # so drift in the machine's load hits all three
            for index in turns(3, round_number):
                samples[index].append(subjects[index]())
        terminal, console, reference = samples
    finally:
        os.unlink(request.name)
    case = "(f) start to first question painted"
    reference_ms = statistics.median(reference) * 1e3
    return [
        Row(
            case,
            "interaction ask, terminal UI",
            statistics.median(terminal) * 1e3,
            "python -c 'import prompt_toolkit'",
            reference_ms,
            "ms",
            "<= 1.2x",
            headline=True,
        ),
        Row(
            case,
            "interaction ask --plain (console)",
            statistics.median(console) * 1e3,
            "python -c 'import prompt_toolkit'",
            reference_ms,
            "ms",
            "-",
        ),
    ]
