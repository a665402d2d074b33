"""The ASGI app: the page, the JSON API and the event stream, behind the token."""

from __future__ import annotations

import asyncio
import contextlib
import html
import ipaddress
import json
import re
import secrets
import time
from collections import OrderedDict
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Callable,
    Collection,
    Iterable,
    Mapping,
)
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Final
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, HTTPConnection, Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .._core import (
    BAD_TEAM,
    NOT_ASSIGNED,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    Assignment,
    ErrorCode,
    Team,
    UserInteractionError,
    answer_item,
    may_settle,
    not_assigned_error,
)
from ..display import present
from ..policies import RuleStore
from ..relay import (
    NOT_PENDING,
    RELAY_UNAVAILABLE,
    STALE_POSITION,
    PendingQuestion,
    Relay,
    RelayBackend,
    RelayEvent,
    RelaySnapshot,
    not_pending_error,
)
from ..signing import LINK_STORE_UNAVAILABLE, AnswerLinks
from ..wire import decode_answer, encode_answer, encode_approvals, encode_request
from ._push_routes import WebPush, push_routes
from ._rules import rule_routes

if TYPE_CHECKING:
    from ..notify import SlackInteractivity

__all__ = [
    "DEFAULT_MAX_STREAMS",
    "ProxySignIn",
    "WebApp",
    "create_app",
    "parse_host",
    "team_of",
]

_ASSETS: Final = resources.files("interaction.web") / "static"
MAX_BODY: Final = 1 << 20
KEEPALIVE_SECONDS: Final = 15.0
RETRY_MS: Final = 1_000
"""How long a browser waits before reconnecting a dropped stream (the SSE ``retry:``)."""
TEXTS_KEPT: Final = 1_000
"""How many recent events the app keeps as SSE text, built once for every open stream."""
OUTCOMES_KEPT: Final = 10_000
"""How many settled question ids the app remembers, to say why a late claim is refused."""
REQUESTS_KEPT: Final = 1_000
"""How many requests of questions its streams showed the app keeps, to check an answer
without asking a shared relay's store for the question again."""
DEFAULT_MAX_STREAMS: Final = 64
"""How many event streams the app keeps open at once by default."""
SCOPED_KEPT: Final = 10_000
"""How many one-question sessions (from answer links) the app holds at once."""
LINK_PATH: Final = "/link"
LINK_FORM_MAX: Final = 2_048
"""The largest answer link form read (the link's token is at most 400 characters)."""
SLACK_PATH: Final = "/slack/interactivity"
"""Slack's Request URL for interactivity: served with a ``SlackInteractivity`` only, and
reached without the token (Slack cannot send one): each request proves itself with its
Slack signature instead."""

LOOPBACK_NAMES: Final = ("127.0.0.1", "localhost", "[::1]")
HOSTS_SEEN: Final = 256
"""How many ``Host`` values the guard remembers its verdict on (any value, so bounded)."""

# Built once: json.dumps builds an encoder at every call that passes an option. No cycle
# check, as the app encodes only the fresh trees of dicts and lists it builds itself.
_EVENT_JSON: Final = json.JSONEncoder(ensure_ascii=False, check_circular=False)
_ANSWER_JSON: Final = json.JSONEncoder(
    ensure_ascii=False, check_circular=False, allow_nan=False, separators=(",", ":")
)
"""Starlette's ``JSONResponse`` encoding (compact, UTF-8), built once."""

# Status codes of the relay's and the app's error codes.
_STATUS: Final = {
    NOT_PENDING: 409,
    NOT_ASSIGNED: 403,
    RELAY_UNAVAILABLE: 503,
    "NOT_FOUND": 404,
    "METHOD_NOT_ALLOWED": 405,
}

_WHY: Final = {
    "answered": "was already answered (in another tab or client)",
    "cancelled": "was already dismissed (in another tab or client)",
}


def question_json(question: PendingQuestion) -> dict[str, object]:
    """A pending question as the page and API clients receive it.

    ``request`` is the wire request; ``view`` its display model
    (:meth:`interaction.display.RequestView.to_json`), which is all the page draws.
    """
    view = present(question.request)
    shown: dict[str, object] = {
        "id": question.id,
        "request": encode_request(question.request),
        "planReview": view.plan_review,
        "view": view.to_json(),
    }
    assignment = question.request.assignment
    if assignment is not None and assignment.quorum is not None:
        shown["approvals"] = encode_approvals(question.approvals)
    return shown


def as_typed(
    request: AskUserQuestionRequest, answer: AskUserQuestionAnswer
) -> AskUserQuestionAnswer:
    """A checked answer from the page or a client, under the seam's one answer rule.

    Custom text that names an option selects that option (:func:`interaction.answer_item`),
    as typing it does in every other UI.
    """
    questions = {question.id: question for question in request.questions}
    return AskUserQuestionAnswer(
        [answer_item(questions[i.id], i.selected, i.custom) for i in answer.answers]
    )


def _sse(kind: str, data: object, event_id: str | None = None) -> str:
    head = f"event: {kind}\n" if event_id is None else f"id: {event_id}\nevent: {kind}\n"
    return f"{head}data: {_EVENT_JSON.encode(data)}\n\n"


def _event_json(event: RelayEvent) -> str:
    position = event.position or None
    if event.kind != "resolved":  # requested, or approved: the question as it stands
        assert event.question is not None
        return _sse(event.kind, question_json(event.question), position)
    resolved: dict[str, object] = {"id": event.id, "outcome": event.outcome}
    if event.answerer is not None:  # a named user answered or dismissed it, on any host
        resolved["answerer"] = event.answerer
    return _sse("resolved", resolved, position)


def _snapshot_json(snapshot: RelaySnapshot) -> str:
    questions = [question_json(q) for q in snapshot.questions]
    return _sse("snapshot", {"questions": questions}, snapshot.position)


def _is_json(media: str) -> bool:
    """Whether a ``Content-Type`` is JSON in UTF-8 (``application/json``, no other charset)."""
    kind, *parameters = (part.strip().lower() for part in media.split(";"))
    if kind != "application/json":
        return False
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        if name.strip() == "charset" and value.strip().strip('"') not in {"utf-8", "utf8"}:
            return False
    return True


def error_body(code: str, message: str, **extra: str) -> dict[str, dict[str, str]]:
    """The documented error shape of every non-2xx response."""
    return {"error": {"code": code, "message": message, **extra}}


def _error(status: int, code: str, message: str, **extra: str) -> JSONResponse:
    # ensure_ascii (the default) so that no text, however odd, can fail to encode.
    return JSONResponse(error_body(code, message, **extra), status_code=status)


def parse_host(value: str) -> tuple[str, int | None]:
    """``(name, port)`` of a ``Host`` value or an allowed-host entry; ``port`` may be None.

    IPv6 names keep their brackets (``[::1]``); names are lower-cased without a final dot.
    A value that is not a host at all gives ``("", None)``, which nothing matches.
    """
    value = value.strip().lower()
    if value.startswith("["):
        name, bracket, rest = value.partition("]")
        name += bracket
        port_text = rest.removeprefix(":") if rest.startswith(":") else None
        if rest and port_text is None:
            return "", None
    else:
        name, colon, port_text_ = value.partition(":")
        port_text = port_text_ if colon else None
        if ":" in port_text_:  # a bare IPv6 address is not a Host value
            return "", None
    name = name.rstrip(".")
    if port_text is None:
        return name, None
    if not (port_text.isascii() and port_text.isdigit()) or not 0 < int(port_text) < 65536:
        return "", None
    return name, int(port_text)


class _Hosts:
    """Allowed ``Host`` values: ``name`` matches on any port, ``name:port`` on that port only."""

    def __init__(self, entries: Iterable[str]) -> None:
        self.any_port: set[str] = set()
        self.exact: set[tuple[str, int]] = set()
        self.seen: dict[bytes, bool] = {}  # raw Host value -> verdict, for the next request
        for entry in entries:
            name, port = parse_host(entry)
            if not name:
                raise ValueError(f"not a host name or host:port: {entry!r}")
            if port is None:
                self.any_port.add(name)
            else:
                self.exact.add((name, port))

    def allows(self, value: str) -> bool:
        name, port = parse_host(value)
        if not name:
            return False
        return name in self.any_port or (port is not None and (name, port) in self.exact)

    def allows_raw(self, value: bytes) -> bool:
        """:meth:`allows` of a raw header value, remembered: a client sends the same one
        on every request."""
        verdict = self.seen.get(value)
        if verdict is None:
            verdict = self.allows(value.decode("latin-1"))
            if len(self.seen) >= HOSTS_SEEN:
                self.seen.clear()
            self.seen[value] = verdict
        return verdict


SECURITY_HEADERS: Final = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
    (b"x-frame-options", b"DENY"),
]


SHELL_FILES: Final = {
    "/manifest.webmanifest": ("manifest.webmanifest", "application/manifest+json"),
    "/sw.js": ("sw.js", "text/javascript"),
    "/icon.svg": ("icon.svg", "image/svg+xml"),
    "/icon-192.png": ("icon-192.png", "image/png"),
    "/icon-512.png": ("icon-512.png", "image/png"),
}
"""The files that make the page an app a phone can keep on its home screen: path ->
(file in ``static``, content type). The browser fetches them without the token."""

PUBLIC_PATHS: Final = frozenset({"/", *SHELL_FILES})
"""What answers without the token: the page, the same program for everyone and holding no
question, and its manifest, icons and service worker, which hold nothing either. The page
reads the token from the link's fragment (``#token=``), which the browser never sends,
and sends it back as a header; the Host and Origin checks still apply."""

_FILE_CSP: Final = "default-src 'none'; connect-src 'self'; frame-ancestors 'none'"
"""The CSP of the shell files: the service worker, whose own CSP this is, may fetch the
page from its origin and nothing else."""


_USER_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}", re.ASCII)
_TOKEN_TEXT: Final = re.compile(r"[A-Za-z0-9._~-]+", re.ASCII)
MIN_TOKEN: Final = 16
"""The fewest characters a named user's token may have."""


def check_users(users: Mapping[str, str]) -> dict[str, str]:
    """``users`` (name -> token) if every name and token may be used; ``ValueError`` that
    names the user otherwise, never showing a token.

    A name is 1 to 64 characters of letters, digits and ``._@-``, starting with a letter
    or digit; a token at least :data:`MIN_TOKEN` characters of letters, digits and
    ``._~-`` (it goes in a link), and no two users share one.
    """
    checked: dict[str, str] = {}
    seen: set[str] = set()
    for name, token in users.items():
        if not isinstance(name, str) or not _USER_NAME.fullmatch(name):
            raise ValueError(
                f"user name {name!r} is not 1-64 letters, digits or ._@- (starting with a"
                " letter or digit)"
            )
        if not isinstance(token, str) or len(token) < MIN_TOKEN:
            raise ValueError(f"the token of user {name} is shorter than {MIN_TOKEN} characters")
        if not _TOKEN_TEXT.fullmatch(token):
            raise ValueError(
                f"the token of user {name} has characters other than letters, digits and ._~-"
            )
        if token in seen:
            raise ValueError(f"the token of user {name} is another user's too")
        seen.add(token)
        checked[name] = token
    if not checked:
        raise ValueError("users names no user")
    return checked


_HEADER_NAME: Final = re.compile(r"[A-Za-z0-9-]{1,64}", re.ASCII)
_KEPT_HEADERS: Final = frozenset({"host", "origin", "authorization", "cookie", "content-length"})
MAX_PROXIES: Final = 64
"""How many trusted proxy addresses or networks a server takes."""


@dataclass(frozen=True, slots=True)
class ProxySignIn:
    """Sign-in by an authenticating reverse proxy (oauth2-proxy, Pomerium, nginx
    ``auth_request``): a request whose peer is one of ``networks`` is the user its
    ``header`` names. Make one with :meth:`of`."""

    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]
    header: str
    """The header's name as given (``X-Forwarded-Email``); matched without regard to case."""

    @classmethod
    def of(cls, trusted: Iterable[str], header: str) -> ProxySignIn:
        """The sign-in of the proxies at ``trusted`` (addresses or CIDR networks) naming the
        user in ``header``; ``ValueError`` naming the bad entry otherwise."""
        if not isinstance(header, str) or not _HEADER_NAME.fullmatch(header):
            raise ValueError(f"the user header {header!r} is not a header name")
        if header.lower() in _KEPT_HEADERS:
            raise ValueError(f"the user header cannot be {header}: the server reads it itself")
        networks = []
        for entry in trusted:
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except (TypeError, ValueError):
                raise ValueError(
                    f"the trusted proxy {entry!r} is not an IP address or a CIDR network"
                ) from None
        if not networks:
            raise ValueError("the user header needs a trusted proxy address to take it from")
        if len(networks) > MAX_PROXIES:
            raise ValueError(f"at most {MAX_PROXIES} trusted proxies, got {len(networks)}")
        return cls(tuple(networks), header)

    def trusts(self, client: object) -> bool:
        """Whether the peer of a request (the scope's ``client``) is a trusted proxy."""
        if not isinstance(client, (tuple, list)) or not client or not isinstance(client[0], str):
            return False  # a Unix socket, or no peer known
        try:
            address = ipaddress.ip_address(client[0].partition("%")[0])
        except ValueError:
            return False
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return any(address in network for network in self.networks)


def _guarded_headers(scope: Scope) -> tuple[bytes, bytes | None, bytes]:
    """The Host, Origin and Authorization headers, the last of each (as a dict would keep)."""
    raw_host, raw_origin, raw_authorization = b"", None, b""
    for name, value in scope["headers"]:
        lowered = name.lower()
        if lowered == b"host":
            raw_host = value
        elif lowered == b"origin":
            raw_origin = value
        elif lowered == b"authorization":
            raw_authorization = value
    return raw_host, raw_origin, raw_authorization


class _Guard:
    """Token, Host and Origin checks before anything else answers, and safe headers after.

    The token is read from ``Authorization: Bearer`` or ``?token=``, never from a cookie:
    cookies do not tell ports apart, so any other server on the same host would get one.
    With named users, each has a token of their own, and a request made with one carries
    the user's name (``scope["state"]["user"]``) for the routes that settle questions.
    With ``proxy``, a request from a trusted proxy's address is the user its header names,
    and a request with that header from any other address is refused.
    """

    def __init__(
        self,
        app: ASGIApp,
        token: str | None,
        hosts: Collection[str],
        scoped: Callable[[str], tuple[str, str | None] | None] | None = None,
        origins: Collection[str] = (),
        *,
        users: Mapping[str, str] | None = None,
        proxy: ProxySignIn | None = None,
        signed: str | None = None,
    ) -> None:
        self.app = app
        self.signed = signed  # the path whose requests carry a signature, not the token
        named = {} if users is None else users
        self.proxy = proxy  # after the Host and Origin checks, before any other
        self.names = frozenset(named)
        self.header = b"" if proxy is None else proxy.header.lower().encode()
        self.tokens: tuple[tuple[bytes, str | None], ...] = (
            *(() if token is None else ((token.encode(), None),)),
            *((user_token.encode(), name) for name, user_token in named.items()),
        )
        self.hosts = _Hosts(hosts)
        self.origins = frozenset(origin.lower() for origin in origins)  # beside http://<Host>
        self.scoped = scoped  # a one-question session's token -> its question and user

    def _refuse(self, scope: Scope) -> Response | None:
        """The refusal of a request, or ``None`` to let it through (naming its user, if any)."""
        raw_host, raw_origin, raw_authorization = _guarded_headers(scope)
        refusal = self._refuse_place(raw_host, raw_origin)
        if refusal is not None:
            return refusal
        if self.proxy is not None:
            proxied = self._proxied(scope)
            if isinstance(proxied, Response):
                return proxied
            if proxied is not None:
                scope.setdefault("state", {})["user"] = proxied
                return None
        page = scope["type"] == "http" and scope["method"] in ("GET", "HEAD")
        if page and scope["path"] in PUBLIC_PATHS:
            return None
        if self.scoped is not None and scope["path"] == LINK_PATH:
            return None  # an answer link carries its own signed, single-use proof
        if scope["path"] == self.signed and scope.get("method") == "POST":
            return None  # Slack's own signature is checked by the route, before anything
        return self._refuse_token(scope, raw_authorization)

    def _refuse_place(self, raw_host: bytes, raw_origin: bytes | None) -> Response | None:
        """A Host this server does not answer for, or another site's Origin."""
        host = raw_host.decode("latin-1")
        if not self.hosts.allows_raw(raw_host):
            return _error(
                421,
                "BAD_HOST",
                f"this server does not answer for the Host {host[:100]!r}; to reach it by that"
                " name, start it with --allow-host NAME[:PORT] (WebServer(hosts=[...]))",
            )
        origin = None if raw_origin is None else raw_origin.decode("latin-1")
        if (
            origin is not None
            and origin.lower() != f"http://{host.strip().lower()}"
            and origin.lower() not in self.origins
        ):
            return _error(403, "BAD_ORIGIN", "cross-site requests are refused")
        return None

    def _proxied(self, scope: Scope) -> Response | str | None:
        """The user a trusted proxy's header names; a refusal when the header came from
        any other peer (whatever token it carries too), or names no user of this server;
        ``None`` without the header (the token decides)."""
        assert self.proxy is not None
        values: list[bytes] = [
            value for name, value in scope["headers"] if name.lower() == self.header
        ]
        if not values:
            return None
        header = self.proxy.header
        if not self.proxy.trusts(scope.get("client")):
            return _error(
                401, "UNAUTHORIZED", f"the {header} header is taken from a trusted proxy only"
            )
        if len(values) > 1:
            return _error(401, "UNAUTHORIZED", f"the proxy sent {header} more than once")
        name: str = values[0].decode("latin-1")
        if name not in self.names:
            return _error(
                401, "UNAUTHORIZED", f"the proxy names {name[:100]!r}, not a user of this server"
            )
        return name

    def _refuse_token(self, scope: Scope, raw_authorization: bytes) -> Response | None:
        """No token of this server's (nor a one-question session's); else its user noted."""
        given = raw_authorization.decode("latin-1")
        given = given[7:].strip() if given[:7].lower() == "bearer " else ""
        if not given:
            given = HTTPConnection(scope).query_params.get("token", "")
        try:
            encoded = given.encode()
        except UnicodeEncodeError:  # pragma: no cover - query strings decode to valid text
            encoded = b""
        valid, user = False, None
        for token, name in self.tokens:  # every one compared, so timing tells no name
            if secrets.compare_digest(encoded, token):
                valid, user = True, name
        if not valid:
            return self._one_question(scope, given)
        if user is not None:
            scope.setdefault("state", {})["user"] = user
        return None

    def _one_question(self, scope: Scope, given: str) -> Response | None:
        """Let a one-question session (opened by an answer link) reach that question only:
        the list and the stream (which show only it), and its answer and cancel."""
        session = self.scoped(given) if self.scoped is not None and given else None
        if session is None:
            return _error(401, "UNAUTHORIZED", "a valid token is required")
        question, user = session
        if user is not None:  # a link issued to a named user answers as them
            scope.setdefault("state", {})["user"] = user
        path = scope["path"]
        mine = (f"/api/questions/{question}/answer", f"/api/questions/{question}/cancel")
        if path not in ("/api/questions", "/api/events", "/api/ping", "/api/me", *mine):
            return _error(403, "FORBIDDEN", "this session may answer one question only")
        scope.setdefault("state", {}).update({"question": question, "token": given})
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._refuse_websocket(scope, receive, send)
            return
        if scope["type"] != "http":  # lifespan: nothing to guard
            await self.app(scope, receive, send)
            return
        refusal = self._refuse(scope)

        async def send_safely(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                if any(name == b"referrer-policy" for name, _ in headers):  # a link's page
                    headers.extend(h for h in SECURITY_HEADERS if h[0] != b"referrer-policy")
                else:
                    headers.extend(SECURITY_HEADERS)
                message = {**message, "headers": headers}
            await send(message)

        if refusal is not None:
            await refusal(scope, receive, send_safely)
            return
        await self.app(scope, receive, send_safely)

    async def _refuse_websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse every WebSocket handshake: the app has no WebSocket endpoint, and one that
        fails the checks above is told why. The JSON error goes out as the handshake's HTTP
        answer where the server offers that (``websocket.http.response``), else a close."""
        refusal = self._refuse(scope) or _error(
            404, "NOT_FOUND", "there is no WebSocket endpoint here"
        )
        message = await receive()
        if message["type"] != "websocket.connect":
            return  # the client left before its handshake was read
        if "websocket.http.response" not in scope.get("extensions", {}):
            await send({"type": "websocket.close", "code": 1008})
            return
        headers = [*refusal.raw_headers, *SECURITY_HEADERS]
        start = {"type": "websocket.http.response.start", "status": refusal.status_code}
        await send({**start, "headers": headers})
        body = {"type": "websocket.http.response.body", "body": refusal.body}
        await send({**body, "more_body": False})


def check_limit(name: str, value: object) -> int:
    """``value`` if it is a positive ``int``; ``ValueError`` naming ``name`` otherwise."""
    if type(value) is not int or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


class _EventStream(StreamingResponse):
    """An event stream that gives its place back however it ends, also when the client
    left before its first byte (the body's generator, never started, runs no cleanup)."""

    def __init__(self, content: AsyncIterator[str], release: Callable[[], None]) -> None:
        super().__init__(content, media_type="text/event-stream")
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()


class _Stale(Exception):
    """The relay cannot replay from the stream's position: send a fresh snapshot."""


class WebApp:
    """The ASGI app of :func:`create_app`, with :meth:`close_streams` for a quick stop."""

    def __init__(
        self,
        relay: RelayBackend,
        *,
        token: str | None,
        hosts: Collection[str],
        max_streams: int = DEFAULT_MAX_STREAMS,
        rules: RuleStore | None = None,
        links: AnswerLinks | None = None,
        origins: Collection[str] = (),
        users: Mapping[str, str] | None = None,
        proxy: ProxySignIn | None = None,
        slack: SlackInteractivity | None = None,
        team: Team | None = None,
        rules_by: Assignment | None = None,
        push: WebPush | None = None,
        default_assignment: Assignment | None = None,
    ) -> None:
        if token is None and users is None:
            raise ValueError("the app needs a token or named users")
        if proxy is not None and users is None:
            raise ValueError("a proxy's user header names users: give named users too")
        self.relay = relay
        self.slack = slack
        self.token = token
        self.users = None if users is None else check_users(users)
        self.team = team_of(relay, team, self.users)
        self.rules_by = rules_by
        self.default_assignment = default_assignment
        self.max_streams = check_limit("max_streams", max_streams)
        self.links = links
        # A one-question session: selector -> (verifier, question id, end).
        self._scoped: OrderedDict[str, tuple[bytes, str, float, str | None]] = OrderedDict()
        self._streams: set[asyncio.Future[None]] = set()
        self._stopping = False
        self._outcomes: OrderedDict[str, str] = OrderedDict()
        self._requests: OrderedDict[str, AskUserQuestionRequest] = OrderedDict()
        # The in-memory relay holds its questions in this process: a lookup costs no more
        # than this cache would, so only a shared relay's questions are kept.
        self._keeps_requests = not isinstance(relay, Relay)
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._opened = 0  # streams opened, and keep-alives sent: for tests to watch
        self._keepalives = 0
        page = (_ASSETS / "page.html").read_text("utf-8")
        script = (_ASSETS / "app.js").read_text("utf-8")
        style = (_ASSETS / "app.css").read_text("utf-8")
        self._page = (
            page.replace("{{rules}}", "no" if rules is None else "yes")
            .replace("{{push}}", "no" if push is None else "yes")
            .replace("{{style}}", style)
            .replace("{{script}}", script)
        )
        self._files = {
            path: ((_ASSETS / name).read_bytes(), media)
            for path, (name, media) in SHELL_FILES.items()
        }
        routes = [
            Route("/", self.index),
            Route("/api/questions", self.list_questions),
            Route("/api/questions/{id}/answer", self.answer, methods=["POST"]),
            Route("/api/questions/{id}/cancel", self.cancel, methods=["POST"]),
            Route("/api/events", self.events),
            Route("/api/ping", self.ping, methods=["POST"]),
            Route("/api/me", self.me),
            *(Route(path, self.shell_file) for path in SHELL_FILES),
            *(rule_routes(rules, self._may_change_rules) if rules is not None else []),
            *(push_routes(push) if push is not None else []),
            Route(LINK_PATH, self.link, methods=["GET"]),
            Route(LINK_PATH, self.open_link, methods=["POST"]),
            *([Route(SLACK_PATH, self.slack_interaction, methods=["POST"])] if slack else []),
        ]
        self._routes = Starlette(
            routes=routes,
            exception_handlers={HTTPException: self._http_error, Exception: self._crash},
        )
        scoped = self._question_of if links is not None else None
        signed = SLACK_PATH if slack is not None else None
        self._app = _Guard(
            self._routes,
            token,
            hosts,
            scoped,
            origins,
            users=self.users,
            signed=signed,
            proxy=proxy,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)

    # ------------------------------------------------------------------ who sees what

    def _assignment(self, request: AskUserQuestionRequest) -> Assignment | None:
        """Who may settle ``request``: its own assignment, else ``default_assignment``."""
        return request.assignment if request.assignment is not None else self.default_assignment

    def _may_settle(self, user: str | None, request: AskUserQuestionRequest) -> bool:
        """:func:`may_answer`, a question that names nobody taking ``default_assignment``."""
        return may_settle(self.team, user, self._assignment(request))

    def _sees(self, user: str | None, question: PendingQuestion) -> bool:
        """Whether ``user`` is shown ``question``: one assigned to nobody or to them, and
        every one to the unnamed token and the team's ``see_all`` users."""
        if self._assignment(question.request) is None or user is None:
            return True
        if self.team is not None and user in self.team.see_all:
            return True
        return self._may_settle(user, question.request)

    def _sees_everything(self, user: str | None) -> bool:
        return user is None or (self.team is not None and user in self.team.see_all)

    def _may_change_rules(self, user: str | None) -> bool:
        """Whether ``user`` may add or revoke a rule: anyone with a token, or with
        ``rules_by`` only its assignees (the check :func:`may_answer` makes)."""
        return may_settle(self.team, user, self.rules_by)

    # ------------------------------------------------------------------ errors

    async def _http_error(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            return _error(404, "NOT_FOUND", f"there is nothing at {request.url.path!r}")
        if exc.status_code == 405:
            response = _error(
                405, "METHOD_NOT_ALLOWED", f"{request.method} is not allowed on this path"
            )
            if exc.headers and "allow" in {k.lower() for k in exc.headers}:
                response.headers["allow"] = next(
                    v for k, v in exc.headers.items() if k.lower() == "allow"
                )
            return response
        return _error(exc.status_code, "HTTP_ERROR", str(exc.detail))

    async def _crash(self, request: Request, exc: Exception) -> Response:
        return _error(500, "INTERNAL_ERROR", "the server failed; the question stays pending")

    # ------------------------------------------------------------------ outcomes

    def _remember(self, question_id: str, outcome: str) -> None:
        """Keep how a question settled (seen by a stream or done here), to tell late claims."""
        self._outcomes[question_id] = outcome
        self._outcomes.move_to_end(question_id)
        while len(self._outcomes) > OUTCOMES_KEPT:
            self._outcomes.popitem(last=False)
        self._requests.pop(question_id, None)

    def _learn(self, event: RelayEvent) -> None:
        """Take what a stream's event tells: a question shown, or how one settled."""
        if event.kind == "resolved" and event.outcome is not None:
            self._remember(event.id, event.outcome)
        elif event.question is not None:
            self._shown(event.question)

    def _shown(self, question: PendingQuestion) -> None:
        """Keep the request of a question a stream showed: the page's answer to it comes
        next, and is checked against it without a trip to the relay's store."""
        if not self._keeps_requests:
            return
        if question.id in self._outcomes:  # settled: a stream behind the others shows it late
            return
        self._requests[question.id] = question.request
        if len(self._requests) > REQUESTS_KEPT:
            self._requests.popitem(last=False)

    def _event_text(self, event: RelayEvent) -> str:
        """The SSE text of ``event``, built once however many streams send it.

        A position names one event in the relay's total order, so it is the key; an event
        without one is built each time.
        """
        if not event.position:
            return _event_json(event)
        text = self._texts.get(event.position)
        if text is None:
            text = self._texts[event.position] = _event_json(event)
            if len(self._texts) > TEXTS_KEPT:
                self._texts.popitem(last=False)
        return text

    def _not_pending(self, question_id: str, error: UserInteractionError) -> Response:
        """The 409 of a claim on a question that is not pending: the relay's words, or what
        this app saw happen to it (answered or dismissed here, or on a stream)."""
        outcome = self._outcomes.get(question_id)
        if outcome == "aborted":  # the relay's one wording, whatever the backend
            message = not_pending_error(question_id, withdrawn=True).message
            return _error(409, NOT_PENDING, message, outcome=outcome)
        if outcome is not None:
            message = f"question {question_id!r} {_WHY[outcome]}"
            return _error(409, NOT_PENDING, message, outcome=outcome)
        return _error(409, NOT_PENDING, error.message)

    async def _why_not_pending(self, question_id: str) -> UserInteractionError:
        """The relay's ``NOT_PENDING`` error for a question its lookup did not find.

        A claim with no answer (``None``) asks it: every backend says why a question is
        not pending in its own words, and ``None`` can settle nothing (``BAD_ANSWER``).
        """
        try:
            await self.relay.submit(question_id, None)
        except UserInteractionError as error:
            if error.code == NOT_PENDING:
                return error
        return not_pending_error(question_id)

    # ------------------------------------------------------------------ routes

    async def index(self, request: Request) -> Response:
        nonce = secrets.token_urlsafe(16)
        html = self._page.replace("{{nonce}}", nonce)
        csp = (
            f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}';"
            " connect-src 'self'; img-src 'self' data:; manifest-src 'self'; worker-src 'self';"
            " base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        )
        return Response(html, media_type="text/html", headers={"content-security-policy": csp})

    async def shell_file(self, request: Request) -> Response:
        """The manifest, an icon or the service worker: the same bytes for everyone."""
        body, media = self._files[request.url.path]
        return Response(body, media_type=media, headers={"content-security-policy": _FILE_CSP})

    async def me(self, request: Request) -> Response:
        """Who the request is: ``user`` (a named user, by their token or the trusted proxy's
        header, or ``null`` for the one token) and
        ``question`` (the one question of a session opened by an answer link, or ``null``)."""
        return JSONResponse({"user": _user(request), "question": _only(request)[0]})

    # ------------------------------------------------------------------ answer links

    def _question_of(self, token: str) -> tuple[str, str | None] | None:
        """The question a one-question session may answer, while it lasts, and the named
        user it answers as (its link was issued to them), if any.

        A session's token is ``<selector>.<verifier>``: the selector finds the session, and
        the verifier is compared in constant time, as every other token is.
        """
        selector, _, verifier = token.partition(".")
        entry = self._scoped.get(selector)
        if entry is None or entry[2] <= time.monotonic():
            return None
        if not secrets.compare_digest(verifier.encode("utf-8", "replace"), entry[0]):
            return None
        return entry[1], entry[3]

    async def _pending_of(self, given: str) -> tuple[PendingQuestion | None, Response | None]:
        """The question a valid, unspent link names, or the page that refuses the link."""
        assert self.links is not None
        try:
            question_id = await self.links.averify(given)
            pending = await self.relay.lookup(question_id)
        except UserInteractionError as error:
            return None, _link_refused(error)
        if pending is None:
            return None, _link_page(410, "this question is no longer waiting for an answer")
        return pending, None

    async def link(self, request: Request) -> Response:
        """An answer link's page: the question and who asks, and one button that opens it.

        A ``GET`` or ``HEAD`` changes nothing, so the mail scanners and link previews that
        fetch a link before its person clicks do not use it up: only the button's ``POST``
        redeems it (:meth:`open_link`).
        """
        given = request.query_params.get("t", "")
        pending, refusal = await self._pending_of(given)
        if refusal is not None:
            return refusal
        assert pending is not None
        return _link_offer(pending.request, given)

    async def open_link(self, request: Request) -> Response:
        """Redeem an answer link from its page's form: a one-question session, and the page
        on that question. The guard has checked the ``Origin`` like any other request's;
        a browser's word that the form came from another site is refused too."""
        assert self.links is not None
        if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            return _link_page(403, "this answer link opens from its own page only")
        media = request.headers.get("content-type", "").partition(";")[0].strip().lower()
        if media != "application/x-www-form-urlencoded":
            return _link_page(415, "this answer link opens from its own page only")
        body = bytearray()
        try:
            async for chunk in request.stream():
                body += chunk
                if len(body) > LINK_FORM_MAX:
                    return _link_page(413, "this answer link is not valid")
        except ClientDisconnect:  # nobody reads a reply; the link stays unspent
            return Response(status_code=400)
        try:
            given = parse_qs(body.decode("latin-1"), max_num_fields=4).get("t", [""])[0]
        except ValueError:  # more fields than the page's form has
            given = ""
        pending, refusal = await self._pending_of(given)
        if refusal is not None:
            return refusal
        assert pending is not None
        try:
            _, holder = await self.links.aredeem_as(given)  # spent only once it opens it
        except UserInteractionError as error:
            return _link_refused(error)
        if holder is not None and (self.users is None or holder not in self.users):
            holder = None  # not one of this server's users: the session names nobody
        selector, verifier = secrets.token_urlsafe(9), secrets.token_urlsafe(24)
        now = time.monotonic()
        while self._scoped and (
            len(self._scoped) >= SCOPED_KEPT or next(iter(self._scoped.values()))[2] <= now
        ):
            self._scoped.popitem(last=False)
        self._scoped[selector] = (verifier.encode(), pending.id, now + self.links.ttl, holder)
        # The session's token goes in the fragment, as the page's own does: the browser
        # keeps it from the Location header and never sends it over the network.
        return RedirectResponse(f"/#token={selector}.{verifier}", status_code=303)

    async def list_questions(self, request: Request) -> Response:
        only = _only(request)[0]
        try:
            snapshot = await self.relay.snapshot()
        except UserInteractionError as error:
            return _error(_STATUS.get(error.code, 400), error.code, error.message)
        user = _user(request)
        shown = [
            q for q in snapshot.questions if (only is None or q.id == only) and self._sees(user, q)
        ]
        return JSONResponse({"questions": [question_json(q) for q in shown]})

    async def _read_text(self, request: Request) -> str:
        """The body as text for the wire to parse: UTF-8 only (``json.loads`` would also
        take UTF-16 and UTF-32 bytes), at most ``MAX_BODY`` bytes."""
        body = bytearray()
        try:
            async for chunk in request.stream():
                body += chunk
                if len(body) > MAX_BODY:
                    raise UserInteractionError("the answer is too large", ErrorCode.BAD_ANSWER)
        except ClientDisconnect:  # it left, or its request timed out: nobody reads a reply
            message = "answer: the client left before the answer arrived"
            raise UserInteractionError(message, ErrorCode.BAD_ANSWER) from None
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError:
            raise UserInteractionError("answer: not valid UTF-8", ErrorCode.BAD_ANSWER) from None

    async def answer(self, request: Request) -> Response:
        question_id = request.path_params["id"]
        media = request.headers.get("content-type")
        if media is not None and media != "application/json" and not _is_json(media):
            message = "an answer is sent as application/json (UTF-8)"
            return _error(415, "UNSUPPORTED_MEDIA_TYPE", message)
        try:
            # The request a stream showed saves a trip to the store; one settled since then
            # is refused by the relay's claim below, as one settled after a lookup would be.
            asked = self._requests.get(question_id)
            seen = asked is not None
            if asked is None:
                question = await self.relay.lookup(question_id)
                if question is None:
                    return self._not_pending(question_id, await self._why_not_pending(question_id))
                asked = question.request
            try:
                decoded = decode_answer(await self._read_text(request), asked)
            except UserInteractionError:
                if seen and await self.relay.lookup(question_id) is None:  # settled since
                    return self._not_pending(question_id, await self._why_not_pending(question_id))
                raise
            typed = as_typed(asked, decoded)
            user = _user(request)
            if not self._may_settle(user, asked):
                raise not_assigned_error(question_id, user)
            checked = await self.relay.submit(question_id, typed, answerer=user)
            quorum = None if asked.assignment is None else asked.assignment.quorum
            if quorum is not None and (still := await self.relay.lookup(question_id)):
                # An approval short of the quorum: recorded, and the question waits on.
                approvals = encode_approvals(still.approvals)
                return JSONResponse(
                    {"pending": True, "quorum": quorum, "approvals": approvals}, status_code=202
                )
        except UserInteractionError as error:
            if error.code == NOT_PENDING:
                return self._not_pending(question_id, error)
            return _error(_STATUS.get(error.code, 400), error.code, error.message)
        self._remember(question_id, "answered")
        body = _ANSWER_JSON.encode(encode_answer(checked)).encode()
        return Response(body, media_type="application/json")

    async def cancel(self, request: Request) -> Response:
        question_id = request.path_params["id"]
        user = _user(request)
        try:
            if self.default_assignment is not None:  # the relay knows the request's own
                asked = self._requests.get(question_id)
                if asked is None and (question := await self.relay.lookup(question_id)):
                    asked = question.request
                if asked is not None and not self._may_settle(user, asked):
                    raise not_assigned_error(question_id, user)
            await self.relay.dismiss(question_id, answerer=user)
        except UserInteractionError as error:
            if error.code == NOT_PENDING:
                return self._not_pending(question_id, error)
            return _error(_STATUS.get(error.code, 400), error.code, error.message)
        self._remember(question_id, "cancelled")
        return Response(status_code=204)

    async def ping(self, request: Request) -> Response:
        return Response(status_code=204)

    # ------------------------------------------------------------------ Slack

    async def slack_interaction(self, request: Request) -> Response:
        """Slack's Request URL: the body read up to the Slack side's bound, then handed
        to it, which checks the signature and answers at once (docs/notify.md)."""
        assert self.slack is not None
        most = self.slack.max_body
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
        status = self.slack.receive(bytes(body), request.headers, _SlackDesk(self))
        if status == 401:
            return _error(401, "UNAUTHORIZED", "a valid, recent Slack signature is required")
        if status == 400:
            return _error(400, "BAD_PAYLOAD", "not an interaction payload this server handles")
        return Response(status_code=200)

    async def answer_as(
        self, question_id: str, body: bytes, user: str | None
    ) -> tuple[int, str, str]:
        """The page's own answer route, called in-process for an answer taken elsewhere
        (a Slack click) under ``user``'s name: every check it makes applies unchanged.
        Its status, and its error's code and message (``""`` on success); ``202`` with
        ``"1 of 2 approved: alice"`` for an approval short of a quorum."""
        path = f"/api/questions/{question_id}/answer"
        scope: Scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "root_path": "",
            "query_string": b"",
            "headers": [(b"content-type", b"application/json")],
            "client": None,
            "server": None,
            "state": {} if user is None else {"user": user},
        }
        given = False

        async def receive() -> Message:
            nonlocal given
            if given:
                return {"type": "http.disconnect"}
            given = True
            return {"type": "http.request", "body": body, "more_body": False}

        status, said = 500, bytearray()

        async def send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                said.extend(message.get("body", b""))

        await self._routes(scope, receive, send)
        if status == 200:
            return status, "", ""
        if status == 202:  # an approval short of the quorum: recorded, the question waits
            recorded = json.loads(said)
            names = ", ".join(a["user"] for a in recorded["approvals"])
            return (
                status,
                "",
                f"{len(recorded['approvals'])} of {recorded['quorum']} approved: {names}",
            )
        try:
            error = json.loads(said)["error"]
            return status, str(error["code"]), str(error["message"])
        except (ValueError, KeyError, TypeError):
            return status, "HTTP_ERROR", f"the answer route said {status}"

    async def aclose(self) -> None:
        """Stop the work the app does beside its requests (Slack clicks being settled)."""
        if self.slack is not None:
            await self.slack.aclose()

    async def events(self, request: Request) -> Response:
        if self._stopping:
            return _error(503, "STOPPING", "the server is stopping")
        if request.method == "HEAD":  # the headers a GET would get, and no stream behind them
            return Response(media_type="text/event-stream")
        if len(self._streams) >= self.max_streams:
            message = (
                f"{self.max_streams} event streams are open, the server's limit;"
                " close a page or try again shortly"
            )
            response = _error(503, "TOO_MANY_STREAMS", message)
            response.headers["retry-after"] = "1"
            return response
        # The stream holds its place from now on, so a burst cannot overshoot the limit.
        stop: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._streams.add(stop)
        last = request.headers.get("last-event-id", "").strip() or None
        stream = self._stream(last, stop, _only(request)[0], _user(request))
        return _EventStream(stream, lambda: self._streams.discard(stop))

    # ------------------------------------------------------------------ the stream

    async def _stream(
        self,
        last_event_id: str | None,
        stop: asyncio.Future[None],
        only: str | None,
        user: str | None = None,
    ) -> AsyncIterator[str]:
        """A snapshot of what is pending, then the events, with keep-alives in between.

        With a ``Last-Event-ID`` the relay can replay from, the stream resumes there with
        exactly the events missed; otherwise, or when the relay says the position is stale
        (even mid-stream), it sends a fresh snapshot and goes on from its position. With
        ``only`` (a one-question session), it shows that question alone.
        """
        self._opened += 1
        head = f"retry: {RETRY_MS}\n"  # goes with the first text, whatever it is
        position = last_event_id
        try:
            while True:
                if position is None:
                    snapshot = await self.relay.snapshot()
                    if only is not None or not self._sees_everything(user):
                        shown = tuple(
                            q
                            for q in snapshot.questions
                            if (only is None or q.id == only) and self._sees(user, q)
                        )
                        snapshot = RelaySnapshot(snapshot.position, shown)
                    for question in snapshot.questions:
                        self._shown(question)
                    yield head + _snapshot_json(snapshot)
                    head = ""
                    position = snapshot.position
                try:
                    following = self._follow(position, stop, only, user)
                    async with contextlib.aclosing(following) as texts:
                        async for text in texts:
                            yield head + text
                            head = ""
                except _Stale:
                    position = None  # too far behind, or a position from elsewhere
                    continue
                return
        except UserInteractionError as error:  # the relay's store is down, say
            yield head + _sse("unavailable", {"code": error.code, "message": error.message})
        finally:
            self._streams.discard(stop)

    async def _follow(
        self,
        position: str,
        stop: asyncio.Future[None],
        only: str | None = None,
        user: str | None = None,
    ) -> AsyncGenerator[str, None]:
        """The events after ``position`` as SSE text, until the relay closes or ``stop``.

        The stream reads the relay's iterator itself, so a new event wakes it at once (a
        pump task in between cost one more turn of the loop per event). It reads the next
        event only once the last one is sent, so the relay's own rules for a reader that
        falls behind hold. A keep-alive spell or ``stop`` ends the wait through
        ``asyncio.timeout``, which also ends that iterator (its read is cancelled): the next
        wait opens a new one after the last event read, and the relay replays what came
        meanwhile, nothing lost or doubled. Raises :class:`_Stale` when the relay cannot
        replay from ``position``.
        """
        loop = asyncio.get_running_loop()
        waiting: list[asyncio.Timeout] = []  # the wait in progress, for stop to end at once

        def end_wait(_: object) -> None:
            for wait in waiting:
                wait.reschedule(loop.time())

        stop.add_done_callback(end_wait)
        events: AsyncGenerator[RelayEvent, None] | None = None
        try:
            while not stop.done():
                if events is None:
                    events = self.relay.events(position)
                try:
                    async with asyncio.timeout(KEEPALIVE_SECONDS) as wait:
                        waiting.append(wait)
                        try:
                            event = await anext(events)
                        finally:
                            waiting.clear()
                except StopAsyncIteration:
                    yield _sse("closing", {"reason": "closed"})
                    return
                except TimeoutError:
                    if not wait.expired():
                        raise  # the relay's own, not a keep-alive spell's end
                    with contextlib.suppress(Exception):  # ended by the cancelled read
                        await events.aclose()
                    events = None  # a new one at the next wait
                    if not stop.done():
                        self._keepalives += 1
                        yield ": keep-alive\n\n"
                    continue
                except UserInteractionError as error:
                    if error.code == STALE_POSITION:
                        raise _Stale from None
                    raise
                if event.position:
                    position = event.position
                self._learn(event)
                hidden = event.question is not None and not self._sees(user, event.question)
                if (only is None or event.id == only) and not hidden:
                    yield self._event_text(event)
            yield _sse("closing", {"reason": "stopped"})
        finally:
            stop.remove_done_callback(end_wait)
            if events is not None:
                with contextlib.suppress(Exception):
                    await events.aclose()

    def close_streams(self) -> None:
        """End every open event stream (with a ``closing`` event) and refuse new ones."""
        self._stopping = True
        for stop in list(self._streams):
            if not stop.done():
                stop.set_result(None)


def create_app(
    relay: RelayBackend,
    *,
    token: str,
    hosts: Collection[str] = LOOPBACK_NAMES,
    max_streams: int = DEFAULT_MAX_STREAMS,
    links: AnswerLinks | None = None,
    origins: Collection[str] = (),
    team: Team | None = None,
    rules_by: Assignment | None = None,
    default_assignment: Assignment | None = None,
) -> ASGIApp:
    """The app over ``relay``.

    ``hosts`` are the ``Host`` values it answers: ``name`` on any port, ``name:port`` on that
    port only (IPv6 in brackets). The default is the loopback names on any port. At most
    ``max_streams`` event streams are open at once; one more is ``503 TOO_MANY_STREAMS``.
    With ``links``, ``GET /link?t=...`` shows an answer link's page and its button's
    ``POST /link`` redeems the link (docs/notify.md). ``origins`` are further ``Origin``
    values accepted beside ``http://<Host>`` (the ``https://`` origin of a page behind a
    TLS proxy). ``team`` (by default the relay's) decides who sees and may settle each
    question; ``rules_by``, who may change the rules; ``default_assignment``, who may
    settle a question that names nobody (docs/teams.md).
    """
    return WebApp(
        relay,
        token=token,
        hosts=hosts,
        max_streams=max_streams,
        links=links,
        origins=origins,
        team=team,
        rules_by=rules_by,
        default_assignment=default_assignment,
    )


class _SlackDesk:
    """What the Slack side may do here: read a question as it waits, and answer it
    through :meth:`WebApp.answer_as`."""

    def __init__(self, app: WebApp) -> None:
        self._app = app

    async def request_of(self, question_id: str) -> AskUserQuestionRequest | None:
        question = await self._app.relay.lookup(question_id)
        return None if question is None else question.request

    async def answer(
        self, question_id: str, answer: AskUserQuestionAnswer, user: str | None
    ) -> tuple[int, str, str]:
        body = _ANSWER_JSON.encode(encode_answer(answer)).encode()
        return await self._app.answer_as(question_id, body, user)


def team_of(relay: RelayBackend, team: Team | None, users: Mapping[str, str] | None) -> Team | None:
    """The app's team: ``team``, else the relay's (``BAD_TEAM`` when both are given and
    differ, or when a user of the team has no token here)."""
    relays = getattr(relay, "team", None)
    relays = relays if isinstance(relays, Team) else None
    if team is not None and relays is not None and team != relays:
        raise UserInteractionError("team: the app's team is not its relay's", BAD_TEAM)
    chosen = team if team is not None else relays
    if chosen is not None and users is not None:
        for name in chosen.users:
            if name not in users:
                raise UserInteractionError(f"team: user {name} has no token here", BAD_TEAM)
    return chosen


def _user(request: Request) -> str | None:
    """The named user whose token the request carries, if any: every relay carries the
    name to the asker (whose audit records it) and to every page's ``resolved`` event."""
    user = (request.scope.get("state") or {}).get("user")
    return user if isinstance(user, str) else None


def _only(request: Request) -> tuple[str | None, str | None]:
    """The question and token of a one-question session, or ``(None, None)``."""
    state = request.scope.get("state") or {}
    return state.get("question"), state.get("token")


_LINK_CSP: Final = (
    "default-src 'none'; style-src 'nonce-{nonce}'; base-uri 'none'; form-action 'self';"
    " frame-ancestors 'none'"
)
_LINK_STYLE: Final = (
    "body{font-family:system-ui,sans-serif;line-height:1.5;margin:2rem auto;max-width:36rem;"
    "padding:0 1rem}button{font:inherit;font-weight:600;padding:.5rem 1.2rem}"
    ".source{color:#555}"
)
_LINK_HEAD: Final = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">'
    '<meta name="viewport" content="width=device-width, initial-scale=1">'
    '<title>{title}</title><style nonce="{nonce}">{style}</style></head><body><main>'
)
_LINK_REFUSED: Final = (
    "<h1>This link cannot be used</h1>"
    '<p data-testid="link-refused">{message}.</p>'
    "<p>Ask for a new link, or open the page with its token.</p></main></body></html>"
)
_LINK_OFFER: Final = (
    "<h1>A question waits for your answer</h1>"
    '<p class="source" data-testid="link-source">{source}</p>'
    '<p data-testid="link-question">{question}</p>'
    '<form method="post" action="/link"><input type="hidden" name="t" value="{token}">'
    '<button type="submit" data-testid="link-open">Open this question</button></form>'
    "<p>The link works once: the button opens the question, for you alone.</p>"
    "</main></body></html>"
)
LINK_SHOWN: Final = 300
"""The most characters of a question, and of its source, that a link's page shows."""


def _link_response(status: int, title: str, body: str) -> Response:
    nonce = secrets.token_urlsafe(16)
    head = _LINK_HEAD.format(title=title, nonce=nonce, style=_LINK_STYLE)
    # ``strict-origin``, not the app's ``no-referrer``: under that, a browser sends
    # ``Origin: null`` with the form's POST, which the guard refuses as cross-site.
    headers = {
        "content-security-policy": _LINK_CSP.format(nonce=nonce),
        "referrer-policy": "strict-origin",
    }
    return HTMLResponse(head + body, status_code=status, headers=headers)


def _link_page(status: int, message: str) -> Response:
    text = html.escape(message[:1].upper() + message[1:])
    return _link_response(status, "Answer link", _LINK_REFUSED.format(message=text))


def _shown(text: str) -> str:
    return html.escape(text if len(text) <= LINK_SHOWN else text[: LINK_SHOWN - 1] + "…")


def _link_refused(error: UserInteractionError) -> Response:
    """The page of a link refused: 503 when a store could not say, else 403."""
    away = error.code in (RELAY_UNAVAILABLE, LINK_STORE_UNAVAILABLE)
    return _link_page(503 if away else 403, error.message)


def _link_offer(request: AskUserQuestionRequest, token: str) -> Response:
    """The page of a valid link: who asks and what (every model string escaped for HTML,
    and no script at all), and the button whose ``POST`` redeems the link."""
    view = present(request)
    first = view.questions[0]
    said = first.question.split("\n", 1)[0]
    if first.header:
        said = f"{first.header}: {said}"
    if len(view.questions) > 1:
        said += f" (+{len(view.questions) - 1} more)"
    summary = view.provenance.summary() if view.provenance is not None else ""
    source = f"Asked by {summary}" if summary else "The asker did not say who it is"
    body = _LINK_OFFER.format(
        source=_shown(source), question=_shown(said), token=html.escape(token, quote=True)
    )
    return _link_response(200, "Answer a question", body)
