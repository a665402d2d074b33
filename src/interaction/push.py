"""Web Push subscriptions: the devices a page was told to notify, and where they are kept.

A browser that subscribes with the Push API gives the page an ``endpoint`` (the push
service's URL for this device) and two keys: ``p256dh`` (the device's ECDH P-256 public
key) and ``auth`` (16 secret bytes), both base64url. :func:`parse_subscription` checks
what a page sent (it is untrusted); :class:`PushSubscriptionStore` is the seam where
subscriptions are kept, by endpoint, each with the named user who subscribed it:
:class:`MemoryPushSubscriptionStore` here, ``RedisPushSubscriptionStore``
(:mod:`interaction.redis`, extra ``[redis]``) and ``PostgresPushSubscriptionStore``
(:mod:`interaction.postgres`, extra ``[postgres]``) shared with the relay. The sender is
``interaction.notify.PushNotifier`` (extra ``[notify]``); see docs/notify.md.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol
from urllib.parse import urlsplit

from ._core import UserInteractionError

__all__ = [
    "BAD_SUBSCRIPTION",
    "MAX_ENDPOINT",
    "MAX_SUBSCRIPTION_BODY",
    "PUSH_STORE_UNAVAILABLE",
    "MemoryPushSubscriptionStore",
    "PushStoreUnavailable",
    "PushSubscription",
    "PushSubscriptionStore",
    "parse_subscription",
]

BAD_SUBSCRIPTION: Final = "BAD_SUBSCRIPTION"
"""The code of a subscription that is not one a browser makes."""
PUSH_STORE_UNAVAILABLE: Final = "PUSH_STORE_UNAVAILABLE"
"""The code of a subscription store that cannot be reached."""
MAX_ENDPOINT: Final = 2_048
"""The longest endpoint URL taken (the push services' are a few hundred characters)."""
MAX_SUBSCRIPTION_BODY: Final = 4_096
"""The largest subscription JSON a page may send, in bytes."""
_BASE64URL: Final = re.compile(r"[A-Za-z0-9_-]*={0,2}", re.ASCII)


class PushStoreUnavailable(UserInteractionError):
    """A subscription store that cannot be reached (:data:`PUSH_STORE_UNAVAILABLE`); its
    message says where, never credentials."""

    def __init__(self, message: str) -> None:
        super().__init__(message, PUSH_STORE_UNAVAILABLE)


@dataclass(frozen=True, slots=True)
class PushSubscription:
    """One device to notify: its push service ``endpoint``, its keys (base64url, as the
    browser gave them) and the named ``user`` who subscribed it (``None`` on a page with
    one token)."""

    endpoint: str
    p256dh: str
    auth: str
    user: str | None = None

    def to_json(self) -> str:
        """The subscription as the shared stores keep it."""
        return json.dumps(
            {
                "endpoint": self.endpoint,
                "p256dh": self.p256dh,
                "auth": self.auth,
                "user": self.user,
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> PushSubscription:
        """A subscription a shared store kept; :data:`BAD_SUBSCRIPTION` when it is not one
        (another writer's row, say), never a subscription with a bad key."""
        try:
            data = json.loads(text)
        except ValueError:
            raise _bad("a stored subscription is not JSON") from None
        if not isinstance(data, dict):
            raise _bad("a stored subscription is not a JSON object")
        user = data.get("user")
        if user is not None and not isinstance(user, str):
            raise _bad("a stored subscription's user is not a string")
        keys = {"p256dh": data.get("p256dh"), "auth": data.get("auth")}
        # Checked as the route checked it on the way in; a loopback http:// endpoint (a
        # test's stand-in) stays readable where it was allowed in.
        entry = {"endpoint": data.get("endpoint"), "keys": keys}
        return parse_subscription(entry, user, allow_http_loopback=True)


class PushSubscriptionStore(Protocol):
    """Where subscriptions are kept, one per endpoint.

    ``add`` keeps a subscription, replacing one with the same endpoint (a device that
    subscribes again, or that another user signed in on); ``subscriptions`` are all of
    them, in no set order; ``remove`` forgets an endpoint (the push service said it is
    gone, or its user unsubscribed) and says whether it was there. A store that cannot
    be reached raises :class:`PushStoreUnavailable`.
    """

    async def add(self, subscription: PushSubscription) -> None: ...

    async def subscriptions(self) -> Sequence[PushSubscription]: ...

    async def remove(self, endpoint: str) -> bool: ...


class MemoryPushSubscriptionStore:
    """Subscriptions in this process: the demo, tests, a single server without a relay
    store (they are gone after a restart: each device then subscribes again)."""

    def __init__(self) -> None:
        self._by_endpoint: dict[str, PushSubscription] = {}

    async def add(self, subscription: PushSubscription) -> None:
        self._by_endpoint[subscription.endpoint] = subscription

    async def subscriptions(self) -> Sequence[PushSubscription]:
        return list(self._by_endpoint.values())

    async def remove(self, endpoint: str) -> bool:
        return self._by_endpoint.pop(endpoint, None) is not None


def _bad(message: str) -> UserInteractionError:
    return UserInteractionError(f"push subscription: {message}", BAD_SUBSCRIPTION)


def _b64url(value: object, name: str, size: int) -> str:
    """``value`` if it is base64url (padded or not) of ``size`` bytes."""
    if not isinstance(value, str) or len(value) > 2 * size:
        raise _bad(f"keys.{name} is not a base64url string")
    if not _BASE64URL.fullmatch(value):
        raise _bad(f"keys.{name} is not base64url")
    try:
        raw = base64.urlsafe_b64decode(value.rstrip("=") + "=" * (-len(value.rstrip("=")) % 4))
    except (binascii.Error, ValueError):
        raise _bad(f"keys.{name} is not base64url") from None
    if len(raw) != size:
        raise _bad(f"keys.{name} is {len(raw)} bytes, not {size}")
    return value


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_subscription(
    data: object, user: str | None, *, allow_http_loopback: bool = False
) -> PushSubscription:
    """The subscription in ``data`` (a browser's ``PushSubscription.toJSON()``:
    ``{"endpoint", "keys": {"p256dh", "auth"}}``), or :data:`BAD_SUBSCRIPTION`.

    The endpoint is an ``https://`` URL of at most :data:`MAX_ENDPOINT` characters, with
    no user or password; ``http://`` only to a loopback address, and only with
    ``allow_http_loopback`` (a test's stand-in push service). ``p256dh`` is 65 bytes (an
    uncompressed P-256 point), ``auth`` 16 bytes.
    """
    if not isinstance(data, dict):
        raise _bad("not a JSON object")
    endpoint = data.get("endpoint")
    if not isinstance(endpoint, str) or not endpoint or len(endpoint) > MAX_ENDPOINT:
        raise _bad(f"endpoint is not a URL of at most {MAX_ENDPOINT} characters")
    try:
        parts = urlsplit(endpoint)
        host = parts.hostname or ""
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError:
        raise _bad("endpoint is not a URL") from None
    if not endpoint.isascii() or not host or "@" in parts.netloc:
        raise _bad("endpoint is not an https:// URL with a host")
    if parts.scheme != "https" and not (
        parts.scheme == "http" and allow_http_loopback and _loopback(host)
    ):
        raise _bad("endpoint is not an https:// URL")
    keys = data.get("keys")
    if not isinstance(keys, dict):
        raise _bad("keys is not an object with p256dh and auth")
    p256dh = _b64url(keys.get("p256dh"), "p256dh", 65)
    if base64.urlsafe_b64decode(p256dh + "=" * (-len(p256dh) % 4))[0] != 4:
        raise _bad("keys.p256dh is not an uncompressed P-256 point")
    auth = _b64url(keys.get("auth"), "auth", 16)
    return PushSubscription(endpoint, p256dh, auth, user)
