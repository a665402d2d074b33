"""The page's credential in a real browser (issue #33): no other local server ever gets it.

A cookie is sent to every port of its host, so the page uses none: the token comes in the
link's fragment, lives in the tab's sessionStorage and goes out only as an
``Authorization`` header to the page's own origin. Here a second local HTTP server, a real
one in its own process, serves a page the browser visits after the interaction page, and
records every request it gets: none may carry a cookie or the token. And the page's
event stream, read with fetch() to carry the header, resumes from its Last-Event-ID as
EventSource did.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections.abc import AsyncGenerator, Iterator
from contextlib import contextmanager

import pytest
from playwright.async_api import Browser

from interaction import (
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    UserInteractionError,
    ask,
    provide,
)
from interaction.relay import Relay, RelayEvent, RelaySnapshot
from interaction.web import WebServer

from .loopback import popen
from .web_helpers import served

OTHER_SERVER = textwrap.dedent(
    """
    import json, sys, threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    RECORDING = threading.Lock()  # one line per request, though requests come in threads

    PAGE = b'''<!doctype html><title>another local app</title>
    <img src="/pixel.png"><script>
    fetch("/api/questions", {credentials: "include"}).then(() => { document.title = "done"; });
    </script>'''

    class Record(BaseHTTPRequestHandler):
        def do_GET(self):
            with RECORDING:
                print(json.dumps({"path": self.path, "headers": dict(self.headers.items())}),
                      flush=True)
            body = PAGE if self.path == "/" else b"{}"
            self.send_response(200)
            self.send_header("Content-Type", "text/html" if self.path == "/" else "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Record)
    print(server.server_address[1], flush=True)
    server.serve_forever()
    """
)


@contextmanager
def other_local_server() -> Iterator[tuple[int, subprocess.Popen[str]]]:
    """Another program's HTTP server on a loopback port; stopped by its PID."""
    with popen([sys.executable, "-c", OTHER_SERVER], stdout=subprocess.PIPE) as process:
        assert process.stdout is not None
        yield int(process.stdout.readline()), process


async def test_another_local_server_never_receives_the_token(browser: Browser) -> None:
    with other_local_server() as (port, process):
        async with served() as (_, server):
            context = await browser.new_context()
            page = await context.new_page()
            await page.goto(server.url)
            await page.get_by_text("connected", exact=True).wait_for()
            task = asyncio.create_task(
                ask(AskUserQuestionRequest([AskUserQuestionItem("a", "q?")]))
            )
            await page.get_by_test_id("submit").click()  # the page used its credential
            assert (await task).answers == (AskUserQuestionAnswerItem("a"),)
            other = f"http://127.0.0.1:{port}/"
            await page.goto(other)  # the same tab, then a new one, on the other port
            await page.wait_for_function("document.title === 'done'")
            second = await context.new_page()
            await second.goto(other)
            await second.wait_for_function("document.title === 'done'")
            await page.goto(server.base + "/")  # back: a reload from sessionStorage works
            await page.get_by_text("connected", exact=True).wait_for()
            await context.close()
        process.terminate()  # before reading to its end (stopped again, harmlessly, on exit)
        process.wait(timeout=30)
        assert process.stdout is not None
        requests = [json.loads(line) for line in process.stdout.read().splitlines()]
    paths = sorted(r["path"] for r in requests if r["path"] != "/favicon.ico")  # if asked
    assert paths == ["/", "/", "/api/questions", "/api/questions", "/pixel.png", "/pixel.png"]
    for request in requests:
        names = {name.lower() for name in request["headers"]}
        assert "cookie" not in names, request
        assert "authorization" not in names, request
        assert server.token not in json.dumps(request), request


class WatchedRelay(Relay):
    """A relay that records where each event stream started from."""

    def __init__(self) -> None:
        super().__init__()
        self.snapshots = 0
        self.starts: list[str] = []

    async def snapshot(self) -> RelaySnapshot:
        self.snapshots += 1
        return await super().snapshot()

    def events(self, after: str) -> AsyncGenerator[RelayEvent, None]:
        self.starts.append(after)
        return super().events(after)


async def test_a_dropped_stream_resumes_from_its_last_event_id(browser: Browser) -> None:
    relay = WatchedRelay()
    with provide(relay):
        async with WebServer(relay) as server:
            page = await browser.new_page()
            try:
                await page.goto(server.url)
                first = asyncio.create_task(
                    ask(AskUserQuestionRequest([AskUserQuestionItem("a", "A?")]))
                )
                await page.get_by_test_id("question").wait_for()
                requested = relay.position  # "A?" was the last event published
                assert server._server is not None
                for connection in list(server._server.server_state.connections):
                    connection.transport.abort()  # the network drops every connection
                second = asyncio.create_task(
                    ask(AskUserQuestionRequest([AskUserQuestionItem("b", "B?")]))
                )
                await page.get_by_test_id("queue").get_by_text("1 more waiting").wait_for()
                assert relay.starts == [relay.starts[0], requested]  # resumed after "A?"
                assert relay.snapshots == 1  # no second snapshot: the missed event replayed
                await page.get_by_test_id("cancel").click()
                await page.get_by_test_id("question-text").get_by_text("B?").wait_for()
                await page.get_by_test_id("cancel").click()
                for task in (first, second):
                    with pytest.raises(UserInteractionError):
                        await task
            finally:
                await page.close()
                relay.close()
