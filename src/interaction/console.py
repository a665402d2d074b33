"""A line-based provider over any pair of text streams: stdlib only, the embedded default.

It drives the shared :class:`~interaction.flow.BatchFlow`, one reply per question: each
question is printed from the display model with its header, detail and numbered options,
and one more numbered entry, "Other…", for an answer of one's own. Single-select takes a
number, a label, or any other text as the answer of one's own (text naming an option
selects it, as in every UI, and a label that is a number wins over the option of that
number); multi-select takes numbers separated by commas or spaces; an empty line skips.
End of input is ``ASK_CANCELLED`` ("input ended"). Model text arrives escaped from the
display model, so no escape sequence reaches the terminal.
"""

from __future__ import annotations

import asyncio
import codecs
import io
import os
import re
import stat
import sys
from collections.abc import Callable
from typing import Final, TextIO

from ._core import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    escape_controls,
    label_key,
)
from .display import ROLE_NAMES, QuestionView
from .flow import BatchFlow

__all__ = ["INPUT_ENDED", "ConsoleProvider", "input_ended"]

_SEPARATORS: Final = re.compile(r"[\s,]+")
INPUT_ENDED: Final = "input ended before the question was answered"


def input_ended() -> UserInteractionError:
    """The ``ASK_CANCELLED`` error of an input that ended (Ctrl-D, a closed pipe)."""
    return UserInteractionError(INPUT_ENDED, ErrorCode.ASK_CANCELLED)


class ConsoleProvider:
    """Asks on ``output`` and reads from ``input`` (by default ``sys.stdout`` and ``sys.stdin``).

    Asks are served one at a time, in arrival order. The provider owns ``input`` while it
    reads: on a pipe or terminal it reads through the event loop, so an abort leaves no
    reader behind to swallow later input, and text read past one answer is kept for the next.
    """

    def __init__(self, input: TextIO | None = None, output: TextIO | None = None) -> None:
        self._input = input
        self._output = output
        self._reader: _LineReader | None = None
        self._turn: asyncio.Lock | None = None

    @property
    def input(self) -> TextIO:
        return self._input if self._input is not None else sys.stdin

    @property
    def output(self) -> TextIO:
        return self._output if self._output is not None else sys.stdout

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        if self._turn is None:
            self._turn = asyncio.Lock()
        async with self._turn:
            if self._reader is None or self._reader.stream is not self.input:
                self._reader = _LineReader(self.input)
            # A line-based UI has no review screen: each reply answers its question.
            flow = BatchFlow(request, review=False)
            while not flow.done:
                self._show(flow)
                await self._answer(flow)
            return flow.answer()

    def _write(self, text: str) -> None:
        self.output.write(text)
        self.output.flush()

    def _show(self, flow: BatchFlow) -> None:
        question = flow.question  # the display model: every model string already escaped
        plan = flow.plan_review
        count = len(flow.questions)
        # A question asked on its own has no count, as in the terminal and on the page.
        place = "Plan review" if plan else f"Question {flow.index + 1}/{count}" if count > 1 else ""
        permission = question.permission
        asks = f"Permission · {permission.tool}" if permission else ""
        title = " · ".join(part for part in (place, asks, question.header) if part) or "Question"
        lines = ["", f"── {title} ──"]
        provenance = flow.view.provenance  # who asks, from where, since when: escaped too
        if provenance is not None and (said := provenance.summary()):
            lines.append(f"({said})")
        lines.append(question.question)
        if permission:
            lines.append(f"  {permission.tool}: {permission.summary}")
        if question.detail:
            lines.extend(f"  │ {line}" for line in question.detail.splitlines())
        for number, option in enumerate(question.options, start=1):
            marks = [
                " [recommended]" if option.recommended else "",
                " [approves the plan]" if option.primary else "",
                f" [{ROLE_NAMES[option.role]}]" if option.role else "",
            ]
            lines.append(f"  {number}. {option.text}{''.join(marks)}")
            if option.description:
                lines.extend(f"     {line}" for line in option.description.splitlines())
        if question.other:
            lines.append(f"  {len(question.options) + 1}. {question.other}")
        lines.append(_hint(question))
        self._write("\n".join(lines) + "\n")

    async def _prompt(self, prompt: str = "> ") -> str:
        self._write(prompt)
        assert self._reader is not None
        line = await self._reader.readline()
        if line is None:
            self._write("\n")
            raise input_ended()
        return line.strip()

    async def _answer(self, flow: BatchFlow) -> None:
        question = flow.question
        while True:
            reply = await self._prompt()
            if not reply or not question.options:
                flow.answer_with(text=reply)
                return
            parse = _parse_multi if question.multi_select else _parse_single
            result = parse(question, reply)
            if isinstance(result, str):
                self._write(f"{result}\n")
                continue
            labels, text, wants_other = result
            if wants_other:
                text = await self._prompt("Your answer: ")
            flow.answer_with(labels, text)
            return


def _hint(question: QuestionView) -> str:
    count = len(question.options)
    if not count:
        return "Type your answer (an empty line skips)."
    if question.multi_select:
        return f"Choose any of 1-{count + 1}, separated by commas or spaces (an empty line skips)."
    if question.permission:
        return f"Choose 1-{count + 1}, or type an edited input or a reply (an empty line skips)."
    return f"Choose 1-{count + 1}, or type an answer of your own (an empty line skips)."


def _no_option(token: str, count: int) -> str:
    """The one message for a number that is not an option, single- or multi-select."""
    return f"There is no option {token}: the options are numbered 1-{count + 1}."


_Parsed = tuple[tuple[str, ...], str | None, bool] | str
"""Labels chosen, text typed as one's own and whether to ask for it; or a re-prompt message."""


def _parse_single(question: QuestionView, reply: str) -> _Parsed:
    count = len(question.options)
    # A reply that is an option's label is that option, even when it is also a number:
    # with options "2", "4", "8", typing 2 means "2", as it does in every other UI.
    key = label_key(reply)
    if reply.isdecimal() and all(label_key(option.label) != key for option in question.options):
        number = int(reply)
        if 1 <= number <= count:
            return (question.options[number - 1].label,), None, False
        if number == count + 1:
            return (), None, True
        return _no_option(reply, count)
    return (), reply, False  # naming an option selects it: the flow's one rule


def _parse_multi(question: QuestionView, reply: str) -> _Parsed:
    count = len(question.options)
    chosen: list[str] = []
    wants_other = False
    for token in filter(None, _SEPARATORS.split(reply)):
        if not token.isdecimal():
            shown = escape_controls(token, keep_newlines=False)
            return (
                f"Not understood: {shown!r}."
                f" Enter numbers from 1 to {count + 1}, separated by commas or spaces."
            )
        number = int(token)
        if not 1 <= number <= count + 1:
            return _no_option(token, count)
        if number == count + 1:
            wants_other = True
        elif (label := question.options[number - 1].label) not in chosen:
            chosen.append(label)
    return tuple(chosen), None, wants_other


class _LineReader:
    """Reads lines from a text stream without leaving a blocked reader behind on cancel."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        # Read text not given out yet: ``_text`` from ``_at`` (whole lines, then the start
        # of a line), then ``_tail``, pieces with no newline. Pieces are joined once, when
        # a newline comes, so a very long line costs its length, not its length squared.
        self._text = ""
        self._at = 0
        self._tail: list[str] = []
        self._eof = False
        encoding = getattr(stream, "encoding", None) or "utf-8"
        self._decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        self._fd = _selectable_fd(stream)

    async def readline(self) -> str | None:
        """The next line without its newline; ``None`` at end of input."""
        line = self._next_line()
        while line is None and self._fd is not None and not self._eof:
            try:
                await self._fill(self._fd)
            except PermissionError:  # a device epoll cannot watch (/dev/null): it never blocks
                self._fd = None
            line = self._next_line()
        if line is not None:
            return line.rstrip("\r")
        rest = self._text[self._at :] + "".join(self._tail)
        self._text, self._at, self._tail = "", 0, []
        if self._fd is None and not rest:
            read = self.stream.readline()
            return read.rstrip("\r\n") if read else None
        return rest or None

    def _next_line(self) -> str | None:
        end = self._text.find("\n", self._at)
        if end < 0:
            return None
        line, self._at = self._text[self._at : end], end + 1
        return line

    def _add(self, piece: str) -> None:
        if "\n" in piece:
            self._text = "".join([self._text[self._at :], *self._tail, piece])
            self._at, self._tail = 0, []
        elif piece:
            self._tail.append(piece)

    async def _fill(self, fd: int) -> None:
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        read = _reader(fd, ready)
        loop.add_reader(fd, read)
        try:
            data = await ready
        finally:
            loop.remove_reader(fd)
        if data:
            self._add(self._decoder.decode(data))
        else:
            self._add(self._decoder.decode(b"", final=True))
            self._eof = True


def _reader(fd: int, ready: asyncio.Future[bytes]) -> Callable[[], None]:
    def read() -> None:
        if not ready.done():
            try:
                ready.set_result(os.read(fd, 65536))
            except OSError as exc:
                ready.set_exception(exc)

    return read


def _selectable_fd(stream: TextIO) -> int | None:
    """The stream's descriptor when the event loop can watch it (a pipe or terminal)."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, io.UnsupportedOperation):
        return None
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return None
    if not (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode)):
        return None
    if sys.platform == "win32":
        return None
    return fd
