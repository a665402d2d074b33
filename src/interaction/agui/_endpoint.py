"""The AG-UI endpoint: an ASGI app that runs an agent step per ``RunAgentInput``.

``POST`` a ``RunAgentInput`` (JSON); the answer is the run's events as server-sent events,
encoded by ``ag-ui-protocol``'s ``EventEncoder``: ``RUN_STARTED``, then the event that
:meth:`AGUIProvider.run` gives. The same token, ``Host`` and ``Origin`` rules as the web
page guard it (``interaction.web``), so it runs on its own or mounted beside the page.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from typing import TypeAlias

from ag_ui.core import RunAgentInput, RunStartedEvent
from ag_ui.encoder import EventEncoder
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from .._core import ErrorCode, UserInteractionError, fault
from ..web._guard import LOOPBACK_NAMES, _Guard
from ..web._json import _error, _is_json
from ..wire import json_too_deep
from ._interrupts import AGUIInterrupts, AGUIProvider
from ._limits import MAX_INPUT_BYTES

__all__ = ["AGUIEndpoint", "Step"]

Step: TypeAlias = Callable[[RunAgentInput], Awaitable[object]]
"""The agent's step: given the run's input, its result (any JSON value), which ends the run
as ``RUN_FINISHED.result``. It may call ``interaction.ask()`` and the helpers as it needs."""


class _Refused(Exception):
    """A body that is not a ``RunAgentInput`` this endpoint reads: no run starts."""

    def __init__(self, status: int, error: UserInteractionError) -> None:
        super().__init__(error.message)
        self.status = status
        self.error = error


def _bad(path: str, problem: str) -> UserInteractionError:
    return fault(ErrorCode.BAD_REQUEST, path, problem)


class AGUIEndpoint:
    """An ASGI app serving ``step`` to AG-UI clients (``HttpAgent`` of ``@ag-ui/client``).

    Every request needs ``token`` (``Authorization: Bearer``), a ``Host`` among ``hosts``
    (by default the loopback names, on any port) and no ``Origin`` but ``http://<Host>``
    or one of ``origins``, as on the web page. ``POST`` a ``RunAgentInput`` anywhere under
    the app (``/`` on its own, ``/agui/`` when mounted at ``/agui``): the step runs and
    the answer streams the run's events. An ask of the step ends the run with an
    interrupt; the next run's resume entry answers it (:class:`AGUIProvider`).
    ``interrupts`` signs and redeems the interrupts: give every worker of a deployment
    the same secret and a shared store.
    """

    def __init__(
        self,
        step: Step,
        *,
        token: str,
        interrupts: AGUIInterrupts | None = None,
        hosts: Collection[str] = LOOPBACK_NAMES,
        origins: Collection[str] = (),
    ) -> None:
        if not token:
            raise ValueError("the AG-UI endpoint needs a token")
        self.step = step
        self.interrupts = interrupts if interrupts is not None else AGUIInterrupts()
        starlette = Starlette(
            routes=[Route("/{path:path}", self._run, methods=["POST"])],
            exception_handlers={HTTPException: self._http_error},
        )
        self._app = _Guard(starlette, token, hosts, None, origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)

    async def _http_error(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 405:
            return _error(405, "METHOD_NOT_ALLOWED", "an AG-UI run is started with POST")
        return _error(exc.status_code, "HTTP_ERROR", str(exc.detail))

    async def _run(self, request: Request) -> Response:
        media = request.headers.get("content-type")
        if media is None or not (media == "application/json" or _is_json(media)):
            return _error(415, "UNSUPPORTED_MEDIA_TYPE", "a RunAgentInput is sent as JSON")
        try:
            run_input = await self._read(request)
        except _Refused as refused:
            return _error(refused.status, refused.error.code, refused.error.message)
        encoder = EventEncoder()
        return StreamingResponse(self._events(run_input, encoder), media_type="text/event-stream")

    async def _read(self, request: Request) -> RunAgentInput:
        """The body as a ``RunAgentInput``: UTF-8 JSON of at most ``MAX_INPUT_BYTES`` bytes
        (``BAD_REQUEST`` otherwise, naming the first fault)."""
        body = bytearray()
        try:
            async for chunk in request.stream():
                body += chunk
                if len(body) > MAX_INPUT_BYTES:
                    problem = f"longer than {MAX_INPUT_BYTES} bytes"
                    raise _Refused(413, _bad("RunAgentInput", problem))
        except ClientDisconnect:
            raise _Refused(400, _bad("RunAgentInput", "the client left")) from None
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            raise _Refused(400, _bad("RunAgentInput", "not valid UTF-8")) from None
        if json_too_deep(text):
            raise _Refused(400, _bad("RunAgentInput", "nested too deep"))
        try:
            return RunAgentInput.model_validate_json(text)
        except ValidationError as exc:
            first = exc.errors(include_url=False, include_input=False)[0]
            where = ".".join(str(part) for part in first["loc"]) or "RunAgentInput"
            raise _Refused(400, _bad(where, str(first["msg"]))) from None

    async def _events(self, run_input: RunAgentInput, encoder: EventEncoder) -> AsyncIterator[str]:
        yield encoder.encode(
            RunStartedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id)
        )
        provider = AGUIProvider(run_input, self.interrupts)
        yield encoder.encode(await provider.run(lambda: self.step(run_input)))
