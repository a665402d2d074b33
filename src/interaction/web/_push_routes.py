"""The page's Web Push subscription routes (``WebServer(push=WebPush(...))``).

Behind the same token as the rest of the API (an answer link's one-question session may
not use them). ``GET /api/push`` gives the page the deployment's VAPID public key (the
``applicationServerKey`` it subscribes with); ``POST /api/push/subscribe`` keeps the
browser's subscription for the request's named user, and ``POST /api/push/unsubscribe``
forgets one of theirs. A body is at most :data:`~interaction.push.MAX_SUBSCRIPTION_BODY`
bytes of UTF-8 JSON, read no further; each user keeps at most ``WebPush.per_user``
devices.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .._core import UserInteractionError
from ..push import (
    BAD_SUBSCRIPTION,
    MAX_SUBSCRIPTION_BODY,
    PushStoreUnavailable,
    PushSubscriptionStore,
    parse_subscription,
)

__all__ = ["WebPush", "push_routes"]


@dataclass(frozen=True, slots=True)
class WebPush:
    """What the page needs to offer Web Push: where subscriptions are kept (the relay's
    store, shared with the :class:`~interaction.notify.PushNotifier` that sends), the
    VAPID ``public_key`` (base64url), and how many devices one user may subscribe.
    ``allow_http_loopback`` takes ``http://`` endpoints on a loopback address: for a
    test's stand-in push service only (browsers' push services are all ``https://``)."""

    store: PushSubscriptionStore
    public_key: str
    per_user: int = 10
    allow_http_loopback: bool = False


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def _user(request: Request) -> str | None:
    user = (request.scope.get("state") or {}).get("user")
    return user if isinstance(user, str) else None


async def _body(request: Request) -> object:
    """The request's JSON, at most MAX_SUBSCRIPTION_BODY bytes; BAD_SUBSCRIPTION else."""
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_SUBSCRIPTION_BODY:
                raise UserInteractionError(
                    f"push subscription: more than {MAX_SUBSCRIPTION_BODY} bytes", BAD_SUBSCRIPTION
                )
    except ClientDisconnect:
        raise UserInteractionError("push subscription: the client left", BAD_SUBSCRIPTION) from None
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise UserInteractionError("push subscription: not UTF-8 JSON", BAD_SUBSCRIPTION) from None


def _refused(error: UserInteractionError) -> JSONResponse:
    if isinstance(error, PushStoreUnavailable):
        return _error(503, error.code, error.message)
    status = 413 if "more than" in error.message else 400
    return _error(status, error.code, error.message)


def push_routes(push: WebPush) -> list[Route]:
    """``GET /api/push``, ``POST /api/push/subscribe`` and ``POST /api/push/unsubscribe``."""

    async def offer(request: Request) -> Response:
        return JSONResponse({"publicKey": push.public_key})

    async def subscribe(request: Request) -> Response:
        user = _user(request)
        try:
            subscription = parse_subscription(
                await _body(request), user, allow_http_loopback=push.allow_http_loopback
            )
            theirs = [s for s in await push.store.subscriptions() if s.user == user]
            if len(theirs) >= push.per_user and subscription.endpoint not in {
                s.endpoint for s in theirs
            }:
                message = f"at most {push.per_user} devices are notified per user"
                return _error(409, "TOO_MANY_DEVICES", message)
            await push.store.add(subscription)
        except UserInteractionError as error:
            return _refused(error)
        return Response(status_code=201)

    async def unsubscribe(request: Request) -> Response:
        user = _user(request)
        try:
            data = await _body(request)
            endpoint = data.get("endpoint") if isinstance(data, dict) else None
            if not isinstance(endpoint, str):
                return _error(400, BAD_SUBSCRIPTION, "push subscription: no endpoint")
            mine = any(
                s.endpoint == endpoint and s.user == user for s in await push.store.subscriptions()
            )
            if not mine or not await push.store.remove(endpoint):
                return _error(404, "NOT_FOUND", "this device is not subscribed")
        except UserInteractionError as error:
            return _refused(error)
        return Response(status_code=204)

    return [
        Route("/api/push", offer),
        Route("/api/push/subscribe", subscribe, methods=["POST"]),
        Route("/api/push/unsubscribe", unsubscribe, methods=["POST"]),
    ]
