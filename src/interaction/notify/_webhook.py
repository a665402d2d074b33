"""The webhook channel: a signed JSON POST per notice, with an idempotency key."""

from __future__ import annotations

import json
from typing import Final
from urllib.parse import urlsplit

from .._core import AskUserQuestionRequest
from ..signing import SIGNATURE_HEADER, sign_webhook
from ..wire import encode_request
from ._dispatch import DeliveryError, Notice, Outcome
from ._http import post_json

__all__ = ["IDEMPOTENCY_HEADER", "WebhookNotifier", "webhook_body"]

IDEMPOTENCY_HEADER: Final = "Idempotency-Key"
EVENT_HEADER: Final = "Interaction-Event"
_RETRIED_4XX: Final = frozenset({408, 425, 429})


def safe_target(url: str) -> str:
    """A URL as logs may show it: scheme, host and port only (the path, and any user and
    password, may hold a secret)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def webhook_body(event: str, notice: Notice, outcome: Outcome | None = None) -> dict[str, object]:
    """The JSON a webhook receives: the question in wire form (with its provenance), the
    answer link, for a routed notice ``to`` (the user or group) and ``awaiting`` (who has
    yet to approve a quorum question), and for ``settled`` how it ended (``null``: not
    known)."""
    request: AskUserQuestionRequest = notice.request
    body: dict[str, object] = {
        "event": event,
        "id": notice.question_id,
        "step": notice.step,
        "request": encode_request(request),
        "link": notice.link,
    }
    if notice.to is not None:  # a routed notice: for whom, and who has yet to approve
        body["to"] = notice.to
        body["awaiting"] = list(notice.awaiting)
    if event == "settled":
        body["outcome"] = outcome
    return body


class WebhookNotifier:
    """POSTs each notice as JSON to ``url``, signed with ``secret`` (HMAC-SHA256).

    Headers: ``Interaction-Signature: t=<unix seconds>,v1=<hex>`` over ``"<t>." + body``
    (check it with :func:`interaction.signing.verify_webhook`), ``Idempotency-Key``
    (``<question id>.<step>`` for ``pending``, ``.settled`` appended for ``settled``: the
    same on every retry), and ``Interaction-Event``. A 2xx is delivered; a 408, 425, 429 or
    5xx, or no answer, is retried by the dispatcher; any other status is refused for good,
    a redirect too: it is never followed.
    """

    def __init__(self, url: str, secret: bytes | str, *, timeout: float = 10.0) -> None:
        parts = urlsplit(url)
        if parts.scheme not in {"http", "https"} or not parts.hostname:
            raise ValueError("a webhook URL is http:// or https:// with a host")
        sign_webhook(secret, b"")  # a short secret fails here, at start, not per notice
        self.url = url
        self._secret = secret
        self.timeout = timeout
        self.name = f"webhook {safe_target(url)}"

    async def pending(self, notice: Notice) -> None:
        await self._post("pending", notice, notice.idempotency_key, None)

    async def settled(self, notice: Notice, outcome: Outcome | None) -> None:
        await self._post("settled", notice, f"{notice.idempotency_key}.settled", outcome)

    async def _post(self, event: str, notice: Notice, key: str, outcome: Outcome | None) -> None:
        body = json.dumps(
            webhook_body(event, notice, outcome), ensure_ascii=False, separators=(",", ":")
        ).encode()
        headers = {
            "Content-Type": "application/json",
            SIGNATURE_HEADER: sign_webhook(self._secret, body),
            IDEMPOTENCY_HEADER: key,
            EVENT_HEADER: event,
        }
        status = await post_json(self.url, body, headers, seconds=self.timeout, peer="it")
        if 200 <= status < 300:
            return
        permanent = status < 500 and status not in _RETRIED_4XX
        raise DeliveryError(f"it answered {status}", permanent=permanent)
