"""Server side: ask the connected MCP client through form elicitation."""

from __future__ import annotations

import contextvars
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol, TypeAlias

import mcp.types as mcp_types
from mcp.server.mcpserver import Context
from mcp.server.session import ServerSession

from .._core import (
    OTHER_LABEL,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    answer_item,
    cancelled_error,
    fault,
    json_type,
)
from ..decisions import listening, peer_decision, report_decision
from ..wire import JSONObject
from ._limits import MAX_CONTENT_BYTES, MAX_TEXT, QUOTE, quote

ASK_DECLINED: Final = "ASK_DECLINED"
"""The code of the ``UserInteractionError`` an ask raises when the MCP client's user
declined it (``decline``, distinct from ``cancel``'s ``ASK_CANCELLED``)."""
DECLINED_MESSAGE: Final = "the user declined to answer ask_user_question"

OTHER_SUFFIX: Final = "__other"
OTHER_TITLE: Final = OTHER_LABEL

ELICITATION_VERSION: Final = "2025-06-18"
"""The first protocol version with form elicitation: ``enum`` + ``enumNames`` only."""
TITLED_VERSION: Final = "2025-11-25"
"""The first version with titled ``oneOf`` choices and ``array`` multi-selects."""
INPUT_REQUIRED_VERSION: Final = "2026-07-28"
"""The first version where a server asks through an input-required result, not a push."""

NO_ELICITATION: Final = (
    "the MCP client cannot answer questions: it did not declare the form elicitation capability"
)


def _at_least(version: str, wanted: str) -> bool:
    return version >= wanted  # protocol versions are ISO dates


def old_protocol_message(version: str) -> str:
    return (
        f"the MCP client cannot answer questions: it speaks protocol {version},"
        f" which has no elicitation (it came in {ELICITATION_VERSION})"
    )


NO_BACK_CHANNEL: Final = (
    "the MCP client cannot answer questions: this connection has no channel for"
    " server-to-client requests, so elicitation/create cannot reach it"
)
_NOT_PUSHABLE: Final = (
    f"the MCP client cannot answer questions pushed during a tool call: it speaks protocol"
    f" {INPUT_REQUIRED_VERSION} or later, where a server asks through an input-required result;"
)
NOT_SUSPENDABLE: Final = (
    _NOT_PUSHABLE + " serve it from an interaction.mcp.InteractiveMCPServer"
    " (or with @interaction.mcp.interactive)"
)
NOT_SUSPENDABLE_FASTMCP: Final = (
    _NOT_PUSHABLE + " put @interaction.mcp.interactive under the FastMCP tool's @server.tool"
)

Host: TypeAlias = Literal["mcp", "fastmcp"]
"""Which server framework a provider's tool runs on: its advice names that one's remedy."""


class ToolContext(Protocol):
    """A FastMCP tool's ``Context`` as :meth:`ElicitationProvider.from_context` reads it."""

    @property
    def session(self) -> ServerSession: ...

    @property
    def request_id(self) -> str: ...


@dataclass(frozen=True, slots=True)
class FormField:
    """Where one question's answer lives in the form content.

    ``key`` holds the choice (or the text); ``other_key`` the "Other" text beside a choice;
    ``option_keys`` the one-boolean-per-option fields of a multi-select sent to a 2025-06-18
    peer (``key`` then holds nothing).
    """

    question: AskUserQuestionItem
    key: str
    other_key: str | None
    option_keys: tuple[str, ...] = ()


def _title(item: AskUserQuestionItem) -> str:
    return f"{item.header}: {item.question}" if item.header else item.question


def _option_title(option: AskUserQuestionOption) -> str:
    return f"{option.label} — {option.description}" if option.description else option.label


_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_]", re.ASCII)


def _is_identifier(name: str) -> bool:
    return bool(name) and _UNSAFE.search(name) is None and not name[0].isdigit()


class _Keys:
    """Identifier-safe, unique property names (typed handlers, e.g. fastmcp's, rename
    ``pkg-manager`` to ``pkg_manager``; a name that is already an identifier survives)."""

    def __init__(self) -> None:
        self.taken: set[str] = set()

    def make(self, wanted: str) -> str:
        base = _UNSAFE.sub("_", wanted) or "q"
        if base[0].isdigit():
            base = "q_" + base
        key, n = base, 1
        while key in self.taken:
            n += 1
            key = f"{base}_{n}"
        self.taken.add(key)
        return key


def request_to_form(
    request: AskUserQuestionRequest, protocol_version: str = TITLED_VERSION
) -> tuple[str, JSONObject, list[FormField]]:
    """The elicitation message, the requested schema, and where each answer is found.

    The schema uses only what ``protocol_version`` defines: a 2025-06-18 peer gets
    ``enum`` + ``enumNames`` for a single-select and one boolean per option for a
    multi-select; 2025-11-25 and later get titled ``oneOf`` and an ``array``. No field is
    required: leaving one empty skips its question.
    """
    titled = _at_least(protocol_version, TITLED_VERSION)
    properties: dict[str, Any] = {}
    fields: list[FormField] = []
    keys = _Keys()
    safe = {item.id for item in request.questions if _is_identifier(item.id)}
    keys.taken.update(safe)  # an id that is already an identifier keeps its name
    for item in request.questions:
        key = item.id if item.id in safe else keys.make(item.id)
        prop: dict[str, Any] = {"title": _title(item)}
        if item.detail:
            prop["description"] = item.detail
        if not item.options:
            properties[key] = {**prop, "type": "string", "maxLength": MAX_TEXT}
            fields.append(FormField(item, key, None))
            continue
        option_keys = _add_choices(properties, item, key, prop, titled, keys)
        other_key = keys.make(key + OTHER_SUFFIX)
        properties[other_key] = {
            "type": "string",
            "title": f"{OTHER_TITLE} — {item.question}",
            "maxLength": MAX_TEXT,
        }
        fields.append(FormField(item, key, other_key, option_keys))
    message = _form_message(request)
    return message, {"type": "object", "properties": properties, "required": []}, fields


def _bad(key: str, problem: str) -> UserInteractionError:
    where = key if len(key) <= QUOTE else f"{key[:QUOTE]}…"
    return fault(ErrorCode.BAD_ANSWER, f"content.{where}", problem, source="elicitation")


def _checked_text(key: str, value: str) -> str:
    if len(value) > MAX_TEXT:
        raise _bad(key, f"the text is {len(value)} characters long; at most {MAX_TEXT} are read")
    return value


def _text_value(content: Mapping[str, object], key: str | None) -> str | None:
    if key is None or key not in content:
        return None
    value = content[key]
    if value == "":
        return None
    if not isinstance(value, str):  # null too: a skip leaves the field out
        raise _bad(key, f"expected a string, got {json_type(value)}")
    return _checked_text(key, value) if value.strip() else None


def _labels(question: AskUserQuestionItem, key: str, values: Sequence[str]) -> tuple[str, ...]:
    """The chosen labels, as sent; one longer than every option (and than ``QUOTE``) cannot
    be one, and is refused here with a bounded quote (the seam's own refusal, for the
    others, quotes the label whole)."""
    if len(values) > len(question.options):
        raise _bad(
            key, f"expected at most {len(question.options)} option labels, got {len(values)}"
        )
    longest = max(QUOTE, *(len(option.label) for option in question.options))
    for value in values:
        if len(value) > longest:
            raise _bad(key, f"the form offers no option {quote(value)}")
    return tuple(values)


def _content_size(content: Mapping[str, object]) -> int:
    try:
        text = json.dumps(content, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):  # not JSON (a direct call, not off the wire): no size
        return 0
    return len(text.encode("utf-8", "surrogatepass"))


def _with_other(
    question: AskUserQuestionItem, selected: tuple[str, ...], other: str | None
) -> AskUserQuestionAnswerItem:
    """The item for the labels the content chose and the "Other" text beside them.

    The labels are kept as sent (the seam refuses repeats and unknown ones); the text
    follows the one answer rule (``answer_item``): text naming an option selects it, other
    text is the custom answer, which replaces a single-select choice.
    """
    if other is None:
        return AskUserQuestionAnswerItem(question.id, selected)
    typed = answer_item(question, (), other)
    if not question.multi_select:
        return typed
    extra = tuple(label for label in typed.selected if label not in selected)
    return AskUserQuestionAnswerItem(question.id, selected + extra, typed.custom)


def _add_choices(  # noqa: PLR0917 - the question, its key, and where its properties go
    properties: dict[str, Any],
    item: AskUserQuestionItem,
    key: str,
    prop: dict[str, Any],
    titled: bool,
    keys: _Keys,
) -> tuple[str, ...]:
    """Add the property (or, before titled choices, one boolean per option) that asks
    ``item``'s options; return the booleans' keys."""
    if item.multi_select and titled:
        choices = [{"const": o.label, "title": _option_title(o)} for o in item.options]
        properties[key] = {
            **prop,
            "type": "array",
            "items": {"anyOf": choices},
            "uniqueItems": True,
            "maxItems": len(item.options),
        }
    elif item.multi_select:
        option_keys = tuple(keys.make(f"{key}__{n}") for n in range(1, len(item.options) + 1))
        for option, option_key in zip(item.options, option_keys, strict=True):
            option_prop: dict[str, Any] = {
                "type": "boolean",
                "title": f"{_title(item)} — {_option_title(option)}",
                "default": False,
            }
            if item.detail:
                option_prop["description"] = item.detail
            properties[option_key] = option_prop
        return option_keys
    elif titled:
        choices = [{"const": o.label, "title": _option_title(o)} for o in item.options]
        properties[key] = {**prop, "type": "string", "oneOf": choices}
    else:
        properties[key] = {
            **prop,
            "type": "string",
            "enum": [o.label for o in item.options],
            "enumNames": [_option_title(o) for o in item.options],
        }
    return ()


def _form_message(request: AskUserQuestionRequest) -> str:
    """The elicitation's message: the only question, or a list of them all."""
    if len(request.questions) == 1:
        only = request.questions[0]
        return _title(only) + (f"\n\n{only.detail}" if only.detail else "")
    lines = [f"Please answer {len(request.questions)} questions (leave one empty to skip it):"]
    lines.extend(f"- {_title(item)}" for item in request.questions)
    return "\n".join(lines)


def form_to_answer(
    fields: Sequence[FormField], content: Mapping[str, object]
) -> AskUserQuestionAnswer:
    """The answer an accepted form's ``content`` gives; the seam then checks it.

    A content key the form did not ask for is ``BAD_ANSWER``: a client that renamed a
    field must not turn an answer into a silent skip.
    """
    size = _content_size(content)
    if size > MAX_CONTENT_BYTES:
        raise fault(
            ErrorCode.BAD_ANSWER,
            "content",
            f"the content is {size} bytes long; at most {MAX_CONTENT_BYTES} are read",
            source="elicitation",
        )
    _check_keys(fields, content)
    return AskUserQuestionAnswer([_field_answer(field, content) for field in fields])


def _check_keys(fields: Sequence[FormField], content: Mapping[str, object]) -> None:
    """``BAD_ANSWER`` for the first content key that names none of the form's fields."""
    sent: set[str] = set()
    for field in fields:
        sent.update(field.option_keys or (field.key,))
        if field.other_key is not None:
            sent.add(field.other_key)
    for key in content:
        if key not in sent:
            raise _bad(key, "the form has no such field")


def _field_answer(field: FormField, content: Mapping[str, object]) -> AskUserQuestionAnswerItem:
    """The answer one field's content gives its question."""
    question = field.question
    other = _text_value(content, field.other_key)
    if not question.options:
        return answer_item(question, (), _text_value(content, field.key))
    if field.option_keys:
        return _with_other(question, _flagged(field, content), other)
    value = content.get(field.key)
    if question.multi_select:
        if field.key not in content:
            value = []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _bad(field.key, "expected an array of option labels")
        return _with_other(question, _labels(question, field.key, value), other)
    if field.key in content and not isinstance(value, str):
        raise _bad(field.key, f"expected an option label, got {json_type(value)}")
    chosen = (value,) if isinstance(value, str) and value else ()
    return _with_other(question, _labels(question, field.key, chosen), other)


def _flagged(field: FormField, content: Mapping[str, object]) -> tuple[str, ...]:
    """The labels whose boolean (one per option, before titled choices) is true."""
    selected = []
    for option, key in zip(field.question.options, field.option_keys, strict=True):
        flag = content.get(key)
        if key in content and not isinstance(flag, bool):
            raise _bad(key, f"expected a boolean, got {json_type(flag)}")
        if flag:
            selected.append(option.label)
    return tuple(selected)


def is_yes_no(request: AskUserQuestionRequest) -> bool:
    """One single-select question with two options: what ``confirm()`` asks."""
    if len(request.questions) != 1:
        return False
    only = request.questions[0]
    return not only.multi_select and len(only.options) == 2


def outcome(
    request: AskUserQuestionRequest,
    fields: Sequence[FormField],
    result: mcp_types.ElicitResult,
) -> AskUserQuestionAnswer:
    """The answer an elicitation result gives, or the error it is.

    ``accept`` is the content's answer; ``decline`` on a yes/no form is a skip, which
    ``confirm()`` reads as "no"; any other ``decline`` is ``ASK_DECLINED``; ``cancel`` is
    ``ASK_CANCELLED``.
    """
    if result.action == "accept":
        return form_to_answer(fields, result.content or {})
    if result.action == "decline":
        if is_yes_no(request):
            return AskUserQuestionAnswer([AskUserQuestionAnswerItem(request.questions[0].id)])
        raise UserInteractionError(DECLINED_MESSAGE, ASK_DECLINED)
    raise cancelled_error()


def client_name(session: ServerSession) -> str | None:
    """The name the client gave in its ``clientInfo`` (at ``initialize``, or in a
    2026-07-28 request's envelope), as given: ``None`` when it gave none."""
    params = session.client_params
    return params.client_info.name if params is not None else None


def report_client(session: ServerSession) -> None:
    """Tell an audit listening around the ask that the person at this client decided it."""
    if listening():
        report_decision(peer_decision(client_name(session)))


def supports_form_elicitation(session: ServerSession) -> bool:
    """Whether the client declared form elicitation (a bare ``elicitation: {}`` counts)."""
    declared = session.client_capabilities
    elicitation = declared.elicitation if declared is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


class Round(Protocol):
    """One round of an ``@interactive`` tool on a 2026-07-28 connection (see ``_suspend``)."""

    session: object

    def ask(
        self, provider: ElicitationProvider, request: AskUserQuestionRequest
    ) -> AskUserQuestionAnswer: ...


ACTIVE_ROUND: Final[contextvars.ContextVar[Round | None]] = contextvars.ContextVar(
    "interaction_mcp_round", default=None
)


def round_for(provider: ElicitationProvider) -> Round | None:
    """The round an ``@interactive`` tool is running for ``provider``'s client, if any."""
    active = ACTIVE_ROUND.get()
    return active if active is not None and active.session is provider.session else None


class ElicitationProvider:
    """Asks the MCP client connected to a server session, through form elicitation.

    Make one from a tool's context (:meth:`from_context`) and register it for the tool's
    work. On a legacy connection (up to 2025-11-25) it pushes ``elicitation/create``; in a
    tool served with :func:`interactive` on a 2026-07-28 connection it suspends the ask,
    and the tool answers with an input-required result. ``accept`` gives the answer
    (checked by the seam); ``decline`` on a yes/no question is a skip (``confirm()`` is
    ``False``), any other ``decline`` is :data:`ASK_DECLINED`, ``cancel`` is
    ``ASK_CANCELLED``; a client
    that cannot be asked is ``NO_PROVIDER`` with what it lacks. An abort or timeout of the
    request's signal cancels a pending push. When the client responds, an
    :class:`~interaction.audit.AuditProvider` around this provider records the person at
    the client, by the name of its ``clientInfo``, as who decided.
    """

    def __init__(
        self,
        session: ServerSession,
        related_request_id: mcp_types.RequestId | None = None,
        *,
        host: Host = "mcp",
    ) -> None:
        self.session = session
        self.related_request_id = related_request_id
        self.host: Host = host

    @classmethod
    def from_context(cls, ctx: Context[Any, Any] | ToolContext) -> ElicitationProvider:
        """The provider for the client that called the tool whose context is ``ctx``: an
        ``MCPServer`` tool's (``mcp.server.mcpserver.Context``) or a FastMCP tool's
        (``fastmcp.Context``)."""
        if isinstance(ctx, Context):
            return cls(ctx.request_context.session, ctx.request_id)
        return cls(ctx.session, ctx.request_id, host="fastmcp")

    @property
    def protocol_version(self) -> str:
        return self.session.protocol_version

    def unavailable(self) -> str | None:
        """Why this client cannot be asked by a push, or ``None`` when it can."""
        version = self.protocol_version
        if not _at_least(version, ELICITATION_VERSION):
            return old_protocol_message(version)
        if not _at_least(version, INPUT_REQUIRED_VERSION) and not self.session.can_send_request:
            # First: without a channel (stateless HTTP) the capabilities declared at
            # initialize are not known on this connection either.
            return NO_BACK_CHANNEL
        if not supports_form_elicitation(self.session):
            return NO_ELICITATION
        if not self.session.can_send_request:
            return NOT_SUSPENDABLE_FASTMCP if self.host == "fastmcp" else NOT_SUSPENDABLE
        return None

    def supports_elicitation(self) -> bool:
        """Whether an ask through this provider can reach the client now (push or suspend)."""
        if round_for(self) is not None:
            return supports_form_elicitation(self.session)
        return self.unavailable() is None

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        active = round_for(self)
        if active is not None:
            return active.ask(self, request)
        problem = self.unavailable()
        if problem is not None:
            raise UserInteractionError(problem, ErrorCode.NO_PROVIDER)
        message, schema, fields = request_to_form(request, self.protocol_version)
        result = await self.session.elicit_form(message, schema, self.related_request_id)
        report_client(self.session)
        return outcome(request, fields, result)
