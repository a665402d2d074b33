"""The Web Push channel: a notice to every subscribed device, encrypted to it (RFC 8291)
and signed with the deployment's VAPID key (RFC 8292), through ``pywebpush``.

The payload is JSON the page's service worker shows as a notification: who asks and what
(or, with ``private``, who asks and how many questions wait, and no question text), and
where a tap leads. A device whose push service answers 404 or 410 has gone: its
subscription is removed. A 429, a 5xx or no answer is retried by the dispatcher (only for
the devices still owed the notice); any other answer gives up on that device's notice.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from py_vapid import Vapid02
from pywebpush import WebPusher

from .._core import Assignment, Team, UserInteractionError, may_see
from ..push import PushSubscription, PushSubscriptionStore
from ._dispatch import DeliveryError, Notice, Outcome
from ._http import post_json
from ._text import cut

__all__ = ["DEFAULT_TTL", "MAX_PAYLOAD", "PushNotifier", "VapidKeys", "push_payload"]

log: Final = logging.getLogger("interaction.notify")

DEFAULT_TTL: Final = 3_600
"""Seconds a push service keeps a notice for a device that is offline (the ``TTL``)."""
MAX_PAYLOAD: Final = 3_072
"""The largest payload sent, in bytes (push services take 4096 with the encryption's own)."""
_GONE: Final = frozenset({404, 410})
_RETRIED: Final = frozenset({408, 425, 429})
_SENT_KEPT: Final = 1_000
_JSON: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_JWT_SECONDS: Final = 12 * 3600
"""How long a VAPID token is valid (RFC 8292 allows at most 24 hours)."""


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@dataclass(frozen=True, slots=True)
class VapidKeys:
    """A VAPID key pair: ``private`` (the 32-byte P-256 private value) and ``public`` (the
    65-byte uncompressed point, the page's ``applicationServerKey``), both base64url."""

    private: str
    public: str

    @classmethod
    def generate(cls) -> VapidKeys:
        """A fresh pair (``interaction push keys`` makes one once per deployment)."""
        key = ec.generate_private_key(ec.SECP256R1())
        return cls._of(key)

    @classmethod
    def from_private(cls, private: str) -> VapidKeys:
        """The pair of a private key given as base64url; ``ValueError`` (never showing
        the key) when it is not one."""
        text = private.strip()
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
            if len(raw) != 32:
                raise ValueError
            key = ec.derive_private_key(int.from_bytes(raw, "big"), ec.SECP256R1())
        except ValueError:
            raise ValueError(
                "the VAPID private key is not 32 bytes of base64url"
                " (make one with: interaction push keys --out PATH)"
            ) from None
        return cls._of(key)

    @classmethod
    def _of(cls, key: ec.EllipticCurvePrivateKey) -> VapidKeys:
        private = key.private_numbers().private_value.to_bytes(32, "big")
        public = key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return cls(_b64(private), _b64(public))

    def __repr__(self) -> str:  # the private key never reaches a log
        return f"VapidKeys(public={self.public!r})"


def push_payload(notice: Notice, *, private: bool, waiting: int) -> bytes:
    """The JSON a device receives: ``id``, ``source``, ``title``, ``body``, ``count`` (the
    questions this channel knows to wait) and ``url`` (the notice's answer link, or
    ``null``: the page's service worker then opens the page on the question). With
    ``private``, ``body`` holds the count and never the question's text. At most
    :data:`MAX_PAYLOAD` bytes: the texts are cut to fit."""
    view = notice.view
    source = view.provenance.source if view.provenance is not None else None
    source = cut(source, 60) if source else None
    title = f"Question from {source}" if source else "A question waits"
    if private:
        body = "1 question waits" if waiting == 1 else f"{waiting} questions wait"
    else:
        first = view.questions[0]
        line = first.question.split("\n", 1)[0]
        body = f"{first.header}: {line}" if first.header else line
        if len(view.questions) > 1:
            body = f"{cut(body, 200)} (+{len(view.questions) - 1} more)"
        body = cut(body, 240)
    data = {
        "id": notice.question_id,
        "source": source,
        "title": title,
        "body": body,
        "count": waiting,
        "url": notice.link,
    }
    encoded = _JSON.encode(data).encode()
    if len(encoded) > MAX_PAYLOAD:  # a very long link: the page's own way instead
        encoded = _JSON.encode({**data, "url": None}).encode()
    return encoded


class PushNotifier:
    """Sends each notice to every device in ``store`` with Web Push.

    ``keys`` is the deployment's VAPID pair (the private key from the environment, see
    docs/notify.md), ``subject`` its contact (``mailto:`` or ``https:``) that push
    services see in the token. ``private`` keeps the question's text out of the payload
    (who asks and a count only). ``ttl`` is how long a push service holds a notice for a
    device that is offline; ``timeout`` bounds each POST. A question assigned to some
    people goes to their devices only (and to the devices of ``team``'s ``see_all`` users,
    and of nobody named), as the page shows it; ``team`` resolves its groups, and
    ``default_assignment`` (the page's, ``serve --assign-default``) assigns a question that
    names nobody.
    """

    def __init__(
        self,
        store: PushSubscriptionStore,
        keys: VapidKeys,
        *,
        subject: str,
        private: bool = False,
        ttl: int = DEFAULT_TTL,
        timeout: float = 10.0,
        team: Team | None = None,
        default_assignment: Assignment | None = None,
    ) -> None:
        parts = urlsplit(subject)
        if parts.scheme not in {"mailto", "https"} or not (parts.path or parts.netloc):
            raise ValueError("the VAPID subject is a mailto: or https: URL (your contact)")
        if type(ttl) is not int or ttl < 0:
            raise ValueError("ttl is a number of seconds, 0 or more")
        self.store = store
        self.keys = keys
        self.subject = subject
        self.private = private
        self.ttl = ttl
        self.timeout = timeout
        self.team = team
        self.default_assignment = default_assignment
        self.name = "web push"
        self._vapid = Vapid02.from_raw(keys.private.encode())
        self._waiting: OrderedDict[str, None] = OrderedDict()  # told of, not yet settled
        self._sent: OrderedDict[str, set[str]] = OrderedDict()  # notice key -> endpoints done

    async def pending(self, notice: Notice) -> None:
        self._waiting[notice.question_id] = None
        while len(self._waiting) > _SENT_KEPT:  # a notice given up on is never settled here
            self._waiting.popitem(last=False)
        done = self._sent.setdefault(notice.idempotency_key, set())
        while len(self._sent) > _SENT_KEPT:
            self._sent.popitem(last=False)
        payload = push_payload(notice, private=self.private, waiting=len(self._waiting))
        owed = [
            s
            for s in await self.store.subscriptions()
            if s.endpoint not in done and self._shown(s.user, notice)
        ]
        failed = 0
        results = await asyncio.gather(*(self._send(s, payload) for s in owed))
        for subscription, result in zip(owed, results, strict=True):
            if result in {"sent", "refused"}:
                done.add(subscription.endpoint)
            elif result == "gone":
                done.add(subscription.endpoint)
                try:
                    await self.store.remove(subscription.endpoint)
                except UserInteractionError as error:  # removed when it answers so again
                    log.warning("notify: web push: a gone device was not removed: %s", error.code)
                else:
                    log.info(
                        "notify: web push: a device has gone (its push service said so); removed"
                    )
            else:
                failed += 1
        if failed:
            raise DeliveryError(f"{failed} of {len(owed)} devices could not be reached")

    def _shown(self, user: str | None, notice: Notice) -> bool:
        """Whether ``user``'s page shows the question: the device is told of it then."""
        return may_see(self.team, user, notice.request, self.default_assignment)

    async def settled(self, notice: Notice, outcome: Outcome | None) -> None:
        self._waiting.pop(notice.question_id, None)
        self._sent.pop(notice.idempotency_key, None)

    def _headers(self, endpoint: str) -> dict[str, str]:
        parts = urlsplit(endpoint)
        claims: dict[str, str | int] = {
            "sub": self.subject,
            "aud": f"{parts.scheme}://{parts.netloc}",
            "exp": int(time.time()) + _JWT_SECONDS,
        }
        signed: dict[str, str] = self._vapid.sign(claims)
        return {
            **signed,
            "Content-Encoding": "aes128gcm",
            "Content-Type": "application/octet-stream",
            "TTL": str(self.ttl),
            "Urgency": "high",
        }

    async def _send(self, subscription: PushSubscription, payload: bytes) -> str:
        """``sent``, ``gone`` (404, 410), ``refused`` (another 4xx: not retried) or
        ``failed`` (to be retried)."""
        info = {
            "endpoint": subscription.endpoint,
            "keys": {"p256dh": subscription.p256dh, "auth": subscription.auth},
        }
        body = WebPusher(info).encode(payload, "aes128gcm")["body"]
        try:
            status = await post_json(
                subscription.endpoint,
                body,
                self._headers(subscription.endpoint),
                seconds=self.timeout,
                peer="the push service",
            )
        except DeliveryError as error:
            if error.permanent:  # a redirect: never followed
                log.error("notify: web push: %s", error)
                return "refused"
            return "failed"
        if 200 <= status < 300:
            return "sent"
        if status in _GONE:
            return "gone"
        if status >= 500 or status in _RETRIED:
            return "failed"
        log.error("notify: web push: the push service refused a notice (%d)", status)
        return "refused"
