"""The answering page on a phone, in Chromium: at 390x664, 360x640 and 1366x600, and as a
Pixel 7 and an iPhone 13 (Playwright's mobile emulation, touch), light and dark, every
button of every kind of question is on screen without scrolling, 44x44 px on a touch or
phone-sized screen, and a tap on it works; a plan's box takes the room left; the waiting
list folds to one line. Also: plan tables keep words whole and scroll in their own box,
the source filter falls back to every source, one Skip named once, who is signed in, a
link that is not valid, the strip's "…", and the page as an installable app (manifest and
a service worker that keeps only the page shell)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import struct
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Literal, cast

import httpx
import pytest
from playwright.async_api import (
    Browser,
    BrowserContext,
    Page,
    ViewportSize,
    expect,
)

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    PlanReviewIntent,
    Provenance,
    UserInteractionError,
    ask,
    permission_question,
    provide,
)
from interaction.policies import JsonFileRuleStore
from interaction.relay import Relay
from interaction.web import WebServer

from .browser_server import SharedBrowsers
from .conftest import ARGS, CHROMIUM
from .test_browser import axe_source
from .web_helpers import served

__all__ = ["axe_source"]  # a fixture

Option = AskUserQuestionOption
Item = AskUserQuestionAnswerItem

TABLE = "\n".join(
    [
        "| status | owner | file | what happens to the release when it is rolled back |",
        "| --- | --- | --- | --- |",
        "| pending | release-engineering | deploy/regions.yaml | the last image is redeployed |",
        "| done | me | src/interaction/web/static/app.css | nothing: the release stays |",
    ]
)
PLAN = AskUserQuestionItem(
    "plan",
    "Approve this plan?",
    detail="# Ship v2\n\n" + TABLE + "\n\n" + "\n".join(f"{n}. step {n}" for n in range(1, 60)),
    options=[Option("Approve"), Option("Revise")],
    intent=PlanReviewIntent("Approve"),
)
PKG = AskUserQuestionItem(
    "pkg",
    "Which package manager?",
    header="Tools",
    options=[Option("pnpm", "fast"), Option("npm"), Option("yarn"), Option("bun")],
)
CHECKS = AskUserQuestionItem(
    "checks",
    "Which checks should run?",
    header="CI",
    options=[Option("types"), Option("tests"), Option("lint")],
    multi_select=True,
)
NOTES = AskUserQuestionItem("notes", "Anything else the agent should know before it starts?")
BASH = permission_question("Bash", "rm -rf build/ && make release", id="bash")

# name -> (browser.new_context options); the phones come from Playwright's own device list,
# read from the worker's driver when a test first needs them.
Profile = dict[str, object]
SIZES: dict[str, Profile] = {
    "390x664": {"viewport": {"width": 390, "height": 664}},
    "360x640": {"viewport": {"width": 360, "height": 640}},
    "1366x600": {"viewport": {"width": 1366, "height": 600}},
}
PHONES = ("Pixel 7", "iPhone 13")


@pytest.fixture(scope="session")
def profiles(shared_browsers: SharedBrowsers) -> dict[str, Profile]:
    devices = shared_browsers.playwright.devices
    chosen = {name: dict(devices[name]) for name in PHONES}
    for options in chosen.values():
        options.pop("default_browser_type")  # the suite runs Debian's Chromium
    return SIZES | chosen


@contextlib.asynccontextmanager
async def context_for(
    browser: Browser, profile: Profile, scheme: Literal["light", "dark"] = "light"
) -> AsyncIterator[BrowserContext]:
    context = await browser.new_context(color_scheme=scheme, **profile)  # type: ignore[arg-type]
    try:
        yield context
    finally:
        await context.close()


def asking(
    *items: AskUserQuestionItem, source: str | None = None
) -> asyncio.Task[AskUserQuestionAnswer]:
    provenance = Provenance(source=source) if source else None
    return asyncio.create_task(ask(AskUserQuestionRequest(items, provenance=provenance)))


async def size_of(page: Page) -> ViewportSize:
    size = await page.evaluate("({width: innerWidth, height: innerHeight})")
    return cast(ViewportSize, size)


async def on_screen(page: Page, selector: str, *, fingers: bool) -> list[str]:
    """The visible elements of ``selector``, each checked to be wholly on screen without
    scrolling (and 44x44 px or more with ``fingers``); their texts."""
    size = await size_of(page)
    texts = []
    for element in await page.locator(selector).all():
        if not await element.is_visible():
            continue
        box = await element.bounding_box()
        assert box is not None
        text = (await element.inner_text()).strip()
        assert box["x"] >= 0, text
        assert box["y"] >= 0, text
        assert box["x"] + box["width"] <= size["width"] + 0.5, (text, box, size)
        assert box["y"] + box["height"] <= size["height"] + 0.5, (text, box, size)
        if fingers:
            assert box["width"] >= 44, (text, box)
            assert box["height"] >= 44, (text, box)
        texts.append(text)
    assert await page.evaluate("scrollY") == 0
    assert await page.evaluate("document.scrollingElement.scrollHeight <= innerHeight")
    return texts


async def press(page: Page, selector: str, touch: bool) -> None:
    """A tap where the screen is a touch screen, else a click: no scrolling first (once
    the button takes it: a question just drawn holds its buttons 0.4 s)."""
    await expect(page.locator(selector)).to_be_enabled()
    box = await page.locator(selector).bounding_box()
    assert box is not None
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    if touch:
        await page.touchscreen.tap(x, y)
    else:
        await page.mouse.click(x, y)


# ---------------------------------------------------------------- item 1: in reach


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("profile", [*SIZES, *PHONES])
async def test_every_button_of_every_kind_is_on_screen_and_a_tap_works(
    browser: Browser,
    profiles: dict[str, Profile],
    profile: str,
    scheme: Literal["light", "dark"],
    tmp_path: Path,
) -> None:
    options = profiles[profile]
    async with served() as (relay, server), context_for(browser, options, scheme) as context:
        page = await context.new_page()
        await page.goto(server.url)
        touch = bool(options.get("has_touch"))
        fingers = touch or (await size_of(page))["width"] <= 640
        plan = asking(PLAN, source="plan-bot")
        await page.get_by_test_id("plan-review").wait_for()
        single = asking(PKG, source="a-bot")
        batch = asking(CHECKS, NOTES, source="b-bot")
        permission = asking(BASH, source="c-bot")
        await page.get_by_text("4 waiting").wait_for()
        shot = str(tmp_path / f"{profile}-{scheme}-plan.png").replace(" ", "_")
        await page.screenshot(path=shot)
        # The plan: every button, and its box takes the room left (far more than two lines).
        texts = await on_screen(page, ".card .actions button", fingers=fingers)
        assert texts == ["Approve", "Revise", "Skip", "Dismiss"]
        await on_screen(page, "[data-testid=send-other]", fingers=fingers)
        body = await page.locator(".plan-body").bounding_box()
        assert body is not None
        height = (await size_of(page))["height"]
        assert body["height"] >= 96, body  # 6 lines at least, a notice on screen too
        # the rest of the card fits: the plan's box has every row the rest leaves
        assert await page.locator(".card-body").evaluate("b => b.scrollHeight <= b.clientHeight")
        compact = (await size_of(page))["width"] <= 640 or height <= 640
        inbox = page.get_by_test_id("inbox")
        if compact:  # the waiting list is one line, "4 waiting ▾", that opens it
            toggle = page.get_by_test_id("inbox-toggle")
            assert await toggle.inner_text() == "4 waiting ▾"
            box = await inbox.bounding_box()
            assert box is not None
            assert box["height"] <= 60
            assert not await page.get_by_test_id("inbox-item").first.is_visible()
            await on_screen(page, "[data-testid=inbox-toggle]", fingers=fingers)
            await press(page, "[data-testid=inbox-toggle]", touch)
            await page.get_by_test_id("inbox-item").first.wait_for()
            assert await toggle.get_attribute("aria-expanded") == "true"
            await press(page, "[data-testid=inbox-toggle]", touch)
            await page.get_by_test_id("inbox-item").first.wait_for(state="hidden")
        else:
            assert await page.get_by_test_id("inbox-item").count() == 4
        await press(page, "[data-testid=approve]", touch)
        assert (await plan).answers == (Item("plan", ["Approve"]),)
        # A single question, then the batch (both pages and its review), then a permission.
        await page.get_by_test_id("question").wait_for()
        await page.get_by_text("pnpm", exact=True).wait_for()
        await page.screenshot(path=shot.replace("-plan", "-single"))
        texts = await on_screen(page, ".card .actions button", fingers=fingers)
        assert texts == ["Skip", "Submit", "Cancel"]
        await page.get_by_text("npm", exact=True).click()
        await press(page, "[data-testid=submit]", touch)
        assert (await single).answers == (Item("pkg", ["npm"]),)
        await page.locator("[data-question-id=checks]").wait_for()
        assert await on_screen(page, ".card .actions button", fingers=fingers) == [
            "Skip",
            "Next",
            "Cancel",
        ]
        await page.get_by_text("tests", exact=True).click()
        await press(page, "[data-testid=next]", touch)
        await page.locator("[data-question-id=notes]").wait_for()
        assert await on_screen(page, ".card .actions button", fingers=fingers) == [
            "Back",
            "Skip",
            "Review",
            "Cancel",
        ]
        await press(page, "[data-testid=review]", touch)
        await page.locator("section[data-testid=review]").wait_for()
        await page.screenshot(path=shot.replace("-plan", "-review"))
        assert await on_screen(page, ".card .actions button", fingers=fingers) == [
            "Back",
            "Send answers",
            "Cancel",
        ]
        await press(page, "[data-testid=submit]", touch)
        assert (await batch).answers == (Item("checks", ["tests"]), Item("notes"))
        await page.get_by_test_id("permission").wait_for()
        await page.screenshot(path=shot.replace("-plan", "-permission"))
        assert await on_screen(page, ".card .actions button", fingers=fingers) == [
            "Skip",
            "Submit",
            "Cancel",
        ]
        await press(page, "[data-testid=cancel]", touch)
        with pytest.raises(UserInteractionError) as cancelled:
            await permission
        assert cancelled.value.code == ErrorCode.ASK_CANCELLED
        await page.get_by_text("No question is waiting.").wait_for()
        assert relay.pending() == []


async def test_a_long_single_question_scrolls_inside_its_card_and_its_buttons_stay(
    browser: Browser, profiles: dict[str, Profile]
) -> None:
    many = AskUserQuestionItem(
        "many",
        "Which one?",
        detail="\n".join(f"- line {n} of the detail" for n in range(40)),
        options=[Option(f"choice {n}", f"what choice {n} does") for n in range(12)],
    )
    async with served() as (_, server), context_for(browser, profiles["iPhone 13"]) as context:
        page = await context.new_page()
        await page.goto(server.url)
        task = asking(many)
        await page.get_by_test_id("question").wait_for()
        body = page.locator(".card-body")
        assert await body.evaluate("b => b.scrollHeight > b.clientHeight")  # its own scroll
        assert await on_screen(page, ".card .actions button", fingers=True) == [
            "Skip",
            "Submit",
            "Cancel",
        ]
        await page.get_by_text("choice 11", exact=True).tap()  # scrolled to, in the card
        await on_screen(page, ".card .actions button", fingers=True)
        await page.get_by_test_id("submit").tap()
        assert (await task).answers == (Item("many", ["choice 11"]),)


# ---------------------------------------------------------------- item 2: plan tables


@pytest.mark.parametrize("profile", ["390x664", "1366x600"])
async def test_a_plan_table_keeps_words_whole_and_scrolls_in_its_own_box(
    browser: Browser, profile: str, axe_source: str
) -> None:
    async with served() as (_, server), context_for(browser, SIZES[profile]) as context:
        page = await context.new_page()
        await page.goto(server.url)
        task = asking(PLAN)
        table = page.locator(".plan-body .table")
        await table.wait_for()
        # Every word of every cell on one line: a word broken letter by letter ("st/at/us")
        # is drawn in more boxes than it has lines (a line may still end at a hyphen).
        broken = await table.evaluate(
            """t => [...t.querySelectorAll('th, td')].flatMap(cell => {
                const words = [];
                const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
                for (let node; (node = walker.nextNode());) {
                  for (const m of node.data.matchAll(/[^\\s-]+/g)) {
                    const range = document.createRange();
                    range.setStart(node, m.index);
                    range.setEnd(node, m.index + m[0].length);
                    if (range.getClientRects().length > 1) words.push(m[0]);
                  }
                }
                return words;
              })"""
        )
        assert broken == []
        if profile == "390x664":  # wider than the card: it scrolls, and takes the focus
            assert await table.evaluate("t => t.scrollWidth > t.clientWidth")
            assert await table.get_attribute("tabindex") == "0"
            await table.focus()
            await page.keyboard.press("ArrowRight")
            # Chromium scrolls smoothly from the keyboard: wait for the box to move, however
            # long a busy machine takes to draw the frames.
            await page.wait_for_function("t => t.scrollLeft > 0", arg=await table.element_handle())
        await page.evaluate(axe_source)
        found = await page.evaluate(
            """async () => (await axe.run(document, {resultTypes: ['violations']})).violations
                .filter(v => v.impact === 'serious' || v.impact === 'critical').map(v => v.id)"""
        )
        assert found == []
        await page.get_by_test_id("approve").click()
        await task


# ---------------------------------------------------------------- item 3: the source filter


async def test_the_source_filter_falls_back_to_every_source(browser: Browser) -> None:
    async with served() as (_, server):
        page = await browser.new_page()
        try:
            await page.goto(server.url)
            first = asking(PKG, source="a-bot")
            second = asking(NOTES, source="b-bot")
            await page.get_by_text("2 waiting").wait_for()
            await page.get_by_test_id("source-filter").select_option("a-bot")
            await page.get_by_text("pnpm", exact=True).click()
            await page.get_by_test_id("submit").click()
            assert (await first).answers == (Item("pkg", ["pnpm"]),)
            await page.locator("[data-question-id=notes]").wait_for()  # b-bot's, shown
            assert await page.get_by_text("is waiting").count() == 0  # no "No question from"
            await page.get_by_test_id("other").fill("no")
            await page.get_by_test_id("submit").click()
            assert (await second).answers == (Item("notes", custom="no"),)
            third = asking(PKG, source="a-bot")
            fourth = asking(NOTES, source="b-bot")
            await page.get_by_text("2 waiting").wait_for()
            filter_ = page.get_by_test_id("source-filter")
            assert await filter_.input_value() == ""  # All sources
            assert await page.get_by_test_id("inbox-item").count() == 2
            await filter_.select_option("b-bot")
            await page.locator("[data-question-id=notes]").wait_for()
            await page.get_by_test_id("cancel").click()
            with pytest.raises(UserInteractionError):
                await fourth
            await page.locator("[data-question-id=pkg]").wait_for()
            await page.get_by_test_id("cancel").click()
            with pytest.raises(UserInteractionError):
                await third
        finally:
            await page.close()


# ---------------------------------------------------------------- item 4: one skip


async def test_one_skip_named_once_and_a_plan_review_can_skip(browser: Browser) -> None:
    async with served() as (relay, server):
        page = await browser.new_page()
        posts: list[str | None] = []
        page.on("request", lambda r: posts.append(r.post_data) if r.method == "POST" else None)
        try:
            await page.goto(server.url)
            single = asking(PKG)
            await page.get_by_test_id("question").wait_for()
            buttons = await page.locator(".card .actions button").all_inner_texts()
            assert buttons == ["Skip", "Submit", "Cancel"]  # no "Skip and send" beside Skip
            await page.get_by_text("npm", exact=True).click()
            await page.get_by_test_id("other").fill("")
            assert await page.get_by_test_id("submit").inner_text() == "Submit"
            await page.get_by_test_id("skip").click()
            assert (await single).answers == (Item("pkg"),)
            plan = asking(PLAN)
            await page.get_by_test_id("plan-review").wait_for()
            await page.get_by_test_id("send-other").click()  # nothing typed: says why
            error = page.get_by_test_id("error")
            await error.get_by_text("Nothing was sent").wait_for()
            assert await error.inner_text() == (
                "Nothing was sent: type what to change first, or choose a button below."
            )
            assert await page.evaluate("document.activeElement.dataset.testid") == "other"
            assert len(relay.pending()) == 1
            await page.get_by_test_id("skip").click()  # as the terminal's s
            assert (await plan).answers == (Item("plan"),)
            assert posts == [
                '{"answers":[{"id":"pkg","selected":[]}]}',
                '{"answers":[{"id":"plan","selected":[]}]}',
            ]
        finally:
            await page.close()


# ---------------------------------------------------------------- item 5: who am I


@contextlib.asynccontextmanager
async def rules_server(tmp_path: Path, **options: object) -> AsyncIterator[WebServer]:
    relay = Relay()
    with provide(relay):
        store = JsonFileRuleStore(tmp_path / "rules.json")
        async with WebServer(relay, rules=store, **options) as server:  # type: ignore[arg-type]
            try:
                yield server
            finally:
                relay.close()


async def axe_impacts(page: Page, axe: str) -> list[str]:
    await page.evaluate(axe)
    found = await page.evaluate(
        """async () => (await axe.run(document, {resultTypes: ['violations']})).violations
            .map(v => v.impact + ' ' + v.id + ': '
              + v.nodes.map(n => n.target.join(' ')).join(', '))"""
    )
    return cast(list[str], found)


@pytest.mark.parametrize("scheme", ["light", "dark"])
async def test_the_page_says_who_is_signed_in_and_the_rules_panel_passes_axe(
    browser: Browser, tmp_path: Path, axe_source: str, scheme: Literal["light", "dark"]
) -> None:
    users = {"alice": "alice-token-0123456789", "bob": "bob-token-abcdefghijkl"}
    async with rules_server(tmp_path, users=users) as server:
        context = await browser.new_context(color_scheme=scheme)
        try:
            page = await context.new_page()
            await page.goto(server.user_url("alice"))
            who = page.get_by_test_id("user")
            await who.get_by_text("Signed in as alice").wait_for()
            async with httpx.AsyncClient(base_url=server.base, timeout=30) as http:
                me = await http.get("/api/me", headers={"Authorization": f"Bearer {users['bob']}"})
                assert me.json() == {"user": "bob", "question": None}
                assert (await http.get("/api/me")).status_code == 401
            await page.get_by_test_id("rules").locator("summary").click()
            await page.get_by_test_id("rule-spec").fill("Bash(npm test:*)")
            await page.get_by_test_id("rule-add").click()
            await page.get_by_test_id("rule").first.wait_for()
            task = asking(PKG)
            await page.get_by_test_id("question").wait_for()
            bad = [v for v in await axe_impacts(page, axe_source) if not v.startswith("minor")]
            assert bad == []
            await page.get_by_test_id("cancel").click()
            with pytest.raises(UserInteractionError):
                await task
        finally:
            await context.close()


@pytest.mark.parametrize("profile", ["390x664", "1366x600"])
async def test_a_link_that_is_not_valid_gets_that_one_view(
    browser: Browser, tmp_path: Path, axe_source: str, profile: str
) -> None:
    async with rules_server(tmp_path) as server, context_for(browser, SIZES[profile]) as context:
        page = await context.new_page()
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url.removeprefix(server.base)))
        await page.goto(server.base + "/#token=not-the-token")
        view = page.get_by_test_id("unauthorized")
        await view.wait_for()
        assert await view.locator("h2").inner_text() == "This link is not valid"
        assert await page.get_by_test_id("status").inner_text() == "not signed in"
        for hidden in ("rules", "inbox", "notice", "user", "notify-me", "sound"):
            assert not await page.get_by_test_id(hidden).is_visible(), hidden
        assert [r for r in requests if r.startswith("/api/")] == ["/api/me"]  # nothing else
        assert await axe_impacts(page, axe_source) == []


# ---------------------------------------------------------------- item 6: small things


async def test_the_strip_says_it_cut_and_a_stopped_server_shows_no_key_hint(
    browser: Browser,
) -> None:
    long_text = "Should the migration also rewrite the archived tables of last year?"
    async with served() as (relay, server):
        page = await browser.new_page()
        try:
            await page.goto(server.url)
            task = asking(AskUserQuestionItem("long", long_text), NOTES)
            strip = page.get_by_test_id("strip")
            await strip.wait_for()
            first = await strip.locator("li").first.inner_text()
            assert first == "● Should the migration also rewrite the…"
            await page.get_by_test_id("cancel").click()
            with pytest.raises(UserInteractionError):
                await task
            plan = asking(PLAN)
            await page.get_by_test_id("plan-review").wait_for()
            assert "Tab" in await page.get_by_test_id("shortcuts").inner_text()
            relay.close()
            await page.get_by_test_id("stopped").wait_for()
            assert await page.get_by_test_id("shortcuts").inner_text() == ""
            with pytest.raises(UserInteractionError):
                await plan
        finally:
            await page.close()


# ---------------------------------------------------------------- item 7: an installable app


READY = """Promise.race([navigator.serviceWorker.ready,
  new Promise((_, no) => setTimeout(() => no(new Error("no worker")), 20000))])"""


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


async def test_the_manifest_icons_and_worker_need_no_token_and_hold_nothing_secret() -> None:
    async with (
        served() as (_, server),
        httpx.AsyncClient(base_url=server.base, timeout=30) as http,
    ):
        manifest = await http.get("/manifest.webmanifest")
        assert manifest.status_code == 200
        assert manifest.headers["content-type"] == "application/manifest+json"
        fields = manifest.json()
        assert fields["display"] == "standalone"
        assert fields["start_url"] == "/"
        assert fields["scope"] == "/"
        assert fields["name"] == "Questions from your agent"
        assert fields["short_name"] == "Questions"
        assert fields["theme_color"] == "#1d4ed8"
        sizes = {}
        for icon in fields["icons"]:
            got = await http.get(icon["src"])
            assert got.status_code == 200
            assert got.headers["content-type"] == icon["type"]
            if icon["type"] == "image/png":
                sizes[icon["sizes"]] = png_size(got.content)
        assert sizes == {"192x192": (192, 192), "512x512": (512, 512)}
        worker = await http.get("/sw.js")
        assert worker.status_code == 200
        assert worker.headers["content-type"] == "text/javascript; charset=utf-8"
        assert "connect-src 'self'" in worker.headers["content-security-policy"]
        assert worker.headers["x-content-type-options"] == "nosniff"
        for response in (manifest, worker):
            assert server.token not in response.text
        page = await http.get("/")
        assert "manifest-src 'self'" in page.headers["content-security-policy"]
        assert "worker-src 'self'" in page.headers["content-security-policy"]
        assert (await http.post("/sw.js")).status_code == 401  # GET and HEAD only
        assert (await http.get("/api/me")).status_code == 401


async def test_the_page_is_installable_and_its_worker_keeps_the_shell_only(
    shared_browsers: SharedBrowsers, tmp_path: Path
) -> None:
    # A profile on disk: Chromium never offers to install from an incognito context.
    async with served() as (_, server):
        context = await shared_browsers.playwright.chromium.launch_persistent_context(
            tmp_path / "profile", executable_path=CHROMIUM, args=ARGS
        )
        try:
            page = await context.new_page()
            await page.goto(server.url)
            registration = await page.evaluate(
                """async () => {
                    const r = await Promise.race([navigator.serviceWorker.ready,
                      new Promise((_, no) => setTimeout(() => no(new Error("no worker")), 20000))]);
                    return {scope: r.scope, script: r.active.scriptURL};
                }"""
            )
            assert registration == {"scope": server.base + "/", "script": server.base + "/sw.js"}
            cdp = await context.new_cdp_session(page)
            manifest = await cdp.send("Page.getAppManifest")
            assert manifest["errors"] == []
            assert json.loads(manifest["data"])["display"] == "standalone"
            await page.reload()  # now under the worker's control
            await page.get_by_text("connected", exact=True).wait_for()
            assert await page.evaluate("!!navigator.serviceWorker.controller")
            installable = await cdp.send("Page.getInstallabilityErrors")
            assert installable["installabilityErrors"] == []
            task = asking(PKG)
            await page.get_by_test_id("question").wait_for()
            await page.get_by_text("npm", exact=True).click()
            await page.get_by_test_id("submit").click()
            await task
            kept = await page.evaluate(
                """async () => {
                    const out = [];
                    for (const name of await caches.keys()) {
                      const cache = await caches.open(name);
                      for (const request of await cache.keys()) {
                        const body = await (await cache.match(request)).text();
                        out.push({url: request.url, body});
                      }
                    }
                    return out;
                }"""
            )
            assert [entry["url"] for entry in kept] == [server.base + "/"]
            assert server.token not in kept[0]["body"]
            assert PKG.question not in kept[0]["body"]
            assert "<title>Questions from your agent</title>" in kept[0]["body"]
        finally:
            await context.close()


async def test_the_kept_shell_opens_when_the_server_is_gone(browser: Browser) -> None:
    async with served() as (_, server):
        context = await browser.new_context()
        page = await context.new_page()
        await page.goto(server.url)
        await page.evaluate(READY)
        await page.reload()
        await page.get_by_text("connected", exact=True).wait_for()
        url = server.base + "/"
    try:
        await page.goto(url)  # the server stopped: the kept shell, saying so
        await page.get_by_test_id("stopped").wait_for()
    finally:
        await context.close()
