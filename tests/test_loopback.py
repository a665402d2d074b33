"""The helpers every process the tests start shares: started on a loopback port, stopped by
its PID, also when the test fails."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .loopback import PORT_TRIES, LoopbackProcess, accepts, announced, popen, running


class HttpServer(LoopbackProcess):
    """``python -m http.server`` on the loopback."""

    @property
    def name(self) -> str:
        return "http.server"

    def spawn(self) -> subprocess.Popen[bytes]:
        argv = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(self.port)]
        return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def ready(self) -> bool:
        return accepts(self.port)


class Failing(LoopbackProcess):
    """A process that ends at once; counts its launches."""

    def __init__(self) -> None:
        super().__init__()
        self.launches = 0

    @property
    def name(self) -> str:
        return "the failing service"

    def details(self) -> str:
        return f": {self.launches} launches"

    def spawn(self) -> subprocess.Popen[bytes]:
        self.launches += 1
        return subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])

    def ready(self) -> bool:
        return False


class Stubborn(LoopbackProcess):
    """A process that ignores SIGTERM; ready once it says it ignores it."""

    STOP_SECONDS = 0.5

    def __init__(self, flag: Path) -> None:
        super().__init__()
        self.flag = flag

    @property
    def name(self) -> str:
        return "the stubborn service"

    def spawn(self) -> subprocess.Popen[bytes]:
        code = (
            "import pathlib, signal, sys, time\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "pathlib.Path(sys.argv[1]).touch()\n"
            "time.sleep(60)\n"
        )
        return subprocess.Popen([sys.executable, "-c", code, str(self.flag)])

    def ready(self) -> bool:
        return self.flag.exists()


def test_a_service_is_ready_on_its_port_and_gone_once_stopped() -> None:
    with HttpServer() as server:
        process = server.process
        assert process is not None
        assert accepts(server.port)
    assert server.process is None
    assert process.returncode == -signal.SIGTERM
    assert not accepts(server.port)


def test_a_process_that_ends_at_once_is_tried_on_other_ports_then_named() -> None:
    failing = Failing()
    with pytest.raises(RuntimeError) as caught:
        failing.start()
    assert str(caught.value) == f"the failing service did not start: {PORT_TRIES} launches"
    assert failing.process is None


def test_a_process_that_ignores_the_stop_signal_is_killed(tmp_path: Path) -> None:
    stubborn = Stubborn(tmp_path / "ready").start()
    process = stubborn.process
    assert process is not None
    stubborn.stop()
    assert process.returncode == -signal.SIGKILL
    assert stubborn.process is None


# A server that binds a port of its own choosing and says which, as `interaction serve
# --port 0` and the A2A fixture do.
PICKS_ITS_PORT = (
    "import http.server\n"
    "server = http.server.HTTPServer(('127.0.0.1', 0), http.server.BaseHTTPRequestHandler)\n"
    "print('PORT', server.server_address[1], flush=True)\n"
    "server.serve_forever()\n"
)


async def test_a_child_that_picks_its_port_is_stopped_by_its_pid_when_the_test_fails() -> None:
    children: list[tuple[asyncio.subprocess.Process, int]] = []

    async def failing() -> None:
        async with running(sys.executable, "-c", PICKS_ITS_PORT, stdout=subprocess.PIPE) as child:
            children.append((child, int(await announced(child.stdout, "PORT ", 30))))
            assert accepts(children[0][1])
            raise AssertionError("the test failed")

    with pytest.raises(AssertionError, match="the test failed"):
        await failing()
    ((child, port),) = children
    assert child.returncode == -signal.SIGKILL
    assert not accepts(port)


async def test_a_line_other_than_the_announcement_is_named() -> None:
    argv = (sys.executable, "-c", "print('listening somewhere')")
    async with running(*argv, stdout=subprocess.PIPE, number=signal.SIGTERM) as child:
        with pytest.raises(AssertionError) as caught:
            await announced(child.stdout, "PORT ", 30)
        assert str(caught.value) == "listening somewhere\n"
        assert await asyncio.wait_for(child.wait(), 30) == 0


def test_a_blocking_tests_child_is_stopped_by_its_pid_when_the_test_fails() -> None:
    children: list[tuple[subprocess.Popen[str], int]] = []

    def failing() -> None:
        with popen([sys.executable, "-c", PICKS_ITS_PORT], stdout=subprocess.PIPE) as child:
            assert child.stdout is not None
            children.append((child, int(child.stdout.readline().split()[1])))
            assert accepts(children[0][1])
            raise AssertionError("the test failed")

    with pytest.raises(AssertionError, match="the test failed"):
        failing()
    ((child, port),) = children
    assert child.returncode == -signal.SIGTERM
    assert not accepts(port)
