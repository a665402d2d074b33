"""What every service the tests start shares: a subprocess on a free loopback port, ready
when it answers (polled, with a bounded deadline), stopped by its PID.

A :class:`LoopbackProcess` subclass says how to spawn its process on ``self.port`` and
when it is ready; :meth:`~LoopbackProcess.start` tries five free ports (one may be taken
between :func:`free_port` and the child's bind), and stopping sends the subclass's signal,
waits, then SIGKILL. :func:`stop_async` is the same stop for an ``asyncio`` subprocess.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import subprocess
import time
from typing import ClassVar, Self

PORT_TRIES = 5


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def accepts(port: int, timeout: float = 0.5) -> bool:
    """Whether something accepts connections on ``port`` of the loopback."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def end(process: subprocess.Popen[bytes], number: int, seconds: float) -> None:
    """Send ``number`` to ``process``, wait ``seconds``, then SIGKILL it if it lingers."""
    if process.poll() is not None:
        return
    process.send_signal(number)
    try:
        process.wait(seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(seconds)


async def stop_async(process: asyncio.subprocess.Process, seconds: float) -> None:
    """:func:`end` with SIGTERM for an ``asyncio`` subprocess."""
    if process.returncode is not None:
        return
    process.terminate()
    try:
        await asyncio.wait_for(process.wait(), seconds)
    except TimeoutError:
        process.kill()
        await process.wait()


class LoopbackProcess:
    """One service process on ``self.port``; a context manager that starts and stops it."""

    START_SECONDS: ClassVar[float] = 30.0
    STOP_SECONDS: ClassVar[float] = 5.0
    POLL_SECONDS: ClassVar[float] = 0.02
    STOP_SIGNAL: ClassVar[signal.Signals] = signal.SIGTERM

    def __init__(self) -> None:
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def name(self) -> str:
        """What a failure to start names."""
        raise NotImplementedError

    def spawn(self) -> subprocess.Popen[bytes]:
        """The service's process, listening on ``self.port``."""
        raise NotImplementedError

    def ready(self) -> bool:
        """Whether the service answers on ``self.port``."""
        raise NotImplementedError

    def details(self) -> str:
        """What a failure to start adds after the name (``": <log tail>"``, say)."""
        return ""

    def start(self) -> Self:
        for _ in range(PORT_TRIES):
            self.port = free_port()
            if self.launch():
                return self
        raise RuntimeError(f"{self.name} did not start{self.details()}")

    def launch(self) -> bool:
        """Spawn on ``self.port`` and wait until ready; ``False`` if the process ended or
        the deadline passed (then it is stopped)."""
        self.process = self.spawn()
        deadline = time.monotonic() + self.START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.process = None
                return False
            if self.ready():
                return True
            time.sleep(self.POLL_SECONDS)  # polling a port: there is no event to wait on
        self.stop()
        return False

    def relaunch(self) -> None:
        """Start again on the same port (the process must be stopped)."""
        if not self.launch():
            raise RuntimeError(f"{self.name} did not restart on {self.port}{self.details()}")

    def send_signal(self, number: int) -> None:
        """Send ``number``, wait, SIGKILL if it lingers; a no-op when not running."""
        process, self.process = self.process, None
        if process is not None:
            end(process, number, self.STOP_SECONDS)

    def stop(self) -> None:
        self.send_signal(self.STOP_SIGNAL)

    def kill(self) -> None:
        """SIGKILL: the process dies as in a crash."""
        self.send_signal(signal.SIGKILL)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.stop()
