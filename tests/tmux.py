"""A real terminal for tests: a tmux pane of a fixed size, on a private tmux server.

The pane runs one command between two ``stty -g`` snapshots, so a test can tell that the
terminal's line discipline (raw mode, echo) came back as it was. Locally the tests skip
when tmux is missing; under CI they fail instead (.ci/run installs it).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Final

import pytest

TMUX: Final = shutil.which("tmux")
CONFIG: Final = "set -g status off\nset -sg escape-time 0\n"
ENVIRONMENT: Final = {
    **{key: value for key, value in os.environ.items() if not key.startswith("TMUX")},
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONIOENCODING": "utf-8",
}


def require_tmux() -> str:
    if TMUX is None:
        if os.environ.get("CI"):
            pytest.fail("tmux is required under CI: .ci/run installs it")
        pytest.skip("tmux is not installed (apt-get install tmux)")
    return TMUX


class Pane:
    """One command in a ``width`` x ``height`` terminal; its stdout is kept apart."""

    def __init__(self, directory: Path, width: int = 80, height: int = 24) -> None:
        self.tmux = require_tmux()
        self.directory = directory
        self.width, self.height = width, height
        self.server = f"interaction-test-{uuid.uuid4().hex[:12]}"
        self.config = directory / "tmux.conf"
        self.config.write_text(CONFIG)
        self.stdout = directory / "stdout.txt"
        self._started = False

    def run(self, *args: str) -> str:
        return subprocess.run(
            [self.tmux, "-L", self.server, "-f", str(self.config), *args],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
            env=ENVIRONMENT,
        ).stdout

    def start(self, *argv: str) -> None:
        """Run ``argv``; its stdout goes to :attr:`stdout`, the rest to the terminal."""
        files = {name: shlex.quote(str(self.directory / name)) for name in ("before", "after")}
        script = (
            f"stty -g > {files['before']}; {shlex.join(argv)} > {shlex.quote(str(self.stdout))};"
            f" echo $? > {shlex.quote(str(self.directory / 'status'))};"
            f" stty -g > {files['after']};"
            f" {shlex.quote(self.tmux)} -L {self.server} wait-for -S done;"
            " exec sleep 600"  # a dead pane reports its cursor hidden: keep this one alive
        )
        self.run(
            "new-session", "-d", "-x", str(self.width), "-y", str(self.height), "-c",
            str(self.directory), script,
        )  # fmt: skip
        self._started = True

    def keys(self, *names: str) -> None:
        """Press keys by tmux's names: ``Up``, ``Enter``, ``BTab``, ``Escape``, ``C-c``, ``j``…"""
        self.run("send-keys", *names)

    def type(self, text: str) -> None:
        self.run("send-keys", "-l", text)

    def screen(self, *, escapes: bool = False) -> str:
        """The visible screen, each row without its trailing blanks, without blank rows below."""
        shown = self.run("capture-pane", "-p", *(["-e"] if escapes else []))
        return "\n".join(row.rstrip() for row in shown.split("\n")).rstrip("\n")

    def wait_for(self, text: str, timeout: float = 20) -> str:
        """The screen once it shows ``text`` and has stopped changing, its cursor too: a
        redraw's last move (parking the cursor) changes no text, and a resize that lands
        before it scrolls the rows above the cursor into the scrollback."""
        deadline = time.monotonic() + timeout
        previous = None
        while True:
            screen = self.screen()
            state = (screen, self.run("display-message", "-p", "#{cursor_x},#{cursor_y}"))
            if text in screen and state == previous:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} did not show; the screen:\n{screen}")
            previous = state
            time.sleep(0.02)  # polling the screen; the deadline bounds it

    def finish(self) -> tuple[int, str]:
        """Wait for the command to end; its exit status and stdout.

        Also checks that the terminal came back as it was: the same stty settings, and the
        cursor visible.
        """
        self.run("wait-for", "done")
        status = int((self.directory / "status").read_text())
        before = (self.directory / "before").read_text()
        assert (self.directory / "after").read_text() == before, "the stty settings changed"
        assert self.flag("cursor_flag") == "1", "the cursor was left hidden"
        assert self.flag("alternate_on") == "0", "the alternate screen was left on"
        return status, self.stdout.read_text()

    def flag(self, name: str) -> str:
        return self.run("display-message", "-p", f"#{{{name}}}").strip()

    def close(self) -> None:
        if self._started:
            subprocess.run(
                [self.tmux, "-L", self.server, "kill-server"],
                capture_output=True,
                check=False,
                timeout=30,
            )
