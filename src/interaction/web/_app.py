"""The ASGI app: the page, the JSON API and the event stream, behind the token."""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator, Collection
from importlib import resources
from typing import Final

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .._core import ErrorCode, UserInteractionError, is_plan_review
from ..relay import NOT_PENDING, PendingQuestion, Relay, RelayEvent, Subscription
from ..wire import decode_answer, encode_answer, encode_request

__all__ = ["create_app"]

_ASSETS: Final = resources.files("interaction.web") / "static"
MAX_BODY: Final = 1 << 20
KEEPALIVE_SECONDS: Final = 15.0


def question_json(question: PendingQuestion) -> dict[str, object]:
    """A pending question as the page and API clients receive it."""
    return {
        "id": question.id,
        "request": encode_request(question.request),
        "planReview": is_plan_review(question.request),
    }


def _event_json(event: RelayEvent) -> str:
    if event.kind == "requested":
        assert event.question is not None
        data: dict[str, object] = question_json(event.question)
    else:
        data = {"id": event.id, "outcome": event.outcome}
    return f"event: {event.kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


class _Guard:
    """Token, Host and Origin checks before anything else answers, and safe headers after."""

    def __init__(self, app: ASGIApp, token: str, hosts: Collection[str]) -> None:
        self.app = app
        self.token = token.encode()
        self.hosts = {h.lower() for h in hosts}

    def _refuse(self, scope: Scope) -> Response | None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "").lower()
        if host not in self.hosts:
            return _error(421, "BAD_HOST", "this server does not answer for that Host")
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in {f"http://{h}" for h in self.hosts}:
            return _error(403, "BAD_ORIGIN", "cross-site requests are refused")
        given = headers.get("authorization", "").removeprefix("Bearer ").strip()
        if not given:
            query = Request(scope).query_params
            given = query.get("token", "")
        if not secrets.compare_digest(given.encode(), self.token):
            return _error(401, "UNAUTHORIZED", "a valid token is required")
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refuse(scope)

        async def send_safely(message: dict[str, object]) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))  # type: ignore[call-overload]
                headers.extend(_SECURITY_HEADERS)
                message = {**message, "headers": headers}
            await send(message)

        if refusal is not None:
            await refusal(scope, receive, send_safely)  # type: ignore[arg-type]
            return
        await self.app(scope, receive, send_safely)  # type: ignore[arg-type]


_SECURITY_HEADERS: Final = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
    (b"x-frame-options", b"DENY"),
]


async def _stream(subscription: Subscription) -> AsyncIterator[str]:
    """The SSE text of ``subscription``, with a keep-alive comment after each idle spell.

    One pending ``next()`` survives keep-alives: ``wait_for`` would cancel it, and with it
    the subscription's generator, ending the stream.
    """
    iterator = aiter(subscription)
    step: asyncio.Future[RelayEvent] = asyncio.ensure_future(anext(iterator))
    try:
        yield ": connected\n\n"
        while True:
            done, _ = await asyncio.wait({step}, timeout=KEEPALIVE_SECONDS)
            if not done:
                yield ": keep-alive\n\n"
                continue
            try:
                event = step.result()
            except StopAsyncIteration:
                return
            yield _event_json(event)
            step = asyncio.ensure_future(anext(iterator))
    finally:
        step.cancel()
        subscription.close()


def create_app(
    relay: Relay, *, token: str, hosts: Collection[str] = ("127.0.0.1", "localhost")
) -> ASGIApp:
    """The app over ``relay``. ``hosts`` are the ``Host`` values it answers (with the port)."""
    page = (_ASSETS / "page.html").read_text("utf-8")
    script = (_ASSETS / "app.js").read_text("utf-8")
    style = (_ASSETS / "app.css").read_text("utf-8")

    async def index(request: Request) -> Response:
        nonce = secrets.token_urlsafe(16)
        html = (
            page.replace("{{nonce}}", nonce)
            .replace("{{style}}", style)
            .replace("{{script}}", script)
        )
        csp = (
            f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}';"
            " connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none';"
            " frame-ancestors 'none'"
        )
        return Response(html, media_type="text/html", headers={"content-security-policy": csp})

    async def list_questions(request: Request) -> Response:
        return JSONResponse({"questions": [question_json(q) for q in relay.pending()]})

    async def read_json(request: Request) -> bytes:
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY:
                raise UserInteractionError("the answer is too large", ErrorCode.BAD_ANSWER)
        return body

    async def answer(request: Request) -> Response:
        question_id = request.path_params["id"]
        question = relay.get(question_id)
        if question is None:
            return _error(409, NOT_PENDING, f"question {question_id!r} is not pending")
        try:
            decoded = decode_answer(await read_json(request), question.request)
            checked = relay.answer(question_id, decoded)
        except UserInteractionError as error:
            status = 409 if error.code == NOT_PENDING else 400
            return _error(status, error.code, error.message)
        return JSONResponse(encode_answer(checked))

    async def cancel(request: Request) -> Response:
        try:
            relay.cancel(request.path_params["id"])
        except UserInteractionError as error:
            return _error(409, error.code, error.message)
        return Response(status_code=204)

    async def ping(request: Request) -> Response:
        return Response(status_code=204)

    async def events(request: Request) -> Response:
        subscription = relay.subscribe()

        return StreamingResponse(_stream(subscription), media_type="text/event-stream")

    routes = [
        Route("/", index),
        Route("/api/questions", list_questions),
        Route("/api/questions/{id}/answer", answer, methods=["POST"]),
        Route("/api/questions/{id}/cancel", cancel, methods=["POST"]),
        Route("/api/events", events),
        Route("/api/ping", ping, methods=["POST"]),
    ]
    return _Guard(Starlette(routes=routes), token, hosts)
