"""The MCP bridge, both ways, over the official ``mcp`` SDK (extra ``[mcp]``).

- Server side (:mod:`interaction.mcp._server`): :class:`ElicitationProvider` asks the
  connected client through MCP form elicitation, pushed on legacy connections
  (``elicitation/create``); on 2026-07-28 ones :class:`InteractiveMCPServer` (or
  ``@interactive`` on one tool) turns the asks into input-required rounds.
- Client side (:mod:`interaction.mcp._client`): :func:`elicitation_callback` answers a
  server's form elicitation with the provider active in context (terminal, console, web
  relay): pass it as an MCP client's ``elicitation_callback``.

What a form cannot carry is listed in docs/mcp.md.
"""

try:
    import jsonschema  # noqa: F401
    import mcp.types  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        'interaction.mcp needs the MCP SDK: pip install "interaction-seam[mcp]"'
    ) from exc

from ._client import MAX_TRIES, ElicitationCallback, elicitation_callback
from ._server import (
    ELICITATION_VERSION,
    INPUT_REQUIRED_VERSION,
    TITLED_VERSION,
    ElicitationProvider,
    FormField,
    form_to_answer,
    request_to_form,
)
from ._suspend import InputRequiredBridge, InteractiveMCPServer, interactive

__all__ = [
    "ELICITATION_VERSION",
    "INPUT_REQUIRED_VERSION",
    "MAX_TRIES",
    "TITLED_VERSION",
    "ElicitationCallback",
    "ElicitationProvider",
    "FormField",
    "InputRequiredBridge",
    "InteractiveMCPServer",
    "elicitation_callback",
    "form_to_answer",
    "interactive",
    "request_to_form",
]
