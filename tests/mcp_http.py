"""An MCP server fixture (tests/fixtures/mcp) serving streamable HTTP in a subprocess: a
free loopback port, ready when the port accepts, stopped by its PID (SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Final

from tests.redis_server import free_port

START_SECONDS: Final = 30.0
STOP_SECONDS: Final = 5.0


def accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class ServerProcess:
    """``python <script>`` with ``MCP_PORT`` set, and ``env`` on top of this environment."""

    def __init__(self, script: str, **env: str) -> None:
        self.script = script
        self.env = env
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> ServerProcess:
        for _ in range(5):  # a port taken between free_port() and the bind: another one
            self.port = free_port()
            if self._launch():
                return self
        raise RuntimeError(f"the MCP server {self.script} did not start")

    def _launch(self) -> bool:
        env = {**os.environ, **self.env, "MCP_PORT": str(self.port)}
        self.process = subprocess.Popen(
            [sys.executable, self.script],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.process = None
                return False
            if accepts(self.port):
                return True
            time.sleep(0.02)  # polling a port: there is no event to wait on
        self.stop()
        return False

    def stop(self) -> None:
        """SIGTERM, wait, SIGKILL if it lingers; a no-op when not running."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_SECONDS)

    def restart(self) -> None:
        """Stop, then start again on the same port (a process restart behind one address)."""
        port = self.port
        self.stop()
        self.port = port
        if not self._launch():
            raise RuntimeError(f"the MCP server {self.script} did not restart on {port}")

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.stop()


@contextlib.contextmanager
def serving(script: str, **env: str) -> Iterator[ServerProcess]:
    with ServerProcess(script, **env) as process:
        yield process
