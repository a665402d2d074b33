"""Signed answer links and webhook signatures (stdlib only).

:class:`AnswerLinks` issues the links that mail and chat messages carry: each is signed
(HMAC-SHA256 with a key the server holds), expires, can be redeemed once, and names one
question, so it lets its holder answer that question and nothing else.
:func:`sign_webhook` and :func:`verify_webhook` sign a webhook body the way GitHub and
Stripe do: an HMAC-SHA256 over the timestamp and the body, sent with the timestamp, so a
receiver can refuse a forged or replayed call.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Final
from urllib.parse import quote

from ._core import UserInteractionError

__all__ = [
    "LINK_REFUSED",
    "SIGNATURE_HEADER",
    "AnswerLinks",
    "sign_webhook",
    "verify_webhook",
]

LINK_REFUSED: Final = "LINK_REFUSED"
"""Code of the error for a link that is altered, expired or already used."""

SIGNATURE_HEADER: Final = "Interaction-Signature"
"""The header of a webhook call's signature: ``t=<unix seconds>,v1=<hex HMAC-SHA256>``."""

MIN_SECRET: Final = 16
"""The fewest bytes a signing key may have."""

MAX_TOKEN: Final = 400
"""The longest link token read: a longer one is refused without any work."""

_VERSION: Final = "v1"


def _key(secret: bytes | str, what: str) -> bytes:
    key = secret.encode() if isinstance(secret, str) else bytes(secret)
    if len(key) < MIN_SECRET:
        raise ValueError(f"{what} must be at least {MIN_SECRET} bytes long")
    return key


def _mac(key: bytes, text: str) -> str:
    digest = hmac.new(key, text.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def _refused(why: str) -> UserInteractionError:
    return UserInteractionError(f"this answer link {why}", LINK_REFUSED)


class AnswerLinks:
    """Issues and redeems signed, expiring, single-use links, each scoped to one question.

    ``secret`` (at least 16 bytes; ``secrets.token_bytes(32)`` by default) signs them;
    ``ttl`` is how many seconds a link lives; ``clock`` is ``time.time`` unless a test
    moves time itself. Spent links are remembered in memory until they expire (at most
    ``max_spent`` of them, the oldest forgotten first, which only makes an old link expire
    early), so a link can be redeemed once in the process that holds this object.
    """

    def __init__(
        self,
        secret: bytes | str | None = None,
        *,
        ttl: float = 12 * 3600,
        clock: Callable[[], float] = time.time,
        max_spent: int = 100_000,
    ) -> None:
        if not ttl > 0:
            raise ValueError("ttl must be a positive number of seconds")
        self._key = _key(secrets.token_bytes(32) if secret is None else secret, "secret")
        self.ttl = ttl
        self._clock = clock
        self._spent: OrderedDict[str, int] = OrderedDict()  # nonce -> expiry
        self._max_spent = max_spent
        self._lock = threading.Lock()

    def token(self, question_id: str, *, user: str | None = None) -> str:
        """A fresh token for ``question_id``: ``v1.<id>.<expiry>.<nonce>[.<user>].<mac>``;
        with ``user`` (a named user, in URL-safe base64), the session it opens answers as
        that user, so a question assigned to them can be answered from it."""
        if not question_id or not question_id.replace("-", "").replace("_", "").isalnum():
            raise ValueError("a question id is URL-safe base64 text")
        expiry = int(self._clock() + self.ttl)
        body = f"{_VERSION}.{question_id}.{expiry}.{secrets.token_urlsafe(12)}"
        if user is not None:
            body += "." + base64.urlsafe_b64encode(user.encode()).decode().rstrip("=")
        return f"{body}.{_mac(self._key, body)}"

    def link(self, question_id: str, base_url: str, *, user: str | None = None) -> str:
        """The answer link for ``question_id`` under ``base_url`` (the page's public URL),
        issued to ``user`` if given (see :meth:`token`)."""
        return f"{base_url.rstrip('/')}/link?t={quote(self.token(question_id, user=user))}"

    def verify(self, token: str) -> str:
        """The question id of a valid link, without spending it; ``LINK_REFUSED`` otherwise.

        The message says why: the link is not valid (altered, or not a link at all), has
        expired, or was already used.
        """
        return self._check(token, spend=False)[0]

    def redeem(self, token: str) -> str:
        """As :meth:`verify`, and spend the link: it is refused from then on."""
        return self._check(token, spend=True)[0]

    def redeem_as(self, token: str) -> tuple[str, str | None]:
        """As :meth:`redeem`, with the user the link was issued to (``None``: nobody)."""
        return self._check(token, spend=True)

    def _check(self, token: str, *, spend: bool) -> tuple[str, str | None]:
        if len(token) > MAX_TOKEN:
            raise _refused("is not valid")
        body, _, mac = token.rpartition(".")
        parts = body.split(".")
        if len(parts) not in (4, 5) or parts[0] != _VERSION:  # version, id, expiry, nonce
            raise _refused("is not valid")
        if not hmac.compare_digest(mac.encode(), _mac(self._key, body).encode()):
            raise _refused("is not valid")
        question_id, expiry_text, nonce = parts[1:4]
        user = None
        if len(parts) == 5:  # signed by us: the base64 of a name
            user = base64.urlsafe_b64decode(parts[4] + "=" * (-len(parts[4]) % 4)).decode()
        expiry = int(expiry_text)  # signed by us: digits
        now = self._clock()
        with self._lock:
            if now >= expiry:
                raise _refused("has expired")
            if nonce in self._spent:
                raise _refused("was already used")
            if spend:
                self._forget(now)
                self._spent[nonce] = expiry
        return question_id, user

    def _forget(self, now: float) -> None:
        while self._spent and (
            len(self._spent) >= self._max_spent or next(iter(self._spent.values())) <= now
        ):
            self._spent.popitem(last=False)


def sign_webhook(secret: bytes | str, body: bytes, timestamp: int | None = None) -> str:
    """The :data:`SIGNATURE_HEADER` value for ``body``: ``t=<ts>,v1=<hex>``, where the hex
    is HMAC-SHA256(secret, ``"<ts>." + body``)."""
    moment = int(time.time()) if timestamp is None else timestamp
    key = _key(secret, "a webhook secret")
    digest = hmac.new(key, f"{moment}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={moment},v1={digest}"


def verify_webhook(
    secret: bytes | str,
    body: bytes,
    header: str,
    *,
    tolerance: float = 300,
    now: float | None = None,
) -> bool:
    """Whether ``header`` signs ``body`` with ``secret`` at a time within ``tolerance``
    seconds of ``now`` (for a receiver: a forged, altered or replayed call is false)."""
    fields: dict[str, str] = {}
    for part in header.split(","):
        name, _, value = part.strip().partition("=")
        fields.setdefault(name, value)
    stamp, given = fields.get("t", ""), fields.get("v1", "")
    if not (stamp.isascii() and stamp.isdigit()) or len(stamp) > 12:
        return False
    moment = time.time() if now is None else now
    if abs(moment - int(stamp)) > tolerance:
        return False
    expected = sign_webhook(secret, body, int(stamp)).partition(",v1=")[2]
    return hmac.compare_digest(given.encode(), expected.encode())
