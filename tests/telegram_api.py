"""A local stand-in for Telegram's Bot API: an HTTP server on loopback speaking its JSON.

It serves ``/bot<token>/<method>`` as core.telegram.org/bots/api documents: every answer
is ``{"ok": true, "result": ...}`` or ``{"ok": false, "error_code": N, "description":
...}``; ``sendMessage`` returns the Message it made, ``editMessageText`` and
``editMessageReplyMarkup`` the edited Message, ``answerCallbackQuery`` ``true``, and
``getUpdates`` long-polls the updates a test queued (``offset`` confirms the ones before
it, ``timeout`` is how long it waits for one). Parameters come as the library sends them:
form fields (objects and arrays JSON-encoded) or a JSON body.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .loopback import free_port
from .notify_helpers import WAIT

TOKEN = "123456:TEST-token_for-the-stand-in"


@dataclass
class Message:
    """A message the bot sent, as it stands now (edits applied)."""

    chat: int
    id: int
    text: str
    keyboard: list[list[dict[str, Any]]] | None

    def buttons(self) -> list[dict[str, Any]]:
        return [button for row in self.keyboard or [] for button in row]

    def data_of(self, text: str) -> str:
        """The callback data of the button ``text`` (after a multi-select's mark)."""
        shown = [(b["text"].split(" ", 1)[-1], b["callback_data"]) for b in self.buttons()]
        (found,) = [data for name, data in shown if name == text]
        return str(found)


@dataclass
class BotApi:
    """The stand-in's state: what the bot did, and the updates waiting for it."""

    token: str = TOKEN
    url: str = ""
    messages: dict[tuple[int, int], Message] = field(default_factory=dict)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)  # by callback query id
    failing: dict[str, int] = field(default_factory=dict)  # method -> HTTP status
    closed: bool = False  # stopping: a long poll in progress ends at once
    hold: asyncio.Event | None = None  # set: sendMessage answers only once it is set
    served: list[Any] = field(default_factory=list)  # every update getUpdates returned
    _updates: list[Any] = field(default_factory=list)
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    # ------------------------------------------------------------------ the server side

    async def handle(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return _fail(401, "Unauthorized")
        method = request.match_info["method"]
        params = await _params(request)
        self.calls.append((method, params))
        try:
            if method in self.failing:
                return _fail(self.failing[method], "Internal Server Error: the stand-in fails")
            handler = getattr(self, f"_{method}", None)
            if handler is None:
                return _fail(404, "Not Found")
            result = await handler(params)
            if isinstance(result, web.Response):
                return result
            return web.json_response({"ok": True, "result": result})
        finally:
            async with self._changed:
                self._changed.notify_all()

    async def _sendMessage(self, params: dict[str, Any]) -> object:
        chat = int(params["chat_id"])
        message = Message(chat, next(self._ids), params["text"], _keyboard(params))
        self.messages[(chat, message.id)] = message
        if self.hold is not None:
            async with self._changed:
                self._changed.notify_all()
            await self.hold.wait()
        return _message_json(message)

    async def _editMessageText(self, params: dict[str, Any]) -> object:
        message = self.messages.get((int(params["chat_id"]), int(params["message_id"])))
        if message is None:
            return _fail(400, "Bad Request: message to edit not found")
        message.text, message.keyboard = params["text"], _keyboard(params)
        return _message_json(message)

    async def _editMessageReplyMarkup(self, params: dict[str, Any]) -> object:
        message = self.messages.get((int(params["chat_id"]), int(params["message_id"])))
        if message is None:
            return _fail(400, "Bad Request: message to edit not found")
        message.keyboard = _keyboard(params)
        return _message_json(message)

    async def _answerCallbackQuery(self, params: dict[str, Any]) -> object:
        self.answers[str(params["callback_query_id"])] = params
        return True

    async def _getUpdates(self, params: dict[str, Any]) -> object:
        offset = int(params.get("offset", 0))
        self._updates = [u for u in self._updates if _update_id(u, offset) >= offset]
        wait = float(params.get("timeout", 0))
        async with self._changed:
            if not self._updates and wait > 0:
                try:
                    async with asyncio.timeout(wait):
                        await self._changed.wait_for(lambda: bool(self._updates) or self.closed)
                except TimeoutError:
                    pass
        served = self._updates[: int(params.get("limit", 100))]
        self.served += served
        # An update with no id cannot be confirmed by an offset: it is served once.
        self._updates = [u for u in self._updates if u not in served or _has_id(u)]
        return served

    # ------------------------------------------------------------------ the test side

    async def push(self, update: object) -> None:
        """Queue a raw update (garbage too) for the bot's next getUpdates."""
        async with self._changed:
            self._updates.append(update)
            self._changed.notify_all()

    async def click(self, message: Message, user: int, data: str) -> str:
        """A user presses a button: a ``callback_query`` update as Telegram sends it, and
        the text the bot answered it with (``answerCallbackQuery``)."""
        number = next(self._ids)
        query_id = f"q{number}"
        await self.push(
            {
                "update_id": number,
                "callback_query": {
                    "id": query_id,
                    "from": {"id": user, "is_bot": False, "first_name": "Person"},
                    "message": _message_json(message),
                    "chat_instance": f"-{message.chat}",
                    "data": data,
                },
            }
        )
        answered = await self.until(lambda: query_id in self.answers)
        assert answered
        return str(self.answers[query_id].get("text", ""))

    async def until(self, check: Any) -> Any:
        """Wait (bounded) until ``check()`` is truthy, re-checked after each call made."""
        async with asyncio.timeout(WAIT), self._changed:
            await self._changed.wait_for(check)
            return check()

    def sent(self) -> list[Message]:
        return list(self.messages.values())

    def called(self, method: str) -> list[dict[str, Any]]:
        return [params for name, params in self.calls if name == method]

    def pending_updates(self) -> int:
        return len(self._updates)


def _has_id(update: object) -> bool:
    return isinstance(update, dict) and type(update.get("update_id")) is int


def _update_id(update: object, default: int) -> int:
    return int(update["update_id"]) if _has_id(update) else default  # type: ignore[index]


def _fail(status: int, description: str) -> web.Response:
    body = {"ok": False, "error_code": status, "description": description}
    return web.json_response(body, status=status)


async def _params(request: web.Request) -> dict[str, Any]:
    if request.content_type == "application/json":
        loaded = await request.json()
        return dict(loaded) if isinstance(loaded, dict) else {}
    params: dict[str, Any] = dict(request.query)
    if request.can_read_body:
        form = await request.post()
        params.update({key: value for key, value in form.items() if isinstance(value, str)})
    return params


def _keyboard(params: dict[str, Any]) -> list[list[dict[str, Any]]] | None:
    markup = params.get("reply_markup")
    if markup is None:
        return None
    decoded = json.loads(markup) if isinstance(markup, str) else markup
    keyboard = decoded.get("inline_keyboard")
    return keyboard if isinstance(keyboard, list) else None


def _message_json(message: Message) -> dict[str, Any]:
    body: dict[str, Any] = {
        "message_id": message.id,
        "date": 1_767_225_600,
        "chat": {"id": message.chat, "type": "private" if message.chat > 0 else "group"},
        "from": {"id": 42, "is_bot": True, "first_name": "Bot", "username": "interaction_bot"},
        "text": message.text,
    }
    if message.keyboard is not None:
        body["reply_markup"] = {"inline_keyboard": message.keyboard}
    return body


@asynccontextmanager
async def bot_api() -> AsyncIterator[BotApi]:
    """A :class:`BotApi` on a free loopback port (``url`` is the ``base_url`` to give the
    library: ``http://127.0.0.1:PORT/bot``); stopped however the test ends."""
    api = BotApi()
    app = web.Application()
    app.router.add_post("/bot{token}/{method}", api.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    api.url = f"http://127.0.0.1:{port}/bot"
    try:
        yield api
    finally:
        async with api._changed:
            api.closed = True
            api._changed.notify_all()
        await runner.cleanup()
