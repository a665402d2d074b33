"""The model-facing ``ask_user_question`` tool: its definition, argument parsing and result.

The model sees snake_case fields (``id``, ``question``, ``header``, ``options``,
``multi_select``); ``detail`` and ``intent`` are for programmatic callers only. Argument
faults are ``BAD_REQUEST`` errors whose message tells the model how to fix its call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from ._core import (
    AskSuspended,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    HarnessError,
    UserInteractionError,
    as_plain,
    ask,
    call_sync,
    check_caller,
    check_questions,
    escape_controls,
    fault,
    json_type,
    problem_of,
)
from .wire import (
    MAX_JSON_DEPTH,
    ODD_KEY,
    JSONObject,
    _bounded_int,
    _TooManyDigits,
    dumps,
    json_too_deep,
    odd_key,
)

if TYPE_CHECKING:
    from ._core import AbortSignal, Agent, AskUserQuestionAnswer, Provenance

__all__ = [
    "DEFAULT_LIMITS",
    "TOOL_DESCRIPTION",
    "TOOL_NAME",
    "ToolLimits",
    "ToolResult",
    "anthropic_tool",
    "openai_tool",
    "render_answer",
    "render_error",
    "request_from_arguments",
    "run_tool",
    "run_tool_sync",
    "tool_parameters",
]

TOOL_NAME: Final = "ask_user_question"
_RETRY_ADVICE: Final = f"Fix the arguments and call {TOOL_NAME} again."
TOOL_DESCRIPTION: Final = (
    "Ask the user one or more questions and wait for the answers. Use it when you need a"
    " decision, a preference or a fact only the user has before you can go on; do not use it"
    " for things you can find out yourself. Give every question a short stable id (it is"
    " echoed back with its answer). Offer options when the answer is a choice: put the option"
    " you recommend first and end its label with ' (Recommended)'. The user may always type"
    " an answer of their own instead, or skip a question. Batch related questions in one call."
)


@dataclass(frozen=True, slots=True)
class ToolLimits:
    """Bounds on what one model call may ask; lengths are in characters.

    Each is a positive ``int`` (``ValueError`` otherwise). Question ids are at most 200
    characters whatever the limits.
    """

    max_questions: int = 4
    max_options: int = 6
    max_header: int = 40
    max_label: int = 80
    max_description: int = 300
    max_question: int = 1000

    def __post_init__(self) -> None:
        for name in (
            "max_questions",
            "max_options",
            "max_header",
            "max_label",
            "max_description",
            "max_question",
        ):
            value = getattr(self, name)
            # Each bound goes into the JSON Schema the model reads: a whole number, not NaN.
            if type(value) is not int or value < 1:
                raise ValueError(f"ToolLimits.{name} must be a positive int, got {value!r}")


DEFAULT_LIMITS: Final = ToolLimits()
_MAX_ID: Final = 200


def tool_parameters(limits: ToolLimits = DEFAULT_LIMITS) -> JSONObject:
    """The tool's JSON-Schema ``parameters`` object."""
    option: JSONObject = {
        "type": "object",
        "properties": {
            "label": {
                "type": "string",
                "minLength": 1,
                "maxLength": limits.max_label,
                "description": "What the user sees and what comes back when it is chosen.",
            },
            "description": {
                "type": "string",
                "maxLength": limits.max_description,
                "description": "Optional help shown under the label.",
            },
        },
        "required": ["label"],
        "additionalProperties": False,
    }
    question: JSONObject = {
        "type": "object",
        "properties": {
            "id": {
                "type": "string",
                "minLength": 1,
                "maxLength": _MAX_ID,
                "description": "Short stable id, unique in this call, echoed with the answer.",
            },
            "question": {
                "type": "string",
                "minLength": 1,
                "maxLength": limits.max_question,
                "description": "The question, as one clear sentence.",
            },
            "header": {
                "type": "string",
                "maxLength": limits.max_header,
                "description": "Optional short heading, e.g. 'Package manager'.",
            },
            "options": {
                "type": "array",
                "items": option,
                "maxItems": limits.max_options,
                "description": "Choices to offer; the recommended one first, its label ending"
                " in ' (Recommended)'. Leave out for a free-text question.",
            },
            "multi_select": {
                "type": "boolean",
                "description": "Whether several options may be chosen. Default false.",
            },
        },
        "required": ["id", "question"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "questions": {
                "type": "array",
                "items": question,
                "minItems": 1,
                "maxItems": limits.max_questions,
                "description": "The questions to ask, shown to the user in this order.",
            }
        },
        "required": ["questions"],
        "additionalProperties": False,
    }


def openai_tool(limits: ToolLimits = DEFAULT_LIMITS) -> JSONObject:
    """The definition in the OpenAI-style ``{"type": "function", "function": {...}}`` shape."""
    return {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": TOOL_DESCRIPTION,
            "parameters": tool_parameters(limits),
        },
    }


def anthropic_tool(limits: ToolLimits = DEFAULT_LIMITS) -> JSONObject:
    """The definition in the Anthropic-style ``{"name", "description", "input_schema"}`` shape."""
    return {
        "name": TOOL_NAME,
        "description": TOOL_DESCRIPTION,
        "input_schema": tool_parameters(limits),
    }


# ---------------------------------------------------------------------------- arguments


def _fault(path: str, problem: str) -> UserInteractionError:
    return fault(ErrorCode.BAD_REQUEST, path, problem, source=TOOL_NAME, advice=_RETRY_ADVICE)


_TOO_DEEP: Final = f"nested too deeply (more than {MAX_JSON_DEPTH} levels)"


def _loads(text: str, path: str, what: str) -> object:
    if json_too_deep(text):
        raise _fault(path, f"expected {what}, got JSON {_TOO_DEEP}")
    try:
        return json.loads(text, parse_int=_bounded_int)
    except RecursionError:  # a caller already deep in its stack
        raise _fault(path, f"expected {what}, got JSON {_TOO_DEEP}") from None
    except _TooManyDigits as exc:
        problem = f"expected {what}, got JSON holding an integer of more than {exc} digits"
        raise _fault(path, problem) from None
    except ValueError:
        raise _fault(path, f"expected {what}, got a string that is not JSON") from None


def _array(value: object, path: str, what: str) -> list[object]:
    """An array, also when the model sent it JSON-encoded in a string."""
    value = as_plain(value)
    if isinstance(value, str) and value.lstrip().startswith("["):
        value = _loads(value, path, f"an array of {what}")
    if not isinstance(value, list):
        raise _fault(path, f"expected an array of {what}, got {json_type(value)}")
    return value


def _text(data: Mapping[str, object], key: str, path: str, limit: int) -> str | None:
    value = as_plain(data.get(key))
    if value is None:
        return None
    if not isinstance(value, str):
        raise _fault(f"{path}.{key}", f"expected a string, got {json_type(value)}")
    if len(value) > limit:
        raise _fault(f"{path}.{key}", f"is {len(value)} characters long; the limit is {limit}")
    return value


def _required_text(data: Mapping[str, object], key: str, path: str, limit: int) -> str:
    value = _text(data, key, path, limit)
    if value is None:
        raise _fault(f"{path}.{key}", "is required")
    if not value.strip():
        raise _fault(f"{path}.{key}", "must not be empty")
    return value


def _option(value: object, path: str, limits: ToolLimits) -> AskUserQuestionOption:
    value = as_plain(value)
    if isinstance(value, str):  # a plain label
        value = {"label": value}
    if not isinstance(value, dict):
        raise _fault(path, f"expected an object with a label, got {json_type(value)}")
    label = _required_text(value, "label", path, limits.max_label)
    return AskUserQuestionOption(label, _text(value, "description", path, limits.max_description))


def _question(value: object, path: str, limits: ToolLimits) -> AskUserQuestionItem:
    value = as_plain(value)
    if not isinstance(value, dict):
        raise _fault(path, f"expected an object, got {json_type(value)}")
    question_id = _required_text(value, "id", path, _MAX_ID)
    text = _required_text(value, "question", path, limits.max_question)
    options: list[AskUserQuestionOption] = []
    if value.get("options") is not None:
        raw = _array(value["options"], f"{path}.options", "options")
        if len(raw) > limits.max_options:
            raise _fault(
                f"{path}.options", f"has {len(raw)} options; the limit is {limits.max_options}"
            )
        options = [_option(o, f"{path}.options[{i}]", limits) for i, o in enumerate(raw)]
    key = "multi_select" if "multi_select" in value else "multiSelect"
    multi = value.get(key, False)
    if multi is None:
        multi = False
    if not isinstance(multi, bool):
        raise _fault(f"{path}.{key}", f"expected a boolean, got {json_type(multi)}")
    return AskUserQuestionItem(
        id=question_id,
        question=text,
        header=_text(value, "header", path, limits.max_header),
        options=options,
        multi_select=multi,
    )


def request_from_arguments(
    arguments: object,
    *,
    agent: Agent | None = None,
    signal: AbortSignal | None = None,
    limits: ToolLimits = DEFAULT_LIMITS,
    provenance: Provenance | None = None,
) -> AskUserQuestionRequest:
    """The request a model's tool-call ``arguments`` (a dict or JSON text) describe.

    An empty batch is left for ``ask()`` to refuse with ``EMPTY_QUESTIONS``. Tolerates what
    models commonly emit: an option as a plain string, ``multiSelect`` for
    ``multi_select``, an array JSON-encoded in a string. Unknown fields are ignored.
    Integers are bounded as on the wire (:data:`interaction.wire.MAX_DIGITS`).
    ``provenance`` (who asks: the framework's agent, run, the tool) goes on the request.
    """
    try:
        return _request_from_arguments(arguments, agent, signal, limits, provenance)
    except UserInteractionError:
        raise
    except Exception:  # a host's mapping whose key compares by raising, say
        path = odd_key(arguments, "arguments")
        if path is None:
            raise
        raise _fault(path, ODD_KEY) from None


def _request_from_arguments(
    arguments: object,
    agent: Agent | None,
    signal: AbortSignal | None,
    limits: ToolLimits,
    provenance: Provenance | None,
) -> AskUserQuestionRequest:
    arguments = as_plain(arguments)
    if isinstance(arguments, str | bytes | bytearray):
        if json_too_deep(bytes(arguments) if isinstance(arguments, bytearray) else arguments):
            raise _fault("arguments", f"are not valid JSON: {_TOO_DEEP}")
        try:
            arguments = json.loads(arguments, parse_int=_bounded_int)
        except RecursionError:  # a caller already deep in its stack
            raise _fault("arguments", f"are not valid JSON: {_TOO_DEEP}") from None
        except _TooManyDigits as exc:
            problem = f"are not valid JSON: holds an integer of more than {exc} digits"
            raise _fault("arguments", problem) from None
        except ValueError:
            raise _fault("arguments", "are not valid JSON") from None
    if not isinstance(arguments, dict):
        raise _fault("arguments", f"expected an object with questions, got {json_type(arguments)}")
    if "questions" not in arguments:
        raise _fault("questions", "is required: pass an array of questions")
    raw = _array(arguments["questions"], "questions", "questions")
    if len(raw) > limits.max_questions:
        raise _fault("questions", f"has {len(raw)} questions; the limit is {limits.max_questions}")
    questions = tuple(_question(q, f"questions[{i}]", limits) for i, q in enumerate(raw))
    try:
        check_questions(questions)
    except UserInteractionError as error:
        raise _fault(error.path or "questions", problem_of(error)) from None
    return AskUserQuestionRequest(questions, agent=agent, signal=signal, provenance=provenance)


# ---------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What the tool host hands back to the model.

    ``content`` is the text for the model; ``error`` is ``{name, code}`` of a failure.
    """

    content: str
    error: Mapping[str, str] | None = None

    @property
    def is_error(self) -> bool:
        return self.error is not None


_GUIDANCE: Final[Mapping[str, str]] = {
    ErrorCode.ASK_CANCELLED: (
        "The user dismissed the question without answering. Do not ask the same question"
        " again right away: go on with what you can do without the answer, or explain what"
        " you need and stop."
    ),
    ErrorCode.ASK_TIMEOUT: (
        "The user did not answer in time. Go on with what does not need the answer, or say"
        " what you are waiting for and stop; ask again only if the user returns."
    ),
    ErrorCode.NO_PROVIDER: (
        "No one can answer questions in this session. Do not call ask_user_question again:"
        " make a reasonable choice yourself and state it, or put the question in your reply."
    ),
}


def render_answer(answer: AskUserQuestionAnswer) -> str:
    """The tool result for an answer: compact JSON ``{"answers":[...]}``."""
    return dumps(answer)


def render_error(error: HarnessError) -> ToolResult:
    """The tool result for a failure: ``Error: <message>``, with guidance where it helps.

    The message may hold a provider's text: its control characters are escaped
    (:func:`interaction.escape_controls`), as everywhere untrusted text is shown.
    """
    content = f"Error: {escape_controls(error.message)}"
    guidance = _GUIDANCE.get(error.code)
    if guidance is not None:
        content = f"{content}\n{guidance}"
    return ToolResult(content, {"name": error.name, "code": error.code})


async def run_tool(
    arguments: object,
    *,
    agent: Agent | None = None,
    signal: AbortSignal | None = None,
    limits: ToolLimits = DEFAULT_LIMITS,
    provenance: Provenance | None = None,
) -> ToolResult:
    """Parse the model's arguments, ``ask()``, and render the result or the error.

    Refusals come in ``ask()``'s order: an aborted signal and the caller's admission win
    over faults in the arguments; an empty batch is ``EMPTY_QUESTIONS``. ``provenance``
    says who asks (an integration fills it with its framework's agent, run and tool).
    """
    try:
        try:
            request = request_from_arguments(
                arguments, agent=agent, signal=signal, limits=limits, provenance=provenance
            )
        except UserInteractionError:
            check_caller(signal, agent)
            raise
        answer = await ask(request)
    except AskSuspended:
        raise  # for the host that suspended the ask, not for the model
    except HarnessError as error:
        return render_error(error)
    return ToolResult(render_answer(answer))


def run_tool_sync(
    arguments: object,
    *,
    agent: Agent | None = None,
    signal: AbortSignal | None = None,
    limits: ToolLimits = DEFAULT_LIMITS,
    provenance: Provenance | None = None,
) -> ToolResult:
    """:func:`run_tool` for a plain function's thread, as ``interaction.ask_sync`` asks.

    On the thread of a running event loop it is refused (``RuntimeError``): await
    :func:`run_tool` there.
    """
    return call_sync(
        lambda: run_tool(
            arguments, agent=agent, signal=signal, limits=limits, provenance=provenance
        ),
        "tool.run_tool_sync",
        "tool.run_tool(arguments)",
    )
