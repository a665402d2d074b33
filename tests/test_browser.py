"""The answering page in a real browser: Debian's chromium, driven by Playwright.

The ``browser`` and ``site`` fixtures live in conftest.py: locally they skip when
/usr/bin/chromium is missing; under CI they fail instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Literal, cast

import httpx
import pytest
from playwright.async_api import Browser, Page, Route, expect

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    Assignment,
    ErrorCode,
    PlanReviewIntent,
    Team,
    UserInteractionError,
    ask,
    permission_question,
    provide,
)
from interaction.relay import Relay
from interaction.web import WebServer
from interaction.web._app import WebApp

from .helpers import CHECKS, NOTES
from .web_helpers import served

Item = AskUserQuestionAnswerItem
Option = AskUserQuestionOption


def asking(*questions: AskUserQuestionItem) -> asyncio.Task[AskUserQuestionAnswer]:
    return asyncio.create_task(ask(AskUserQuestionRequest(questions)))


@contextlib.asynccontextmanager
async def still_page(browser: Browser, url: str) -> AsyncIterator[Page]:
    """A page at ``url`` whose clock stands still until the test moves it (``run_for``), so
    a page's timings hold however loaded the machine is; closed however the test ends."""
    page = await browser.new_page()
    try:
        await page.clock.install()
        await page.goto(url)
        await page.clock.pause_at(await page.evaluate("Date.now() + 1000"))
        yield page
    finally:
        await page.close()


PKG = AskUserQuestionItem(
    "pkg",
    "Which package manager?",
    header="Tools",
    options=[Option("pnpm (Recommended)", "fast"), Option("npm"), Option("yarn")],
)
PLAN = AskUserQuestionItem(
    "plan",
    "Approve this plan?",
    detail="# The plan\n1. Add **CI**\n2. Ship `v2`",
    options=[Option("Approve"), Option("Revise")],
    intent=PlanReviewIntent("Approve"),
)


async def test_a_single_select(site: tuple[Relay, WebServer, Page]) -> None:
    _, _, page = site
    task = asking(PKG)
    await page.get_by_test_id("question").wait_for()
    assert await page.get_by_test_id("progress").inner_text() == "Tools"
    assert await page.locator(".badge").inner_text() == "Recommended"
    await page.get_by_text("npm", exact=True).click()
    await page.get_by_test_id("submit").click()
    assert await task == AskUserQuestionAnswer([Item("pkg", ["npm"])])
    await page.get_by_text("No question is waiting.").wait_for()


async def test_a_multi_select_with_other_text_and_a_skip(
    site: tuple[Relay, WebServer, Page],
) -> None:
    _, _, page = site
    task = asking(CHECKS, NOTES, PKG)
    await page.get_by_text("types", exact=True).click()
    await page.get_by_text("tests", exact=True).click()
    await page.get_by_test_id("other").fill("fuzzing")
    await page.get_by_test_id("next").click()
    await page.get_by_test_id("skip").click()  # skips "notes"
    await page.get_by_test_id("back").click()
    await page.get_by_test_id("back").click()
    assert await page.get_by_test_id("other").input_value() == "fuzzing"  # the draft is kept
    await page.get_by_test_id("next").click()
    await page.get_by_test_id("next").click()
    await page.get_by_test_id("other").fill("bun")  # replaces a single-select choice
    await page.get_by_test_id("review").click()  # a batch ends on its review
    await page.get_by_test_id("submit").click()
    assert await task == AskUserQuestionAnswer(
        [Item("checks", ["types", "tests"], "fuzzing"), Item("notes"), Item("pkg", custom="bun")]
    )


async def test_a_plan_review_is_a_plan_with_approve_as_the_primary_button(
    site: tuple[Relay, WebServer, Page],
) -> None:
    _, _, page = site
    task = asking(PLAN)
    review = page.get_by_test_id("plan-review")
    await review.wait_for()
    assert await page.locator("[data-testid=detail] h3").inner_text() == "The plan"
    assert await page.locator("[data-testid=detail] strong").inner_text() == "CI"
    assert await page.locator("[data-testid=detail] code").inner_text() == "v2"
    approve = page.get_by_test_id("approve")
    assert "primary" in (await approve.get_attribute("class") or "")
    assert await page.evaluate("document.activeElement.dataset.testid") == "approve"
    await approve.click()
    assert await task == AskUserQuestionAnswer([Item("plan", ["Approve"])])


async def test_cancel(site: tuple[Relay, WebServer, Page]) -> None:
    _, _, page = site
    task = asking(PKG)
    await page.get_by_test_id("cancel").click()
    with pytest.raises(UserInteractionError) as info:
        await task
    assert info.value.code == ErrorCode.ASK_CANCELLED


async def test_reload_mid_batch_keeps_the_draft_and_finishes(
    site: tuple[Relay, WebServer, Page],
) -> None:
    relay, _, page = site
    task = asking(PKG, NOTES)
    await page.get_by_text("yarn", exact=True).click()
    await page.get_by_test_id("next").click()
    await page.get_by_test_id("other").fill("half-typed")
    await page.reload()
    assert await page.get_by_test_id("progress").inner_text() == "Question 2/2"
    assert await page.get_by_test_id("other").input_value() == "half-typed"
    await page.get_by_test_id("back").click()
    assert await page.get_by_role("radio").nth(2).is_checked()
    await page.get_by_test_id("next").click()
    await page.get_by_test_id("review").click()  # a batch ends on its review
    await page.get_by_test_id("submit").click()
    assert await task == AskUserQuestionAnswer(
        [Item("pkg", ["yarn"]), Item("notes", custom="half-typed")]
    )
    assert relay.pending() == []


async def test_queued_questions_show_one_at_a_time(site: tuple[Relay, WebServer, Page]) -> None:
    _, _, page = site
    first, second = asking(PKG), asking(NOTES)
    await page.get_by_text("1 more waiting").wait_for()
    await page.get_by_test_id("skip").click()
    await page.get_by_test_id("other").fill("second")
    await page.get_by_test_id("submit").click()
    assert (await first).answers == (Item("pkg"),)
    assert (await second).answers == (Item("notes", custom="second"),)


async def test_html_in_model_text_renders_as_text_and_runs_nothing(
    site: tuple[Relay, WebServer, Page],
) -> None:
    _, _, page = site
    script = "<script>window.pwned = 1</script>"
    image = '<img src=x onerror="window.pwned = 2">'
    question = AskUserQuestionItem(
        "x",
        f"Q {script}",
        header=f"H {image}",
        detail=f"# {image}\n- {script}\n\n**{image}**",
        options=[Option(f"L {script}", f"D {image}"), Option(f"M {image}")],
    )
    task = asking(question)
    await page.get_by_test_id("question").wait_for()
    assert await page.get_by_test_id("question-text").inner_text() == f"Q {script}"
    assert image in await page.get_by_test_id("progress").inner_text()
    assert await page.locator("[data-testid=detail] h3").inner_text() == image
    assert await page.locator("main script, main img").count() == 0
    await page.get_by_text(f"M {image}").click()
    await page.get_by_test_id("submit").click()
    assert (await task).answers == (Item("x", [f"M {image}"]),)
    assert await page.evaluate("window.pwned") is None


async def test_no_token_means_no_question(browser: Browser) -> None:
    async with served() as (_, server):
        task = asking(PKG)
        for url in (server.base + "/", server.base + "/#token=wrong", server.base + "/?token=x"):
            page = await browser.new_page()  # a tab of its own: nothing kept from the last
            await page.goto(url)
            await page.get_by_test_id("unauthorized").wait_for()
            assert await page.get_by_test_id("question").count() == 0
            assert await page.get_by_test_id("status").inner_text() == "not signed in"
            await page.close()
        task.cancel()


# ---------------------------------------------------------------- the stream and the clicks


async def wait_until(condition: Callable[[], bool], what: str) -> None:
    async with asyncio.timeout(30):
        while not condition():  # noqa: ASYNC110 - polls a counter, no event to wait on
            await asyncio.sleep(0.01)
    assert condition(), what


def app_of(server: WebServer) -> WebApp:
    assert server._app is not None
    return server._app


async def test_the_token_leaves_the_address_bar_sets_no_cookie_and_survives_a_reload(
    site: tuple[Relay, WebServer, Page],
) -> None:
    _, server, page = site
    await page.get_by_text("connected", exact=True).wait_for()
    assert page.url == server.base + "/"  # the #token= fragment is gone from the address bar
    assert await page.context.cookies() == []  # no cookie at all: nothing for other ports
    assert await page.evaluate("sessionStorage.getItem('interaction-token')") == server.token
    await page.reload()  # no token in the URL any more: this tab's sessionStorage has it
    await page.get_by_text("connected", exact=True).wait_for()
    task = asking(PKG)
    await page.get_by_test_id("submit").click()
    assert (await task).answers == (Item("pkg"),)
    assert await page.context.cookies() == []


async def test_idle_keep_alives_never_drop_the_stream(
    site: tuple[Relay, WebServer, Page], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, server, page = site
    await page.get_by_text("connected", exact=True).wait_for()
    app = app_of(server)
    monkeypatch.setattr("interaction.web._streams.KEEPALIVE_SECONDS", 0.02)
    await page.reload()  # a stream opened under the short keep-alive
    await page.get_by_text("connected", exact=True).wait_for()
    opened = app._opened
    await wait_until(lambda: app._keepalives >= 20, "twenty idle spells")
    assert app._opened == opened  # the page never had to reconnect
    assert await page.get_by_test_id("status").inner_text() == "connected"
    task = asking(PKG)
    await page.get_by_test_id("question").wait_for()
    await page.get_by_test_id("cancel").click()
    with pytest.raises(UserInteractionError):
        await task


async def test_two_tabs_answer_at_once_and_the_loser_is_told_why(
    browser: Browser,
) -> None:
    async with served() as (_, server):
        context = await browser.new_context()
        winner, loser = await context.new_page(), await context.new_page()
        for page in (winner, loser):
            await page.goto(server.url)
        task = asking(PKG)
        for page in (winner, loser):
            await page.get_by_test_id("question").wait_for()
        posts: list[str] = []

        async def after_the_winner(route: Route) -> None:
            posts.append(route.request.url)
            await task  # the other tab's answer is in before this one reaches the server
            await route.continue_()

        await loser.route("**/answer", after_the_winner)
        await loser.get_by_text("yarn", exact=True).click()
        await loser.get_by_test_id("submit").click()
        await loser.get_by_test_id("submit").click(force=True)  # the busy latch holds it
        await winner.get_by_text("npm", exact=True).click()
        await winner.get_by_test_id("submit").click()
        assert (await task).answers == (Item("pkg", ["npm"]),)
        notice = loser.get_by_test_id("notice")
        await notice.get_by_text("answered elsewhere").wait_for()
        assert await notice.inner_text() == (
            "“Tools” was answered elsewhere (in another tab or client); your answer was not used."
        )
        assert len(posts) == 1
        await winner.get_by_test_id("notice").get_by_text("Answer sent.", exact=True).wait_for()
        await loser.get_by_text("No question is waiting.").wait_for()
        assert await loser.evaluate("localStorage.length") == 0  # its draft went with it
        await context.close()


async def test_a_named_users_page_says_who_answered_or_dismissed_it(browser: Browser) -> None:
    relay = Relay()
    users = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789"}
    with provide(relay):
        async with WebServer(relay, users=users) as server:
            page = await browser.new_page()
            await page.goto(server.user_url("bob"))
            notice = page.get_by_test_id("notice")
            alice = {"Authorization": f"Bearer {users['alice']}"}
            async with httpx.AsyncClient(base_url=server.base, headers=alice) as api:
                for action, body, said in (
                    ("answer", {"answers": [{"id": "pkg", "selected": ["npm"]}]}, "answered"),
                    ("cancel", None, "dismissed"),
                ):
                    task = asking(PKG)
                    await page.get_by_test_id("question").wait_for()
                    (pending,) = relay.pending()
                    response = await api.post(f"/api/questions/{pending.id}/{action}", json=body)
                    assert response.status_code in (200, 204)
                    await notice.get_by_text(f"was {said} by alice").wait_for()
                    assert await notice.inner_text() == f"“Tools” was {said} by alice."
                    if action == "answer":
                        assert (await task).answers == (Item("pkg", ["npm"]),)
                    else:
                        with pytest.raises(UserInteractionError):
                            await task
            await page.close()
            relay.close()


async def test_every_page_shows_a_quorums_approvals_and_the_last_approver_settles_it(
    browser: Browser,
) -> None:
    users = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789"}
    team = Team(list(users), {"ops": list(users)})
    relay = Relay(team=team)
    deploy = permission_question("Bash", "make deploy", id="deploy")
    with provide(relay):
        async with WebServer(relay, users=users, team=team) as server:
            page = await browser.new_page()
            try:
                await page.goto(server.user_url("bob"))
                request = AskUserQuestionRequest([deploy], assignment=Assignment(["ops"], 2))
                task = asyncio.create_task(ask(request))
                approvals = page.get_by_test_id("approvals")
                await approvals.get_by_text("0 of 2 approved").wait_for()
                (pending,) = relay.pending()
                alice = {"Authorization": f"Bearer {users['alice']}"}
                allow = {"answers": [{"id": "deploy", "selected": ["Allow"]}]}
                async with httpx.AsyncClient(base_url=server.base, headers=alice) as api:
                    path = f"/api/questions/{pending.id}/answer"
                    assert (await api.post(path, json=allow)).status_code == 202
                await approvals.get_by_text("1 of 2 approved: alice").wait_for()
                assert not task.done()
                await page.get_by_text("Allow once", exact=True).click()
                await page.get_by_test_id("submit").click()
                assert (await task).answers == (Item("deploy", ["Allow"]),)
                assert relay.pending() == []
            finally:
                await page.close()
                relay.close()


async def test_a_network_error_or_a_5xx_keeps_the_question_and_the_draft(
    site: tuple[Relay, WebServer, Page],
) -> None:
    relay, _, page = site
    task = asking(PKG)
    await page.get_by_text("yarn", exact=True).click()
    await page.route("**/answer", lambda route: route.abort("connectionrefused"))
    await page.get_by_test_id("submit").click()
    error = page.get_by_test_id("error")
    await error.get_by_text("Could not reach the server").wait_for()
    assert await error.inner_text() == (
        "Could not reach the server. Your answer is kept here; try again."
    )
    await page.unroute("**/answer")
    body = '{"error": {"code": "INTERNAL_ERROR", "message": "boom"}}'
    await page.route("**/answer", lambda route: route.fulfill(status=500, body=body))
    await page.get_by_test_id("submit").click()
    await error.get_by_text("The server failed").wait_for()
    assert await error.inner_text() == (
        "The server failed (500 INTERNAL_ERROR). Your answer is kept here; try again."
    )
    assert await page.get_by_role("radio").nth(2).is_checked()
    assert len(relay.pending()) == 1
    await page.unroute("**/answer")
    await page.get_by_test_id("submit").click()
    assert (await task).answers == (Item("pkg", ["yarn"]),)


async def test_server_stop_then_retry_and_no_ghost_of_a_withdrawn_question(
    browser: Browser,
) -> None:
    relay = Relay()
    with provide(relay):
        server = WebServer(relay)
        await server.start()
        page = await browser.new_page()
        await page.goto(server.url)
        withdrawn, kept = asking(NOTES), asking(PKG)
        await page.get_by_test_id("other").fill("typed while it was there")
        await server.stop()
        stopped = page.get_by_test_id("stopped")
        await stopped.wait_for()
        assert await page.get_by_test_id("status").inner_text() == "server stopped"
        assert await page.get_by_test_id("stopped-detail").inner_text() == (
            "The server was stopped. Unsent answers are kept in this browser."
        )
        await page.get_by_test_id("retry").click()
        await page.get_by_text("The server is still not reachable", exact=False).wait_for()
        withdrawn.cancel()  # the agent gives up while the page is away
        with pytest.raises(asyncio.CancelledError):
            await withdrawn
        again = WebServer(relay, port=server.port, token=server.token)
        await again.start()
        await page.get_by_test_id("retry").click()
        await page.get_by_test_id("question").wait_for()
        assert await page.get_by_test_id("question-text").inner_text() == PKG.question
        assert await page.get_by_test_id("queue").inner_text() == ""  # nothing else waiting
        assert await page.evaluate("localStorage.length") == 0  # the ghost's draft is gone
        await page.get_by_test_id("submit").click()
        assert (await kept).answers == (Item("pkg"),)
        await page.close()
        await again.stop()
        relay.close()


async def test_a_question_withdrawn_while_shown_says_so(
    site: tuple[Relay, WebServer, Page],
) -> None:
    _, _, page = site
    task = asking(PKG)
    await page.get_by_test_id("question").wait_for()
    task.cancel()
    await page.get_by_test_id("notice").get_by_text("withdrawn by the agent").wait_for()
    assert await page.get_by_test_id("notice").inner_text() == "“Tools” was withdrawn by the agent."
    await page.get_by_text("No question is waiting.").wait_for()


LONG_PLAN = AskUserQuestionItem(
    "plan",
    "Approve this plan?",
    detail="# Step one is at the top\n"
    + "\n".join(f"{n}. do part {n} of the work carefully" for n in range(1, 120))
    + "\n\n## The very end",
    options=[Option("Approve"), Option("Revise")],
    intent=PlanReviewIntent("Approve"),
)


async def test_a_long_plan_opens_at_its_top_with_the_actions_in_view(
    site: tuple[Relay, WebServer, Page],
) -> None:
    _, _, page = site
    await page.set_viewport_size({"width": 1000, "height": 700})
    task = asking(LONG_PLAN)
    await page.get_by_test_id("plan-review").wait_for()
    assert await page.evaluate("document.activeElement.dataset.testid") == "approve"
    assert await page.evaluate("window.scrollY") == 0
    plan = page.locator(".plan-body")
    assert await plan.evaluate("p => p.scrollTop") == 0
    assert await plan.evaluate("p => p.scrollHeight > p.clientHeight")  # its own scroll area
    top = page.get_by_text("Step one is at the top")
    assert await top.is_visible()
    await in_view(page, "Step one is at the top")
    await in_view(page, "[data-testid=approve]", selector=True)
    await in_view(page, "[data-testid=cancel]", selector=True)
    await plan.evaluate("p => { p.scrollTop = p.scrollHeight; }")
    await in_view(page, "[data-testid=approve]", selector=True)  # still there at the end
    await page.keyboard.press("Enter")
    assert (await task).answers == (Item("plan", ["Approve"]),)


async def in_view(page: Page, what: str, *, selector: bool = False) -> None:
    locator = page.locator(what) if selector else page.get_by_text(what)
    box = await locator.bounding_box()
    size = page.viewport_size
    assert box is not None
    assert size is not None
    assert box["y"] >= 0, what
    assert box["y"] + box["height"] <= size["height"], what


async def test_enter_in_the_other_field_goes_on_to_the_review_and_enter_sends(
    site: tuple[Relay, WebServer, Page],
) -> None:
    relay, _, page = site
    task = asking(PKG, NOTES)
    await page.get_by_test_id("other").fill("bun")
    await page.get_by_test_id("other").press("Enter")
    await page.get_by_test_id("progress").get_by_text("Question 2/2").wait_for()
    await page.get_by_test_id("other").fill("thanks")
    await page.get_by_test_id("other").press("Enter")
    send = page.get_by_test_id("submit")
    await send.wait_for()
    assert await page.get_by_test_id("progress").inner_text() == "Review · 2 questions"
    assert relay.pending()  # the review sends nothing by itself
    # Send has the focus once the review may be acted on (a fresh card holds its buttons).
    await expect(send).to_be_enabled()
    await expect(send).to_be_focused()
    await page.keyboard.press("Enter")
    assert (await task).answers == (Item("pkg", custom="bun"), Item("notes", custom="thanks"))


async def test_digit_keys_choose_and_ctrl_enter_submits(
    site: tuple[Relay, WebServer, Page],
) -> None:
    _, _, page = site
    task = asking(CHECKS)
    await page.get_by_test_id("question-text").get_by_text(CHECKS.question).wait_for()
    shortcuts = await page.get_by_test_id("shortcuts").inner_text()
    digits = f"1\u2013{len(CHECKS.options)}"  # an en dash: the options there are
    assert shortcuts == f"{digits} choose · Enter in the text field: submit · Ctrl+Enter submit"
    await page.locator("body").press("3")
    await page.locator("body").press("1")
    await page.locator("body").press("Control+Enter")
    labels = [option.label for option in CHECKS.options or ()]
    assert (await task).answers == (Item("checks", [labels[2], labels[0]]),)


async def test_drafts_are_per_question_and_go_when_it_settles(
    site: tuple[Relay, WebServer, Page],
) -> None:
    relay, _, page = site
    first, second = asking(NOTES), asking(NOTES)
    await page.get_by_test_id("other").fill("for the first")
    keys = await page.evaluate("Object.keys(localStorage)")
    (pending_first, pending_second) = [q.id for q in relay.pending()]
    assert keys == [f"interaction-draft-{pending_first}"]
    await page.get_by_test_id("submit").click()
    assert (await first).answers == (Item("notes", custom="for the first"),)
    await page.get_by_test_id("notice").get_by_text("Answer sent.", exact=True).wait_for()
    assert await page.get_by_test_id("other").input_value() == ""  # not the first's text
    assert await page.evaluate("Object.keys(localStorage)") == []
    await page.get_by_test_id("other").fill("second")
    await page.get_by_test_id("submit").click()
    assert (await second).answers == (Item("notes", custom="second"),)
    # The ask returns when the server takes the answer; the page drops the draft when the
    # POST's reply reaches it, which the idle card shows.
    await page.get_by_text("No question is waiting.").wait_for()
    assert pending_second not in await page.evaluate("Object.keys(localStorage).join()")


async def test_dark_mode_follows_the_system_setting(
    site: tuple[Relay, WebServer, Page], tmp_path: Path
) -> None:
    _, _, page = site
    task = asking(PKG)
    await page.get_by_test_id("question").wait_for()
    colors = (
        "() => [document.body, document.querySelector('.card')]"
        ".map(e => getComputedStyle(e).backgroundColor)"
    )
    light = await page.evaluate(colors)
    await page.emulate_media(color_scheme="dark")
    dark = await page.evaluate(colors)
    shot = await page.screenshot(path=str(tmp_path / "dark.png"), full_page=True)
    assert shot.startswith(b"\x89PNG")
    assert light == ["rgb(246, 247, 249)", "rgb(255, 255, 255)"]
    assert dark == ["rgb(15, 17, 21)", "rgb(24, 27, 33)"]
    text = await page.evaluate("getComputedStyle(document.body).color")
    assert text == "rgb(230, 232, 236)"
    await page.get_by_test_id("cancel").click()
    with pytest.raises(UserInteractionError):
        await task


# ---------------------------------------------------------------- accessibility (axe-core)

AXE_VERSION = "4.14.1"


@pytest.fixture(scope="session")
def axe_source() -> str:
    """axe-core's browser build, from the npm registry once, then from the venv."""
    home = Path(sys.prefix) / "share" / f"axe-core-{AXE_VERSION}"
    script = home / "axe.min.js"
    if not script.exists():
        npm = shutil.which("npm")
        if npm is None:
            if os.environ.get("CI"):
                pytest.fail("npm is required under CI for the accessibility check")
            pytest.skip("npm is not installed")
        home.mkdir(parents=True, exist_ok=True)
        # Each test worker may fetch it at once: each in a folder of its own, the script
        # put in place by a rename, so no worker reads another's half-written file.
        with tempfile.TemporaryDirectory(dir=home) as fetched:
            packed = subprocess.run(
                [npm, "pack", f"axe-core@{AXE_VERSION}", "--pack-destination", fetched, "--silent"],
                check=True,
                capture_output=True,
                text=True,
                timeout=300,
            )
            with tarfile.open(Path(fetched) / packed.stdout.strip().splitlines()[-1]) as archive:
                member = archive.extractfile("package/axe.min.js")
                assert member is not None
                (Path(fetched) / "axe.min.js").write_bytes(member.read())
            os.replace(Path(fetched) / "axe.min.js", script)
    return script.read_text("utf-8")


async def serious_violations(page: Page, axe: str) -> list[str]:
    await page.evaluate(axe)  # evaluated by the driver, so the page's CSP does not apply
    found = await page.evaluate(
        """async () => (await axe.run(document, {resultTypes: ['violations']})).violations
            .filter(v => v.impact === 'serious' || v.impact === 'critical')
            .map(v => v.id + ': ' + v.nodes.map(n => n.target.join(' ')).join(', '))"""
    )
    return cast(list[str], found)


@pytest.mark.parametrize("scheme", ["light", "dark"])
async def test_no_serious_accessibility_violations(
    site: tuple[Relay, WebServer, Page], axe_source: str, scheme: Literal["light", "dark"]
) -> None:
    _, _, page = site
    await page.emulate_media(color_scheme=scheme)
    await page.get_by_text("No question is waiting.").wait_for()
    assert await serious_violations(page, axe_source) == []
    question, plan = asking(PKG, CHECKS), asking(PLAN)
    await page.get_by_test_id("question").wait_for()
    await page.get_by_text("npm", exact=True).click()
    assert await serious_violations(page, axe_source) == []
    await page.route("**/answer", lambda route: route.abort("connectionrefused"))
    await page.get_by_test_id("next").click()
    await page.get_by_test_id("review").click()  # a batch ends on its review
    await page.get_by_test_id("submit").click()
    await page.get_by_test_id("error").get_by_text("Could not reach").wait_for()
    assert await serious_violations(page, axe_source) == []
    await page.unroute("**/answer")
    await page.get_by_test_id("submit").click()
    await question
    await page.get_by_test_id("plan-review").wait_for()
    assert await serious_violations(page, axe_source) == []
    await page.get_by_test_id("approve").click()
    await plan
    await page.get_by_text("No question is waiting.").wait_for()
    # The check itself works: a button without a name is a critical violation.
    await page.evaluate("document.querySelector('main').append(document.createElement('button'))")
    assert [v.split(":")[0] for v in await serious_violations(page, axe_source)] == ["button-name"]


# ---------------------------------------------------------------- markdown and the guard

SNAKE_PLAN = AskUserQuestionItem(
    "plan",
    "Approve this plan?",
    detail="Rename my_module/file_name.py and update __init__.py; compute 2 * 3 * 4.\n\n"
    "Keep *this*, **that** and _the other_ (in path/_private_.py too).",
    options=[Option("Approve"), Option("Revise")],
    intent=PlanReviewIntent("Approve"),
)


async def test_plan_markdown_keeps_underscores_and_spaced_asterisks_as_typed(
    site: tuple[Relay, WebServer, Page],
) -> None:
    _, _, page = site
    task = asking(SNAKE_PLAN)
    await page.get_by_test_id("plan-review").wait_for()
    paragraphs = page.locator(".plan-body p")
    assert await paragraphs.nth(0).inner_text() == (
        "Rename my_module/file_name.py and update __init__.py; compute 2 * 3 * 4."
    )
    assert await paragraphs.nth(0).locator("em, strong").count() == 0
    assert await paragraphs.nth(1).inner_text() == (
        "Keep this, that and the other (in path/_private_.py too)."
    )
    assert await paragraphs.nth(1).locator("em").all_inner_texts() == ["this", "the other"]
    assert await paragraphs.nth(1).locator("strong").all_inner_texts() == ["that"]
    await page.get_by_test_id("approve").click()
    assert (await task).answers == (Item("plan", ["Approve"]),)


async def test_a_line_of_very_many_emphasis_runs_is_drawn_literally_and_at_once(
    site: tuple[Relay, WebServer, Page],
) -> None:
    # Each closer looks back over the runs before it: past 200 runs a line keeps them as
    # typed, so a hostile plan costs its length (70,000 runs overflowed the stack, 8,000
    # nested ones crashed the tab).
    _, _, page = site
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    line = "*a " * 8000 + "b* " * 8000
    plan = AskUserQuestionItem(
        "plan",
        "Approve this plan?",
        detail=f"# Plan\n{line}\n\nThen *ship* it.",
        options=[Option("Approve"), Option("Revise")],
        intent=PlanReviewIntent("Approve"),
    )
    task = asking(plan)
    await page.get_by_test_id("plan-review").wait_for()
    paragraphs = page.locator(".plan-body p")
    assert await paragraphs.nth(0).locator("em, strong").count() == 0
    assert (await paragraphs.nth(0).inner_text()).startswith("*a *a *a")
    assert await paragraphs.nth(1).locator("em").all_inner_texts() == ["ship"]
    assert errors == []
    await page.get_by_test_id("approve").click()
    assert (await task).answers == (Item("plan", ["Approve"]),)


async def test_a_plan_review_drawn_just_after_an_answer_gets_its_focus_when_the_hold_ends(
    browser: Browser,
) -> None:
    async with served() as (_, server), still_page(browser, server.url) as page:
        first, second = asking(PKG), asking(PLAN)
        await page.get_by_test_id("question-text").get_by_text(PKG.question).wait_for()
        await page.locator("body").press("2")
        await page.keyboard.press("Control+Enter")
        assert (await first).answers == (Item("pkg", ["npm"]),)
        approve = page.get_by_test_id("approve")
        await approve.wait_for()
        assert await approve.is_disabled()  # held: drawn just after an answer
        await page.clock.run_for(400)
        assert await page.evaluate("document.activeElement.dataset.testid") == "approve"
        await page.keyboard.press("Enter")  # the focused, primary button
        assert (await second).answers == (Item("plan", ["Approve"]),)


async def test_a_double_tap_or_double_click_never_answers_the_next_question_unseen(
    browser: Browser,
) -> None:
    # The page's clock stands still (still_page), so "just appeared" holds for as long as
    # the test needs.
    async with served() as (relay, server), still_page(browser, server.url) as page:
        posts: list[str | None] = []
        page.on("request", lambda r: posts.append(r.post_data) if r.method == "POST" else None)
        question = page.get_by_test_id("question-text")
        first, second = asking(PKG), asking(CHECKS)
        await question.get_by_text(PKG.question).wait_for()
        await page.locator("body").press("2")  # a page's first question takes keys at once
        await page.keyboard.press("Control+Enter")  # a double tap: the second press at once
        await page.keyboard.press("Control+Enter")
        assert (await first).answers == (Item("pkg", ["npm"]),)
        await question.get_by_text(CHECKS.question).wait_for()
        await page.keyboard.press("Control+Enter")  # unseen: nothing
        submit, skip = page.get_by_test_id("submit"), page.get_by_test_id("skip")
        assert await submit.is_disabled()
        assert await skip.is_disabled()
        await submit.dblclick(force=True)  # a double click's late half lands on it: nothing
        await skip.click(force=True)
        assert [q.request.questions[0].id for q in relay.pending()] == ["checks"]
        await page.locator("body").press("1")  # choosing shows it was seen: taken at once
        assert await submit.is_enabled()
        await page.keyboard.press("Control+Enter")
        assert (await second).answers == (Item("checks", ["tests"]),)
        third = asking(NOTES)  # just after an answer again
        await question.get_by_text(NOTES.question).wait_for()
        await page.keyboard.press("Control+Enter")
        assert not third.done()
        assert len(relay.pending()) == 1
        await page.clock.run_for(400)  # on screen long enough to have been read
        await page.keyboard.press("Control+Enter")
        assert (await third).answers == (Item("notes"),)
        assert posts == [
            '{"answers":[{"id":"pkg","selected":["npm"]}]}',
            '{"answers":[{"id":"checks","selected":["tests"]}]}',
            '{"answers":[{"id":"notes","selected":[]}]}',
        ]
