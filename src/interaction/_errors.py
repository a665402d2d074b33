"""Every error the seam raises, its stable code and its fixed message, in one place.

The hierarchy::

    Exception
     └── HarnessError              message + code; a tool host hands the model {name, code}
          ├── UserInteractionError  + path of a structural fault ("questions[1].id")
          └── AskSuspended          (``_suspend.py``) for the host that resumes; never
                                    shown to the model

The codes of ``UserInteractionError`` and their fixed messages (``-`` marks a message
built per fault, ``"<path>: <problem>"`` by :func:`fault`):

    ASK_ABORTED         ABORTED_MESSAGE, or DISPOSED_MESSAGE when the provider went away
    ASK_TIMEOUT         TIMEOUT_MESSAGE
    EMPTY_QUESTIONS     EMPTY_MESSAGE
    CALLER_NOT_LIVE     NOT_LIVE_MESSAGE
    DELEGATED_CALLER    DELEGATED_MESSAGE
    BAD_REQUEST         -
    BAD_INTENT          - (``question <id> declares intent ...``)
    NO_PROVIDER         NO_PROVIDER_MESSAGE
    DUPLICATE_PROVIDER  DUPLICATE_MESSAGE
    ASK_CANCELLED       CANCELLED_MESSAGE (a provider may word its own)
    BAD_ANSWER          -, or MISMATCH_MESSAGE for a resumed ask whose question changed
    PROVIDER_FAILED     "the user-interaction provider failed: <Type>: <text>"
    ASK_SUSPENDED       SUSPENDED_MESSAGE (carried by ``AskSuspended``)

Two codes beside the enum, for who may answer (``_team.py``)::

    NOT_ASSIGNED        - (an answer, dismissal or rule change by someone the question
                        is not assigned to; HTTP 403 on the page)
    BAD_TEAM            - (``team: <problem>``, a directory of users and groups that
                        cannot be used)
"""

from __future__ import annotations

import enum
from typing import Final

__all__ = ["BAD_TEAM", "NOT_ASSIGNED", "ErrorCode", "HarnessError", "UserInteractionError"]

NOT_ASSIGNED: Final = "NOT_ASSIGNED"
"""Code of the refusal of an answer, dismissal or rule change by someone the question is
not assigned to (and of an unnamed one on an assigned question)."""
BAD_TEAM: Final = "BAD_TEAM"
"""Code of a :class:`~interaction.Team` that cannot be used (a group with no members, a
member who is no user, a name given twice)."""


class ErrorCode(enum.StrEnum):
    """The stable codes of :class:`UserInteractionError`; providers may use further codes."""

    ASK_ABORTED = "ASK_ABORTED"
    ASK_TIMEOUT = "ASK_TIMEOUT"
    EMPTY_QUESTIONS = "EMPTY_QUESTIONS"
    CALLER_NOT_LIVE = "CALLER_NOT_LIVE"
    DELEGATED_CALLER = "DELEGATED_CALLER"
    BAD_REQUEST = "BAD_REQUEST"
    BAD_INTENT = "BAD_INTENT"
    NO_PROVIDER = "NO_PROVIDER"
    DUPLICATE_PROVIDER = "DUPLICATE_PROVIDER"
    ASK_CANCELLED = "ASK_CANCELLED"
    BAD_ANSWER = "BAD_ANSWER"
    PROVIDER_FAILED = "PROVIDER_FAILED"
    ASK_SUSPENDED = "ASK_SUSPENDED"


class HarnessError(Exception):
    """An error whose ``code`` a tool host hands to the model as ``{name, code}``.

    Arguments are positional as in the TypeScript ``new HarnessError(message, code)``.
    ``name`` is the class name, so subclasses report themselves.
    """

    message: str
    code: str

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message, code)
        self.message = message
        self.code = str(code)

    @property
    def name(self) -> str:
        return type(self).__name__

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{self.name}({self.message!r}, {self.code!r})"

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.message, self.code), self.__dict__)

    def to_dict(self) -> dict[str, str]:
        """The JSON-ready ``{"name", "code", "message"}`` of this error."""
        return {"name": self.name, "code": self.code, "message": self.message}


class UserInteractionError(HarnessError):
    """A user-interaction failure; ``path`` locates a structural fault, e.g. ``questions[1].id``."""

    path: str | None

    def __init__(self, message: str, code: str, *, path: str | None = None) -> None:
        super().__init__(message, code)
        self.path = path

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (type(self), self.message, self.code, self.path), self.__dict__)


def _rebuild(
    cls: type[UserInteractionError], message: str, code: str, path: str | None
) -> UserInteractionError:
    return cls(message, code, path=path)


ABORTED_MESSAGE: Final = "ask_user_question was aborted before the user answered"
TIMEOUT_MESSAGE: Final = "ask_user_question timed out before the user answered"
CANCELLED_MESSAGE: Final = "the user dismissed ask_user_question without answering"
DISPOSED_MESSAGE: Final = (
    "ask_user_question was aborted: the user-interaction provider was disposed"
    " while the question was pending"
)


NO_PROVIDER_MESSAGE: Final = "no user-interaction provider is registered"
DUPLICATE_MESSAGE: Final = "a user-interaction provider is already registered"
SUSPENDED_MESSAGE: Final = "the question was suspended until the host resumes it"
MISMATCH_MESSAGE: Final = "the resumed question is not the one that was asked"
EMPTY_MESSAGE: Final = "ask_user_question requires at least one question"
NOT_LIVE_MESSAGE: Final = (
    "human interaction requires the exact live calling agent when an agent is supplied"
)
DELEGATED_MESSAGE: Final = (
    "human interaction is unavailable while the calling agent is owned by another live agent;"
    " include the unresolved question or decision in the child agent's final result"
)


def type_name(value: object) -> str:
    """How a fault names the Python type it got: ``None``, ``int``, ``AskUserQuestionItem``.

    For values a Python caller built; what a model or a wire client sent is named by
    :func:`json_type`.
    """
    return "None" if value is None else type(value).__name__


_JSON_TYPES: Final = {
    type(None): "null",
    bool: "boolean",
    int: "number",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}


def json_type(value: object) -> str:
    """How a fault names the JSON type it got: ``null``, ``boolean``, ``number``, ``string``,
    ``array``, ``object`` (subclasses too); anything else by its Python type."""
    if name := _JSON_TYPES.get(type(value)):
        return name
    for kind, name in _JSON_TYPES.items():
        if isinstance(value, kind):
            return name
    return type(value).__name__


MAX_FAULT_PATH: Final = 200
"""How many characters of a fault's path its message shows (a path holds the keys of an
unknown intent, which a peer chooses); the rest is counted, as ``path`` keeps the same."""
MAX_FAULT_PROBLEM: Final = 500
"""How many characters of a fault's problem its message shows."""
MAX_FAULT_LENGTH: Final = 800
"""An upper bound on ``"<path>: <problem>"`` of any fault, however long what it quotes."""


def _bounded(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def fault(
    code: str, path: str, problem: str, *, source: str = "", advice: str = ""
) -> UserInteractionError:
    """The one shape of a located fault: ``"<path>: <problem>"``, with ``path`` kept.

    ``source`` names what was read when the path alone would not say it (the tool's name,
    ``elicitation``): ``"<source>: <path>: <problem>"``. ``advice`` is a sentence added at
    the end for a model that can try again. A path over :data:`MAX_FAULT_PATH` characters
    or a problem over :data:`MAX_FAULT_PROBLEM` is cut there (``... (N more characters)``),
    so a refusal stays short whatever it quotes.
    """
    path = _bounded(path, MAX_FAULT_PATH)
    problem = _bounded(problem, MAX_FAULT_PROBLEM)
    message = f"{source}: {path}: {problem}" if source else f"{path}: {problem}"
    return UserInteractionError(f"{message}. {advice}" if advice else message, code, path=path)


def problem_of(error: UserInteractionError) -> str:
    """The ``<problem>`` of a fault :func:`fault` built without ``source``, to locate it anew."""
    return error.message.removeprefix(f"{error.path}: ") if error.path else error.message


def bad_request(path: str, problem: str) -> UserInteractionError:
    return fault(ErrorCode.BAD_REQUEST, path, problem)


def bad_answer(path: str, problem: str) -> UserInteractionError:
    return fault(ErrorCode.BAD_ANSWER, path, problem)


def aborted_error(reason: BaseException | None) -> UserInteractionError:
    """``ASK_TIMEOUT`` when ``reason`` is a ``TimeoutError``, else ``ASK_ABORTED``."""
    if isinstance(reason, TimeoutError):
        return UserInteractionError(TIMEOUT_MESSAGE, ErrorCode.ASK_TIMEOUT)
    return UserInteractionError(ABORTED_MESSAGE, ErrorCode.ASK_ABORTED)


def cancelled_error() -> UserInteractionError:
    """The ``ASK_CANCELLED`` error a provider raises when the user dismisses the question."""
    return UserInteractionError(CANCELLED_MESSAGE, ErrorCode.ASK_CANCELLED)
