"""FastMCP, both ways, through its public API (extra ``[fastmcp]``).

- Server side: ``@interactive`` under ``@server.tool`` on a FastMCP tool (one that takes a
  ``fastmcp.Context``) turns its asks into input-required rounds on 2026-07-28
  connections; ``ElicitationProvider.from_context`` takes a FastMCP context too. (FastMCP
  returns the ``InputRequiredResult`` the wrapper gives as the call's result.)
  :class:`FastMCPRefusals`, among the server's middleware, sends the bridge's refusals as
  the JSON-RPC errors they are: FastMCP turns whatever a tool raises into the tool's error
  result, and only a middleware around its tool runner can answer with a protocol error.
- Client side: :func:`fastmcp_elicitation_handler` is a FastMCP client
  ``elicitation_handler`` that answers with the provider in context, as
  :func:`elicitation_callback` does for the official SDK's client.

Everything here uses FastMCP's public names: ``Context.session``, ``.request_id``,
``.request_context.protocol_version``, ``.request_state``, ``.input_responses``;
``Middleware.on_call_tool``, ``ToolError``'s ``log_level`` (a ``FastMCPError`` a tool raises
is logged at that level, without a traceback, and passed on unmasked); the client's
``ElicitResult`` and its handler signature. ``tests/test_mcp_fastmcp.py`` pins each of them.
"""

from __future__ import annotations

try:
    from fastmcp import Context as FastMCPContext
    from fastmcp.client.elicitation import ElicitResult as FastMCPElicitResult
    from fastmcp.exceptions import ToolError
    from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
    from fastmcp.tools import ToolResult
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        'interaction.mcp\'s FastMCP support needs fastmcp: pip install "interaction-seam[fastmcp]"'
    ) from exc

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from typing import Final, TypeAlias

import mcp.types as mcp_types
from mcp.client.context import ClientRequestContext
from mcp.shared.exceptions import MCPError
from pydantic_core import PydanticSerializationError, to_jsonable_python

from .._core import UserInteractionProvider
from ._client import UrlOpener, answer_form, server_name
from ._server import INPUT_REQUIRED_VERSION
from ._suspend import Call, StateRefused

__all__ = [
    "FastMCPElicitationError",
    "FastMCPElicitationHandler",
    "FastMCPRefusals",
    "call_reader",
    "fastmcp_elicitation_handler",
    "interactive_call",
    "through_fastmcp",
]

FastMCPElicitationHandler: TypeAlias = Callable[
    [str, object, mcp_types.ElicitRequestParams, object],
    Awaitable[FastMCPElicitResult[dict[str, object]]],
]
"""A FastMCP client's ``elicitation_handler``: ``(message, response_type, params, context)``."""

UNSERIALIZABLE: Final = (
    "an @interactive FastMCP tool's arguments must be JSON-serializable (the request state"
    " is bound to them)"
)


NO_REFUSALS: Final = (
    "an @interactive FastMCP tool on a 2026-07-28 connection needs"
    " interaction.mcp.FastMCPRefusals() among the server's middleware"
    " (FastMCP(..., middleware=[FastMCPRefusals()])), so its refusals reach the client as"
    " JSON-RPC errors"
)

_GUARDED: ContextVar[bool] = ContextVar("interaction_fastmcp_refusals", default=False)
"""Set while :class:`FastMCPRefusals` runs a tool call."""


class _Refusal(ToolError):
    """A bridge refusal on its way out of FastMCP's tool runner to :class:`FastMCPRefusals`:
    as a ``FastMCPError`` it is logged at DEBUG without a traceback and passed on as it is."""

    def __init__(self, refused: StateRefused) -> None:
        super().__init__(refused.message, log_level=logging.DEBUG)
        self.refused = refused


def through_fastmcp(refused: StateRefused) -> ToolError:
    """What an @interactive FastMCP tool raises for the bridge's refusal."""
    return _Refusal(refused)


class FastMCPRefusals(Middleware):
    """FastMCP middleware that sends the bridge's refusals as JSON-RPC errors.

    ``FastMCP(name, middleware=[FastMCPRefusals()])`` (or ``server.add_middleware``), on the
    server the client connects to: a forged, expired, replayed or oversized request state
    is then ``INVALID_PARAMS`` with ``data`` ``{"code": "BAD_REQUEST"}``, a store that
    cannot record it ``INTERNAL_ERROR`` with ``{"code": "PROVIDER_FAILED"}``, as on the
    official SDK's server, instead of the tool's error result. An ``@interactive`` FastMCP
    tool refuses to take 2026-07-28 rounds without it.
    """

    async def on_call_tool(
        self,
        context: MiddlewareContext[mcp_types.CallToolRequestParams],
        call_next: CallNext[mcp_types.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        token = _GUARDED.set(True)
        try:
            return await call_next(context)
        except _Refusal as refusal:
            error = refusal.refused.error
            raise MCPError(error.code, error.message, error.data) from None
        finally:
            _GUARDED.reset(token)


class FastMCPElicitationError(Exception):
    """A form :func:`fastmcp_elicitation_handler` cannot ask or fill; FastMCP's client
    sends its message to the server as the error."""


def _read(ctx: FastMCPContext, tool: str, arguments: object) -> Call | None:
    request = ctx.request_context
    if request is None:  # no live request (a background task): the tool just runs
        return None

    def as_json() -> object:
        try:
            return to_jsonable_python(arguments)
        except PydanticSerializationError:
            raise TypeError(UNSERIALIZABLE) from None

    return Call(
        ctx.session,
        request.protocol_version,
        ctx.request_state,
        ctx.input_responses,
        tool,
        as_json,
    )


def call_reader(
    tool: Callable[..., object], args: tuple[object, ...], kwargs: Mapping[str, object]
) -> Callable[[], Call | None] | None:
    """How to read the call of ``tool(*args, **kwargs)``, a FastMCP tool, or ``None``
    when no argument is a ``fastmcp.Context``.

    The state binds to the function (module and qualified name) and to its arguments other
    than the context, as JSON: FastMCP has no public way to read the tool name and raw
    arguments of the call from inside the tool.
    """
    ctx = next((v for v in (*args, *kwargs.values()) if isinstance(v, FastMCPContext)), None)
    if ctx is None:
        return None
    bound = inspect.signature(tool).bind_partial(*args, **kwargs).arguments
    arguments = {k: v for k, v in bound.items() if not isinstance(v, FastMCPContext)}
    name = f"{tool.__module__}.{tool.__qualname__}"
    return lambda: _read(ctx, name, arguments)


def interactive_call(
    tool: Callable[..., object], args: tuple[object, ...], kwargs: Mapping[str, object]
) -> Callable[[], Call | None] | None:
    """:func:`call_reader` for an ``@interactive`` tool: a 2026-07-28 call it reads outside
    :class:`FastMCPRefusals` is a ``TypeError`` that names the middleware."""
    read = call_reader(tool, args, kwargs)
    if read is None:
        return None

    def checked() -> Call | None:
        call = read()
        if call is not None and call.version >= INPUT_REQUIRED_VERSION and not _GUARDED.get():
            raise TypeError(NO_REFUSALS)
        return call

    return checked


def fastmcp_elicitation_handler(
    provider: UserInteractionProvider | None = None, *, open_url: UrlOpener | None = None
) -> FastMCPElicitationHandler:
    """A FastMCP client ``elicitation_handler`` that asks a human through the seam.

    ``fastmcp.Client(server, elicitation_handler=fastmcp_elicitation_handler(provider))``:
    the same questions, checks and results as :func:`elicitation_callback` (``accept``
    with content that satisfies the schema, ``decline``, ``cancel``); a form it cannot ask
    is refused with an MCP error that says why.
    """

    async def handler(
        message: str,
        response_type: object,
        params: mcp_types.ElicitRequestParams,
        context: object,
    ) -> FastMCPElicitResult[dict[str, object]]:
        del message, response_type
        # FastMCP passes the SDK's ClientRequestContext through as it is.
        server = server_name(context) if isinstance(context, ClientRequestContext) else None
        result = await answer_form(params, provider, server, open_url)
        if isinstance(result, mcp_types.ErrorData):
            # FastMCP's client turns a handler's exception into an error response whose
            # message is the exception's (its code is INTERNAL_ERROR): the refusal's reason.
            raise FastMCPElicitationError(result.message)
        content: dict[str, object] | None = (
            None if result.content is None else dict(result.content.items())
        )
        return FastMCPElicitResult(action=result.action, content=content)

    return handler
