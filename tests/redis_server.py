"""A real ``redis-server`` (Debian's, from PATH) for the tests: loopback, a free port, a
temporary directory, stopped by its PID.

``RedisServer(directory).start()`` waits until the server answers ``PING`` (polled, with a
bounded deadline); ``stop()`` sends SIGTERM, waits, then SIGKILL; ``kill()`` is SIGKILL at
once (a crash); ``restart()`` comes back on the same port with the same directory, so an
AOF written before is replayed.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from .loopback import LoopbackProcess


def ping(port: int, timeout: float = 0.5) -> bool:
    """Whether a server on ``port`` answers ``PING`` with ``PONG`` (not while loading)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer(LoopbackProcess):
    """One ``redis-server`` process; ``appendonly`` turns the AOF on (fsync always)."""

    START_SECONDS = 10.0
    POLL_SECONDS = 0.01

    def __init__(self, directory: Path, *, appendonly: bool = False) -> None:
        super().__init__()
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not on PATH (Debian package redis-server)")
        self.binary = binary
        self.directory = directory
        self.appendonly = appendonly

    @property
    def name(self) -> str:
        return "redis-server"

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _argv(self) -> list[str]:
        argv = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1"]
        argv += ["--dir", str(self.directory), "--save", "", "--daemonize", "no"]
        argv += ["--appendonly", "yes" if self.appendonly else "no"]
        if self.appendonly:
            argv += ["--appendfsync", "always"]
        return [*argv, "--loglevel", "warning", "--logfile", str(self.directory / "redis.log")]

    def spawn(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen(self._argv(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def ready(self) -> bool:
        return ping(self.port)

    def log(self) -> str:
        path = self.directory / "redis.log"
        return path.read_text("utf-8", "replace")[-2000:] if path.exists() else "(no log)"

    def details(self) -> str:
        return f": {self.log()}"

    def restart(self, *, crash: bool = True) -> None:
        """Stop (SIGKILL when ``crash``) and start again on the same port and directory."""
        self.kill() if crash else self.stop()
        self.relaunch()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One server for a test module's relays (each relay under its own prefix)."""
    with RedisServer(tmp_path_factory.mktemp("redis")) as server:
        yield server
