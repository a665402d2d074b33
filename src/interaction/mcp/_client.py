"""Client side: answer a server's form elicitation with the provider in context."""

from __future__ import annotations

import asyncio
import datetime
import json
import math
import re
import webbrowser
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal, TypeAlias, cast
from urllib.parse import urlsplit

import jsonschema
import mcp.types as mcp_types
from mcp.client.context import ClientRequestContext
from mcp.client.session import ElicitationFnT

from .._core import (
    OTHER_LABEL,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    Provenance,
    UserInteractionError,
    UserInteractionProvider,
    answer_item,
    ask_with,
    check_request,
    escape_controls,
)
from ._limits import (
    MAX_FIELDS,
    MAX_MESSAGE,
    MAX_OPTIONS,
    MAX_SCHEMA_BYTES,
    MAX_TEXT,
    QUOTE,
    quote,
)

ElicitationCallback: TypeAlias = ElicitationFnT
"""The SDK's type of an MCP client's ``elicitation_callback``."""

FormValue: TypeAlias = str | int | float | bool | list[str] | None
Primitive: TypeAlias = str | int | float | bool

YES: Final = "Yes"
NO: Final = "No"
MAX_TRIES: Final = 3
"""How many times a form is asked before an answer that still does not fit is an error."""

FORMATS: Final = ("email", "uri", "date", "date-time")
"""The string formats MCP form elicitation defines; each is checked before it is sent."""

_SCHEMA_KEYWORDS: Final = frozenset(
    {"type", "properties", "required", "$schema", "title", "description"}
)
_FIELD_KEYWORDS: Final = frozenset(
    {
        "type",
        "title",
        "description",
        "default",
        "enum",
        "enumNames",
        "oneOf",
        "anyOf",
        "items",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "minItems",
        "maxItems",
        "uniqueItems",
        "format",
    }
)
_ITEM_KEYWORDS: Final = frozenset({"type", "enum", "enumNames", "oneOf", "anyOf"})
_CHOICE_KEYWORDS: Final = frozenset({"const", "title"})
_BOUNDS: Final = ("minLength", "maxLength", "minimum", "maximum", "minItems", "maxItems")
_INTEGER: Final = re.compile(r"[+-]?[0-9]+", re.ASCII)
_NUMBER: Final = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?", re.ASCII)
_EMAIL: Final = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_DATE: Final = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", re.ASCII)
_DATE_TIME: Final = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})",
    re.ASCII,
)
OTHER_SUFFIX: Final = "__other"
OTHER_TITLE_PREFIX: Final = f"{OTHER_LABEL} — "
"""How interaction's own server names and titles the "Other" field beside a choice."""
_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*", re.ASCII)


class _Unexpressible(Exception):
    """A requested schema this bridge cannot put as questions."""


class _TooManyTries(Exception):
    pass


# ------------------------------------------------------------------------------ formats


def _is_email(text: str) -> bool:
    return _EMAIL.fullmatch(text) is not None


def _is_date(text: str) -> bool:
    if not _DATE.fullmatch(text):
        return False
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _is_date_time(text: str) -> bool:
    if not _DATE_TIME.fullmatch(text):
        return False
    try:
        datetime.datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _is_uri(text: str) -> bool:
    if any(c.isspace() for c in text) or not text.isascii():
        return False
    scheme = text.partition(":")[0]
    if ":" not in text or not _SCHEME.fullmatch(scheme):
        return False
    try:
        urlsplit(text)
    except ValueError:
        return False
    return True


_FORMAT_CHECKS: Final = {
    "email": (_is_email, "an email address such as name@example.com"),
    "uri": (_is_uri, "a URI such as https://example.com/page"),
    "date": (_is_date, "a date such as 2026-07-28"),
    "date-time": (_is_date_time, "a date and time such as 2026-07-28T09:30:00Z"),
}


def _on_strings(check: Callable[[str], bool]) -> Callable[[object], bool]:
    return lambda value: not isinstance(value, str) or check(value)


def _format_checker() -> jsonschema.FormatChecker:
    checker = jsonschema.FormatChecker(())
    for name, (check, _) in _FORMAT_CHECKS.items():
        checker.checkers[name] = (_on_strings(check), ())
    return checker


# ------------------------------------------------------------------------------- fields


_Kind: TypeAlias = Literal["text", "number", "integer", "boolean", "choice", "choices"]


@dataclass(frozen=True, slots=True)
class _Field:
    key: str
    kind: _Kind
    required: bool
    item: AskUserQuestionItem
    values: Mapping[str, Primitive]  # option label -> content value
    spec: Mapping[str, Any]
    default: FormValue = None  # what a skip sends (pre-filled), when the schema has one
    other: _Field | None = None  # our server's "Other" field, folded into this choice


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _shown(value: object) -> str:
    """A value from the schema as a refusal quotes it: JSON, cut to ``QUOTE`` characters."""
    text = _json(value)
    return text if len(text) <= QUOTE else f"{text[:QUOTE]}… ({len(text)} characters)"


def _label(value: object) -> str:
    return value if isinstance(value, str) else _json(value)


def _unknown(where: str, spec: Mapping[str, Any], known: frozenset[str]) -> None:
    unknown = sorted(set(spec) - known)
    if unknown:
        shown = ", ".join(map(quote, unknown[:5])) + (
            f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        )
        raise _Unexpressible(f"{where} uses {shown}, which interaction cannot check")


def _at_most_options(key: str, entries: object) -> None:
    if isinstance(entries, list) and len(entries) > MAX_OPTIONS:
        raise _Unexpressible(
            f"field {quote(key)} offers {len(entries)} choices; interaction asks at most"
            f" {MAX_OPTIONS}"
        )


def _too_long(where: str, text: str, limit: int = MAX_TEXT) -> None:
    if len(text) > limit:
        raise _Unexpressible(
            f"{where} is {len(text)} characters long; interaction shows at most {limit}"
        )


def _choices(spec: Mapping[str, Any], key: str, kind: str) -> list[tuple[str, Primitive]]:
    """(label, value) pairs of an enum field: titled (oneOf/anyOf) or plain (enum[, enumNames])."""
    if sum(name in spec for name in ("enum", "oneOf", "anyOf")) > 1:
        raise _Unexpressible(f"field {quote(key)} has more than one of enum, oneOf and anyOf")
    if "oneOf" in spec or "anyOf" in spec:
        pairs = _titled_choices(spec, key, kind)
    else:
        pairs = _enum_choices(spec, key, kind)
    _check_choices(spec, key, pairs)
    return pairs


def _titled_choices(spec: Mapping[str, Any], key: str, kind: str) -> list[tuple[str, Primitive]]:
    """The pairs of a ``oneOf`` or ``anyOf`` of ``{"const": ..., "title": ...}`` entries."""
    if kind != "string":  # the consts below are strings: a number field could not hold one
        raise _Unexpressible(
            f"field {quote(key)} has titled choices on type {_shown(kind)}; interaction asks"
            " them on strings only"
        )
    entries = spec.get("oneOf") if "oneOf" in spec else spec.get("anyOf")
    _at_most_options(key, entries)
    if (
        not isinstance(entries, list)
        or not entries
        or not all(isinstance(e, dict) and isinstance(e.get("const"), str) for e in entries)
    ):
        raise _Unexpressible(f"field {quote(key)} has choices without string values")
    for entry in entries:
        _unknown(f"a choice of field {quote(key)}", entry, _CHOICE_KEYWORDS)
    return [
        (str(e["title"]) if isinstance(e.get("title"), str) else e["const"], e["const"])
        for e in entries
    ]


def _enum_choices(spec: Mapping[str, Any], key: str, kind: str) -> list[tuple[str, Primitive]]:
    """The pairs of an ``enum``, labelled by its ``enumNames`` when it has them."""
    enum = spec.get("enum")
    _at_most_options(key, enum)
    python: tuple[type, ...] = {"integer": (int,), "number": (int, float)}.get(kind, (str,))
    if (
        not isinstance(enum, list)
        or not enum
        or not all(isinstance(v, python) and not isinstance(v, bool) for v in enum)
    ):
        raise _Unexpressible(f"field {quote(key)} has an enum that is not a list of {kind}s")
    names = spec.get("enumNames")
    if names is None:
        return [(_label(v), v) for v in enum]
    if (
        isinstance(names, list)
        and len(names) == len(enum)
        and all(isinstance(n, str) for n in names)
    ):
        return list(zip(names, enum, strict=True))
    raise _Unexpressible(f"field {quote(key)} has enumNames that do not name each enum value")


def _check_choices(spec: Mapping[str, Any], key: str, pairs: list[tuple[str, Primitive]]) -> None:
    """Each option shown whole, titled once, offering a value once that ``spec`` accepts."""
    seen: set[str] = set()
    values: set[Primitive] = set()  # 1 and 1.0 are one value, in Python as in JSON Schema
    for label, value in pairs:
        _too_long(f"an option of field {quote(key)}", label)
        if label in seen:
            raise _Unexpressible(f"field {quote(key)} has two options titled {quote(label)}")
        if value in values:  # oneOf could never match it, uniqueItems could refuse it
            raise _Unexpressible(f"field {quote(key)} offers the value {_shown(value)} twice")
        misfit = _misfit(spec, value)
        if misfit is not None:
            raise _Unexpressible(
                f"field {quote(key)} offers {_shown(value)}, which its own {misfit} refuses"
            )
        seen.add(label)
        values.add(value)


def _misfit(spec: Mapping[str, Any], value: Primitive) -> str | None:
    """The keyword of ``spec`` that ``value`` fails (jsonschema checks it too): the one rule
    for an offered option and for a typed answer. Ints and floats compare exactly in
    Python, however large the int."""
    if isinstance(value, str):
        if len(value) < spec.get("minLength", 0):
            return "minLength"
        if len(value) > spec.get("maxLength", math.inf):
            return "maxLength"
        if "format" in spec and not _FORMAT_CHECKS[spec["format"]][0](value):
            return "format"
    elif not isinstance(value, bool):
        if value < spec.get("minimum", -math.inf):
            return "minimum"
        if value > spec.get("maximum", math.inf):
            return "maximum"
    return None


def _needless(name: str, spec: Mapping[str, Any]) -> bool:
    """A bound that never binds, not worth a note: a ``maxLength`` no shorter than the text
    interaction reads, a ``maxItems`` no smaller than the number of choices (as our own
    server's forms carry)."""
    if name == "maxLength":
        return bool(spec[name] >= MAX_TEXT)
    if name == "maxItems":
        items = spec.get("items")
        choices = _choice_list(items) if isinstance(items, dict) else None
        return choices is not None and spec[name] >= len(choices)
    return False


def _choice_list(spec: Mapping[str, Any]) -> list[object] | None:
    for keyword in ("enum", "oneOf", "anyOf"):
        entries = spec.get(keyword)
        if isinstance(entries, list):
            return entries
    return None


def _constraints(spec: Mapping[str, Any]) -> list[str]:
    notes = []
    for name, text in (
        ("minLength", "at least {} characters"),
        ("maxLength", "at most {} characters"),
        ("minimum", "at least {}"),
        ("maximum", "at most {}"),
        ("minItems", "choose at least {}"),
        ("maxItems", "choose at most {}"),
    ):
        if name in spec and not _needless(name, spec):
            notes.append(text.format(_json(spec[name])))
    if "format" in spec:
        notes.append(_FORMAT_CHECKS[spec["format"]][1])
    return notes


def _has_choices(spec: Mapping[str, Any]) -> bool:
    return "enum" in spec or "oneOf" in spec or "anyOf" in spec


def _field(key: str, spec: object, required: bool) -> _Field:
    if not isinstance(spec, dict):
        raise _Unexpressible(f"field {quote(key)} has no schema")
    kind_name = _check_field_schema(key, spec)
    title = spec.get("title") if isinstance(spec.get("title"), str) else None
    question = title or key
    detail = _field_detail(spec, required)
    kind, values, multi = _field_kind(key, spec, kind_name)
    options = [AskUserQuestionOption(label) for label in values]
    item = AskUserQuestionItem(key, question, detail, None, options, multi)
    return _with_default(_Field(key, kind, required, item, values, spec))


def _check_field_schema(key: str, spec: Mapping[str, Any]) -> str:
    """The field's type name, once its keywords, bounds, format and texts are ones
    interaction can check and show."""
    kind_name = spec.get("type")
    if kind_name not in ("string", "number", "integer", "boolean", "array"):
        raise _Unexpressible(
            f"field {quote(key)} has type {_shown(kind_name)}, which a question cannot carry"
        )
    _unknown(f"field {quote(key)}", spec, _FIELD_KEYWORDS)
    for bound in _BOUNDS:
        value = spec.get(bound, 0)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _Unexpressible(f"field {quote(key)} has a {bound} that is not a number")
    if "format" in spec and (kind_name != "string" or spec["format"] not in _FORMAT_CHECKS):
        raise _Unexpressible(
            f"field {quote(key)} has format {_shown(spec['format'])}; interaction checks"
            f" {', '.join(FORMATS)} on strings only"
        )
    for name in ("title", "description"):
        if isinstance(spec.get(name), str):
            _too_long(f"the {name} of field {quote(key)}", spec[name])
    return cast("str", kind_name)


def _field_detail(spec: Mapping[str, Any], required: bool) -> str | None:
    """The question's detail: the field's description, then its constraints in brackets."""
    detail_parts = [spec["description"]] if isinstance(spec.get("description"), str) else []
    notes = _constraints(spec)
    if required:
        notes.insert(0, "required")
    if notes:
        detail_parts.append("(" + "; ".join(notes) + ")")
    return "\n\n".join(detail_parts) or None


def _field_kind(
    key: str, spec: Mapping[str, Any], kind_name: str
) -> tuple[_Kind, dict[str, Primitive], bool]:
    """How the field is asked: its kind, its options' values by label, and multi-select."""
    if kind_name in ("string", "number", "integer") and _has_choices(spec):
        return "choice", dict(_choices(spec, key, kind_name)), False
    if _has_choices(spec):
        raise _Unexpressible(
            f"field {quote(key)} has choices on type {_shown(kind_name)}; interaction asks them on"
            " strings and numbers (and on an array's items) only"
        )
    if kind_name == "array":
        return "choices", _array_choices(key, spec), True
    if kind_name == "boolean":
        return "boolean", {YES: True, NO: False}, False
    if kind_name == "string":
        return "text", {}, False
    return ("number" if kind_name == "number" else "integer"), {}, False


def _array_choices(key: str, spec: Mapping[str, Any]) -> dict[str, Primitive]:
    """The choices of an array field, whose items must be an enum of strings."""
    items = spec.get("items")
    if not isinstance(items, dict) or not _has_choices(items):
        raise _Unexpressible(
            f"field {quote(key)} is an array without an enum of choices;"
            " interaction asks arrays as multi-selects only"
        )
    _unknown(f"the items of field {quote(key)}", items, _ITEM_KEYWORDS)
    if items.get("type", "string") != "string":
        raise _Unexpressible(
            f"field {quote(key)} has items of type {_shown(items['type'])}; MCP arrays hold strings"
        )
    return dict(_choices(items, key, "string"))


def _with_default(field: _Field) -> _Field:
    """The field pre-filled with its schema's ``default``: shown, and sent when skipped."""
    spec = field.spec
    default = spec.get("default")
    if "default" not in spec or not _fits(field.kind, spec, field.values, default):
        return field
    note = f"(default: {_shown(default)}; leave it empty to keep it)"
    detail = f"{field.item.detail}\n\n{note}" if field.item.detail else note
    return replace(field, item=replace(field.item, detail=detail), default=cast(FormValue, default))


def _fits(
    kind: str, spec: Mapping[str, Any], values: Mapping[str, Primitive], value: object
) -> bool:
    """Whether a default is a value the field could send (the rules an answer meets); one
    that is not is neither shown nor sent, as if the schema had none."""
    if kind in ("boolean", "choice"):
        return any(type(value) is type(v) and value == v for v in values.values())
    if kind == "choices":
        offered = set(values.values())
        return (
            isinstance(value, list)
            and all(isinstance(v, str) and v in offered for v in value)
            and len(set(value)) == len(value)
            and spec.get("minItems", 0) <= len(value) <= spec.get("maxItems", math.inf)
        )
    if kind == "text":
        return isinstance(value, str) and _misfit(spec, value) is None
    number = (int,) if kind == "integer" else (int, float)
    return (
        isinstance(value, number)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and _misfit(spec, value) is None
    )


def _skipped(field: _Field) -> tuple[FormValue, str | None]:
    """What a skipped field sends: its default, or nothing (and a required one is asked again)."""
    if field.default is not None:
        return field.default, None
    return None, "this field is required" if field.required else None


def _with_note(field: _Field, note: str) -> _Field:
    """The field with ``note`` put before its question's detail."""
    detail = f"{note}\n\n{field.item.detail}" if field.item.detail else note
    return replace(field, item=replace(field.item, detail=detail))


def _fields(params: mcp_types.ElicitRequestFormParams) -> list[_Field]:
    schema = params.requested_schema
    _too_long("the message", params.message, MAX_MESSAGE)
    text = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_SCHEMA_BYTES:
        raise _Unexpressible(
            f"the requested schema is {size} bytes long; interaction asks at most"
            f" {MAX_SCHEMA_BYTES}"
        )
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if schema.get("type") != "object" or not isinstance(properties, dict) or not properties:
        raise _Unexpressible("the requested schema is not an object with properties")
    if len(properties) > MAX_FIELDS:
        raise _Unexpressible(
            f"the requested schema has {len(properties)} fields; interaction asks at most"
            f" {MAX_FIELDS}"
        )
    _unknown("the requested schema", schema, _SCHEMA_KEYWORDS)
    listed = schema.get("required") or []
    if not isinstance(listed, list) or not all(isinstance(r, str) for r in listed):
        raise _Unexpressible("the requested schema's required is not a list of field names")
    required = set(listed)
    undefined = [name for name in listed if name not in properties]
    if undefined:  # no answer could ever satisfy it
        raise _Unexpressible(
            f"the requested schema requires {', '.join(map(quote, undefined[:5]))},"
            " which its properties do not define"
        )
    fields = _merged([_field(key, spec, key in required) for key, spec in properties.items()])
    first = fields[0]
    message = params.message.strip()
    if message and message != first.item.question:
        fields[0] = _with_note(first, message)
    return fields


def _merged(fields: list[_Field]) -> list[_Field]:
    """Our own server's "Other" fields folded into the choice beside them.

    interaction's server sends, beside each choice ``K``, an optional string ``K__other``
    titled "Other — …" for an answer of one's own. Asked as a question of its own, every
    choice would be two questions; folded, the choice's own "Other" answer fills it.
    """
    by_key = {field.key: field for field in fields}
    folded: dict[str, _Field] = {}
    for field in fields:
        if not field.key.endswith(OTHER_SUFFIX) or field.kind != "text" or field.required:
            continue
        title = field.spec.get("title")
        choice = by_key.get(field.key.removesuffix(OTHER_SUFFIX))
        if (
            isinstance(title, str)
            and title.startswith(OTHER_TITLE_PREFIX)
            and choice is not None
            and choice.kind in ("choice", "choices")
            and not choice.required
            and choice.other is None
        ):
            folded[field.key] = field
            by_key[choice.key] = replace(choice, other=field)
    return [by_key[field.key] for field in fields if field.key not in folded]


# ------------------------------------------------------------------------------- values


def _values(
    field: _Field, answer: AskUserQuestionAnswerItem
) -> tuple[dict[str, FormValue], str | None]:
    """The content for one answer (a folded "Other" fills its own field), or why it does
    not satisfy the field."""
    other = field.other
    if other is None:
        value, problem = _value(field, answer)
        return ({} if value is None else {field.key: value}), problem
    answer = answer_item(field.item, answer.selected, answer.custom)
    pieces: dict[str, FormValue] = {}
    if answer.custom is not None:
        text, problem = _value(other, AskUserQuestionAnswerItem(other.key, (), answer.custom))
        if problem is not None:
            return {}, problem
        pieces[other.key] = text
    if answer.selected or answer.custom is None:
        value, problem = _value(field, AskUserQuestionAnswerItem(answer.id, answer.selected))
        if problem is not None:
            return {}, problem
        if value is not None:
            pieces[field.key] = value
    return pieces, None


def _value(field: _Field, answer: AskUserQuestionAnswerItem) -> tuple[FormValue, str | None]:
    """The content value for one answer, or why it does not satisfy the field."""
    if field.kind in ("choice", "boolean", "choices"):  # typed text naming an option selects it
        answer = answer_item(field.item, answer.selected, answer.custom)
    if field.kind in ("choice", "boolean"):
        return _single_value(field, answer)
    if field.kind == "choices":
        return _multi_value(field, answer)
    text = answer.custom
    if text is None:
        return _skipped(field)
    if field.kind in ("number", "integer"):
        return _number_value(field, text)
    return _text_value(field.spec, text)


def _single_value(field: _Field, answer: AskUserQuestionAnswerItem) -> tuple[FormValue, str | None]:
    if answer.custom is not None:
        return None, "choose one of the options"
    if not answer.selected:
        return _skipped(field)
    return field.values[answer.selected[0]], None


def _multi_value(field: _Field, answer: AskUserQuestionAnswerItem) -> tuple[FormValue, str | None]:
    if answer.custom is not None:
        return None, "choose from the options only"
    chosen = [str(field.values[label]) for label in answer.selected]
    if not chosen:  # a skip sends the default, or omits the key
        return _skipped(field)
    spec = field.spec
    if len(chosen) < spec.get("minItems", 0) or len(chosen) > spec.get("maxItems", math.inf):
        return None, "; ".join(_constraints(spec))
    return chosen, None


def _number_value(field: _Field, text: str) -> tuple[FormValue, str | None]:
    stripped = text.strip()
    pattern = _INTEGER if field.kind == "integer" else _NUMBER
    if not pattern.fullmatch(stripped):  # int()/float() take 1_000, "inf", non-ASCII digits
        return None, f"enter {'a whole number' if field.kind == 'integer' else 'a number'}"
    number: int | float
    if field.kind == "integer":
        try:
            number = int(stripped)
        except ValueError:  # more digits than int() converts (sys.get_int_max_str_digits)
            return None, "enter a smaller number"
    else:
        number = float(stripped)
        if not math.isfinite(number):  # 1e400 and 400 digits overflow a float to inf
            return None, "enter a smaller number"
    if _misfit(field.spec, number) is not None:  # minimum or maximum
        return None, "enter a number " + "; ".join(_constraints(field.spec))
    return number, None


def _text_value(spec: Mapping[str, Any], text: str) -> tuple[FormValue, str | None]:
    misfit = _misfit(spec, text)
    if misfit == "format":
        return None, f"enter {_FORMAT_CHECKS[spec['format']][1]}"
    if misfit is not None:  # minLength or maxLength
        return None, "; ".join(_constraints(spec))
    return text, None


SEND: Final = "Send"
DECLINE: Final = "Decline"
OPEN: Final = "Open the link"
DECISION_ID: Final = "interaction.send"
"""The id of the last question of every form our client asks: send the answers or decline."""
MAX_SERVER_NAME: Final = 100
"""Characters of a server's name that our client shows (cut with "…")."""
MAX_URL: Final = 2048
"""Characters of a URL-mode elicitation's URL that our client shows and opens."""


class _Declined(Exception):
    """The user chose to decline the server's request (``decline``, not ``cancel``)."""


def server_name(context: ClientRequestContext) -> str | None:
    """The requesting server's name from the session's server info, safe to show: control
    characters escaped, cut to :data:`MAX_SERVER_NAME` characters. It is the ``source`` of
    the provenance of every request our client asks, so every UI shows it."""
    info = context.session.server_info
    name = info.name if info is not None else None
    if not isinstance(name, str) or not name.strip():
        return None
    shown = escape_controls(name.strip(), keep_newlines=False)
    return shown if len(shown) <= MAX_SERVER_NAME else shown[:MAX_SERVER_NAME] + "…"


def _from(server: str | None) -> Provenance | None:
    """The provenance of what our client asks: the requesting server, and when."""
    if server is None:
        return None
    return Provenance(source=server, asked_at=datetime.datetime.now(datetime.UTC))


def _decision(server: str | None, taken: set[str]) -> AskUserQuestionItem:
    qid = DECISION_ID
    while qid in taken:  # a field of the same name: the decision gets another id
        qid += "_"
    who = server if server is not None else "the MCP server"
    return AskUserQuestionItem(
        qid,
        f"Send these answers to {who}?",
        f"Review your answers before they are sent. {DECLINE} tells {who} that you refuse"
        " this request; dismissing the questions cancels it without an answer.",
        None,
        [
            AskUserQuestionOption(SEND, f"answer {who} with what you entered"),
            AskUserQuestionOption(DECLINE, "refuse this request"),
        ],
    )


async def _answer(
    fields: list[_Field], provider: UserInteractionProvider | None, server: str | None
) -> dict[str, FormValue]:
    """Ask until every answer satisfies its field (a failing one is asked again, up to
    ``MAX_TRIES`` asks in all; each re-ask carries one note, replacing the last). Each ask
    ends with the decision to send or decline (``_Declined``); a skip of it sends."""
    pending = [(field, field) for field in fields]  # (original, as asked)
    content: dict[str, FormValue] = {}
    problems: list[str] = []
    decision = _decision(server, {field.key for field in fields})
    for _ in range(MAX_TRIES):
        request = check_request(
            AskUserQuestionRequest(
                [*(asked.item for _, asked in pending), decision], provenance=_from(server)
            )
        )
        answer = await ask_with(request, provider)
        *answers, decided = answer.answers
        if DECLINE in answer_item(decision, decided.selected, decided.custom).selected:
            raise _Declined
        retry = []
        problems = []
        for (field, _asked), item in zip(pending, answers, strict=True):
            pieces, problem = _values(field, item)
            if problem is not None:
                retry.append((field, _with_note(field, f"Please answer again: {problem}.")))
                problems.append(f"{field.key}: {problem}")
            else:
                content.update(pieces)
        if not retry:
            return content
        pending = retry
    raise _TooManyTries(f"no valid answer after {MAX_TRIES} tries ({'; '.join(problems)})")


def _schema_problem(schema: Mapping[str, Any], content: Mapping[str, FormValue]) -> str | None:
    """Why ``content`` does not satisfy ``schema`` (a last guard; None when it does)."""
    validator = jsonschema.Draft202012Validator(dict(schema), format_checker=_format_checker())
    error = jsonschema.exceptions.best_match(validator.iter_errors(dict(content)))
    if error is None:
        return None
    where = ".".join(str(part) for part in error.absolute_path) or "content"
    return f"{where}: {error.message}"


def _error(code: int, message: str) -> mcp_types.ErrorData:
    return mcp_types.ErrorData(code=code, message=message)


UrlOpener: TypeAlias = Callable[[str], object]
"""Opens a URL the user consented to (``webbrowser.open`` by default); it runs in a thread."""


async def answer_form(
    params: mcp_types.ElicitRequestParams,
    provider: UserInteractionProvider | None,
    server: str | None = None,
    open_url: UrlOpener | None = None,
) -> mcp_types.ElicitResult | mcp_types.ErrorData:
    """One elicitation answered through the seam: the result to send, or the error."""
    if isinstance(params, mcp_types.ElicitRequestURLParams):
        return await _answer_url(params, provider, server, open_url or webbrowser.open)
    try:
        fields = _fields(params)
        check_request(AskUserQuestionRequest([f.item for f in fields]))
    except (_Unexpressible, UserInteractionError) as exc:
        return _error(mcp_types.INVALID_PARAMS, f"interaction cannot ask this form: {exc}")
    try:
        content = await _answer(fields, provider, server)
    except _Declined:
        return mcp_types.ElicitResult(action="decline")
    except _TooManyTries as exc:
        return _error(mcp_types.INVALID_PARAMS, f"interaction could not fill this form: {exc}")
    except UserInteractionError as error:
        return _dismissal(error)
    problem = _schema_problem(params.requested_schema, content)
    # Unreachable as far as we know: the form was refused up front unless every value
    # jsonschema checks here was already checked by the same rules. Kept so that a case
    # those checks miss is an error, never content that does not satisfy the schema.
    if problem is not None:  # pragma: no cover
        return _error(mcp_types.INTERNAL_ERROR, f"interaction could not fill this form: {problem}")
    return mcp_types.ElicitResult(action="accept", content=content)


def _dismissal(error: UserInteractionError) -> mcp_types.ElicitResult | mcp_types.ErrorData:
    """A dismissal, abort or timeout of the ask is ``cancel``; any other error is an error."""
    if error.code in (ErrorCode.ASK_CANCELLED, ErrorCode.ASK_ABORTED, ErrorCode.ASK_TIMEOUT):
        return mcp_types.ElicitResult(action="cancel")
    return _error(mcp_types.INTERNAL_ERROR, f"{error.message} ({error.code})")


def _link(url: str) -> tuple[str, str]:
    """The URL and its domain (IDNA-encoded, so look-alike letters show as ``xn--``), or
    ``_Unexpressible`` for a link interaction will not open."""
    if len(url) > MAX_URL:
        raise _Unexpressible(
            f"the URL is {len(url)} characters long; interaction opens at most {MAX_URL}"
        )
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        raise _Unexpressible(f"the URL {quote(url)} is not a valid URL") from None
    if parts.scheme.lower() not in ("https", "http") or not host:
        raise _Unexpressible(f"interaction opens https and http links only, not {quote(url)}")
    try:
        domain = host.encode("idna").decode("ascii")
    except UnicodeError:
        raise _Unexpressible(f"the URL's host {quote(host)} is not a valid domain name") from None
    return url, domain


async def _answer_url(
    params: mcp_types.ElicitRequestURLParams,
    provider: UserInteractionProvider | None,
    server: str | None,
    open_url: UrlOpener,
) -> mcp_types.ElicitResult | mcp_types.ErrorData:
    """A URL-mode elicitation: the link is shown with the server's name and its domain,
    and opened only when the user consents (``accept``); ``decline`` when the user refuses,
    ``cancel`` when the question is dismissed or skipped."""
    who = server if server is not None else "The MCP server"
    try:
        _too_long("the message", params.message, MAX_MESSAGE)
        url, domain = _link(params.url)
        item = AskUserQuestionItem(
            "interaction.open",
            f"{who} asks you to open a link on {domain}",
            f"{params.message}\n\nDomain: {domain}\nLink: {url}",
            domain,
            [
                AskUserQuestionOption(OPEN, f"open {domain} in the browser"),
                AskUserQuestionOption(DECLINE, "do not open it; refuse this request"),
            ],
        )
        request = check_request(AskUserQuestionRequest([item], provenance=_from(server)))
    except (_Unexpressible, UserInteractionError) as exc:
        return _error(mcp_types.INVALID_PARAMS, f"interaction cannot ask this link: {exc}")
    try:
        answer = await ask_with(request, provider)
    except UserInteractionError as error:
        return _dismissal(error)
    only = answer.answers[0]
    chosen = answer_item(item, only.selected, only.custom).selected
    if DECLINE in chosen:
        return mcp_types.ElicitResult(action="decline")
    if OPEN not in chosen:
        return mcp_types.ElicitResult(action="cancel")
    try:
        await asyncio.to_thread(open_url, url)
    except Exception as exc:
        return _error(
            mcp_types.INTERNAL_ERROR, f"interaction could not open the link: {type(exc).__name__}"
        )
    return mcp_types.ElicitResult(action="accept")


def elicitation_callback(
    provider: UserInteractionProvider | None = None, *, open_url: UrlOpener | None = None
) -> ElicitationCallback:
    """An MCP client ``elicitation_callback`` that asks a human through the seam.

    It asks ``provider``, or else the provider active in the context where the MCP client
    was entered. Form fields become questions (string, number, integer and boolean fields,
    titled and untitled enums, single and multi), followed by one more: send the answers
    to the server (named from the session's server info) or decline. An answer that does
    not satisfy its field is asked again, at most ``MAX_TRIES`` times in all; a skipped
    field with a default sends the default. The result is ``accept`` with content that
    satisfies the requested schema (checked with ``jsonschema`` before it is sent),
    ``decline`` when the user declines, or ``cancel`` when the user dismisses it. A
    URL-mode elicitation shows the link with the server's name and its domain and opens it
    with ``open_url`` (``webbrowser.open`` by default) only when the user consents. A
    schema no question can express (or that uses a keyword interaction cannot check) is
    refused with an error that says why; nothing is guessed.
    """

    async def callback(
        context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult | mcp_types.ErrorData:
        return await answer_form(params, provider, server_name(context), open_url)

    return callback
