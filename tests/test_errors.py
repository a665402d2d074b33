from __future__ import annotations

import copy
import pickle

import pytest

from interaction import ErrorCode, HarnessError, UserInteractionError
from interaction._errors import fault, json_type, problem_of, type_name


def test_codes_are_the_documented_set() -> None:
    assert [code.value for code in ErrorCode] == [
        "ASK_ABORTED",
        "ASK_TIMEOUT",
        "EMPTY_QUESTIONS",
        "CALLER_NOT_LIVE",
        "DELEGATED_CALLER",
        "BAD_REQUEST",
        "BAD_INTENT",
        "NO_PROVIDER",
        "DUPLICATE_PROVIDER",
        "ASK_CANCELLED",
        "BAD_ANSWER",
        "PROVIDER_FAILED",
        "ASK_SUSPENDED",
    ]
    assert ErrorCode.NO_PROVIDER == "NO_PROVIDER"


def test_harness_error_carries_message_code_and_name() -> None:
    error = HarnessError("boom", "MY_CODE")
    assert (error.message, error.code, error.name) == ("boom", "MY_CODE", "HarnessError")
    assert str(error) == "boom"
    assert error.to_dict() == {"name": "HarnessError", "code": "MY_CODE", "message": "boom"}
    assert repr(error) == "HarnessError('boom', 'MY_CODE')"


def test_user_interaction_error_is_a_harness_error_named_after_its_class() -> None:
    error = UserInteractionError("no", ErrorCode.NO_PROVIDER)
    assert isinstance(error, HarnessError)
    assert error.to_dict() == {
        "name": "UserInteractionError",
        "code": "NO_PROVIDER",
        "message": "no",
    }
    assert type(error.code) is str  # a plain string on the wire, whatever was passed


@pytest.mark.parametrize(
    "error",
    [
        HarnessError("boom", "X"),
        UserInteractionError("bad", ErrorCode.BAD_REQUEST, path="questions[0].id"),
        UserInteractionError("no", "CUSTOM_CODE"),
    ],
)
def test_pickle_and_copy_keep_message_code_and_path(error: HarnessError) -> None:
    for clone in (pickle.loads(pickle.dumps(error)), copy.copy(error), copy.deepcopy(error)):
        assert type(clone) is type(error)
        assert clone.to_dict() == error.to_dict()
        assert getattr(clone, "path", None) == getattr(error, "path", None)
        assert clone.args == error.args


def test_what_a_model_or_wire_client_sent_is_named_by_its_json_type() -> None:
    class Mapping(dict[str, object]):
        pass

    sent: tuple[object, ...] = (None, True, 3, 2.5, "x", [], {}, Mapping(), b"x")
    named = [json_type(value) for value in sent]
    assert named == [
        "null",
        "boolean",
        "number",
        "number",
        "string",
        "array",
        "object",
        "object",
        "bytes",
    ]
    assert type_name(None) == "None"  # what a Python caller built keeps Python's names


def test_every_located_fault_has_one_shape_and_keeps_its_path() -> None:
    plain = fault(ErrorCode.BAD_REQUEST, "questions[0].id", "must not be empty")
    sourced = fault(
        ErrorCode.BAD_REQUEST,
        "questions[0].id",
        "must not be empty",
        source="tool",
        advice="Retry.",
    )
    assert (plain.message, plain.path) == ("questions[0].id: must not be empty", "questions[0].id")
    assert sourced.message == "tool: questions[0].id: must not be empty. Retry."
    assert sourced.path == "questions[0].id"
    assert problem_of(plain) == "must not be empty"
    assert problem_of(UserInteractionError("no path here", ErrorCode.BAD_REQUEST)) == "no path here"
