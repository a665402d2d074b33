"""Run the app with uvicorn, on loopback unless told otherwise (the connection layer,
its limits and its accept loop, is in ``_uvicorn``)."""

from __future__ import annotations

import asyncio
import math
import secrets
import socket
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Final
from urllib.parse import urlsplit

import uvicorn

from .._core import Assignment, Team
from ..policies import RuleStore
from ..relay import RelayBackend
from ..signing import AnswerLinks
from ._access import team_of
from ._app import WebApp, check_limit
from ._guard import LOOPBACK_NAMES, ProxySignIn, check_users, parse_host
from ._push_routes import WebPush
from ._streams import DEFAULT_MAX_STREAMS
from ._uvicorn import _Limits, _Protocol, _Server

if TYPE_CHECKING:
    from ..notify import AnswerDesk, SlackInteractivity

__all__ = ["DEFAULT_MAX_CONNECTIONS", "DEFAULT_REQUEST_TIMEOUT", "WebServer"]

_LOOPBACK: Final = ("127.0.0.1", "localhost", "::1")
_ANY: Final = ("0.0.0.0", "::", "")
DEFAULT_MAX_CONNECTIONS: Final = 256
"""How many connections :class:`WebServer` serves at once by default."""
DEFAULT_REQUEST_TIMEOUT: Final = 10.0
"""How many seconds a request's head and body may take to arrive, by default."""


def check_public_url(url: str) -> str:
    """``url`` without a trailing slash, if it can be the page's public address:
    ``http(s)://HOST[:PORT]`` (the root of its host: the page calls ``/api/...``), no
    query, no fragment; ``ValueError`` otherwise."""
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018  # a bad port raises here
    except ValueError:
        raise ValueError(f"--public-url {url!r} has a bad port") from None
    if (
        parts.scheme not in {"http", "https"}
        or not parts.hostname
        or parts.path not in {"", "/"}  # the page's script calls /api/... from the root
        or parts.query
        or parts.fragment
    ):
        raise ValueError(f"--public-url {url!r} is not a page address: use https://HOST[:PORT]")
    return url.rstrip("/")


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def _proxy(
    trusted: tuple[str, ...], header: str | None, users: Mapping[str, str] | None
) -> ProxySignIn | None:
    """The sign-in of ``trusted_proxies`` and ``user_header``, given both or neither."""
    if header is None:
        if trusted:
            raise ValueError("trusted_proxies take the user from a header: give user_header")
        return None
    if users is None:
        raise ValueError("user_header names users: give users (name -> token) too")
    return ProxySignIn.of(trusted, header)


class WebServer:
    """Serves a relay's page and API; :attr:`url` (with the token) is known once started.

    ``port=0`` picks a free port. The socket is bound and listening when :meth:`start`
    returns. Use it as ``async with WebServer(relay) as server:``.

    ``hosts`` names the extra ``Host`` values to answer, for a server reached by another
    name than loopback (``host="0.0.0.0"``): ``name`` (any port) or ``name:port``. The
    loopback names with the server's port, and the bound address when it is a specific
    one, are always answered. With ``rules`` (a :class:`~interaction.policies.RuleStore`),
    the page also lists, adds and revokes the policy rules (``/api/rules``).
    ``links`` (:class:`~interaction.signing.AnswerLinks`) lets the answer links they issue
    open the page on their one question (docs/notify.md). ``public_url`` is the page's
    address as people reach it (behind a reverse proxy with TLS, say): :attr:`url` and
    answer links use it, and its host and origin are answered.

    ``users`` (name -> token) gives each person a token of their own instead of the one
    ``token``: :meth:`user_url` is a user's link, and an answer or a dismissal made with a
    user's token names the user to the asker's :class:`~interaction.audit.AuditProvider`
    (with the in-memory :class:`~interaction.relay.Relay`). Names are 1-64 letters, digits
    or ``._@-``; tokens at least 16 letters, digits or ``._~-``, one per user. ``team``
    (:class:`~interaction.Team`, by default the relay's) groups them: each sees the
    questions assigned to them or to nobody (its ``see_all`` users see all), and a claim
    on one assigned to others is ``403 NOT_ASSIGNED``; with ``rules_by`` only its
    assignees may add or revoke rules, and with ``default_assignment`` only its assignees
    see and settle the questions that name nobody (docs/teams.md).
    ``user_header`` (``"X-Forwarded-Email"``) signs users in through an authenticating
    reverse proxy at one of ``trusted_proxies`` (IP addresses or CIDR networks): a request
    whose peer is one of them is the user whose name the header holds, exactly; the header
    from any other peer, or naming no user, is ``401`` (docs/deploy.md).

    ``push`` (:class:`~interaction.web.WebPush`) lets the page subscribe its device to Web
    Push notices ("Notify this device"), kept per named user (docs/notify.md).

    ``max_connections`` connections are served at once (one more is answered ``503
    TOO_MANY_CONNECTIONS``), ``max_streams`` event streams are open at once (one more is
    ``503 TOO_MANY_STREAMS``), and a request's head and body must arrive within
    ``request_timeout`` seconds. See docs/web.md, "Limits".
    """

    def __init__(
        self,
        relay: RelayBackend,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        hosts: Iterable[str] = (),
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        max_streams: int = DEFAULT_MAX_STREAMS,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        rules: RuleStore | None = None,
        links: AnswerLinks | None = None,
        public_url: str | None = None,
        users: Mapping[str, str] | None = None,
        trusted_proxies: Iterable[str] = (),
        user_header: str | None = None,
        slack: SlackInteractivity | None = None,
        team: Team | None = None,
        rules_by: Assignment | None = None,
        push: WebPush | None = None,
        default_assignment: Assignment | None = None,
    ) -> None:
        if users is not None and token is not None:
            raise ValueError("give named users or one token, not both")
        self.users = None if users is None else check_users(users)
        self.proxy = _proxy(tuple(trusted_proxies), user_header, self.users)
        self.team = team_of(relay, team, self.users)
        self.rules_by = rules_by
        self.default_assignment = default_assignment
        self.relay = relay
        self.slack = slack
        self.rules = rules
        self.push = push
        self.links = links
        self.public_url = None if public_url is None else check_public_url(public_url)
        self.host = host
        self._token = None if self.users is not None else token or secrets.token_urlsafe(24)
        self.port = port
        self.hosts = tuple(hosts)
        for entry in self.hosts:
            if not parse_host(entry)[0]:
                raise ValueError(f"not a host name or host:port: {entry!r}")
        self.max_connections = check_limit("max_connections", max_connections)
        self.max_streams = check_limit("max_streams", max_streams)
        if not (
            type(request_timeout) in (int, float)
            and math.isfinite(request_timeout)
            and request_timeout > 0
        ):
            raise ValueError(
                f"request_timeout must be a positive number of seconds, got {request_timeout!r}"
            )
        self.request_timeout = float(request_timeout)
        self._server: _Server | None = None
        self._task: asyncio.Task[None] | None = None
        self._app: WebApp | None = None

    @property
    def base(self) -> str:
        """Where the page is reached: the public URL when one is given."""
        if self.public_url is not None:
            return self.public_url
        if self.host in _ANY and self.hosts:  # reached by the first name given
            name, port = parse_host(self.hosts[0])
            return f"http://{name}:{port or self.port}"
        if self.host in _ANY:  # no name given: the one that answers here is loopback's
            return f"http://127.0.0.1:{self.port}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def url(self) -> str:
        """The page's address, with the token in its fragment (never sent over the network,
        never in a ``Referer``): what to open in a browser."""
        return f"{self.base}/#token={self.token}"

    @property
    def token(self) -> str:
        """The one token of a server without named users (each user has their own)."""
        if self._token is None:
            raise ValueError("this server has named users: each has a link, user_url(name)")
        return self._token

    def user_url(self, name: str) -> str:
        """The page's address for the named user ``name``, their token in its fragment."""
        token = None if self.users is None else self.users.get(name)
        if token is None:
            raise ValueError(f"this server has no user named {name!r}")
        return f"{self.base}/#token={token}"

    def allowed_hosts(self) -> set[str]:
        """The ``Host`` values this server answers (valid once started)."""
        names = set(LOOPBACK_NAMES)
        if self.host not in _LOOPBACK and self.host not in _ANY:
            names.add(f"[{self.host}]" if ":" in self.host else self.host)
        public = set() if self.public_url is None else {urlsplit(self.public_url).netloc}
        return {f"{name}:{self.port}" for name in names} | set(self.hosts) | public

    async def start(self) -> None:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            # Accepted sockets inherit it: without it a small response waits ~40 ms (Nagle).
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.bind((self.host, self.port))
            sock.listen(1024)
            sock.setblocking(False)
        except BaseException:  # a port in use, a bad address: no socket left open
            sock.close()
            raise
        self.port = sock.getsockname()[1]
        origins = () if self.public_url is None else (_origin(self.public_url),)
        self._app = WebApp(
            self.relay,
            token=self._token,
            hosts=self.allowed_hosts(),
            max_streams=self.max_streams,
            rules=self.rules,
            links=self.links,
            origins=origins,
            users=self.users,
            proxy=self.proxy,
            slack=self.slack,
            team=self.team,
            rules_by=self.rules_by,
            default_assignment=self.default_assignment,
            push=self.push,
        )
        # An idle connection is closed by the request timeout alone: uvicorn's own
        # keep-alive timer (5 s) matches httpx's pool expiry (5 s), and a client that
        # reuses a connection just as the server closes it gets ReadError on its POST.
        config = uvicorn.Config(
            self._app,
            log_level="warning",
            lifespan="off",
            http=_Protocol,
            # The peer is the TCP peer: a trusted proxy is told by it (ProxySignIn), so no
            # X-Forwarded-For may rewrite it.
            proxy_headers=False,
            timeout_keep_alive=math.ceil(self.request_timeout),
        )
        limits = _Limits(self.max_connections, self.request_timeout)
        self._server = _Server(config, limits, self._app.close_streams)
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]))

    async def stop(self) -> None:
        """Stop serving: open event streams get a ``closing`` event and end."""
        if self._server is not None and self._task is not None:
            assert self._app is not None
            self._app.close_streams()
            self._server.should_exit = True
            self._server.exit_now.set()
            await self._task
            await self._app.aclose()
            self._server = self._task = self._app = None

    def answer_desk(self) -> AnswerDesk:
        """The page's own answer route, for an answer taken in another channel under a
        named user's name (a Telegram button): every check the route makes applies."""
        if self._app is None:
            raise RuntimeError("the server is not running")
        return self._app.answer_desk()

    async def __aenter__(self) -> WebServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
