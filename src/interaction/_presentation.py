"""Presentation helpers for UIs: plan-review detection, ``(Recommended)`` labels, safe text."""

from __future__ import annotations

import re
from typing import Final

from ._text_policy import UNSAFE, UNSAFE_EXCEPT_LINES
from ._types import AskUserQuestionRequest, PlanReviewIntent

__all__ = ["RECOMMENDED_SUFFIX", "escape_controls", "is_plan_review", "split_recommended"]

RECOMMENDED_SUFFIX: Final = "(Recommended)"


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
    pattern = UNSAFE_EXCEPT_LINES if keep_newlines else UNSAFE
    return pattern.sub(_visible, text)


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
