"""What a notice says, as plain text: shared by the mail and chat channels."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ..display import QuestionView, RequestView

if TYPE_CHECKING:  # _dispatch's channels import this module
    from ._dispatch import Notice

__all__ = ["OUTCOME_WORDS", "cut", "lines_of", "recipient_of", "subject_of"]

OUTCOME_WORDS: Final = {
    "answered": "was answered",
    "cancelled": "was dismissed",
    "aborted": "was withdrawn by the agent",
    None: "is no longer waiting",
}


def cut(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def _first_line(question: QuestionView) -> str:
    return question.header or question.question.split("\n", 1)[0]


def subject_of(view: RequestView, most: int = 120) -> str:
    """One line naming the question and who asks: ``deploy-bot asks: Deploy to prod?``."""
    source = view.provenance.source if view.provenance is not None else None
    first = _first_line(view.questions[0])
    more = len(view.questions) - 1
    said = f"{first} (+{more} more)" if more else first
    return cut(f"{source} asks: {said}" if source else f"A question waits: {said}", most)


def lines_of(question: QuestionView) -> list[str]:
    """A question as plain lines: its text, detail, and options with their descriptions."""
    lines = [f"{question.header}: " if question.header else ""]
    lines[0] += question.question
    if question.detail:
        lines += ["", *question.detail.splitlines(), ""]
    for option in question.options:
        badge = " (recommended)" if option.recommended else ""
        text = f"  - {option.text}{badge}"
        if option.description:
            text += f": {option.description}"
        lines.append(text)
    return lines


def recipient_of(notice: Notice) -> str | None:
    """Whom a routed notice is for, and for a quorum question who has yet to approve:
    ``For ops: awaiting approval from bob``; ``None`` for a notice of the steps."""
    if notice.to is None:
        return None
    if not notice.awaiting:
        return f"For {notice.to}"
    return f"For {notice.to}: awaiting approval from {', '.join(notice.awaiting)}"
