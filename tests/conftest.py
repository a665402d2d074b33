from __future__ import annotations

import asyncio
import os
import shutil
import signal
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from hypothesis import HealthCheck, settings
from playwright.async_api import Browser, Page, async_playwright

from interaction import AskUserQuestionRequest
from interaction.relay import Relay
from interaction.web import WebServer

from .browser_server import SharedBrowsers
from .helpers import pkg_question
from .web_helpers import served

# Plugin autoloading is off (pyproject.toml): the plugins the tests use, by module.
pytest_plugins = ["pytester", "_hypothesis_pytestplugin", "interaction._pytest_plugin"]

# On a loaded 2-core CI machine one example can take far longer than on a quiet one: no
# per-example deadline and no speed health checks, so only a wrong result fails a property.
# Every @settings(...) in the suite inherits this profile.
settings.register_profile(
    "interaction",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("interaction")


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C's default disposition, even when the suite was started with SIGINT ignored (in
    the background of a shell without job control, say): the tests that stop a child with
    Ctrl-C need their children, which inherit an ignored signal, to take it."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (the README's command) starts one worker more than the machine has
    cores: a third of a worker's time goes waiting on the servers, peers and browsers it
    started, and a spare worker keeps every core busy meanwhile (on 2 cores, 3 workers
    ran the suite in 238 s where 2 took 270 s and 4 took 242 s)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cores or 1) + 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that drives the worker's Chromium ``browser`` (so ``-m "not browser"``
    selects the rest) and put it on the session's event loop (see :data:`SESSION_LOOP`), and
    put the long tests first: under pytest-xdist a worker starts each at the outset, while the
    others share the rest, rather than one worker running it alone at the end."""
    for item in items:
        if "shared_browsers" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
            item.add_marker(SESSION_LOOP, append=False)
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


@pytest.fixture
def request_one() -> AskUserQuestionRequest:
    return AskUserQuestionRequest([pkg_question()])


# Debian's Chromium, and its old headless shell (the package chromium-headless-shell), which
# Playwright itself uses for headless pages: it draws the same pages for about a third of
# Chromium's CPU per page, so the browser tests run in it when it is installed, except those
# marked `full_chromium`: the shell shows no notifications (its Notification.permission is
# always "denied"). Its /usr/bin script runs this binary without exec.
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
HEADLESS_SHELL = "/usr/lib/chromium/chromium-headless-shell"
HAVE_CHROMIUM = os.path.exists(CHROMIUM)
HAVE_HEADLESS_SHELL = os.path.exists(HEADLESS_SHELL)
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
# A test using the browser runs on the session's event loop, where the worker's one
# Playwright driver and its Chromiums live (tests/browser_server.py); every other test keeps
# a loop of its own. The async fixtures such a test uses must run there too
# (``loop_scope="session"``): those of this file and of the browser test files do.
SESSION_LOOP = pytest.mark.asyncio(loop_scope="session")


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def shared_browsers() -> AsyncIterator[SharedBrowsers]:
    """The test process's (each xdist worker's) Playwright driver, and its Chromiums,
    launched on first use."""
    if not (HAVE_CHROMIUM and HAVE_HEADLESS_SHELL) and os.environ.get("CI"):
        pytest.fail(
            "chromium and chromium-headless-shell are required under CI: .ci/run installs them"
        )
    if not HAVE_CHROMIUM:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    async with async_playwright() as playwright:
        shared = SharedBrowsers(playwright, ARGS)
        try:
            yield shared
        finally:
            await shared.close()


@pytest_asyncio.fixture(loop_scope="session")
async def browser(
    request: pytest.FixtureRequest, shared_browsers: SharedBrowsers
) -> AsyncIterator[Browser]:
    """The worker's Chromium (the headless shell when installed, unless the test is marked
    `full_chromium`), for this test: the contexts and pages it opens are its own and are
    closed when it ends, and so are the tasks it left running, as the end of an event loop
    of its own would."""
    full = request.node.get_closest_marker("full_chromium") is not None
    running = await shared_browsers.browser(
        HEADLESS_SHELL if HAVE_HEADLESS_SHELL and not full else CHROMIUM
    )
    before = asyncio.all_tasks()
    yield running
    for context in running.contexts:
        await context.close()
    left = asyncio.all_tasks() - before - {asyncio.current_task()}
    for task in left:
        task.cancel()
    await asyncio.gather(*left, return_exceptions=True)


@pytest_asyncio.fixture(loop_scope="session")
async def site(browser: Browser) -> AsyncIterator[tuple[Relay, WebServer, Page]]:
    async with served() as (relay, server):
        page = await browser.new_page()
        page.on("dialog", lambda dialog: pytest.fail(f"the page opened a dialog: {dialog.message}"))
        await page.goto(server.url)
        yield relay, server, page
        await page.close()
