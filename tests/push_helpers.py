"""A stand-in push service (a real HTTP server on loopback speaking RFC 8030's wire) and
devices that subscribe to it with keys of their own, to read what the push channel sent:
its VAPID token (RFC 8292) checked against the deployment's public key, and its payload
decrypted (RFC 8291, ``aes128gcm``) with the device's private key and auth secret."""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import http_ece
from aiohttp import web
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from interaction.push import PushSubscription

from .loopback import free_port
from .notify_helpers import WAIT


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True)
class Delivery:
    """One POST the push service took for a device, and the status it answered."""

    device: str
    headers: dict[str, str]
    body: bytes
    status: int


def vapid_claims(authorization: str, public_key: str) -> dict[str, Any]:
    """The claims of ``Authorization: vapid t=<JWT>,k=<key>`` once its ``k`` is
    ``public_key`` and its ES256 signature verifies with it; AssertionError otherwise."""
    scheme, _, params = authorization.partition(" ")
    assert scheme == "vapid", authorization
    parts = dict(item.strip().split("=", 1) for item in params.split(","))
    assert parts["k"] == public_key
    header, claims, signature = parts["t"].split(".")
    assert json.loads(unb64(header)) == {"typ": "JWT", "alg": "ES256"}
    raw = unb64(signature)
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64(public_key))
    key.verify(der, f"{header}.{claims}".encode(), ec.ECDSA(hashes.SHA256()))  # raises if forged
    decoded: dict[str, Any] = json.loads(unb64(claims))
    return decoded


@dataclass
class Device:
    """A browser's side of one subscription: an ECDH P-256 key pair and 16 random bytes."""

    name: str
    endpoint: str
    key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    auth: bytes = field(default_factory=lambda: secrets.token_bytes(16))

    def subscription(self, user: str | None = "alice") -> PushSubscription:
        public = self.key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return PushSubscription(self.endpoint, b64(public), b64(self.auth), user)

    def as_browser_json(self) -> dict[str, object]:
        """What ``PushSubscription.toJSON()`` gives a page."""
        sub = self.subscription()
        return {
            "endpoint": sub.endpoint,
            "expirationTime": None,
            "keys": {"p256dh": sub.p256dh, "auth": sub.auth},
        }

    def decrypt(self, delivery: Delivery) -> Any:
        assert delivery.headers["Content-Encoding"] == "aes128gcm"
        plain = http_ece.decrypt(
            delivery.body, private_key=self.key, auth_secret=self.auth, version="aes128gcm"
        )
        return json.loads(plain)


@dataclass
class PushService:
    """Answers each device's POSTs with its ``statuses`` in turn, then 201 (as push
    services do for a message they accepted)."""

    base: str = ""
    statuses: dict[str, list[int]] = field(default_factory=dict)
    deliveries: list[Delivery] = field(default_factory=list)
    _arrived: asyncio.Queue[Delivery] = field(default_factory=asyncio.Queue)

    def device(self, name: str, *statuses: int) -> Device:
        self.statuses[name] = list(statuses)
        return Device(name, f"{self.base}/push/{name}")

    async def handle(self, request: web.Request) -> web.Response:
        name = request.match_info["device"]
        waiting = self.statuses.get(name, [])
        status = waiting.pop(0) if waiting else 201
        delivery = Delivery(name, dict(request.headers), await request.read(), status)
        self.deliveries.append(delivery)
        self._arrived.put_nowait(delivery)
        return web.Response(status=status)

    async def next_delivery(self) -> Delivery:
        async with asyncio.timeout(WAIT):
            return await self._arrived.get()

    def idle(self) -> bool:
        return self._arrived.empty()


@asynccontextmanager
async def push_service() -> AsyncIterator[PushService]:
    service = PushService()
    app = web.Application()
    app.router.add_post("/push/{device}", service.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    service.base = f"http://127.0.0.1:{port}"
    try:
        yield service
    finally:
        await runner.cleanup()


def fresh(claims: dict[str, Any], audience: str, subject: str) -> None:
    """The claims a push service checks: its origin, the contact, and an expiry within
    24 hours (RFC 8292)."""
    assert claims["aud"] == audience
    assert claims["sub"] == subject
    assert time.time() < claims["exp"] <= time.time() + 24 * 3600
