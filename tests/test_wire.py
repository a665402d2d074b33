"""The wire codec: TypeScript-shaped fixtures, the JSON Schemas, and untrusted input."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    PlanReviewIntent,
    UnknownIntent,
    UserInteractionError,
    wire,
)
from interaction._request_checks import questions_from_json

from .strategies import answers, requests

FIXTURES = Path(__file__).parent / "fixtures" / "wire"
VALID = sorted((FIXTURES / "valid").glob("*.json"))
INVALID = sorted((FIXTURES / "invalid").glob("*.json"))
REQUEST_VALIDATOR = jsonschema.Draft202012Validator(wire.REQUEST_SCHEMA)
ANSWER_VALIDATOR = jsonschema.Draft202012Validator(wire.ANSWER_SCHEMA)


def sorted_json(data: object) -> str:
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def test_the_schemas_are_valid_draft_2020_12() -> None:
    jsonschema.Draft202012Validator.check_schema(wire.REQUEST_SCHEMA)
    jsonschema.Draft202012Validator.check_schema(wire.ANSWER_SCHEMA)
    assert wire.request_schema() == wire.REQUEST_SCHEMA
    assert wire.request_schema() is not wire.REQUEST_SCHEMA


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_typescript_json_decodes_and_re_encodes_byte_for_byte(path: Path) -> None:
    text = path.read_text("utf-8").strip()
    if path.name.startswith("request"):
        assert REQUEST_VALIDATOR.is_valid(json.loads(text))
        encoded: object = wire.encode_request(wire.decode_request(text))
    else:
        assert ANSWER_VALIDATOR.is_valid(json.loads(text))
        encoded = wire.encode_answer(wire.decode_answer(text.encode()))
    assert sorted_json(encoded) == sorted_json(json.loads(text))


def test_dumps_is_compact_and_keeps_typescript_key_order() -> None:
    text = (FIXTURES / "valid" / "answer-three.json").read_text("utf-8").strip()
    assert wire.dumps(wire.decode_answer(text)) == text


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_invalid_documents_are_refused_by_schema_and_decoder(path: Path) -> None:
    data = json.loads(path.read_text("utf-8"))
    is_request = path.name.startswith("request")
    validator = REQUEST_VALIDATOR if is_request else ANSWER_VALIDATOR
    assert not validator.is_valid(data)
    with pytest.raises(UserInteractionError) as info:
        (wire.decode_request if is_request else wire.decode_answer)(data)
    assert info.value.code == (ErrorCode.BAD_REQUEST if is_request else ErrorCode.BAD_ANSWER)
    assert info.value.path is not None
    assert info.value.message.startswith(f"{info.value.path}: ")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("{", "request: not valid JSON (Expecting property name enclosed in double quotes:"),
        ("[]", "request: expected an object, got array"),
        ("{}", "questions: is required"),
        ('{"questions": null}', "questions: expected an array, got null"),
        ('{"questions": [1]}', "questions[0]: expected an object, got number"),
        ('{"questions": [{"question": "q"}]}', "questions[0].id: is required"),
        (
            '{"questions": [{"id": "a", "question": "?", "options": [{"label": 3}]}]}',
            "questions[0].options[0].label: expected a string, got number",
        ),
        (
            '{"questions": [{"id": "a", "question": "?"}, {"id": "a", "question": "?"}]}',
            "questions[1].id: duplicate question id 'a'",
        ),
        (
            '{"questions": [{"id": "a", "question": "\\u001b[2J?"}]}',
            "questions[0].question: contains control character U+001B",
        ),
        (
            '{"questions": [{"id": "a", "question": "?", "multiSelect": 1}]}',
            "questions[0].multiSelect: expected a boolean, got number",
        ),
        (
            '{"questions": [{"id": "a", "question": "?", "intent": {"kind": ""}}]}',
            "questions[0].intent.kind: must not be empty",
        ),
        (b"\xff\xfe", "request: not valid JSON"),
    ],
)
def test_decode_request_names_the_first_fault(data: str | bytes, message: str) -> None:
    with pytest.raises(UserInteractionError) as info:
        wire.decode_request(data)
    assert info.value.code == ErrorCode.BAD_REQUEST
    assert info.value.message.startswith(message)


def test_unknown_keys_are_ignored_and_unknown_intents_round_trip() -> None:
    data = {
        "questions": [
            {
                "id": "a",
                "question": "?",
                "detail": "d",
                "future": True,
                "intent": {"kind": "poll", "quorum": 3, "nested": {"x": [1, 2]}},
            }
        ],
        "agent": "ignored",
    }
    request = wire.decode_request(data)
    assert request.questions[0].intent == UnknownIntent(
        "poll", {"quorum": 3, "nested": {"x": [1, 2]}}
    )
    assert wire.encode_request(request) == {
        "questions": [
            {
                "id": "a",
                "question": "?",
                "detail": "d",
                "intent": {"kind": "poll", "quorum": 3, "nested": {"x": [1, 2]}},
            }
        ]
    }


def test_agent_and_signal_never_go_on_the_wire() -> None:
    from interaction import AbortController

    from .helpers import FakeAgent

    request = AskUserQuestionRequest(
        [AskUserQuestionItem("a", "?")], agent=FakeAgent("x"), signal=AbortController().signal
    )
    assert wire.encode_request(request) == {"questions": [{"id": "a", "question": "?"}]}


def test_decode_answer_with_the_request_checks_it_and_orders_it() -> None:
    request = AskUserQuestionRequest(
        [
            AskUserQuestionItem("a", "?", options=[AskUserQuestionOption("x")]),
            AskUserQuestionItem("b", "?"),
        ]
    )
    answer = wire.decode_answer(
        '{"answers":[{"id":"b","selected":[],"custom":"hi"},{"id":"a","selected":["x"]}]}', request
    )
    assert [item.id for item in answer.answers] == ["a", "b"]
    with pytest.raises(UserInteractionError) as info:
        wire.decode_answer(
            '{"answers":[{"id":"a","selected":["y"]},{"id":"b","selected":[]}]}', request
        )
    assert info.value.code == ErrorCode.BAD_ANSWER
    assert info.value.message == "answers[0].selected[0]: question a offers no option 'y'"


def test_multi_select_is_omitted_when_false_and_optionals_when_absent() -> None:
    item = AskUserQuestionItem(
        "a", "?", header="H", options=[AskUserQuestionOption("x")], intent=PlanReviewIntent("x")
    )
    assert wire.encode_request(AskUserQuestionRequest([item]))["questions"] == [
        {
            "id": "a",
            "question": "?",
            "header": "H",
            "options": [{"label": "x"}],
            "intent": {"kind": "plan-review", "approve": "x"},
        }
    ]
    answer = AskUserQuestionAnswer([AskUserQuestionAnswerItem("a")])
    assert wire.dumps(answer) == '{"answers":[{"id":"a","selected":[]}]}'


# ---------------------------------------------------------------- properties


@given(requests())
def test_request_encode_then_decode_is_the_identity(request: AskUserQuestionRequest) -> None:
    encoded = wire.encode_request(request)
    assert REQUEST_VALIDATOR.is_valid(encoded)
    assert wire.decode_request(encoded) == request
    assert wire.decode_request(json.dumps(encoded).encode()) == request


@given(answers())
def test_answer_encode_then_decode_is_the_identity(answer: AskUserQuestionAnswer) -> None:
    encoded = wire.encode_answer(answer)
    assert ANSWER_VALIDATOR.is_valid(encoded)
    assert wire.decode_answer(wire.dumps(answer)) == answer


json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "questions",
                    "answers",
                    "id",
                    "question",
                    "options",
                    "label",
                    "selected",
                    "custom",
                    "multiSelect",
                    "intent",
                    "kind",
                    "approve",
                    "detail",
                    "header",
                    "description",
                ]
            )
            | st.text(max_size=4),
            children,
            max_size=5,
        )
    ),
    max_leaves=25,
)


@given(json_values)
def test_decoding_arbitrary_json_raises_only_user_interaction_errors(data: object) -> None:
    for decode, code in (
        (wire.decode_request, ErrorCode.BAD_REQUEST),
        (wire.decode_answer, ErrorCode.BAD_ANSWER),
    ):
        outcome: object = "decoded"
        try:
            decode(data)
            decode(json.dumps(data))
        except UserInteractionError as error:
            outcome = error.code
        assert outcome in ("decoded", code)


@given(st.binary(max_size=40) | st.text(max_size=40))
def test_decoding_arbitrary_bytes_and_text_raises_only_user_interaction_errors(
    data: bytes | str,
) -> None:
    outcome: object = "decoded"
    try:
        wire.decode_request(data)
    except UserInteractionError as error:
        outcome = error.code
    assert outcome in ("decoded", ErrorCode.BAD_REQUEST)


def test_deeply_nested_json_is_refused_cleanly() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(UserInteractionError) as info:
        wire.decode_request(deep)
    assert info.value.code == ErrorCode.BAD_REQUEST


def _nested(levels: int, inner: str = "[]") -> str:
    """An answer whose ``custom`` value nests ``levels`` levels deep in all (the document's
    own object, ``answers`` and its item make three)."""
    value = "[" * (levels - 4) + inner + "]" * (levels - 4)
    return f'{{"answers": [{{"id": "a", "selected": [], "custom": {value}}}]}}'


@pytest.mark.parametrize("as_bytes", [False, True], ids=["text", "bytes"])
def test_the_json_depth_limit_is_the_same_on_every_python(as_bytes: bool) -> None:
    # Python's parser gives up at a depth that depends on its version and the stack; the
    # wire refuses past MAX_JSON_DEPTH levels itself, before parsing.
    def decode(text: str) -> UserInteractionError:
        with pytest.raises(UserInteractionError) as info:
            wire.decode_answer(text.encode() if as_bytes else text)
        return info.value

    at_limit = decode(_nested(wire.MAX_JSON_DEPTH))  # parsed: a fault of its content
    assert at_limit.message == "answers[0].custom: expected a string, got array"
    past = decode(_nested(wire.MAX_JSON_DEPTH + 1))
    assert past.code == ErrorCode.BAD_ANSWER
    assert past.message == "answer: not valid JSON (nested more than 256 levels deep)"
    # Brackets inside strings are text, not nesting; an escaped quote does not end one.
    in_strings = decode(_nested(wire.MAX_JSON_DEPTH, '["\\"' + "[{" * 300 + '"]'))
    assert in_strings.path == "answers[0].custom"
    assert wire.json_too_deep("[" * 257 + "]" * 257)
    assert not wire.json_too_deep('["' + "[" * 300 + '"]')


@pytest.fixture(params=["default", "unlimited"])
def int_digits_limit(request: pytest.FixtureRequest) -> Iterator[None]:
    """The interpreter's bound on int conversion as shipped, and turned off (0)."""
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(4300 if request.param == "default" else 0)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(before)


@pytest.mark.usefixtures("int_digits_limit")
@pytest.mark.parametrize("as_bytes", [False, True], ids=["text", "bytes"])
def test_an_integer_of_more_than_max_digits_is_a_fault_of_its_own(as_bytes: bool) -> None:
    huge = "9" * (wire.MAX_DIGITS + 1)

    def intent_with(number: str) -> str:
        return '{"questions": [{"id": "a", "question": "?", "intent": {"kind": "k", "n": ' + (
            number + "}}]}"
        )

    documents: list[tuple[Callable[[str | bytes], object], str, str]] = [
        (wire.decode_request, intent_with(huge), "request"),
        (wire.decode_request, '{"questions": [{"id": -' + huge + ', "question": "?"}]}', "request"),
        (wire.decode_answer, '{"answers": [{"id": "a", "custom": ' + huge + "}]}", "answer"),
    ]
    for decode, text, root in documents:
        with pytest.raises(UserInteractionError) as info:
            decode(text.encode() if as_bytes else text)
        assert info.value.message == f"{root}: holds an integer of more than 4300 digits"
        assert info.value.path == root
    # Exactly MAX_DIGITS digits are read, and then meet the rules of where they stand.
    with pytest.raises(UserInteractionError) as info:
        wire.decode_request(intent_with(huge[1:]))
    assert info.value.message == "questions[0].intent.n: has more than 4000 digits"


def test_an_interpreter_bound_below_max_digits_is_the_one_named() -> None:
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)
    try:
        for digits in (641, 4301):
            with pytest.raises(UserInteractionError) as info:
                wire.decode_answer('{"answers": [{"id": "a", "custom": ' + "9" * digits + "}]}")
            assert info.value.message == "answer: holds an integer of more than 640 digits"
    finally:
        sys.set_int_max_str_digits(before)


def test_a_released_memoryview_is_a_fault_not_a_traceback() -> None:
    view = memoryview(b'{"answers": []}')
    view.release()
    with pytest.raises(UserInteractionError) as info:
        wire.decode_answer(view)
    assert info.value.message.startswith("answer: not valid JSON (operation forbidden")


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_python_s_json_constants_are_not_json(constant: str) -> None:
    # json.loads reads them; JSON.parse on the TypeScript side does not.
    for decode, root, text in (
        (wire.decode_request, "request", '{"questions": [], "extra": %s}'),
        (wire.decode_answer, "answer", '{"answers": [{"id": "a", "selected": [], "n": %s}]}'),
    ):
        with pytest.raises(UserInteractionError) as info:
            decode(text.replace("%s", constant))
        assert info.value.message == f"{root}: not valid JSON ({constant} is not a JSON number)"


_NASTY: st.SearchStrategy[object] = st.sampled_from(
    [None, 0, 1.5, True, [], {}, "", " ", "\u200b", "a\x1b[2J", "x\u202ey", "\ud800", "dup"]
)


@st.composite
def near_valid_documents(draw: st.DrawFn) -> dict[str, Any]:
    """A valid request's wire form with a few fields broken, removed or duplicated."""
    document: dict[str, Any] = json.loads(json.dumps(wire.encode_request(draw(requests()))))
    questions = document["questions"]
    for _ in range(draw(st.integers(0, 3))):
        if not questions:
            break
        question = draw(st.sampled_from(questions))
        target = question
        options = question.get("options")  # an earlier mutation may have replaced the list
        if type(options) is list and options and draw(st.booleans()):
            target = draw(st.sampled_from(options))
        key = draw(st.sampled_from([*target, "id", "label", "detail", "header", "multiSelect"]))
        action = draw(st.sampled_from(["set", "delete", "copy"]))
        if action == "delete":
            target.pop(key, None)
        elif action == "copy" and len(questions) > 1:
            questions[1 - questions.index(question) if len(questions) == 2 else 0][key] = (
                target.get(key)
            )
        else:
            target[key] = draw(_NASTY)
    return document


def _outcome(decode: Any, document: object) -> object:
    try:
        return decode(document).questions
    except UserInteractionError as error:
        return (error.code, error.message)


@given(near_valid_documents())
def test_the_one_pass_decode_agrees_with_the_detailed_decode(document: dict[str, Any]) -> None:
    detailed = _outcome(wire._decode_request_in_detail, document)
    fast = questions_from_json(document["questions"])
    if fast is not None:
        assert fast == detailed
        assert all(type(q.options) is tuple for q in fast)
    else:
        assert _outcome(wire.decode_request, document) == detailed
    assert _outcome(wire.decode_request, json.dumps(document)) == detailed


def _document(**changes: object) -> dict[str, Any]:
    question: dict[str, Any] = {
        "id": "pkg",
        "question": "Which?",
        "options": [{"label": "npm"}, {"label": "yarn", "description": "fast"}],
    }
    question.update(changes)
    return {"questions": [question, {"id": "notes", "question": "Else?"}]}


@pytest.mark.parametrize(
    "document",
    [
        _document(id="notes"),
        _document(id="\u200b"),
        _document(id=" "),
        _document(question=3),
        _document(detail=None),
        _document(header=None),
        _document(header="a\x1b[2J"),
        _document(detail="line\nok\x07"),
        _document(multiSelect="yes"),
        _document(options={"label": "npm"}),
        _document(options=["npm"]),
        _document(options=[{"label": "npm"}, {"label": "NPM "}]),
        _document(options=[{"label": "ｎｐｍ"}, {"label": "npm"}]),  # noqa: RUF001
        _document(options=[{"label": "x\u202ey"}]),
        _document(options=[{"label": "npm", "description": None}]),
        _document(options=[{"label": "\ufeff"}]),
        _document(intent={"kind": "plan-review", "approve": "npm"}),
    ],
    ids=lambda document: json.dumps(document["questions"][0], ensure_ascii=True)[:60],
)
def test_the_one_pass_decode_leaves_every_fault_to_the_detailed_decode(
    document: dict[str, Any],
) -> None:
    assert questions_from_json(document["questions"]) is None
    assert _outcome(wire.decode_request, document) == _outcome(
        wire._decode_request_in_detail, document
    )


@st.composite
def near_valid_answer_documents(draw: st.DrawFn) -> dict[str, Any]:
    """A valid answer's wire form with a few fields broken, removed or duplicated."""
    document: dict[str, Any] = json.loads(json.dumps(wire.encode_answer(draw(answers()))))
    items = document["answers"]
    for _ in range(draw(st.integers(0, 3))):
        if not items:
            break
        target = draw(st.sampled_from(items))
        key = draw(st.sampled_from([*target, "id", "selected", "custom"]))
        if draw(st.booleans()):
            target.pop(key, None)
        elif key == "selected" and type(target.get(key)) is list and draw(st.booleans()):
            target[key] = [*target[key], draw(_NASTY)]
        else:
            target[key] = draw(_NASTY)
    return document


def _answer_outcome(decode: Any, document: object) -> object:
    try:
        return decode(document)
    except UserInteractionError as error:
        return (error.code, error.message)


@given(near_valid_answer_documents())
def test_the_one_pass_answer_decode_agrees_with_the_detailed_decode(
    document: dict[str, Any],
) -> None:
    detailed = _answer_outcome(lambda d: wire._decode_answer_in_detail(d, None), document)
    assert _answer_outcome(wire.decode_answer, document) == detailed
    assert _answer_outcome(wire.decode_answer, json.dumps(document)) == detailed
    fast = wire._answer_items_from_json(document["answers"])
    if fast is not None:
        assert AskUserQuestionAnswer(fast) == detailed
        assert all(type(item.selected) is tuple for item in fast)


@pytest.mark.parametrize(
    "item",
    [
        {"selected": ["a"]},
        {"id": 3, "selected": ["a"]},
        {"id": "q", "selected": "a"},
        {"id": "q", "selected": [None]},
        {"id": "q", "selected": ["a\ud800"]},
        {"id": "q", "selected": ["a"], "custom": None},
        {"id": "q", "selected": ["a"], "custom": "\udfff"},
        {"id": "q"},
    ],
    ids=lambda item: json.dumps(item, ensure_ascii=True),
)
def test_the_one_pass_answer_decode_leaves_every_fault_to_the_detailed_decode(
    item: dict[str, Any],
) -> None:
    document = {"answers": [{"id": "ok", "selected": []}, item]}
    assert wire._answer_items_from_json(document["answers"]) is None
    assert _answer_outcome(wire.decode_answer, document) == _answer_outcome(
        lambda d: wire._decode_answer_in_detail(d, None), document
    )
