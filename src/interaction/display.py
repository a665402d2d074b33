"""The display model: what every UI draws for one request, escaped in one place.

``present(request)`` is built once per request; the console and the terminal UI read it
through :class:`interaction.flow.BatchFlow`, and the web page is served ``to_json()``, so
it only renders. No call site can forget to escape model text, and "(Recommended)", the
plan-review order and the "Other" wording are decided once. (An MCP form carries the
request's own text: the client that renders it is the UI.)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final, Literal, TypeAlias

from ._core import (
    OTHER_LABEL,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    PermissionIntent,
    PlanReviewIntent,
    Provenance,
    escape_controls,
    is_plan_review,
    split_recommended,
)

__all__ = [
    "ROLE_NAMES",
    "OptionView",
    "PermissionView",
    "ProvenanceView",
    "QuestionView",
    "RequestView",
    "Role",
    "asked_ago",
    "present",
    "present_provenance",
]


def asked_ago(asked_at: datetime, now: datetime | None = None) -> str:
    """How long ago a question was asked, as every UI words it: ``asked just now``,
    ``asked 3 min ago``, ``asked 2 h ago``, ``asked 3 days ago`` (whole units, rounded
    down; a moment in the future, from a peer's clock ahead of ours, is "just now")."""
    now = datetime.now(UTC) if now is None else now
    seconds = int((now - asked_at).total_seconds())
    if seconds < 60:
        return "asked just now"
    if seconds < 3600:
        return f"asked {seconds // 60} min ago"
    if seconds < 48 * 3600:
        return f"asked {seconds // 3600} h ago"
    return f"asked {seconds // 86400} days ago"


@dataclass(frozen=True, slots=True)
class ProvenanceView:
    """Where a request comes from, as every UI shows it: each text escaped to one line."""

    source: str | None
    host: str | None
    session: str | None
    tool: str | None
    asked_at: datetime | None
    """Timezone-aware UTC, for a UI to word with :func:`asked_ago` (a page does it live)."""

    def summary(self, now: datetime | None = None) -> str:
        """One line: ``deploy-bot on build-7 · session 42 · tool deploy · asked 3 min ago``
        (the parts that are set; ``""`` when none is)."""
        parts = []
        if self.source is not None:
            parts.append(self.source if self.host is None else f"{self.source} on {self.host}")
        elif self.host is not None:
            parts.append(f"on {self.host}")
        if self.session is not None:
            parts.append(f"session {self.session}")
        if self.tool is not None:
            parts.append(f"tool {self.tool}")
        if self.asked_at is not None:
            parts.append(asked_ago(self.asked_at, now))
        return " · ".join(parts)

    def to_json(self) -> dict[str, object]:
        """The view as JSON data (``askedAt`` as ISO 8601 UTC, or ``None``)."""
        asked_at = self.asked_at
        return {
            "source": self.source,
            "host": self.host,
            "session": self.session,
            "tool": self.tool,
            "askedAt": None
            if asked_at is None
            else asked_at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        }


def _one_line(text: str | None) -> str | None:
    return None if text is None else escape_controls(text, keep_newlines=False)


def present_provenance(provenance: Provenance) -> ProvenanceView:
    """The display model of a checked provenance: its texts escaped to one line."""
    return ProvenanceView(
        source=_one_line(provenance.source),
        host=_one_line(provenance.host),
        session=_one_line(provenance.session),
        tool=_one_line(provenance.tool),
        asked_at=provenance.asked_at,
    )


Role: TypeAlias = Literal["allow", "allow-always", "deny"]
"""What an option of a permission prompt does."""

ROLE_NAMES: Final[dict[Role, str]] = {
    "allow": "allow once",
    "allow-always": "allow always",
    "deny": "deny",
}
"""How every UI names a role beside its option."""


@dataclass(frozen=True, slots=True)
class PermissionView:
    """A question presented as a permission prompt: may ``tool`` run with ``summary``?

    Both are escaped for display on one line (newlines escaped too).
    """

    tool: str
    summary: str


@dataclass(frozen=True, slots=True)
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
    role: Role | None = None
    """In a permission prompt, what choosing this option does."""


@dataclass(frozen=True, slots=True)
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
    permission: PermissionView | None = None
    """Set when the question is presented as a permission prompt."""


@dataclass(frozen=True, slots=True)
class RequestView:
    """What a UI draws for one request, built once by :func:`present`."""

    questions: tuple[QuestionView, ...]
    plan_review: bool
    provenance: ProvenanceView | None = None
    """Where the request comes from, when it says so."""

    def to_json(self) -> dict[str, object]:
        """The view as JSON data, for a page that only renders (camelCase keys)."""
        return {
            "planReview": self.plan_review,
            "provenance": None if self.provenance is None else self.provenance.to_json(),
            "questions": [
                {
                    "id": q.id,
                    "question": q.question,
                    "header": q.header,
                    "detail": q.detail,
                    "multiSelect": q.multi_select,
                    "other": q.other,
                    "permission": None
                    if q.permission is None
                    else {"tool": q.permission.tool, "summary": q.permission.summary},
                    "options": [
                        {
                            "label": o.label,
                            "text": o.text,
                            "recommended": o.recommended,
                            "description": o.description,
                            "primary": o.primary,
                            "role": o.role,
                        }
                        for o in q.options
                    ],
                }
                for q in self.questions
            ],
        }


def present(request: AskUserQuestionRequest) -> RequestView:
    """The display model of a checked request: the one place model text is escaped.

    Every string a model wrote goes through :func:`escape_controls` (one-line fields, and
    the provenance's, with newlines escaped too); ``(Recommended)`` becomes a badge; in a
    plan review the approve option comes first and is the primary action. Labels stay the
    exact values to answer with. A page must still render the text as text, never as HTML.
    A single-select question with a permission intent is a permission prompt: its tool and
    summary are shown, and each option the intent names carries its role.
    """
    plan_review = is_plan_review(request)
    views = []
    for question in request.questions:
        intent = question.intent
        approve = intent.approve if plan_review and isinstance(intent, PlanReviewIntent) else None
        roles = _roles(question)
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
                    role=roles.get(option.label),
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
                permission=_permission(question),
            )
        )
    provenance = request.provenance
    return RequestView(
        tuple(views),
        plan_review,
        None if provenance is None else present_provenance(provenance),
    )


def _roles(question: AskUserQuestionItem) -> dict[str, Role]:
    intent = question.intent
    if not isinstance(intent, PermissionIntent) or question.multi_select:
        return {}
    roles: dict[str, Role] = {intent.allow: "allow", intent.deny: "deny"}
    if intent.allow_always is not None:
        roles[intent.allow_always] = "allow-always"
    return roles


def _permission(question: AskUserQuestionItem) -> PermissionView | None:
    intent = question.intent
    if not isinstance(intent, PermissionIntent) or question.multi_select:
        return None
    return PermissionView(
        tool=escape_controls(intent.tool, keep_newlines=False),
        summary=escape_controls(intent.summary, keep_newlines=False),
    )
