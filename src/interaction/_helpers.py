"""One-call helpers for the common asks, each a thin layer over ``ask()``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._ask import ask
from ._errors import bad_request, type_name
from ._types import (
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    PermissionIntent,
    PlanReviewIntent,
)

if TYPE_CHECKING:
    from ._abort import AbortSignal
    from ._agents import Agent

__all__ = [
    "PermissionVerdict",
    "PlanVerdict",
    "ask_permission",
    "ask_text",
    "choose",
    "choose_many",
    "confirm",
    "permission_question",
    "permission_verdict",
    "review_plan",
]

OptionLike = str | AskUserQuestionOption


def _options(options: Sequence[OptionLike], what: str = "options") -> list[AskUserQuestionOption]:
    # A lone string is iterable too: "yes" would become the options y, e and s.
    if isinstance(options, str) or not isinstance(options, Iterable):
        raise bad_request(
            what, f"expected a sequence of labels or options, got {type_name(options)}"
        )
    return [
        o if isinstance(o, AskUserQuestionOption) else AskUserQuestionOption(o) for o in options
    ]


async def _ask_one(
    item: AskUserQuestionItem, agent: Agent | None, signal: AbortSignal | None
) -> AskUserQuestionAnswerItem:
    answer = await ask(AskUserQuestionRequest([item], agent=agent, signal=signal))
    return answer.answers[0]


async def choose(
    question: str,
    options: Sequence[OptionLike],
    *,
    header: str | None = None,
    detail: str | None = None,
    id: str = "choice",
    agent: Agent | None = None,
    signal: AbortSignal | None = None,
) -> str | None:
    """Ask for one of ``options``: the chosen label, the user's own text, or ``None`` if skipped."""
    item = await _ask_one(
        AskUserQuestionItem(id, question, detail, header, _options(options)), agent, signal
    )
    if item.custom is not None:
        return item.custom
    return item.selected[0] if item.selected else None


async def choose_many(
    question: str,
    options: Sequence[OptionLike],
    *,
    header: str | None = None,
    detail: str | None = None,
    id: str = "choices",
    agent: Agent | None = None,
    signal: AbortSignal | None = None,
) -> AskUserQuestionAnswerItem:
    """Ask for any of ``options``: the labels in the order chosen, and any text of one's own."""
    return await _ask_one(
        AskUserQuestionItem(id, question, detail, header, _options(options), multi_select=True),
        agent,
        signal,
    )


async def confirm(
    question: str,
    *,
    yes: str = "Yes",
    no: str = "No",
    header: str | None = None,
    detail: str | None = None,
    id: str = "confirm",
    agent: Agent | None = None,
    signal: AbortSignal | None = None,
) -> bool:
    """A yes/no decision for permission plugins: ``True`` only when the user chose ``yes``.

    A skip or an answer of the user's own is not a yes: it fails closed.
    """
    item = await _ask_one(
        AskUserQuestionItem(
            id, question, detail, header, [AskUserQuestionOption(yes), AskUserQuestionOption(no)]
        ),
        agent,
        signal,
    )
    return tuple(item.selected) == (yes,) and item.custom is None


async def ask_text(
    question: str,
    *,
    header: str | None = None,
    detail: str | None = None,
    id: str = "text",
    agent: Agent | None = None,
    signal: AbortSignal | None = None,
) -> str | None:
    """Ask for free text: what the user typed, or ``None`` if skipped."""
    item = await _ask_one(AskUserQuestionItem(id, question, detail, header), agent, signal)
    return item.custom


@dataclass(frozen=True, slots=True)
class PlanVerdict:
    """The outcome of a plan review.

    ``choice`` is the option label chosen (``None`` if the user skipped or wrote their own);
    ``feedback`` is the user's own text, which never approves.
    """

    approved: bool
    choice: str | None = None
    feedback: str | None = None


async def review_plan(
    plan: str,
    *,
    question: str = "Approve this plan?",
    approve: str = "Approve",
    decline: Sequence[str] = ("Revise",),
    header: str | None = "Plan",
    id: str = "plan",
    agent: Agent | None = None,
    signal: AbortSignal | None = None,
) -> PlanVerdict:
    """Ask for a plan review of the markdown ``plan``; approved only by the ``approve`` option.

    With one decline option (the default) UIs present it as a plan review; more options fall
    back to the generic flow, so every one stays reachable.
    """
    item = await _ask_one(
        AskUserQuestionItem(
            id,
            question,
            detail=plan,
            header=header,
            options=[AskUserQuestionOption(approve), *_options(decline, "decline")],
            intent=PlanReviewIntent(approve),
        ),
        agent,
        signal,
    )
    choice = item.selected[0] if item.selected else None
    return PlanVerdict(choice == approve and item.custom is None, choice, item.custom)


@dataclass(frozen=True, slots=True)
class PermissionVerdict:
    """The outcome of a permission prompt.

    ``allowed`` only for the allow or allow-always option; ``always`` for the latter.
    ``edit`` is the person's own text (an edited input, or a reply), which never allows:
    the caller checks it again. ``choice`` is the option label chosen, if any.
    """

    allowed: bool
    always: bool = False
    edit: str | None = None
    choice: str | None = None


def permission_question(
    tool: str,
    summary: str,
    *,
    detail: str | None = None,
    question: str | None = None,
    allow: str = "Allow",
    allow_always: str | None = "Always allow",
    deny: str = "Deny",
    header: str | None = None,
    id: str = "permission",
) -> AskUserQuestionItem:
    """A permission question for ``tool`` with the one-line input ``summary``.

    ``detail`` (the full input; ``summary`` by default) is what the person reviews;
    ``allow_always=None`` offers no "always" option.
    """
    labels = [allow, *([] if allow_always is None else [allow_always]), deny]
    return AskUserQuestionItem(
        id,
        question if question is not None else f"Allow {tool} to run with this input?",
        detail=detail if detail is not None else (summary or "(no input)"),
        header=header,
        options=[AskUserQuestionOption(label) for label in labels],
        intent=PermissionIntent(tool, summary, allow, deny, allow_always),
    )


def permission_verdict(
    question: AskUserQuestionItem, item: AskUserQuestionAnswerItem
) -> PermissionVerdict:
    """What the answer ``item`` to the permission ``question`` decided."""
    intent = question.intent
    if not isinstance(intent, PermissionIntent):
        raise bad_request("intent", f"expected a PermissionIntent, got {type_name(intent)}")
    choice = item.selected[0] if item.selected else None
    if item.custom is not None:
        return PermissionVerdict(False, edit=item.custom, choice=choice)
    allowed = choice is not None and choice in (intent.allow, intent.allow_always)
    return PermissionVerdict(
        allowed, choice is not None and choice == intent.allow_always, None, choice
    )


async def ask_permission(
    tool: str,
    summary: str,
    *,
    detail: str | None = None,
    question: str | None = None,
    always: bool = True,
    id: str = "permission",
    agent: Agent | None = None,
    signal: AbortSignal | None = None,
) -> PermissionVerdict:
    """Ask whether ``tool`` may run with ``summary``; allowed only by an allow option.

    A skip or a dismissal never allows; text of the person's own comes back as ``edit``.
    """
    item = permission_question(
        tool,
        summary,
        detail=detail,
        question=question,
        allow_always="Always allow" if always else None,
        id=id,
    )
    return permission_verdict(item, await _ask_one(item, agent, signal))
