"""The Chromiums of a test process, launched by the process's one Playwright driver and
shared by its browser tests: each test opens fresh contexts (pages), which are closed when it
ends, so no test sees another's cookies, storage or tabs.

Launching Chromium is most of a browser test's cost (seconds on a busy 2-core machine), and
each Playwright driver is a Node.js process costing about 0.6 s of CPU to start; so both are
started once per test process, on first use, on the session's event loop, which the browser
tests run on (see ``tests/conftest.py``). Each browser is the driver's own child, spoken to
over a pipe with no process between them; the driver closes it when the session ends, or when
the driver's stdin closes because the test process ended, even by SIGKILL. A browser that
crashed or was closed is launched again on the next use.
"""

from __future__ import annotations

from playwright.async_api import Browser, Playwright

START_SECONDS = 60.0


class SharedBrowsers:
    """The browsers ``playwright`` launches (with ``args``), one per executable, each on
    first use."""

    def __init__(self, playwright: Playwright, args: list[str]) -> None:
        self._playwright = playwright
        self._args = args
        self._browsers: dict[str, Browser] = {}

    @property
    def playwright(self) -> Playwright:
        """The driver, for what a test needs of it beside a browser (its device list, a
        persistent context)."""
        return self._playwright

    async def browser(self, executable: str) -> Browser:
        """The running browser of ``executable``, launched first if it is not up (or no
        longer is)."""
        running = self._browsers.get(executable)
        if running is None or not running.is_connected():
            running = await self._playwright.chromium.launch(
                executable_path=executable, args=self._args, timeout=START_SECONDS * 1000
            )
            self._browsers[executable] = running
        return running

    async def close(self) -> None:
        browsers = list(self._browsers.values())
        self._browsers.clear()
        for running in browsers:
            await running.close()
