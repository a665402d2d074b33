"""The Claude Agent SDK: a ready ``can_use_tool`` callback, and an MCP permission-prompt tool.

- :func:`can_use_tool` answers the SDK's permission requests through the seam. Claude
  Code's built-in ``AskUserQuestion`` is asked as it is and answered in the shape the CLI
  accepts; every other tool becomes an Allow / Deny question, with the SDK's permission
  suggestions ("always allow ...") as further allow options.
- :func:`permission_prompt_server` serves the same decision as an MCP tool for
  ``claude -p --permission-prompt-tool``; ``python -m interaction.integrations.claude_agent_sdk``
  runs it over stdio with the web page answering (stdio is taken by MCP).

The callback runs in the context the SDK captured when it connected (``query()`` or
``ClaudeSDKClient.connect()``): a provider registered around that call is the one asked.
Pass a provider to :func:`can_use_tool` to ask that one instead, whatever is registered.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, TypeAlias

try:
    from claude_agent_sdk import (
        PermissionResultAllow,
        PermissionResultDeny,
        PermissionUpdate,
        ToolPermissionContext,
    )
    from mcp.server.mcpserver import MCPServer
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "interaction.integrations.claude_agent_sdk needs the Claude Agent SDK:"
        ' pip install "interaction-seam[claude]"'
    ) from exc

from .._core import (
    MAX_PROVENANCE_TEXT,
    AbortSignal,
    AskUserQuestionAnswer,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    HarnessError,
    Provenance,
    UserInteractionError,
    UserInteractionProvider,
    check_questions,
    fault,
    json_type,
    label_key,
    problem_of,
    provide,
    with_provenance,
)
from ..tool import DEFAULT_LIMITS, ToolLimits
from ._common import (
    ALLOW,
    DENY,
    approval_item,
    ask_approval,
    ask_through,
    checked_timeout,
    is_suspension,
    provenance_text,
    safe_line,
    timeout_signal,
    usable_id,
)

__all__ = [
    "ASK_USER_QUESTION",
    "STOP",
    "CanUseTool",
    "PermissionResult",
    "answered_input",
    "ask_user_question_request",
    "can_use_tool",
    "decide",
    "dismissed_input",
    "main",
    "permission_prompt",
    "permission_prompt_server",
    "suggestion_label",
]

ASK_USER_QUESTION: Final = "AskUserQuestion"
"""The name of Claude Code's built-in tool that asks the user questions."""
STOP: Final = "Deny, and stop"
"""The option of a permission question that denies the call and stops the turn."""

PermissionResult: TypeAlias = PermissionResultAllow | PermissionResultDeny
CanUseTool: TypeAlias = Callable[
    [str, dict[str, Any], ToolPermissionContext], Awaitable[PermissionResult]
]

_PLACES: Final[Mapping[str, str]] = {
    "session": "for this session",
    "localSettings": "in this project (local settings)",
    "projectSettings": "in this project (shared settings)",
    "userSettings": "in all projects (user settings)",
    "cliArg": "for this run",
}
MAX_LABEL: Final = 120


# ---------------------------------------------------------------------------- AskUserQuestion


def _bad(path: str, problem: str) -> UserInteractionError:
    return fault(ErrorCode.BAD_REQUEST, path, problem, source=ASK_USER_QUESTION)


def _text(
    data: Mapping[str, object], key: str, path: str, *, required: bool, limit: int
) -> str | None:
    value = data.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise _bad(f"{path}.{key}", f"expected a string, got {json_type(value)}")
    if len(value) > limit:
        raise _bad(f"{path}.{key}", f"is {len(value)} characters long; the limit is {limit}")
    return value


def _count(values: list[object], path: str, what: str, limit: int) -> None:
    if len(values) > limit:
        raise _bad(path, f"has {len(values)} {what}; the limit is {limit}")


def ask_user_question_request(
    tool_input: Mapping[str, object],
    *,
    signal: AbortSignal | None = None,
    key: str | None = None,
    limits: ToolLimits = DEFAULT_LIMITS,
) -> AskUserQuestionRequest:
    """The request of an ``AskUserQuestion`` input; question ``i`` gets the id ``q{i+1}``.

    ``BAD_REQUEST`` for an input the CLI would not send, for one beyond ``limits`` (the
    bounds the model-facing tool applies: questions, options, and the length of each
    text), and for a batch whose question texts are not unique (the answers are keyed by
    question text, so they would collide).
    """
    questions = tool_input.get("questions")
    if not isinstance(questions, list):
        raise _bad("questions", f"expected an array, got {json_type(questions)}")
    _count(questions, "questions", "questions", limits.max_questions)
    items: list[AskUserQuestionItem] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(questions):
        path = f"questions[{index}]"
        if not isinstance(raw, dict):
            raise _bad(path, f"expected an object, got {json_type(raw)}")
        text = _text(raw, "question", path, required=True, limit=limits.max_question)
        assert text is not None
        if text in seen:
            raise _bad(
                f"{path}.question",
                f"repeats questions[{seen[text]}].question; the answers are keyed by"
                " question text, so every question must be worded differently",
            )
        seen[text] = index
        raw_options = raw.get("options", [])
        if not isinstance(raw_options, list):
            raise _bad(f"{path}.options", f"expected an array, got {json_type(raw_options)}")
        _count(raw_options, f"{path}.options", "options", limits.max_options)
        options = []
        for o_index, option in enumerate(raw_options):
            o_path = f"{path}.options[{o_index}]"
            if not isinstance(option, dict):
                raise _bad(o_path, f"expected an object, got {json_type(option)}")
            label = _text(option, "label", o_path, required=True, limit=limits.max_label)
            assert label is not None
            description = _text(
                option, "description", o_path, required=False, limit=limits.max_description
            )
            options.append(AskUserQuestionOption(label, description))
        multi = raw.get("multiSelect", False)
        if not isinstance(multi, bool):
            raise _bad(f"{path}.multiSelect", f"expected a boolean, got {json_type(multi)}")
        items.append(
            AskUserQuestionItem(
                f"q{index + 1}",
                text,
                header=_text(raw, "header", path, required=False, limit=limits.max_header),
                options=options,
                multi_select=multi,
            )
        )
    try:
        check_questions(tuple(items))
    except UserInteractionError as error:
        raise _bad(error.path or "questions", problem_of(error)) from None
    return AskUserQuestionRequest(items, signal=signal, key=key)


def answered_input(
    tool_input: Mapping[str, object],
    request: AskUserQuestionRequest,
    answer: AskUserQuestionAnswer,
) -> dict[str, object]:
    """The ``updated_input`` the CLI accepts: the input, plus ``answers`` and ``annotations``.

    ``answers`` maps each answered question's text to its label (single-select) or list of
    labels (multi-select); the user's own text is the answer of a single-select question
    and the last item of a multi-select one. A skipped question has no answer and is
    annotated ``{"unanswered": "skipped"}`` under ``annotations`` (present only then).
    Nothing else is added or changed.
    """
    answers: dict[str, object] = {}
    annotations: dict[str, object] = {}
    for question, item in zip(request.questions, answer.answers, strict=True):
        chosen = [*item.selected, *([item.custom] if item.custom is not None else [])]
        if not chosen:
            annotations[question.question] = {"unanswered": "skipped"}
        elif question.multi_select:
            answers[question.question] = chosen
        else:
            answers[question.question] = chosen[0]
    updated: dict[str, object] = {**tool_input, "answers": answers}
    if annotations:
        updated["annotations"] = annotations
    return updated


def dismissed_input(
    tool_input: Mapping[str, object], request: AskUserQuestionRequest
) -> dict[str, object]:
    """The ``updated_input`` of a dismissed ``AskUserQuestion``, in the CLI's own form: no
    answers, and every question annotated ``{"unanswered": "dismissed"}``."""
    return {
        **tool_input,
        "answers": {},
        "annotations": {q.question: {"unanswered": "dismissed"} for q in request.questions},
    }


# ---------------------------------------------------------------------------- other tools


def suggestion_label(update: PermissionUpdate) -> str:
    """The option label offering one of the SDK's permission suggestions."""
    place = _PLACES.get(update.destination or "session", "")
    if update.type == "addRules" and update.behavior == "allow":
        rules = ", ".join(
            rule.tool_name
            if rule.rule_content is None
            else f"{rule.tool_name}({rule.rule_content})"
            for rule in update.rules or ()
        )
        text = f"Allow, and always allow {rules} {place}"
    elif update.type == "setMode" and update.mode is not None:
        text = f"Allow, and switch to {update.mode} mode {place}"
    elif update.type == "addDirectories":
        text = f"Allow, and allow {', '.join(update.directories or ())} {place}"
    else:
        text = f"Allow, and apply the suggested {update.type} {place}"
    text = safe_line(text, "Allow, and apply the suggestion")
    return text if len(text) <= MAX_LABEL else f"{text[: MAX_LABEL - 1]}…"


def _suggestion_options(
    suggestions: Sequence[PermissionUpdate],
) -> list[tuple[AskUserQuestionOption, PermissionUpdate]]:
    options: list[tuple[AskUserQuestionOption, PermissionUpdate]] = []
    taken = {label_key(ALLOW), label_key(DENY), label_key(STOP)}
    for update in suggestions:
        label = base = suggestion_label(update)
        count = 1
        while label_key(label) in taken:
            count += 1
            label = f"{base} ({count})"
        taken.add(label_key(label))
        options.append((AskUserQuestionOption(label), update))
    return options


async def decide(
    tool_name: str,
    tool_input: dict[str, Any],
    context: ToolPermissionContext | None = None,
    *,
    provider: UserInteractionProvider | None = None,
    signal: AbortSignal | None = None,
    limits: ToolLimits = DEFAULT_LIMITS,
) -> PermissionResult:
    """The permission decision for one tool call, asked through the seam; fails closed.

    ``AskUserQuestion`` is answered with :func:`answered_input`, a dismissed one with
    :func:`dismissed_input` (the CLI's ``unanswered: "dismissed"``); a timed-out, aborted
    or malformed one, or one beyond ``limits``, is denied with the reason. Any other tool
    is an Allow / Deny / Deny, and stop permission prompt whose detail shows the prompt's
    description, the reason and the input; a suggestion chosen is returned as
    ``updated_permissions`` (the first suggestion that adds allow rules is the prompt's
    "allow always", so a policy provider remembers it too). :data:`STOP`, or dismissing
    the prompt, denies with ``interrupt=True``, which stops the turn; a denial, a skip or
    a timeout lets the model go on.
    """
    if context is None:
        context = ToolPermissionContext()
    # The CLI's id for the call is the resume key, when it can be one: a blank or
    # control-laden id must not turn a permission prompt into a denial.
    key = context.tool_use_id if usable_id(context.tool_use_id) else None
    provenance = _provenance(tool_name, context)
    if tool_name == ASK_USER_QUESTION:
        try:
            request = ask_user_question_request(tool_input, signal=signal, key=key, limits=limits)
        except HarnessError as error:
            return PermissionResultDeny(message=f"{error.message} ({error.code})")
        request = with_provenance(request, source=provenance.source, tool=provenance.tool)
        try:
            answer = await ask_through(request, provider)
        except HarnessError as error:
            if is_suspension(error):
                raise
            if error.code == ErrorCode.ASK_CANCELLED:
                return PermissionResultAllow(updated_input=dismissed_input(tool_input, request))
            return PermissionResultDeny(message=f"{error.message} ({error.code})")
        return PermissionResultAllow(updated_input=answered_input(tool_input, request, answer))
    suggested = _suggestion_options(context.suggestions)
    notes = [
        context.description,
        None if context.decision_reason is None else f"Why: {context.decision_reason}",
        None if context.blocked_path is None else f"Path: {context.blocked_path}",
    ]
    item = approval_item(
        tool_name,
        tool_input,
        question=context.title,
        notes=notes,
        more=[option for option, _ in suggested],
        always=_always_label(suggested),
        header=safe_line(context.display_name, "Permission"),
    )
    name = safe_line(tool_name, "the tool")
    stop = AskUserQuestionOption(STOP, f"Do not run {name}, and stop the turn")
    item = dataclasses.replace(item, options=[*item.options, stop])
    verdict = await ask_approval(
        item, tool_name=tool_name, provider=provider, signal=signal, key=key, provenance=provenance
    )
    if verdict.choice == STOP:  # the verdict reads every option but Deny as an allow
        return PermissionResultDeny(message=f"The user denied {name} and stopped", interrupt=True)
    if not verdict.allowed:
        # Dismissing the prompt stops the turn, as Esc does in Claude Code; a denial lets
        # the model go on and try something else.
        dismissed = verdict.code == ErrorCode.ASK_CANCELLED
        return PermissionResultDeny(message=verdict.message, interrupt=dismissed)
    chosen = [update for option, update in suggested if option.label == verdict.choice]
    return PermissionResultAllow(updated_permissions=chosen or None)


def _always_label(
    suggested: Sequence[tuple[AskUserQuestionOption, PermissionUpdate]],
) -> str | None:
    """The option that is the prompt's "allow always": the first suggestion that adds allow
    rules (Claude Code's own "don't ask again"), else none."""
    for option, update in suggested:
        if update.type == "addRules" and update.behavior == "allow":
            return option.label
    return None


def _provenance(tool_name: str, context: ToolPermissionContext) -> Provenance:
    """Who asks: the subagent that called the tool (the SDK's ``agent_id``; the main agent
    has none) and the tool."""
    agent = provenance_text(context.agent_id)
    return Provenance(
        source=None if agent is None else f"subagent {agent}"[:MAX_PROVENANCE_TEXT],
        tool=provenance_text(tool_name),
    )


def can_use_tool(
    provider: UserInteractionProvider | None = None,
    *,
    timeout: float | None = None,
    limits: ToolLimits = DEFAULT_LIMITS,
) -> CanUseTool:
    """A ``can_use_tool`` callback for ``ClaudeAgentOptions`` that asks a human.

    It asks ``provider``, or else the provider active in the context where the SDK
    connected. ``timeout`` (seconds, positive and finite: else a ``ValueError`` here) bounds
    each question: it then denies. When the CLI withdraws a request
    (``control_cancel_request``) the SDK cancels the callback, and the question is
    withdrawn from the UI. ``limits`` bounds an ``AskUserQuestion`` batch, as the
    model-facing tool's do.
    """
    timeout = checked_timeout(timeout)

    async def callback(
        tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResult:
        signal = timeout_signal(timeout)
        return await decide(
            tool_name, tool_input, context, provider=provider, signal=signal, limits=limits
        )

    return callback


# ---------------------------------------------------------------------------- MCP tool


def _wire(result: PermissionResult) -> str:
    if isinstance(result, PermissionResultDeny):
        denial: dict[str, object] = {"behavior": "deny", "message": result.message}
        if result.interrupt:
            denial["interrupt"] = True
        return json.dumps(denial, ensure_ascii=False)
    body: dict[str, object] = {"behavior": "allow", "updatedInput": result.updated_input}
    if result.updated_permissions:
        # All or none, as the SDK sends them: one may restrict what the others allow.
        with contextlib.suppress(ValueError):
            body["updatedPermissions"] = [u.to_dict() for u in result.updated_permissions]
    return json.dumps(body, ensure_ascii=False)


async def permission_prompt(
    tool_name: str,
    tool_input: dict[str, Any],
    *,
    provider: UserInteractionProvider | None = None,
    signal: AbortSignal | None = None,
    tool_use_id: str | None = None,
) -> str:
    """The permission-prompt tool's text: ``{"behavior":"allow","updatedInput":...}`` or
    ``{"behavior":"deny","message":...}``, as the CLI expects from
    ``--permission-prompt-tool``. ``updatedInput`` is the input (answered, for
    ``AskUserQuestion``)."""
    context = ToolPermissionContext(tool_use_id=tool_use_id)
    result = await decide(tool_name, tool_input, context, provider=provider, signal=signal)
    if isinstance(result, PermissionResultAllow) and result.updated_input is None:
        result = PermissionResultAllow(
            updated_input=tool_input, updated_permissions=result.updated_permissions
        )
    return _wire(result)


def permission_prompt_server(
    provider: UserInteractionProvider | None = None,
    *,
    name: str = "interaction",
    tool: str = "permission_prompt",
    timeout: float | None = None,
) -> MCPServer:
    """An ``mcp`` ``MCPServer`` with the permission-prompt tool ``tool``.

    Point the CLI at it with ``--permission-prompt-tool mcp__<name>__<tool>``. It asks
    ``provider``, or the provider active where the server runs. ``timeout`` is checked as
    :func:`can_use_tool`'s.
    """
    timeout = checked_timeout(timeout)
    server = MCPServer(name)

    async def permission_prompt_tool(
        tool_name: str, input: dict[str, Any], tool_use_id: str | None = None
    ) -> str:
        signal = timeout_signal(timeout)
        return await permission_prompt(
            tool_name, input, provider=provider, signal=signal, tool_use_id=tool_use_id
        )

    server.add_tool(
        permission_prompt_tool,
        name=tool,
        description="Ask the user whether a tool may run (Claude Code permission prompt).",
        structured_output=False,
    )
    return server


class _CannotServe(Exception):
    """The web page could not be served: a bad address, a port in use."""


async def _serve(host: str, port: int, token: str | None, deny_after: float | None) -> None:
    try:
        from ..relay import Relay
        from ..web import WebServer
    except ImportError as exc:
        raise SystemExit(f"interaction-mcp-permission: {exc}") from None
    relay = Relay()
    web = WebServer(relay, host=host, port=port, token=token)
    try:
        await web.start()
    except (OSError, ValueError) as exc:  # gaierror, EADDRINUSE, a NUL or bad IDNA in host
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise _CannotServe(f"cannot serve the web page on {host}:{port}: {reason}") from None
    try:
        print(f"interaction: answer permission prompts at {web.url}", file=sys.stderr, flush=True)
        with provide(relay):
            await permission_prompt_server(timeout=deny_after).run_stdio_async()
    finally:
        relay.close()
        await web.stop()


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is from 0 to 65535, got {port}")
    return port


def _seconds(text: str) -> float:
    try:
        seconds = checked_timeout(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a timeout is a positive, finite number of seconds, got {text!r}"
        ) from None
    assert seconds is not None
    return seconds


def main(argv: Sequence[str] | None = None) -> int:
    """``interaction-mcp-permission``: the permission-prompt MCP server over stdio.

    Questions are answered on the web page (its address, with its token, goes to
    stderr), since stdio carries MCP. Needs the ``[claude]`` and ``[web]`` extras. A bad
    ``--port`` or ``--timeout`` is a usage error (exit 2); a page that cannot be served
    (a bad ``--host``, a port in use) is a one-line error (exit 1).
    """
    parser = argparse.ArgumentParser(
        prog="interaction-mcp-permission",
        description="Serve Claude Code's --permission-prompt-tool over MCP stdio; answer on"
        " the web page.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="web page address (loopback)")
    parser.add_argument(
        "--port", type=_port, default=0, help="web page port, 0-65535 (0: any free one)"
    )
    parser.add_argument("--token", default=None, help="the page's token (default: random)")
    parser.add_argument(
        "--timeout", type=_seconds, default=None, metavar="SECONDS", help="deny after SECONDS"
    )
    args = parser.parse_args(argv)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(_serve(args.host, args.port, args.token, args.timeout))
    except _CannotServe as exc:
        print(f"interaction-mcp-permission: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
