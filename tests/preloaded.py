"""Stdio peers forked from a preloaded interpreter (tests/fixtures/zygote.py).

``PEERS.argv(script)`` is the command line that runs ``python script`` as a fresh fork of a
zygote that has already imported the script's top-level imports: the script itself runs from
scratch in the child, in the environment, working directory and streams of the process the
test (or an MCP client's stdio transport) started, so a peer costs milliseconds of CPU instead
of its SDK's 1-2 s import. One zygote per script and test process, started on first use;
the ``preloaded`` fixture (session scope) stops them by their PIDs at the end.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp.client.stdio import get_default_environment

from tests.loopback import end

ZYGOTE = str(Path(__file__).parent / "fixtures" / "zygote.py")
FORKS = hasattr(os, "pidfd_open") and hasattr(socket, "send_fds")
"""Whether this platform has what the zygote needs (Linux); elsewhere a peer is a plain
``python script``."""
START_SECONDS = 60.0


class Zygotes:
    """The zygotes of one test process, by script."""

    def __init__(self) -> None:
        self.folder: str | None = None
        self.started: dict[str, tuple[subprocess.Popen[bytes], str]] = {}

    def argv(self, script: str) -> list[str]:
        """Runs ``python script ARGS...`` (append the ARGS) as a fork of its zygote."""
        assert self.folder is not None, "use the preloaded fixture"
        if not FORKS:
            return [sys.executable, script]
        if script not in self.started:
            self.started[script] = self.start(script, f"{self.folder}/{len(self.started)}")
        _, path = self.started[script]
        return [sys.executable, "-I", "-S", ZYGOTE, "relay", path, script]

    def start(self, script: str, path: str) -> tuple[subprocess.Popen[bytes], str]:
        # The environment an MCP client's stdio transport gives its server, for the imports.
        argv = [sys.executable, ZYGOTE, "serve", path, script]
        pipe = subprocess.PIPE
        zygote = subprocess.Popen(argv, stdin=pipe, stdout=pipe, env=get_default_environment())
        assert zygote.stdout is not None
        try:
            ready = zygote.stdout.readline()  # bounded by the test's timeout
        except BaseException:
            end(zygote, signal.SIGKILL, START_SECONDS)
            raise
        if ready != b"ready\n":
            end(zygote, signal.SIGKILL, START_SECONDS)
            raise RuntimeError(f"the zygote of {script} did not start")
        return zygote, path

    def __enter__(self) -> Zygotes:
        self.folder = tempfile.mkdtemp(prefix="zygotes-")  # short: a socket path has 107 bytes
        return self

    def __exit__(self, *exc: object) -> None:
        """Each zygote sees its stdin close, kills any child left, and exits."""
        for zygote, _ in self.started.values():
            assert zygote.stdin is not None
            assert zygote.stdout is not None
            zygote.stdin.close()
            try:
                zygote.wait(START_SECONDS)
            finally:
                end(zygote, signal.SIGKILL, START_SECONDS)
                zygote.stdout.close()
        self.started.clear()
        if self.folder is not None:
            shutil.rmtree(self.folder)
        self.folder = None


PEERS = Zygotes()


@pytest.fixture(scope="session")
def preloaded() -> Iterator[Zygotes]:
    """:data:`PEERS`, open for the session: a module that forks its peers uses this."""
    with PEERS:
        yield PEERS
