"""The JSON wire codec, in exactly the TypeScript interfaces' shape, and its JSON Schemas.

camelCase keys, absent optional fields omitted, ``multiSelect`` omitted when false. The
process-local ``agent``, ``signal`` and ``key`` never go on the wire. A request's
``provenance`` travels as the optional extra member ``"provenance"`` (``source``, ``host``,
``session``, ``tool``, ``askedAt`` as ISO 8601 UTC to the millisecond), which a
TypeScript reader that does not know it ignores; its ``assignment`` likewise as the
optional member ``"assignment"``: ``{"to": ["ops", "alice"], "quorum"?: 2}`` (names of
users and groups, and for one permission or plan-review question the number of distinct
approvals it needs). A document without either decodes as before. Decoding untrusted data raises
only :class:`~interaction.UserInteractionError` (``BAD_REQUEST`` for requests, ``BAD_ANSWER``
for answers) whose message starts with the path of the first fault, also kept as ``path``.
Unknown keys are ignored; unknown intent kinds decode to ``UnknownIntent`` and encode back
unchanged.
"""

from __future__ import annotations

import copy
import json
import re
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Final, TypeAlias

from ._core import (
    MAX_ASSIGNEES,
    MAX_PROVENANCE_TEXT,
    SURROGATE,
    Approval,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionIntent,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    Assignment,
    ErrorCode,
    JSONValue,
    PermissionIntent,
    PlanReviewIntent,
    Provenance,
    UnknownIntent,
    UserInteractionError,
    as_plain,
    check_answer,
    check_assignment,
    check_provenance,
    check_questions,
    fault,
    is_name,
    json_type,
    problem_of,
    questions_from_json,
    thaw,
)

__all__ = [
    "ANSWER_SCHEMA",
    "MAX_ASKED_AT",
    "MAX_DIGITS",
    "MAX_INTENT_SIZE",
    "MAX_JSON_DEPTH",
    "REQUEST_SCHEMA",
    "JSONObject",
    "answer_schema",
    "approvals_from_store",
    "asked_at_text",
    "decode_answer",
    "decode_assignment",
    "decode_provenance",
    "decode_request",
    "dumps",
    "encode_answer",
    "encode_approvals",
    "encode_assignment",
    "encode_provenance",
    "encode_request",
    "json_too_deep",
    "request_schema",
    "stored_approvals",
]

JSONObject: TypeAlias = dict[str, JSONValue]

MAX_DIGITS: Final = 4_300
"""The most digits an integer in a wire document may have: Python's default bound on
turning text into an ``int``, held even when ``sys.set_int_max_str_digits`` allows more
(a lower setting lowers it), so a longer integer is a fault of its own and never the
quadratic work of converting it."""

MAX_ASKED_AT: Final = 40
"""The most characters a provenance's ``askedAt`` text may hold."""

MAX_INTENT_SIZE: Final = 65_536
"""The most an unknown intent's fields may hold, counted in characters of its keys and
strings, and one for every other value: a larger intent is refused (``BAD_INTENT``) before
it is copied."""

MAX_JSON_DEPTH: Final = 256
"""How deeply JSON text may nest arrays and objects, the same on every Python: ``json``'s
parser recurses once per level, and how deep it gets before a ``RecursionError`` depends on
the version and on the caller's stack (3.11 stops near 1,000 levels, 3.13 goes further). A
request's own structure is 4 levels, plus 64 in an unknown intent's fields."""

_STRING_OR_BRACKET: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
"""A JSON string (skipped whole) or one bracket."""


# ---------------------------------------------------------------------------- encoding


def _encode_intent(intent: AskUserQuestionIntent) -> JSONObject:
    if isinstance(intent, PlanReviewIntent):
        return {"kind": intent.kind, "approve": intent.approve}
    if isinstance(intent, PermissionIntent):
        permission: JSONObject = {
            "kind": intent.kind,
            "tool": intent.tool,
            "summary": intent.summary,
            "allow": intent.allow,
        }
        if intent.allow_always is not None:
            permission["allowAlways"] = intent.allow_always
        permission["deny"] = intent.deny
        return permission
    data: JSONObject = {"kind": intent.kind}
    for key, value in intent.fields.items():
        if key != "kind":
            data[key] = thaw(value)  # type: ignore[assignment]
    return data


def _encode_item(item: AskUserQuestionItem) -> JSONObject:
    data: JSONObject = {"id": item.id, "question": item.question}
    if item.detail is not None:
        data["detail"] = item.detail
    if item.header is not None:
        data["header"] = item.header
    if item.options:
        options: list[JSONValue] = []
        for option in item.options:
            encoded: JSONObject = {"label": option.label}
            if option.description is not None:
                encoded["description"] = option.description
            options.append(encoded)
        data["options"] = options
    if item.multi_select:
        data["multiSelect"] = True
    if item.intent is not None:
        data["intent"] = _encode_intent(item.intent)
    return data


def asked_at_text(moment: datetime) -> str:
    """``askedAt`` as the wire writes it: ISO 8601 in UTC to the millisecond, ``Z``-suffixed
    (what JavaScript's ``Date.prototype.toISOString()`` writes)."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def encode_provenance(provenance: Provenance) -> JSONObject:
    """A provenance's wire form: its fields that are set, ``asked_at`` as ``askedAt``."""
    data: JSONObject = {}
    for name in ("source", "host", "session", "tool"):
        value = getattr(provenance, name)
        if value is not None:
            data[name] = value
    if provenance.asked_at is not None:
        data["askedAt"] = asked_at_text(provenance.asked_at)
    return data


def encode_assignment(assignment: Assignment) -> JSONObject:
    """An assignment's wire form: ``{"to": [...], "quorum"?: n}``."""
    data: JSONObject = {"to": list(assignment.to)}
    if assignment.quorum is not None:
        data["quorum"] = assignment.quorum
    return data


def encode_request(request: AskUserQuestionRequest) -> JSONObject:
    """The request's wire form: ``{"questions": [...], "provenance"?: {...},
    "assignment"?: {...}}`` (no agent, no signal, no key)."""
    data: JSONObject = {"questions": [_encode_item(item) for item in request.questions]}
    if request.provenance is not None:
        data["provenance"] = encode_provenance(request.provenance)
    if request.assignment is not None:
        data["assignment"] = encode_assignment(request.assignment)
    return data


def _encode_answer_item(item: AskUserQuestionAnswerItem) -> JSONObject:
    data: JSONObject = {"id": item.id, "selected": list(item.selected)}
    if item.custom is not None:
        data["custom"] = item.custom
    return data


def encode_answer(answer: AskUserQuestionAnswer) -> JSONObject:
    """The answer's wire form: ``{"answers": [{"id", "selected", "custom"?}]}``."""
    return {"answers": [_encode_answer_item(item) for item in answer.answers]}


def dumps(value: AskUserQuestionRequest | AskUserQuestionAnswer) -> str:
    """Compact JSON text of a request or an answer, non-ASCII kept as it is."""
    data = (
        encode_request(value) if isinstance(value, AskUserQuestionRequest) else encode_answer(value)
    )
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


# ---------------------------------------------------------------------------- decoding


class _TooManyDigits(ValueError):
    """An integer in a document longer than its first argument, the bound, in digits."""


def _bounded_int(digits: str) -> int:
    limit = sys.get_int_max_str_digits()  # 0: none; a lower one applies, and is named
    bound = min(limit, MAX_DIGITS) if limit else MAX_DIGITS
    if len(digits.lstrip("-")) > bound:
        raise _TooManyDigits(bound)
    return int(digits)


def json_too_deep(text: str | bytes) -> bool:
    """Whether JSON ``text`` nests arrays and objects more than :data:`MAX_JSON_DEPTH` deep.

    Brackets inside strings do not count. Text with no more opening brackets than the limit,
    nearly every document, is answered by counting them. Bytes are read as UTF-8 (in another
    encoding, the ASCII brackets count all the same).
    """
    if isinstance(text, bytes):
        if text.count(b"[") + text.count(b"{") <= MAX_JSON_DEPTH:
            return False
        text = text.decode("utf-8", "replace")
    elif text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return False
    depth = 0
    for token in _STRING_OR_BRACKET.finditer(text):
        bracket = token.group()
        if bracket in ("[", "{"):
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return True
        elif bracket in ("]", "}"):
            depth -= 1
    return False


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")  # Python's json reads it, JSON has none


class _Decoder:
    def __init__(self, code: ErrorCode) -> None:
        self.code = code

    def fail(self, path: str, problem: str) -> UserInteractionError:
        return fault(self.code, path, problem)

    def parse(self, data: object, root: str) -> object:
        data = as_plain(data)
        if isinstance(data, str | bytes | bytearray | memoryview):
            try:
                text = bytes(data) if isinstance(data, memoryview | bytearray) else data
                if json_too_deep(text):
                    raise self.fail(
                        root, f"not valid JSON (nested more than {MAX_JSON_DEPTH} levels deep)"
                    )
                return json.loads(text, parse_int=_bounded_int, parse_constant=_no_constant)
            except _TooManyDigits as exc:
                bound = exc.args[0]
                raise self.fail(root, f"holds an integer of more than {bound} digits") from None
            except (ValueError, RecursionError) as exc:
                raise self.fail(root, f"not valid JSON ({exc})") from None
        return data

    # Parsed data from a host may hold subclasses of dict, list or str, whose methods may
    # lie or raise: each value is read as the plain value its storage holds.

    def obj(self, value: object, path: str) -> Mapping[str, object]:
        value = as_plain(value)
        if not isinstance(value, dict):
            raise self.fail(path, f"expected an object, got {json_type(value)}")
        return value

    def array(self, value: object, path: str) -> list[object]:
        value = as_plain(value)
        if not isinstance(value, list):
            raise self.fail(path, f"expected an array, got {json_type(value)}")
        return value

    def string(self, data: Mapping[str, object], key: str, path: str) -> str:
        if key not in data:
            raise self.fail(f"{path}.{key}", "is required")
        value = as_plain(data[key])
        if not isinstance(value, str):
            raise self.fail(f"{path}.{key}", f"expected a string, got {json_type(value)}")
        return value

    def optional_string(self, data: Mapping[str, object], key: str, path: str) -> str | None:
        return self.string(data, key, path) if key in data else None


def _decode_intent(d: _Decoder, value: object, path: str) -> AskUserQuestionIntent:
    data = d.obj(value, path)
    kind = d.string(data, "kind", path)
    if kind == PlanReviewIntent.kind:
        return PlanReviewIntent(d.string(data, "approve", path))
    if kind == PermissionIntent.kind:
        return PermissionIntent(
            tool=d.string(data, "tool", path),
            summary=d.string(data, "summary", path),
            allow=d.string(data, "allow", path),
            deny=d.string(data, "deny", path),
            allow_always=d.optional_string(data, "allowAlways", path),
        )
    if not kind:
        raise d.fail(f"{path}.kind", "must not be empty")
    fields = {k: v for k, v in data.items() if not (type(k) is str and k == "kind")}
    if _over_size(fields, MAX_INTENT_SIZE):
        raise fault(ErrorCode.BAD_INTENT, path, f"holds more than {MAX_INTENT_SIZE} characters")
    try:
        return UnknownIntent(kind, fields)  # type: ignore[arg-type]  # JSON data, as parsed
    except UserInteractionError as error:  # located within the intent: say where it is
        inner = (error.path or "intent").removeprefix("intent")
        raise fault(error.code, f"{path}{inner}", problem_of(error)) from None


def _over_size(value: object, limit: int) -> bool:
    """Whether parsed JSON holds more than ``limit``: characters of keys and strings, one
    for every other value. One pass without recursion, which stops once over."""
    size = 0
    stack = [value]
    while stack:
        item = as_plain(stack.pop())
        size += 1
        if isinstance(item, str):
            size += len(item) - 1
        elif isinstance(item, dict):
            for key, child in item.items():
                size += str.__len__(key) if isinstance(key, str) else 1
                stack.append(child)
        elif isinstance(item, list):
            stack.extend(item)
        if size > limit:
            return True
    return False


def odd_key(data: object, root: str) -> str | None:
    """The path of the first object in ``data`` with a key that is not a plain ``str``
    (a subclass, whose ``__eq__`` may raise, or another type), or ``None``.

    Asked only after reading ``data`` raised something other than a fault, to tell a
    host's odd mapping (a fault of the input: :data:`ODD_KEY`) from a bug, which goes on.
    """
    stack: list[tuple[object, str]] = [(data, root)]
    while stack:
        value, path = stack.pop()
        value = as_plain(value)
        if isinstance(value, dict):
            items = list(value.items())
            if any(type(key) is not str for key, _ in items):
                return path
            prefix = "" if path == root else f"{path}."
            stack.extend((child, f"{prefix}{key}") for key, child in reversed(items))
        elif isinstance(value, list):
            stack.extend((child, f"{path}[{i}]") for i, child in reversed(list(enumerate(value))))
    return None


ODD_KEY: Final = "has a key that is not a plain string"


def _decode_option(d: _Decoder, value: object, path: str) -> AskUserQuestionOption:
    data = d.obj(value, path)
    return AskUserQuestionOption(
        d.string(data, "label", path), d.optional_string(data, "description", path)
    )


def _decode_item(d: _Decoder, value: object, path: str) -> AskUserQuestionItem:
    data = d.obj(value, path)
    options: tuple[AskUserQuestionOption, ...] = ()
    if "options" in data:
        raw = d.array(data["options"], f"{path}.options")
        options = tuple(
            _decode_option(d, option, f"{path}.options[{i}]") for i, option in enumerate(raw)
        )
    multi = data.get("multiSelect", False)
    if not isinstance(multi, bool):
        raise d.fail(f"{path}.multiSelect", f"expected a boolean, got {json_type(multi)}")
    intent = _decode_intent(d, data["intent"], f"{path}.intent") if "intent" in data else None
    return AskUserQuestionItem(
        id=d.string(data, "id", path),
        question=d.string(data, "question", path),
        detail=d.optional_string(data, "detail", path),
        header=d.optional_string(data, "header", path),
        options=options,
        multi_select=multi,
        intent=intent,
    )


_JSON: Final = json.JSONDecoder(parse_int=_bounded_int, parse_constant=_no_constant)


def _loads_plain(data: bytes | str) -> object:
    """``json.loads(data)`` for the common document, or ``None`` to leave it to the detailed
    decode (which parses again and names the fault).

    ``json.loads`` spends half its time on a 1x3 request around the C scanner (encoding
    detection, two whitespace regexes): strict UTF-8 and a document that starts at its first
    byte skip that. Anything else, a BOM, another encoding, leading white space, gets
    ``None`` here and ``json.loads`` in the detailed decode, so the outcome is the same.
    """
    try:
        text = data.decode() if isinstance(data, bytes) else data
    except ValueError:  # UnicodeDecodeError
        return None
    # Counting the brackets first spares nearly every document json_too_deep's call.
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and json_too_deep(text):
        return None
    try:
        value, end = _JSON.raw_decode(text)
    except (ValueError, RecursionError):  # JSONDecodeError
        return None
    if end != len(text) and text[end:].strip(" \t\n\r"):  # JSON's own white space only
        return None
    return value


def _decode_provenance(d: _Decoder, value: object, path: str) -> Provenance:
    data = d.obj(value, path)
    asked_at = None
    text = d.optional_string(data, "askedAt", path)
    if text is not None:
        if len(text) > MAX_ASKED_AT:
            raise d.fail(f"{path}.askedAt", f"longer than {MAX_ASKED_AT} characters")
        try:
            asked_at = datetime.fromisoformat(text)
        except ValueError:
            raise d.fail(f"{path}.askedAt", f"not an ISO 8601 date and time: {text!r}") from None
        if asked_at.utcoffset() is None:
            raise d.fail(f"{path}.askedAt", "has no time zone (write Z for UTC)")
        try:
            asked_at.astimezone(UTC)
        except OverflowError:
            raise d.fail(f"{path}.askedAt", "is out of range in UTC") from None
    provenance = Provenance(
        source=d.optional_string(data, "source", path),
        host=d.optional_string(data, "host", path),
        session=d.optional_string(data, "session", path),
        tool=d.optional_string(data, "tool", path),
        asked_at=asked_at,
    )
    check_provenance(provenance, path)
    return provenance


def _decode_assignment(d: _Decoder, value: object, path: str) -> Assignment:
    data = d.obj(value, path)
    if "to" not in data:
        raise d.fail(f"{path}.to", "is required")
    raw = d.array(data["to"], f"{path}.to")
    if len(raw) > MAX_ASSIGNEES:  # bounded before each name is read
        raise d.fail(f"{path}.to", f"names more than {MAX_ASSIGNEES} users and groups")
    names: list[str] = []
    for index, name in enumerate(raw):
        plain = as_plain(name)
        if not isinstance(plain, str):
            raise d.fail(f"{path}.to[{index}]", f"expected a string, got {json_type(plain)}")
        names.append(plain)
    quorum = None
    if "quorum" in data:
        given = data["quorum"]
        if type(given) is not int:
            raise d.fail(f"{path}.quorum", f"expected a whole number, got {json_type(given)}")
        quorum = given
    return Assignment(tuple(names), quorum)


def decode_assignment(data: object) -> Assignment:
    """An assignment from its wire form (JSON text, bytes or parsed data): ``BAD_REQUEST``
    naming the first fault the wire shows (the rest are ``ask()``'s, which needs the
    questions)."""
    d = _Decoder(ErrorCode.BAD_REQUEST)
    return _decode_assignment(d, d.parse(data, "assignment"), "assignment")


def _with_assignment(
    request: AskUserQuestionRequest, root: Mapping[str, object]
) -> AskUserQuestionRequest:
    """``request`` with the assignment of its wire form ``root``, checked (BAD_REQUEST)."""
    if "assignment" not in root:
        return request
    d = _Decoder(ErrorCode.BAD_REQUEST)
    assigned = AskUserQuestionRequest(
        request.questions,
        provenance=request.provenance,
        assignment=_decode_assignment(d, root["assignment"], "assignment"),
    )
    check_assignment(assigned)
    return assigned


def encode_approvals(approvals: tuple[Approval, ...]) -> list[JSONValue]:
    """A quorum question's approvals as pages and the audit show them:
    ``[{"user": "alice", "at": "...Z"}]``."""
    return [{"user": a.user, "at": asked_at_text(a.at)} for a in approvals]


def stored_approvals(approvals: tuple[Approval, ...]) -> str:
    """The approvals as a shared relay's store keeps them: ``[["alice", ms], ...]``."""
    entries = [[a.user, round(a.at.timestamp() * 1000)] for a in approvals]
    return json.dumps(entries, separators=(",", ":"))


def approvals_from_store(text: str | None) -> tuple[Approval, ...]:
    """The approvals a store keeps (:func:`stored_approvals`'s form); an entry that is not
    a name and a time (a hand other than the relay's wrote it) is left out."""
    if not text:
        return ()
    try:
        raw = json.loads(text)
    except ValueError:
        return ()
    found: list[Approval] = []
    for entry in raw if isinstance(raw, list) else ():
        if (
            isinstance(entry, list)
            and len(entry) == 2  # a name and a time
            and is_name(entry[0])
            and type(entry[1]) is int
            and 0 <= entry[1] < MAX_MILLISECONDS
        ):
            found.append(Approval(entry[0], datetime.fromtimestamp(entry[1] / 1000, UTC)))
    return tuple(found)


MAX_MILLISECONDS: Final = 253_402_300_800_000
"""Milliseconds since 1970 of the year 10000, past which no datetime reaches."""


def decode_provenance(data: object) -> Provenance:
    """A provenance from its wire form (JSON text, bytes or parsed data): ``BAD_REQUEST``
    naming the first fault, as in a request."""
    d = _Decoder(ErrorCode.BAD_REQUEST)
    return _decode_provenance(d, d.parse(data, "provenance"), "provenance")


def decode_request(data: object) -> AskUserQuestionRequest:
    """A request from JSON text or bytes, or from already parsed JSON data.

    The structural checks of ``ask()`` are made too (``BAD_REQUEST``), the provenance's
    included; an empty batch and intents are left to ``ask()``, which refuses them with
    their own codes.
    """
    try:
        return _decode_request(data)
    except UserInteractionError:
        raise
    except Exception:  # a host's mapping whose key compares by raising, say
        path = odd_key(data, "request")
        if path is None:
            raise
        raise fault(ErrorCode.BAD_REQUEST, path, ODD_KEY) from None


def _decode_request(data: object) -> AskUserQuestionRequest:
    parsed = _loads_plain(data) if type(data) is bytes or type(data) is str else data
    if type(parsed) is dict and (fast := questions_from_json(parsed.get("questions"))) is not None:
        if "provenance" not in parsed:
            return _with_assignment(AskUserQuestionRequest(fast), parsed)
        d = _Decoder(ErrorCode.BAD_REQUEST)
        request = AskUserQuestionRequest(
            fast, provenance=_decode_provenance(d, parsed["provenance"], "provenance")
        )
        return _with_assignment(request, parsed)
    return _decode_request_in_detail(data)


def _decode_request_in_detail(data: object) -> AskUserQuestionRequest:
    """Decode and check field by field, naming the first fault."""
    d = _Decoder(ErrorCode.BAD_REQUEST)
    root = d.obj(d.parse(data, "request"), "request")
    if "questions" not in root:
        raise d.fail("questions", "is required")
    raw = d.array(root["questions"], "questions")
    questions = tuple(_decode_item(d, item, f"questions[{i}]") for i, item in enumerate(raw))
    check_questions(questions)
    provenance = (
        _decode_provenance(d, root["provenance"], "provenance") if "provenance" in root else None
    )
    return _with_assignment(AskUserQuestionRequest(questions, provenance=provenance), root)


def _decode_answer_item(d: _Decoder, value: object, path: str) -> AskUserQuestionAnswerItem:
    data = d.obj(value, path)
    item_id = d.string(data, "id", path)
    if "selected" not in data:
        raise d.fail(f"{path}.selected", "is required")
    raw = [as_plain(label) for label in d.array(data["selected"], f"{path}.selected")]
    for index, label in enumerate(raw):
        if not isinstance(label, str):
            raise d.fail(f"{path}.selected[{index}]", f"expected a string, got {json_type(label)}")
    selected = tuple(label for label in raw if isinstance(label, str))
    custom = d.optional_string(data, "custom", path)
    for text, where in (
        (item_id, "id"),
        (custom, "custom"),
        *((s, f"selected[{i}]") for i, s in enumerate(selected)),
    ):
        if text is not None and SURROGATE.search(text):  # unencodable in the tool result
            raise d.fail(f"{path}.{where}", "contains an unpaired surrogate")
    return AskUserQuestionAnswerItem(item_id, selected, custom)


def decode_answer(
    data: object, request: AskUserQuestionRequest | None = None
) -> AskUserQuestionAnswer:
    """An answer from JSON text or bytes, or from parsed data (``BAD_ANSWER`` on any fault).

    With ``request``, the answer is also checked against it, as ``ask()`` would, and
    returned in question order.
    """
    try:
        return _decode_answer(data, request)
    except UserInteractionError:
        raise
    except Exception:  # a host's mapping whose key compares by raising, say
        path = odd_key(data, "answer")
        if path is None:
            raise
        raise fault(ErrorCode.BAD_ANSWER, path, ODD_KEY) from None


def _decode_answer(data: object, request: AskUserQuestionRequest | None) -> AskUserQuestionAnswer:
    parsed = _loads_plain(data) if type(data) is bytes or type(data) is str else data
    if type(parsed) is dict and (fast := _answer_items_from_json(parsed.get("answers"))):
        answer = AskUserQuestionAnswer(fast)
        return answer if request is None else check_answer(request, answer)
    return _decode_answer_in_detail(data, request)


def _answer_items_from_json(raw: object) -> tuple[AskUserQuestionAnswerItem, ...] | None:
    """Answer items straight from parsed JSON in one pass, or ``None`` to decode in detail.

    It accepts only what :func:`_decode_answer_in_detail` accepts (exact JSON types, no
    unpaired surrogate, ``custom`` absent rather than null), and builds the same items;
    ``tests/test_wire.py`` keeps the two in agreement. An empty list is left to the
    detailed decode too (``None`` and ``()`` read alike to the caller).
    """
    if type(raw) is not list:
        return None
    items: list[AskUserQuestionAnswerItem] = []
    for value in raw:
        if type(value) is not dict:
            return None
        get = value.get
        item_id, selected, custom = get("id"), get("selected"), get("custom")
        if type(item_id) is not str or type(selected) is not list:
            return None
        if not (item_id.isascii() or SURROGATE.search(item_id) is None):
            return None
        for label in selected:  # no surrogate is ASCII: only other text meets the regex
            if type(label) is not str or not (label.isascii() or SURROGATE.search(label) is None):
                return None
        if custom is not None:
            if type(custom) is not str or not (
                custom.isascii() or SURROGATE.search(custom) is None
            ):
                return None
        elif "custom" in value:
            return None
        items.append(AskUserQuestionAnswerItem(item_id, selected, custom))
    return tuple(items)


def _decode_answer_in_detail(
    data: object, request: AskUserQuestionRequest | None
) -> AskUserQuestionAnswer:
    """Decode field by field, naming the first fault."""
    d = _Decoder(ErrorCode.BAD_ANSWER)
    root = d.obj(d.parse(data, "answer"), "answer")
    if "answers" not in root:
        raise d.fail("answers", "is required")
    raw = d.array(root["answers"], "answers")
    answer = AskUserQuestionAnswer(
        tuple(_decode_answer_item(d, item, f"answers[{i}]") for i, item in enumerate(raw))
    )
    return answer if request is None else check_answer(request, answer)


# ---------------------------------------------------------------------------- schemas

_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"

_TEXT: Final[JSONObject] = {"type": "string", "minLength": 1}
_PROVENANCE_TEXT: Final[JSONObject] = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_PROVENANCE_TEXT,
}

REQUEST_SCHEMA: Final[JSONObject] = {
    "$schema": _DIALECT,
    "$id": "urn:interaction-seam:ask-user-question-request",
    "title": "AskUserQuestionRequest",
    "type": "object",
    "required": ["questions"],
    "properties": {
        "questions": {"type": "array", "items": {"$ref": "#/$defs/question"}},
        "provenance": {"$ref": "#/$defs/provenance"},
        "assignment": {"$ref": "#/$defs/assignment"},
    },
    "$defs": {
        "assignment": {
            "type": "object",
            "required": ["to"],
            "properties": {
                "to": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_ASSIGNEES,
                    "uniqueItems": True,
                    "items": {
                        "type": "string",
                        "pattern": "^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$",
                    },
                },
                "quorum": {"type": "integer", "minimum": 1},
            },
        },
        "provenance": {
            "type": "object",
            "properties": {
                "source": _PROVENANCE_TEXT,
                "host": _PROVENANCE_TEXT,
                "session": _PROVENANCE_TEXT,
                "tool": _PROVENANCE_TEXT,
                "askedAt": {"type": "string", "format": "date-time", "maxLength": MAX_ASKED_AT},
            },
        },
        "option": {
            "type": "object",
            "required": ["label"],
            "properties": {"label": _TEXT, "description": {"type": "string"}},
        },
        "intent": {
            "type": "object",
            "required": ["kind"],
            "properties": {"kind": _TEXT},
            "allOf": [
                {
                    "if": {"properties": {"kind": {"const": "plan-review"}}},
                    "then": {
                        "required": ["approve"],
                        "properties": {"approve": {"type": "string"}},
                    },
                },
                {
                    "if": {"properties": {"kind": {"const": "permission"}}},
                    "then": {
                        "required": ["tool", "summary", "allow", "deny"],
                        "properties": {
                            "tool": _TEXT,
                            "summary": {"type": "string"},
                            "allow": {"type": "string"},
                            "allowAlways": {"type": "string"},
                            "deny": {"type": "string"},
                        },
                    },
                },
            ],
        },
        "question": {
            "type": "object",
            "required": ["id", "question"],
            "properties": {
                "id": _TEXT,
                "question": _TEXT,
                "detail": {"type": "string"},
                "header": {"type": "string"},
                "options": {"type": "array", "items": {"$ref": "#/$defs/option"}},
                "multiSelect": {"type": "boolean"},
                "intent": {"$ref": "#/$defs/intent"},
            },
        },
    },
}
"""JSON Schema (draft 2020-12) of a request's wire form."""

ANSWER_SCHEMA: Final[JSONObject] = {
    "$schema": _DIALECT,
    "$id": "urn:interaction-seam:ask-user-question-answer",
    "title": "AskUserQuestionAnswer",
    "type": "object",
    "required": ["answers"],
    "properties": {
        "answers": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "selected"],
                "properties": {
                    "id": {"type": "string"},
                    "selected": {"type": "array", "items": {"type": "string"}},
                    "custom": {"type": "string"},
                },
            },
        },
    },
}
"""JSON Schema (draft 2020-12) of an answer's wire form."""


def request_schema() -> JSONObject:
    """A fresh copy of :data:`REQUEST_SCHEMA`, safe to modify."""
    return copy.deepcopy(REQUEST_SCHEMA)


def answer_schema() -> JSONObject:
    """A fresh copy of :data:`ANSWER_SCHEMA`, safe to modify."""
    return copy.deepcopy(ANSWER_SCHEMA)
