"""The smaller escapes a red team found (issue #33): each failed before its fix."""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final

import pytest
from hypothesis import given
from hypothesis import strategies as st

import interaction
from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionRequest,
    ErrorCode,
    UnknownIntent,
    UserInteractionError,
    wire,
)
from interaction._errors import MAX_FAULT_LENGTH, MAX_FAULT_PATH, MAX_FAULT_PROBLEM, fault
from interaction.testing import ScriptedProvider
from interaction.tool import render_error, request_from_arguments, run_tool

# ------------------------------------------------------------- keys whose __eq__ raises


class RaisingKey(str):
    """A ``str`` subclass a host's parser might make: equal hash, comparing raises."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("__eq__ raises")

    def __ne__(self, other: object) -> bool:
        raise RuntimeError("__ne__ raises")

    __hash__ = str.__hash__


def with_raising_key(data: dict[str, object], key: str) -> dict[str, object]:
    """``data`` with ``key`` replaced by a :class:`RaisingKey` of the same text."""
    return {(RaisingKey(k) if k == key else k): v for k, v in data.items()}


ADVICE: Final = " Fix the arguments and call ask_user_question again."
QUESTION: dict[str, object] = {"id": "a", "question": "Which?", "options": [{"label": "x"}]}


@pytest.mark.parametrize(
    ("decode", "data", "code", "message"),
    [
        (
            wire.decode_request,
            with_raising_key({"questions": [QUESTION]}, "questions"),
            ErrorCode.BAD_REQUEST,
            "request: has a key that is not a plain string",
        ),
        (
            wire.decode_request,
            {"questions": [with_raising_key(QUESTION, "id")]},
            ErrorCode.BAD_REQUEST,
            "questions[0]: has a key that is not a plain string",
        ),
        (
            wire.decode_request,
            {"questions": [{**QUESTION, "options": [with_raising_key({"label": "x"}, "label")]}]},
            ErrorCode.BAD_REQUEST,
            "questions[0].options[0]: has a key that is not a plain string",
        ),
        (
            wire.decode_answer,
            {"answers": [with_raising_key({"id": "a", "selected": []}, "selected")]},
            ErrorCode.BAD_ANSWER,
            "answers[0]: has a key that is not a plain string",
        ),
        (
            wire.decode_answer,
            with_raising_key({"answers": []}, "answers"),
            ErrorCode.BAD_ANSWER,
            "answer: has a key that is not a plain string",
        ),
        (
            request_from_arguments,
            {"questions": [with_raising_key(QUESTION, "question")]},
            ErrorCode.BAD_REQUEST,
            "ask_user_question: questions[0]: has a key that is not a plain string." + ADVICE,
        ),
        (
            request_from_arguments,
            with_raising_key({"questions": [QUESTION]}, "questions"),
            ErrorCode.BAD_REQUEST,
            "ask_user_question: arguments: has a key that is not a plain string." + ADVICE,
        ),
    ],
)
def test_a_key_whose_eq_raises_is_a_clear_fault(
    decode: Callable[[object], object], data: object, code: str, message: str
) -> None:
    with pytest.raises(UserInteractionError) as caught:
        decode(data)
    assert (caught.value.code, caught.value.message) == (code, message)


def test_a_raising_key_the_decoder_never_compares_changes_nothing() -> None:
    extra = {RaisingKey("unrelated"): 1}  # no lookup hashes to it: it is never compared
    request = wire.decode_request({"questions": [{**QUESTION, "extra": extra}]})
    assert request.questions[0].id == "a"


def test_an_error_of_the_decoder_itself_still_surfaces(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(raw: object) -> object:
        raise ZeroDivisionError("a bug, not the input's fault")

    monkeypatch.setattr(wire, "questions_from_json", broken)
    with pytest.raises(ZeroDivisionError):
        wire.decode_request({"questions": [QUESTION]})


# ------------------------------------------------------------- unknown intents: size


def nested_intent(levels: int, key_size: int, leaf: object = 1) -> dict[str, object]:
    """``{"kind": "z", "aaa…": {"bbb…": {… leaf}}}``: ``levels`` keys of ``key_size``."""
    inner: dict[str, object] = {}
    node = inner
    for level in range(levels):
        child: dict[str, object] = {}
        node[chr(ord("a") + level % 26) * key_size] = child
        node = child
    node["leaf"] = leaf
    return {"kind": "z", **inner}


@contextmanager
def peak_memory() -> Iterator[list[int]]:
    """The peak of traced allocations within the block, in bytes, as ``[peak]``."""
    peak: list[int] = []
    tracemalloc.start()
    try:
        yield peak
    finally:
        peak.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()


def test_an_unknown_intent_over_the_size_bound_is_refused_in_bounded_memory() -> None:
    intent = nested_intent(20, 100_000)
    text = json.dumps({"questions": [{"id": "a", "question": "q?", "intent": intent}]})
    with peak_memory() as peak, pytest.raises(UserInteractionError) as caught:
        wire.decode_request(text)
    assert (caught.value.code, caught.value.message) == (
        ErrorCode.BAD_INTENT,
        f"questions[0].intent: holds more than {wire.MAX_INTENT_SIZE} characters",
    )
    assert peak[0] < 4 * len(text)  # the parsed document and little more (was 10x)


def test_an_unknown_intent_at_the_size_bound_is_kept() -> None:
    fields = {"v": "x" * (wire.MAX_INTENT_SIZE - 2)}  # the key (1) and one value (1) too
    text = json.dumps({"questions": [{"id": "a", "question": "q?", "intent": {"kind": "z"}}]})
    data = json.loads(text)
    data["questions"][0]["intent"].update(fields)
    intent = wire.decode_request(data).questions[0].intent
    assert isinstance(intent, UnknownIntent)
    assert intent.fields == fields
    data["questions"][0]["intent"]["w"] = 1
    with pytest.raises(UserInteractionError) as caught:
        wire.decode_request(data)
    assert caught.value.code == ErrorCode.BAD_INTENT


def test_a_refusal_deep_in_long_keys_has_a_bounded_message() -> None:
    key = "k" * 60_000
    for build in (
        lambda: wire.decode_request(
            {"questions": [{"id": "a", "question": "q", "intent": {"kind": "z", key: "\ud800"}}]}
        ),
        lambda: UnknownIntent("z", {key: {key[:-1] + "\x1b": 1}}),
        lambda: UnknownIntent("z", {key + "\x1b": 1}),
    ):
        with pytest.raises(UserInteractionError) as caught:
            build()
        message = caught.value.message
        assert len(message) <= MAX_FAULT_LENGTH, len(message)
        assert "more characters)" in message
        assert "\x1b" not in message
        assert caught.value.path is not None
        assert caught.value.path in message


def long_texts(most: int) -> st.SearchStrategy[str]:
    """Texts up to about ``most`` characters, long ones as likely as short ones."""
    pieces = st.text(min_size=1, max_size=4)
    return st.builds(lambda piece, n: (piece * n)[:most], pieces, st.integers(0, most))


@given(long_texts(3000).filter(bool), long_texts(3000))
def test_every_fault_message_is_bounded_and_names_its_path(path: str, problem: str) -> None:
    error = fault(ErrorCode.BAD_REQUEST, path, problem)
    assert len(error.message) <= MAX_FAULT_LENGTH
    assert error.path is not None
    assert error.message.startswith(f"{error.path}: ")
    if len(path) <= MAX_FAULT_PATH and len(problem) <= MAX_FAULT_PROBLEM:
        assert error.message == f"{path}: {problem}"


# ------------------------------------------------------------- the tool's integers


@contextmanager
def unlimited_int_digits() -> Iterator[None]:
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(before)


def test_the_tool_bounds_integer_digits_as_the_wire_does() -> None:
    huge = "9" * 600_000
    question = f'{{"id": {huge}, "question": "q?"}}'
    with unlimited_int_digits():
        for arguments, message in (
            (
                f'{{"questions": [{question}]}}',
                "ask_user_question: arguments: are not valid JSON: holds an integer of more"
                f" than {wire.MAX_DIGITS} digits",
            ),
            (
                json.dumps({"questions": f"[{question}]"}),
                "ask_user_question: questions: expected an array of questions, got JSON"
                f" holding an integer of more than {wire.MAX_DIGITS} digits",
            ),
        ):
            with pytest.raises(UserInteractionError) as caught:
                request_from_arguments(arguments)
            assert (caught.value.code, caught.value.message) == (
                ErrorCode.BAD_REQUEST,
                message + "." + ADVICE,
            )
        with pytest.raises(UserInteractionError) as wire_caught:
            wire.decode_request(f'{{"questions": [{question}]}}')
    assert wire_caught.value.message == (
        f"request: holds an integer of more than {wire.MAX_DIGITS} digits"
    )
    request = request_from_arguments('{"questions": [{"id": "a", "question": "q?", "n": 12}]}')
    assert request.questions[0].id == "a"  # ordinary numbers still parse


# ------------------------------------------------------------- surrogates in answer ids


@pytest.mark.parametrize(
    "data",
    [
        '{"answers": [{"id": "\\ud800", "selected": []}]}',
        {"answers": [{"id": "\ud800", "selected": []}]},
        {"answers": [{"id": "a\udfffb", "selected": ["x"], "custom": "y"}]},
    ],
)
def test_an_unpaired_surrogate_in_an_answer_id_is_a_bad_answer(data: object) -> None:
    with pytest.raises(UserInteractionError) as caught:
        wire.decode_answer(data)
    assert (caught.value.code, caught.value.message) == (
        ErrorCode.BAD_ANSWER,
        "answers[0].id: contains an unpaired surrogate",
    )


def test_a_decoded_answer_always_dumps_to_utf8() -> None:
    answer = wire.decode_answer('{"answers": [{"id": "\\ud83d\\ude00", "selected": []}]}')
    assert answer == AskUserQuestionAnswer([AskUserQuestionAnswerItem("\U0001f600")])
    wire.dumps(answer).encode("utf-8")


# ------------------------------------------------------------- a provider's text


HOSTILE = "\x1b]52;c;cHduZWQ=\x07\x1b[2J\x9b31mred\u202e"
SHOWN = "\\x1b]52;c;cHduZWQ=\\x07\\x1b[2J\\x9b31mred\\u202e"


async def test_a_provider_failure_keeps_no_terminal_control_sequence() -> None:
    with interaction.provide(ScriptedProvider(RuntimeError(HOSTILE))):
        with pytest.raises(UserInteractionError) as caught:
            await interaction.ask(
                AskUserQuestionRequest([interaction.AskUserQuestionItem("a", "q?")])
            )
        result = await run_tool({"questions": [{"id": "a", "question": "q?"}]})
    expected = f"the user-interaction provider failed: RuntimeError: {SHOWN}"
    assert (caught.value.code, caught.value.message) == (ErrorCode.PROVIDER_FAILED, expected)
    assert result.content == f"Error: {expected}"


async def test_a_provider_error_class_name_is_escaped_too() -> None:
    hostile_type = type("Bad\x1b[2JName", (Exception,), {})
    with interaction.provide(ScriptedProvider(hostile_type("x"))):
        result = await run_tool({"questions": [{"id": "a", "question": "q?"}]})
    assert result.content == ("Error: the user-interaction provider failed: Bad\\x1b[2JName: x")


def test_a_harness_error_a_provider_raised_reaches_the_model_escaped() -> None:
    error = UserInteractionError(f"the UI said {HOSTILE}", ErrorCode.ASK_CANCELLED)
    result = render_error(error)
    assert result.content.startswith(f"Error: the UI said {SHOWN}\n")
    assert result.error == {"name": "UserInteractionError", "code": "ASK_CANCELLED"}


# ------------------------------------------------------------- the CLI and credentials


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "redis://user:s3cret@127.0.0.1:notaport/0",
            "redis://user:***@127.0.0.1:notaport/0",
        ),
        ("http://:s3cret@127.0.0.1/0", "http://:***@127.0.0.1/0"),
        ("redis://s3cret@127.0.0.1:x/0", "redis://***@127.0.0.1:x/0"),
        ("redis://u:s3c@ret@127.0.0.1:x/0", "redis://u:***@127.0.0.1:x/0"),
        ("redis://h:x/0?password=s3cret&db=1", "redis://h:x/0?password=***&db=1"),
    ],
)
def test_serve_never_prints_the_password_of_a_redis_url(url: str, shown: str) -> None:
    refused = subprocess.run(
        [sys.executable, "-m", "interaction", "serve", "--port", "0", "--redis", url],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2
    assert "s3c" not in refused.stderr + refused.stdout
    assert refused.stderr == (
        f"interaction: --redis {shown!r} is not a Redis URL: use redis://HOST:PORT/DB,"
        " rediss://HOST:PORT/DB or unix:///PATH\n"
    )
