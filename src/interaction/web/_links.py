"""Answer links (docs/notify.md): ``GET /link?t=...`` shows who asks and what, with one
button; its ``POST /link`` redeems the link and opens a one-question session on the page.

Every string of the question is escaped for HTML, and the link's page runs no script.
"""

from __future__ import annotations

import html
import secrets
import time
from collections import OrderedDict
from collections.abc import Collection
from typing import Final
from urllib.parse import parse_qs

from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from .._core import AskUserQuestionRequest, UserInteractionError
from ..display import present
from ..relay import RELAY_UNAVAILABLE, PendingQuestion, RelayBackend
from ..signing import LINK_STORE_UNAVAILABLE, AnswerLinks

__all__ = ["LINK_FORM_MAX", "LINK_PATH", "LINK_SHOWN", "SCOPED_KEPT", "LinkPages"]

LINK_PATH: Final = "/link"
LINK_FORM_MAX: Final = 2_048
"""The largest answer link form read (the link's token is at most 400 characters)."""
SCOPED_KEPT: Final = 10_000
"""How many one-question sessions (from answer links) the app holds at once."""

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


class LinkPages:
    """The answer link's two routes over ``links``, and the one-question sessions they
    open: the guard asks :meth:`question_of` for a session's question. ``users`` are the
    server's named users (a link issued to anyone else opens a session that names nobody).
    """

    def __init__(
        self, links: AnswerLinks | None, relay: RelayBackend, users: Collection[str] | None
    ) -> None:
        self.links = links
        self.relay = relay
        self.users = users
        # A one-question session: selector -> (verifier, question id, end, user).
        self._scoped: OrderedDict[str, tuple[bytes, str, float, str | None]] = OrderedDict()

    def question_of(self, token: str) -> tuple[str, str | None] | None:
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
