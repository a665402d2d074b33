"""One batch, asked one question at a time: the flow every interactive UI drives.

:class:`BatchFlow` is UI-neutral (no terminal, no HTML): a UI calls its methods for what
the user did (move, choose, type, skip, go to another question, send) and draws its state
from :attr:`BatchFlow.view`, the escaped display model of :func:`interaction.display.present`.
Every answer item is built by :func:`interaction.answer_item`, so text typed as one's own
answer that names an option selects that option, in every UI.

Nothing is answered until the batch is sent. A batch of two or more questions ends in a
review step that lists every answer; Enter sends, Back edits. A single question is sent as
soon as it is answered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, TypeAlias

from ._core import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    answer_item,
)
from .display import OptionView, QuestionView, present

__all__ = [
    "FIRST_QUESTION",
    "NOTHING_CHOSEN",
    "OTHER",
    "TYPE_OR_SKIP",
    "BatchFlow",
    "Draft",
    "Mode",
    "Row",
    "Status",
    "discard_prompt",
]

Mode: TypeAlias = Literal["list", "text"]
"""``list``: the cursor is on the rows; ``text``: the user types an answer of their own."""

Status: TypeAlias = Literal["answered", "skipped", "open"]
"""Where a question of the batch stands: answered, skipped (an empty item), or not yet."""

OTHER: Final = None
"""The row that opens the free-text field, after the options."""

Row: TypeAlias = OptionView | None
"""An option as displayed, or :data:`OTHER`."""

NOTHING_CHOSEN: Final = "Nothing chosen yet: Space toggles an option, s skips the question."
FIRST_QUESTION: Final = "This is the first question."
TYPE_OR_SKIP: Final = "Type an answer, or press Tab to go back to the options."


def discard_prompt(count: int) -> str:
    """The question asked before a dismissal would throw away ``count`` answers."""
    return f"Discard {count} answer{'' if count == 1 else 's'}? y/N"


@dataclass
class Draft:
    """What the user has done on one question so far; kept when they move between questions."""

    cursor: int = 0
    chosen: list[str] = field(default_factory=list)
    text: str = ""
    mode: Mode = "list"


class BatchFlow:
    """One request, asked one question at a time, then reviewed and sent.

    ``done`` turns true when the batch is sent; :meth:`answer` is then the answer, one item
    per question in question order. ``dismissed`` turns true when the user throws the batch
    away. ``review`` (default: two or more questions) adds the review step before sending.
    """

    def __init__(self, request: AskUserQuestionRequest, *, review: bool | None = None) -> None:
        self.view = present(request)
        self.questions: Sequence[QuestionView] = self.view.questions
        self.plan_review = self.view.plan_review
        self.review = len(self.questions) > 1 if review is None else review
        self.index = 0
        self.reviewing = False
        """On the review step, after the last question: :meth:`enter` sends."""
        self.drafts = [Draft(mode="list" if q.options else "text") for q in self.questions]
        # Built once: a UI reads ``rows`` on every key and for every option it draws.
        self._rows: list[tuple[Row, ...]] = [
            (*q.options, OTHER) if q.options else () for q in self.questions
        ]
        self.notice = ""
        self.done = False
        self.dismissed = False
        self.seconds_left: int | None = None
        """Whole seconds until the ask times out, when the UI knows its deadline."""
        self.confirming = False
        """Waiting for y/N: would the user throw away what they have answered or typed?"""
        self._items: Sequence[AskUserQuestionItem] = request.questions
        self._answers: list[AskUserQuestionAnswerItem | None] = [None] * len(self.questions)
        self._digits = ""

    # ------------------------------------------------------------------ reading

    @property
    def question(self) -> QuestionView:
        return self.questions[self.index]

    @property
    def draft(self) -> Draft:
        return self.drafts[self.index]

    @property
    def mode(self) -> Mode:
        return self.draft.mode

    @property
    def multi(self) -> bool:
        return self.question.multi_select

    @property
    def rows(self) -> tuple[Row, ...]:
        """The rows the cursor moves over, in display order; none for a free-text question.

        In a plan review the approve option comes first, whatever the request's order.
        """
        return self._rows[self.index]

    def status(self, index: int) -> Status:
        """Whether question ``index`` is answered, skipped, or still open."""
        item = self._answers[index]
        if item is None:
            return "open"
        return "answered" if item.selected or item.custom is not None else "skipped"

    @property
    def answers(self) -> tuple[AskUserQuestionAnswerItem | None, ...]:
        """The item given to each question so far (``None``: open), for a review screen."""
        return tuple(self._answers)

    def answer(self) -> AskUserQuestionAnswer:
        """The answer that was sent; only once ``done``. A question left open is a skip."""
        assert self.done, "the batch is not sent"
        return AskUserQuestionAnswer(
            [
                item if item is not None else AskUserQuestionAnswerItem(question.id)
                for item, question in zip(self._answers, self.questions, strict=True)
            ]
        )

    # ------------------------------------------------------------------ the list

    def move(self, delta: int) -> None:
        """Move the cursor, wrapping at either end."""
        self._reset()
        if rows := self.rows:
            self.draft.cursor = (self.draft.cursor + delta) % len(rows)

    def digit(self, digit: int) -> None:
        """Jump to a row by its number; digits typed in a row make one number when it exists."""
        self.notice = ""
        count = len(self.rows)
        joined = int(self._digits + str(digit)) if self._digits else digit
        if 1 <= joined <= count:
            self._digits += str(digit)
            self.draft.cursor = joined - 1
        elif 1 <= digit <= count:
            self._digits = str(digit)
            self.draft.cursor = digit - 1
        else:
            self._digits = ""
            self.notice = f"There is no option {digit}: the options are numbered 1-{count}."

    def toggle(self) -> None:
        """Multi-select: add or remove the option under the cursor; labels keep chosen order."""
        self._reset()
        row = self._row()
        if row is OTHER:
            self.open_text()
            return
        chosen = self.draft.chosen
        if row.label in chosen:
            chosen.remove(row.label)
        else:
            chosen.append(row.label)

    def enter(self) -> None:
        """Single-select: choose the row under the cursor. Multi-select: confirm the question.

        On the review step: send the batch.
        """
        self._reset()
        if self.reviewing:
            self.send()
            return
        row = self._row()
        if self.multi:
            self._confirm_multi()
        elif row is OTHER:
            self.open_text()
        else:
            self._finish(self._item((row.label,)))

    def open_text(self) -> None:
        """Go to the free-text field of a question with options."""
        self._reset()
        if self.question.options:
            self.draft.mode = "text"
            self.draft.cursor = len(self.rows) - 1

    # ------------------------------------------------------------------ the text field

    def set_text(self, text: str) -> None:
        self.draft.text = text

    def close_text(self) -> None:
        """Back from the free-text field to the options, keeping the text."""
        self._reset()
        if self.question.options:
            self.draft.mode = "list"

    def submit_text(self) -> None:
        """Enter in the text field: the text is the answer of one's own.

        Blank text skips a question without options and is refused on a single-select; a
        multi-select confirms its ticked labels with the text. Text that names an option
        selects it instead (:func:`interaction.answer_item`).
        """
        self._reset()
        text = self.draft.text
        if not self.question.options:
            self._finish(self._item((), text))
        elif self.multi:
            self._confirm_multi()
        elif text.strip():
            self._finish(self._item((), text))
        else:
            self.notice = TYPE_OR_SKIP

    def answer_with(self, selected: Sequence[str] = (), text: str | None = None) -> None:
        """Answer the current question at once from labels chosen and text typed.

        For a UI that reads a whole reply at a time (the console, a form); the item follows
        the same rule as every other path (:func:`interaction.answer_item`), and nothing at
        all is a skip.
        """
        self._reset()
        if not self.reviewing:
            self._finish(self._item(selected, text))

    # ------------------------------------------------------------------ the batch

    def skip(self) -> None:
        """Leave the question unanswered (an item with nothing selected) and go on."""
        self._reset()
        if not self.reviewing:
            self._finish(AskUserQuestionAnswerItem(self.question.id))

    def back(self) -> None:
        """Return to the previous question with its draft as it was (from the review: the last)."""
        self._reset()
        if self.reviewing:
            self.reviewing = False
        elif self.index == 0:
            self.notice = FIRST_QUESTION
        else:
            self.index -= 1

    def forward(self) -> None:
        """Go to the next question without answering this one (after the last: the review)."""
        self._reset()
        if self.index < len(self.questions) - 1:
            self.index += 1
        elif self.review:
            self.reviewing = True

    def goto(self, index: int) -> None:
        """Go to question ``index`` (``len(questions)``: the review step), keeping every draft."""
        self._reset()
        if self.review and index == len(self.questions):
            self.reviewing = True
        elif 0 <= index < len(self.questions):
            self.index, self.reviewing = index, False
        else:
            raise IndexError(f"there is no question {index} in this batch")

    def send(self) -> None:
        """Send the batch as it stands: a question still open is sent as a skip."""
        self._reset()
        self.reviewing = False
        self.done = True

    # ------------------------------------------------------------------ leaving

    @property
    def touched(self) -> int:
        """How many questions have an answer, a ticked option or typed text."""
        return sum(
            item is not None or bool(draft.chosen) or bool(draft.text.strip())
            for item, draft in zip(self._answers, self.drafts, strict=True)
        )

    def escape(self) -> None:
        """Esc: out of a text field back to the options; otherwise ask to dismiss."""
        if self.confirming:
            self.keep()
        elif not self.reviewing and self.mode == "text" and self.question.options:
            self.close_text()
        else:
            self._ask_to_dismiss()

    def interrupt(self) -> None:
        """Ctrl-C: ask to dismiss; a second Ctrl-C while asking dismisses."""
        if self.confirming:
            self.discard()
        else:
            self._ask_to_dismiss()

    def discard(self) -> None:
        """``y`` to "Discard N answers?": dismiss the batch."""
        self.confirming = False
        self.dismissed = True

    def keep(self) -> None:
        """Any other key to "Discard N answers?": back to where the user was."""
        self.confirming = False
        self.notice = ""

    def _ask_to_dismiss(self) -> None:
        self._reset()
        if count := self.touched:
            self.confirming = True
            self.notice = discard_prompt(count)
        else:
            self.dismissed = True

    # ------------------------------------------------------------------ internals

    def _row(self) -> Row:
        rows = self.rows
        return rows[self.draft.cursor] if rows else OTHER

    def _reset(self) -> None:
        self._digits = ""
        self.notice = ""

    def _item(self, selected: Sequence[str], text: str | None = None) -> AskUserQuestionAnswerItem:
        return answer_item(self._items[self.index], selected, text)

    def _confirm_multi(self) -> None:
        item = self._item(self.draft.chosen, self.draft.text)
        if not item.selected and item.custom is None:
            self.notice = NOTHING_CHOSEN
            return
        self._finish(item)

    def _finish(self, item: AskUserQuestionAnswerItem) -> None:
        self._answers[self.index] = item
        if self.index < len(self.questions) - 1:
            self.index += 1
        elif self.review:
            self.reviewing = True
        else:
            self.done = True
