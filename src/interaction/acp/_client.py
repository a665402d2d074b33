"""Client side: answer an ACP agent's permission requests and forms with any provider."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, TypeAlias

from acp import CLIENT_METHODS, RequestError
from acp.interfaces import Agent
from acp.schema import (
    AcceptElicitationResponse,
    AgentMessageChunk,
    AgentPlanContentUpdate,
    AgentPlanRemovedUpdate,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AllowedOutcome,
    AvailableCommandsUpdate,
    CancelElicitationResponse,
    ConfigOptionUpdate,
    ContentToolCallContent,
    CreateTerminalResponse,
    CurrentModeUpdate,
    DeniedOutcome,
    ElicitationBooleanPropertySchema,
    ElicitationFormRequestMode,
    ElicitationFormSessionMode,
    ElicitationIntegerPropertySchema,
    ElicitationMode,
    ElicitationMultiSelectPropertySchema,
    ElicitationNumberPropertySchema,
    ElicitationStringPropertySchema,
    EnumOption,
    EnvVariable,
    FileEditToolCallContent,
    Implementation,
    KillTerminalResponse,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    SessionInfoUpdate,
    StringMultiSelectItems,
    TerminalOutputResponse,
    TerminalToolCallContent,
    TextContentBlock,
    TitledMultiSelectItems,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UsageUpdate,
    UserMessageChunk,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from .._core import (
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    PermissionIntent,
    Provenance,
    UserInteractionError,
    UserInteractionProvider,
    ask_with,
    check_request,
)
from ._limits import MAX_FIELDS, MAX_OPTIONS, MAX_TEXT, MAX_TRIES

INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

KIND_NOTES: Final = {
    "allow_once": "allow this time",
    "allow_always": "allow from now on",
    "reject_once": "reject this time",
    "reject_always": "reject from now on",
}
"""How each ACP option kind is described beside its option."""

DEFAULT_TITLE: Final = "Allow the agent's tool call?"
PERMISSION_ID: Final = "permission"
YES: Final = "Yes"
NO: Final = "No"
_DISMISSALS: Final = (ErrorCode.ASK_CANCELLED, ErrorCode.ASK_ABORTED, ErrorCode.ASK_TIMEOUT)
_NUMBER: Final = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?", re.ASCII)
_INTEGER: Final = re.compile(r"-?(0|[1-9][0-9]*)", re.ASCII)
OTHER_SUFFIX: Final = "__other"
_UNCHECKED: Final = ("pattern", "format", "min_length", "max_length", "min_items", "max_items")


class _Refused(Exception):
    """A request interaction will not ask: its message says why."""


class _TooManyTries(Exception):
    """No answer satisfied the request after ``MAX_TRIES`` asks."""


def _bounded(text: str | None, path: str) -> str | None:
    if text is not None and len(text) > MAX_TEXT:
        raise _Refused(f"{path}: longer than {MAX_TEXT} characters")
    return text


def _tool_call_text(tool_call: ToolCallUpdate) -> str | None:
    """What the tool call shows the user beyond its title: its text, the files it edits."""
    parts: list[str] = []
    for n, entry in enumerate(tool_call.content or ()):
        if isinstance(entry, ContentToolCallContent) and isinstance(
            entry.content, TextContentBlock
        ):
            parts.append(entry.content.text)
        elif isinstance(entry, FileEditToolCallContent):
            parts.append(f"Edits {entry.path}")
        elif isinstance(entry, TerminalToolCallContent):
            parts.append(f"Runs in terminal {entry.terminal_id}")
        else:
            parts.append(f"(content {n} is not text)")
    if tool_call.kind is not None and tool_call.kind != "other":
        parts.append(f"Kind: {tool_call.kind}")
    text = "\n\n".join(parts)
    return _bounded(text, "toolCall.content") if text else None


def _intent(
    tool_call: ToolCallUpdate, options: list[PermissionOption], detail: str | None
) -> PermissionIntent | None:
    """The permission intent of the question, when ACP says enough for one.

    It needs an ``allow_once`` and a reject option (``reject_once``, else
    ``reject_always``), a one-line title (the summary) and the tool call's text (the
    detail); the tool is the tool call's kind (``execute``, ``edit``, …), else ``tool``.
    The first option of each kind takes the role; the others are shown as they are.
    """
    first: dict[str, str] = {}
    for option in options:
        first.setdefault(option.kind, option.name)
    allow = first.get("allow_once")
    deny = first.get("reject_once", first.get("reject_always"))
    title = tool_call.title
    if allow is None or deny is None or detail is None or not title or "\n" in title:
        return None
    kind = tool_call.kind
    tool = kind if kind is not None and kind != "other" else "tool"
    return PermissionIntent(tool, title, allow, deny, first.get("allow_always"))


def permission_question(
    tool_call: ToolCallUpdate,
    options: list[PermissionOption],
    provenance: Provenance | None = None,
) -> tuple[AskUserQuestionRequest, dict[str, str]]:
    """The question a ``session/request_permission`` asks, and each label's option id.

    The tool call's title is the question (``DEFAULT_TITLE`` when the update has none),
    its text content the detail, each option's name a label described by its kind, and a
    :class:`~interaction.PermissionIntent` gives the options their roles when ACP says
    enough for one. The seam's checks refuse what no UI may show (control characters,
    repeated names).
    """
    if not options:
        raise _Refused("options: none offered")
    if len(options) > MAX_OPTIONS:
        raise _Refused(f"options: more than {MAX_OPTIONS}")
    title = _bounded(tool_call.title, "toolCall.title") or DEFAULT_TITLE
    labels: dict[str, str] = {}
    choices = []
    for n, option in enumerate(options):
        _bounded(option.name, f"options[{n}].name")
        labels[option.name] = option.option_id
        choices.append(AskUserQuestionOption(option.name, KIND_NOTES[option.kind]))
    detail = _tool_call_text(tool_call)
    intent = _intent(tool_call, options, detail)
    item = AskUserQuestionItem(PERMISSION_ID, title, detail=detail, options=choices, intent=intent)
    return check_request(AskUserQuestionRequest([item], provenance=provenance)), labels


@dataclass(frozen=True, slots=True)
class _Field:
    """One form field as a question, and how its answer becomes the field's value.

    ``other_key`` is the ``<key>__other`` text field that interaction's agent side sends
    beside a choice: it is asked as the question's own "Other" answer, not apart.
    """

    key: str
    item: AskUserQuestionItem
    required: bool
    read: Callable[[AskUserQuestionAnswerItem], tuple[object, str | None]]
    other_key: str | None = None


def _choices(options: list[EnumOption]) -> tuple[list[AskUserQuestionOption], dict[str, str]]:
    if len(options) > MAX_OPTIONS:
        raise _Refused(f"more than {MAX_OPTIONS} choices")
    described = []
    labels = {}
    for option in options:
        label = _bounded(option.title, "choice title") or option.const
        described.append(AskUserQuestionOption(label, _bounded(option.description, "choice")))
        labels[label] = option.const
    return described, labels


def _read_choice(
    labels: Mapping[str, object], many: bool, own: bool
) -> Callable[[AskUserQuestionAnswerItem], tuple[object, str | None]]:
    def read(answer: AskUserQuestionAnswerItem) -> tuple[object, str | None]:
        if answer.custom is not None and not own:
            return None, "choose among the options" if many else "choose one of the options"
        values = [labels[label] for label in answer.selected]
        if many:
            return values or None, None
        return (values[0] if values else None), None

    return read


def _read_number(
    integer: bool, low: float | None, high: float | None
) -> Callable[[AskUserQuestionAnswerItem], tuple[object, str | None]]:
    def read(answer: AskUserQuestionAnswerItem) -> tuple[object, str | None]:
        text = None if answer.custom is None else answer.custom.strip()
        if text is None:
            return None, None
        if len(text) > 100 or not (_INTEGER if integer else _NUMBER).fullmatch(text):
            return None, "enter a whole number" if integer else "enter a number"
        value: float = int(text) if integer else float(text)
        if (low is not None and value < low) or (high is not None and value > high):
            return None, f"enter a number from {low} to {high}"
        return value, None

    return read


_FieldSchema: TypeAlias = (
    ElicitationStringPropertySchema
    | ElicitationNumberPropertySchema
    | ElicitationIntegerPropertySchema
    | ElicitationBooleanPropertySchema
    | ElicitationMultiSelectPropertySchema
)


def _field(key: str, spec: object, required: bool, message: str | None, other: bool) -> _Field:
    if not isinstance(spec, _FieldSchema):
        raise _Refused(f"{key}: a field of a type ACP does not define")
    for keyword in _UNCHECKED:
        if getattr(spec, keyword, None) is not None:
            raise _Refused(f"{key}: interaction cannot check {keyword}")
    item = _field_question(key, spec, required, message)
    other_key = key + OTHER_SUFFIX if other else None
    if isinstance(spec, ElicitationBooleanPropertySchema):
        yes_no: dict[str, object] = {YES: True, NO: False}
        options = [AskUserQuestionOption(YES), AskUserQuestionOption(NO)]
        return _Field(
            key, replace(item, options=options), required, _read_choice(yes_no, False, False)
        )
    if isinstance(spec, ElicitationMultiSelectPropertySchema):
        options, labels = _multi_choices(key, spec)
        item = replace(item, options=options, multi_select=True)
        return _Field(key, item, required, _read_choice(labels, True, other), other_key)
    if isinstance(spec, ElicitationStringPropertySchema) and (spec.one_of or spec.enum):
        enum = spec.one_of or [EnumOption(const=v, title=v) for v in spec.enum or ()]
        options, labels = _choices(enum)
        return _Field(
            key,
            replace(item, options=options),
            required,
            _read_choice(labels, False, other),
            other_key,
        )
    if isinstance(spec, ElicitationStringPropertySchema):
        return _Field(key, item, required, lambda a: (a.custom, None))
    integer = isinstance(spec, ElicitationIntegerPropertySchema)
    return _Field(key, item, required, _read_number(integer, spec.minimum, spec.maximum))


def _field_question(
    key: str, spec: _FieldSchema, required: bool, message: str | None
) -> AskUserQuestionItem:
    """The field's question: its title, then the form's message, its description, and
    whether it is required."""
    title = _bounded(spec.title, f"{key}.title") or key
    description = _bounded(spec.description, f"{key}.description")
    if message is not None:  # the message of a one-field form often repeats the field
        message = message.removeprefix(title).removeprefix("\n\n") or None
        message = None if message == description else message
    notes = [text for text in (message, description) if text]
    if required:
        notes.append("(required)")
    return AskUserQuestionItem(key, title, detail="\n\n".join(notes) or None)


def _multi_choices(
    key: str, spec: ElicitationMultiSelectPropertySchema
) -> tuple[list[AskUserQuestionOption], dict[str, str]]:
    items = spec.items
    if isinstance(items, TitledMultiSelectItems):
        return _choices(items.any_of)
    if isinstance(items, StringMultiSelectItems):
        return _choices([EnumOption(const=v, title=v) for v in items.enum])
    raise _Refused(f"{key}: choices of a type ACP does not define")


def _is_other(key: str, spec: object, properties: Mapping[str, object]) -> bool:
    """Whether ``key`` is the "Other" text of a choice field beside it (``<key>__other``)."""
    base = key.removesuffix(OTHER_SUFFIX)
    choice = properties.get(base)
    return (
        base != key
        and isinstance(spec, ElicitationStringPropertySchema)
        and not (spec.one_of or spec.enum)
        and (
            isinstance(choice, ElicitationMultiSelectPropertySchema)
            or (
                isinstance(choice, ElicitationStringPropertySchema)
                and bool(choice.one_of or choice.enum)
            )
        )
    )


def form_fields(message: str, mode: ElicitationMode) -> list[_Field]:
    """The questions an elicitation form asks, one per field, in the form's order."""
    if not isinstance(mode, ElicitationFormSessionMode | ElicitationFormRequestMode):
        raise _Refused("interaction answers form elicitations only; a URL elicitation is declined")
    _bounded(message, "message")
    schema = mode.requested_schema
    properties = schema.properties or {}
    if not properties:
        raise _Refused("the form has no fields")
    if len(properties) > MAX_FIELDS:
        raise _Refused(f"the form has more than {MAX_FIELDS} fields")
    required = set(schema.required or ())
    missing = required - set(properties)
    if missing:
        raise _Refused(
            f"the form requires {sorted(missing)[0]!r}, which its properties do not define"
        )
    others = {
        key
        for key, spec in properties.items()
        if key not in required and _is_other(key, spec, properties)
    }
    fields: list[_Field] = []
    for key, spec in properties.items():
        if key in others:
            continue
        note = message if not fields else None
        fields.append(_field(key, spec, key in required, note, key + OTHER_SUFFIX in others))
    check_request(AskUserQuestionRequest([f.item for f in fields]))
    return fields


def _with_note(item: AskUserQuestionItem, note: str) -> AskUserQuestionItem:
    base = item.detail or ""
    return replace(item, detail=f"{base}\n\n{note}" if base else note)


class InteractionClient:
    """An ACP client that answers the agent's questions with an ``interaction`` provider.

    ``session/request_permission`` becomes one single-select question (the tool call's
    title and text, the options' names); ``elicitation/create`` in form mode one question
    per field. It asks ``provider``, or else the provider active where the connection was
    made (terminal, web page, policies). A dismissal is the ``cancelled`` outcome (a
    ``cancel`` of a form); a skipped permission is ``cancelled`` too, since ACP has no
    "no answer"; an answer of one's own that names no option is asked again, at most
    ``MAX_TRIES`` times in all. What the seam refuses to show (control characters, repeated
    names, more than the documented sizes) is a JSON-RPC ``-32602`` error saying why.

    It answers nothing else of ACP's client methods: subclass it to add file system or
    terminal support. ``agent_info`` (the ``initialize`` response's, set by whoever made
    the connection) names the agent in each question's provenance, with the session;
    ``session_update`` notifications are ignored.
    """

    def __init__(
        self,
        provider: UserInteractionProvider | None = None,
        *,
        agent_info: Implementation | None = None,
    ) -> None:
        self.provider = provider
        self.agent_info = agent_info

    def provenance(self, session_id: str | None) -> Provenance:
        """Where the agent's questions come from: its name (from ``agent_info``, the
        ``initialize`` response's) and the session."""
        info = self.agent_info
        source = None if info is None else (info.title or info.name)
        return Provenance(source=source, session=session_id)

    def on_connect(self, conn: Agent) -> None:
        del conn

    async def session_update(
        self,
        session_id: str,
        update: UserMessageChunk
        | AgentMessageChunk
        | AgentThoughtChunk
        | ToolCallStart
        | ToolCallProgress
        | AgentPlanUpdate
        | AgentPlanContentUpdate
        | AgentPlanRemovedUpdate
        | AvailableCommandsUpdate
        | CurrentModeUpdate
        | ConfigOptionUpdate
        | SessionInfoUpdate
        | UsageUpdate,
        **kwargs: Any,
    ) -> None:
        del session_id, update, kwargs

    # What an editor does besides asking (files, terminals, extensions) is not ours: a
    # subclass adds it. Each says "method not found", as the SDK does for a missing one.

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse | None:
        raise RequestError.method_not_found(CLIENT_METHODS["fs_write_text_file"])

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        raise RequestError.method_not_found(CLIENT_METHODS["fs_read_text_file"])

    async def create_terminal(  # noqa: PLR0917 - the signature of ACP's Client
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        raise RequestError.method_not_found(CLIENT_METHODS["terminal_create"])

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        raise RequestError.method_not_found(CLIENT_METHODS["terminal_output"])

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse | None:
        raise RequestError.method_not_found(CLIENT_METHODS["terminal_release"])

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        raise RequestError.method_not_found(CLIENT_METHODS["terminal_wait_for_exit"])

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse | None:
        raise RequestError.method_not_found(CLIENT_METHODS["terminal_kill"])

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        del elicitation_id, kwargs

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        del method, params

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        del kwargs
        try:
            request, ids = permission_question(tool_call, options, self.provenance(session_id))
        except (_Refused, UserInteractionError) as exc:
            raise RequestError(
                INVALID_PARAMS, f"interaction cannot ask this permission request: {exc}"
            ) from None
        question = request.questions[0]
        for _ in range(MAX_TRIES):
            try:
                answer = await ask_with(request, self.provider)
            except UserInteractionError as error:
                if error.code in _DISMISSALS:
                    return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
                raise RequestError(INTERNAL_ERROR, f"{error.message} ({error.code})") from None
            item = answer.answers[0]
            if item.selected and item.custom is None:
                return RequestPermissionResponse(
                    outcome=AllowedOutcome(outcome="selected", option_id=ids[item.selected[0]])
                )
            if item.custom is None:  # a skip: ACP's only "no answer" is cancelled
                return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
            request = AskUserQuestionRequest(
                [_with_note(question, "Please answer again: choose one of the options.")],
                provenance=request.provenance,
            )
        raise RequestError(
            INVALID_PARAMS,
            "interaction could not answer this permission request:"
            f" no option chosen after {MAX_TRIES} tries",
        )

    async def create_elicitation(
        self, message: str, mode: ElicitationMode, **kwargs: Any
    ) -> AcceptElicitationResponse | CancelElicitationResponse:
        del kwargs
        try:
            fields = form_fields(message, mode)
        except (_Refused, UserInteractionError) as exc:
            raise RequestError(INVALID_PARAMS, f"interaction cannot ask this form: {exc}") from None
        session = mode.session_id if isinstance(mode, ElicitationFormSessionMode) else None
        try:
            content = await self._fill(fields, self.provenance(session))
        except _TooManyTries as exc:
            raise RequestError(
                INVALID_PARAMS, f"interaction could not fill this form: {exc}"
            ) from None
        except UserInteractionError as error:
            if error.code in _DISMISSALS:
                return CancelElicitationResponse(action="cancel")
            raise RequestError(INTERNAL_ERROR, f"{error.message} ({error.code})") from None
        return AcceptElicitationResponse(action="accept", content=content)

    async def _fill(self, fields: list[_Field], provenance: Provenance) -> dict[str, object]:
        pending = [(field, field.item) for field in fields]
        content: dict[str, object] = {}
        problems: list[str] = []
        for _ in range(MAX_TRIES):
            answer = await ask_with(
                AskUserQuestionRequest([item for _, item in pending], provenance=provenance),
                self.provider,
            )
            retry = []
            problems = []
            for (field, _asked), item in zip(pending, answer.answers, strict=True):
                value, problem = field.read(item)
                own = item.custom if field.other_key is not None else None
                if problem is None and value is None and own is None and field.required:
                    problem = "this field is required"
                if problem is not None:
                    retry.append(
                        (field, _with_note(field.item, f"Please answer again: {problem}."))
                    )
                    problems.append(f"{field.key}: {problem}")
                    continue
                if value is not None:
                    content[field.key] = value
                if own is not None and field.other_key is not None:
                    content[field.other_key] = own
            if not retry:
                return content
            pending = retry
        raise _TooManyTries(f"no valid answer after {MAX_TRIES} tries ({'; '.join(problems)})")
