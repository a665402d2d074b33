"""Keys and an in-memory terminal output for driving the terminal UI without a terminal."""

from __future__ import annotations

import asyncio
import io
import re
from typing import Final

from prompt_toolkit.data_structures import Size
from prompt_toolkit.output.vt100 import Vt100_Output

UP: Final = "\x1b[A"
DOWN: Final = "\x1b[B"
RIGHT: Final = "\x1b[C"
LEFT: Final = "\x1b[D"
ENTER: Final = "\r"
TAB: Final = "\t"
SHIFT_TAB: Final = "\x1b[Z"
ESC: Final = "\x1b"
CTRL_C: Final = "\x03"
CTRL_S: Final = "\x13"
PAGE_DOWN: Final = "\x1b[6~"

_SEQUENCES: Final = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\x1b[=>]|[\r\x07]")


class Recorder(Vt100_Output):
    """A VT100 output into memory that says when something was painted."""

    def __init__(self, rows: int = 24, columns: int = 80) -> None:
        self.stream = io.StringIO()
        super().__init__(self.stream, lambda: Size(rows=rows, columns=columns), term="xterm")
        self._flushed = asyncio.Event()

    def flush(self) -> None:
        super().flush()
        self._flushed.set()

    @property
    def raw(self) -> str:
        return self.stream.getvalue()

    @property
    def text(self) -> str:
        """What was written, without the control sequences."""
        return _SEQUENCES.sub("", self.raw)

    async def shows(self, text: str) -> None:
        """Wait until ``text`` has been painted."""
        async with asyncio.timeout(10):
            while text not in self.text:
                self._flushed.clear()
                await self._flushed.wait()
