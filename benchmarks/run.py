"""Measure the seam against references taken in the same run; print and record the figures.

    python benchmarks/run.py                 # every area; the record in benchmarks/RESULTS.md
    python benchmarks/run.py core web        # chosen areas only: printed, not recorded
    python benchmarks/run.py --quick         # a few iterations, records nothing (CI keeps it alive)

Needs the ``bench``, ``web``, ``terminal``, ``redis`` and ``postgres`` extras, httpx,
``redis-server`` and PostgreSQL's server binaries (as the tests find them).
Every ratio compares subjects measured in the same run, taking turns round by round, as
medians of rounds (``timing.py``).

Each area is one file beside this one, which reads on its own: ``core.py``, ``web.py``,
``web_load.py``, ``terminal.py``, ``redis_relay.py``, ``pages.py``, ``policies.py``,
``postgres.py``, ``teams.py``. To add an area:

1. write ``benchmarks/<area>.py`` with a module docstring saying what each of its cases
   measures, a ``TITLE`` string, and ``def measure(quick: bool) -> list[Row]``, built from
   ``timing.py`` (``interleaved``, ``timed``, ``Row``; ``Row(..., headline=True)`` puts a
   row's figure in RESULTS.md's history table). With ``quick`` it must finish in seconds:
   CI runs every area that way. Name cases by the next free letter, ``(w)`` on. Do not name
   the file after an importable package (``redis.py`` would hide ``redis``: this directory
   is first on ``sys.path``);
2. add its name to ``AREAS`` below.

A full run of every area replaces RESULTS.md's "Current record" section (everything from
that heading to the end) and adds one line to its history table; older records stay in git.
To compare another checkout's core with this one in one interleaved run (before and after a
change), use ``benchmarks/ab.py``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pydantic
from timing import Row, table

import interaction

AREAS = (
    "core",
    "web",
    "web_load",
    "terminal",
    "redis_relay",
    "pages",
    "policies",
    "postgres",
    "teams",
)
"""Every area, in the order a full run measures them."""

RESULTS = Path(__file__).with_name("RESULTS.md")
RECORD_HEADING = "## Current record"
HISTORY_HEADING = "## History"


def headlines(rows: list[Row]) -> str:
    """The headline rows' figures, grouped by case letter: ``(a) 1.74x · (c) 3.05 ms``.

    A row whose target is an absolute bound (its unit ends the target: ``<= 10 ms``) shows
    its value; any other shows its ratio.
    """
    groups: dict[str, list[str]] = {}
    for row in rows:
        if row.headline:
            letter = row.case.split(" ", 1)[0]
            absolute = row.target.endswith(row.unit)
            figure = f"{row.value:.2f} {row.unit}" if absolute else row.ratio_text
            groups.setdefault(letter, []).append(figure)
    return " · ".join(f"{letter} {' / '.join(figures)}" for letter, figures in groups.items())


def commit() -> str:
    """The checkout's commit, ``-dirty`` when it has changes, or ``unknown``."""
    try:
        described = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).parent,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return described.stdout.strip()


def record(rows: list[Row], load: float) -> None:
    """Replace RESULTS.md's current record with ``rows`` and add their headlines to its
    history table; ``load`` is the machine's 1-minute load average when the run began."""
    now = datetime.now(UTC)
    version = commit()
    machine = (
        f"{platform.machine()}, {os.cpu_count()} cores (load {load:.1f} at the start),"
        f" Python {platform.python_version()}, interaction {interaction.__version__},"
        f" pydantic {pydantic.VERSION}, msgspec {msgspec.__version__}"
    )
    text = RESULTS.read_text("utf-8")
    above, _, _ = text.partition(RECORD_HEADING)
    history_line = (
        f"| {now:%Y-%m-%d %H:%M} | {version} | {platform.python_version()} | {load:.1f} |"
        f" {headlines(rows)} |"
    )
    lines = above.rstrip("\n").split("\n")
    start = lines.index(HISTORY_HEADING)
    last = start + 1
    for index in range(start + 1, len(lines)):
        if lines[index].startswith("## "):
            break
        if lines[index].startswith("|"):
            last = index
    lines.insert(last + 1, history_line)
    current = (
        f"{RECORD_HEADING}\n\n{now:%Y-%m-%d %H:%M} UTC, commit {version}; {machine}\n\n"
        f"{table(rows)}\n"
    )
    RESULTS.write_text("\n".join(lines) + "\n\n" + current, "utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("areas", nargs="*", help=f"of {', '.join(AREAS)} (default: all)")
    parser.add_argument("--quick", action="store_true", help="few iterations; record nothing")
    args = parser.parse_args()
    if unknown := sorted(set(args.areas) - set(AREAS)):
        parser.error(f"no such area: {', '.join(unknown)} (the areas: {', '.join(AREAS)})")
    chosen = args.areas or list(AREAS)
    load = os.getloadavg()[0]
    rows: list[Row] = []
    for area in AREAS:
        if area in chosen:
            module = importlib.import_module(area)
            print(f"measuring {area}: {module.TITLE}", file=sys.stderr, flush=True)
            rows += module.measure(args.quick)
    print(table(rows))
    if args.quick:
        return 0
    if set(chosen) == set(AREAS):
        record(rows, load)
        print(f"recorded in {RESULTS}", file=sys.stderr)
    else:
        print("not recorded: the record is a full run of every area", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
