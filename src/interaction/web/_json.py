"""The app's JSON: a pending question as the page and API clients receive it, an answer
checked under the seam's one rule, and the documented shape of every error."""

from __future__ import annotations

import json
from typing import Final

from starlette.responses import JSONResponse

from .._core import NOT_ASSIGNED, AskUserQuestionAnswer, AskUserQuestionRequest, answer_item
from ..display import present
from ..relay import NOT_PENDING, RELAY_UNAVAILABLE, PendingQuestion
from ..wire import encode_approvals, encode_request

__all__ = ["ANSWER_JSON", "as_typed", "error_body", "question_json", "status_of"]

ANSWER_JSON: Final = json.JSONEncoder(
    ensure_ascii=False, check_circular=False, allow_nan=False, separators=(",", ":")
)
"""Starlette's ``JSONResponse`` encoding (compact, UTF-8), built once (json.dumps builds
an encoder at every call that passes an option). No cycle check, as the app encodes only
the fresh trees of dicts and lists it builds itself."""

# Status codes of the relay's and the app's error codes.
_STATUS: Final = {
    NOT_PENDING: 409,
    NOT_ASSIGNED: 403,
    RELAY_UNAVAILABLE: 503,
    "NOT_FOUND": 404,
    "METHOD_NOT_ALLOWED": 405,
}


def status_of(code: str) -> int:
    """The HTTP status of an error code: 400 unless the code says otherwise."""
    return _STATUS.get(code, 400)


def question_json(question: PendingQuestion) -> dict[str, object]:
    """A pending question as the page and API clients receive it.

    ``request`` is the wire request; ``view`` its display model
    (:meth:`interaction.display.RequestView.to_json`), which is all the page draws.
    """
    view = present(question.request)
    shown: dict[str, object] = {
        "id": question.id,
        "request": encode_request(question.request),
        "planReview": view.plan_review,
        "view": view.to_json(),
    }
    assignment = question.request.assignment
    if assignment is not None and assignment.quorum is not None:
        shown["approvals"] = encode_approvals(question.approvals)
    return shown


def as_typed(
    request: AskUserQuestionRequest, answer: AskUserQuestionAnswer
) -> AskUserQuestionAnswer:
    """A checked answer from the page or a client, under the seam's one answer rule.

    Custom text that names an option selects that option (:func:`interaction.answer_item`),
    as typing it does in every other UI.
    """
    questions = {question.id: question for question in request.questions}
    return AskUserQuestionAnswer(
        [answer_item(questions[i.id], i.selected, i.custom) for i in answer.answers]
    )


def _is_json(media: str) -> bool:
    """Whether a ``Content-Type`` is JSON in UTF-8 (``application/json``, no other charset)."""
    kind, *parameters = (part.strip().lower() for part in media.split(";"))
    if kind != "application/json":
        return False
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        if name.strip() == "charset" and value.strip().strip('"') not in {"utf-8", "utf8"}:
            return False
    return True


def error_body(code: str, message: str, **extra: str) -> dict[str, dict[str, str]]:
    """The documented error shape of every non-2xx response."""
    return {"error": {"code": code, "message": message, **extra}}


def _error(status: int, code: str, message: str, **extra: str) -> JSONResponse:
    # ensure_ascii (the default) so that no text, however odd, can fail to encode.
    return JSONResponse(error_body(code, message, **extra), status_code=status)
