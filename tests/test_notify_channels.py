"""The mail and Slack channels end to end: a real SMTP server (aiosmtpd) in the test
process, a local receiver standing in for Slack's URL, and the answer link opened in
Chromium, where it opens that one question and nothing else."""

from __future__ import annotations

import asyncio
import logging
import re
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

import httpx
import pytest
from playwright.async_api import Browser
from slack_sdk.models.blocks import ActionsBlock, Block, ButtonElement

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    Provenance,
    UserInteractionError,
    ask,
    provide,
)
from interaction.notify import (
    EmailNotifier,
    ManualClock,
    Notifications,
    Retry,
    SlackNotifier,
    Step,
    WebhookNotifier,
    escape_mrkdwn,
)
from interaction.relay import Relay
from interaction.signing import LINK_REFUSED, AnswerLinks
from interaction.web import WebServer

from .loopback import free_port
from .notify_helpers import receiving, smtp_server

Option = AskUserQuestionOption
HOSTILE = "<b>bold</b> & <!channel> <script>alert(1)</script>"
PKG = AskUserQuestionItem(
    "pkg",
    f"Which package manager? {HOSTILE}",
    options=[Option("pnpm (Recommended)", "fast"), Option("npm")],
)
OTHER = AskUserQuestionItem("notes", "Anything else?")
FROM_BOT = Provenance(source="deploy-bot", host="build-7")


@asynccontextmanager
async def answering(
    steps: list[Step], links: AnswerLinks
) -> AsyncIterator[tuple[Relay, WebServer, Notifications]]:
    relay = Relay()
    with provide(relay):
        async with WebServer(relay, links=links) as server:
            notifications = Notifications(
                relay, steps, links=links, public_url=server.base, clock=ManualClock()
            )
            async with notifications:
                try:
                    yield relay, server, notifications
                finally:
                    relay.close()


def link_in(text: str) -> str:
    found = re.search(r"Answer: (\S+)", text)
    assert found is not None, text
    return found.group(1)


async def test_a_mail_is_sent_and_its_link_opens_that_question_once(browser: Browser) -> None:
    moment = [1_000_000.0]
    links = AnswerLinks(secret=b"s" * 32, ttl=600, clock=lambda: moment[0])
    with smtp_server() as (mailbox, port):
        channel = EmailNotifier(
            host="127.0.0.1", port=port, sender="agent@example.com", to=["alice@example.com"]
        )
        async with answering([Step(channel)], links) as (relay, server, _):
            other = asyncio.create_task(ask(AskUserQuestionRequest([OTHER])))
            mail_one = await mailbox.next()
            task = asyncio.create_task(ask(AskUserQuestionRequest([PKG], provenance=FROM_BOT)))
            message = await mailbox.next()
            assert mailbox.envelopes[-1] == ("agent@example.com", ["alice@example.com"])
            assert message["Subject"] == f"deploy-bot asks: Which package manager? {HOSTILE}"
            plain = message.get_body(("plain",))
            rich = message.get_body(("html",))
            assert plain is not None
            assert rich is not None
            text = plain.get_content().replace("\r\n", "\n")  # SMTP's line ends
            markup = rich.get_content()
            assert text.startswith("(deploy-bot on build-7 · asked just now)\n")
            assert "  - pnpm (recommended): fast" in text
            assert "<script>" not in markup  # every model string is escaped for HTML
            assert "&lt;script&gt;alert(1)&lt;/script&gt;" in markup
            link = link_in(text)
            assert f'href="{link.replace("&", "&amp;")}"' in markup
            assert link.startswith(f"{server.base}/link?t=")

            page = await browser.new_page()
            try:
                await page.goto(link)
                await page.get_by_test_id("link-open").click()  # the link's page: one button
                card = page.get_by_test_id("question")
                await card.wait_for()
                assert await card.get_attribute("data-question-id") == "pkg"
                shown = await page.get_by_test_id("question-text").inner_text()
                assert shown == f"Which package manager? {HOSTILE}"
                assert await page.get_by_test_id("queue").inner_text() == ""  # not the other one
                await page.get_by_text("npm", exact=True).click()
                await page.get_by_test_id("submit").click()
                answer = await task
                assert answer == AskUserQuestionAnswer([AskUserQuestionAnswerItem("pkg", ["npm"])])
                # The session the link opened answers that question and nothing else.
                other_id = relay.pending()[0].id
                # The page keeps the session's token, from the redirect's fragment, in the tab.
                auth = "{Authorization: 'Bearer ' + sessionStorage.getItem('interaction-token')}"
                status = await page.evaluate(
                    f"""async (id) => (await fetch(`/api/questions/${{id}}/cancel`,
                        {{method: "POST", headers: {auth}}})).status""",
                    other_id,
                )
                assert status == 403
                listed = await page.evaluate(
                    f"async () => (await fetch('/api/questions', {{headers: {auth}}})).json()"
                )
                assert listed == {"questions": []}
                # Used once: refused from then on.
                response = await page.goto(link)
                assert response is not None
                assert response.status == 403
                refused = page.get_by_test_id("link-refused")
                assert await refused.inner_text() == "This answer link was already used."
            finally:
                await page.close()

            first_link = link_in(mail_one.get_body(("plain",)).get_content())  # type: ignore[union-attr]
            async with httpx.AsyncClient(base_url=server.base) as http:
                altered = first_link[:-3] + ("AAA" if not first_link.endswith("AAA") else "BBB")
                reply = await http.get(altered.removeprefix(server.base))
                assert (reply.status_code, "is not valid" in reply.text) == (403, True)
                moment[0] += 601  # past the link's lifetime
                reply = await http.get(first_link.removeprefix(server.base))
                assert (reply.status_code, "has expired" in reply.text) == (403, True)
                assert (await http.get("/api/questions")).status_code == 401  # no token: none
            relay.close()
            with pytest.raises(UserInteractionError):
                await other


async def test_mails_are_dated_and_the_settle_mail_threads_with_the_first() -> None:
    with smtp_server() as (mailbox, port):
        channel = EmailNotifier(
            host="127.0.0.1",
            port=port,
            sender="agent@example.com",
            to=["alice@example.com"],
            on_settle=True,
        )
        async with answering([Step(channel)], AnswerLinks(secret=b"s" * 32)) as (relay, _, _):
            before = datetime.now(UTC).replace(microsecond=0)
            task = asyncio.create_task(ask(AskUserQuestionRequest([OTHER])))
            first = await mailbox.next()
            (question,) = relay.pending()
            relay.cancel(question.id)
            with pytest.raises(UserInteractionError):
                await task
            settle = await mailbox.next()
            after = datetime.now(UTC)
    for message in (first, settle):
        sent = parsedate_to_datetime(message["Date"])  # RFC 5322 §3.6: every mail has one
        assert sent.utcoffset() == timedelta(0)
        assert before <= sent <= after
    assert first["Message-ID"] == f"<interaction.{question.id}.0@example.com>"
    assert first["In-Reply-To"] is None
    assert settle["Subject"] == "Re: A question waits: Anything else?"
    assert settle["Message-ID"] == f"<interaction.{question.id}.0.settled@example.com>"
    assert settle["In-Reply-To"] == first["Message-ID"]  # one thread in every mail client
    assert settle["References"] == first["Message-ID"]
    body = settle.get_body(("plain",))
    assert body is not None
    assert body.get_content() == "The question was dismissed; the link no longer works.\r\n"


def test_answer_links_are_signed_scoped_expiring_and_single_use() -> None:
    moment = [0.0]
    links = AnswerLinks(secret="k" * 32, ttl=60, clock=lambda: moment[0])
    token = links.token("abc_-1")
    assert links.verify(token) == "abc_-1"
    assert links.redeem(token) == "abc_-1"
    for bad, why in (
        (token, "was already used"),
        (links.token("abc_-1").replace("abc_-1", "abc_-2"), "is not valid"),
        (AnswerLinks(secret="x" * 32).token("abc_-1"), "is not valid"),
        ("v1.a.b", "is not valid"),
        ("x" * 401, "is not valid"),
    ):
        with pytest.raises(UserInteractionError) as caught:
            links.redeem(bad)
        assert caught.value.code == LINK_REFUSED
        assert caught.value.message == f"this answer link {why}"
    late = links.token("q")
    moment[0] = 60
    with pytest.raises(UserInteractionError, match="has expired"):
        links.redeem(late)
    with pytest.raises(ValueError, match="at least 16 bytes"):
        AnswerLinks(secret="short")
    with pytest.raises(ValueError, match="URL-safe"):
        links.token("a/b")


async def test_an_unreachable_smtp_server_is_logged_and_never_fails_the_ask(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = ManualClock()
    channel = EmailNotifier(host="127.0.0.1", port=free_port(), sender="a@x.org", to=["b@x.org"])
    relay = Relay()
    with provide(relay):
        async with Notifications(relay, [Step(channel)], clock=clock, retry=Retry(attempts=2)):
            task = asyncio.create_task(ask(AskUserQuestionRequest([OTHER])))
            await clock.until_sleeping()
            clock.advance(1)
            (question,) = relay.pending()
            relay.answer(question.id, AskUserQuestionAnswer([AskUserQuestionAnswerItem("notes")]))
            assert (await task).answers == (AskUserQuestionAnswerItem("notes"),)
    assert "email via 127.0.0.1: pending notice failed (attempt 1/2): could not send" in caplog.text


def test_email_is_configured_or_refused_at_start() -> None:
    with pytest.raises(ValueError, match="a sender and at least one recipient"):
        EmailNotifier(host="h", sender="me", to=["you@x.org"])
    with pytest.raises(ValueError, match="a sender and at least one recipient"):
        EmailNotifier(host="h", sender="me@x.org", to=[])


# ---------------------------------------------------------------------------- Slack


async def test_slack_gets_block_kit_built_by_slack_sdk_with_an_answer_button() -> None:
    links = AnswerLinks(secret=b"s" * 32)
    async with receiving(path="/services/T000/B000/XXXX") as receiver:
        channel = SlackNotifier(receiver.url, on_settle=True)
        assert channel.name == "slack"  # the URL is the secret: never in a log line
        async with answering([Step(channel)], links) as (relay, server, notifications):
            task = asyncio.create_task(ask(AskUserQuestionRequest([PKG], provenance=FROM_BOT)))
            call = await receiver.next_call()
            payload = call.json()
            subject = f"deploy-bot asks: Which package manager? {HOSTILE}"
            assert payload["text"] == escape_mrkdwn(subject)
            assert payload["mrkdwn"] is False  # the fallback text is never formatted
            assert "<!channel>" not in payload["text"]  # no mention reaches the channel
            blocks = Block.parse_all(payload["blocks"])
            for block in blocks:
                block.validate_json()  # slack_sdk's own checks of every block
            assert [block.type for block in blocks] == [
                "header",
                "context",
                "section",
                "actions",
                "context",
            ]
            assert payload["blocks"][2]["text"]["type"] == "plain_text"  # never mrkdwn
            actions = blocks[3]
            assert isinstance(actions, ActionsBlock)
            (button,) = actions.elements
            assert isinstance(button, ButtonElement)
            await notifications.caught_up()
            (question,) = relay.pending()
            assert button.url is not None
            assert button.url.startswith(f"{server.base}/link?t=v1.{question.id}.")
            relay.answer(question.id, AskUserQuestionAnswer([AskUserQuestionAnswerItem("pkg")]))
            await task
            settled = await receiver.next_call()
            said = escape_mrkdwn(f"{subject}: it was answered.")
            assert settled.json() == {"text": said, "mrkdwn": False}


async def test_slack_text_keeps_the_questions_stars_underscores_and_tildes() -> None:
    marked = AskUserQuestionItem("fmt", "Ship *bold* _it_ ~strike~ `code` <https://x.example|x>?")
    async with receiving(path="/services/x") as receiver:
        relay = Relay()
        with provide(relay):
            channel = SlackNotifier(receiver.url)
            async with Notifications(relay, [Step(channel)], clock=ManualClock()):
                task = asyncio.create_task(ask(AskUserQuestionRequest([marked])))
                payload = (await receiver.next_call()).json()
                relay.close()
                with pytest.raises(UserInteractionError):
                    await task
    assert payload["text"] == (
        "A question waits: Ship *bold* _it_ ~strike~ `code` &lt;https://x.example|x&gt;?"
    )
    assert payload["mrkdwn"] is False  # Slack shows the text as typed, never formatted


class Heard(logging.Handler):
    """The notify log's records, and an event set when one holds ``wanted``."""

    def __init__(self, wanted: str) -> None:
        super().__init__()
        self.wanted = wanted
        self.lines: list[str] = []
        self.event = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
        if self.wanted in self.lines[-1]:
            self.event.set()


@pytest.mark.parametrize("kind", ["slack", "webhook"])
async def test_no_channel_follows_a_redirect_to_another_host(kind: str) -> None:
    async with (
        receiving(path="/elsewhere") as elsewhere,
        receiving([307], path="/services/x", redirect_to=elsewhere.url) as receiver,
    ):
        channel: SlackNotifier | WebhookNotifier
        if kind == "slack":
            channel, name, peer = SlackNotifier(receiver.url), "slack", "Slack"
        else:
            port = receiver.url.split(":")[2].split("/")[0]
            channel = WebhookNotifier(receiver.url, "s" * 32)
            name, peer = f"webhook http://127.0.0.1:{port}", "it"
        refused = f"{name}: pending notice refused: {peer} answered 307, a redirect, which is"
        heard = Heard(refused)
        logger = logging.getLogger("interaction.notify")
        logger.addHandler(heard)
        try:
            async with answering([Step(channel)], AnswerLinks(secret=b"s" * 32)) as (relay, _, _):
                task = asyncio.create_task(ask(AskUserQuestionRequest([PKG])))
                assert (await receiver.next_call()).status == 307
                # Either the refusal is logged, or the notice (answer link included) was
                # re-posted to the host the 307 names: whichever comes first.
                followed = asyncio.create_task(elsewhere.next_call())
                told = asyncio.create_task(heard.event.wait())
                await asyncio.wait({followed, told}, return_when=asyncio.FIRST_COMPLETED)
                followed.cancel()
                told.cancel()
                assert elsewhere.calls == []
                relay.close()
                with pytest.raises(UserInteractionError):
                    await task
        finally:
            logger.removeHandler(heard)
    assert f"notify: {refused} never followed" in heard.lines
    assert len(receiver.calls) == 1  # refused for good: not retried either
    assert elsewhere.calls == []


async def test_slack_500s_are_retried_and_a_404_is_not(caplog: pytest.LogCaptureFixture) -> None:
    clock = ManualClock()
    async with receiving([500, 404], path="/services/x") as receiver:
        relay = Relay()
        with provide(relay):
            channel = SlackNotifier(receiver.url)
            async with Notifications(relay, [Step(channel)], clock=clock, retry=Retry(attempts=3)):
                task = asyncio.create_task(ask(AskUserQuestionRequest([OTHER])))
                assert (await receiver.next_call()).status == 500
                await clock.until_sleeping()
                clock.advance(1)
                assert (await receiver.next_call()).status == 404
                relay.close()
                with pytest.raises(UserInteractionError):
                    await task
    assert (
        "slack: pending notice failed (attempt 1/3): Slack answered 500; again in 1s" in caplog.text
    )
    assert "slack: pending notice refused: Slack answered 404" in caplog.text
    assert "/services/x" not in caplog.text


async def opened_with(
    http: httpx.AsyncClient, form: dict[str, str], headers: dict[str, str] | None = None
) -> httpx.Response:
    """The POST of a link page's form, as a browser sends it from that page."""
    sent = {"Origin": str(http.base_url).rstrip("/"), "Sec-Fetch-Site": "same-origin"}
    return await http.post("/link", data=form, headers={**sent, **(headers or {})})


async def opened(
    http: httpx.AsyncClient, token: str, headers: dict[str, str] | None = None
) -> httpx.Response:
    """The POST of a link page's button."""
    return await opened_with(http, {"t": token}, headers)


async def test_an_answer_link_gives_a_token_for_its_one_question_in_the_fragment() -> None:
    links = AnswerLinks(secret=b"s" * 32)
    relay = Relay()
    with provide(relay):
        async with WebServer(relay, links=links) as server:
            arrivals = aiter(relay.subscribe())
            first = asyncio.create_task(ask(AskUserQuestionRequest([OTHER])))
            second = asyncio.create_task(ask(AskUserQuestionRequest([PKG])))
            for _ in range(2):  # both asks have reached the relay
                await anext(arrivals)
            wanted = relay.pending()[1].id
            async with httpx.AsyncClient(base_url=server.base) as browser:
                token = links.token(wanted)
                opened_ = await opened(browser, token)
                assert opened_.status_code == 303
                assert "set-cookie" not in opened_.headers
                location = opened_.headers["location"]
                assert location.startswith("/#token=")  # never sent over the network
                session = location.removeprefix("/#token=")
                scoped = {"Authorization": "Bearer " + session}
                listed = (await browser.get("/api/questions", headers=scoped)).json()
                assert [q["id"] for q in listed["questions"]] == [wanted]
                other = f"/api/questions/{relay.pending()[0].id}/cancel"
                refused = await browser.post(other, headers=scoped)
                assert refused.status_code == 403
                assert refused.json()["error"]["code"] == "FORBIDDEN"
                # Only the whole session token opens it: its selector with another verifier,
                # or the selector alone, is no token at all.
                selector, _, verifier = session.partition(".")
                for wrong in (f"{selector}.{verifier[:-1]}A", selector, f"{selector}."):
                    if wrong == session:
                        continue
                    answer = await browser.get(
                        "/api/questions", headers={"Authorization": "Bearer " + wrong}
                    )
                    assert answer.status_code == 401
                # The page's own token, in the tab that holds it, still sees the whole page.
                owner = {"Authorization": "Bearer " + server.token}
                listed = (await browser.get("/api/questions", headers=owner)).json()
                assert len(listed["questions"]) == 2
            relay.close()
            await asyncio.gather(first, second, return_exceptions=True)


async def test_a_session_token_is_compared_in_constant_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = secrets.compare_digest

    def spy(given: bytes, kept: bytes) -> bool:
        compared.append((given, kept))
        return real(given, kept)

    links = AnswerLinks(secret=b"s" * 32)
    relay = Relay()
    with provide(relay):
        async with WebServer(relay, links=links) as server:
            arrivals = aiter(relay.subscribe())
            task = asyncio.create_task(ask(AskUserQuestionRequest([OTHER])))
            await anext(arrivals)
            async with httpx.AsyncClient(base_url=server.base) as http:
                reply = await opened(http, links.token(relay.pending()[0].id))
                session = reply.headers["location"].removeprefix("/#token=")
                monkeypatch.setattr(secrets, "compare_digest", spy)
                listed = await http.get(
                    "/api/questions", headers={"Authorization": f"Bearer {session}"}
                )
                monkeypatch.undo()
                assert listed.status_code == 200
            # The session's secret part was compared with the one kept, in constant time.
            assert any(
                given == kept and session.endswith(given.decode()) for given, kept in compared
            )
            relay.close()
            await asyncio.gather(task, return_exceptions=True)


LINK_CSP = re.compile(
    r"default-src 'none'; style-src 'nonce-[A-Za-z0-9_-]{22}'; base-uri 'none';"
    r" form-action 'self'; frame-ancestors 'none'"
)


async def test_scanners_heads_and_gets_leave_the_link_to_the_persons_click() -> None:
    links = AnswerLinks(secret=b"s" * 32)
    relay = Relay()
    with provide(relay):
        async with WebServer(relay, links=links) as server:
            arrivals = aiter(relay.subscribe())
            task = asyncio.create_task(ask(AskUserQuestionRequest([PKG], provenance=FROM_BOT)))
            await anext(arrivals)
            (question,) = relay.pending()
            token = links.token(question.id)
            path = f"/link?t={token}"
            async with httpx.AsyncClient(base_url=server.base) as scanner:
                for _ in range(5):  # Safe Links, Proofpoint, an unfurler: HEAD, then GET
                    head = await scanner.head(path)
                    assert (head.status_code, head.content) == (200, b"")
                for _ in range(5):
                    page = await scanner.get(path)
                    assert page.status_code == 200
                    assert LINK_CSP.fullmatch(page.headers["content-security-policy"])
                    assert page.headers["referrer-policy"] == "strict-origin"
                    assert page.headers["x-frame-options"] == "DENY"
                    assert page.headers["cache-control"] == "no-store"
                    text = page.text
                    assert "<script" not in text.replace("&lt;script&gt;", "")
                    shown = re.search(r'data-testid="link-question">([^<]*)</p>', text)
                    assert shown is not None
                    assert shown.group(1) == (
                        "Which package manager? &lt;b&gt;bold&lt;/b&gt; &amp; &lt;!channel&gt;"
                        " &lt;script&gt;alert(1)&lt;/script&gt;"
                    )
                    source = re.search(r'data-testid="link-source">([^<]*)</p>', text)
                    assert source is not None
                    assert source.group(1) == "Asked by deploy-bot on build-7 · asked just now"
                    assert f'<input type="hidden" name="t" value="{token}">' in text
                    assert '<form method="post" action="/link">' in text
                assert links.verify(token) == question.id  # not spent by any of them
                assert relay.pending() == [question]
                # The person's click: one session; a second click is refused.
                clicks = await asyncio.gather(opened(scanner, token), opened(scanner, token))
                assert sorted(click.status_code for click in clicks) == [303, 403]
                refused = next(click for click in clicks if click.status_code == 403)
                assert "This answer link was already used." in refused.text
                assert (
                    sum(
                        click.headers.get("location", "").startswith("/#token=") for click in clicks
                    )
                    == 1
                )
                spent = await scanner.get(path)
                assert (spent.status_code, "was already used" in spent.text) == (403, True)
            relay.close()
            await asyncio.gather(task, return_exceptions=True)


async def test_a_link_opens_only_from_its_own_page() -> None:
    links = AnswerLinks(secret=b"s" * 32)
    relay = Relay()
    with provide(relay):
        async with WebServer(relay, links=links) as server:
            arrivals = aiter(relay.subscribe())
            task = asyncio.create_task(ask(AskUserQuestionRequest([OTHER])))
            await anext(arrivals)
            (question,) = relay.pending()
            token = links.token(question.id)
            async with httpx.AsyncClient(base_url=server.base) as http:
                for origin in ("http://evil.example", "null", "http://127.0.0.1:1"):
                    reply = await opened(http, token, {"Origin": origin})
                    assert reply.status_code == 403
                    assert reply.json()["error"]["code"] == "BAD_ORIGIN"
                for site in ("cross-site", "same-site"):  # a browser's word, Origin or not
                    reply = await http.post(
                        "/link", data={"t": token}, headers={"Sec-Fetch-Site": site}
                    )
                    assert reply.status_code == 403
                    assert "This answer link opens from its own page only." in reply.text
                reply = await http.post(
                    "/link", content=f"t={token}", headers={"Content-Type": "text/plain"}
                )
                assert reply.status_code == 415
                reply = await http.post("/link", data={"t": "x" * 3000})
                assert reply.status_code == 413
                for form in ({"u": token}, {"t": token, **{f"f{n}": "x" for n in range(5)}}):
                    reply = await opened_with(http, form)
                    assert (reply.status_code, "is not valid" in reply.text) == (403, True)
                assert links.verify(token) == question.id  # none of them spent it
                reply = await opened(http, token)
                assert reply.status_code == 303
            relay.close()
            await asyncio.gather(task, return_exceptions=True)


async def test_a_link_page_in_chromium_runs_no_question_html_and_its_button_opens_it(
    browser: Browser,
) -> None:
    links = AnswerLinks(secret=b"s" * 32)
    hostile = AskUserQuestionItem(
        "pkg",
        '<img src=x onerror="alert(1)"><script>alert(2)</script> *bold* _it_',
        header="<i>Tools</i>",
        options=[Option("npm"), Option("pnpm")],
    )
    relay = Relay()
    with provide(relay):
        async with WebServer(relay, links=links) as server:
            arrivals = aiter(relay.subscribe())
            task = asyncio.create_task(ask(AskUserQuestionRequest([hostile], provenance=FROM_BOT)))
            await anext(arrivals)
            (question,) = relay.pending()
            link = links.link(question.id, server.base)
            first, second = await browser.new_page(), await browser.new_page()
            try:
                for page in (first, second):
                    page.on("dialog", lambda d: pytest.fail(f"the page ran a script: {d.message}"))
                    await page.goto(link)  # each shows the page; neither spends the link
                    said = await page.get_by_test_id("link-question").inner_text()
                    assert said == (
                        '<i>Tools</i>: <img src=x onerror="alert(1)"><script>alert(2)</script>'
                        " *bold* _it_"
                    )
                    source = await page.get_by_test_id("link-source").inner_text()
                    assert source == "Asked by deploy-bot on build-7 · asked just now"
                    assert await page.locator("img, script, i").count() == 0
                await first.get_by_test_id("link-open").click()
                card = first.get_by_test_id("question")
                await card.wait_for()
                assert await card.get_attribute("data-question-id") == "pkg"
                assert first.url == f"{server.base}/"  # the token left the address bar
                await second.get_by_test_id("link-open").click()  # the second click
                refused = second.get_by_test_id("link-refused")
                await refused.wait_for()
                assert await refused.inner_text() == "This answer link was already used."
                await first.get_by_text("npm", exact=True).click()
                await first.get_by_test_id("submit").click()
                answer = await task
                assert answer == AskUserQuestionAnswer([AskUserQuestionAnswerItem("pkg", ["npm"])])
            finally:
                await first.close()
                await second.close()
            relay.close()
