"""A real ``redis-server`` (Debian's, from PATH) for the tests: loopback, a free port, a
temporary directory, stopped by its PID.

``RedisServer(directory).start()`` waits until the server answers ``PING`` (polled, with a
bounded deadline); ``stop()`` sends SIGTERM, waits, then SIGKILL; ``kill()`` is SIGKILL at
once (a crash); ``restart()`` comes back on the same port with the same directory, so an
AOF written before is replayed.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

START_SECONDS: Final = 10.0
STOP_SECONDS: Final = 5.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def ping(port: int, timeout: float = 0.5) -> bool:
    """Whether a server on ``port`` answers ``PING`` with ``PONG`` (not while loading)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """One ``redis-server`` process; ``appendonly`` turns the AOF on (fsync always)."""

    def __init__(self, directory: Path, *, appendonly: bool = False) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not on PATH (Debian package redis-server)")
        self.binary = binary
        self.directory = directory
        self.appendonly = appendonly
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

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

    def start(self) -> RedisServer:
        for _ in range(5):  # a port taken between free_port() and the bind: another one
            self.port = free_port()
            if self._launch():
                return self
        raise RuntimeError(f"redis-server did not start: {self.log()}")

    def _launch(self) -> bool:
        self.process = subprocess.Popen(
            self._argv(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.process = None
                return False
            if ping(self.port):
                return True
            time.sleep(0.01)  # polling a port: there is no event to wait on
        self.stop()
        return False

    def log(self) -> str:
        path = self.directory / "redis.log"
        return path.read_text("utf-8", "replace")[-2000:] if path.exists() else "(no log)"

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

    def kill(self) -> None:
        """SIGKILL: the server dies as in a crash (the AOF is all that is left)."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(STOP_SECONDS)

    def restart(self, *, crash: bool = True) -> None:
        """Stop (SIGKILL when ``crash``) and start again on the same port and directory."""
        port = self.port
        self.kill() if crash else self.stop()
        self.port = port
        if not self._launch():
            raise RuntimeError(f"redis-server did not restart on {port}: {self.log()}")

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.stop()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One server for a test module's relays (each relay under its own prefix)."""
    with RedisServer(tmp_path_factory.mktemp("redis")) as server:
        yield server
