"""Provenance in every UI, and filled in where the seam knows it.

The console and the terminal draw one line under the title; the page shows source, host
and an age that stays current (Chromium, with the page's clock moved by the test); the
relays stamp when (and the shared relay from where) a question was asked; the CLI takes
``--source``.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from playwright.async_api import Browser

from interaction import (
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    PlanReviewIntent,
    Provenance,
    ask,
    provide,
    with_provenance,
)
from interaction.console import ConsoleProvider
from interaction.flow import BatchFlow
from interaction.redis import RedisRelay
from interaction.relay import PendingQuestion, Relay, RelayEvent, local_host
from interaction.terminal._text import plain
from interaction.terminal._view import Viewport, paint

from .redis_server import RedisServer, redis_server
from .web_helpers import served

__all__ = ["redis_server"]  # a fixture

PKG = AskUserQuestionItem("pkg", "Which package manager?", options=[AskUserQuestionOption("pnpm")])
HOSTILE = "<img src=x onerror=alert(1)>&amp;"  # ask() refuses controls; HTML stays text
WAIT = 20.0


async def first_question(events: AsyncIterable[RelayEvent]) -> PendingQuestion:
    async with asyncio.timeout(WAIT):
        async for event in events:
            if event.question is not None:
                return event.question
    raise AssertionError("the events ended")


def minutes_ago(minutes: int) -> datetime:
    return datetime.now(UTC) - timedelta(minutes=minutes, seconds=10)


# ---------------------------------------------------------------------------- filling in


def test_with_provenance_fills_only_what_the_asker_left_unsaid() -> None:
    moment = datetime(2026, 1, 2, tzinfo=UTC)
    bare = AskUserQuestionRequest([PKG], key="k")
    assert with_provenance(bare) is bare
    filled = with_provenance(bare, source="cli", host="h", asked_at=moment)
    assert filled.provenance == Provenance(source="cli", host="h", asked_at=moment)
    assert filled.key == "k"
    said = AskUserQuestionRequest([PKG], provenance=Provenance(source="bot", host="mine"))
    again = with_provenance(said, source="cli", host="h", tool="t")
    assert again.provenance == Provenance(source="bot", host="mine", tool="t")
    assert with_provenance(said, source="cli") is said


def test_local_host_is_a_provenance_host() -> None:
    host = local_host()
    assert host is not None
    assert host == host.strip()
    assert len(host) <= 200


async def test_the_relay_stamps_when_a_question_was_asked() -> None:
    relay = Relay()
    with provide(relay):
        events = relay.subscribe()
        before = datetime.now(UTC) - timedelta(milliseconds=1)
        task = asyncio.create_task(ask(AskUserQuestionRequest([PKG])))
        question = await first_question(events)
        after = datetime.now(UTC)
        provenance = question.request.provenance
        assert provenance is not None
        assert provenance.asked_at is not None
        assert before <= provenance.asked_at <= after
        assert (provenance.source, provenance.host) == (None, None)
        relay.cancel(question.id)
        with pytest.raises(Exception, match="dismissed"):
            await task


async def test_the_relay_keeps_the_askers_own_time() -> None:
    said = Provenance(source="bot", asked_at=datetime(2026, 1, 2, tzinfo=UTC))
    relay = Relay()
    with provide(relay):
        events = relay.subscribe()
        task = asyncio.create_task(ask(AskUserQuestionRequest([PKG], provenance=said)))
        question = await first_question(events)
        assert question.request.provenance == said
        relay.close()
        with pytest.raises(Exception, match="aborted"):
            await task


async def test_the_shared_relay_stamps_the_asking_host(redis_server: RedisServer) -> None:
    asker = RedisRelay(redis_server.url, prefix="prov-" + os.urandom(4).hex())
    server = RedisRelay(redis_server.url, prefix=asker.prefix)
    try:
        await server.connect()
        events = server.events((await server.snapshot()).position)
        with provide(asker):
            task = asyncio.create_task(
                ask(AskUserQuestionRequest([PKG], provenance=Provenance(source="bot")))
            )
            question = await first_question(events)
            await events.aclose()
            provenance = question.request.provenance
            assert provenance is not None
            assert (provenance.source, provenance.host) == ("bot", local_host())
            assert provenance.asked_at is not None
            await server.dismiss(question.id)
            with pytest.raises(Exception, match="dismissed"):
                await task
    finally:
        await asker.aclose()
        await server.aclose()


# ---------------------------------------------------------------------------- console, terminal


async def test_the_console_draws_one_line_of_provenance_escaped() -> None:
    provenance = Provenance(f"bot{HOSTILE}", "build-7", asked_at=minutes_ago(3))
    output = io.StringIO()
    provider = ConsoleProvider(io.StringIO("1\n"), output)
    with provide(provider):
        await ask(AskUserQuestionRequest([PKG], provenance=provenance))
    lines = output.getvalue().splitlines()
    title = lines.index("── Question ──")
    assert lines[title + 1] == f"(bot{HOSTILE} on build-7 · asked 3 min ago)"
    assert lines[title + 2] == "Which package manager?"


async def test_the_console_draws_no_provenance_line_without_one() -> None:
    output = io.StringIO()
    with provide(ConsoleProvider(io.StringIO("1\n"), output)):
        await ask(AskUserQuestionRequest([PKG]))
    lines = output.getvalue().splitlines()
    assert lines[lines.index("── Question ──") + 1] == "Which package manager?"


def test_the_terminal_draws_one_dim_line_under_the_title() -> None:
    provenance = Provenance("deploy-bot", "build-7", "run-42", asked_at=minutes_ago(2))
    flow = BatchFlow(AskUserQuestionRequest([PKG], provenance=provenance))
    screen = paint(flow, Viewport(), 80, 24)
    title, line, question = screen.above[:3]
    assert plain(title) == "── Question ──"
    assert plain(line) == "deploy-bot on build-7 · session run-42 · asked 2 min ago"
    assert {style for style, _ in line} == {"class:provenance"}  # dim, all of it
    assert plain(question) == "Which package manager?"
    bare = paint(BatchFlow(AskUserQuestionRequest([PKG])), Viewport(), 80, 24)
    assert plain(bare.above[1]) == "Which package manager?"


# ---------------------------------------------------------------------------- the CLI


def run_cli(*args: str, typed: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "interaction", *args],
        input=typed,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )


def test_ask_source_names_who_asks(tmp_path: Path) -> None:
    path = tmp_path / "request.json"
    request = {"questions": [{"id": "go", "question": "Go?"}], "provenance": {"source": "file"}}
    path.write_text(json.dumps(request))
    result = run_cli(
        "ask", str(path), "--source", "nightly-build", "--timeout", "60", typed="yes\n"
    )
    assert result.returncode == 0, result.stderr
    assert "(nightly-build)" in result.stderr.splitlines()
    assert result.stdout == '{"answers":[{"id":"go","selected":[],"custom":"yes"}]}\n'


def test_ask_source_is_checked_with_one_clear_line(tmp_path: Path) -> None:
    path = tmp_path / "request.json"
    path.write_text(json.dumps({"questions": [{"id": "go", "question": "Go?"}]}))
    result = run_cli("ask", str(path), "--source", "a\x1bb", typed="")
    assert result.returncode == 2
    assert result.stderr == (
        "interaction: --source: contains control character U+001B (BAD_REQUEST)\n"
    )


# ---------------------------------------------------------------------------- the page


async def test_the_page_shows_source_host_and_an_age_that_stays_current(
    browser: Browser,
) -> None:
    async with served() as (relay, server):
        page = await browser.new_page()
        try:
            await page.clock.install()
            await page.goto(server.url)
            provenance = Provenance(f"bot{HOSTILE}", "build-7", "run-1", "deploy")
            request = AskUserQuestionRequest([PKG], provenance=provenance)
            task = asyncio.create_task(ask(request))
            line = page.get_by_test_id("provenance")
            await line.wait_for()
            assert await page.get_by_test_id("source").inner_text() == f"bot{HOSTILE}"
            assert await page.get_by_test_id("host").inner_text() == "on build-7"
            assert await page.locator("img").count() == 0
            asked_at = page.get_by_test_id("asked-at")
            assert await asked_at.inner_text() == "asked just now"
            await page.clock.run_for(3 * 60_000 + 11_000)
            assert await asked_at.inner_text() == "asked 3 min ago"
            assert await line.inner_text() == (
                f"bot{HOSTILE} on build-7 · session run-1 · tool deploy · asked 3 min ago"
            )
            (question,) = relay.pending()
            relay.cancel(question.id)
            with pytest.raises(Exception, match="dismissed"):
                await task
        finally:
            await page.close()


async def test_a_plan_review_shows_its_provenance_too(browser: Browser) -> None:
    plan = AskUserQuestionItem(
        "plan",
        "Approve?",
        detail="# Plan",
        options=[AskUserQuestionOption("Approve"), AskUserQuestionOption("Revise")],
        intent=PlanReviewIntent("Approve"),
    )
    async with served() as (relay, server):
        page = await browser.new_page()
        try:
            await page.goto(server.url)
            task = asyncio.create_task(
                ask(AskUserQuestionRequest([plan], provenance=Provenance(source="planner")))
            )
            await page.get_by_test_id("plan-review").wait_for()
            text = await page.get_by_test_id("provenance").inner_text()
            assert text == "planner · asked just now"  # the relay stamped the time
            relay.close()
            with pytest.raises(Exception, match="aborted"):
                await task
        finally:
            await page.close()
