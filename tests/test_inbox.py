"""The page as an inbox, in Chromium: every waiting question listed with its source and
age, a filter by source, arrivals announced and counted in the tab title, and a browser
notification while the tab is hidden (permission granted through Playwright)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Literal

import pytest
from playwright.async_api import Browser, Page

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    PlanReviewIntent,
    Provenance,
    ask,
)
from interaction.relay import Relay
from interaction.web import WebServer

from .test_browser import axe_source, serious_violations
from .web_helpers import served

__all__ = ["axe_source"]  # a fixture

# The page's notifications: Chromium's headless shell shows none (see tests/conftest.py).
pytestmark = pytest.mark.full_chromium

Option = AskUserQuestionOption
TITLE = "Questions from your agent"

# Records every Notification the page makes (and still makes it), and lets the test say
# whether the tab is hidden: headless Chromium's tab is always visible.
SPY = """
window.__hidden = false;
Object.defineProperty(document, "hidden", { get: () => window.__hidden });
Object.defineProperty(document, "visibilityState", {
  get: () => (window.__hidden ? "hidden" : "visible"),
});
window.__notes = [];
const Real = window.Notification;
class Spy extends Real {
  constructor(title, options) {
    super(title, options);
    window.__notes.push({ title, body: options.body, tag: options.tag });
  }
}
// Headless Chromium answers "denied" where a browser would ask: a test may start from
// "default" (window.__permission) and see when the page asks.
window.__asked = 0;
Object.defineProperty(Spy, "permission", { get: () => window.__permission || Real.permission });
Spy.requestPermission = async () => {
  window.__asked += 1;
  window.__permission = await Real.requestPermission();
  return window.__permission;
};
window.Notification = Spy;
"""


def question(qid: str, text: str) -> AskUserQuestionItem:
    return AskUserQuestionItem(qid, text, options=[Option("yes"), Option("no")])


def asking(item: AskUserQuestionItem, source: str | None) -> asyncio.Task[AskUserQuestionAnswer]:
    provenance = Provenance(source=source) if source else None
    return asyncio.create_task(ask(AskUserQuestionRequest([item], provenance=provenance)))


@asynccontextmanager
async def inbox_page(
    browser: Browser, *, notifications: bool
) -> AsyncIterator[tuple[Relay, WebServer, Page]]:
    async with served() as (relay, server):
        permissions = ["notifications"] if notifications else []
        context = await browser.new_context(permissions=permissions)
        try:
            unasked = "" if notifications else "window.__permission = 'default';"
            await context.add_init_script(SPY + unasked)
            page = await context.new_page()
            await page.goto(server.url)
            await page.get_by_text("No question is waiting.").wait_for()
            yield relay, server, page
        finally:
            await context.close()


async def settle_all(relay: Relay, *tasks: asyncio.Task[AskUserQuestionAnswer]) -> None:
    for pending in relay.pending():
        relay.cancel(pending.id)
    await asyncio.gather(*tasks, return_exceptions=True)


async def test_every_waiting_question_is_listed_and_can_be_picked_and_filtered(
    browser: Browser,
) -> None:
    async with inbox_page(browser, notifications=True) as (relay, _, page):
        tasks = [
            asking(question("a", "Deploy to staging?"), "deploy-bot"),
            asking(question("b", "Rotate the keys?\nThey are old."), "security-agent"),
            asking(question("c", "Deploy to production?"), "deploy-bot"),
        ]
        items = page.get_by_test_id("inbox-item")
        await items.nth(2).wait_for()
        assert await page.title() == f"(3) {TITLE}"
        assert await items.all_inner_texts() == [
            "deploy-bot\nDeploy to staging?\nasked just now",
            "security-agent\nRotate the keys?\nasked just now",
            "deploy-bot\nDeploy to production?\nasked just now",
        ]
        card = page.get_by_test_id("question")
        assert await card.get_attribute("data-question-id") == "a"  # the oldest, as before
        assert await items.nth(0).get_attribute("aria-current") == "true"
        await items.nth(2).click()
        await page.locator("[data-question-id=c]").wait_for()
        assert await items.nth(2).get_attribute("aria-current") == "true"
        await page.get_by_test_id("source-filter").select_option("security-agent")
        await page.locator("[data-question-id=b]").wait_for()
        assert await items.all_inner_texts() == ["security-agent\nRotate the keys?\nasked just now"]
        await page.get_by_text("yes", exact=True).click()
        await page.get_by_test_id("submit").click()
        assert (await tasks[1]).answers[0].selected == ("yes",)
        # Nothing from security-agent is left: back to every source, not an empty list.
        await page.locator("[data-question-id=a]").wait_for()
        assert await items.count() == 2
        assert await page.get_by_test_id("source-filter").count() == 0  # one source left
        assert await page.title() == f"(2) {TITLE}"
        await settle_all(relay, *tasks)
        await page.get_by_text("No question is waiting.").wait_for()
        assert await page.title() == TITLE


async def test_an_arrival_is_announced_and_notified_only_while_the_tab_is_hidden(
    browser: Browser,
) -> None:
    async with inbox_page(browser, notifications=True) as (relay, _, page):
        assert await page.get_by_test_id("notify-me").count() == 0  # already granted
        first = asking(question("a", "Deploy to staging?"), "deploy-bot")
        await page.locator("[data-question-id=a]").wait_for()
        second = asking(question("b", "Rotate the keys?"), "security-agent")
        notice = page.get_by_test_id("notice")
        await notice.get_by_text("New question from security-agent: Rotate the keys?").wait_for()
        assert await page.evaluate("window.__notes") == []  # visible: no notification
        await page.evaluate("window.__hidden = true")
        third = asking(question("c", "Deploy to production?"), None)
        await page.get_by_test_id("inbox-item").nth(2).wait_for()
        assert await page.evaluate("window.__notes") == [
            {
                "title": "A question is waiting",
                "body": "Deploy to production?",
                "tag": _id(relay, 2),
            }
        ]
        assert await page.title() == f"(3) {TITLE}"
        await settle_all(relay, first, second, third)


def _id(relay: Relay, index: int) -> str:
    return relay.pending()[index].id


async def test_permission_is_asked_on_a_click_only(browser: Browser) -> None:
    async with inbox_page(browser, notifications=False) as (relay, _, page):
        ask_button = page.get_by_test_id("notify-me")
        assert await ask_button.inner_text() == "Notify me"
        assert await page.evaluate("window.__asked") == 0  # never asked unprompted
        await page.context.grant_permissions(["notifications"])  # what the user will say
        await ask_button.click()
        await ask_button.wait_for(state="detached")
        assert await page.evaluate("[window.__asked, Notification.permission]") == [1, "granted"]
        task = asking(question("a", "Deploy?"), "bot")
        await page.locator("[data-question-id=a]").wait_for()  # arrived while visible
        await page.evaluate("window.__hidden = true")
        other = asking(question("b", "Rotate?"), "bot")
        await page.get_by_test_id("inbox-item").nth(1).wait_for()
        notes = await page.evaluate("window.__notes")
        assert [note["title"] for note in notes] == ["Question from bot"]
        await settle_all(relay, task, other)


WIDE_PLAN = AskUserQuestionItem(
    "plan",
    "Approve this plan?",
    detail="# The plan\n```\n"
    + "x = compute_something("
    + ", ".join(["argument"] * 30)
    + ")\n```\n",
    options=[Option("Approve"), Option("Revise")],
    intent=PlanReviewIntent("Approve"),
)


@pytest.mark.parametrize(
    ("scheme", "width"), [("light", 1280), ("dark", 1280), ("light", 390), ("dark", 390)]
)
async def test_the_inbox_and_a_wide_code_block_have_no_serious_violations(
    browser: Browser, axe_source: str, scheme: Literal["light", "dark"], width: int
) -> None:
    async with inbox_page(browser, notifications=True) as (relay, _, page):
        await page.set_viewport_size({"width": width, "height": 800})
        await page.emulate_media(color_scheme=scheme)
        plan = asyncio.create_task(ask(AskUserQuestionRequest([WIDE_PLAN])))
        other = asking(question("a", "Deploy?"), "deploy-bot")
        await page.get_by_test_id("plan-review").wait_for()
        if width == 390:  # the list folds to one line on a phone: unfolded, to be checked
            await page.get_by_test_id("inbox-toggle").click()
        await page.get_by_test_id("inbox-item").nth(1).wait_for()
        pre = page.locator("[data-testid=detail] pre")
        assert await pre.evaluate("e => e.scrollWidth > e.clientWidth")  # it does scroll
        assert await serious_violations(page, axe_source) == []
        await settle_all(relay, plan, other)
