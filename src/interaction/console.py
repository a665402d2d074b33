"""A line-based provider over any pair of text streams: stdlib only, the embedded default.

Each question is printed with its header, detail and numbered options, and one more
numbered entry, "Other", for an answer of one's own. Single-select takes a number, a label,
or any other text as the answer of one's own; multi-select takes numbers separated by
commas or spaces; an empty line skips. End of input is ``ASK_CANCELLED`` ("input ended").
Model text is printed with every control character shown as a visible escape, so no
escape sequence reaches the terminal.
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
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    ErrorCode,
    PlanReviewIntent,
    UserInteractionError,
    escape_controls,
    is_plan_review,
    label_key,
    split_recommended,
)

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
            plan = is_plan_review(request)
            total = len(request.questions)
            items = []
            for number, question in enumerate(request.questions, start=1):
                self._show(question, number, total, plan=plan)
                items.append(await self._answer(question))
            return AskUserQuestionAnswer(items)

    def _write(self, text: str) -> None:
        self.output.write(text)
        self.output.flush()

    def _show(self, question: AskUserQuestionItem, number: int, total: int, *, plan: bool) -> None:
        title = "Plan review" if plan else f"Question {number}/{total}"
        if question.header:
            title += f" · {escape_controls(question.header, keep_newlines=False)}"
        lines = ["", f"── {title} ──", escape_controls(question.question)]
        if question.detail:
            lines.extend(f"  │ {line}" for line in escape_controls(question.detail).splitlines())
        approve = question.intent.approve if isinstance(question.intent, PlanReviewIntent) else None
        for index, option in enumerate(question.options, start=1):
            text, recommended = split_recommended(
                escape_controls(option.label, keep_newlines=False)
            )
            marks = [
                " [recommended]" if recommended else "",
                " [approves the plan]" if plan and option.label == approve else "",
            ]
            lines.append(f"  {index}. {text}{''.join(marks)}")
            if option.description:
                lines.extend(
                    f"     {line}" for line in escape_controls(option.description).splitlines()
                )
        if question.options:
            lines.append(f"  {len(question.options) + 1}. Other (type your own answer)")
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

    async def _answer(self, question: AskUserQuestionItem) -> AskUserQuestionAnswerItem:
        while True:
            reply = await self._prompt()
            if not reply:
                return AskUserQuestionAnswerItem(question.id)
            if not question.options:
                return AskUserQuestionAnswerItem(question.id, custom=reply)
            parse = _parse_multi if question.multi_select else _parse_single
            result = parse(question, reply)
            if isinstance(result, str):
                self._write(f"{result}\n")
                continue
            labels, custom, wants_other = result
            if wants_other:
                custom = await self._prompt("Your answer: ") or None
            return AskUserQuestionAnswerItem(question.id, labels, custom)


def _hint(question: AskUserQuestionItem) -> str:
    count = len(question.options)
    if not count:
        return "Type your answer (an empty line skips)."
    if question.multi_select:
        return f"Choose any of 1-{count + 1}, separated by commas or spaces (an empty line skips)."
    return f"Choose 1-{count + 1}, or type an answer of your own (an empty line skips)."


def _no_option(token: str, count: int) -> str:
    """The one message for a number that is not an option, single- or multi-select."""
    return f"There is no option {token}: the options are numbered 1-{count + 1}."


_Parsed = tuple[tuple[str, ...], str | None, bool] | str
"""Selected labels, a custom answer and whether to ask for one; or a re-prompt message."""


def _parse_single(question: AskUserQuestionItem, reply: str) -> _Parsed:
    count = len(question.options)
    if reply.isdecimal():
        number = int(reply)
        if 1 <= number <= count:
            return (question.options[number - 1].label,), None, False
        if number == count + 1:
            return (), None, True
        return _no_option(reply, count)
    key = label_key(reply)
    for option in question.options:
        if label_key(option.label) == key:
            return (option.label,), None, False
    return (), reply, False


def _parse_multi(question: AskUserQuestionItem, reply: str) -> _Parsed:
    count = len(question.options)
    chosen: list[str] = []
    wants_other = False
    for token in filter(None, _SEPARATORS.split(reply)):
        if not token.isdecimal():
            return (
                f"Not understood: {escape_controls(token, keep_newlines=False)!r}."
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
        self._buffer = ""
        self._eof = False
        encoding = getattr(stream, "encoding", None) or "utf-8"
        self._decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        self._fd = _selectable_fd(stream)

    async def readline(self) -> str | None:
        """The next line without its newline; ``None`` at end of input."""
        while self._fd is not None and "\n" not in self._buffer and not self._eof:
            try:
                await self._fill(self._fd)
            except PermissionError:  # a device epoll cannot watch (/dev/null): it never blocks
                self._fd = None
        if self._fd is None and not self._buffer:
            line = self.stream.readline()
            return line.rstrip("\r\n") if line else None
        if "\n" in self._buffer:
            line, self._buffer = self._buffer.split("\n", 1)
            return line.rstrip("\r")
        if self._buffer:
            line, self._buffer = self._buffer, ""
            return line
        return None

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
            self._buffer += self._decoder.decode(data)
        else:
            self._buffer += self._decoder.decode(b"", final=True)
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
