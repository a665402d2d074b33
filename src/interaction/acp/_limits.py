"""The bounds on what an ACP peer sends, checked before anyone is asked (docs/acp.md)."""

from __future__ import annotations

from typing import Final

MAX_TEXT: Final = 10_000
"""Characters in one text a peer sends: a title, an option name, a tool call's text, an answer."""
MAX_OPTIONS: Final = 50
"""Options in one ``session/request_permission``, or choices in one form field."""
MAX_FIELDS: Final = 50
"""Fields in one elicitation form."""
MAX_TRIES: Final = 3
"""How many times a question is asked before an answer that still does not fit is an error."""
