"""The console provider, through in-memory streams, real pipes and the `interaction` command."""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from interaction import (
    AbortController,
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
from interaction.console import ConsoleProvider, _LineReader

from .helpers import pkg_question

Item = AskUserQuestionAnswerItem
Option = AskUserQuestionOption
MULTI = AskUserQuestionItem(
    "checks",
    "Which checks?",
    header="CI",
    multi_select=True,
    options=[Option("tests"), Option("lint", "ruff"), Option("types")],
)
FREE = AskUserQuestionItem("notes", "Anything else?")


async def run_console(
    typed: str, *questions: AskUserQuestionItem
) -> tuple[AskUserQuestionAnswer | UserInteractionError, str]:
    output = io.StringIO()
    with provide(ConsoleProvider(io.StringIO(typed), output)):
        try:
            result: AskUserQuestionAnswer | UserInteractionError = await ask(
                AskUserQuestionRequest(questions or [pkg_question()])
            )
        except UserInteractionError as error:
            result = error
    return result, output.getvalue()


async def test_a_question_asked_on_its_own_has_no_count_and_a_batch_has_one() -> None:
    _, alone = await run_console("\n", FREE)
    _, batch = await run_console("\n\n", FREE, pkg_question(header="Tools"))
    assert alone.startswith("\n── Question ──\nAnything else?\n")
    assert "\n── Question 1/2 ──\nAnything else?\n" in batch
    assert "\n── Question 2/2 · Tools ──\nWhich package manager?\n" in batch


async def test_prints_header_question_detail_and_numbered_options() -> None:
    question = pkg_question(
        header="Tools",
        detail="Pick one.\nIt matters.",
        options=[Option("pnpm (Recommended)", "fast\nstrict"), Option("npm")],
    )
    _, screen = await run_console("1\n", question)
    assert screen == (
        "\n"
        "── Tools ──\n"
        "Which package manager?\n"
        "  │ Pick one.\n"
        "  │ It matters.\n"
        "  1. pnpm [recommended]\n"
        "     fast\n"
        "     strict\n"
        "  2. npm\n"
        "  3. Other…\n"
        "Choose 1-3, or type an answer of your own (an empty line skips).\n"
        "> "
    )


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("2\n", Item("pkg", ["npm"])),
        (" 3 \n", Item("pkg", ["yarn"])),
        ("NPM\n", Item("pkg", ["npm"])),
        ("bun, please\n", Item("pkg", custom="bun, please")),
        ("\n", Item("pkg")),
        ("9\n0\n1\n", Item("pkg", ["pnpm (Recommended)"])),
        ("4\nbun\n", Item("pkg", custom="bun")),  # the Other entry asks for the text
        ("4\n\n", Item("pkg")),
    ],
)
async def test_single_select_takes_a_number_a_label_or_text_of_ones_own(
    typed: str, expected: AskUserQuestionAnswerItem
) -> None:
    answer, _ = await run_console(typed)
    assert answer == AskUserQuestionAnswer([expected])


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("2\n", ["2"]),  # the label "2", not the option numbered 2
        ("4\n", ["4"]),  # the label "4", not the "Other…" entry numbered 4
        (" 8 \n", ["8"]),
        ("1\n", ["2"]),  # no label: the option numbered 1
        ("3\n", ["8"]),
    ],
)
async def test_a_label_that_is_a_number_wins_over_the_option_of_that_number(
    typed: str, expected: list[str]
) -> None:
    workers = AskUserQuestionItem(
        "workers", "How many?", options=[Option("2"), Option("4"), Option("8")]
    )
    answer, _ = await run_console(typed, workers)
    assert answer == AskUserQuestionAnswer([Item("workers", expected)])


async def test_a_number_out_of_range_re_prompts_with_one_message_for_both_kinds() -> None:
    _, screen = await run_console("9\n2\n")
    assert "There is no option 9: the options are numbered 1-4.\n> " in screen
    assert "  4. Other…\n" in screen
    _, screen = await run_console("1 9\n2\n", MULTI)
    assert "There is no option 9: the options are numbered 1-4.\n> " in screen


async def test_a_single_option_still_offers_other_and_a_range() -> None:
    only = AskUserQuestionItem("only", "Go?", options=[Option("yes")])
    answer, screen = await run_console("2\nlater\n", only)
    assert answer == AskUserQuestionAnswer([Item("only", custom="later")])
    assert "Choose 1-2, or type an answer of your own (an empty line skips).\n" in screen
    assert "Choose 1-1" not in screen


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("3, 1\n", Item("checks", ["types", "tests"])),
        ("2 2 1 2\n", Item("checks", ["lint", "tests"])),
        ("1,,3\n", Item("checks", ["tests", "types"])),
        ("1 4\nrelease notes\n", Item("checks", ["tests"], custom="release notes")),
        ("4\n\n", Item("checks")),
        ("\n", Item("checks")),
        ("1 x\n5\n2\n", Item("checks", ["lint"])),
    ],
)
async def test_multi_select_takes_numbers_in_order_without_repeats(
    typed: str, expected: AskUserQuestionAnswerItem
) -> None:
    answer, _ = await run_console(typed, MULTI)
    assert answer == AskUserQuestionAnswer([expected])


async def test_multi_select_bad_input_re_prompts() -> None:
    _, screen = await run_console("1 x\n2\n", MULTI)
    assert (
        "Not understood: 'x'. Enter numbers from 1 to 4, separated by commas or spaces.\n" in screen
    )
    assert "  4. Other…\n" in screen


async def test_an_option_less_question_takes_free_text() -> None:
    answer, screen = await run_console("  ship it  \n", FREE)
    assert answer == AskUserQuestionAnswer([Item("notes", custom="ship it")])
    assert "Type your answer (an empty line skips).\n" in screen


async def test_a_batch_is_asked_in_order_and_skips_are_kept() -> None:
    answer, screen = await run_console("2\n\nnothing\n", pkg_question(), MULTI, FREE)
    assert answer == AskUserQuestionAnswer(
        [Item("pkg", ["npm"]), Item("checks"), Item("notes", custom="nothing")]
    )
    assert (
        screen.index("Question 1/3")
        < screen.index("Question 2/3 · CI")
        < screen.index("Question 3/3")
    )


@pytest.mark.parametrize("typed", ["", "2\n"])
async def test_end_of_input_cancels(typed: str) -> None:
    error, _ = await run_console(typed, pkg_question(), MULTI)
    assert isinstance(error, UserInteractionError)
    assert error.code == ErrorCode.ASK_CANCELLED
    assert error.message == "input ended before the question was answered"


async def test_a_last_line_without_newline_is_still_read() -> None:
    answer, _ = await run_console("2\n1", pkg_question(), MULTI)
    assert answer == AskUserQuestionAnswer([Item("pkg", ["npm"]), Item("checks", ["tests"])])


async def test_a_plan_review_is_titled_and_marks_the_approving_option() -> None:
    question = AskUserQuestionItem(
        "plan",
        "Approve?",
        detail="# Plan",
        options=[Option("Revise"), Option("Approve")],
        intent=PlanReviewIntent("Approve"),
    )
    answer, screen = await run_console("1\n", question)
    assert answer == AskUserQuestionAnswer([Item("plan", ["Approve"])])
    assert "── Plan review ──\n" in screen
    assert "  1. Approve [approves the plan]\n  2. Revise\n" in screen  # as every UI orders it


async def test_model_text_never_reaches_the_terminal_as_control_sequences() -> None:
    # ask() refuses control characters, so call the provider directly, as a relay might.
    evil = "\x1b]0;pwned\x07\x1b[2J\u202e"
    question = AskUserQuestionItem(
        "q",
        f"Q{evil}",
        header=f"H{evil}",
        detail=f"D{evil}",
        options=[Option(f"L{evil}", f"d{evil}")],
    )
    output = io.StringIO()
    provider = ConsoleProvider(io.StringIO("1\n"), output)
    await provider.ask(AskUserQuestionRequest([question]))
    screen = output.getvalue()
    assert not any(ch in screen for ch in "\x1b\x07\u202e")
    assert screen.count("\\x1b]0;pwned\\x07\\x1b[2J\\u202e") == 5


class PromptWatch(io.StringIO):
    """Output that tells when the provider has prompted for input."""

    def __init__(self) -> None:
        super().__init__()
        self.prompted = asyncio.Event()

    def write(self, text: str, /) -> int:
        if text.endswith("> "):
            self.prompted.set()
        return super().write(text)


@pytest.fixture
def pipe() -> Iterator[tuple[io.TextIOWrapper, io.TextIOWrapper]]:
    read_fd, write_fd = os.pipe()
    reader = os.fdopen(read_fd, "r", encoding="utf-8")
    writer = os.fdopen(write_fd, "w", encoding="utf-8", buffering=1)
    yield reader, writer
    reader.close()
    if not writer.closed:
        writer.close()


async def test_through_a_real_pipe(pipe: tuple[io.TextIOWrapper, io.TextIOWrapper]) -> None:
    reader, writer = pipe
    provider = ConsoleProvider(reader, io.StringIO())
    writer.write("2\n1 3\nfree text ✓\n")
    with provide(provider):
        answer = await ask(AskUserQuestionRequest([pkg_question(), MULTI, FREE]))
    assert answer == AskUserQuestionAnswer(
        [
            Item("pkg", ["npm"]),
            Item("checks", ["tests", "types"]),
            Item("notes", custom="free text ✓"),
        ]
    )
    writer.close()
    with provide(provider), pytest.raises(UserInteractionError) as info:
        await ask(AskUserQuestionRequest([FREE]))
    assert info.value.code == ErrorCode.ASK_CANCELLED


async def test_a_very_long_line_is_read_whole_and_the_lines_after_it_too(
    pipe: tuple[io.TextIOWrapper, io.TextIOWrapper],
) -> None:
    reader, writer = pipe
    long = "x" * 1_000_000 + "é"  # many reads of the pipe, then a two-byte character
    lines = _LineReader(reader)

    def send() -> None:
        writer.write(f"{long}\r\nnext\n\nlast")
        writer.close()

    sending = asyncio.create_task(asyncio.to_thread(send))
    assert await lines.readline() == long
    assert [await lines.readline() for _ in range(4)] == ["next", "", "last", None]
    await sending


async def test_an_abort_leaves_no_reader_behind(
    pipe: tuple[io.TextIOWrapper, io.TextIOWrapper],
) -> None:
    reader, writer = pipe
    output = PromptWatch()
    provider = ConsoleProvider(reader, output)
    controller = AbortController()
    with provide(provider):
        pending = asyncio.create_task(
            ask(AskUserQuestionRequest([pkg_question()], signal=controller.signal))
        )
        await output.prompted.wait()
        controller.abort()
        with pytest.raises(UserInteractionError) as info:
            await pending
        assert info.value.code == ErrorCode.ASK_ABORTED
        loop = asyncio.get_running_loop()
        assert not loop.remove_reader(reader.fileno()), "a reader was left watching the input"
        writer.write("3\n")  # the next ask gets this line: nothing swallowed it
        answer = await ask(AskUserQuestionRequest([pkg_question()]))
    assert answer.answers[0].selected == ("yarn",)


async def test_text_read_past_one_answer_is_kept_for_the_next_ask(
    pipe: tuple[io.TextIOWrapper, io.TextIOWrapper],
) -> None:
    reader, writer = pipe
    provider = ConsoleProvider(reader, io.StringIO())
    writer.write("1\n2\n")
    with provide(provider):
        first = await ask(AskUserQuestionRequest([pkg_question()]))
        second = await ask(AskUserQuestionRequest([pkg_question()]))
    assert [first.answers[0].selected, second.answers[0].selected] == [
        ("pnpm (Recommended)",),
        ("npm",),
    ]


async def test_concurrent_asks_are_served_one_at_a_time_in_order() -> None:
    output = io.StringIO()
    with provide(ConsoleProvider(io.StringIO("1\n2\n"), output)):
        first, second = await asyncio.gather(
            ask(AskUserQuestionRequest([pkg_question()])),
            ask(AskUserQuestionRequest([FREE])),
        )
    assert first.answers[0].selected == ("pnpm (Recommended)",)
    assert second.answers[0].custom == "2"


def run_command(*args: str, typed: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "interaction", *args],
        input=typed,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )


def test_the_demo_through_real_pipes_prints_the_answer_as_json() -> None:
    result = run_command("demo", typed="1\n3 1 3\nship it\n1\n")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "answers": [
            {"id": "pkg", "selected": ["pnpm (Recommended)"]},
            {"id": "checks", "selected": ["types", "tests"]},
            {"id": "notes", "selected": [], "custom": "ship it"},
            {"id": "plan", "selected": ["Approve"]},
        ]
    }
    assert "Question 1/3 · Package manager" in result.stderr
    assert "── Plan review · Plan ──" in result.stderr


def test_the_demo_with_bad_input_skips_and_custom_text() -> None:
    result = run_command("demo", typed="7\nbun\n9\n\n\nRevise it\n")
    assert result.returncode == 0, result.stderr
    assert "There is no option 7" in result.stderr
    assert "There is no option 9: the options are numbered 1-4." in result.stderr
    assert json.loads(result.stdout)["answers"] == [
        {"id": "pkg", "selected": [], "custom": "bun"},
        {"id": "checks", "selected": []},
        {"id": "notes", "selected": []},
        {"id": "plan", "selected": [], "custom": "Revise it"},
    ]


def test_the_demo_at_end_of_input_exits_1_with_the_code() -> None:
    result = run_command("demo", typed="1\n")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.endswith(
        "interaction: input ended before the question was answered (ASK_CANCELLED)\n"
    )


def test_the_console_script_is_installed() -> None:
    script = os.path.join(os.path.dirname(sys.executable), "interaction")
    result = subprocess.run([script, "--version"], capture_output=True, text=True, check=True)
    assert result.stdout.startswith("interaction 0.")
