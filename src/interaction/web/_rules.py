"""The page's view of the policy rules: list, add and revoke (``WebServer(rules=...)``).

Behind the same token as the rest of the API. A rule added here is made by
:func:`interaction.policies.new_rule` (the same checks as the CLI) and credited to
``web``, or ``web:<name>`` when a named user's token added it; the body is at most
``MAX_RULE_BODY`` bytes of UTF-8 JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .._core import NOT_ASSIGNED, UserInteractionError
from ..policies import RuleStore, RuleStoreError, new_rule, rule_to_json

__all__ = ["MAX_RULE_BODY", "rule_routes"]

MAX_RULE_BODY: Final = 8 * 1024
"""The largest body ``POST /api/rules`` reads, in bytes (a spec is at most 4,096 chars)."""


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def _refused(error: UserInteractionError) -> JSONResponse:
    status = 503 if isinstance(error, RuleStoreError) else 400
    return _error(status, error.code, error.message)


def _user(request: Request) -> str | None:
    user = (request.scope.get("state") or {}).get("user")
    return user if isinstance(user, str) else None


def _not_allowed(user: str | None) -> JSONResponse:
    who = "someone unnamed" if user is None else repr(user)
    message = f"the rules are assigned to others: {who} may not change them"
    return _error(403, NOT_ASSIGNED, message)


def rule_routes(
    store: RuleStore, may_change: Callable[[str | None], bool] = lambda user: True
) -> list[Route]:
    """``GET /api/rules``, ``POST /api/rules`` and ``POST /api/rules/{id}/revoke``; an
    add or revoke by a user ``may_change`` refuses is ``403 NOT_ASSIGNED``."""

    async def listing(request: Request) -> Response:
        try:
            rules = await store.rules()
        except UserInteractionError as error:
            return _refused(error)
        return JSONResponse({"rules": [rule_to_json(rule) for rule in rules]})

    async def add(request: Request) -> Response:
        if not may_change(_user(request)):
            return _not_allowed(_user(request))
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_RULE_BODY:
                return _error(413, "TOO_LARGE", f"a rule is at most {MAX_RULE_BODY} bytes")
        try:
            data = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            return _error(400, "BAD_REQUEST", "a rule is a JSON object: {spec, effect, source?}")
        if not isinstance(data, dict) or not isinstance(data.get("spec"), str):
            return _error(400, "BAD_REQUEST", "a rule is a JSON object: {spec, effect, source?}")
        effect, source = data.get("effect", "allow"), data.get("source")
        if effect not in ("allow", "deny") or not (source is None or isinstance(source, str)):
            return _error(400, "BAD_REQUEST", "effect is allow or deny; source is text")
        user = _user(request)
        by = "web" if user is None else f"web:{user}"
        try:
            rule = new_rule(data["spec"], effect, source=source or None, created_by=by)
            await store.add(rule)
        except UserInteractionError as error:
            return _refused(error)
        return JSONResponse(rule_to_json(rule), status_code=201)

    async def revoke(request: Request) -> Response:
        if not may_change(_user(request)):
            return _not_allowed(_user(request))
        try:
            found = await store.revoke(request.path_params["id"])
        except UserInteractionError as error:
            return _refused(error)
        if not found:
            return _error(404, "NOT_FOUND", "there is no such rule")
        return Response(status_code=204)

    return [
        Route("/api/rules", listing),
        Route("/api/rules", add, methods=["POST"]),
        Route("/api/rules/{id}/revoke", revoke, methods=["POST"]),
    ]
