"""The MCP bridge, both ways, over the official ``mcp`` SDK (extra ``[mcp]``).

- :class:`ElicitationProvider` asks through MCP form elicitation: an MCP server tool puts an
  ``AskUserQuestionRequest`` to the connected client (``elicitation/create``).
- :func:`elicitation_callback` answers a server's form elicitation with the provider active
  in context (terminal, console, web relay): pass it as an MCP client's
  ``elicitation_callback``.

What a form cannot carry is listed in docs/mcp.md.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, Literal, TypeAlias

try:
    import mcp.types as mcp_types
    from mcp.client.context import ClientRequestContext
    from mcp.client.session import ElicitationFnT
    from mcp.server.mcpserver import Context
    from mcp.server.session import ServerSession
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        'interaction.mcp needs the MCP SDK: pip install "interaction-seam[mcp]"'
    ) from exc

from ._core import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    UserInteractionProvider,
    ask,
    cancelled_error,
    check_request,
    provide,
)
from .wire import JSONObject

__all__ = [
    "ElicitationCallback",
    "ElicitationProvider",
    "FormField",
    "elicitation_callback",
    "form_to_answer",
    "request_to_form",
]

OTHER_SUFFIX: Final = "__other"
OTHER_TITLE: Final = "Other (your own answer)"
NO_ELICITATION: Final = (
    "the MCP client cannot answer questions: it did not declare the form elicitation capability"
)

FormValue: TypeAlias = str | int | float | bool | list[str] | None


# ---------------------------------------------------------------------------- server side


@dataclass(frozen=True, slots=True)
class FormField:
    """Where one question's answer lives in the form content."""

    question: AskUserQuestionItem
    key: str
    other_key: str | None


def _title(item: AskUserQuestionItem) -> str:
    return f"{item.header}: {item.question}" if item.header else item.question


def _option_title(option: AskUserQuestionOption) -> str:
    return f"{option.label} — {option.description}" if option.description else option.label


def request_to_form(request: AskUserQuestionRequest) -> tuple[str, JSONObject, list[FormField]]:
    """The elicitation message, the requested schema, and where each answer is found.

    No field is required: leaving one empty skips its question.
    """
    properties: dict[str, Any] = {}
    fields: list[FormField] = []
    taken = {item.id for item in request.questions}
    for item in request.questions:
        prop: dict[str, Any] = {"title": _title(item)}
        if item.detail:
            prop["description"] = item.detail
        other_key = None
        if not item.options:
            prop["type"] = "string"
        else:
            choices = [{"const": o.label, "title": _option_title(o)} for o in item.options]
            if item.multi_select:
                prop.update(type="array", items={"anyOf": choices}, uniqueItems=True)
            else:
                prop.update(type="string", oneOf=choices)
            other_key = item.id + OTHER_SUFFIX
            while other_key in taken:
                other_key += "_"
            taken.add(other_key)
            properties[item.id] = prop
            properties[other_key] = {"type": "string", "title": f"{OTHER_TITLE} — {item.question}"}
            fields.append(FormField(item, item.id, other_key))
            continue
        properties[item.id] = prop
        fields.append(FormField(item, item.id, None))
    if len(request.questions) == 1:
        only = request.questions[0]
        message = _title(only) + (f"\n\n{only.detail}" if only.detail else "")
    else:
        lines = [f"Please answer {len(request.questions)} questions (leave one empty to skip it):"]
        lines.extend(f"- {_title(item)}" for item in request.questions)
        message = "\n".join(lines)
    return message, {"type": "object", "properties": properties, "required": []}, fields


def _bad(key: str, problem: str) -> UserInteractionError:
    return UserInteractionError(
        f"elicitation content {key}: {problem}", ErrorCode.BAD_ANSWER, path=f"content.{key}"
    )


def _text_value(content: Mapping[str, object], key: str | None) -> str | None:
    if key is None:
        return None
    value = content.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise _bad(key, f"expected a string, got {type(value).__name__}")
    return value if value.strip() else None


def form_to_answer(
    fields: Sequence[FormField], content: Mapping[str, object]
) -> AskUserQuestionAnswer:
    """The answer an accepted form's ``content`` gives; the seam then checks it."""
    items = []
    for field in fields:
        question = field.question
        other = _text_value(content, field.other_key)
        value = content.get(field.key)
        if not question.options:
            items.append(
                AskUserQuestionAnswerItem(question.id, (), _text_value(content, field.key))
            )
            continue
        if question.multi_select:
            if value is None:
                value = []
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise _bad(field.key, "expected an array of option labels")
            items.append(AskUserQuestionAnswerItem(question.id, tuple(value), other))
        elif other is not None:  # an answer of one's own replaces the choice
            items.append(AskUserQuestionAnswerItem(question.id, (), other))
        else:
            if value is not None and value != "" and not isinstance(value, str):
                raise _bad(field.key, f"expected an option label, got {type(value).__name__}")
            selected = (value,) if isinstance(value, str) and value else ()
            items.append(AskUserQuestionAnswerItem(question.id, selected))
    return AskUserQuestionAnswer(items)


class ElicitationProvider:
    """Asks the MCP client connected to a server session, through form elicitation.

    Make one from a tool's context (:meth:`from_context`) and register it for the tool's
    work. ``accept`` gives the answer (checked by the seam); ``decline`` and ``cancel`` are
    ``ASK_CANCELLED``; a client without form elicitation is ``NO_PROVIDER``. An abort or
    timeout of the request's signal cancels the pending elicitation.
    """

    def __init__(
        self, session: ServerSession, related_request_id: mcp_types.RequestId | None = None
    ) -> None:
        self.session = session
        self.related_request_id = related_request_id

    @classmethod
    def from_context(cls, ctx: Context[Any, Any]) -> ElicitationProvider:
        """The provider for the client that called the tool whose context is ``ctx``."""
        return cls(ctx.request_context.session, ctx.request_id)

    def supports_elicitation(self) -> bool:
        wanted = mcp_types.ClientCapabilities(elicitation=mcp_types.ElicitationCapability())
        if not self.session.check_client_capability(wanted):
            return False
        params = self.session.client_params
        declared = params.capabilities.elicitation if params is not None else None
        return not (declared is not None and declared.form is None and declared.url is not None)

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        if not self.supports_elicitation():
            raise UserInteractionError(NO_ELICITATION, ErrorCode.NO_PROVIDER)
        message, schema, fields = request_to_form(request)
        result = await self.session.elicit_form(message, schema, self.related_request_id)
        if result.action != "accept":
            raise cancelled_error()
        return form_to_answer(fields, result.content or {})


# ---------------------------------------------------------------------------- client side

ElicitationCallback: TypeAlias = ElicitationFnT
"""The SDK's type of an MCP client's ``elicitation_callback``."""

YES: Final = "Yes"
NO: Final = "No"


class _Unexpressible(Exception):
    """A requested schema this bridge cannot put as questions."""


@dataclass(frozen=True, slots=True)
class _Field:
    key: str
    kind: Literal["text", "number", "integer", "boolean", "choice", "choices"]
    required: bool
    item: AskUserQuestionItem
    values: Mapping[str, str | int | float | bool]  # option label -> content value
    spec: Mapping[str, Any]


def _choices(spec: Mapping[str, Any], key: str) -> list[tuple[str, str]]:
    """(label, value) pairs of an enum field: titled (oneOf/anyOf) or plain (enum[, enumNames])."""
    if "oneOf" in spec or "anyOf" in spec:
        entries = spec.get("oneOf") or spec.get("anyOf")
        if not isinstance(entries, list) or not all(
            isinstance(e, dict) and isinstance(e.get("const"), str) for e in entries
        ):
            raise _Unexpressible(f"field {key!r} has choices without string values")
        return [(str(e.get("title") or e["const"]), e["const"]) for e in entries]
    enum = spec.get("enum")
    if not isinstance(enum, list) or not all(isinstance(v, str) for v in enum):
        raise _Unexpressible(f"field {key!r} has an enum that is not a list of strings")
    names = spec.get("enumNames")
    if (
        isinstance(names, list)
        and len(names) == len(enum)
        and all(isinstance(n, str) for n in names)
    ):
        return list(zip(names, enum, strict=True))
    return [(v, v) for v in enum]


_BOUNDS: Final = ("minLength", "maxLength", "minimum", "maximum", "minItems", "maxItems")


def _constraints(spec: Mapping[str, Any]) -> list[str]:
    notes = []
    for name, text in (
        ("minLength", "at least {} characters"),
        ("maxLength", "at most {} characters"),
        ("minimum", "at least {}"),
        ("maximum", "at most {}"),
        ("minItems", "choose at least {}"),
        ("maxItems", "choose at most {}"),
        ("format", "format: {}"),
    ):
        if name in spec:
            notes.append(text.format(spec[name]))
    return notes


def _field(key: str, spec: object, required: bool) -> _Field:
    if not isinstance(spec, dict):
        raise _Unexpressible(f"field {key!r} has no schema")
    kind_name = spec.get("type")
    for bound in _BOUNDS:
        value = spec.get(bound, 0)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _Unexpressible(f"field {key!r} has a {bound} that is not a number")
    title = spec.get("title") if isinstance(spec.get("title"), str) else None
    question = title or key
    detail_parts = [spec["description"]] if isinstance(spec.get("description"), str) else []
    notes = _constraints(spec)
    if required:
        notes.insert(0, "required")
    if "default" in spec:
        notes.append(f"default: {spec['default']}")
    if notes:
        detail_parts.append("(" + "; ".join(notes) + ")")
    detail = "\n\n".join(detail_parts) or None
    values: dict[str, str | int | float | bool] = {}
    multi = False
    if kind_name == "string" and ("enum" in spec or "oneOf" in spec or "anyOf" in spec):
        kind: Literal["text", "number", "integer", "boolean", "choice", "choices"] = "choice"
        values = dict(_choices(spec, key))
    elif kind_name == "array":
        items = spec.get("items")
        if not isinstance(items, dict):
            raise _Unexpressible(f"field {key!r} is an array without item choices")
        kind, multi = "choices", True
        values = dict(_choices(items, key))
    elif kind_name == "boolean":
        kind, values = "boolean", {YES: True, NO: False}
    elif kind_name in ("string", "number", "integer"):
        kind = kind_name
    else:
        raise _Unexpressible(f"field {key!r} has type {kind_name!r}, which a question cannot carry")
    options = [AskUserQuestionOption(label) for label in values]
    item = AskUserQuestionItem(key, question, detail, None, options, multi)
    return _Field(key, kind, required, item, values, spec)


def _with_note(field: _Field, note: str) -> _Field:
    """The field with ``note`` put before its question's detail."""
    detail = f"{note}\n\n{field.item.detail}" if field.item.detail else note
    return replace(field, item=replace(field.item, detail=detail))


def _fields(params: mcp_types.ElicitRequestFormParams) -> list[_Field]:
    schema = params.requested_schema
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if schema.get("type") != "object" or not isinstance(properties, dict) or not properties:
        raise _Unexpressible("the requested schema is not an object with properties")
    required = schema.get("required") or []
    fields = [_field(key, spec, key in required) for key, spec in properties.items()]
    first = fields[0]
    message = params.message.strip()
    if message and message != first.item.question:
        fields[0] = _with_note(first, message)
    return fields


def _value(field: _Field, answer: AskUserQuestionAnswerItem) -> tuple[FormValue, str | None]:
    """The content value for one answer, or why it does not satisfy the field."""
    spec = field.spec
    if field.kind in ("choice", "boolean"):
        if answer.custom is not None:
            return None, "choose one of the options"
        if not answer.selected:
            return None, "this field is required" if field.required else None
        return field.values[answer.selected[0]], None
    if field.kind == "choices":
        if answer.custom is not None:
            return None, "choose from the options only"
        chosen = [str(field.values[label]) for label in answer.selected]
        if not chosen and field.required:
            return None, "this field is required"
        if len(chosen) < spec.get("minItems", 0) or len(chosen) > spec.get("maxItems", math.inf):
            return None, "; ".join(_constraints(spec))
        return chosen, None
    text = answer.custom
    if text is None:
        return None, "this field is required" if field.required else None
    if field.kind in ("number", "integer"):
        try:
            if field.kind == "integer" and not _INTEGER.fullmatch(text.strip()):
                raise ValueError(text)  # int() would take 1_000 and non-ASCII digits
            number: int | float = int(text) if field.kind == "integer" else float(text)
        except ValueError:
            return None, f"enter {'a whole number' if field.kind == 'integer' else 'a number'}"
        if (
            not math.isfinite(number)
            or number < spec.get("minimum", -math.inf)
            or number > spec.get("maximum", math.inf)
        ):
            return None, "enter a number " + "; ".join(_constraints(spec))
        return number, None
    if len(text) < spec.get("minLength", 0) or len(text) > spec.get("maxLength", math.inf):
        return None, "; ".join(_constraints(spec))
    return text, None


_INTEGER: Final = re.compile(r"[+-]?[0-9]+", re.ASCII)
MAX_TRIES: Final = 3
"""How many times a form is asked before an answer that still does not fit is an error."""


class _TooManyTries(Exception):
    pass


async def _answer(
    fields: list[_Field], provider: UserInteractionProvider | None
) -> dict[str, FormValue]:
    """Ask until every answer satisfies its field (a failing one is asked again, up to
    ``MAX_TRIES`` asks in all; each re-ask carries one note, replacing the last)."""
    pending = [(field, field) for field in fields]  # (original, as asked)
    content: dict[str, FormValue] = {}
    for _ in range(MAX_TRIES):
        request = check_request(AskUserQuestionRequest([asked.item for _, asked in pending]))
        answer = await _ask(request, provider)
        retry = []
        problems = []
        for (field, _asked), item in zip(pending, answer.answers, strict=True):
            value, problem = _value(field, item)
            if problem is not None:
                retry.append((field, _with_note(field, f"Please answer again: {problem}.")))
                problems.append(f"{field.key}: {problem}")
            elif value is not None:
                content[field.key] = value
        if not retry:
            return content
        pending = retry
    raise _TooManyTries(f"no valid answer after {MAX_TRIES} tries ({'; '.join(problems)})")


async def _ask(
    request: AskUserQuestionRequest, provider: UserInteractionProvider | None
) -> AskUserQuestionAnswer:
    if provider is None:
        return await ask(request)

    async def with_provider() -> AskUserQuestionAnswer:
        with provide(provider):
            return await ask(request)

    # A fresh context, so the given provider is used whatever is registered around us.
    return await asyncio.get_running_loop().create_task(
        with_provider(), context=contextvars.Context()
    )


def elicitation_callback(provider: UserInteractionProvider | None = None) -> ElicitationCallback:
    """An MCP client ``elicitation_callback`` that asks a human through the seam.

    It asks ``provider``, or else the provider active in the context where the MCP client
    was entered. Form fields become questions (string, number, integer and boolean fields,
    titled and untitled enums, single and multi); an answer that does not satisfy its field
    is asked again. The result is ``accept`` with content that satisfies the requested
    schema, or ``cancel`` when the user dismisses it. A URL-mode elicitation, or a schema
    no question can express, is refused with an error that says why; nothing is guessed.
    """

    async def callback(
        context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult | mcp_types.ErrorData:
        del context
        if not isinstance(params, mcp_types.ElicitRequestFormParams):
            return mcp_types.ErrorData(
                code=mcp_types.INVALID_PARAMS,
                message="interaction answers form elicitations only;"
                " URL-mode elicitation is declined",
            )
        try:
            fields = _fields(params)
            check_request(AskUserQuestionRequest([f.item for f in fields]))
        except (_Unexpressible, UserInteractionError) as exc:
            return mcp_types.ErrorData(
                code=mcp_types.INVALID_PARAMS, message=f"interaction cannot ask this form: {exc}"
            )
        try:
            content = await _answer(fields, provider)
        except _TooManyTries as exc:
            return mcp_types.ErrorData(
                code=mcp_types.INVALID_PARAMS,
                message=f"interaction could not fill this form: {exc}",
            )
        except UserInteractionError as error:
            if error.code in (
                ErrorCode.ASK_CANCELLED,
                ErrorCode.ASK_ABORTED,
                ErrorCode.ASK_TIMEOUT,
            ):
                return mcp_types.ElicitResult(action="cancel")
            return mcp_types.ErrorData(
                code=mcp_types.INTERNAL_ERROR, message=f"{error.message} ({error.code})"
            )
        return mcp_types.ElicitResult(action="accept", content=content)

    return callback
