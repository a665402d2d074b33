"""Presentation helpers for UIs: plan-review detection, ``(Recommended)`` labels, safe text,
the one "Other" wording and the one rule that turns a choice or typed text into an answer."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from ._text_policy import UNSAFE, UNSAFE_EXCEPT_LINES, is_blank, label_key
from ._types import (
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    PlanReviewIntent,
)

__all__ = [
    "OTHER_LABEL",
    "RECOMMENDED_SUFFIX",
    "answer_item",
    "escape_controls",
    "is_plan_review",
    "split_recommended",
]

RECOMMENDED_SUFFIX: Final = "(Recommended)"
OTHER_LABEL: Final = "Other…"
"""How every UI names the entry that lets the user type an answer of their own."""


def is_plan_review(request: AskUserQuestionRequest) -> bool:
    """Whether a UI may present ``request`` as a plan review rather than the generic flow.

    Only one question, with a plan-review intent, a detail, single-select, at most two
    options and the approve label among them: anything else keeps every answer reachable.
    """
    if len(request.questions) != 1:
        return False
    question = request.questions[0]
    intent = question.intent
    return (
        isinstance(intent, PlanReviewIntent)
        and bool(question.detail)
        and not question.multi_select
        and len(question.options) <= 2
        and any(option.label == intent.approve for option in question.options)
    )


def split_recommended(label: str) -> tuple[str, bool]:
    """``("pnpm", True)`` for ``"pnpm (Recommended)"``; the label unchanged otherwise.

    For display only: the full label stays the value a UI answers with.
    """
    trimmed = label.rstrip()
    if trimmed.endswith(RECOMMENDED_SUFFIX):
        text = trimmed[: -len(RECOMMENDED_SUFFIX)].rstrip()
        if text:
            return text, True
    return label, False


def escape_controls(text: str, *, keep_newlines: bool = True) -> str:
    """Show untrusted text safely on a terminal: every control character becomes visible.

    C0/C1 controls (so every ANSI, CSI and OSC sequence), DEL, bidirectional overrides and
    isolates, and lone surrogates are written as ``\\x1b``-style escapes; newline and tab
    are kept when ``keep_newlines``.
    """
    if text.isprintable():  # false for every character UNSAFE holds: nothing to escape
        return text
    pattern = UNSAFE_EXCEPT_LINES if keep_newlines else UNSAFE
    return pattern.sub(_visible, text)


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def answer_item(
    question: AskUserQuestionItem, selected: Iterable[str] = (), text: str | None = None
) -> AskUserQuestionAnswerItem:
    """The answer item for what the user did: labels chosen, and text typed as their own.

    The one rule every UI follows: blank text is no text; text that names an option (by
    :func:`label_key`) selects that option instead, as if it had been chosen (on a
    single-select question it replaces the choice); other text is the custom answer, which
    on a single-select question replaces any choice. Nothing at all is a skip.
    """
    labels = list(selected)
    custom = None if text is None or is_blank(text) else text.strip()
    if custom is not None:
        key = label_key(custom)
        match = next((o.label for o in question.options if label_key(o.label) == key), None)
        if match is not None:
            custom = None
            labels = [*labels, match] if question.multi_select else [match]
        elif not question.multi_select:
            labels = []
    return AskUserQuestionAnswerItem(question.id, tuple(dict.fromkeys(labels)), custom)
