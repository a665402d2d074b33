"""Asks the terminal provider a question full of escape sequences, and prints the answer.

ask() would refuse such a request (BAD_REQUEST), so this calls the provider directly, as a
host that skips the seam might: the provider must show the text, never obey it.
Run by tests/test_terminal_pty.py in a real terminal.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Final

from interaction import AskUserQuestionItem, AskUserQuestionOption, AskUserQuestionRequest
from interaction.terminal import TerminalProvider
from interaction.wire import dumps

# Red text, a window title, the alternate screen, a hidden cursor, a right-to-left
# override and a C1 control sequence introducer that clears the screen.
INJECTION: Final = (
    "\x1b[31mred\x1b[0m \x1b]0;pwned\x07 \x1b[?1049h \x1b[?25l \u202eevil\u202c \x9b2J"
)
SHOWN: Final = (
    "\\x1b[31mred\\x1b[0m \\x1b]0;pwned\\x07 \\x1b[?1049h \\x1b[?25l \\u202eevil\\u202c \\x9b2J"
)
QUESTION: Final = AskUserQuestionItem(
    "x",
    f"Question {INJECTION}",
    detail=f"Detail {INJECTION}",
    header="Header",
    options=[AskUserQuestionOption(f"Label {INJECTION}"), AskUserQuestionOption("safe")],
)


async def main() -> None:
    provider = TerminalProvider(sys.stdin, sys.stderr)
    print(dumps(await provider.ask(AskUserQuestionRequest([QUESTION]))))


if __name__ == "__main__":
    asyncio.run(main())
