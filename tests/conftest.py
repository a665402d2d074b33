from __future__ import annotations

import os
import shutil
import signal
from collections.abc import AsyncIterator, Iterator

import pytest
from hypothesis import HealthCheck, settings
from playwright.async_api import Browser, Page, async_playwright

from interaction import AskUserQuestionRequest
from interaction.relay import Relay
from interaction.web import WebServer

from .browser_server import BrowserServer
from .helpers import pkg_question
from .web_helpers import served

pytest_plugins = ["pytester"]

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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the long tests first: under pytest-xdist a worker starts each at the outset, while
    the others share the rest, rather than one worker running it alone at the end."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


@pytest.fixture
def request_one() -> AskUserQuestionRequest:
    return AskUserQuestionRequest([pkg_question()])


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


@pytest.fixture(scope="session")
def browser_server() -> Iterator[BrowserServer]:
    """One Chromium for the test process (each xdist worker), launched on first use."""
    server = BrowserServer(CHROMIUM, ARGS)
    yield server
    server.stop()


@pytest.fixture
async def browser(browser_server: BrowserServer) -> AsyncIterator[Browser]:
    """The worker's Chromium, connected for this test: its contexts and pages are its own
    and are closed when it ends."""
    if not HAVE_CHROMIUM:
        if os.environ.get("CI"):
            pytest.fail("chromium is required under CI: .ci/run installs it")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    async with async_playwright() as playwright:
        connected = await playwright.chromium.connect(browser_server.endpoint())
        yield connected
        await connected.close()


@pytest.fixture
async def site(browser: Browser) -> AsyncIterator[tuple[Relay, WebServer, Page]]:
    async with served() as (relay, server):
        page = await browser.new_page()
        page.on("dialog", lambda dialog: pytest.fail(f"the page opened a dialog: {dialog.message}"))
        await page.goto(server.url)
        yield relay, server, page
        await page.close()
