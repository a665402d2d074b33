"""What every framework integration shares: asking through a given provider, and approvals.

No framework is imported here. A tool approval is one single-select question: an allow
option (``Allow``), any further allow options the framework offers (remembered rules, say),
and ``Deny``. Anything but an allow option denies: ``Deny``, an answer of the user's own
(its text becomes the deny message), a skip, a dismissal, a timeout, an abort.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, TypeGuard
from uuid import UUID

from .._core import (
    MAX_PROVENANCE_TEXT,
    AbortSignal,
    AskSuspended,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    Assignment,
    ErrorCode,
    HarnessError,
    PermissionIntent,
    Provenance,
    UserInteractionError,
    UserInteractionProvider,
    ask_with,
    check_caller,
    check_provenance,
    check_questions,
    check_request,
    escape_controls,
    short_repr,
    with_provenance,
    with_provider,
    with_provider_sync,
)

__all__ = [
    "ALLOW",
    "ALWAYS_ALLOW",
    "ALWAYS_DENY",
    "DENY",
    "STOPPED",
    "AssignByTool",
    "Verdict",
    "approval_item",
    "ask_approval",
    "ask_approvals",
    "ask_through",
    "asked_by",
    "checked_timeout",
    "input_summary",
    "is_suspension",
    "provenance_text",
    "question_ids",
    "safe_line",
    "timeout_signal",
    "tool_detail",
    "usable_id",
    "verdict_of",
    "with_provider",
    "with_provider_sync",
]

ALLOW: Final = "Allow"
DENY: Final = "Deny"
ALWAYS_ALLOW: Final = "Always allow"
ALWAYS_DENY: Final = "Always deny"
"""Offered after ``Deny`` by frameworks that can remember a rejection (OpenAI Agents)."""
STOPPED: Final = frozenset({ErrorCode.ASK_CANCELLED, ErrorCode.ASK_TIMEOUT, ErrorCode.ASK_ABORTED})
"""The codes of an ask that ended without an answer: a dismissal, a timeout, an abort."""
MAX_DETAIL: Final = 4000
"""How many characters of a tool's input a permission question shows."""


class AssignByTool:
    """A provider that assigns each approval to who may answer it, by its tool.

    ``assignments`` maps a tool's name (a :class:`~interaction.PermissionIntent`'s
    ``tool``: ``Bash``, ``deploy``) to an :class:`~interaction.Assignment`; a request whose
    permission questions all name one mapped tool, and that has no assignment of its own,
    is passed to ``inner`` with that one. Anything else passes unchanged. Put it outside an
    :class:`~interaction.audit.AuditProvider`, so the audit records the assignment. A
    quorum applies to one question: a batch of several calls of a tool with a quorum is
    refused (``BAD_REQUEST``), which every integration takes as a denial. A mapping that
    ``ask()`` would refuse is a ``UserInteractionError`` here, when it is built.
    """

    def __init__(
        self, inner: UserInteractionProvider, assignments: Mapping[str, Assignment]
    ) -> None:
        self.inner = inner
        self.assignments = dict(assignments)
        for tool, assignment in self.assignments.items():
            probe = AskUserQuestionRequest([approval_item(tool, {})], assignment=assignment)
            check_request(probe)

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return await self.inner.ask(self.assigned(request))

    def assigned(self, request: AskUserQuestionRequest) -> AskUserQuestionRequest:
        """``request`` with the assignment of its one tool, if it is mapped."""
        if request.assignment is not None:
            return request
        tools = {
            q.intent.tool if isinstance(q.intent, PermissionIntent) else None
            for q in request.questions
        }
        tool = tools.pop() if len(tools) == 1 else None
        assignment = None if tool is None else self.assignments.get(tool)
        if assignment is None:
            return request
        return dataclasses.replace(request, assignment=assignment)


def is_suspension(error: HarnessError) -> bool:
    """Whether ``error`` is an ``AskSuspended``: for the host, never a denial or a result."""
    return isinstance(error, AskSuspended)


async def ask_through(
    request: AskUserQuestionRequest, provider: UserInteractionProvider | None
) -> AskUserQuestionAnswer:
    """``ask(request)`` through ``provider``, or through the provider active here if ``None``.

    An answer that comes back after the request's signal fired is refused with the signal's
    error (``ASK_TIMEOUT``, ``ASK_ABORTED``): a provider may answer before ``ask()`` hears
    of the abort, and an expired timeout must deny, whichever came first.
    """
    answer = await ask_with(request, provider)
    check_caller(request.signal, None)
    return answer


def checked_timeout(timeout: float | None, *, name: str = "timeout") -> float | None:
    """``timeout`` (seconds) when it is ``None`` or a number a timeout can be: positive,
    finite and at most ``threading.TIMEOUT_MAX``; else a ``ValueError`` naming ``name``.

    Integrations check their timeouts when they are built, so a bad one fails there, not
    on every question.
    """
    if timeout is None:
        return None
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 0 < timeout <= threading.TIMEOUT_MAX  # also refuses inf and nan
    ):
        raise ValueError(
            f"{name} must be a positive, finite number of seconds (at most"
            f" {threading.TIMEOUT_MAX:.0f}), got {short_repr(timeout)}"
        )
    return float(timeout)


def timeout_signal(timeout: float | None) -> AbortSignal | None:
    """A fresh signal for one question bounded by a checked ``timeout``, or ``None``."""
    return AbortSignal.timeout(timeout) if timeout is not None else None


def usable_id(value: object) -> TypeGuard[str]:
    """Whether ``value`` may be a question id or a resume key as it is (the same rule):
    a string, not blank, without control or bidirectional characters."""
    if type(value) is not str:
        return False
    try:
        check_questions((AskUserQuestionItem(value, "?"),))
    except UserInteractionError:
        return False
    return True


def question_ids(call_ids: Sequence[object]) -> list[str]:
    """A unique question id for each tool call, in order: the call's own id when it is
    usable and not taken by an earlier call, else ``call-<n>`` (its position).

    Call ids come from the model, so one blank, control-laden or repeated id must not fail
    the whole batch; the ids are matched back to the calls by position.
    """
    kept: list[str | None] = []
    taken: set[str] = set()
    for call_id in call_ids:  # first the usable ids, so a derived one never displaces them
        if usable_id(call_id) and call_id not in taken:
            taken.add(call_id)
            kept.append(call_id)
        else:
            kept.append(None)
    ids: list[str] = []
    for index, own in enumerate(kept):
        question_id = own
        if question_id is None:
            question_id = base = f"call-{index + 1}"
            count = 1
            while question_id in taken:
                count += 1
                question_id = f"{base}-{count}"
            taken.add(question_id)
        ids.append(question_id)
    return ids


def safe_line(text: object, fallback: str) -> str:
    """One line of untrusted text fit for a question: controls made visible, never blank."""
    if not isinstance(text, str) or not text.strip():
        return fallback
    return escape_controls(" ".join(text.split()), keep_newlines=False)


def provenance_text(text: object) -> str | None:
    """Untrusted text fit for a provenance field (one line, cut to its length), or
    ``None``: a host's odd name must never turn a question into a refusal."""
    if not isinstance(text, str) or not text.strip():
        return None
    shown = safe_line(text, "")[:MAX_PROVENANCE_TEXT]
    try:
        check_provenance(Provenance(source=shown))
    except UserInteractionError:
        return None
    return shown


def asked_by(
    framework: str, *, agent: object = None, session: object = None, tool: object = None
) -> Provenance:
    """Who asks, as a framework knows it: its ``agent``'s name (else the ``framework``'s
    own), the run or thread (``session``) and the asking ``tool``. Each is untrusted text,
    kept as :func:`provenance_text` makes it fit, or left out; an id that is a number or a
    UUID is taken as its text."""
    if isinstance(session, int | UUID) and not isinstance(session, bool):
        session = str(session)
    return Provenance(
        source=provenance_text(agent) or framework,
        session=provenance_text(session),
        tool=provenance_text(tool),
    )


def tool_detail(arguments: object, *, notes: Sequence[str | None] = ()) -> str:
    """The detail of a permission question: the notes that are set, then the tool's input."""
    try:
        shown = json.dumps(arguments, indent=2, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):  # a circular structure, say
        shown = repr(arguments)
    if len(shown) > MAX_DETAIL:
        shown = f"{shown[:MAX_DETAIL]}... ({len(shown) - MAX_DETAIL} more characters)"
    parts = [note for note in notes if note and note.strip()]
    parts.append(f"Input:\n{shown}")
    return escape_controls("\n\n".join(parts))


SUMMARY_KEYS: Final = ("command", "file_path", "notebook_path", "path", "url", "pattern")
"""The input keys whose text stands for a tool call's input, the first one present (a
shell's command, a file tool's path, as Claude Code's rules read them); without one, the
input's compact JSON does. The prompt's detail always shows the whole input."""


def input_summary(arguments: object) -> str:
    """A tool call's input on one line (see :data:`SUMMARY_KEYS`): what a permission
    prompt shows first and a policy rule's pattern is matched against.

    Never cut short (a rule for the start of a long input must not match the rest), and
    control characters, line breaks included, are written as visible escapes rather than
    dropped or joined, so ``ls\nrm -rf ~`` never reads as ``ls rm -rf ~``.
    """
    if isinstance(arguments, dict):
        key = next((k for k in SUMMARY_KEYS if isinstance(arguments.get(k), str)), None)
        text = _compact(arguments) if key is None else arguments[key]
    elif isinstance(arguments, str):
        text = arguments
    else:
        text = _compact(arguments)
    return escape_controls(text, keep_newlines=False)


def _compact(arguments: object) -> str:
    try:
        return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"), default=repr)
    except (TypeError, ValueError):  # a circular structure, say
        return repr(arguments)


def approval_item(
    tool_name: str,
    arguments: object,
    *,
    question: str | None = None,
    notes: Sequence[str | None] = (),
    more: Sequence[AskUserQuestionOption] = (),
    always: str | None = None,
    deny_always: bool = False,
    id: str = "permission",
    header: str = "Permission",
) -> AskUserQuestionItem:
    """The Allow / (more options) / Deny question for one tool call, a permission prompt.

    Its :class:`~interaction.PermissionIntent` names ``Allow``, ``Deny`` and, when given,
    ``always`` (one of ``more``'s labels) as the allow-always option, so every UI shows a
    permission prompt and a policy provider can answer it. ``deny_always`` adds
    :data:`ALWAYS_DENY` after ``Deny``.
    """
    name = safe_line(tool_name, "a tool")
    return AskUserQuestionItem(
        id,
        safe_line(question, f"Allow {name} to run?"),
        detail=tool_detail(arguments, notes=notes),
        header=header,
        options=[
            AskUserQuestionOption(ALLOW, f"Run {name} this once"),
            *more,
            AskUserQuestionOption(DENY, f"Do not run {name}"),
            *([AskUserQuestionOption(ALWAYS_DENY, f"Never run {name}")] if deny_always else []),
        ],
        intent=PermissionIntent(name, input_summary(arguments), ALLOW, DENY, always),
    )


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of an approval question.

    ``choice`` is the allow option chosen (``None`` when denied); ``message`` says why a
    call was denied, in words fit for the model (the user's own text when they wrote one).
    ``code`` is the error code when the ask ended without an answer. ``always``: the
    allow-always option, or :data:`ALWAYS_DENY`, was chosen. ``edit`` is the user's own
    text (an edited input, or a reply), which denies until the caller checks it again.
    """

    allowed: bool
    choice: str | None = None
    message: str = ""
    code: str | None = None
    always: bool = False
    edit: str | None = None


async def ask_approval(
    item: AskUserQuestionItem,
    *,
    tool_name: str,
    provider: UserInteractionProvider | None = None,
    signal: AbortSignal | None = None,
    key: str | None = None,
    provenance: Provenance | None = None,
) -> Verdict:
    """Ask ``item`` (from :func:`approval_item`) and read the verdict; fails closed.

    A suspension (``ASK_SUSPENDED``) is re-raised for the host; every other failure denies.
    ``key`` is the request's resume key (the host's id for the tool call); ``provenance``
    says who asks.
    """
    (verdict,) = await ask_approvals(
        [(item, tool_name)], provider=provider, signal=signal, key=key, provenance=provenance
    )
    return verdict


async def ask_approvals(
    items: Sequence[tuple[AskUserQuestionItem, str]],
    *,
    provider: UserInteractionProvider | None = None,
    signal: AbortSignal | None = None,
    key: str | None = None,
    provenance: Provenance | None = None,
) -> list[Verdict]:
    """Ask several approval questions (each with its tool's name) as one batch.

    The question ids must be unique. An ask that ends without an answer denies them all.
    ``provenance`` says who asks; a batch of one tool's calls names that tool as the one
    asking where ``provenance`` names none.
    """
    request = AskUserQuestionRequest(
        [item for item, _ in items], signal=signal, key=key, provenance=provenance
    )
    tools = {name for _, name in items}
    if len(tools) == 1:
        request = with_provenance(request, tool=provenance_text(tools.pop()))
    try:
        answer = await ask_through(request, provider)
    except HarnessError as error:
        if is_suspension(error):
            raise
        return [
            Verdict(
                False,
                message=f"{safe_line(name, 'the tool')} was not approved: {error.message}",
                code=error.code,
            )
            for _, name in items
        ]
    return [
        verdict_of(reply, name, item)
        for reply, (item, name) in zip(answer.answers, items, strict=True)
    ]


def verdict_of(
    reply: AskUserQuestionAnswerItem, tool_name: str, item: AskUserQuestionItem | None = None
) -> Verdict:
    """The verdict one approval answer gives: only an allow option allows."""
    name = safe_line(tool_name, "the tool")
    if reply.custom is not None:
        return Verdict(
            False, message=f"The user denied {name} and said: {reply.custom}", edit=reply.custom
        )
    if not reply.selected:
        return Verdict(False, message=f"The user skipped the permission question for {name}")
    choice = reply.selected[0]
    if choice == DENY:
        return Verdict(False, message=f"The user denied {name}")
    if choice == ALWAYS_DENY:
        return Verdict(False, message=f"The user denied {name}, from now on", always=True)
    intent = None if item is None else item.intent
    always = isinstance(intent, PermissionIntent) and choice == intent.allow_always
    return Verdict(True, choice=choice, always=always)
