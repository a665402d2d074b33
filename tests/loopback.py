"""What every process the tests start shares: started on a loopback port, stopped by its PID
(a signal, a bounded wait, then SIGKILL), even when the test fails.

- A :class:`LoopbackProcess` subclass says how to spawn its process on ``self.port`` (a
  port the test picks) and when it is ready; :meth:`~LoopbackProcess.start` tries five
  free ports (one may be taken between :func:`free_port` and the child's bind).
- A child that picks its own port (``--port 0``) and prints it: :func:`popen` (a blocking
  test) or :func:`running` (an ``asyncio`` one; :func:`serve` for ``interaction serve``)
  start it, :func:`announced` reads the line it prints. :func:`running` also holds any
  other child an ``asyncio`` test starts.
- :func:`end` and :func:`stop_async` are the stop itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, AnyStr, ClassVar, Self

PORT_TRIES = 5
ANSWER_AT = "interaction: answer at "
"""How ``interaction serve`` begins its first line on stderr: the page's address follows."""


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


def end(process: subprocess.Popen[AnyStr], number: int, seconds: float) -> None:
    """Send ``number`` to ``process``, wait ``seconds``, then SIGKILL it if it lingers."""
    if process.poll() is not None:
        return
    process.send_signal(number)
    try:
        process.wait(seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(seconds)


async def stop_async(
    process: asyncio.subprocess.Process, seconds: float, number: int = signal.SIGTERM
) -> None:
    """:func:`end` for an ``asyncio`` subprocess."""
    if process.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):  # it ended since
        process.send_signal(number)
    try:
        await asyncio.wait_for(process.wait(), seconds)
    except TimeoutError:
        process.kill()
        await process.wait()


@contextlib.contextmanager
def popen(
    argv: Sequence[str], *, number: int = signal.SIGTERM, seconds: float = 30.0, **options: Any
) -> Iterator[subprocess.Popen[str]]:
    """``argv`` in text mode (``options`` as :class:`subprocess.Popen` takes them), stopped
    on the way out by :func:`end` with ``number``, its pipes closed."""
    with subprocess.Popen(argv, text=True, **options) as process:
        try:
            yield process
        finally:
            end(process, number, seconds)


@contextlib.asynccontextmanager
async def running(
    *argv: str, number: int = signal.SIGKILL, seconds: float = 10.0, **options: Any
) -> AsyncIterator[asyncio.subprocess.Process]:
    """``argv`` as an ``asyncio`` subprocess (``options`` as
    :func:`asyncio.create_subprocess_exec` takes them), stopped on the way out by
    :func:`stop_async` with ``number`` (SIGKILL unless told: a crash) if it still runs."""
    process = await asyncio.create_subprocess_exec(*argv, **options)
    try:
        yield process
    finally:
        await stop_async(process, seconds, number)


async def announced(stream: asyncio.StreamReader | None, prefix: str, seconds: float) -> str:
    """The rest of the first line on ``stream`` (a child's pipe), which must start with
    ``prefix``: how a child that picked its own port says where it listens. An
    ``AssertionError`` names the line when it is another; ``TimeoutError`` after ``seconds``."""
    assert stream is not None
    line = (await asyncio.wait_for(stream.readline(), seconds)).decode()
    assert line.startswith(prefix), line
    return line.removeprefix(prefix).strip()


def serve(*args: str, **options: Any) -> AbstractAsyncContextManager[asyncio.subprocess.Process]:
    """``interaction serve --port 0 *args`` under :func:`running`: it picks its port and
    prints the page's address after :data:`ANSWER_AT`."""
    return running(sys.executable, "-m", "interaction", "serve", "--port", "0", *args, **options)


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
