"""Local receivers for the notification channels: real HTTP servers on loopback."""

from __future__ import annotations

import asyncio
import email
import email.policy
import json
import queue
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any

from aiohttp import web
from aiosmtpd.controller import Controller

from interaction.notify import Notice, Outcome

from .loopback import free_port

WAIT = 20.0  # the bound on any one wait (a loaded CI machine), never a pause


@dataclass(frozen=True)
class Call:
    """One request the receiver took, and the status it answered."""

    headers: dict[str, str]
    body: bytes
    status: int

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """An HTTP server that answers POSTs with ``statuses`` in turn, then 200; a 3xx names
    ``redirect_to`` in its ``Location``."""

    statuses: list[int] = field(default_factory=list)
    redirect_to: str | None = None
    calls: list[Call] = field(default_factory=list)
    url: str = ""
    _arrived: asyncio.Queue[Call] = field(default_factory=asyncio.Queue)

    async def handle(self, request: web.Request) -> web.Response:
        status = self.statuses.pop(0) if self.statuses else 200
        call = Call(dict(request.headers), await request.read(), status)
        self.calls.append(call)
        self._arrived.put_nowait(call)
        headers = {"Location": self.redirect_to} if self.redirect_to is not None else None
        return web.Response(status=status, text="ok" if status == 200 else "no", headers=headers)

    async def next_call(self) -> Call:
        async with asyncio.timeout(WAIT):
            return await self._arrived.get()

    def idle(self) -> bool:
        return self._arrived.empty()


@asynccontextmanager
async def receiving(
    statuses: list[int] | None = None, path: str = "/hook", redirect_to: str | None = None
) -> AsyncIterator[Receiver]:
    """A :class:`Receiver` listening on a free loopback port; stopped however the test ends."""
    receiver = Receiver(list(statuses or []), redirect_to)
    app = web.Application()
    app.router.add_post(path, receiver.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    receiver.url = f"http://127.0.0.1:{port}{path}"
    try:
        yield receiver
    finally:
        await runner.cleanup()


@dataclass
class Recorder:
    """A channel for the dispatcher's own tests: records, and fails ``failures`` times."""

    name: str
    failures: int = 0
    error: Exception = field(default_factory=lambda: RuntimeError("down"))
    told: list[tuple[str, Notice, Outcome | None]] = field(default_factory=list)
    _arrived: asyncio.Queue[str] = field(default_factory=asyncio.Queue)
    attempts: int = 0

    async def pending(self, notice: Notice) -> None:
        await self._record("pending", notice, None)

    async def settled(self, notice: Notice, outcome: Outcome | None) -> None:
        await self._record("settled", notice, outcome)

    async def _record(self, what: str, notice: Notice, outcome: Outcome | None) -> None:
        self.attempts += 1
        self._arrived.put_nowait(what)
        if self.failures:
            self.failures -= 1
            raise self.error
        self.told.append((what, notice, outcome))

    async def next_attempt(self) -> str:
        async with asyncio.timeout(WAIT):
            return await self._arrived.get()

    def kinds(self) -> list[str]:
        return [what for what, _, _ in self.told]


class Mailbox:
    """An aiosmtpd handler: every message it takes, parsed, in a thread-safe queue."""

    def __init__(self) -> None:
        self.messages: queue.Queue[EmailMessage] = queue.Queue()
        self.envelopes: list[tuple[str, list[str]]] = []

    async def handle_DATA(self, server: object, session: object, envelope: Any) -> str:
        self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        self.messages.put(message)
        return "250 Message accepted for delivery"

    async def next(self) -> EmailMessage:
        return await asyncio.to_thread(self.messages.get, timeout=WAIT)


@contextmanager
def smtp_server() -> Iterator[tuple[Mailbox, int]]:
    """aiosmtpd on a free loopback port, stopped however the test ends."""
    mailbox = Mailbox()
    port = free_port()
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield mailbox, port
    finally:
        controller.stop()
