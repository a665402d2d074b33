"""The answering page in a real browser: Debian's chromium, driven by Playwright.

Locally these tests skip when /usr/bin/chromium is missing; under CI they fail instead.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Browser, Page, async_playwright

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    PlanReviewIntent,
    UserInteractionError,
    ask,
)
from interaction.relay import Relay
from interaction.web import WebServer

from .helpers import CHECKS, NOTES
from .web_helpers import served

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
HAVE_CHROMIUM = os.path.exists(CHROMIUM)
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
Item = AskUserQuestionAnswerItem
Option = AskUserQuestionOption


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    if not HAVE_CHROMIUM:
        if os.environ.get("CI"):
            pytest.fail("chromium is required under CI: .ci/run installs it")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        await launched.close()


@pytest.fixture
async def site(browser: Browser) -> AsyncIterator[tuple[Relay, WebServer, Page]]:
    async with served() as (relay, server):
        page = await browser.new_page()
        page.on("dialog", lambda dialog: pytest.fail(f"the page opened a dialog: {dialog.message}"))
        await page.goto(server.url)
        yield relay, server, page
        await page.close()


def asking(*questions: AskUserQuestionItem) -> asyncio.Task[AskUserQuestionAnswer]:
    return asyncio.create_task(ask(AskUserQuestionRequest(questions)))


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
    assert await page.get_by_test_id("progress").inner_text() == "Question 1/1 · Tools"
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


async def test_no_token_means_no_page(browser: Browser) -> None:
    async with served() as (_, server):
        page = await browser.new_page()
        for url in (server.base + "/", server.base + "/?token=wrong"):
            response = await page.goto(url)
            assert response is not None
            assert response.status == 401
            assert await page.locator("#main").count() == 0
        await page.close()
