"""``TerminalProvider``: asks in the terminal with an inline prompt_toolkit UI."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from functools import partial
from types import FrameType
from typing import Final, TextIO, overload

from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.input import Input, create_input
from prompt_toolkit.output import ColorDepth, Output, create_output
from prompt_toolkit.output.vt100 import Vt100_Output
from prompt_toolkit.renderer import print_formatted_text
from prompt_toolkit.utils import get_bell_environment_variable, get_term_environment_variable

from .._core import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
)
from ..console import ConsoleProvider, input_ended
from ..flow import BatchFlow
from ._app import STYLE, build_app
from ._view import summary

__all__ = ["TerminalProvider"]

WITHDRAWN: Final = "the question was withdrawn before you answered"
TIMED_OUT: Final = "the question timed out before you answered"
DISMISSED: Final = "dismissed"
ENDING_SIGNALS: Final = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)
"""Signals that end the ask as ``ASK_ABORTED`` with the terminal restored, not mid-frame."""


def signalled_error(signum: int) -> UserInteractionError:
    name = signal.Signals(signum).name
    return UserInteractionError(
        f"ask_user_question was aborted: the process got {name} before the user answered",
        ErrorCode.ASK_ABORTED,
    )


class TerminalProvider:
    """Asks on a terminal, one question at a time, and answers only when the batch is done.

    ``input`` and ``output`` are text streams (``sys.stdin`` and ``sys.stdout`` by default)
    or, both of them, prompt_toolkit's own ``Input`` and ``Output`` (a pipe input and a
    dummy output in tests). When a stream is not a terminal, the provider says so once on
    stderr and asks through :class:`~interaction.console.ConsoleProvider` instead; so it
    does under ``TERM=dumb`` (an Emacs shell buffer), which cannot draw the UI. With a
    ``deadline`` (a ``time.monotonic()`` instant, such as the one of the request's
    timeout) a countdown shows while asking. Asks
    are served one at a time in arrival order; an ask aborted while it waits is never shown.
    """

    @overload
    def __init__(
        self,
        input: TextIO | None = None,
        output: TextIO | None = None,
        *,
        deadline: float | None = None,
    ) -> None: ...
    @overload
    def __init__(self, input: Input, output: Output, *, deadline: float | None = None) -> None: ...
    def __init__(
        self,
        input: TextIO | Input | None = None,
        output: TextIO | Output | None = None,
        *,
        deadline: float | None = None,
    ) -> None:
        if isinstance(input, Input) != isinstance(output, Output):
            raise TypeError(
                "pass input and output both as text streams,"
                " or both as prompt_toolkit's Input and Output"
            )
        self._input = input
        self._output = output
        self._deadline = deadline
        self._terminal: tuple[Input, Output] | None = None
        self._fallback: ConsoleProvider | None = None
        self._turn: asyncio.Lock | None = None

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        if self._turn is None:
            self._turn = asyncio.Lock()
        async with self._turn:
            if self._terminal is None and self._fallback is None:
                self._open()
            if self._fallback is not None:
                return await self._fallback.ask(request)
            assert self._terminal is not None
            return await self._run(request, *self._terminal)

    def _open(self) -> None:
        """Take the terminal, or settle for the console when there is none."""
        if isinstance(self._input, Input) and isinstance(self._output, Output):
            self._terminal = (self._input, self._output)
            return
        assert not isinstance(self._input, Input)
        assert not isinstance(self._output, Output)
        input = self._input if self._input is not None else sys.stdin
        output = self._output if self._output is not None else sys.stdout
        why = None
        for name, stream in (("input", input), ("output", output)):
            if why is None and not _is_terminal(stream):
                why = f"the {name} is not a terminal"
        if why is None and os.environ.get("TERM") == "dumb":
            why = "TERM=dumb cannot draw the terminal UI"
        if why is not None:
            print(f"interaction: {why}; asking line by line instead", file=sys.stderr, flush=True)
            self._fallback = ConsoleProvider(input, output)
            return
        self._terminal = (create_input(input), _terminal_output(output))

    async def _run(
        self, request: AskUserQuestionRequest, input: Input, output: Output
    ) -> AskUserQuestionAnswer:
        flow = BatchFlow(request)
        app = build_app(flow, input, output, self._deadline)
        loop = asyncio.get_running_loop()

        def ended(signum: int) -> None:
            if app.future is not None and not app.future.done():
                app.exit(exception=signalled_error(signum))

        try:
            with _on_signals(lambda signum: loop.call_soon_threadsafe(partial(ended, signum))):
                answer = await app.run_async(set_exception_handler=False)
        except asyncio.CancelledError:
            signal = request.signal
            timed_out = signal is not None and isinstance(signal.reason, TimeoutError)
            _stopped(output, TIMED_OUT if timed_out else WITHDRAWN)
            raise
        except EOFError:  # the terminal went away
            raise input_ended() from None
        except UserInteractionError as error:  # dismissed, or a signal
            signalled = error.code == ErrorCode.ASK_ABORTED
            _stopped(output, "stopped by a signal" if signalled else DISMISSED)
            raise
        for line in summary(flow, output.get_size().columns):
            _say(output, line)
        return answer


class KeepsScrollback(Vt100_Output):
    """A VT100 output whose erasing never puts the screen into the scrollback.

    prompt_toolkit erases the prompt with ED (``ESC [ J``) from its first row, and redraws
    it after a resize and when it is done. When that row is the screen's first, as in a
    cleared terminal, the cursor is at the top-left cell and ED clears the whole screen,
    which tmux (3.3 on, its window option ``scroll-on-clear``, on by default) first scrolls
    into the scrollback: a copy of the prompt stayed there at every resize and at the end.
    Here the current row is erased with EL (``ESC [ K``), and the rows below it with ED
    from the next cell, never the top-left one; the cursor is saved and put back around
    that step (DECSC, DECRC).
    """

    def erase_down(self) -> None:
        self.write_raw("\x1b[K\x1b7\x1b[C\x1b[J\x1b8")


def _terminal_output(stream: TextIO) -> Output:
    """prompt_toolkit's output for a terminal stream; a VT100 one keeps the scrollback."""
    if sys.platform == "win32":
        return create_output(stream)
    # As create_output() builds it, with the same environment variables.
    return KeepsScrollback.from_pty(
        stream,
        term=get_term_environment_variable(),
        default_color_depth=ColorDepth.from_env(),
        enable_bell=get_bell_environment_variable(),
    )


@contextlib.contextmanager
def _on_signals(handler: Callable[[int], object]) -> Iterator[None]:
    """Route SIGTERM and SIGHUP to ``handler`` while the prompt shows (main thread only),
    then put back whatever handled them before."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def received(signum: int, frame: FrameType | None) -> None:
        handler(signum)

    previous = {signum: signal.signal(signum, received) for signum in ENDING_SIGNALS}
    try:
        yield
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before if before is not None else signal.SIG_DFL)


def _stopped(output: Output, why: str) -> None:
    with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
        _say(output, [("class:summary.stop", "✗ "), ("", why)])


def _say(output: Output, fragments: list[tuple[str, str]]) -> None:
    """One line under where the prompt was."""
    print_formatted_text(output, FormattedText([*fragments, ("", "\n")]), STYLE)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or closed
        return False
