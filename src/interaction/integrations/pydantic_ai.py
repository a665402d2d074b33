"""pydantic-ai: the ``ask_user_question`` toolset, tool approvals, and an ``AskUser`` answerer.

- :func:`ask_user_toolset` is a ``FunctionToolset`` with one tool, ``ask_user_question``,
  whose schema is ``interaction.tool``'s and whose calls go through ``run_tool``: the model
  gets ``{"answers":[...]}`` or an ``Error: ...`` result it can act on.
- :func:`approve_deferred` turns the ``approvals`` of a run's ``DeferredToolRequests`` into
  one batch of Allow / Deny questions and returns the ``DeferredToolResults`` to continue the
  run with; :func:`approval_handler` is the same as a ``HandleDeferredToolCalls`` handler, so
  the run never stops.
- a suspended ask (``AskSuspended``) defers the tool call; :func:`answer_deferred_calls`
  answers the deferred calls for the next run;
- :func:`answerer` answers pydantic-ai-harness's ``AskUser`` capability through the seam.

Every function asks ``provider`` when one is given, else the provider active in context.
"""

from __future__ import annotations

import dataclasses
import json
import unicodedata
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, TypeAlias

try:
    from pydantic_ai import (
        DeferredToolRequests,
        DeferredToolResults,
        FunctionToolset,
        ModelRetry,
        RunContext,
        Tool,
        ToolApproved,
        ToolDenied,
    )
    from pydantic_ai.exceptions import CallDeferred
    from pydantic_ai.toolsets import ToolsetTool
    from pydantic_core import SchemaValidator, core_schema
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "interaction.integrations.pydantic_ai needs pydantic-ai:"
        ' pip install "interaction-seam[pydantic-ai]"'
    ) from exc

from .._core import (
    AbortSignal,
    AskSuspended,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    HarnessError,
    Provenance,
    UserInteractionError,
    UserInteractionProvider,
    request_digest,
)
from ..tool import (
    DEFAULT_LIMITS,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    ToolLimits,
    request_from_arguments,
    run_tool,
    tool_parameters,
)
from ._common import (
    STOPPED,
    Verdict,
    approval_item,
    ask_approval,
    ask_approvals,
    ask_through,
    asked_by,
    checked_timeout,
    question_ids,
    timeout_signal,
    with_provider,
)

if TYPE_CHECKING:
    from pydantic_ai_harness.ask_user import Answerer, AskUserRequest, AskUserResponse

__all__ = [
    "FORGED",
    "FRAMEWORK",
    "SKIPPED_ANSWER",
    "ApprovalHandler",
    "answer_deferred_calls",
    "answerer",
    "approval_handler",
    "approve_deferred",
    "ask_user_toolset",
    "harness_text",
]

ApprovalHandler: TypeAlias = Callable[
    [RunContext[object], DeferredToolRequests], Awaitable[DeferredToolResults | None]
]
FRAMEWORK: Final = "pydantic-ai"
"""The source of a question when the run's agent has no name."""
SKIPPED_ANSWER: Final = "(The user skipped this question.)"
"""What the ``AskUser`` answerer sends for a skipped question: the harness has no skip."""
FORGED: Final = "the deferred call's question does not match its digest"
_RETRIED: Final = frozenset({ErrorCode.BAD_REQUEST, ErrorCode.EMPTY_QUESTIONS})
"""The codes of arguments the model must fix: a ``ModelRetry``, as pydantic-ai expects."""
_OBJECT_ARGUMENTS: Final = SchemaValidator(
    core_schema.dict_schema(keys_schema=core_schema.str_schema())
)
"""The tool's arguments are a JSON object: anything else is a validation error (a retry)."""


# ---------------------------------------------------------------------------- toolset


def ask_user_toolset(
    provider: UserInteractionProvider | None = None,
    *,
    limits: ToolLimits = DEFAULT_LIMITS,
    timeout: float | None = None,
) -> FunctionToolset[object]:
    """A toolset with the model-facing ``ask_user_question`` tool (``interaction.tool``'s).

    ``timeout`` (seconds) bounds each ask; the model then gets the ``ASK_TIMEOUT`` result.
    When the provider suspends the ask (``AskSuspended``), the call is deferred
    (``CallDeferred``): the run ends with it in ``DeferredToolRequests.calls``, and
    :func:`answer_deferred_calls` answers it for the next run. A ``timeout`` that is not
    positive and finite is a ``ValueError`` here. Each question's provenance names the
    run's agent, its ``run_id`` as the session and the tool (by the name the model calls).
    """
    timeout = checked_timeout(timeout)

    async def ask_user_question(ctx: RunContext[object], **arguments: object) -> str:
        provenance = _asked_by(ctx, ctx.tool_name)
        try:
            result = await with_provider(
                provider,
                lambda: run_tool(
                    arguments,
                    signal=timeout_signal(timeout),
                    limits=limits,
                    provenance=provenance,
                ),
            )
        except AskSuspended as suspended:
            metadata = {"digest": suspended.digest, "source": provenance.source}
            if provenance.session is not None:
                metadata["session"] = provenance.session
            raise CallDeferred(metadata=metadata) from None
        if result.error is not None and result.error["code"] in _RETRIED:
            raise ModelRetry(result.content.removeprefix("Error: "))
        return result.content

    tool: Tool[object] = Tool.from_schema(
        ask_user_question,
        name=TOOL_NAME,
        description=TOOL_DESCRIPTION,
        json_schema=tool_parameters(limits),
        takes_ctx=True,
    )
    return _ObjectArgumentsToolset([tool])


def _asked_by(ctx: RunContext[Any], tool: str | None = None) -> Provenance:
    """Who asks, as a run's context says: its agent's name and its run id."""
    return asked_by(
        FRAMEWORK,
        agent=None if ctx.agent is None else ctx.agent.name,
        session=ctx.run_id,
        tool=tool,
    )


class _ObjectArgumentsToolset(FunctionToolset[object]):
    """A ``FunctionToolset`` whose tools take a JSON object of arguments, checked as such.

    ``Tool.from_schema`` validates arguments with an any-value schema, so a model's ``[1]``
    or ``"x"`` reached the function as ``**arguments`` and ended the run with a
    ``TypeError``. Here it is pydantic-ai's own validation error: a retry prompt, counted
    against the tool's retries and seen by the validation error hooks, as for a plain tool.
    """

    async def get_tools(self, ctx: RunContext[object]) -> dict[str, ToolsetTool[object]]:
        tools = await super().get_tools(ctx)
        return {
            name: dataclasses.replace(tool, args_validator=_OBJECT_ARGUMENTS)
            for name, tool in tools.items()
        }


async def answer_deferred_calls(
    requests: DeferredToolRequests,
    *,
    provider: UserInteractionProvider | None = None,
    signal: AbortSignal | None = None,
    limits: ToolLimits = DEFAULT_LIMITS,
) -> DeferredToolResults:
    """Ask the deferred ``ask_user_question`` calls of ``requests`` and return their results.

    Each call deferred by :func:`ask_user_toolset` (its metadata holds the digest of the
    question it suspended) is parsed, held to that digest (``BAD_REQUEST``, "the deferred
    call's question does not match its digest", when its arguments were changed since),
    and asked through ``provider``, else the provider active here, with the provenance of
    the run that deferred it (its agent and run id, kept in the call's metadata); its
    result text goes under the call's id in ``DeferredToolResults.calls``. Other deferred
    calls are left alone.
    """

    async def answer(arguments: dict[str, object], provenance: Provenance) -> str:
        result = await with_provider(
            provider,
            lambda: run_tool(arguments, signal=signal, limits=limits, provenance=provenance),
        )
        return result.content

    calls: dict[str, object] = {}
    for call in requests.calls:
        metadata = requests.metadata.get(call.tool_call_id, {})
        digest = metadata.get("digest")
        if call.tool_name != TOOL_NAME or digest is None:
            continue  # not deferred by our toolset
        arguments = call.args_as_dict()
        try:
            asked = request_digest(request_from_arguments(arguments, limits=limits))
        except UserInteractionError:
            asked = None
        if asked != digest:
            raise UserInteractionError(FORGED, ErrorCode.BAD_REQUEST)
        asker = asked_by(
            FRAMEWORK, agent=metadata.get("source"), session=metadata.get("session"), tool=TOOL_NAME
        )
        calls[call.tool_call_id] = await answer(arguments, asker)
    return DeferredToolResults(calls=calls)


# ---------------------------------------------------------------------------- approvals


async def approve_deferred(
    requests: DeferredToolRequests,
    *,
    provider: UserInteractionProvider | None = None,
    signal: AbortSignal | None = None,
    provenance: Provenance | None = None,
) -> DeferredToolResults:
    """Ask about every call in ``requests.approvals`` (one question each, in one batch).

    ``Allow`` approves (``ToolApproved()``); anything else is ``ToolDenied`` with a message
    for the model: ``Deny``, the user's own text, a skip, a dismissal, a timeout, an abort.
    The user's own text that is a JSON object is their edit of the call's arguments: it is
    asked again as a permission of its own (up to :data:`MAX_EDITS` times), and an
    ``Allow`` of it is ``ToolApproved(override_args=...)``; the edit alone never approves.
    ``requests.calls`` (external execution) are left alone. A call's question id is its
    ``tool_call_id`` when that is a usable, unique question id, else ``call-<n>``: the ids
    come from the model, and one unusable id must not fail the batch. ``provenance`` says who
    asks (:func:`approval_handler` gives the run's agent and run id; the default names
    pydantic-ai); the tool is named when every call is one tool's.
    """
    if not requests.approvals:
        return DeferredToolResults()
    if provenance is None:
        provenance = asked_by(FRAMEWORK)
    ids = question_ids([call.tool_call_id for call in requests.approvals])
    items = [
        (
            approval_item(
                call.tool_name, call.args_as_dict(), id=question_id, header="Approve tool call"
            ),
            call.tool_name,
        )
        for call, question_id in zip(requests.approvals, ids, strict=True)
    ]
    verdicts = await ask_approvals(items, provider=provider, signal=signal, provenance=provenance)
    approvals: dict[str, bool | ToolApproved | ToolDenied] = {}
    for call, first, question_id in zip(requests.approvals, verdicts, ids, strict=True):
        verdict = first
        edited = _edited_arguments(verdict)
        rounds = 0
        while edited is not None and rounds < MAX_EDITS:
            rounds += 1
            item = approval_item(
                call.tool_name,
                edited,
                question=f"Allow {call.tool_name} to run with your edited input?",
                id=question_id,
                header="Approve the edited call",
            )
            verdict = await ask_approval(
                item,
                tool_name=call.tool_name,
                provider=provider,
                signal=signal,
                provenance=provenance,
            )
            if verdict.allowed:
                approvals[call.tool_call_id] = ToolApproved(override_args=edited)
                break
            edited = _edited_arguments(verdict)
        else:
            approvals[call.tool_call_id] = (
                ToolApproved() if verdict.allowed else ToolDenied(verdict.message)
            )
    return DeferredToolResults(approvals=approvals)


MAX_EDITS: Final = 3
"""How many edits of one call's arguments are asked about before it is denied."""


def _edited_arguments(verdict: Verdict) -> dict[str, Any] | None:
    """The user's own text as edited arguments, when it is a JSON object."""
    if verdict.edit is None:
        return None
    try:
        parsed = json.loads(verdict.edit)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def approval_handler(
    provider: UserInteractionProvider | None = None, *, timeout: float | None = None
) -> ApprovalHandler:
    """A ``HandleDeferredToolCalls(handler=...)`` handler that asks for every approval.

    It resolves approvals only; external calls are left to the next handler (or the
    run's ``DeferredToolRequests`` output). ``timeout`` is checked as the toolset's. The
    questions name the run's agent and its ``run_id`` as their session.
    """
    timeout = checked_timeout(timeout)

    async def handler(
        ctx: RunContext[object], requests: DeferredToolRequests
    ) -> DeferredToolResults | None:
        if not requests.approvals:
            return None
        return await approve_deferred(
            requests,
            provider=provider,
            signal=timeout_signal(timeout),
            provenance=_asked_by(ctx),
        )

    return handler


# ---------------------------------------------------------------------------- AskUser


def answerer(
    provider: UserInteractionProvider | None = None,
) -> Answerer:
    """An ``answerer`` for pydantic-ai-harness's ``AskUser(answerer=...)``.

    Each question is asked with its ``header`` as its id (the harness keeps headers
    unique) and comes back under that header. A dismissal, timeout or abort is
    ``AskUserResponse(cancelled=True)``. What the harness cannot carry: a skipped question
    (sent as :data:`SKIPPED_ANSWER`, its custom answer), and options chosen together with
    text of one's own on a multi-select question (sent as one custom answer naming both).
    Use ``AskUser(timeout=...)`` to bound the wait.

    Where the harness's rules and the seam's differ, the run goes on: a question the
    harness accepts but the seam refuses (labels that differ only by an invisible
    character, say) is a ``ModelRetry`` with the seam's reason, and text of the user's own
    that the harness would refuse is sent in a form it accepts (see :func:`harness_text`).
    """
    try:
        from pydantic_ai_harness.ask_user import AskUserAnswer, AskUserResponse
    except ImportError as exc:
        raise ImportError(
            "interaction.integrations.pydantic_ai.answerer needs pydantic-ai-harness:"
            ' pip install "interaction-seam[pydantic-ai-harness]"'
        ) from exc

    async def answer(request: AskUserRequest, /) -> AskUserResponse:
        asked = AskUserQuestionRequest(
            [
                AskUserQuestionItem(
                    question.header,
                    question.question,
                    header=question.header,
                    options=[
                        AskUserQuestionOption(option.label, option.description)
                        for option in question.options
                    ],
                    multi_select=question.multi_select,
                )
                for question in request.questions
            ]
        )
        try:
            reply = await ask_through(asked, provider)
        except HarnessError as error:
            if error.code in STOPPED:
                return AskUserResponse(cancelled=True)
            if error.code in _RETRIED:
                raise ModelRetry(error.message) from None
            raise
        answers = []
        for question, item in zip(request.questions, reply.answers, strict=True):
            custom = None if item.custom is None else harness_text(item.custom)
            if custom is not None and item.selected:
                custom = f"Chose {', '.join(item.selected)}, and added: {custom}"
                answers.append(AskUserAnswer(header=question.header, custom_answer=custom))
            elif custom is not None:
                answers.append(AskUserAnswer(header=question.header, custom_answer=custom))
            elif item.selected:
                answers.append(AskUserAnswer(header=question.header, selected=tuple(item.selected)))
            else:  # skipped, or text with nothing the harness can show
                answers.append(AskUserAnswer(header=question.header, custom_answer=SKIPPED_ANSWER))
        return AskUserResponse(answers=tuple(answers))

    return answer


def harness_text(text: str) -> str | None:
    """The user's own text as pydantic-ai-harness accepts it, or ``None`` if nothing is left.

    The harness takes printable characters, space separators and newlines. Other
    whitespace (a tab, a carriage return, a line separator) becomes a space, invisible
    format characters (the zero-width joiner inside 👩‍💻) are dropped, and any other
    control character becomes U+FFFD, so what the user meant stays readable.
    """
    kept: list[str] = []
    for char in text:
        if char.isprintable() or char == "\n" or unicodedata.category(char) == "Zs":
            kept.append(char)
        elif char.isspace():
            kept.append(" ")
        elif unicodedata.category(char) != "Cf":
            kept.append("\ufffd")
    cleaned = "".join(kept)
    return cleaned if cleaned.strip() else None
