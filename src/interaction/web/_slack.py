"""Slack's Request URL for interactivity (docs/notify.md): the body read up to the Slack
side's bound and handed to it, which checks the signature and answers at once.

Served with a ``SlackInteractivity`` only, and reached without the token (Slack cannot
send one): each request proves itself with its Slack signature instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from ._json import _error

if TYPE_CHECKING:
    from ..notify import AnswerDesk, SlackInteractivity

__all__ = ["SLACK_PATH", "slack_routes"]

SLACK_PATH: Final = "/slack/interactivity"


def slack_routes(slack: SlackInteractivity, desk: AnswerDesk) -> list[Route]:
    """The Request URL's route: a click answered through ``desk`` (the page's own answer)."""

    async def interaction(request: Request) -> Response:
        most = slack.max_body
        length = request.headers.get("content-length", "0")
        if not (length.isascii() and length.isdigit()) or int(length) > most:
            return _error(413, "TOO_LARGE", f"a Slack payload is at most {most} bytes")
        body = bytearray()
        try:
            async for chunk in request.stream():
                body += chunk
                if len(body) > most:
                    return _error(413, "TOO_LARGE", f"a Slack payload is at most {most} bytes")
        except ClientDisconnect:
            return Response(status_code=400)
        status = slack.receive(bytes(body), request.headers, desk)
        if status == 401:
            return _error(401, "UNAUTHORIZED", "a valid, recent Slack signature is required")
        if status == 400:
            return _error(400, "BAD_PAYLOAD", "not an interaction payload this server handles")
        return Response(status_code=200)

    return [Route(SLACK_PATH, interaction, methods=["POST"])]
