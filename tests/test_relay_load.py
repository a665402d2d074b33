"""The load benchmark's harness (benchmarks/relay_load.py) on each engine, at a tiny size: a
process that dies stops the run with an error that names it, every process stopped, where
the run used to wait for the dead asker's questions for ever; and its CPU figures, read to the
nanosecond."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path
from typing import Literal

import pytest

from .postgres_server import PostgresServer, postgres_server
from .redis_server import RedisServer, redis_server

sys.path.append(str(Path(__file__).resolve().parent.parent / "benchmarks"))
import relay_load  # from the benchmarks' folder, put on the path above

__all__ = ["postgres_server", "redis_server"]

WAIT = 60.0


@pytest.mark.parametrize("engine", ["redis", "postgres"])
async def test_a_killed_asker_stops_the_run_with_an_error_naming_it(
    engine: Literal["redis", "postgres"], request: pytest.FixtureRequest
) -> None:
    server: RedisServer | PostgresServer = request.getfixturevalue(f"{engine}_server")
    load = relay_load.Load(engine, server.url, total=8, bound=WAIT)
    async with asyncio.timeout(WAIT), load:  # it ends, with the error, never waits for ever
        victim = load.askers[1].process
        victim.send_signal(signal.SIGKILL)  # before it could ask
        with pytest.raises(relay_load.LoadError) as caught:
            await load.asked()
    assert str(caught.value) == (
        f"the load run stopped: asker a1 (pid {victim.pid}) ended with exit status -9"
        " while the askers asked"
    )
    children = [*load.hosts, *load.askers]
    assert len(children) == 6
    assert all(child.process.returncode is not None for child in children)  # all stopped
    assert [child.process.returncode for child in load.hosts] == [-signal.SIGKILL] * 2


# A child that says how much CPU it has used, then starts one that does the same (when
# given an argument), and waits for its standard input to close.
SAYS_ITS_CPU = """
import subprocess, sys, time
spent = 0.0
if len(sys.argv) > 1:
    child = subprocess.Popen([sys.executable, "-c", sys.argv[1]], stdout=subprocess.PIPE)
    spent += float(child.stdout.readline())
print(spent + time.process_time(), flush=True)
sys.stdin.read()
"""


@pytest.mark.parametrize("children", [False, True], ids=["process", "with-children"])
def test_cpu_is_read_to_the_nanosecond_not_in_clock_ticks(children: bool) -> None:
    """A figure read in 10 ms clock ticks falls short of what the process itself reports
    (a Python process starts in a few tens of milliseconds): 32 database backends each
    claiming a dozen answers read as no CPU at all."""
    argv = [sys.executable, "-c", SAYS_ITS_CPU, *([SAYS_ITS_CPU] if children else [])]
    pipe = subprocess.PIPE
    with subprocess.Popen(argv, stdin=pipe, stdout=pipe) as child:
        assert child.stdin is not None
        assert child.stdout is not None
        try:
            reported = float(child.stdout.readline())
            with_children = {"it"} if children else set()
            meter = relay_load.CpuMeter({"it": [child.pid]}, with_children=with_children)
            measured = meter.read()["it"]
        finally:
            child.stdin.close()
    assert reported <= measured < reported + 0.05


# A child that starts one that says its CPU (as above), and when told (a line on its
# standard input) ends that one, waits for it, and says so.
ENDS_ITS_CHILD = """
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c", sys.argv[1]], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
print(child.stdout.readline().decode().strip(), flush=True)
sys.stdin.readline()
child.stdin.close()
child.wait()
print("ended", flush=True)
sys.stdin.read()
"""


def test_a_child_that_ends_between_two_readings_keeps_what_it_was_read_at() -> None:
    """A database's backends end when their relay closes: a reading after that must not
    drop what they had run when an earlier reading counted them."""
    argv = [sys.executable, "-c", ENDS_ITS_CHILD, SAYS_ITS_CPU]
    pipe = subprocess.PIPE
    with subprocess.Popen(argv, stdin=pipe, stdout=pipe, text=True) as parent:
        assert parent.stdin is not None
        assert parent.stdout is not None
        try:
            reported = float(parent.stdout.readline())
            meter = relay_load.CpuMeter({"it": [parent.pid]}, with_children={"it"})
            before = meter.read()["it"]
            parent.stdin.write("\n")
            parent.stdin.flush()
            assert parent.stdout.readline() == "ended\n"
            after = meter.read()["it"]
        finally:
            parent.stdin.close()
    assert reported <= before <= after
