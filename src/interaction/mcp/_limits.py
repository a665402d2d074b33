"""The size limits of everything the bridge takes from a remote peer (docs/mcp.md, "Limits").

Each is refused at limit + 1 with a clear error, and a refusal quotes at most
:data:`QUOTE` characters of what it refuses.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "MAX_ARGUMENTS_BYTES",
    "MAX_CONTENT_BYTES",
    "MAX_FIELDS",
    "MAX_MESSAGE",
    "MAX_OPTIONS",
    "MAX_SCHEMA_BYTES",
    "MAX_STATE",
    "MAX_TEXT",
    "QUOTE",
    "quote",
]

MAX_TEXT: Final = 10_000
"""Characters of one text answer or "Other" text (our forms say so with ``maxLength``), and
of one title, description or option label in a form our client is asked to fill."""
MAX_CONTENT_BYTES: Final = 256 * 1024
"""Bytes of an accepted form's ``content``, as compact JSON, that our server reads."""
MAX_SCHEMA_BYTES: Final = 256 * 1024
"""Bytes of a ``requestedSchema``, as compact JSON, that our client asks."""
MAX_FIELDS: Final = 100
"""Properties of a ``requestedSchema`` that our client asks (one question each)."""
MAX_OPTIONS: Final = 500
"""Choices of one field (``enum``, ``oneOf``, ``anyOf``) that our client asks."""
MAX_MESSAGE: Final = 10_000
"""Characters of an elicitation ``message`` that our client shows."""
MAX_ARGUMENTS_BYTES: Final = 1024 * 1024
"""Bytes of a tool call's arguments, as canonical JSON, that a 2026-07-28 round binds its
state to (legacy calls never read them)."""
MAX_STATE: Final = 1024 * 1024
"""Characters of a ``requestState`` our server opens (the SDK's seal around it included)."""
QUOTE: Final = 40
"""Characters of a refused value that a refusal quotes."""


def quote(text: str) -> str:
    """``text`` as a refusal shows it: ``repr`` of at most :data:`QUOTE` characters, and
    the length when it was cut."""
    if len(text) <= QUOTE:
        return repr(text)
    return f"{text[:QUOTE]!r}… ({len(text)} characters)"
