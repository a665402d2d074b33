"""One Chromium per test process, launched by Playwright's own driver and shared by its
tests: each test connects to it and opens fresh contexts (pages), which are closed when it
disconnects, so no test sees another's cookies, storage or tabs.

Launching Chromium is most of a browser test's cost (seconds on a busy 2-core machine);
connecting to a running one is a fraction of a second. The browser is started with
Playwright's ``launchServer`` (the same switches as ``chromium.launch``, over Playwright's
own protocol, not CDP): :data:`SERVER` runs on the driver's Node.js, prints the browser's
WebSocket address, and closes the browser when its stdin closes (the test process ended,
even by SIGKILL) or on SIGTERM. A browser that died is launched again on the next use.
"""

from __future__ import annotations

import json
import signal
import subprocess
import tempfile
import threading
from pathlib import Path

import playwright

from .loopback import end

DRIVER = Path(playwright.__file__).parent / "driver"
SERVER = r"""
const [core, options] = process.argv.slice(1);
const { chromium } = require(core);
chromium.launchServer(JSON.parse(options)).then((server) => {
  const close = () => server.close().then(() => process.exit(0));
  process.on("SIGTERM", close);
  process.stdin.on("end", close);
  process.stdin.resume();
  process.stdout.write(server.wsEndpoint() + "\n");
});
"""
START_SECONDS = 60.0


class BrowserServer:
    """A Chromium (``executable``, with ``args``) behind Playwright's server, started on
    first use; :meth:`endpoint` is the address a test connects to."""

    def __init__(self, executable: str, args: list[str]) -> None:
        self.options = json.dumps({"executablePath": executable, "headless": True, "args": args})
        self.process: subprocess.Popen[str] | None = None
        self._endpoint = ""

    def endpoint(self) -> str:
        """The running browser's WebSocket address, launching it first if it is not up."""
        if self.process is None or self.process.poll() is not None:
            self.stop()
            self._launch()
        return self._endpoint

    def _launch(self) -> None:
        argv = [str(DRIVER / "node"), "-e", SERVER, str(DRIVER / "package"), self.options]
        with tempfile.TemporaryFile("w+") as log:
            process = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True
            )
            self.process = process
            stdout = process.stdout
            assert stdout is not None
            line: list[str] = []
            reader = threading.Thread(target=lambda: line.append(stdout.readline()))
            reader.start()
            reader.join(START_SECONDS)  # a pipe read has no deadline of its own
            if not line or not line[0].startswith("ws://"):
                self.stop()
                log.seek(0)
                said = log.read()[-2000:]
                raise RuntimeError(f"Chromium did not start behind Playwright's server: {said}")
        self._endpoint = line[0].strip()

    def stop(self) -> None:
        """Close the browser (stdin's end, then SIGTERM, then SIGKILL, by PID)."""
        process, self.process = self.process, None
        if process is None:
            return
        assert process.stdin is not None
        try:
            process.stdin.close()
            process.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            end(process, signal.SIGTERM, 5)
        if process.stdout is not None:
            process.stdout.close()
