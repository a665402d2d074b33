"""What both sides of the A2A bridge share: the data part's shape, its limits, the text."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final

from a2a.helpers.proto_helpers import get_data_parts
from a2a.types import Part

from .._core import AskUserQuestionRequest, fault

DATA_KEY: Final = "interaction"
"""The key of the data part's object that carries the bridge's payload, both ways:
``{"interaction": {"request": ..., "state": ...}}`` from the agent,
``{"interaction": {"answer": ..., "state": ...}}`` from the client."""

MAX_REQUEST: Final = 200_000
"""Characters of the JSON of the bridge's data part in an agent's input-required message."""
MAX_REPLY: Final = 100_000
"""Characters of the JSON of the bridge's data part in a client's reply."""


def payload(parts: Sequence[Part], limit: int, code: str, what: str) -> dict[str, object] | None:
    """The bridge's object in a message's data parts, or ``None`` when it has none.

    More than one, one that is not an object, or one longer than ``limit`` characters of
    JSON is a fault with ``code`` (``BAD_REQUEST`` from an agent, ``BAD_ANSWER`` from a
    client).
    """
    found = [
        data[DATA_KEY]
        for data in get_data_parts(parts)
        if isinstance(data, dict) and DATA_KEY in data
    ]
    if not found:
        return None
    if len(found) > 1:
        raise fault(code, DATA_KEY, f"the {what} has {len(found)} data parts for interaction")
    value = found[0]
    if not isinstance(value, dict):
        raise fault(code, DATA_KEY, "expected an object")
    size = len(json.dumps(value, separators=(",", ":")))
    if size > limit:
        raise fault(code, DATA_KEY, f"the {what}'s data is longer than {limit} characters")
    return value


def text_field(value: dict[str, object], name: str, code: str) -> str:
    found = value.get(name)
    if not isinstance(found, str):
        raise fault(code, f"{DATA_KEY}.{name}", "expected a string")
    return found


def render_request(request: AskUserQuestionRequest) -> str:
    """The questions as plain text, for an A2A client that does not read the data part."""
    many = len(request.questions) > 1
    lines = [
        "The agent needs your answers:" if many else "The agent needs your answer:",
    ]
    for n, item in enumerate(request.questions, 1):
        title = f"{item.header}: {item.question}" if item.header else item.question
        lines.append(f"{n}. {title}" if many else title)
        if item.detail:
            lines.extend(f"   {line}" for line in item.detail.splitlines())
        for option in item.options:
            note = f" — {option.description}" if option.description else ""
            lines.append(f"   - {option.label}{note}")
        if item.multi_select:
            lines.append("   (choose any)")
    if not many:
        lines.append("Reply with your answer as text, or with a data part (see docs/a2a.md).")
    else:
        lines.append("Reply with a data part holding one answer per question (see docs/a2a.md).")
    return "\n".join(lines)
