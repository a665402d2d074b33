"""The terminal UI in a real terminal (tmux): keystrokes in, the screen and the answer JSON out.

Every run also checks that the terminal came back as it was (see ``Pane.finish``).
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from .terminal_injection import SHOWN
from .tmux import Pane

PKG = {
    "id": "pkg",
    "header": "Package manager",
    "question": "Which package manager?",
    "options": [
        {"label": "pnpm (Recommended)", "description": "Fast and strict"},
        {"label": "npm"},
        {"label": "yarn"},
    ],
}
CHECKS = {
    "id": "checks",
    "question": "Which checks?",
    "multiSelect": True,
    "options": [{"label": "tests"}, {"label": "lint"}, {"label": "types"}],
}
NOTES = {"id": "notes", "question": "Anything else?"}
PLAN = {
    "id": "plan",
    "header": "Plan",
    "question": "Approve this plan?",
    "detail": "# Set up\n1. Add `pyproject.toml`.\n2. Write **CI**.",
    "options": [{"label": "Revise", "description": "Send it back"}, {"label": "Approve"}],
    "intent": {"kind": "plan-review", "approve": "Approve"},
}
INTERACTION = (sys.executable, "-m", "interaction")

Terminal = Callable[..., Pane]


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    """Opens panes in ``tmp_path``; ``terminal(width, height)``."""
    panes: list[Pane] = []

    def open_pane(width: int = 80, height: int = 24) -> Pane:
        directory = tmp_path / f"pane{len(panes)}"
        directory.mkdir()
        panes.append(Pane(directory, width, height))
        return panes[-1]

    yield open_pane
    for pane in panes:
        pane.close()


def ask(
    pane: Pane,
    *questions: object,
    options: tuple[str, ...] = (),
    command: Sequence[str] = INTERACTION,
) -> None:
    request = pane.directory / "request.json"
    request.write_text(json.dumps({"questions": list(questions)}))
    pane.start(*command, "ask", str(request), *options)


def answers(stdout: str) -> list[dict[str, object]]:
    return json.loads(stdout)["answers"]  # type: ignore[no-any-return]


def test_single_select_moves_with_arrows_j_k_and_digits(terminal: Terminal) -> None:
    pane = terminal()
    ask(pane, PKG)
    first = pane.wait_for("❯ 1. pnpm [recommended]")
    assert first == (
        "── Package manager ──\n"  # asked on its own: no strip, no count, no review
        "Which package manager?\n"
        "\n"
        "❯ 1. pnpm [recommended]\n"
        "     Fast and strict\n"
        "  2. npm\n"
        "  3. yarn\n"
        "  4. Other…\n"
        "\n"
        "↑↓ move · 1-4 jump · Enter choose · Tab own answer · s skip · Esc dismiss"
    )
    pane.keys("Up")
    pane.wait_for("❯ 4. Other…")  # wrapped round
    pane.keys("j")
    pane.wait_for("❯ 1. pnpm")
    pane.keys("Down", "Down")
    pane.wait_for("❯ 3. yarn")
    pane.keys("k")
    pane.wait_for("❯ 2. npm")
    pane.keys("3")
    pane.wait_for("❯ 3. yarn")
    pane.keys("Enter")
    assert pane.finish() == (0, '{"answers":[{"id":"pkg","selected":["yarn"]}]}\n')
    assert pane.screen() == "✓ Package manager: yarn"


def test_multi_select_space_toggles_and_keeps_the_order_chosen(terminal: Terminal) -> None:
    pane = terminal()
    ask(pane, CHECKS)
    pane.wait_for("❯ [ ] 1. tests")
    pane.keys("j", "j", "Space")
    pane.wait_for("❯ [x] 3. types")
    pane.keys("k", "k", "Space", "j", "Space", "Space")
    screen = pane.wait_for("❯ [ ] 2. lint")  # lint on and off again
    assert "Chosen: types, tests\n" in screen
    pane.keys("Enter")
    assert answers(pane.finish()[1]) == [{"id": "checks", "selected": ["types", "tests"]}]


def test_other_by_o_or_its_row_and_a_free_text_question(terminal: Terminal) -> None:
    pane = terminal()
    ask(pane, PKG, CHECKS, NOTES)
    pane.wait_for("● Package manager")
    pane.keys("o")  # in a batch Tab moves between questions; o opens the field
    pane.wait_for("❯ 4. Other:")
    pane.type("bun ✓")
    pane.keys("Enter")
    pane.wait_for("● Which checks?")
    pane.keys("Up", "Space")  # the Other row opens the field
    pane.wait_for("❯ [ ] 4. Other:")
    pane.type("docs")
    pane.keys("Tab")
    pane.wait_for("❯ [x] 4. Other: docs")  # back on the options, the text kept
    pane.keys("Enter")
    pane.wait_for("● Anything else?")
    pane.type("free text")
    pane.keys("Enter")
    pane.wait_for("● Submit")
    pane.keys("Enter")
    assert answers(pane.finish()[1]) == [
        {"id": "pkg", "selected": [], "custom": "bun ✓"},
        {"id": "checks", "selected": [], "custom": "docs"},
        {"id": "notes", "selected": [], "custom": "free text"},
    ]


def test_skip_and_back_keep_drafts_and_nothing_is_sent_early(terminal: Terminal) -> None:
    pane = terminal()
    ask(pane, PKG, CHECKS, NOTES)
    pane.wait_for("● Package manager")
    pane.keys("2", "Enter")
    pane.wait_for("● Which checks?")
    pane.keys("Space", "s")
    pane.wait_for("● Anything else?")
    pane.type("draft")
    pane.keys("BTab")
    assert "❯ [x] 1. tests" in pane.wait_for("● Which checks?")
    pane.keys("Left")
    assert "❯ 2. npm" in pane.wait_for("● Package manager")
    assert pane.stdout.read_text() == ""  # nothing answered yet
    pane.keys("Enter", "C-s")
    assert "❯ draft" in pane.wait_for("● Anything else?")
    pane.keys("Enter")
    pane.wait_for("● Submit")
    assert pane.stdout.read_text() == ""  # the review sends, not the last answer
    pane.keys("Enter")
    assert answers(pane.finish()[1]) == [
        {"id": "pkg", "selected": ["npm"]},
        {"id": "checks", "selected": []},
        {"id": "notes", "selected": [], "custom": "draft"},
    ]


def test_plan_review_approve_is_the_default_and_decline_is_beside_it(
    terminal: Terminal,
) -> None:
    approving = terminal()
    ask(approving, PLAN)
    assert approving.wait_for("[ Approve ]") == (
        "── Plan review · Plan ──\n"
        "Approve this plan?\n"
        "  Set up\n"
        "  1. Add pyproject.toml.\n"
        "  2. Write CI.\n"
        "\n"
        "❯[ Approve ]  [ Revise ]  [ Other… ]\n"
        "\n"
        "←→ choose · Enter confirm · Tab own words · s skip · Esc dismiss"
    )
    approving.keys("Enter")
    assert answers(approving.finish()[1]) == [{"id": "plan", "selected": ["Approve"]}]

    declining = terminal()
    ask(declining, PLAN)
    declining.wait_for("❯[ Approve ]")
    declining.keys("Right")
    assert " [ Approve ] ❯[ Revise ]  [ Other… ]\n  Send it back" in declining.wait_for(
        "❯[ Revise ]"
    )
    declining.keys("Enter")
    assert answers(declining.finish()[1]) == [{"id": "plan", "selected": ["Revise"]}]


def test_a_batch_with_an_intent_is_asked_as_the_generic_flow(terminal: Terminal) -> None:
    pane = terminal()
    ask(pane, PLAN, NOTES)
    screen = pane.wait_for("● Plan  ○ Anything else?  ○ Submit")
    assert "❯ 1. Revise" in screen
    assert "  2. Approve" in screen


DISMISSED = (
    "✗ dismissed\n"
    "interaction: the user dismissed ask_user_question without answering (ASK_CANCELLED)"
)


@pytest.mark.parametrize("key", ["Escape", "C-c"])
def test_escape_and_ctrl_c_dismiss_an_untouched_batch_at_once(terminal: Terminal, key: str) -> None:
    pane = terminal(100, 24)
    ask(pane, PKG, NOTES)
    pane.wait_for("● Package manager")
    pane.keys(key)
    assert pane.finish() == (1, "")
    assert pane.screen() == DISMISSED


@pytest.mark.parametrize("keys", [("Escape", "y"), ("C-c", "C-c")], ids=["Esc y", "Ctrl-C twice"])
def test_dismissing_answered_work_asks_first(terminal: Terminal, keys: tuple[str, str]) -> None:
    pane = terminal(100, 24)
    ask(pane, PKG, CHECKS, NOTES)
    pane.wait_for("● Package manager")
    pane.keys("Enter")
    pane.wait_for("● Which checks?")
    pane.keys("Space")
    pane.wait_for("❯ [x] 1. tests")
    pane.keys(keys[0])
    screen = pane.wait_for("Discard 2 answers? y/N")
    assert screen.endswith(
        "Discard 2 answers? y/N\n\ny discard and dismiss · any other key keeps them"
    )
    pane.keys(keys[1])
    assert pane.finish() == (1, "")
    assert pane.screen() == DISMISSED


def test_any_other_key_keeps_the_answers_and_esc_in_a_field_closes_it(terminal: Terminal) -> None:
    pane = terminal(100, 24)
    ask(pane, PKG, NOTES)
    pane.wait_for("● Package manager")
    pane.keys("o")
    pane.wait_for("❯ 4. Other:")
    pane.type("bun")
    pane.keys("Escape")
    pane.wait_for("❯ 4. Other: bun")  # back on the options, the text kept
    pane.keys("Escape")
    pane.wait_for("Discard 1 answer? y/N")
    pane.keys("n")
    screen = pane.wait_for("o own answer")
    assert "Discard" not in screen
    assert "❯ 4. Other: bun" in screen
    pane.keys("Enter")
    pane.wait_for("❯ 4. Other: bun")  # Enter on the row opens the field with the text
    pane.keys("Enter")
    pane.wait_for("● Anything else?")
    pane.type("la")
    pane.keys("C-c")
    pane.wait_for("Discard 2 answers? y/N")
    pane.keys("Escape")  # Esc answers no, too
    pane.wait_for("Shift-Tab back")
    pane.type("ter")
    pane.keys("Enter")
    pane.wait_for("● Submit")
    pane.keys("Enter")
    assert answers(pane.finish()[1]) == [
        {"id": "pkg", "selected": [], "custom": "bun"},
        {"id": "notes", "selected": [], "custom": "later"},
    ]


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (("M-b", "x"), "one xtwo"),
        (("M-b", "M-f", "x"), "one twox"),
        (("M-BSpace", "x"), "one x"),
        (("M-b", "M-d", "x"), "one x"),
    ],
    ids=["Alt-b", "Alt-f", "Alt-Backspace", "Alt-d"],
)
def test_meta_keys_edit_the_text(terminal: Terminal, keys: tuple[str, ...], expected: str) -> None:
    pane = terminal()
    ask(pane, NOTES)
    pane.wait_for("── Question ──")
    pane.type("one two")
    pane.wait_for("❯ one two")
    for key in keys:
        if len(key) == 1:
            pane.type(key)
        else:
            pane.keys(key)
    pane.wait_for(f"❯ {expected}".rstrip())
    pane.keys("Enter")
    assert answers(pane.finish()[1]) == [{"id": "notes", "selected": [], "custom": expected}]


@pytest.mark.parametrize("name", ["TERM", "HUP"])
def test_sigterm_and_sighup_restore_the_terminal_and_abort(terminal: Terminal, name: str) -> None:
    pane = terminal(120, 24)
    pid = pane.directory / "pid"
    request = pane.directory / "request.json"
    request.write_text(json.dumps({"questions": [PKG]}))
    script = f'echo $$ > {pid}; exec "$@"'
    pane.start("sh", "-c", script, "sh", *INTERACTION, "ask", str(request))
    pane.wait_for("── Package manager ──")
    assert pane.flag("cursor_flag") == "0"
    os.kill(int(pid.read_text()), getattr(signal, f"SIG{name}"))
    assert pane.finish() == (1, "")  # finish() checks the stty settings and the cursor
    assert pane.screen() == (
        "✗ stopped by a signal\n"
        f"interaction: ask_user_question was aborted: the process got SIG{name}"
        " before the user answered (ASK_ABORTED)"
    )


def test_a_timeout_while_the_prompt_shows_restores_the_terminal(terminal: Terminal) -> None:
    pane = terminal(100, 24)
    ask(pane, PKG, options=("--timeout", "2"))
    pane.wait_for("── Package manager ──")  # shown before the timeout, or this fails
    assert pane.flag("cursor_flag") == "0"  # the prompt hides the cursor while it shows
    assert pane.finish() == (1, "")  # finish() checks the stty settings and the cursor
    assert pane.screen() == (
        "✗ the question timed out before you answered\n"
        "interaction: ask_user_question timed out before the user answered (ASK_TIMEOUT)"
    )


def test_an_escape_sequence_injection_is_shown_not_obeyed(terminal: Terminal) -> None:
    pane = terminal(100, 24)
    script = Path(__file__).with_name("terminal_injection.py")
    pane.start(sys.executable, "-P", str(script))  # -P: tests/typing must not shadow typing
    screen = pane.wait_for("safe")
    title = pane.flag("pane_title")
    assert title != "pwned"
    assert f"Question {SHOWN}" in screen
    assert f"  Detail {SHOWN}" in screen
    assert f"❯ 1. Label {SHOWN}" in screen
    colours = pane.screen(escapes=True)
    assert not re.search(r"\x1b\[[0-9;]*\b31m", colours), "the injected red was obeyed"
    assert pane.flag("alternate_on") == "0"
    pane.keys("Enter")
    status, stdout = pane.finish()
    assert status == 0
    assert json.loads(stdout)["answers"][0]["selected"][0].startswith("Label \x1b[31mred")
    assert pane.flag("pane_title") == title


def test_a_long_list_is_windowed_and_a_narrow_terminal_wraps(terminal: Terminal) -> None:
    pane = terminal(36, 14)
    many = {
        "id": "many",
        "question": "Which of these many numbered options should the agent use here?",
        "options": [{"label": f"option {n}"} for n in range(1, 16)],
    }
    ask(pane, many)
    first = pane.wait_for("↓")
    assert all(len(row) <= 36 for row in first.split("\n"))
    assert first.split("\n")[:2] == [
        "── Question ──",
        "Which of these many numbered options",
    ]
    assert "  ↓ " in first
    assert "↑ " not in first.replace("↑↓", "")
    pane.keys("Up")
    last = pane.wait_for("❯ 16. Other…")
    assert "  ↑ " in last
    assert "option 1\n" not in last
    pane.keys("Up", "Enter")
    assert answers(pane.finish()[1]) == [{"id": "many", "selected": ["option 15"]}]


def test_page_down_and_up_scroll_a_long_detail(terminal: Terminal) -> None:
    pane = terminal(60, 20)
    ask(pane, {**PKG, "detail": "\n".join(f"step {n}" for n in range(1, 41))})
    first = pane.wait_for("⋯ lines 1-")
    found = re.search(r"⋯ lines 1-(\d+) of 40", first)
    assert found is not None
    page = int(found[1])
    assert f"  step {page}\n" in first
    assert f"  step {page + 1}\n" not in first
    pane.keys("NPage")
    second = pane.wait_for(f"⋯ lines {page + 1}-{2 * page} of 40")
    assert f"  step {page + 1}\n" in second
    assert "  step 1\n" not in second
    pane.keys(*["NPage"] * 10)
    assert "  step 40\n" in pane.wait_for("-40 of 40")
    pane.keys(*["PPage"] * 10)
    pane.wait_for(f"⋯ lines 1-{page} of 40")
    pane.keys("Enter")
    assert answers(pane.finish()[1]) == [{"id": "pkg", "selected": ["pnpm (Recommended)"]}]


WITHOUT_THE_EXTRA = (
    sys.executable,
    "-c",
    "import sys; sys.modules['prompt_toolkit'] = None\n"
    "from interaction.cli import main; sys.exit(main(sys.argv[1:]))",
)


@pytest.mark.parametrize(
    ("command", "options"),
    [(INTERACTION, ("--plain",)), (WITHOUT_THE_EXTRA, ())],
    ids=["--plain", "without the extra"],
)
def test_a_terminal_gets_the_console_provider_with_plain_or_without_the_extra(
    terminal: Terminal, command: Sequence[str], options: tuple[str, ...]
) -> None:
    pane = terminal()
    ask(pane, PKG, options=options, command=command)
    pane.wait_for("Choose 1-4, or type an answer of your own")
    pane.type("2")
    pane.keys("Enter")
    assert answers(pane.finish()[1]) == [{"id": "pkg", "selected": ["npm"]}]


SCREENS = Path(__file__).parent.parent / "docs" / "terminal.md"
SCREEN_BLOCK = re.compile(
    r"(<!-- screen: (?P<name>[\w-]+) -->\n```text\n)(?P<body>.*?)(^```$)", re.S | re.M
)


def test_the_screens_in_the_docs_are_what_the_terminal_shows(terminal: Terminal) -> None:
    """docs/terminal.md shows these captures; INTERACTION_WRITE_SCREENS=1 rewrites them."""
    pane = terminal(72, 22)
    pane.start(*INTERACTION, "demo")
    captured = {"single-select": pane.wait_for("● Package manager")}
    pane.keys("Enter", "Space", "j", "j", "Space")
    captured["multi-select"] = pane.wait_for("❯ [x] 3. types")
    pane.keys("Escape")
    captured["discard"] = pane.wait_for("Discard 2 answers? y/N")
    pane.keys("n")
    pane.wait_for("o own answer")
    pane.keys("o")
    pane.type("docs")
    captured["other"] = pane.wait_for("❯ [x] 4. Other: docs")
    pane.keys("Enter")
    pane.type("Ship it on Friday")
    captured["free-text"] = pane.wait_for("❯ Ship it on Friday")
    pane.keys("Enter")
    captured["review"] = pane.wait_for("● Submit")
    pane.keys("Enter")
    captured["plan-review"] = pane.wait_for("❯[ Approve ]")
    pane.keys("Enter")
    status, stdout = pane.finish()
    captured["done"] = pane.screen()
    assert status == 0
    assert answers(stdout) == [
        {"id": "pkg", "selected": ["pnpm (Recommended)"]},
        {"id": "checks", "selected": ["tests", "types"], "custom": "docs"},
        {"id": "notes", "selected": [], "custom": "Ship it on Friday"},
        {"id": "plan", "selected": ["Approve"]},
    ]
    small = terminal(40, 12)
    small.start(*INTERACTION, "demo")
    captured["small"] = small.wait_for("Esc dismiss")
    small.keys("C-c")
    assert small.finish()[0] == 1
    page = SCREENS.read_text("utf-8")
    if os.environ.get("INTERACTION_WRITE_SCREENS"):
        page = SCREEN_BLOCK.sub(lambda m: f"{m[1]}{captured[m['name']]}\n{m[4]}", page)
        SCREENS.write_text(page, "utf-8")
    documented = {m["name"]: m["body"].removesuffix("\n") for m in SCREEN_BLOCK.finditer(page)}
    assert documented == captured, "run with INTERACTION_WRITE_SCREENS=1 to update the docs"


def test_ask_on_a_terminal_without_a_file_says_it_reads_stdin_and_how_to_end(
    terminal: Terminal,
) -> None:
    pane = terminal(100, 24)
    pane.start(*INTERACTION, "ask")
    assert pane.wait_for("reading a request") == (
        "interaction: reading a request (wire JSON) from stdin; end it with Ctrl-D, or pass a FILE"
    )
    pane.type(json.dumps({"questions": [PKG]}))
    pane.keys("Enter", "C-d")
    pane.wait_for("❯ 1. pnpm [recommended]")  # then the answers come from the terminal
    pane.keys("2", "Enter")
    assert answers(pane.finish()[1]) == [{"id": "pkg", "selected": ["npm"]}]


def test_term_dumb_falls_back_to_the_console_provider(terminal: Terminal) -> None:
    pane = terminal(100, 24)
    ask(pane, PKG, command=("env", "TERM=dumb", *INTERACTION))
    screen = pane.wait_for("Choose 1-4, or type an answer of your own")
    assert screen.startswith(
        "interaction: TERM=dumb cannot draw the terminal UI; asking line by line instead\n"
    )
    pane.type("3")
    pane.keys("Enter")
    assert answers(pane.finish()[1]) == [{"id": "pkg", "selected": ["yarn"]}]


def test_a_timeout_counts_down_while_asking(terminal: Terminal) -> None:
    pane = terminal(100, 24)
    ask(pane, PKG, options=("--timeout", "90"))
    first = pane.wait_for("Time left: 1:")
    assert re.search(r"^Time left: 1:(30|2\d)$", first, re.M), first
    assert first.endswith(
        "\n\n↑↓ move · 1-4 jump · Enter choose · Tab own answer · s skip · Esc dismiss"
    )
    pane.wait_for("Time left: 1:2")  # it counts down while nothing is pressed
    pane.keys("Enter")
    assert answers(pane.finish()[1]) == [{"id": "pkg", "selected": ["pnpm (Recommended)"]}]


@pytest.mark.parametrize(("width", "height"), [(60, 15), (40, 12)])
def test_small_terminals_keep_the_header_the_markers_and_the_hints(
    terminal: Terminal, width: int, height: int
) -> None:
    pane = terminal(width, height)
    pane.start(*INTERACTION, "demo")
    first = pane.wait_for("Esc dismiss")
    rows = first.split("\n")
    strip = rows[0]
    assert strip.startswith("● Package")
    assert strip.endswith("  ○ Submit")
    assert len(rows) < height
    assert all(len(row) <= width for row in rows)
    assert_every_option_counted(rows, 4)
    pane.keys("Up")  # wraps to the last row, Other
    last = pane.wait_for("❯ 4. Other…")
    assert last.split("\n")[0] == strip
    assert "Esc dismiss" in last
    assert_every_option_counted(last.split("\n"), 4)
    pane.keys("Down", "Down")  # the middle option
    middle = pane.wait_for("❯ 2. npm").split("\n")
    assert middle[0] == strip
    assert middle[-1].endswith("Esc dismiss")
    assert_every_option_counted(middle, 4)
    pane.keys("s")  # the multi-select, whose descriptions wrap at 40 columns
    for number, label in enumerate(("tests", "lint", "types", "Other…"), start=1):
        checks = pane.wait_for(f"❯ [ ] {number}. {label}").split("\n")
        assert checks[-1].endswith("Esc dismiss")
        assert_every_option_counted(checks, 4)
        if height == 12:
            assert len(checks) == height - 1  # no row left empty while options are hidden
        pane.keys("j")
    pane.keys("s", "Enter")
    review = pane.wait_for("● Submit").split("\n")
    assert review[0].startswith("- Package")
    assert review[0].endswith("  ● Submit")
    assert "Review your answers" in review
    assert review[-1].endswith("Esc dismiss")
    assert all(len(row) <= width for row in review)
    pane.keys("Enter")
    plan = pane.wait_for("[ Approve ]")
    rows = plan.split("\n")
    assert "── Plan review · Plan ──" in rows
    assert rows[-1].endswith("Esc dismiss")
    assert len(rows) < height + 3  # the summary lines of the batch are above it
    pane.keys("Enter")
    assert answers(pane.finish()[1])[-1] == {"id": "plan", "selected": ["Approve"]}


def assert_every_option_counted(rows: list[str], count: int) -> None:
    """Each of ``count`` options is on the screen or counted by an ``↑/↓ N more`` marker."""
    numbers = [int(m[1]) for row in rows if (m := re.match(r"^[❯ ] (?:\[[x ]\] )?(\d+)\. ", row))]
    up = next((int(m[1]) for row in rows if (m := re.fullmatch(r"  ↑ (\d+) more", row))), 0)
    down = next((int(m[1]) for row in rows if (m := re.fullmatch(r"  ↓ (\d+) more", row))), 0)
    assert numbers == list(range(up + 1, count - down + 1)), rows


def test_a_long_plan_scrolls_with_arrows_home_and_end_and_the_focus_is_not_red(
    terminal: Terminal,
) -> None:
    pane = terminal(40, 12)
    steps = "\n".join(f"{n}. step {n}" for n in range(1, 21))
    ask(pane, {**PLAN, "detail": f"# Plan\n{steps}"})
    first = pane.wait_for("⋯ lines 1-")
    found = re.search(r"⋯ lines 1-(\d+) of 21", first)
    assert found is not None
    shown = int(found[1])
    assert "↑↓ Home End scroll" in first
    pane.keys("j")
    pane.wait_for(f"⋯ lines 2-{shown + 1} of 21")
    pane.keys("Down", "k")
    pane.wait_for(f"⋯ lines 2-{shown + 1} of 21")
    pane.keys("End")
    assert "  20. step 20" in pane.wait_for("-21 of 21")
    pane.keys("Home")
    pane.wait_for(f"⋯ lines 1-{shown} of 21")
    assert "❯[ Approve ]" in pane.screen()  # scrolling never moved the focus
    colours = pane.screen(escapes=True)
    assert "48;5;124" not in colours, "the focus is drawn red"
    assert "\x1b[41m" not in colours, "the focus is drawn red"
    assert "\x1b[7m" in colours  # drawn reversed instead
    pane.keys("Right", "Enter")
    assert answers(pane.finish()[1]) == [{"id": "plan", "selected": ["Revise"]}]


def test_the_strip_and_tab_shift_tab_left_right_revisit_questions_with_drafts_kept(
    terminal: Terminal,
) -> None:
    pane = terminal(100, 24)
    ask(pane, PKG, CHECKS, NOTES)
    first = pane.wait_for("● Package manager")
    assert first.split("\n")[0] == (
        "● Package manager  ○ Which checks?  ○ Anything else?  ○ Submit"
    )
    assert first.split("\n")[-1] == (
        "↑↓ move · 1-4 jump · Enter choose · o own answer · s skip · Tab/→ next · Esc dismiss"
    )
    pane.keys("j", "Tab")  # a cursor moved, nothing chosen
    pane.wait_for("○ Package manager  ● Which checks?  ○ Anything else?  ○ Submit")
    pane.keys("Space", "Right")
    pane.wait_for("○ Package manager  ○ Which checks?  ● Anything else?  ○ Submit")
    pane.type("draft")
    pane.keys("BTab")
    assert "❯ [x] 1. tests" in pane.wait_for("● Which checks?")  # the tick kept
    pane.keys("Left")
    assert "❯ 2. npm" in pane.wait_for("● Package manager")  # the cursor kept
    pane.keys("Enter")
    pane.wait_for("✓ Package manager  ● Which checks?")
    pane.keys("s")
    screen = pane.wait_for("✓ Package manager  - Which checks?  ● Anything else?  ○ Submit")
    assert "❯ draft" in screen  # the text kept
    pane.keys("Tab")  # on without confirming the text: the question stays open
    assert pane.wait_for("● Submit") == (
        "✓ Package manager  - Which checks?  ○ Anything else?  ● Submit\n"
        "Review your answers\n"
        "\n"
        "✓ Package manager: npm\n"
        "- Which checks?: (skipped)\n"
        "○ Anything else?: (not answered)\n"
        "Questions not answered are sent as skipped.\n"
        "\n"
        "Enter send · ← back · Esc dismiss"
    )
    pane.keys("Left")  # Back edits: to the last question, its draft kept
    assert "❯ draft" in pane.wait_for("● Anything else?  ○ Submit")
    pane.keys("Enter")
    review = pane.wait_for("✓ Anything else?  ● Submit")
    assert '✓ Anything else?: "draft"' in review
    assert "not answered" not in review
    pane.keys("b", "BTab")  # b on the review, then Shift-Tab: to the second question
    assert "❯ [x] 1. tests" in pane.wait_for("● Which checks?  ✓ Anything else?")
    pane.keys("Enter")  # confirm the tick that was skipped: on to the third
    pane.wait_for("✓ Which checks?  ● Anything else?")
    pane.keys("Enter")  # confirm the text again: the review
    pane.wait_for("✓ Which checks?  ✓ Anything else?  ● Submit")
    assert pane.stdout.read_text() == ""  # nothing is sent before Enter on the review
    pane.keys("Enter")
    assert answers(pane.finish()[1]) == [
        {"id": "pkg", "selected": ["npm"]},
        {"id": "checks", "selected": ["tests"]},
        {"id": "notes", "selected": [], "custom": "draft"},
    ]
    assert pane.screen() == (
        '✓ Package manager: npm\n✓ Which checks?: tests\n✓ Anything else?: "draft"'
    )


def test_a_table_lines_up_and_wrapped_code_keeps_its_indentation(terminal: Terminal) -> None:
    pane = terminal(40, 24)
    detail = (
        "| Tool | Speed | Notes |\n|---|:-:|---|\n| pnpm | fast | strict |\n| npm | ok | ships |\n"
        "```\nif ready:\n    deploy(region='eu-west-1', replicas=3)\n```"
    )
    ask(pane, {**PKG, "detail": detail})
    screen = pane.wait_for("❯ 1. pnpm")
    assert screen.split("\n")[2:9] == [
        "  Tool │ Speed │ Notes",
        "  ─────┼───────┼───────",
        "  pnpm │ fast  │ strict",
        "  npm  │  ok   │ ships",
        "    if ready:",
        "        deploy(region='eu-west-1', repli",
        "        cas=3)",
    ]
    pane.keys("Enter")
    assert answers(pane.finish()[1]) == [{"id": "pkg", "selected": ["pnpm (Recommended)"]}]


def test_narrowing_with_the_prompt_at_the_bottom_leaves_one_frame_then_the_summary(
    terminal: Terminal,
) -> None:
    """tmux keeps empty rows below the prompt at the bottom when it rewraps; with none
    (the screen filled, as a shell's usually is), each narrowing leaves one frame."""
    pane = terminal(80, 24)
    shell = 'for n in $(seq 1 40); do echo shell line $n >&2; done; exec "$@"'
    pane.start("sh", "-c", shell, "sh", *INTERACTION, "demo")
    pane.wait_for("● Package manager  ○ CI  ○ Anything else the a…  ○ Submit")
    pane.run("resize-window", "-x", "60")
    pane.wait_for("Tab/→ next · Esc dismiss")  # the hints re-packed at 60 columns
    pane.run("resize-window", "-x", "40")
    pane.wait_for("● Package manager  ○ CI  ○ A…  ○ Submit")
    history = pane.run("capture-pane", "-p", "-S", "-")
    assert history.count("Which package manager") == 1
    assert history.count("↑↓ move") == 1
    pane.keys("Enter", "Space", "Enter", "Enter")
    pane.wait_for("● Submit")
    pane.keys("Enter")
    pane.wait_for("[ Approve ]")
    pane.keys("Enter")
    assert pane.finish()[0] == 0
    history = pane.run("capture-pane", "-p", "-S", "-")
    after = history[history.index("shell line 40") :].rstrip().split("\n")
    assert after == [
        "shell line 40",
        "✓ Package manager: pnpm",
        "✓ CI: tests",
        "- Anything else the agent should know",
        "bef…: (skipped)",
        "✓ Plan: Approve",
    ]


def test_from_a_cleared_terminal_resizes_and_the_end_leave_no_copy_in_the_scrollback(
    terminal: Terminal,
) -> None:
    """The prompt starts on the screen's first row: ED from the top-left cell would have
    tmux scroll the whole screen into the scrollback at every redraw (scroll-on-clear)."""
    pane = terminal(80, 24)
    many = {
        "id": "many",
        "header": "Many",
        "question": "Which one?",
        "options": [{"label": f"option {n}"} for n in range(1, 21)],
    }
    ask(pane, many, NOTES)
    hints = "↑↓ move · 1-21 jump · Enter choose · o own answer · s skip · Tab/→ next"
    assert pane.wait_for("  ↓ 3 more").split("\n")[-2:] == [hints, "Esc dismiss"]

    def scrollback() -> str:
        return pane.run("capture-pane", "-p", "-S", "-")

    assert scrollback().count("Which one?") == 1
    for resize, shows in (
        (("-x", "100"), "  ↓ 2 more"),  # wider: the hints take one row, an option more shows
        (("-y", "30"), "  21. Other…"),  # taller: every option
        (("-y", "20"), "  ↓ 6 more"),  # shorter
    ):
        pane.run("resize-window", *resize)
        screen = pane.wait_for(shows)
        assert screen.startswith("● Many  ○ Anything else?  ○ Submit\nWhich one?\n")
        history = scrollback()
        assert history.count("Which one?") == 1, history
        assert history.count("↑↓ move") == 1, history
        assert history.rstrip("\n") == screen, history  # nothing above the prompt
    pane.keys("Enter", "Enter", "Enter")
    assert answers(pane.finish()[1]) == [
        {"id": "many", "selected": ["option 1"]},
        {"id": "notes", "selected": []},
    ]
    assert scrollback().rstrip("\n") == "✓ Many: option 1\n- Anything else?: (skipped)"
