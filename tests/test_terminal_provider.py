"""The terminal provider through ask(), driven by prompt_toolkit's pipe input."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.document import Document
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.layout import BufferControl
from prompt_toolkit.layout.processors import TransformationInput
from prompt_toolkit.output import DummyOutput

import interaction.terminal
from interaction import (
    AbortController,
    AbortSignal,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    PlanReviewIntent,
    UserInteractionError,
    ask,
    provide,
)
from interaction.flow import BatchFlow
from interaction.terminal import TerminalProvider
from interaction.terminal._app import ESC_DELAY, Escaped, build_app

from .helpers import CHECKS, NOTES, import_error_without, pkg_question
from .strategies import requests
from .terminal_helpers import (
    CTRL_C,
    CTRL_S,
    DOWN,
    ENTER,
    ESC,
    LEFT,
    PAGE_DOWN,
    RIGHT,
    SHIFT_TAB,
    TAB,
    UP,
    Recorder,
)

Item = AskUserQuestionAnswerItem
Option = AskUserQuestionOption
PLAN = AskUserQuestionItem(
    "plan",
    "Approve this plan?",
    detail="# Plan\n" + "\n".join(f"{n}. step" for n in range(1, 60)),
    options=[Option("Revise"), Option("Approve")],
    intent=PlanReviewIntent("Approve"),
)


@pytest.fixture
def keyboard() -> Iterator[PipeInput]:
    with create_pipe_input() as pipe:
        yield pipe


async def answer(
    keyboard: PipeInput, keys: str, *questions: AskUserQuestionItem
) -> AskUserQuestionAnswer:
    keyboard.send_text(keys)
    with provide(TerminalProvider(keyboard, DummyOutput())):
        async with asyncio.timeout(10):  # keys that do not finish the batch fail, not hang
            return await ask(AskUserQuestionRequest(questions or [pkg_question()]))


@pytest.mark.parametrize(
    ("keys", "questions", "expected"),
    [
        (ENTER, [pkg_question()], [Item("pkg", ["pnpm (Recommended)"])]),
        (DOWN + DOWN + ENTER, [pkg_question()], [Item("pkg", ["yarn"])]),
        ("jjjjjj" + ENTER, [pkg_question()], [Item("pkg", ["yarn"])]),  # j wraps to the top
        (UP + UP + ENTER, [pkg_question()], [Item("pkg", ["yarn"])]),  # up wraps to Other
        ("2" + ENTER, [pkg_question()], [Item("pkg", ["npm"])]),
        (TAB + "bun" + ENTER, [pkg_question()], [Item("pkg", custom="bun")]),
        (UP + ENTER + "bun" + ENTER, [pkg_question()], [Item("pkg", custom="bun")]),
        (TAB + "x" + TAB + "3" + ENTER, [pkg_question()], [Item("pkg", ["yarn"])]),
        ("s", [pkg_question()], [Item("pkg")]),
        (CTRL_S, [pkg_question()], [Item("pkg")]),
        ("free text 1 j" + ENTER, [NOTES], [Item("notes", custom="free text 1 j")]),
        (ENTER, [NOTES], [Item("notes")]),
        (
            "jj kk j  " + ENTER,  # types, tests, lint, and lint off again
            [CHECKS],
            [Item("checks", ["types", "tests"])],
        ),
        (" " + TAB + "docs" + ENTER, [CHECKS], [Item("checks", ["tests"], "docs")]),
        (ENTER + " " + ENTER, [CHECKS], [Item("checks", ["tests"])]),  # Enter on nothing waits
        (
            "2" + ENTER + " " + CTRL_S + "draft" + SHIFT_TAB + LEFT + ENTER + "s" + ENTER + ENTER,
            [pkg_question(), CHECKS, NOTES],
            [Item("pkg", ["npm"]), Item("checks"), Item("notes", custom="draft")],
        ),
        (
            "3" + ENTER + "b" + ENTER + "s" + ENTER + ENTER,  # the last Enter sends the review
            [pkg_question(), CHECKS, NOTES],
            [Item("pkg", ["yarn"]), Item("checks"), Item("notes")],
        ),
        (  # in a batch Tab and → move on unanswered; the review sends open ones as skips
            TAB + RIGHT + "x" + ENTER + ENTER,
            [pkg_question(), CHECKS, NOTES],
            [Item("pkg"), Item("checks"), Item("notes", custom="x")],
        ),
        (  # o opens the field; Shift-Tab comes back to it, and Tab to the options
            "o" + "bun" + ENTER + SHIFT_TAB + TAB + DOWN + DOWN + ENTER + "x" + ENTER + ENTER,
            [pkg_question(), NOTES],
            [Item("pkg", ["npm"]), Item("notes", custom="x")],
        ),
        (  # on the review ← edits the last question, Shift-Tab reaches the one before
            "2" + ENTER + TAB + LEFT + SHIFT_TAB + "3" + ENTER + ENTER + ENTER,
            [pkg_question(), NOTES],
            [Item("pkg", ["yarn"]), Item("notes")],
        ),
        (PAGE_DOWN + ENTER, [PLAN], [Item("plan", ["Approve"])]),
        ("jj" + DOWN + UP + "k" + ENTER, [PLAN], [Item("plan", ["Approve"])]),  # scroll only
        (RIGHT + ENTER, [PLAN], [Item("plan", ["Revise"])]),
        ("ll" + "h" + ENTER, [PLAN], [Item("plan", ["Revise"])]),
        (TAB + "shorter" + ENTER, [PLAN], [Item("plan", custom="shorter")]),
        # Left from Approve wraps round to Other, whose Enter opens the field.
        (LEFT + ENTER + "x" + ENTER, [PLAN], [Item("plan", custom="x")]),
    ],
    ids=lambda value: repr(value) if isinstance(value, str) else "",
)
async def test_keys_drive_each_flow(
    keyboard: PipeInput,
    keys: str,
    questions: list[AskUserQuestionItem],
    expected: list[AskUserQuestionAnswerItem],
) -> None:
    assert (await answer(keyboard, keys, *questions)).answers == tuple(expected)


@pytest.mark.parametrize(
    "keys",
    [
        ESC,  # nothing answered or typed: at once
        CTRL_C,
        "2" + ENTER + CTRL_C + "Y",  # one answer: after y to "Discard 1 answer? y/N"
        "2" + ENTER + CTRL_C + CTRL_C,  # Ctrl-C twice
        "2" + ENTER + "typed" + CTRL_C + "n" + CTRL_C + CTRL_C,
        "typed" + ENTER + ESC + "y",  # Esc on the options of the second question
    ],
    ids=repr,
)
async def test_escape_and_ctrl_c_dismiss_the_batch(keyboard: PipeInput, keys: str) -> None:
    screen = Recorder()
    keyboard.send_text(keys)
    questions = [NOTES, pkg_question()] if keys.startswith("typed") else [pkg_question(), NOTES]
    with provide(TerminalProvider(keyboard, screen)), pytest.raises(UserInteractionError) as info:
        await asyncio.wait_for(ask(AskUserQuestionRequest(questions)), 10)
    assert info.value.code == ErrorCode.ASK_CANCELLED
    assert info.value.message == "the user dismissed ask_user_question without answering"
    assert screen.text.endswith("✗ dismissed\n")


# A lone Esc in a text field followed at once by a key is a Meta key (ESC y is Alt-y),
# as a terminal sends it; tests/test_terminal_pty.py presses Esc there as a person does.
@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        # Esc in the field goes back to the options, the text kept for the Other row.
        (TAB + "bun" + ESC + UP + DOWN + ENTER + ENTER, [Item("pkg", custom="bun")]),
        (TAB + "bun" + ESC + DOWN + ENTER, [Item("pkg", ["pnpm (Recommended)"])]),
        # "Discard 1 answer?" and any key but y keeps the work.
        (
            "2" + ENTER + CTRL_C + "n" + "later" + ENTER + ENTER,
            [Item("pkg", ["npm"]), Item("notes", custom="later")],
        ),
        (
            "2" + ENTER + "la" + CTRL_C + "x" + "ter" + ENTER + ENTER,
            [Item("pkg", ["npm"]), Item("notes", custom="later")],
        ),
    ],
    ids=repr,
)
async def test_escape_and_ctrl_c_never_throw_work_away_unasked(
    keyboard: PipeInput, keys: str, expected: list[AskUserQuestionAnswerItem]
) -> None:
    answered = await answer(keyboard, keys, *[pkg_question(), NOTES][: len(expected)])
    assert answered.answers == tuple(expected)


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        ("one two" + ESC + "b" + "x", "one xtwo"),  # Alt-b
        ("one two" + ESC + "b" + ESC + "f" + "x", "one twox"),  # Alt-f
        ("one two" + ESC + "\x7f" + "x", "one x"),  # Alt-Backspace
    ],
)
async def test_meta_keys_edit_the_text_instead_of_dismissing(
    keyboard: PipeInput, keys: str, expected: str
) -> None:
    answered = await answer(keyboard, keys + ENTER, NOTES)
    assert answered.answers == (Item("notes", custom=expected),)


def test_a_lone_esc_acts_once_the_input_has_waited_half_a_second_in_every_mode(
    keyboard: PipeInput,
) -> None:
    # The input holds a lone ESC for ttimeoutlen, to tell it from an arrow key's start;
    # with timeoutlen the key processor would wait again in a text field (ESC starts its
    # Meta bindings) and read a key typed meanwhile as Alt-key. A Meta key's ESC comes
    # with its key, so no second wait is needed.
    app = build_app(BatchFlow(AskUserQuestionRequest([NOTES])), keyboard, DummyOutput())
    assert (ESC_DELAY, app.ttimeoutlen, app.timeoutlen) == (0.5, 0.5, 0)


async def test_esc_alone_in_a_text_field_then_y_dismisses(keyboard: PipeInput) -> None:
    screen = Recorder()
    with provide(TerminalProvider(keyboard, screen)):
        asking = asyncio.create_task(ask(AskUserQuestionRequest([pkg_question(), NOTES])))
        keyboard.send_text("2" + ENTER + "la")
        await screen.shows("❯ la")
        keyboard.send_text(ESC)
        await screen.shows("Discard 2 answers? y/N")
        keyboard.send_text("y")
        with pytest.raises(UserInteractionError) as info:
            await asyncio.wait_for(asking, 10)
    assert info.value.code == ErrorCode.ASK_CANCELLED


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        ("\x1b[31m" + "2" + ENTER, Item("pkg", ["npm"])),  # on the options
        ("o" + "\x1b[31m" + "bun" + "\x1b[<0;1;2m" + ENTER, Item("pkg", custom="bun")),
    ],
    ids=["options", "field"],
)
async def test_input_that_reads_as_a_mouse_report_is_dropped(
    keyboard: PipeInput,
    keys: str,
    expected: AskUserQuestionAnswerItem,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Ctrl-V Esc [31m, or such a paste outside bracketed paste: mouse reporting is off,
    # yet prompt_toolkit's own mouse binding read it and printed its traceback.
    screen = Recorder()
    keyboard.send_text(keys)
    with provide(TerminalProvider(keyboard, screen)):
        async with asyncio.timeout(10):
            answered = await ask(AskUserQuestionRequest([pkg_question()]))
    assert answered.answers == (expected,)
    printed = capsys.readouterr()
    assert "Traceback" not in screen.text + printed.out + printed.err


async def test_typed_or_pasted_controls_show_as_escapes_in_the_field(keyboard: PipeInput) -> None:
    screen = Recorder()
    typed = "A\u202eB\u2066C\x9bD"
    with provide(TerminalProvider(keyboard, screen)):
        asking = asyncio.create_task(ask(AskUserQuestionRequest([pkg_question()])))
        keyboard.send_text("o" + typed)
        await screen.shows("Other: A\\u202eB\\u2066C\\x9bD")
        keyboard.send_text(ENTER)
        answered = await asyncio.wait_for(asking, 10)
    assert answered.answers == (Item("pkg", custom=typed),)
    assert not any(char in screen.raw for char in "\u202e\u2066\x9b")


def test_the_field_maps_the_cursor_across_an_escape() -> None:
    text = "a\u202eb"
    shown = Escaped().apply_transformation(
        TransformationInput(
            BufferControl(Buffer()), Document(text), 0, lambda at: at, [("", text)], 80, 1
        )
    )
    assert "".join(fragment[1] for fragment in shown.fragments) == "a\\u202eb"
    assert [shown.source_to_display(at) for at in range(5)] == [0, 1, 7, 8, 9]
    assert [shown.display_to_source(at) for at in (0, 1, 4, 7, 8, 9)] == [0, 1, 1, 2, 3, 4]


async def test_the_answer_is_summed_up_when_the_prompt_goes(keyboard: PipeInput) -> None:
    screen = Recorder()
    keyboard.send_text("2" + ENTER + " j " + ENTER + "ok" + ENTER + ENTER)
    with provide(TerminalProvider(keyboard, screen)):
        await ask(AskUserQuestionRequest([pkg_question(header="Tools"), CHECKS, NOTES]))
    assert screen.text.endswith(
        '✓ Tools: npm\n✓ Which checks?: tests, lint\n✓ Anything else?: "ok"\n'
    )
    assert screen.raw.rfind("\x1b[?25h") > screen.raw.rfind("\x1b[?25l"), "cursor left hidden"


async def test_an_abort_tears_the_prompt_down_and_leaves_nothing_behind(
    keyboard: PipeInput,
) -> None:
    screen = Recorder()
    provider = TerminalProvider(keyboard, screen)
    controller = AbortController()
    with provide(provider):
        asking = asyncio.create_task(
            ask(AskUserQuestionRequest([pkg_question()], signal=controller.signal))
        )
        await screen.shows("Which package manager?")
        controller.abort()
        with pytest.raises(UserInteractionError) as info:
            await asking
        assert info.value.code == ErrorCode.ASK_ABORTED
        assert screen.text.endswith("✗ the question was withdrawn before you answered\n")
        shown, hidden = screen.raw.rfind("\x1b[?25h"), screen.raw.rfind("\x1b[?25l")
        assert shown > hidden, "the cursor was left hidden"
        assert asyncio.all_tasks() == {asyncio.current_task()}, "a task was left running"
        keyboard.send_text("3" + ENTER)  # nothing left reading swallows these
        again = await ask(AskUserQuestionRequest([pkg_question()]))
    assert again.answers == (Item("pkg", ["yarn"]),)


async def test_a_timeout_is_ask_timeout(keyboard: PipeInput) -> None:
    screen = Recorder()
    with provide(TerminalProvider(keyboard, screen)), pytest.raises(UserInteractionError) as info:
        await ask(AskUserQuestionRequest([pkg_question()], signal=AbortSignal.timeout(0.05)))
    assert info.value.code == ErrorCode.ASK_TIMEOUT
    assert screen.text.endswith("✗ the question timed out before you answered\n")


async def test_asks_queue_in_order_and_an_aborted_queued_ask_never_renders(
    keyboard: PipeInput,
) -> None:
    screen = Recorder()
    controller = AbortController()
    with provide(TerminalProvider(keyboard, screen)):
        first = asyncio.create_task(ask(AskUserQuestionRequest([pkg_question(id="first")])))
        second = asyncio.create_task(
            ask(
                AskUserQuestionRequest(
                    [AskUserQuestionItem("second", "Never shown?")], signal=controller.signal
                )
            )
        )
        third = asyncio.create_task(ask(AskUserQuestionRequest([NOTES])))
        await screen.shows("Which package manager?")
        controller.abort()
        with pytest.raises(UserInteractionError) as info:
            await second
        assert info.value.code == ErrorCode.ASK_ABORTED
        keyboard.send_text(DOWN + ENTER)
        assert (await first).answers == (Item("first", ["npm"]),)
        await screen.shows("Anything else?")
        keyboard.send_text("done" + ENTER)
        assert (await third).answers == (Item("notes", custom="done"),)
    assert "Never shown?" not in screen.text


async def test_the_end_of_input_dismisses(keyboard: PipeInput) -> None:
    keyboard.close()  # the terminal went away
    with (
        provide(TerminalProvider(keyboard, DummyOutput())),
        pytest.raises(UserInteractionError) as info,
    ):
        await ask(AskUserQuestionRequest([pkg_question()]))
    assert info.value.code == ErrorCode.ASK_CANCELLED
    assert info.value.message == "input ended before the question was answered"


async def test_without_a_terminal_it_says_so_once_and_asks_line_by_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    output = io.StringIO()
    provider = TerminalProvider(io.StringIO("2\nhello\n"), output)
    with provide(provider):
        first = await ask(AskUserQuestionRequest([pkg_question()]))
        second = await ask(AskUserQuestionRequest([NOTES]))
    assert first.answers == (Item("pkg", ["npm"]),)
    assert second.answers == (Item("notes", custom="hello"),)
    assert capsys.readouterr().err == (
        "interaction: the input is not a terminal; asking line by line instead\n"
    )
    assert "Choose 1-4, or type an answer of your own" in output.getvalue()


ANY_KEY = st.sampled_from(
    [UP, DOWN, LEFT, RIGHT, ENTER, TAB, SHIFT_TAB, PAGE_DOWN, CTRL_C, *" jkhlsbo17xé"]
)


@settings(max_examples=40, deadline=None)
@given(requests(), st.lists(ANY_KEY, max_size=30))
def test_any_keystrokes_end_in_an_answer_that_fits_or_a_dismissal(
    request: AskUserQuestionRequest, keys: list[str]
) -> None:
    async def asked() -> AskUserQuestionAnswer | UserInteractionError:
        with create_pipe_input() as pipe:
            # Then skip the rest and send the review; the first Ctrl-S may only answer
            # "Discard N answers?" (no).
            pipe.send_text("".join(keys) + CTRL_S * (len(request.questions) + 1) + ENTER)
            with provide(TerminalProvider(pipe, DummyOutput())):
                try:
                    async with asyncio.timeout(10):
                        return await ask(request)  # ask() refuses an answer that does not fit
                except UserInteractionError as error:
                    return error

    outcome = asyncio.run(asked())
    if isinstance(outcome, UserInteractionError):
        assert (outcome.code, CTRL_C in keys) == (
            ErrorCode.ASK_CANCELLED,
            True,
        )  # untouched, or twice
    else:
        assert [item.id for item in outcome.answers] == [q.id for q in request.questions]


def test_on_real_pipes_the_default_streams_fall_back_to_the_console() -> None:
    code = (
        "import asyncio\n"
        "from interaction import AskUserQuestionItem, AskUserQuestionOption as O,"
        " AskUserQuestionRequest\n"
        "from interaction.terminal import TerminalProvider\n"
        "q = AskUserQuestionItem('pkg', 'Which?', options=[O('pnpm'), O('npm')])\n"
        "answer = asyncio.run(TerminalProvider().ask(AskUserQuestionRequest([q])))\n"
        "print(answer.answers[0].selected)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input="2\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "interaction: the input is not a terminal; asking line by line instead\n"
    assert done.stdout.endswith("> ('npm',)\n")


def test_input_and_output_are_both_streams_or_both_prompt_toolkit_objects(
    keyboard: PipeInput,
) -> None:
    with pytest.raises(TypeError, match="pass input and output both as text streams"):
        TerminalProvider(keyboard, io.StringIO())  # type: ignore[call-overload]


def test_the_module_exports_the_provider_and_names_its_extra_when_missing() -> None:
    assert interaction.terminal.__all__ == ["TerminalProvider"]
    assert import_error_without("prompt_toolkit", "interaction.terminal") == (
        'interaction.terminal needs prompt_toolkit: pip install "interaction-seam[terminal]"'
    )


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
async def test_sigterm_and_sighup_end_the_ask_as_aborted_and_put_the_handler_back(
    keyboard: PipeInput, signum: int
) -> None:
    screen = Recorder()
    before = signal.getsignal(signum)
    with provide(TerminalProvider(keyboard, screen)):
        asked = asyncio.ensure_future(ask(AskUserQuestionRequest([pkg_question()])))
        await screen.shows("── Question ──")
        os.kill(os.getpid(), signum)
        with pytest.raises(UserInteractionError) as info:
            await asyncio.wait_for(asked, 10)
    assert info.value.code == ErrorCode.ASK_ABORTED
    name = signal.Signals(signum).name
    assert info.value.message == (
        f"ask_user_question was aborted: the process got {name} before the user answered"
    )
    assert screen.text.endswith("✗ stopped by a signal\n")
    assert signal.getsignal(signum) is before
