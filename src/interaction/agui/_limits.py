"""The size limits of everything an AG-UI client sends (docs/agui.md, "Limits").

Each is refused at limit + 1 with a clear error; nothing past a limit is parsed.
"""

from __future__ import annotations

from typing import Final

__all__ = ["MAX_INPUT_BYTES", "MAX_INTERRUPT_ID", "MAX_PAYLOAD", "MAX_RESUME_ENTRIES"]

MAX_INPUT_BYTES: Final = 4 * 1024 * 1024
"""Bytes of a ``RunAgentInput`` body the endpoint reads (the conversation travels in it)."""
MAX_INTERRUPT_ID: Final = 256 * 1024
"""Characters of a resume entry's ``interruptId`` (the signed state) that are opened."""
MAX_PAYLOAD: Final = 100_000
"""Characters of a resume entry's ``payload``, as compact JSON, that are read as an answer."""
MAX_RESUME_ENTRIES: Final = 1
"""Resume entries a run takes: a run of ours ends with one interrupt, so one answers it."""
