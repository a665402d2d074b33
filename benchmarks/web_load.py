"""One host under load, in memory: (v) 10,000 pending asks on one ``WebServer``, answered
over HTTP by 50 clients; answers per second, none lost or answered twice.

The figure that ``tests/test_web_load.py`` measured while it ran 10,000 asks inside the
suite; that test now runs a tenth of the load through the same function
(``tests/web_helpers.pending_asks_answered``, which asserts that no answer was lost or
doubled and each ask got its own), and the full load is measured here, once per run
(performance lives in benchmarks/, never in timed tests). The rate is reported, with
no reference: (e) measures one question over HTTP against its floors.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from timing import Row

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.web_helpers import pending_asks_answered

TITLE = "one host under load: 10,000 pending asks answered over HTTP"


def measure(quick: bool) -> list[Row]:
    """(v) answers per second of 10,000 pending asks (400 when quick)."""
    asks, clients = (400, 10) if quick else (10_000, 50)
    seconds = asyncio.run(pending_asks_answered(asks, clients))
    return [
        Row(
            f"(v) one host in memory: {asks:,} pending asks, {clients} HTTP clients",
            "answers per second, none lost or doubled",
            asks / seconds,
            "none (reported)",
            0.0,
            "answers/s",
            "report, answers/s",
        )
    ]
