"""Peers forked from a zygote (tests/preloaded.py, tests/fixtures/zygote.py) behave as the
``python script`` they stand for: arguments, environment, working directory, streams, exit
status and signals are the peer's own, and no child outlives its relay or its zygote."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .preloaded import FORKS, Zygotes

pytestmark = pytest.mark.skipif(not FORKS, reason="the zygote needs Linux's pidfd")

# Says who it is, then echoes stdin until it ends; "exit N" ends it with status N.
PEER = """\
import json
import os
import sys

print(json.dumps([os.getpid(), sys.argv, os.environ.get("PEER"), os.getcwd(), sys.path[0]]))
sys.stdout.flush()
for line in sys.stdin:
    if line.startswith("exit "):
        sys.exit(int(line.split()[1]))
    print("echo", line.strip(), flush=True)
"""


@pytest.fixture
def zygotes(tmp_path: Path) -> Iterator[tuple[Zygotes, str]]:
    script = tmp_path / "peer.py"
    script.write_text(PEER)
    with Zygotes() as made:
        yield made, str(script)


def started(argv: list[str], cwd: Path) -> subprocess.Popen[str]:
    pipe = subprocess.PIPE
    env = {"PEER": "mine", "PATH": os.environ.get("PATH", "")}
    return subprocess.Popen(argv, stdin=pipe, stdout=pipe, text=True, env=env, cwd=cwd)


def gone(pid: int, seconds: float = 10.0) -> bool:
    """Whether process ``pid`` ended within ``seconds`` (another process's child: polled)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.01)  # polling a process that is not ours to wait for
    return False


def test_a_peer_runs_as_its_script_with_its_own_arguments_environment_and_streams(
    zygotes: tuple[Zygotes, str], tmp_path: Path
) -> None:
    made, script = zygotes
    with started([*made.argv(script), "one", "two"], tmp_path) as peer:
        assert peer.stdin is not None
        assert peer.stdout is not None
        pid, argv, env, cwd, path = json.loads(peer.stdout.readline())
        assert (argv, env, cwd) == ([script, "one", "two"], "mine", str(tmp_path))
        assert path == str(Path(script).parent)  # as ``python script`` sets it
        assert pid != peer.pid  # a fork of the zygote behind the relay
        peer.stdin.write("hello\nexit 3\n")
        peer.stdin.flush()
        assert peer.stdout.readline() == "echo hello\n"
        assert peer.wait(30) == 3
        assert peer.stdout.read() == ""  # the child's end was the last


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGKILL])
def test_a_signal_to_the_relay_ends_the_peer(
    zygotes: tuple[Zygotes, str], tmp_path: Path, number: signal.Signals
) -> None:
    made, script = zygotes
    with started(made.argv(script), tmp_path) as peer:
        assert peer.stdout is not None
        pid = json.loads(peer.stdout.readline())[0]
        peer.send_signal(number)
        assert peer.wait(30) == -number  # SIGTERM: passed on, and the relay dies of it too
        assert gone(pid)


def test_closing_the_zygotes_ends_every_peer_left(tmp_path: Path) -> None:
    script = tmp_path / "peer.py"
    script.write_text(PEER)
    with Zygotes() as made:
        peer = started(made.argv(str(script)), tmp_path)
        assert peer.stdout is not None
        pid = json.loads(peer.stdout.readline())[0]
        zygote, _ = made.started[str(script)]
    assert zygote.returncode == 0
    assert gone(pid)
    assert peer.wait(30) == 1  # its relay was told nothing: the zygote went away
    peer.stdout.close()
    assert peer.stdin is not None
    peer.stdin.close()
