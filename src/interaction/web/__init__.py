"""A web answering page and JSON API over a relay backend (extra ``[web]``).

``create_app(relay, token=...)`` is a Starlette ASGI app over any
:class:`~interaction.relay.RelayBackend` (the in-memory ``Relay`` or ``RedisRelay``);
:class:`WebServer` runs it with uvicorn on 127.0.0.1. Every request needs the token; see
docs/web.md for the API.
"""

try:
    import starlette  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        'interaction.web needs Starlette and uvicorn: pip install "interaction-seam[web]"'
    ) from exc

from ._app import create_app as create_app
from ._push_routes import WebPush as WebPush
from ._server import DEFAULT_MAX_CONNECTIONS as DEFAULT_MAX_CONNECTIONS
from ._server import DEFAULT_REQUEST_TIMEOUT as DEFAULT_REQUEST_TIMEOUT
from ._server import WebServer as WebServer
from ._streams import DEFAULT_MAX_STREAMS as DEFAULT_MAX_STREAMS

__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_STREAMS",
    "DEFAULT_REQUEST_TIMEOUT",
    "WebPush",
    "WebServer",
    "create_app",
]
