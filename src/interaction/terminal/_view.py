"""What the terminal shows for a :class:`BatchFlow`, for a given terminal size.

Pure: state in, styled rows out. Model text comes escaped from the flow's display model
(:func:`interaction.display.present`) and what the user typed is escaped here, so both are
only ever text. The screen is split in
three for the layout: the part above the text field, the field's prompt, and the part
below it. Long details page (PgUp/PgDn), long option lists are windowed with "more"
markers around the cursor, and everything wraps at the terminal's width. A batch's header
row is a strip of its questions and where each stands; after its last question comes a
review that lists every answer.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.utils import get_cwidth

from .._core import AskUserQuestionAnswerItem, escape_controls
from ..display import ROLE_NAMES, QuestionView
from ..flow import OTHER, BatchFlow, Row
from ._markdown import TAB_SIZE, markdown
from ._text import Fragments, Line, clip, fit, plain, wrap

__all__ = ["Screen", "Viewport", "paint", "summary"]

MARGIN: Final = "  "
CURSOR: Final = "❯ "
SEPARATOR: Final = " · "
SUMMARY_NAME: Final = 40
STRIP_NAMES: Final = (20, 12, 8, 4, 2)
"""The widths names in the strip are shortened to, in turn, until the strip fits: the
other questions' first, then the current one's."""
STRIP_GAP: Final = "  "
SUBMIT: Final = "Submit"
REVIEW_TITLE: Final = "Review your answers"
OPEN_ARE_SKIPS: Final = "Questions not answered are sent as skipped."
MARKS: Final = {
    "answered": ("class:strip.answered", "✓"),
    "skipped": ("class:strip.skipped", "-"),
    "open": ("class:strip.open", "○"),
}
CURRENT_MARK: Final = ("class:strip.current", "●")
MIN_DETAIL_ROWS: Final = 3
MIN_OPTION_ROWS: Final = 4
MIN_FIELD: Final = 12
CHOSEN_ROWS: Final = 2
"""The most rows the ``Chosen:`` line of a multi-select takes; past them it ends in ``…``."""
_SPARE_ROWS: Final = 1  # so the last row never makes the terminal scroll
_FAR: Final = 1 << 30


@dataclass
class Viewport:
    """Scroll positions kept between paints of one question."""

    question: int = -1
    detail_top: int = 0
    options_top: int = 0
    page: int = 1

    def scroll(self, pages: int) -> None:
        """Move the detail by whole pages (PgUp/PgDn); the next paint clamps it."""
        self.detail_top = max(0, self.detail_top + pages * self.page)

    def scroll_rows(self, rows: int) -> None:
        """Move the detail by rows (↑/↓ in a plan review); the next paint clamps it."""
        self.detail_top = max(0, self.detail_top + rows)

    def home(self) -> None:
        self.detail_top = 0

    def end(self) -> None:
        self.detail_top = _FAR  # clamped to the last page by the next paint


@dataclass(frozen=True, slots=True)
class Screen:
    above: list[Fragments]
    field_prompt: Fragments
    below: list[Fragments]


def joined(rows: Sequence[Fragments]) -> FormattedText:
    """Rows as one fragment list with newlines, as a ``FormattedTextControl`` takes them."""
    out = FormattedText()
    for number, row in enumerate(rows):
        if number:
            out.append(("", "\n"))
        out.extend(row)
    return out


def paint(flow: BatchFlow, viewport: Viewport, width: int, height: int) -> Screen:
    """The screen for ``flow`` on a ``width`` x ``height`` terminal; updates ``viewport``.

    It never takes more than ``height - 1`` rows. When room is short the blank rows go
    first, then the detail pages and the options window; on a very small terminal the
    hints shrink to one row of whole hints and the rows under the header row go (the
    header row last), so that the cursor's row always shows.
    """
    position = _position(flow)
    if viewport.question != position:
        viewport.question, viewport.detail_top, viewport.options_top = position, 0, 0
    if flow.reviewing:
        return _review(flow, viewport, width, height)
    limit = height - _SPARE_ROWS
    head = _rows(
        [
            _strip(flow, width) if flow.review else _title(flow),
            *_provenance(flow),
            *_question(flow),
        ],
        width,
    )
    detail = flow.question.detail
    detail_rows = _detail(detail, width - len(MARGIN)) if detail else []
    blocks = _Blocks(flow, width)
    prompt = _field_prompt(flow, width)
    field_rows = 0
    if flow.mode == "text":  # the field wraps beside its prompt; one cell for the cursor
        room_beside = max(1, width - get_cwidth(plain(prompt)))
        field_rows = -(-(get_cwidth(_safe(flow.draft.text)) + 1) // room_beside)
    status = _status(flow, width)
    # Counted no further than the terminal's height: past it the exact figure changes nothing.
    option_rows = blocks.rows_up_to(max(limit, MIN_OPTION_ROWS))
    cursor = _cursor_block(flow)
    fixed = len(head) + field_rows + len(status)
    cap = max(1, limit - field_rows - len(status) - 1)

    def arrange(gaps: int, paged: bool, view: Viewport) -> _Arranged:
        hint_rows = len(_pack(_hints(flow, paged=paged), width))
        room = limit - fixed - hint_rows - gaps
        detail_budget, option_budget = _budgets(
            room, len(detail_rows), option_rows, _need(blocks, cursor), flow.plan_review
        )
        detail_shown, is_paged = _page(detail_rows, detail_budget, view, width - len(MARGIN))
        window, cursor_row = _window(blocks, cursor, min(option_budget, cap), view)
        used = fixed + hint_rows + gaps + len(detail_shown) + len(window)
        return _Arranged(gaps, is_paged, detail_shown, window, cursor_row, used)

    def tried(gaps: int) -> _Arranged:  # on a copy: a trial leaves the scroll positions be
        first = arrange(gaps, False, replace(viewport))
        return arrange(gaps, True, replace(viewport)) if first.paged else first

    # A blank row goes only when that shows more of the detail or the options (the
    # markers among them), or when the screen would not fit with it.
    trials = [tried(gaps) for gaps in (2, 1, 0)]
    most = max(trial.shown for trial in trials)
    chosen = next(
        (trial for trial in trials if trial.shown == most and trial.used <= limit), trials[-1]
    )
    final = arrange(chosen.gaps, chosen.paged, viewport)
    gaps, paged, detail_shown = final.gaps, final.paged, final.detail
    window, cursor_row = final.window, final.cursor_row
    above = head + [[("", MARGIN), *row] for row in detail_shown]
    if gaps:
        above.append([])
    # The rows from the cursor's on must stay; in the text field the cursor is below them.
    keep = 0 if flow.mode == "text" and not flow.plan_review else len(window) - cursor_row
    above.extend(window)
    hints = _packed(_hints(flow, paged=paged), width)
    below = [*status, *([[]] if gaps > 1 else []), *_hint_rows(hints, width)]
    short = [*status, *_hint_rows(hints[:1], width)]
    return _squeeze(Screen(above, prompt, below), field_rows, short, limit, keep)


@dataclass(frozen=True, slots=True)
class _Arranged:
    """How the rows between the question and the hints are shared, with ``gaps`` blank
    rows; ``used``: the rows of the whole screen, hints and blank rows included."""

    gaps: int
    paged: bool
    detail: list[Fragments]
    window: list[Fragments]
    cursor_row: int
    used: int

    @property
    def shown(self) -> int:
        """The rows of detail and options shown (a page's status row and markers too)."""
        return len(self.detail) + len(self.window)


def _budgets(
    room: int, detail_rows: int, option_rows: int, need: int, plan_review: bool
) -> tuple[int, int]:
    """The rows the detail and the options may take of ``room``; the options at least
    ``need`` (the cursor's option with its markers) when they do not fit whole."""
    if detail_rows + option_rows <= room:
        return detail_rows, option_rows
    option_budget = min(option_rows, max(MIN_OPTION_ROWS, need, room // 2))
    if plan_review:
        option_budget = option_rows  # the actions always show; the plan pages
    detail_budget = max(MIN_DETAIL_ROWS, room - option_budget)
    return detail_budget, max(option_budget, room - min(detail_budget, detail_rows))


def _need(blocks: _Blocks, cursor: int) -> int:
    """The rows of the cursor's option and of the markers beside it."""
    count = len(blocks)
    if not count:
        return 0
    cursor = min(cursor, count - 1)
    return len(blocks[cursor]) + (cursor > 0) + (cursor < count - 1)


def _squeeze(
    screen: Screen, field_rows: int, short: list[Fragments], limit: int, keep: int = 0
) -> Screen:
    """On a very small terminal: ``short`` below (one row of whole hints), and rows above go.

    The header row stays while the last ``keep`` rows (the cursor's) still fit beside it;
    the rows after it go first, then, if need be, the header row too.
    """
    above, below = screen.above, screen.below
    if len(above) + field_rows + len(below) > limit:
        below = short
        excess = len(above) + field_rows + len(below) - limit
        if excess > 0 and len(above) - excess - 1 >= keep:
            above = [above[0], *above[1 + excess :]]
        elif excess > 0:
            above = above[excess:]
    return Screen(above, screen.field_prompt, below)


def _position(flow: BatchFlow) -> int:
    """Where the user is in the strip: a question's index, or the review after them."""
    return len(flow.questions) if flow.reviewing else flow.index


def _review(flow: BatchFlow, viewport: Viewport, width: int, height: int) -> Screen:
    """The review step: every answer as it would be sent; Enter sends, Back edits."""
    limit = height - _SPARE_ROWS
    head = _rows([_strip(flow, width), Line([("class:question", REVIEW_TITLE)])], width)
    listed = _rows(_answer_lines(flow.questions, flow.answers), width)
    status = _status(flow, width)
    hint_rows = len(_pack(_hints(flow, paged=True), width))
    room = limit - len(head) - len(status) - hint_rows - 2
    shown, paged = _page(listed, max(1, room), viewport, width)
    above = [*head, [], *shown]
    hints = _packed(_hints(flow, paged=paged), width)
    below = [*status, [], *_hint_rows(hints, width)]
    short = [*status, *_hint_rows(hints[:1], width)]
    return _squeeze(Screen(above, [], below), 0, short, limit)


def summary(flow: BatchFlow, width: int) -> list[Fragments]:
    """One line per question (wrapped), for the scrollback once the prompt is gone.

    Labels show as they were drawn (``pnpm (Recommended)`` as ``pnpm``); an answer of
    one's own is quoted, its own line breaks kept; a skipped question has its own mark.
    """
    return _rows(_answer_lines(flow.questions, flow.answer().answers), width)


def _answer_lines(
    questions: Sequence[QuestionView], items: Sequence[AskUserQuestionAnswerItem | None]
) -> list[Line]:
    """A line per question for its answer; ``None``: not answered yet (on the review)."""
    lines = []
    for question, item in zip(questions, items, strict=True):
        name = _shorten(_name(question))
        if item is None:
            lines.append(Line([("class:strip.open", "○ "), ("", f"{name}: (not answered)")]))
            continue
        parts = _shown(question, item.selected)
        if not parts and item.custom is None:
            lines.append(Line([("class:summary.skip", "- "), ("", f"{name}: (skipped)")]))
            continue
        own = _lines(item.custom) if item.custom is not None else []
        if own:
            parts.append(f'"{own[0]}' + ('"' if len(own) == 1 else ""))
        first = f"{name}: {', '.join(parts)}"
        lines.append(Line([("class:summary.ok", "✓ "), ("", first)], hang="  "))
        for number, rest in enumerate(own[1:], start=2):
            closing = '"' if number == len(own) else ""
            lines.append(Line([("", f"{rest}{closing}")], "    ", "    "))
    return lines


def _name(question: QuestionView) -> str:
    """A question's name: its header, or its first line."""
    return question.header or question.question.split("\n", 1)[0]


def _shorten(text: str, cells: int = SUMMARY_NAME) -> str:
    if get_cwidth(text) <= cells:
        return text
    return fit(text, cells - 1)[0].rstrip() + "…"


# ---------------------------------------------------------------------- sections


def _safe(text: str) -> str:
    """One line of what the user typed, escaped."""
    return escape_controls(text, keep_newlines=False)


def _lines(text: str) -> list[str]:
    """What the user typed, escaped, tabs expanded, split at its newlines."""
    return _prose(escape_controls(text))


def _prose(text: str) -> list[str]:
    """Escaped prose from the display model, tabs expanded, split at its newlines."""
    return text.expandtabs(TAB_SIZE).split("\n")


def _shown(question: QuestionView, labels: Sequence[str]) -> list[str]:
    """Chosen labels as their options are drawn (escaped, without the recommended badge)."""
    texts = {option.label: option.text for option in question.options}
    return [texts.get(label) or _safe(label) for label in labels]


def _rows(lines: Sequence[Line], width: int) -> list[Fragments]:
    return [row for line in lines for row in wrap(line, width)]


def _title(flow: BatchFlow) -> Line:
    """The header row of a question asked on its own: no strip, no count."""
    header = flow.question.header
    permission = flow.question.permission
    if flow.plan_review:
        title = "Plan review" + (f" · {header}" if header else "")
    elif permission:
        title = f"Permission · {permission.tool}" + (f" · {header}" if header else "")
    else:
        title = header or "Question"
    return Line([("class:title", f"── {title} ──")])


def _strip(flow: BatchFlow, width: int) -> Line:
    """The batch's header row: ``✓ Package manager  ● CI  ○ Notes  ○ Submit``.

    ✓ answered, ``-`` skipped, ○ open, ● where the user is. Names shorten until the strip
    fits, the current one last; on a terminal too narrow even then, it shows the entries
    around ``●`` with ``…`` for the rest.
    """
    position = _position(flow)
    names = [_name(question) for question in flow.questions]
    longest, shortest = STRIP_NAMES[0], STRIP_NAMES[-1]

    def entry(index: int, cells: int, current: int = longest) -> Fragments:
        if index == len(names):
            return entry_of(index, SUBMIT)
        return entry_of(index, _shorten(names[index], current if index == position else cells))

    def entry_of(index: int, name: str) -> Fragments:
        if index == position:
            return [CURRENT_MARK, ("", " "), ("class:strip.current", name)]
        mark = MARKS[flow.status(index)] if index < len(names) else MARKS["open"]
        return [mark, ("", " "), ("class:strip.name", name)]

    def joined_entries(entries: Sequence[Fragments]) -> Fragments:
        out: Fragments = []
        for number, one in enumerate(entries):
            out.extend([("", STRIP_GAP)] if number else [])
            out.extend(one)
        return out

    count = len(names) + 1
    sizes = [(longest, cells) for cells in STRIP_NAMES]
    sizes += [(current, shortest) for current in STRIP_NAMES[1:]]
    for current, cells in sizes:
        whole = joined_entries([entry(index, cells, current) for index in range(count)])
        if get_cwidth(plain(whole)) <= width:
            return Line(whole)
    entries = [entry(index, shortest, shortest) for index in range(count)]

    def shown(top: int, end: int) -> Fragments:
        middle = joined_entries(entries[top:end])
        before: Fragments = [("class:more", "…"), ("", " ")] if top > 0 else []
        after: Fragments = [("", " "), ("class:more", "…")] if end < count else []
        return [*before, *middle, *after]

    def fits(top: int, end: int) -> bool:
        return top >= 0 and end <= count and get_cwidth(plain(shown(top, end))) <= width

    top, end = position, position + 1
    while fits(top, end + 1) or fits(top - 1, end):  # grow after the current entry, then before
        if fits(top, end + 1):
            end += 1
        if fits(top - 1, end):
            top -= 1
    return Line(shown(top, end))


def _provenance(flow: BatchFlow) -> list[Line]:
    """One dim line: who asks, from where, since when (its age as of this paint)."""
    provenance = flow.view.provenance
    said = "" if provenance is None else provenance.summary()
    return [Line([("class:provenance", said)])] if said else []


def _question(flow: BatchFlow) -> list[Line]:
    lines = [Line([("class:question", line)]) for line in _prose(flow.question.question)]
    permission = flow.question.permission
    if permission:  # both escaped on one line by the display model
        lead = f"{MARGIN}{permission.tool}: "
        hang = " " * get_cwidth(lead)
        lines.append(Line([("class:permission", lead + permission.summary)], hang=hang))
    return lines


@functools.lru_cache(maxsize=8)
def _detail(detail: str, width: int) -> list[Fragments]:
    """The detail's rows; kept, since every key repaints and a plan can be long.

    Callers copy rather than change the rows.
    """
    return _rows(markdown(detail, "class:detail", width), width)


class _Blocks:
    """The wrapped rows of each row the cursor can be on (the plan review's: one block).

    A block is built when it is first read, so a paint costs the options it shows, not
    the options there are.
    """

    def __init__(self, flow: BatchFlow, width: int) -> None:
        self._flow, self._width = flow, width
        rows = flow.rows
        if flow.plan_review:
            self._count = 1
        else:  # in text mode the field stands in the Other row's place
            self._count = len(rows) - 1 if rows and flow.mode == "text" else len(rows)
        self._built: dict[int, list[Fragments]] = {}

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: int) -> list[Fragments]:
        block = self._built.get(index)
        if block is None:
            flow = self._flow
            if flow.plan_review:
                lines = _buttons(flow, flow.rows)
            else:
                lines = _option(flow, index + 1, flow.rows[index])
            block = self._built[index] = _rows(lines, self._width)
        return block

    def rows_up_to(self, cap: int) -> int:
        """The rows of all the blocks, counted until they pass ``cap``."""
        total = 0
        for index in range(self._count):
            if total > cap:
                break
            total += len(self[index])
        return total


def _marker(flow: BatchFlow, number: int) -> tuple[str, str]:
    here = flow.mode == "list" and flow.draft.cursor == number - 1
    return ("class:cursor", CURSOR) if here else ("", " " * len(CURSOR))


def _box(flow: BatchFlow, row: Row) -> str:
    if not flow.multi:
        return ""
    ticked = flow.draft.text.strip() if row is OTHER else row.label in flow.draft.chosen
    return "[x] " if ticked else "[ ] "


def _number(flow: BatchFlow, number: int) -> str:
    """``number`` right-aligned to the widest row number, so 9 and 10 line up."""
    return f"{number:>{len(str(len(flow.rows)))}}. "


def _option(flow: BatchFlow, number: int, row: Row) -> list[Line]:
    marker = _marker(flow, number)
    current = "class:current" if marker[1] == CURSOR else "class:option"
    box = _box(flow, row)
    lead: Fragments = [
        marker,
        ("class:chosen" if box == "[x] " else "", box),
        ("", _number(flow, number)),
    ]
    hang = " " * get_cwidth(plain(lead))
    if row is OTHER:
        text = flow.draft.text
        other = flow.question.other or ""
        label: Fragments = [(current, f"Other: {_safe(text)}" if text else other)]
        return [Line([*lead, *label], hang=hang)]
    label = [(current, row.text)]
    if row.recommended:
        label += [("", " "), ("class:badge", "[recommended]")]
    if row.role:
        label += [("", " "), (f"class:role.{row.role}", f"[{ROLE_NAMES[row.role]}]")]
    lines = [Line([*lead, *label], hang=hang)]
    if row.description:
        for part in _prose(row.description):
            lines.append(Line([("class:description", part)], hang, hang))
    return lines


def _buttons(flow: BatchFlow, rows: tuple[Row, ...]) -> list[Line]:
    """The plan review's actions side by side, the approve option first."""
    fragments: Fragments = []
    for index, row in enumerate(rows):
        focused = flow.mode == "list" and flow.draft.cursor == index
        text = (flow.question.other or "") if row is OTHER else row.text
        fragments.append(("class:cursor", CURSOR.strip()) if focused else ("", " "))
        # Not "button": prompt_toolkit's own style paints class:button.focused red.
        fragments.append(("class:action.focused" if focused else "class:action", f"[ {text} ]"))
        fragments.append(("", " "))
    lines = [Line(fragments, hang=" ")]
    focus = rows[flow.draft.cursor]
    if flow.mode == "list" and focus is not OTHER and focus.description:
        for part in _prose(focus.description):
            lines.append(Line([("class:description", part)], MARGIN, MARGIN))
    return lines


def _field_prompt(flow: BatchFlow, width: int) -> Fragments:
    """What stands before the text field: the Other row's start, or the bare cursor when
    that would leave the field fewer than ``MIN_FIELD`` cells."""
    if flow.plan_review:
        prompt = [("class:cursor", CURSOR), ("class:current", "Your own words: ")]
    elif flow.rows:
        prompt = [
            ("class:cursor", CURSOR),
            ("", _box(flow, OTHER)),
            ("class:current", f"{_number(flow, len(flow.rows))}Other: "),
        ]
    else:
        prompt = []
    if not prompt or width - get_cwidth(plain(prompt)) < MIN_FIELD:
        return [("class:cursor", CURSOR)]
    return prompt


def _status(flow: BatchFlow, width: int) -> list[Fragments]:
    rows = []
    if flow.seconds_left is not None:
        minutes, seconds = divmod(max(0, flow.seconds_left), 60)
        rows += wrap(Line([("class:countdown", f"Time left: {minutes}:{seconds:02d}")]), width)
    own = flow.draft.text.strip()
    if flow.multi and (flow.draft.chosen or own) and not flow.reviewing:
        # The user's own words go with the labels on a multi-select: they are shown too,
        # in at most CHOSEN_ROWS rows (the review step shows them whole), so that a long
        # answer never pushes the options off a small terminal.
        shown = [*_shown(flow.question, flow.draft.chosen), *([f"“{_safe(own)}”"] if own else [])]
        chosen = Line([("class:chosen", f"Chosen: {', '.join(shown)}")], hang="        ")
        rows += clip(wrap(chosen, width), CHOSEN_ROWS, width)
    if flow.reviewing and None in flow.answers:
        rows += wrap(Line([("class:notice", OPEN_ARE_SKIPS)]), width)
    if flow.notice:
        rows += wrap(Line([("class:notice", flow.notice)]), width)
    return rows


def _hints(flow: BatchFlow, *, paged: bool) -> list[str]:
    if flow.confirming:
        return ["y discard and dismiss", "any other key keeps them"]
    dismiss = "Esc dismiss"
    if flow.reviewing:
        keys = ["Enter send", "← back"]
        back = ""
    elif flow.mode == "text":
        keys = ["Enter confirm (empty skips)"] if not flow.rows else ["Enter confirm"]
        if flow.rows:
            keys += ["Tab/Esc options", "Ctrl-S skip"]
            dismiss = ""
        elif flow.review:
            keys.append("Tab next")
        back = "Shift-Tab back"
    elif flow.plan_review:
        keys = ["←→ choose", "Enter confirm", "Tab own words", "s skip"]
        if paged:
            keys.append("↑↓ Home End scroll")
            paged = False
        back = ""
    else:
        keys = ["↑↓ move", f"1-{len(flow.rows)} jump"]
        keys += ["Space toggle", "Enter confirm"] if flow.multi else ["Enter choose"]
        if flow.review:  # in a batch Tab moves between questions
            keys += ["o own answer", "s skip", "Tab/→ next"]
        else:
            keys += ["Tab own answer", "s skip"]
        back = "← back"
    if back and flow.index:
        keys.append(back)
    if paged:
        keys.append("PgUp/PgDn scroll")
    if dismiss:
        keys.append(dismiss)
    return keys


def _pack(hints: list[str], width: int) -> list[Fragments]:
    """Key hints joined by `` · `` into rows, never breaking inside one hint if it fits."""
    return _hint_rows(_packed(hints, width), width)


def _packed(hints: list[str], width: int) -> list[str]:
    """Key hints joined by `` · `` into lines of whole hints that fit, where one hint fits."""
    lines: list[str] = []
    for hint in hints:
        if lines and get_cwidth(lines[-1]) + get_cwidth(SEPARATOR + hint) <= width:
            lines[-1] += SEPARATOR + hint
        else:
            lines.append(hint)
    return lines


def _hint_rows(lines: list[str], width: int) -> list[Fragments]:
    """Packed hint lines as rows; a hint wider than the terminal wraps between its words."""
    return _rows([Line([("class:hint", line)]) for line in lines], width)


# ---------------------------------------------------------------------- fitting


def _page(
    rows: list[Fragments], budget: int, viewport: Viewport, width: int
) -> tuple[list[Fragments], bool]:
    """The detail rows that fit, with a status row when it does not fit whole."""
    if len(rows) <= budget:
        viewport.page = max(1, len(rows))
        return rows, False
    shown = max(1, budget - 1)
    viewport.page = shown
    top = viewport.detail_top = min(viewport.detail_top, len(rows) - shown)
    end = top + shown
    for status in (  # the longest that fits
        f"⋯ lines {top + 1}-{end} of {len(rows)} · PgUp/PgDn",
        f"⋯ lines {top + 1}-{end} of {len(rows)}",
        f"⋯ {top + 1}-{end}/{len(rows)}",
    ):
        if get_cwidth(status) <= width:
            break
    return [*rows[top:end], [("class:more", status)]], True


def _cursor_block(flow: BatchFlow) -> int:
    if flow.plan_review:
        return 0
    return min(flow.draft.cursor, max(0, len(flow.rows) - 1))


def _window(
    blocks: _Blocks, cursor: int, budget: int, viewport: Viewport
) -> tuple[list[Fragments], int]:
    """The option blocks around the cursor that fit in ``budget`` rows, with "more" markers,
    and where the cursor's block starts among those rows.

    Only the blocks near the cursor are read: no block is under one row, so none further
    than ``budget`` blocks from the cursor can show with it.
    """
    count = len(blocks)
    if blocks.rows_up_to(budget) <= budget:
        every = [row for index in range(count) for row in blocks[index]]
        return every, sum(len(blocks[index]) for index in range(min(cursor, count)))
    cursor = min(cursor, count - 1)
    budget = max(1, budget)

    def fits(used: int, top: int, end: int) -> bool:
        return used + (top > 0) + (end < count) <= budget

    top = max(min(viewport.options_top, cursor), cursor + 1 - budget)
    used = sum(len(blocks[index]) for index in range(top, cursor + 1))
    while top < cursor and not fits(used, top, cursor + 1):
        used -= len(blocks[top])
        top += 1
    if not fits(used, top, cursor + 1):  # no room for markers: the start of the cursor's option
        viewport.options_top = cursor
        return blocks[cursor][:budget], 0
    end = cursor + 1
    while end < count and fits(used + len(blocks[end]), top, end + 1):
        used += len(blocks[end])
        end += 1
    while top > 0 and fits(used + len(blocks[top - 1]), top - 1, end):
        top -= 1
        used += len(blocks[top])
    viewport.options_top = top
    rows: list[Fragments] = []
    if top > 0:
        rows.append([("class:more", f"{MARGIN}↑ {top} more")])
    cursor_row = len(rows) + sum(len(blocks[index]) for index in range(top, cursor))
    rows.extend(row for index in range(top, end) for row in blocks[index])
    if end < count:
        rows.append([("class:more", f"{MARGIN}↓ {count - end} more")])
    return rows, cursor_row
