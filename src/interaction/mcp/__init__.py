"""The MCP bridge, both ways, over the official ``mcp`` SDK (extra ``[mcp]``).

- Server side (:mod:`interaction.mcp._server`): :class:`ElicitationProvider` asks the
  connected client through MCP form elicitation, pushed on legacy connections
  (``elicitation/create``); on 2026-07-28 ones :class:`InteractiveMCPServer` (or
  ``@interactive`` on one tool) turns the asks into input-required rounds.
- Client side (:mod:`interaction.mcp._client`): :func:`elicitation_callback` answers a
  server's form elicitation with the provider active in context (terminal, console, web
  relay): pass it as an MCP client's ``elicitation_callback``.
- At most once (:mod:`interaction.spent`): a :class:`SpentStateStore` records each
  redeemed request state; ``RedisSpentStore`` (extra ``[redis]``) shares it.
- FastMCP (:mod:`interaction.mcp._fastmcp`, extra ``[fastmcp]``): ``@interactive`` and
  ``ElicitationProvider.from_context`` take FastMCP tools, ``FastMCPRefusals`` sends the
  bridge's refusals as JSON-RPC errors; ``fastmcp_elicitation_handler`` answers on a
  FastMCP client (loaded on first use).

What a form cannot carry is listed in docs/mcp.md.
"""

try:
    import jsonschema  # noqa: F401
    import mcp.types  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        'interaction.mcp needs the MCP SDK: pip install "interaction-seam[mcp]"'
    ) from exc

from typing import TYPE_CHECKING

from ..spent import MemorySpentStore, SpentStateStore, SpentStoreUnavailable
from ._client import MAX_TRIES, ElicitationCallback, UrlOpener, elicitation_callback
from ._server import (
    ASK_DECLINED,
    ELICITATION_VERSION,
    INPUT_REQUIRED_VERSION,
    TITLED_VERSION,
    ElicitationProvider,
    FormField,
    form_to_answer,
    request_to_form,
)
from ._suspend import SECRET_VARIABLE, InputRequiredBridge, InteractiveMCPServer, interactive

if TYPE_CHECKING:
    from ..redis import RedisSpentStore
    from ._fastmcp import (
        FastMCPElicitationError,
        FastMCPElicitationHandler,
        FastMCPRefusals,
        fastmcp_elicitation_handler,
    )

_LAZY = {
    "FastMCPElicitationError": f"{__name__}._fastmcp",
    "FastMCPElicitationHandler": f"{__name__}._fastmcp",
    "FastMCPRefusals": f"{__name__}._fastmcp",
    "fastmcp_elicitation_handler": f"{__name__}._fastmcp",
    "RedisSpentStore": "interaction.redis",
}


def __getattr__(name: str) -> object:
    """The names that need another extra (``[fastmcp]``, ``[redis]``), imported on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value: object = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "ASK_DECLINED",
    "ELICITATION_VERSION",
    "INPUT_REQUIRED_VERSION",
    "MAX_TRIES",
    "SECRET_VARIABLE",
    "TITLED_VERSION",
    "ElicitationCallback",
    "ElicitationProvider",
    "FastMCPElicitationError",
    "FastMCPElicitationHandler",
    "FastMCPRefusals",
    "FormField",
    "InputRequiredBridge",
    "InteractiveMCPServer",
    "MemorySpentStore",
    "RedisSpentStore",
    "SpentStateStore",
    "SpentStoreUnavailable",
    "UrlOpener",
    "elicitation_callback",
    "fastmcp_elicitation_handler",
    "form_to_answer",
    "interactive",
    "request_to_form",
]
