"""What the terminal UI draws: wrapping, Markdown, escaping, windowing and paging."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prompt_toolkit.utils import get_cwidth

from interaction import (
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    PlanReviewIntent,
)
from interaction._demo import DEMO_BATCH
from interaction.flow import BatchFlow, Row
from interaction.terminal import _view
from interaction.terminal._markdown import markdown
from interaction.terminal._text import Fragments, Line, plain, wrap
from interaction.terminal._view import Screen, Viewport, paint
from interaction.terminal._view import summary as batch_summary_of

from .helpers import pkg_question
from .strategies import requests

Option = AskUserQuestionOption
EVIL = "\x1b[31mred\x1b]0;title\x07\u202eevil\x9b"
EVIL_SHOWN = "\\x1b[31mred\\x1b]0;title\\x07\\u202eevil\\x9b"


def rows(fragments: list[Fragments]) -> list[str]:
    return [plain(row).rstrip() for row in fragments]


def screen(flow: BatchFlow, width: int = 80, height: int = 24, view: Viewport | None = None) -> str:
    shown: Screen = paint(flow, view or Viewport(), width, height)
    typing = flow.mode == "text" and not flow.reviewing
    field = [plain(shown.field_prompt) + flow.draft.text] if typing else []
    return "\n".join([*rows(shown.above), *field, *rows(shown.below)])


def batch_summary(batch: BatchFlow) -> list[Fragments]:
    return batch_summary_of(batch, 80)


def flow(*questions: AskUserQuestionItem) -> BatchFlow:
    return BatchFlow(AskUserQuestionRequest(questions or [pkg_question()]))


# ---------------------------------------------------------------------- wrapping


def test_wrap_breaks_between_words_under_the_hang() -> None:
    line = Line([("", "alpha beta gamma")], "• ", "  ")
    assert rows(wrap(line, 10)) == ["• alpha", "  beta", "  gamma"]


def test_wrap_cuts_a_word_wider_than_the_row_and_counts_wide_characters() -> None:
    assert rows(wrap(Line([("", "abcdefghij")]), 4)) == ["abcd", "efgh", "ij"]
    assert rows(wrap(Line([("", "漢字漢字漢")]), 5)) == ["漢字", "漢字", "漢"]
    assert rows(wrap(Line([("", "漢")]), 1)) == ["漢"]  # wider than the row: shown, not lost


def test_code_is_cut_at_the_width_not_reflowed() -> None:
    assert rows(wrap(Line([("", "a b c d e f")], reflow=False), 5)) == ["a b c", " d e", "f"]


def test_styles_survive_wrapping() -> None:
    wrapped = wrap(Line([("bold", "one two"), ("", " three")]), 8)
    assert wrapped == [
        [("bold", "one"), ("bold", " "), ("bold", "two"), ("", " ")],
        [("", "three")],
    ]


@given(st.text(st.characters(blacklist_categories=["Cc", "Cs"]), max_size=80), st.integers(2, 30))
def test_wrapped_rows_fit_and_lose_no_text(text: str, width: int) -> None:
    wrapped = wrap(Line([("", text)], "> ", "  "), width)
    for row in wrapped:  # a row is wider only when one character is all it holds
        assert get_cwidth(plain(row)) <= width or len(plain(row)[2:]) == 1
    kept = "".join(plain(row)[2:] for row in wrapped)
    assert "".join(kept.split()) == "".join(text.split())


# ---------------------------------------------------------------------- markdown


def test_markdown_styles_headings_emphasis_code_lists_quotes_and_links() -> None:
    lines = markdown(
        "# Plan\n## Steps\n- **bold** and *em* and `code`\n3. _under_ [docs](https://x.y)\n"
        "> said\n---\n```\n  if x:\n```\nplain",
        "base",
    )
    assert [(line.indent, plain(line.fragments)) for line in lines] == [
        ("", "Plan"),
        ("", "Steps"),
        ("• ", "bold and em and code"),
        ("3. ", "under docs <https://x.y>"),
        ("│ ", "said"),
        ("", "─" * 24),
        ("  ", "  if x:"),
        ("", "plain"),
    ]
    assert lines[0].fragments == [("base class:md.h1", "Plan")]
    assert lines[1].fragments == [("base class:md.h", "Steps")]
    assert lines[2].fragments == [
        ("base class:md.strong", "bold"),
        ("base", " and "),
        ("base class:md.em", "em"),
        ("base", " and "),
        ("base class:md.code", "code"),
    ]
    assert lines[2].hang == "  "
    assert lines[3].fragments[0] == ("base class:md.em", "under")
    assert lines[6].reflow is False


def test_markdown_leaves_what_it_does_not_know_as_written() -> None:
    lines = markdown("a * b * c and snake_case_name and 5 * 3 and **", "")
    assert lines[0].fragments == [("", "a * b * c and snake_case_name and 5 * 3 and **")]


# ---------------------------------------------------------------------- screens


def test_the_generic_screen() -> None:
    question = pkg_question(
        header="Tools",
        detail="Pick **one**.",
        options=[Option("pnpm (Recommended)", "fast\nstrict"), Option("npm")],
    )
    assert screen(flow(question)) == (
        "── Tools ──\n"
        "Which package manager?\n"
        "  Pick one.\n"
        "\n"
        "❯ 1. pnpm [recommended]\n"
        "     fast\n"
        "     strict\n"
        "  2. npm\n"
        "  3. Other…\n"
        "\n"
        "↑↓ move · 1-3 jump · Enter choose · Tab own answer · s skip · Esc dismiss"
    )


def test_the_multi_select_screen_shows_ticks_the_order_chosen_and_the_field() -> None:
    checks = AskUserQuestionItem(
        "checks", "Which?", multi_select=True, options=[Option("a"), Option("b (Recommended)")]
    )
    batch = flow(pkg_question(), checks)
    batch.enter()
    batch.move(1)
    batch.toggle()
    batch.move(-1)
    batch.toggle()
    batch.open_text()
    batch.set_text("c")
    assert screen(batch) == (
        "✓ Which package manag…  ● Which?  ○ Submit\n"
        "Which?\n"
        "\n"
        "  [x] 1. a\n"
        "  [x] 2. b [recommended]\n"
        "❯ [x] 3. Other: c\n"
        "Chosen: b, a, “c”\n"  # the own words are chosen too
        "\n"
        "Enter confirm · Tab/Esc options · Ctrl-S skip · Shift-Tab back"
    )


def test_long_own_words_on_a_multi_select_take_two_rows_and_leave_the_options_be() -> None:
    checks = AskUserQuestionItem("checks", "Which?", multi_select=True, options=[Option("a")])
    batch = flow(checks)
    batch.toggle()
    batch.set_text("typed words " * 3)
    assert screen(batch, width=12, height=12).split("\n") == [
        "── Question",
        "──",
        "Which?",
        "❯ [x] 1. a",  # the cursor's row stays on the screen
        "  ↓ 1 more",
        "Chosen: a, “",
        "        typ…",  # the rest is in the review step
        "↑↓ move",
    ]


def test_the_plan_review_screen_puts_approve_first_and_shows_the_focused_description() -> None:
    plan = AskUserQuestionItem(
        "plan",
        "Approve?",
        header="Plan",
        detail="# Steps\n1. Build.",
        options=[Option("Revise", "Send it back"), Option("Approve")],
        intent=PlanReviewIntent("Approve"),
    )
    batch = flow(plan)
    assert screen(batch) == (
        "── Plan review · Plan ──\n"
        "Approve?\n"
        "  Steps\n"
        "  1. Build.\n"
        "\n"
        "❯[ Approve ]  [ Revise ]  [ Other… ]\n"
        "\n"
        "←→ choose · Enter confirm · Tab own words · s skip · Esc dismiss"
    )
    batch.move(1)
    assert " [ Approve ] ❯[ Revise ]  [ Other… ]\n  Send it back\n" in screen(batch)


def test_model_text_is_shown_escaped_everywhere() -> None:
    question = AskUserQuestionItem(
        "x",
        f"Q {EVIL}",
        header=f"H {EVIL}",
        detail=f"# D {EVIL}",
        options=[Option(f"L {EVIL}", f"Desc {EVIL}")],
    )
    shown = screen(flow(question), width=200)
    assert shown.count(EVIL_SHOWN) == 5
    assert not any(char in shown for char in "\x1b\x07\x9b\u202e")


def test_a_free_text_question_is_a_field() -> None:
    batch = flow(AskUserQuestionItem("notes", "Anything else?"), pkg_question())
    batch.set_text("so far")
    assert screen(batch) == (
        "● Anything else?  ○ Which package manag…  ○ Submit\n"
        "Anything else?\n"
        "\n"
        "❯ so far\n"
        "\n"
        "Enter confirm (empty skips) · Tab next · Esc dismiss"
    )


def test_hints_offer_back_after_the_first_question_and_wrap_between_hints() -> None:
    batch = flow(pkg_question(), pkg_question(id="two"))
    assert "← back" not in screen(batch, width=40)
    batch.skip()
    assert screen(batch, width=40).endswith(
        "\n↑↓ move · 1-4 jump · Enter choose\no own answer · s skip · Tab/→ next\n"
        "← back · Esc dismiss"
    )


def test_long_option_lists_are_windowed_around_the_cursor() -> None:
    many = pkg_question(options=[Option(f"option {n}") for n in range(1, 21)])
    batch, view = flow(many), Viewport()
    hints = "↑↓ move · 1-21 jump · Enter choose · Tab own answer · s skip · Esc dismiss"
    # The blank rows go first: each one shows one more option.
    assert screen(batch, height=12, view=view) == (
        "── Question ──\n"
        "Which package manager?\n"
        "❯  1. option 1\n"  # the numbers line up with 10 and on
        + "".join(f"   {n}. option {n}\n" for n in range(2, 8))
        + f"  ↓ 14 more\n{hints}"
    )
    batch.move(-1)  # wraps to the Other row, at the end
    assert screen(batch, height=12, view=view) == (
        "── Question ──\n"
        "Which package manager?\n"
        "  ↑ 14 more\n"
        + "".join(f"  {n}. option {n}\n" for n in range(15, 21))
        + f"❯ 21. Other…\n{hints}"
    )


def test_a_paint_builds_only_the_options_it_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []
    option = _view._option

    def counted(batch: BatchFlow, number: int, row: Row) -> list[Line]:
        built.append(number)
        return option(batch, number, row)

    monkeypatch.setattr(_view, "_option", counted)
    builds = []
    for count in (1_000, 20_000):
        options = [Option(f"option {n}", "said" if n % 3 else None) for n in range(1, count + 1)]
        batch, view = flow(pkg_question(options=options)), Viewport()
        assert batch.rows is batch.rows  # built once, not per read
        built.clear()
        first = screen(batch, height=30, view=view).split("\n")
        assert first[2] == f"❯ {1:>{len(str(count + 1))}}. option 1"  # no blank row above
        builds.append(len(built))
        batch.move(-1)  # wraps to the Other row, at the end
        built.clear()
        last = screen(batch, height=30, view=view).split("\n")
        builds.append(len(built))
        assert f"❯ {count + 1}. Other…" in last
        up = next(int(m[1]) for row in last if (m := re.match(r"  ↑ (\d+) more", row)))
        numbers = [int(m[1]) for row in last if (m := re.match(r"^[❯ ] +(\d+)\. ", row))]
        assert numbers == list(range(up + 1, count + 2))
    # As many options built for 20,000 as for 1,000: a few screens' worth, not all of them.
    assert builds[:2] == builds[2:]
    assert max(builds) <= 2 * 30


def test_a_long_detail_pages() -> None:
    detail = "\n".join(f"line {n}" for n in range(1, 41))
    batch, view = flow(pkg_question(detail=detail)), Viewport()
    first = screen(batch, height=20, view=view)
    assert "  line 1\n" in first
    assert "line 40" not in first
    assert "⋯ lines 1-" in first
    assert "PgUp/PgDn scroll" in first
    page = view.page
    view.scroll(1)
    second = screen(batch, height=20, view=view)
    assert f"  line {page + 1}\n" in second
    assert f"⋯ lines {page + 1}-{2 * page} of 40" in second
    view.scroll(100)
    assert "  line 40\n" in screen(batch, height=20, view=view)
    view.scroll(-100)
    assert "⋯ lines 1-" in screen(batch, height=20, view=view)
    assert len(first.split("\n")) <= 20


def test_a_narrow_terminal_wraps_rather_than_clips() -> None:
    question = pkg_question(
        question="Which package manager should this rather large project use from now on?",
        options=[Option("pnpm (Recommended)", "Fast, strict and saves a lot of disk space")],
    )
    shown = screen(flow(question), width=24)
    assert all(get_cwidth(row) <= 24 for row in shown.split("\n"))
    words = " ".join(shown.split())
    assert "Which package manager should this rather large project use from now on?" in words
    assert "Fast, strict and saves a lot of disk space" in words


def test_a_very_small_terminal_keeps_the_cursor_row_and_one_row_of_hints() -> None:
    batch = flow(pkg_question(detail="a\nb\nc\nd"))
    batch.move(2)
    for height in range(3, 12):
        shown = screen(batch, width=30, height=height).split("\n")
        assert len(shown) <= height - 1, height
        assert "❯ 3. yarn" in shown, height
        assert shown[-1].startswith("↑↓ move"), height


def test_a_tiny_terminal_keeps_whole_hints_and_the_header_row() -> None:
    tiny = paint(flow(AskUserQuestionItem("notes", "Anything else?")), Viewport(), 20, 5)
    assert rows(tiny.above) == ["── Question ──"]
    assert rows(tiny.below) == ["Enter confirm (empty", "skips)"]  # one hint, wrapped whole
    batch = flow(pkg_question(detail="a\nb\nc\nd"))
    batch.move(2)
    for height in range(4, 10):
        shown = screen(batch, width=30, height=height).split("\n")
        assert shown[0] == "── Question ──", height
        assert "❯ 3. yarn" in shown, height
        assert shown[-1] == "↑↓ move · 1-4 jump", height  # whole hints, never a piece of one


def test_a_plan_review_with_a_huge_option_keeps_the_header_the_buttons_and_the_hints() -> None:
    plan = AskUserQuestionItem(
        "plan",
        "Approve this plan? " + "It is long. " * 8,
        detail="# Plan\n" + "\n".join(f"{n}. step" for n in range(1, 80)),
        options=[Option("Approve"), Option("Revise " + "every step of it " * 12)],
        intent=PlanReviewIntent("Approve"),
    )
    batch = flow(plan)
    for _ in range(3):
        shown = screen(batch, width=40, height=12).split("\n")
        assert len(shown) <= 11
        assert shown[0] == "── Plan review ──"
        assert any("[ Approve ]" in row for row in shown)
        assert any("Other… ]" in row for row in shown)
        assert any("❯[" in row for row in shown)
        hints = shown[-1].split(" · ")  # one row of whole hints
        assert hints[0] == "←→ choose", shown
        assert set(hints) <= PLAN_HINTS, shown
        batch.move(1)


PLAN_HINTS = {"←→ choose", "Enter confirm", "Tab own words", "s skip", "↑↓ Home End scroll"}
PLAN_HINTS |= {"Esc dismiss", "PgUp/PgDn scroll"}


@given(
    requests(),
    st.lists(st.sampled_from(["down", "toggle", "open", "type", "skip", "next"]), max_size=12),
    st.integers(12, 60),
    st.integers(12, 120),
)
def test_any_screen_fits_its_terminal_and_shows_the_cursor(
    request: AskUserQuestionRequest, actions: list[str], height: int, width: int
) -> None:
    batch = BatchFlow(request)
    for action in actions:
        if action == "skip" and batch.index < len(batch.questions) - 1:
            batch.skip()
        elif action == "down":
            batch.move(1)
        elif action == "toggle" and batch.mode == "list" and batch.multi:
            batch.toggle()
        elif action == "open":
            batch.open_text()
        elif action == "type":
            batch.set_text("typed words " * 3)
        elif action == "next":
            batch.forward()
    shown = paint(batch, Viewport(), width, height)
    drawn = rows(shown.above) + rows(shown.below)
    field_rows = 0
    if batch.reviewing:
        assert any(row.startswith("Enter send") for row in drawn)
    elif batch.mode == "text":  # prompt_toolkit wraps the field beside its prompt
        beside = width - get_cwidth(plain(shown.field_prompt))
        field_rows = -(-(get_cwidth(batch.draft.text) + 1) // beside)
        assert plain(shown.field_prompt).startswith("❯ ")
    elif batch.plan_review:
        assert any("❯[" in row for row in drawn)
    else:
        assert any(row.startswith("❯ ") for row in drawn)
    assert len(shown.above) + field_rows + len(shown.below) <= height - 1
    for row in drawn:
        assert get_cwidth(row) <= width or len(row.strip()) == 1


def test_the_summary_marks_skips_shows_labels_as_drawn_and_keeps_line_breaks() -> None:
    notes = AskUserQuestionItem("notes", "Anything else?", header="Notes")
    batch = flow(pkg_question(), notes, AskUserQuestionItem("later", "Later?"))
    batch.enter()  # pnpm (Recommended)
    batch.set_text("line one\nline two")
    batch.submit_text()
    batch.skip()
    batch.enter()  # the review step sends
    shown = batch_summary(batch)
    assert rows(shown) == [
        "✓ Which package manager?: pnpm",
        '✓ Notes: "line one',
        '    line two"',
        "- Later?: (skipped)",
    ]
    assert shown[0][0] == ("class:summary.ok", "✓")
    assert shown[3][0] == ("class:summary.skip", "-")


def test_option_numbers_line_up_from_ten_options_on() -> None:
    ten = pkg_question(options=[Option(f"o{n}", "said") for n in range(1, 10)])
    shown = screen(flow(ten), height=40).split("\n")
    assert shown[3:6] == ["❯  1. o1", "      said", "   2. o2"]
    assert "  10. Other…" in shown


# ---------------------------------------------------------------------- the batch


NOTES = AskUserQuestionItem("notes", "Anything else the agent should know?")
CI = AskUserQuestionItem(
    "checks", "Which checks?", header="CI", multi_select=True, options=[Option("tests")]
)


def three() -> BatchFlow:
    return flow(pkg_question(header="Package manager"), CI, NOTES)


def test_a_single_question_has_no_strip_no_count_and_no_review() -> None:
    batch = flow(pkg_question())
    assert screen(batch).split("\n")[0] == "── Question ──"
    assert "Submit" not in screen(batch)
    batch.enter()
    assert batch.done
    assert batch.answer().answers[0].selected == ("pnpm (Recommended)",)


def test_the_strip_marks_answered_skipped_current_and_open() -> None:
    batch = three()
    assert screen(batch).split("\n")[0] == (
        "● Package manager  ○ CI  ○ Anything else the a…  ○ Submit"
    )
    batch.enter()
    batch.skip()
    assert screen(batch).split("\n")[0] == (
        "✓ Package manager  - CI  ● Anything else the a…  ○ Submit"
    )
    batch.goto(1)  # revisiting a skipped question: the current mark wins
    assert screen(batch).split("\n")[0] == (
        "✓ Package manager  ● CI  ○ Anything else the a…  ○ Submit"
    )
    strip = paint(batch, Viewport(), 80, 24).above[0]
    assert ("class:strip.answered", "✓") in strip
    assert ("class:strip.current", "CI") in strip


def test_the_strip_shortens_names_then_windows_round_the_current_one() -> None:
    batch = three()
    batch.forward()
    assert screen(batch, width=40).split("\n")[0] == "○ Package…  ● CI  ○ Anythin…  ○ Submit"
    batch.back()  # the current name is the last to shorten
    assert screen(batch, width=40).split("\n")[0] == "● Package manager  ○ CI  ○ A…  ○ Submit"
    assert screen(batch, width=30).split("\n")[0] == "● Pac…  ○ CI  ○ A…  ○ Submit"
    batch.forward()
    assert screen(batch, width=30).split("\n")[0] == "○ Pac…  ● CI  ○ Any…  ○ Submit"
    assert screen(batch, width=16).split("\n")[0] == "… ● CI  ○ A… …"
    batch.goto(3)
    assert screen(batch, width=16).split("\n")[0] == "… ○ A…  ● Submit"
    for width in range(12, 60):
        assert get_cwidth(screen(batch, width=width).split("\n")[0]) <= width


def test_the_review_lists_every_answer_and_says_open_ones_are_skips() -> None:
    batch = three()
    batch.move(1)
    batch.enter()  # npm
    batch.forward()  # CI left open
    batch.set_text("line one\nline two")
    batch.submit_text()
    assert batch.reviewing
    assert screen(batch) == (
        "✓ Package manager  ○ CI  ✓ Anything else the a…  ● Submit\n"
        "Review your answers\n"
        "\n"
        "✓ Package manager: npm\n"
        "○ CI: (not answered)\n"
        '✓ Anything else the agent should know?: "line one\n'
        '    line two"\n'
        "Questions not answered are sent as skipped.\n"
        "\n"
        "Enter send · ← back · Esc dismiss"
    )
    batch.back()
    assert screen(batch).split("\n")[1] == "Anything else the agent should know?"
    batch.goto(3)
    batch.enter()
    assert batch.done
    assert [item.selected for item in batch.answer().answers] == [("npm",), (), ()]


def test_a_long_review_pages() -> None:
    questions = [pkg_question(id=f"q{n}", header=f"Q{n}") for n in range(1, 5)]
    batch = flow(*questions)
    for _ in questions:
        batch.open_text()
        batch.set_text("a long answer of one's own " * 4)
        batch.submit_text()
    view = Viewport()
    shown = screen(batch, width=40, height=12, view=view).split("\n")
    assert len(shown) <= 11
    assert shown[0].endswith("● Submit")
    assert any(row.startswith("⋯ lines 1-") for row in shown)
    assert shown[-1].endswith("Esc dismiss")


def test_model_text_in_the_strip_and_the_review_is_escaped() -> None:
    evil = AskUserQuestionItem("x", "Q?", header=f"H{EVIL}", options=[Option(f"L {EVIL}")])
    batch = flow(evil, pkg_question())
    batch.enter()
    batch.skip()
    shown = screen(batch, width=300)
    assert shown.split("\n")[0].startswith("✓ H\\x1b[31mred\\x1b]")
    assert f"L {EVIL_SHOWN}" in shown
    assert not any(char in shown for char in "\x1b\x07\x9b\u202e")


def test_small_terminals_with_the_strip_keep_it_the_markers_and_the_hints() -> None:
    long = [Option(f"option {n}", "with a description") for n in range(1, 7)]
    batch = flow(pkg_question(header="Package manager", options=long), CI, NOTES)
    for width, height in ((60, 15), (40, 12)):
        for _ in range(7):
            batch.move(1)
            shown = screen(batch, width=width, height=height).split("\n")
            assert len(shown) <= height - 1
            assert shown[0].startswith("● Package")
            assert shown[-1].endswith("Esc dismiss")
            assert any("❯" in row for row in shown)
            # Every option is either shown or counted by a marker.
            numbers = [int(m[1]) for row in shown if (m := re.match(r"^[❯ ] +(\d+)\. ", row))]
            up = next((int(m[1]) for row in shown if (m := re.match(r"  ↑ (\d+) more", row))), 0)
            down = next((int(m[1]) for row in shown if (m := re.match(r"  ↓ (\d+) more", row))), 0)
            assert numbers == list(range(up + 1, len(batch.rows) - down + 1)), shown


DEMO_CI_HEAD = ["✓ Package…  ● CI  ○ Anythin…  ○ Submit", "Which checks should run on every push?"]
DEMO_CI_HINTS = [
    "↑↓ move · 1-4 jump · Space toggle",
    "Enter confirm · o own answer · s skip",
    "Tab/→ next · ← back · Esc dismiss",
]
LINT = ["         ruff check and ruff format", "         --check"]
DEMO_CI_AT_40_BY_12 = [  # the rows between the question and the hints, the cursor on each option
    ["", "❯ [ ] 1. tests", "  [ ] 2. lint", *LINT, "  ↓ 2 more"],  # a blank row gave way to lint
    ["", "  [ ] 1. tests", "❯ [ ] 2. lint", *LINT, "  ↓ 2 more"],
    # lint would not fit in the place of both blank rows: they stay
    ["", "  ↑ 2 more", "❯ [ ] 3. types", "         mypy --strict", "  [ ] 4. Other…", ""],
    ["", "  ↑ 2 more", "  [ ] 3. types", "         mypy --strict", "❯ [ ] 4. Other…", ""],
]


def test_the_demo_multi_select_at_40_by_12_always_shows_its_markers() -> None:
    batch, view = flow(*DEMO_BATCH), Viewport()
    batch.enter()
    for options in DEMO_CI_AT_40_BY_12:
        shown = screen(batch, width=40, height=12, view=view).split("\n")
        assert shown == [*DEMO_CI_HEAD, *options, *DEMO_CI_HINTS]
        assert len(shown) == 11  # every row used but the spare one
        batch.move(1)


@st.composite
def option_lists(draw: st.DrawFn) -> AskUserQuestionItem:
    """Options of one to four rows each, in numbers that need a window on small terminals."""
    words = st.lists(st.sampled_from(["ruff", "check", "and", "mypy", "--strict"]), max_size=12)
    options = [
        Option(f"option {number}", " ".join(draw(words)) or None)
        for number in range(1, draw(st.integers(1, 12)) + 1)
    ]
    return pkg_question(options=options, multi_select=draw(st.booleans()))


NUMBER = re.compile(r"^[❯ ] (?:\[[x ]\] )? *(\d+)\. ")


@given(
    option_lists(),
    st.booleans(),
    st.integers(0, 12),
    st.integers(24, 80),
    st.integers(6, 30),
)
def test_no_option_is_hidden_without_a_marker_while_rows_stay_empty(
    question: AskUserQuestionItem, batched: bool, moves: int, width: int, height: int
) -> None:
    batch = flow(question, NOTES) if batched else flow(question)
    batch.move(moves)
    drawn = screen(batch, width=width, height=height).split("\n")
    numbers = [int(m[1]) for row in drawn if (m := NUMBER.match(row))]
    up = next((int(m[1]) for row in drawn if (m := re.match(r"  ↑ (\d+) more$", row))), 0)
    down = next((int(m[1]) for row in drawn if (m := re.match(r"  ↓ (\d+) more$", row))), 0)
    assert batch.draft.cursor + 1 in numbers
    if numbers != list(range(up + 1, len(batch.rows) - down + 1)):
        assert len(drawn) == height - 1, drawn  # only when the screen is full


# ---------------------------------------------------------------------- tables and code


def test_a_markdown_table_lines_up_its_columns() -> None:
    table = (
        "| Tool | Speed | Why |\n|:--|:-:|--:|\n| pnpm | fast | `strict` |\n| npm | ok | ships |"
    )
    lines = markdown(f"Intro\n{table}\nafter", "base", 60)
    assert [plain(line.fragments) for line in lines] == [
        "Intro",
        "Tool │ Speed │    Why",
        "─────┼───────┼───────",
        "pnpm │ fast  │ strict",
        "npm  │  ok   │  ships",
        "after",
    ]
    assert lines[1].fragments[0] == ("base class:md.h", "Tool")
    assert ("base class:md.code", "strict") in lines[3].fragments
    assert all(not line.reflow for line in lines[1:5])


def test_a_table_wider_than_the_terminal_is_one_line_per_row() -> None:
    table = "| Tool | Why |\n|---|---|\n| pnpm | fast and strict |\n| npm | ships with Node |"
    assert [plain(line.fragments) for line in markdown(table, "", 20)] == [
        "Tool: pnpm · Why: fast and strict",
        "Tool: npm · Why: ships with Node",
    ]
    assert rows(_detail_rows(table, 20)) == [
        "• Tool: pnpm · Why:",
        "  fast and strict",
        "• Tool: npm · Why:",
        "  ships with Node",
    ]


def test_a_wrapped_record_never_starts_a_row_with_the_colon_after_a_header() -> None:
    for words in range(12, 40):  # from 12 words on the table is wider than 38 cells
        table = "| a | b |\n|---|---|\n| " + "yy " * words + "| x |"
        shown = rows(_detail_rows(table, 38))
        assert not any(row.lstrip().startswith(":") for row in shown), shown
        assert " ".join(" ".join(shown).split()) == "• a: " + "yy " * words + "· b: x"


def test_a_word_made_of_several_styles_wraps_as_one() -> None:
    line = Line([("", "one two "), ("bold", "three"), ("", ", four")])
    assert rows(wrap(line, 12)) == ["one two", "three, four"]
    assert wrap(line, 12)[1][:2] == [("bold", "three"), ("", ",")]


def test_a_pipe_without_a_rule_row_is_not_a_table() -> None:
    lines = markdown("| a | b |\nnext", "")
    assert [plain(line.fragments) for line in lines] == ["| a | b |", "next"]


def test_wrapped_code_keeps_its_indentation() -> None:
    code = "```\ndef f():\n    return call(argument_one, argument_two)\n```"
    assert rows(_detail_rows(code, 30)) == [
        "  def f():",
        "      return call(argument_one",
        "      , argument_two)",
    ]


def _detail_rows(text: str, width: int) -> list[Fragments]:
    return [row for line in markdown(text, "", width) for row in wrap(line, width)]


def test_a_narrow_strip_shows_as_many_entries_round_the_current_one_as_fit() -> None:
    batch = flow(*[pkg_question(id=f"q{n}", header=f"Q{n}") for n in range(1, 9)])
    batch.goto(4)
    assert screen(batch, width=20).split("\n")[0] == "… ○ Q4  ● Q5  ○ Q6 …"
    assert screen(batch, width=26).split("\n")[0] == "… ○ Q4  ● Q5  ○ Q6  ○ Q7 …"
    batch.goto(0)
    assert screen(batch, width=20).split("\n")[0] == "● Q1  ○ Q2  ○ Q3 …"
