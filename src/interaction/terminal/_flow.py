"""The state of one batch on the terminal: the current question, the cursor and the drafts.

Pure Python, no prompt_toolkit: the key bindings call these methods and the view reads the
state, so every rule of the flow is testable without a terminal. Nothing is answered until
the last question is confirmed; going back keeps every draft.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, TypeAlias

from .._core import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    PlanReviewIntent,
    is_plan_review,
)

__all__ = ["OTHER", "BatchFlow", "Draft", "Mode", "Row"]

Mode: TypeAlias = Literal["list", "text"]
"""``list``: the cursor is on the rows; ``text``: the user types an answer of their own."""

OTHER: Final = None
"""The row that opens the free-text field, after the options."""

Row: TypeAlias = AskUserQuestionOption | None
"""An option, or :data:`OTHER`."""

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
    """One request, asked one question at a time.

    ``done`` turns true when the last question is confirmed; :meth:`answer` is then the
    answer, one item per question in question order.
    """

    def __init__(self, request: AskUserQuestionRequest) -> None:
        self.questions: Sequence[AskUserQuestionItem] = request.questions
        self.plan_review = is_plan_review(request)
        self.index = 0
        self.drafts = [Draft(mode="list" if q.options else "text") for q in self.questions]
        self.notice = ""
        self.done = False
        self.dismissed = False
        self.seconds_left: int | None = None
        """Whole seconds until the ask times out, when the UI knows its deadline."""
        self.confirming = False
        """Waiting for y/N: would the user throw away what they have answered or typed?"""
        self._answers: list[AskUserQuestionAnswerItem | None] = [None] * len(self.questions)
        self._digits = ""

    # ------------------------------------------------------------------ reading

    @property
    def question(self) -> AskUserQuestionItem:
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
        options = tuple(self.question.options)
        if not options:
            return ()
        intent = self.question.intent
        if self.plan_review and isinstance(intent, PlanReviewIntent):
            approve = [option for option in options if option.label == intent.approve]
            options = (*approve, *(option for option in options if option not in approve))
        return (*options, OTHER)

    def answer(self) -> AskUserQuestionAnswer:
        """The confirmed answers; only once ``done``."""
        items = [item for item in self._answers if item is not None]
        assert self.done, "the batch is not finished"
        assert len(items) == len(self.questions), "a question was never answered"
        return AskUserQuestionAnswer(items)

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
        """Single-select: choose the row under the cursor. Multi-select: confirm the question."""
        self._reset()
        row = self._row()
        if self.multi:
            self._confirm_multi()
        elif row is OTHER:
            self.open_text()
        else:
            self._finish(AskUserQuestionAnswerItem(self.question.id, (row.label,)))

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
        multi-select confirms its ticked labels with the text.
        """
        self._reset()
        text = self.draft.text
        if not self.question.options:
            custom = text if text.strip() else None
            self._finish(AskUserQuestionAnswerItem(self.question.id, custom=custom))
        elif self.multi:
            self._confirm_multi()
        elif text.strip():
            self._finish(AskUserQuestionAnswerItem(self.question.id, custom=text))
        else:
            self.notice = TYPE_OR_SKIP

    # ------------------------------------------------------------------ the batch

    def skip(self) -> None:
        """Leave the question unanswered (an item with nothing selected) and go on."""
        self._reset()
        self._finish(AskUserQuestionAnswerItem(self.question.id))

    def back(self) -> None:
        """Return to the previous question with its draft as it was."""
        self._reset()
        if self.index == 0:
            self.notice = FIRST_QUESTION
        else:
            self.index -= 1

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
        elif self.mode == "text" and self.question.options:
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

    def _confirm_multi(self) -> None:
        draft = self.draft
        custom = draft.text if draft.text.strip() else None
        if not draft.chosen and custom is None:
            self.notice = NOTHING_CHOSEN
            return
        self._finish(AskUserQuestionAnswerItem(self.question.id, draft.chosen, custom))

    def _finish(self, item: AskUserQuestionAnswerItem) -> None:
        self._answers[self.index] = item
        if self.index == len(self.questions) - 1:
            self.done = True
        else:
            self.index += 1
