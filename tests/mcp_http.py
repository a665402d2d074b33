"""An MCP server fixture (tests/fixtures/mcp) serving streamable HTTP in a subprocess: a
free loopback port, ready when the port accepts, stopped by its PID (SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import ClassVar

from tests.loopback import LoopbackProcess, accepts
from tests.preloaded import PEERS


class ServerProcess(LoopbackProcess):
    """``python <script>`` with ``MCP_PORT`` set, and ``env`` on top of this environment: a
    fork of the script's zygote (tests/preloaded.py; the ``preloaded`` fixture must be in
    use) unless ``FORKED`` is false."""

    FORKED: ClassVar[bool] = True

    def __init__(self, script: str, **env: str) -> None:
        super().__init__()
        self.script = script
        self.env = env

    @property
    def name(self) -> str:
        return f"the MCP server {self.script}"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def spawn(self) -> subprocess.Popen[bytes]:
        env = {**os.environ, **self.env, "MCP_PORT": str(self.port)}
        return subprocess.Popen(
            PEERS.argv(self.script) if self.FORKED else [sys.executable, self.script],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def ready(self) -> bool:
        return accepts(self.port)

    def restart(self) -> None:
        """Stop, then start again on the same port (a process restart behind one address)."""
        self.stop()
        self.relaunch()


class InterpreterProcess(ServerProcess):
    """A :class:`ServerProcess` that starts a whole interpreter, for a test that needs a
    start (a restart) to take as long as a real one."""

    FORKED = False


@contextlib.contextmanager
def serving(script: str, **env: str) -> Iterator[ServerProcess]:
    with ServerProcess(script, **env) as process:
        yield process
