"""The ASGI app: the page, the JSON API and the event stream, behind the token.

:class:`WebApp` puts the rooms of ``interaction.web`` together and holds the route table:
``_guard`` (Host and Origin, tokens, proxy sign-in, one-question sessions), ``_access``
(who sees and who may settle a question), ``_streams`` (the event stream), ``_answers``
(answer and dismiss, also for Slack and Telegram), ``_links`` (the answer link's page),
``_slack`` (Slack's Request URL), ``_rules`` and ``_push_routes``, and ``_json`` (the
JSON shapes and errors). The page, its shell files and the small routes are here.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import OrderedDict
from collections.abc import Collection, Mapping
from importlib import resources
from typing import TYPE_CHECKING, Final

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .._core import Assignment, Team, UserInteractionError
from ..policies import RuleStore
from ..relay import Relay, RelayBackend
from ..signing import AnswerLinks
from ._access import Access, team_of
from ._answers import Answers, PageDesk, QuestionMemory
from ._guard import LOOPBACK_NAMES, SHELL_FILES, ProxySignIn, _Guard, _only, _user, check_users
from ._json import _error, question_json, status_of
from ._links import LINK_PATH, LinkPages
from ._push_routes import WebPush, push_routes
from ._rules import rule_routes
from ._slack import SLACK_PATH, slack_routes
from ._streams import DEFAULT_MAX_STREAMS, EventStreams

if TYPE_CHECKING:
    from ..notify import AnswerDesk, SlackInteractivity

__all__ = ["WebApp", "check_limit", "create_app"]

_ASSETS: Final = resources.files("interaction.web") / "static"

_FILE_CSP: Final = "default-src 'none'; connect-src 'self'; frame-ancestors 'none'"
"""The CSP of the shell files: the service worker, whose own CSP this is, may fetch the
page from its origin and nothing else."""


def check_limit(name: str, value: object) -> int:
    """``value`` if it is a positive ``int``; ``ValueError`` naming ``name`` otherwise."""
    if type(value) is not int or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


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
        self.access = Access(self.team, default_assignment, rules_by)
        # The in-memory relay holds its questions in this process: a lookup costs no more
        # than this cache would, so only a shared relay's questions are kept.
        memory = QuestionMemory(keeps_requests=not isinstance(relay, Relay))
        self._answers = Answers(relay, self.access, memory)
        self._events = EventStreams(relay, self.max_streams, self.access, memory)
        self._links = LinkPages(links, relay, self.users)
        self._page = _page(rules is not None, push is not None)
        self._files = {
            path: ((_ASSETS / name).read_bytes(), media)
            for path, (name, media) in SHELL_FILES.items()
        }
        routes = [
            Route("/", self.index),
            Route("/api/questions", self.list_questions),
            Route("/api/questions/{id}/answer", self._answers.answer, methods=["POST"]),
            Route("/api/questions/{id}/cancel", self._answers.cancel, methods=["POST"]),
            Route("/api/events", self._events.events),
            Route("/api/ping", self.ping, methods=["POST"]),
            Route("/api/me", self.me),
            *(Route(path, self.shell_file) for path in SHELL_FILES),
            *(rule_routes(rules, self.access.may_change_rules) if rules is not None else []),
            *(push_routes(push) if push is not None else []),
            Route(LINK_PATH, self._links.link, methods=["GET"]),
            Route(LINK_PATH, self._links.open_link, methods=["POST"]),
            *(slack_routes(slack, self.answer_desk()) if slack is not None else []),
        ]
        self._routes = Starlette(
            routes=routes,
            exception_handlers={HTTPException: self._http_error, Exception: self._crash},
        )
        self._app = _Guard(
            self._routes,
            token,
            hosts,
            self._links.question_of if links is not None else None,
            origins,
            users=self.users,
            signed=SLACK_PATH if slack is not None else None,
            proxy=proxy,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)

    # What tests watch of the event streams: the open ones, the SSE texts kept, how many
    # streams opened and how many keep-alives went out.

    @property
    def _streams(self) -> set[asyncio.Future[None]]:
        return self._events.open

    @property
    def _texts(self) -> OrderedDict[str, str]:
        return self._events.texts

    @property
    def _opened(self) -> int:
        return self._events.opened

    @property
    def _keepalives(self) -> int:
        return self._events.keepalives

    def close_streams(self) -> None:
        """End every open event stream (with a ``closing`` event) and refuse new ones."""
        self._events.close()

    async def aclose(self) -> None:
        """Stop the work the app does beside its requests (Slack clicks being settled)."""
        if self.slack is not None:
            await self.slack.aclose()

    async def answer_as(
        self, question_id: str, body: bytes, user: str | None
    ) -> tuple[int, str, str]:
        """The page's own answer under ``user``'s name (:meth:`Answers.answer_as`)."""
        return await self._answers.answer_as(question_id, body, user)

    def answer_desk(self) -> AnswerDesk:
        """The page's answer, lent to another channel (a Slack or Telegram click)."""
        return PageDesk(self.relay, self._answers)

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

    async def list_questions(self, request: Request) -> Response:
        only = _only(request)[0]
        try:
            snapshot = await self.relay.snapshot()
        except UserInteractionError as error:
            return _error(status_of(error.code), error.code, error.message)
        user = _user(request)
        shown = [
            q
            for q in snapshot.questions
            if (only is None or q.id == only) and self.access.sees(user, q)
        ]
        return JSONResponse({"questions": [question_json(q) for q in shown]})

    async def ping(self, request: Request) -> Response:
        return Response(status_code=204)


def _page(rules: bool, push: bool) -> str:
    """The page, its script and style inlined, told whether it offers rules and push."""
    page = (_ASSETS / "page.html").read_text("utf-8")
    script = (_ASSETS / "app.js").read_text("utf-8")
    style = (_ASSETS / "app.css").read_text("utf-8")
    return (
        page.replace("{{rules}}", "yes" if rules else "no")
        .replace("{{push}}", "yes" if push else "no")
        .replace("{{style}}", style)
        .replace("{{script}}", script)
    )


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
