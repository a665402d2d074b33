"""Signed answer links and webhook signatures (stdlib only).

:class:`AnswerLinks` issues the links that mail and chat messages carry: each is signed
(HMAC-SHA256 with a key the server holds), expires, can be redeemed once, and names one
question, so it lets its holder answer that question and nothing else. Where the used
links are kept is a :class:`UsedLinkStore`: :class:`MemoryUsedLinks` (the default) in this
process, ``RedisUsedLinks`` (:mod:`interaction.redis`) or ``PostgresUsedLinks``
(:mod:`interaction.postgres`) for every worker of a deployment and across restarts.
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
from typing import Final, Protocol
from urllib.parse import quote

from ._core import UserInteractionError

__all__ = [
    "LINK_REFUSED",
    "LINK_STORE_UNAVAILABLE",
    "SIGNATURE_HEADER",
    "AnswerLinks",
    "MemoryUsedLinks",
    "UsedLinkStore",
    "sign_webhook",
    "verify_webhook",
]

LINK_REFUSED: Final = "LINK_REFUSED"
"""Code of the error for a link that is altered, expired or already used."""

LINK_STORE_UNAVAILABLE: Final = "LINK_STORE_UNAVAILABLE"
"""Code of the error of a used-link store that cannot be reached or did not answer: the
link is refused, not redeemed (the page says to try again)."""

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


class UsedLinkStore(Protocol):
    """Where the nonces of redeemed answer links are kept until the links expire.

    ``use`` must be atomic: of two concurrent calls with one nonce (in one process or in
    several sharing the store), exactly one returns ``True``. ``expires_at`` is the link's
    expiry in Unix seconds; the nonce need not be kept past it (:class:`AnswerLinks`
    refuses an expired link before it asks the store). A store that cannot answer raises
    a :class:`~interaction.UserInteractionError` with code :data:`LINK_STORE_UNAVAILABLE`;
    the link is then refused (never redeemed unrecorded).
    """

    async def used(self, nonce: str) -> bool:
        """Whether ``nonce`` was used (and not yet forgotten)."""
        ...

    async def use(self, nonce: str, expires_at: float) -> bool:
        """Record ``nonce`` as used; ``True`` if it was not used before."""
        ...


class MemoryUsedLinks:
    """The links used in this process, forgotten once they expire (at most ``max_kept``
    of them, the oldest forgotten first, which only makes an old link expire early).

    Enough for one process; a deployment with several workers, or that restarts while
    its links live, uses a shared store (``RedisUsedLinks``, ``PostgresUsedLinks``).
    ``clock`` is ``time.time`` unless a test moves time itself. Its synchronous
    :meth:`seen` and :meth:`take` serve :meth:`AnswerLinks.verify` and
    :meth:`AnswerLinks.redeem`.
    """

    def __init__(self, *, max_kept: int = 100_000, clock: Callable[[], float] = time.time) -> None:
        if max_kept < 1:
            raise ValueError("max_kept must be at least 1")
        self._kept: OrderedDict[str, float] = OrderedDict()  # nonce -> expiry, oldest first
        self._max_kept = max_kept
        self._clock = clock
        self._lock = threading.Lock()  # one store may serve servers on several threads

    def __len__(self) -> int:
        """How many nonces are remembered now."""
        return len(self._kept)

    def seen(self, nonce: str) -> bool:
        """Whether ``nonce`` was used."""
        with self._lock:
            return nonce in self._kept

    def take(self, nonce: str, expires_at: float) -> bool:
        """Record ``nonce`` as used; ``True`` if it was not used before."""
        with self._lock:
            if nonce in self._kept:
                return False
            now = self._clock()
            kept = self._kept
            while kept and (len(kept) >= self._max_kept or next(iter(kept.values())) <= now):
                kept.popitem(last=False)
            kept[nonce] = expires_at
            return True

    async def used(self, nonce: str) -> bool:
        return self.seen(nonce)

    async def use(self, nonce: str, expires_at: float) -> bool:
        return self.take(nonce, expires_at)


class AnswerLinks:
    """Issues and redeems signed, expiring, single-use links, each scoped to one question.

    ``secret`` (at least 16 bytes; ``secrets.token_bytes(32)`` by default) signs them;
    ``ttl`` is how many seconds a link lives; ``clock`` is ``time.time`` unless a test
    moves time itself. ``used`` keeps the used links: by default a
    :class:`MemoryUsedLinks` of at most ``max_spent`` of them, so a link can be redeemed
    once in the process that holds this object; a shared :class:`UsedLinkStore` makes it
    once across every worker holding the same ``secret`` and store. :meth:`verify` and
    :meth:`redeem` ask the in-memory store; :meth:`averify` and :meth:`aredeem` any store.
    """

    def __init__(
        self,
        secret: bytes | str | None = None,
        *,
        ttl: float = 12 * 3600,
        clock: Callable[[], float] = time.time,
        max_spent: int = 100_000,
        used: UsedLinkStore | None = None,
    ) -> None:
        if not ttl > 0:
            raise ValueError("ttl must be a positive number of seconds")
        self._key = _key(secrets.token_bytes(32) if secret is None else secret, "secret")
        self.ttl = ttl
        self._clock = clock
        self.used: UsedLinkStore = (
            MemoryUsedLinks(max_kept=max_spent, clock=clock) if used is None else used
        )
        """Where the used links are kept."""

    def token(self, question_id: str) -> str:
        """A fresh token for ``question_id``: ``v1.<id>.<expiry>.<nonce>.<mac>``."""
        if not question_id or not question_id.replace("-", "").replace("_", "").isalnum():
            raise ValueError("a question id is URL-safe base64 text")
        expiry = int(self._clock() + self.ttl)
        body = f"{_VERSION}.{question_id}.{expiry}.{secrets.token_urlsafe(12)}"
        return f"{body}.{_mac(self._key, body)}"

    def link(self, question_id: str, base_url: str) -> str:
        """The answer link for ``question_id`` under ``base_url`` (the page's public URL)."""
        return f"{base_url.rstrip('/')}/link?t={quote(self.token(question_id))}"

    def verify(self, token: str) -> str:
        """The question id of a valid link, without spending it; ``LINK_REFUSED`` otherwise.

        The message says why: the link is not valid (altered, or not a link at all), has
        expired, or was already used. With a shared store, use :meth:`averify`.
        """
        question_id, nonce, _ = self._read(token)
        if self._memory().seen(nonce):
            raise _refused("was already used")
        return question_id

    def redeem(self, token: str) -> str:
        """As :meth:`verify`, and spend the link: it is refused from then on."""
        question_id, nonce, expiry = self._read(token)
        if not self._memory().take(nonce, expiry):
            raise _refused("was already used")
        return question_id

    async def averify(self, token: str) -> str:
        """:meth:`verify`, asking :attr:`used` (any store); ``LINK_STORE_UNAVAILABLE`` if
        it cannot answer."""
        question_id, nonce, _ = self._read(token)
        if await self.used.used(nonce):
            raise _refused("was already used")
        return question_id

    async def aredeem(self, token: str) -> str:
        """:meth:`redeem`, recording the link in :attr:`used` (any store): of the workers
        sharing the store, one redeems it."""
        question_id, nonce, expiry = self._read(token)
        if not await self.used.use(nonce, expiry):
            raise _refused("was already used")
        return question_id

    def _memory(self) -> MemoryUsedLinks:
        if not isinstance(self.used, MemoryUsedLinks):
            raise TypeError(
                "these links are kept in a shared store: use `await links.averify(token)`"
                " or `await links.aredeem(token)`"
            )
        return self.used

    def _read(self, token: str) -> tuple[str, str, int]:
        """The question id, nonce and expiry of a signed, unexpired token."""
        if len(token) > MAX_TOKEN:
            raise _refused("is not valid")
        body, _, mac = token.rpartition(".")
        parts = body.split(".")
        if len(parts) != 4 or parts[0] != _VERSION:  # version, id, expiry, nonce
            raise _refused("is not valid")
        if not hmac.compare_digest(mac.encode(), _mac(self._key, body).encode()):
            raise _refused("is not valid")
        _, question_id, expiry_text, nonce = parts
        expiry = int(expiry_text)  # signed by us: digits
        if self._clock() >= expiry:
            raise _refused("has expired")
        return question_id, nonce, expiry


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
