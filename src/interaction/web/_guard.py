"""The guard in front of every route: the Host and Origin checks, the tokens of the one
owner and of named users, sign-in by a trusted reverse proxy, and a one-question session
opened by an answer link; safe headers on every response.

A route reads who the guard let in with :func:`_user` and :func:`_only`.
"""

from __future__ import annotations

import ipaddress
import re
import secrets
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from starlette.requests import HTTPConnection, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ._json import _error
from ._links import LINK_PATH

__all__ = [
    "HOSTS_SEEN",
    "LOOPBACK_NAMES",
    "MIN_TOKEN",
    "PUBLIC_PATHS",
    "SECURITY_HEADERS",
    "SHELL_FILES",
    "ProxySignIn",
    "check_users",
    "parse_host",
]

LOOPBACK_NAMES: Final = ("127.0.0.1", "localhost", "[::1]")
HOSTS_SEEN: Final = 256
"""How many ``Host`` values the guard remembers its verdict on (any value, so bounded)."""


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


def _user(request: Request) -> str | None:
    """The named user whose token the request carries, if any: every relay carries the
    name to the asker (whose audit records it) and to every page's ``resolved`` event."""
    user = (request.scope.get("state") or {}).get("user")
    return user if isinstance(user, str) else None


def _only(request: Request) -> tuple[str | None, str | None]:
    """The question and token of a one-question session, or ``(None, None)``."""
    state = request.scope.get("state") or {}
    return state.get("question"), state.get("token")
