"""The display model: what every UI draws for one request, escaped in one place.

``present(request)`` is built once per request; the console and the terminal UI read it
through :class:`interaction.flow.BatchFlow`, and the web page is served ``to_json()``, so
it only renders. No call site can forget to escape model text, and "(Recommended)", the
plan-review order and the "Other" wording are decided once. (An MCP form carries the
request's own text: the client that renders it is the UI.)
"""

from __future__ import annotations

from ._core import (
    OTHER_LABEL,
    AskUserQuestionRequest,
    PlanReviewIntent,
    escape_controls,
    frozen_dataclass,
    is_plan_review,
    set_field,
    split_recommended,
)

__all__ = ["OptionView", "QuestionView", "RequestView", "present"]


@frozen_dataclass(frozen=True, slots=True)
class OptionView:
    """One option as every UI shows it; ``label`` is still the value to answer with."""

    label: str
    text: str
    """The label escaped for display, without its ``(Recommended)`` suffix."""
    recommended: bool
    description: str | None
    """Escaped; newlines kept."""
    primary: bool
    """The plan-review approve option: the primary action."""

    def __init__(
        self, label: str, text: str, recommended: bool, description: str | None, primary: bool
    ) -> None:
        set_field(self, "label", label)
        set_field(self, "text", text)
        set_field(self, "recommended", recommended)
        set_field(self, "description", description)
        set_field(self, "primary", primary)


@frozen_dataclass(frozen=True, slots=True)
class QuestionView:
    """One question as every UI shows it: escaped text and options in display order."""

    id: str
    question: str
    header: str | None
    detail: str | None
    options: tuple[OptionView, ...]
    multi_select: bool
    other: str | None
    """The entry that opens the text field (:data:`OTHER_LABEL`); ``None`` on a free-text
    question, where the text field is the whole answer."""

    def __init__(  # noqa: PLR0917 - the fields, in order, as a dataclass takes them
        self,
        id: str,
        question: str,
        header: str | None,
        detail: str | None,
        options: tuple[OptionView, ...],
        multi_select: bool,
        other: str | None,
    ) -> None:
        set_field(self, "id", id)
        set_field(self, "question", question)
        set_field(self, "header", header)
        set_field(self, "detail", detail)
        set_field(self, "options", options)
        set_field(self, "multi_select", multi_select)
        set_field(self, "other", other)


@frozen_dataclass(frozen=True, slots=True)
class RequestView:
    """What a UI draws for one request, built once by :func:`present`."""

    questions: tuple[QuestionView, ...]
    plan_review: bool

    def __init__(self, questions: tuple[QuestionView, ...], plan_review: bool) -> None:
        set_field(self, "questions", questions)
        set_field(self, "plan_review", plan_review)

    def to_json(self) -> dict[str, object]:
        """The view as JSON data, for a page that only renders (camelCase keys)."""
        return {
            "planReview": self.plan_review,
            "questions": [
                {
                    "id": q.id,
                    "question": q.question,
                    "header": q.header,
                    "detail": q.detail,
                    "multiSelect": q.multi_select,
                    "other": q.other,
                    "options": [
                        {
                            "label": o.label,
                            "text": o.text,
                            "recommended": o.recommended,
                            "description": o.description,
                            "primary": o.primary,
                        }
                        for o in q.options
                    ],
                }
                for q in self.questions
            ],
        }


def present(request: AskUserQuestionRequest) -> RequestView:
    """The display model of a checked request: the one place model text is escaped.

    Every string a model wrote goes through :func:`escape_controls` (one-line fields with
    newlines escaped too); ``(Recommended)`` becomes a badge; in a plan review the approve
    option comes first and is the primary action. Labels stay the exact values to answer
    with. A page must still render the text as text, never as HTML.
    """
    plan_review = is_plan_review(request)
    views = []
    for question in request.questions:
        intent = question.intent
        approve = intent.approve if plan_review and isinstance(intent, PlanReviewIntent) else None
        options = []
        for option in question.options:
            text, recommended = split_recommended(option.label)
            description = option.description
            options.append(
                OptionView(
                    label=option.label,
                    text=escape_controls(text, keep_newlines=False),
                    recommended=recommended,
                    description=None if description is None else escape_controls(description),
                    primary=option.label == approve,
                )
            )
        options.sort(key=lambda view: not view.primary)  # stable: the approve option first
        views.append(
            QuestionView(
                id=question.id,
                question=escape_controls(question.question),
                header=None
                if question.header is None
                else escape_controls(question.header, keep_newlines=False),
                detail=None if question.detail is None else escape_controls(question.detail),
                options=tuple(options),
                multi_select=question.multi_select,
                other=OTHER_LABEL if question.options else None,
            )
        )
    return RequestView(tuple(views), plan_review)
