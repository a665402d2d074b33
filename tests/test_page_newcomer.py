"""What a newcomer met on the page, each fixed and held in Chromium: the plan review keeps
the answer of one's own, the plan's tables, quotes and task lists, a hint that the plan
scrolls, Cancel asks before it discards work, a batch is reviewed before it is sent, an
empty Submit says it sent a skip, the focus
follows a digit, key hints name the range (1 to 3) and hide on touch screens, a favicon, and a batch
settled elsewhere is named as a batch."""

from __future__ import annotations

import asyncio

import pytest
from playwright.async_api import Browser, Page

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

from .web_helpers import served

Option = AskUserQuestionOption
Item = AskUserQuestionAnswerItem
PKG = AskUserQuestionItem(
    "pkg",
    "Which package manager?",
    header="Tools",
    options=[Option("pnpm"), Option("npm"), Option("yarn")],
)
NOTES = AskUserQuestionItem("notes", "Anything else?")
PLAN_TEXT = "\n".join(
    [
        "# The plan",
        "| step | owner |",
        "| --- | --- |",
        "| build | ci |",
        "| ship | me |",
        "",
        "> keep the old API",
        "> for a release",
        "",
        "- [x] write tests",
        "- [ ] update docs",
        *[f"{n}. step number {n}" for n in range(1, 80)],
    ]
)
PLAN = AskUserQuestionItem(
    "plan",
    "Approve this plan?",
    detail=PLAN_TEXT,
    options=[Option("Approve"), Option("Revise")],
    intent=PlanReviewIntent("Approve"),
)


def asking(*questions: AskUserQuestionItem) -> asyncio.Task[AskUserQuestionAnswer]:
    return asyncio.create_task(ask(AskUserQuestionRequest(questions)))


async def test_a_plan_review_keeps_the_answer_of_ones_own_and_draws_the_markdown(
    site: tuple[Relay, WebServer, Page],
) -> None:
    _, _, page = site
    task = asking(PLAN)
    await page.get_by_test_id("plan-review").wait_for()
    detail = page.get_by_test_id("detail")
    assert await detail.locator("th").all_inner_texts() == ["step", "owner"]
    assert await detail.locator("td").all_inner_texts() == ["build", "ci", "ship", "me"]
    assert await detail.locator("blockquote").inner_text() == "keep the old API\nfor a release"
    assert await detail.locator("li.task").all_inner_texts() == ["☑ write tests", "☐ update docs"]
    hint = page.get_by_test_id("scroll-hint")
    assert await hint.is_visible()  # the plan is longer than its box
    await page.locator(".plan-body").evaluate("e => { e.scrollTop = e.scrollHeight; }")
    await hint.wait_for(state="hidden")
    await page.get_by_test_id("other").fill("split it in two")
    await page.get_by_test_id("other").press("Enter")
    assert await task == AskUserQuestionAnswer([Item("plan", custom="split it in two")])


async def test_cancel_on_a_batch_with_work_asks_before_it_discards(
    site: tuple[Relay, WebServer, Page],
) -> None:
    relay, _, page = site
    task = asking(PKG, NOTES)
    await page.get_by_text("npm", exact=True).click()
    await page.get_by_test_id("next").click()
    await page.get_by_test_id("cancel").click()
    prompt = page.get_by_test_id("discard-prompt")
    assert await prompt.inner_text() == "Discard 1 answer?"
    await page.get_by_test_id("keep").click()
    await prompt.wait_for(state="detached")
    assert relay.pending()  # nothing was dismissed
    await page.get_by_test_id("cancel").click()
    await page.get_by_test_id("discard").click()
    with pytest.raises(UserInteractionError) as caught:
        await task
    assert caught.value.code == ErrorCode.ASK_CANCELLED
    untouched = asking(NOTES)
    await page.get_by_test_id("question").wait_for()
    await page.get_by_test_id("cancel").click()  # nothing to lose: dismissed at once
    with pytest.raises(UserInteractionError):
        await untouched


async def test_an_empty_submit_says_it_skips_and_the_focus_follows_a_digit(
    site: tuple[Relay, WebServer, Page],
) -> None:
    _, _, page = site
    task = asking(PKG)
    await page.get_by_test_id("question").wait_for()
    submit = page.get_by_test_id("submit")
    # One skip, named once: Skip beside it; an empty Submit sends the skip and says so.
    assert await submit.inner_text() == "Submit"
    shortcuts = await page.get_by_test_id("shortcuts").inner_text()
    assert shortcuts.startswith("1\u20133 choose")  # an en dash: 1 to 3
    assert "Ctrl+Enter" in shortcuts
    await page.locator("body").press("2")
    focused = await page.evaluate("document.activeElement.value")
    assert focused == "1"  # the second option's input, not the first
    assert await submit.inner_text() == "Submit"
    await page.locator("body").press("2")  # again: still chosen (a radio)
    await page.get_by_test_id("other").fill("")
    await submit.click()
    assert await task == AskUserQuestionAnswer([Item("pkg", ["npm"])])
    skipped = asking(NOTES)
    await page.get_by_test_id("question").wait_for()
    await page.get_by_test_id("submit").click()
    await page.get_by_test_id("notice").get_by_text("Sent, with every question skipped.").wait_for()
    assert await skipped == AskUserQuestionAnswer([Item("notes")])


async def test_a_batch_settled_elsewhere_is_named_as_a_batch(
    site: tuple[Relay, WebServer, Page],
) -> None:
    relay, _, page = site
    task = asking(PKG, NOTES)
    await page.get_by_test_id("question").wait_for()
    (question,) = relay.pending()
    relay.answer(question.id, AskUserQuestionAnswer([Item("pkg"), Item("notes")]))
    await task
    notice = page.get_by_test_id("notice")
    await notice.get_by_text("The batch of 2 questions").wait_for()
    assert await notice.inner_text() == (
        "The batch of 2 questions (“Tools” first) was answered elsewhere"
        " (in another tab or client)."
    )


async def test_a_favicon_and_no_key_hints_on_a_touch_screen(browser: Browser) -> None:
    async with served() as (relay, server):
        context = await browser.new_context(
            has_touch=True, is_mobile=True, viewport={"width": 390, "height": 800}
        )
        try:
            page = await context.new_page()
            errors: list[str] = []
            page.on(
                "console",
                lambda message: errors.append(message.text) if message.type == "error" else None,
            )
            await page.goto(server.url)
            icon = await page.evaluate("document.querySelector('link[rel=icon]').href")
            assert icon.startswith("data:image/svg+xml,")
            task = asking(PKG)
            await page.get_by_test_id("question").wait_for()
            assert not await page.get_by_test_id("shortcuts").is_visible()
            assert not await page.locator(".option .key").first.is_visible()
            assert errors == []  # the icon loads under the page's CSP
            relay.cancel(relay.pending()[0].id)
            with pytest.raises(UserInteractionError):
                await task
        finally:
            await context.close()


async def test_a_batch_shows_its_progress(site: tuple[Relay, WebServer, Page]) -> None:
    relay, _, page = site
    task = asking(PKG, NOTES)
    strip = page.get_by_test_id("strip")
    await strip.wait_for()
    assert await strip.locator("li").all_inner_texts() == ["● Tools", "○ Anything else?"]
    await page.get_by_text("npm", exact=True).click()
    await page.get_by_test_id("next").click()
    await page.locator("[data-question-id=notes]").wait_for()
    assert await strip.locator("li").all_inner_texts() == ["✓ Tools", "● Anything else?"]
    relay.cancel(relay.pending()[0].id)
    with pytest.raises(UserInteractionError):
        await task


async def test_a_batch_is_reviewed_before_it_is_sent(site: tuple[Relay, WebServer, Page]) -> None:
    relay, _, page = site
    third = AskUserQuestionItem("ci", "Which checks?", header="CI", options=[Option("tests")])
    task = asking(PKG, NOTES, third)
    await page.get_by_text("npm", exact=True).click()
    await page.get_by_test_id("next").click()
    await page.get_by_test_id("other").fill("ship on Friday")
    await page.get_by_test_id("next").click()
    await page.get_by_test_id("review").click()  # the last question leads to the review
    review = page.locator("[data-testid=review]")
    await review.wait_for()
    items = review.get_by_test_id("review-item")
    assert await items.locator(".mark").all_inner_texts() == ["✓", "✓", "○"]
    assert await items.locator(".name").all_inner_texts() == ["Tools:", "Anything else?:", "CI:"]
    assert await items.locator(".answer").all_inner_texts() == [
        "npm",
        "“ship on Friday”",
        "(not answered: sent as a skip)",
    ]
    assert relay.pending()  # nothing is sent before Send
    await items.nth(0).get_by_test_id("edit").click()  # back to that question, its draft kept
    await page.locator("[data-question-id=pkg]").wait_for()
    assert await page.get_by_role("radio", name="npm", exact=True).is_checked()
    await page.get_by_text("yarn", exact=True).click()
    for _ in range(2):
        await page.get_by_test_id("next").click()
    await page.get_by_test_id("review").click()
    send = page.get_by_test_id("submit")
    assert await send.inner_text() == "Send answers"
    await send.click()
    assert await task == AskUserQuestionAnswer(
        [Item("pkg", ["yarn"]), Item("notes", custom="ship on Friday"), Item("ci")]
    )
