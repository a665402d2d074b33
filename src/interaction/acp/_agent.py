"""Agent side: ask the editor (the ACP client) through ``session/request_permission``.

A permission question (one single-select question whose options are all permission
choices) becomes ``session/request_permission``, each option with the kind its label
names. Any other question goes through ACP's form elicitation (``elicitation/create``,
unstable in ACP 1) when the client declared ``elicitation.form``; otherwise the ask is
``NO_PROVIDER``, saying what ACP lacks for it.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from acp.schema import (
    AcceptElicitationResponse,
    AllowedOutcome,
    CancelElicitationResponse,
    ClientCapabilities,
    ContentToolCallContent,
    DeclineElicitationResponse,
    ElicitationFormSessionMode,
    ElicitationMode,
    ElicitationSchema,
    FileEditToolCallContent,
    Implementation,
    OtherElicitationResponse,
    PermissionOption,
    PermissionOptionKind,
    RequestPermissionResponse,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallUpdate,
)

from .._core import (
    OTHER_LABEL,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    PermissionIntent,
    UserInteractionError,
    answer_item,
    cancelled_error,
    fault,
    json_type,
    label_key,
)
from ..decisions import listening, peer_decision, report_decision
from ._limits import MAX_TEXT

PERMISSION_LABELS: Final[Mapping[str, PermissionOptionKind]] = {
    "yes": "allow_once",
    "allow": "allow_once",
    "allow once": "allow_once",
    "approve": "allow_once",
    "always allow": "allow_always",
    "allow always": "allow_always",
    "yes, always": "allow_always",
    "no": "reject_once",
    "deny": "reject_once",
    "reject": "reject_once",
    "reject once": "reject_once",
    "deny once": "reject_once",
    "never": "reject_always",
    "always deny": "reject_always",
    "always reject": "reject_always",
    "deny always": "reject_always",
    "reject always": "reject_always",
    "no, never": "reject_always",
}
"""The option labels that are permission choices, and the ACP option kind each names.

Labels are compared by :func:`interaction.label_key` (so ``"Allow Once"`` is ``allow once``).
A question is sent as ``session/request_permission`` only when every option has a kind,
from a :class:`~interaction.PermissionIntent`'s roles or from this table: an option kind
is never guessed.
"""

OTHER_SUFFIX: Final = "__other"

NOT_PERMISSION: Final = (
    "the ACP client cannot answer this question: {reason}, but ACP's"
    " session/request_permission carries only one single-select question whose options"
    " are all permission choices (a PermissionIntent's roles, or labels such as Yes/No,"
    " Allow/Deny, Always allow/Never: see interaction.acp.PERMISSION_LABELS), and the"
    " client did not declare the form"
    " elicitation capability (clientCapabilities.elicitation.form), through which ACP"
    " carries any other question"
)


def permission_kind(label: str) -> PermissionOptionKind | None:
    """The ACP option kind ``label`` names, or ``None`` when it is no permission choice."""
    return PERMISSION_LABELS.get(label_key(label))


def option_kinds(item: AskUserQuestionItem) -> dict[str, PermissionOptionKind]:
    """The ACP kind of each of the question's options that has one.

    A :class:`~interaction.PermissionIntent` names its options' roles: ``allow`` is
    ``allow_once``, ``allow_always`` is ``allow_always``, ``deny`` is ``reject_once``.
    Any other option has the kind its label names in :data:`PERMISSION_LABELS`, if any.
    """
    kinds: dict[str, PermissionOptionKind] = {}
    for option in item.options:
        kind = permission_kind(option.label)
        if kind is not None:
            kinds[option.label] = kind
    intent = item.intent
    if isinstance(intent, PermissionIntent):
        kinds[intent.allow] = "allow_once"
        kinds[intent.deny] = "reject_once"
        if intent.allow_always is not None:
            kinds[intent.allow_always] = "allow_always"
    return kinds


def why_not_permission(request: AskUserQuestionRequest) -> str | None:
    """What keeps ``request`` from being a ``session/request_permission``, or ``None``."""
    if len(request.questions) != 1:
        return f"the request has {len(request.questions)} questions"
    only = request.questions[0]
    if only.multi_select:
        return f"question {only.id} is multi-select"
    if not only.options:
        return f"question {only.id} has no options (it asks for text)"
    kinds = option_kinds(only)
    for option in only.options:
        if option.label not in kinds:
            return f'option "{option.label}" of question {only.id} is not a permission choice'
    return None


class ACPPeer(Protocol):
    """What the provider needs of the ACP connection: the SDK's ``AgentSideConnection``."""

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse: ...

    async def create_elicitation(
        self, message: str, mode: ElicitationMode, **kwargs: Any
    ) -> AcceptElicitationResponse | DeclineElicitationResponse | CancelElicitationResponse: ...


def _title(item: AskUserQuestionItem) -> str:
    return f"{item.header}: {item.question}" if item.header else item.question


def _body(item: AskUserQuestionItem, titled: bool) -> str | None:
    """The text of the permission's tool call: the question (unless it is the tool call's
    title), its detail, the options' notes."""
    parts = [] if titled else [_title(item)]
    if item.detail:
        parts.append(item.detail)
    notes = [f"- {o.label}: {o.description}" for o in item.options if o.description]
    if notes:
        parts.append("\n".join(notes))
    return "\n\n".join(parts) or None


_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_]", re.ASCII)


@dataclass(frozen=True, slots=True)
class FormField:
    """Where one question's answer lives in an accepted form's content."""

    question: AskUserQuestionItem
    key: str
    other_key: str | None


def _choice(option: AskUserQuestionOption) -> dict[str, str]:
    choice = {"const": option.label, "title": option.label}
    if option.description:
        choice["description"] = option.description
    return choice


def request_to_form(
    request: AskUserQuestionRequest,
) -> tuple[str, ElicitationSchema, list[FormField]]:
    """The elicitation message, the form, and where each answer is found in its content.

    Single-selects are titled ``oneOf`` strings, multi-selects ``array``s of ``anyOf``
    choices, free text a plain string; every question with options gets an optional
    ``<key>__other`` string for an answer of one's own. No field is required: an empty
    field skips its question. Keys are identifiers (``pkg-manager`` becomes
    ``pkg_manager``), as typed clients rename other names, and only an "Other" field's key
    ends in ``__other`` (a question ``a__other`` is ``a__other_``), so a client can pair
    each with its choice field.
    """
    taken: set[str] = set()

    def key_for(wanted: str) -> str:
        base = _UNSAFE.sub("_", wanted)
        if base[0].isdigit():
            base = "q_" + base
        if base.endswith(OTHER_SUFFIX):  # only an "Other" field's key ends so
            base += "_"
        key, n = base, 1
        while key in taken:
            n += 1
            key = f"{base}_{n}"
        taken.add(key)
        return key

    properties: dict[str, dict[str, Any]] = {}
    fields: list[FormField] = []
    for item in request.questions:
        key = key_for(item.id)
        prop: dict[str, Any] = {"title": _title(item)}
        if item.detail:
            prop["description"] = item.detail
        if not item.options:
            properties[key] = {**prop, "type": "string"}
            fields.append(FormField(item, key, None))
            continue
        choices = [_choice(option) for option in item.options]
        if item.multi_select:
            properties[key] = {**prop, "type": "array", "items": {"anyOf": choices}}
        else:
            properties[key] = {**prop, "type": "string", "oneOf": choices}
        other_key = key + OTHER_SUFFIX  # no question's key ends so: it is free
        properties[other_key] = {"type": "string", "title": f"{OTHER_LABEL} — {item.question}"}
        fields.append(FormField(item, key, other_key))
    if len(request.questions) == 1:
        only = request.questions[0]
        message = _title(only) + (f"\n\n{only.detail}" if only.detail else "")
    else:
        lines = [f"Please answer {len(request.questions)} questions (leave one empty to skip it):"]
        lines.extend(f"- {_title(item)}" for item in request.questions)
        message = "\n".join(lines)
    schema = ElicitationSchema.model_validate({"type": "object", "properties": properties})
    return message, schema, fields


def _bad(key: str, problem: str) -> UserInteractionError:
    return fault(ErrorCode.BAD_ANSWER, f"content.{key}", problem, source="elicitation")


def _text(content: Mapping[str, object], key: str | None) -> str | None:
    if key is None:
        return None
    value = content.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise _bad(key, f"expected a string, got {json_type(value)}")
    if len(value) > MAX_TEXT:
        raise _bad(key, f"longer than {MAX_TEXT} characters")
    return value


def form_to_answer(
    fields: Sequence[FormField], content: Mapping[str, object]
) -> AskUserQuestionAnswer:
    """The answer an accepted form's content gives; the seam then checks it.

    A key the form did not send is ``BAD_ANSWER``: a renamed field must not become a skip.
    """
    sent = {f.key for f in fields} | {f.other_key for f in fields if f.other_key is not None}
    for key in content:
        if key not in sent:
            raise _bad(key, "the form has no such field")
    items: list[AskUserQuestionAnswerItem] = []
    for field in fields:
        question = field.question
        if not question.options:
            items.append(answer_item(question, (), _text(content, field.key)))
            continue
        other = _text(content, field.other_key)
        value = content.get(field.key)
        if question.multi_select:
            value = [] if value is None else value
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise _bad(field.key, "expected an array of option labels")
            chosen: tuple[str, ...] = tuple(value)
        else:
            if value is not None and not isinstance(value, str):
                raise _bad(field.key, f"expected an option label, got {json_type(value)}")
            chosen = (value,) if value else ()
        if other is None:
            items.append(AskUserQuestionAnswerItem(question.id, chosen))
            continue
        typed = answer_item(question, (), other)
        if not question.multi_select:
            items.append(typed)
            continue
        extra = tuple(label for label in typed.selected if label not in chosen)
        items.append(AskUserQuestionAnswerItem(question.id, chosen + extra, typed.custom))
    return AskUserQuestionAnswer(items)


def _is_yes_no(request: AskUserQuestionRequest) -> bool:
    only = request.questions[0]
    return len(request.questions) == 1 and not only.multi_select and len(only.options) == 2


def _declares_form(capabilities: ClientCapabilities | None) -> bool:
    declared = capabilities.elicitation if capabilities is not None else None
    return declared is not None and declared.form is not None


class ACPProvider:
    """Asks the ACP client (the editor) of one session.

    Make one in the agent's ``prompt`` handler for its session and register it for the
    turn's work: ``ACPProvider(conn, session_id, client_capabilities=caps,
    tool_call_id=...)``, where ``conn`` is the SDK's connection to the client (what
    ``on_connect`` receives) and ``caps`` the ``client_capabilities`` that ``initialize``
    received. A permission question (one single-select question whose labels are all in
    :data:`PERMISSION_LABELS`) is sent as ``session/request_permission``; any other as a
    form (``elicitation/create``) when ``caps`` declares ``elicitation.form``; else the ask
    is ``NO_PROVIDER``, saying what ACP lacks. A ``cancelled`` outcome, a ``cancel`` and a
    ``decline`` (except on a yes/no form, where it is a skip) are ``ASK_CANCELLED``.
    Give it the ``client_info`` that ``initialize`` received too, and an
    :class:`~interaction.audit.AuditProvider` around it records the person at that client,
    by the client's name, as who decided.
    """

    def __init__(
        self,
        conn: ACPPeer,
        session_id: str,
        *,
        client_capabilities: ClientCapabilities | None = None,
        tool_call_id: str | None = None,
        client_info: Implementation | None = None,
    ) -> None:
        self.conn = conn
        self.session_id = session_id
        self.client_capabilities = client_capabilities
        self.tool_call_id = tool_call_id
        self.client_info = client_info

    def _report(self) -> None:
        """The client responded: its person decided (for an audit listening around us)."""
        if listening():
            info = self.client_info
            report_decision(peer_decision(info.name if info is not None else None))

    def unavailable(self, request: AskUserQuestionRequest) -> str | None:
        """Why the client cannot be asked ``request``, or ``None`` when it can."""
        reason = why_not_permission(request)
        if reason is None or _declares_form(self.client_capabilities):
            return None
        return NOT_PERMISSION.format(reason=reason)

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        reason = why_not_permission(request)
        if reason is None:
            return await self._permission(request.questions[0])
        if not _declares_form(self.client_capabilities):
            raise UserInteractionError(NOT_PERMISSION.format(reason=reason), ErrorCode.NO_PROVIDER)
        return await self._form(request)

    async def _permission(self, item: AskUserQuestionItem) -> AskUserQuestionAnswer:
        kinds = option_kinds(item)  # why_not_permission found a kind for every label
        options: list[PermissionOption] = []
        by_id: dict[str, str] = {}
        for n, option in enumerate(item.options, 1):
            option_id = f"option-{n}"
            by_id[option_id] = option.label
            options.append(
                PermissionOption(option_id=option_id, name=option.label, kind=kinds[option.label])
            )
        call_id = self.tool_call_id
        body = _body(item, titled=call_id is None)
        content: (
            list[ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent] | None
        ) = (
            None
            if body is None
            else [
                ContentToolCallContent(
                    type="content", content=TextContentBlock(type="text", text=body)
                )
            ]
        )
        if call_id is not None:
            tool_call = ToolCallUpdate(tool_call_id=call_id, content=content)
        else:
            tool_call = ToolCallUpdate(
                tool_call_id=f"interaction-{secrets.token_hex(8)}",
                title=_title(item),
                kind="other",
                status="pending",
                content=content,
            )
        response = await self.conn.request_permission(
            session_id=self.session_id, tool_call=tool_call, options=options
        )
        self._report()
        outcome = response.outcome
        if not isinstance(outcome, AllowedOutcome):
            raise cancelled_error()
        label = by_id.get(outcome.option_id)
        if label is None:
            raise fault(
                ErrorCode.BAD_ANSWER,
                "outcome.optionId",
                f'"{outcome.option_id[:100]}" names none of the options sent',
                source="request_permission",
            )
        return AskUserQuestionAnswer([AskUserQuestionAnswerItem(item.id, (label,))])

    async def _form(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        message, schema, fields = request_to_form(request)
        mode = ElicitationFormSessionMode(
            session_id=self.session_id, tool_call_id=self.tool_call_id, requested_schema=schema
        )
        result: object = await self.conn.create_elicitation(message=message, mode=mode)
        self._report()
        if isinstance(result, AcceptElicitationResponse):
            return form_to_answer(fields, result.content or {})
        if isinstance(result, DeclineElicitationResponse) and _is_yes_no(request):
            return AskUserQuestionAnswer([AskUserQuestionAnswerItem(request.questions[0].id)])
        if isinstance(result, DeclineElicitationResponse | CancelElicitationResponse):
            raise cancelled_error()
        action = result.action if isinstance(result, OtherElicitationResponse) else "?"
        raise fault(
            ErrorCode.BAD_ANSWER,
            "action",
            f'"{action[:100]}" is no action ACP defines',
            source="elicitation",
        )
