"""Many pages on one host: (r) 1,000 event streams open at once on one ``WebServer``.

A host process (the in-memory relay behind a ``WebServer`` with ``max_streams`` raised to
fit, the default being 64) asks one question at a time; 1,000 pages, plain asyncio
sockets in this process, each hold ``GET /api/events`` open. Measured: the host's memory
per open stream (growth of its resident set, over the streams), and for each question the
time from the ask to its ``requested`` event read by the first page and by the last page
(p50 and p99 over the questions; the first page is the reference, measured on the very
same questions). Each question is answered by a POST once every page read it, and the
next one waits until every page read the ``resolved`` event. A page that gets a second
snapshot (the stream fell behind and started over) fails the run: no snapshot loop.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field

import httpx
from timing import CHILD_ENV, Row

TITLE = "many pages: 1,000 event streams on one host"

HOST = r"""
import asyncio, json, sys
from interaction import AskUserQuestionItem, AskUserQuestionRequest, ask, provide
from interaction.relay import Relay
from interaction.web import WebServer

def rss_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])

async def main(streams):
    relay = Relay()
    loop = asyncio.get_running_loop()
    server = WebServer(relay, max_streams=streams + 8, max_connections=streams + 64)
    async with server:
        print(json.dumps({"base": server.base, "token": server.token}), flush=True)
        tasks = set()
        with provide(relay):
            while command := (await loop.run_in_executor(None, sys.stdin.readline)).strip():
                if command == "rss":
                    print(rss_kib(), flush=True)
                else:
                    question = AskUserQuestionItem("q", f"Which one, {command}?")
                    task = asyncio.create_task(ask(AskUserQuestionRequest([question])))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)

asyncio.run(main(int(sys.argv[1])))
"""


@dataclass
class Question:
    """One question's times: when it was asked, and when each page read its events."""

    asked: float
    id: str = ""
    requested: list[float] = field(default_factory=list)
    resolved: int = 0
    everyone: asyncio.Event = field(default_factory=asyncio.Event)
    settled: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class Pages:
    count: int
    current: Question | None = None
    snapshots: list[int] = field(default_factory=list)
    ready: int = 0
    all_ready: asyncio.Event = field(default_factory=asyncio.Event)


async def page(base: str, token: str, pages: Pages, index: int) -> None:
    """One page: ``GET /api/events`` on a socket of its own, reading events for ever."""
    host, port = base.removeprefix("http://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port), limit=1 << 20)
    writer.write(
        f"GET /api/events HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\n"
        "Accept: text/event-stream\r\n\r\n".encode()
    )
    kind = ""
    try:
        while line := await reader.readline():
            text = line.decode().rstrip("\r\n")
            if text.startswith("event: "):
                kind = text.removeprefix("event: ")
            elif text.startswith("data: "):
                data = json.loads(text.removeprefix("data: "))
                if kind == "snapshot":
                    pages.snapshots[index] += 1
                    if pages.snapshots[index] == 1:
                        pages.ready += 1
                        if pages.ready == pages.count:
                            pages.all_ready.set()
                    continue
                question = pages.current  # one question at a time
                if question is None:
                    continue
                if kind == "requested":
                    question.id = question.id or data["id"]
                    question.requested.append(time.perf_counter())
                    if len(question.requested) == pages.count:
                        question.everyone.set()
                elif kind == "resolved":
                    question.resolved += 1
                    if question.resolved == pages.count:
                        question.settled.set()
    finally:
        writer.close()


@dataclass(frozen=True, slots=True)
class Figures:
    rss_per_stream: float  # bytes
    rss_before: float  # bytes
    first: list[float]  # seconds, per question
    last: list[float]


def start_host(count: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", HOST, str(count)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=CHILD_ENV,
    )


async def many_pages(count: int, questions: int) -> Figures:
    child = await asyncio.to_thread(start_host, count)
    assert child.stdin is not None
    assert child.stdout is not None
    stdin, stdout = child.stdin, child.stdout

    async def say(command: str) -> None:
        stdin.write(f"{command}\n".encode())
        await asyncio.to_thread(stdin.flush)

    async def rss() -> float:
        await say("rss")
        return int(await asyncio.to_thread(stdout.readline)) * 1024.0

    opened: list[asyncio.Task[None]] = []
    try:
        started = json.loads(await asyncio.to_thread(stdout.readline))
        base, token = started["base"], started["token"]
        before = await rss()
        pages = Pages(count, snapshots=[0] * count)
        for index in range(count):
            opened.append(asyncio.create_task(page(base, token, pages, index)))
            if index % 50 == 49:
                await asyncio.sleep(0)  # let the connections go out
        await asyncio.wait_for(pages.all_ready.wait(), 120)
        after = await rss()
        first: list[float] = []
        last: list[float] = []
        async with httpx.AsyncClient(
            base_url=base, headers={"Authorization": f"Bearer {token}"}
        ) as http:
            for number in range(questions):
                listed = (await http.get("/api/questions")).json()["questions"]
                assert listed == [], listed
                pending = pages.current = Question(time.perf_counter())
                await say(f"question {number}")
                await asyncio.wait_for(pending.everyone.wait(), 120)
                first.append(min(pending.requested) - pending.asked)
                last.append(max(pending.requested) - pending.asked)
                body = {"answers": [{"id": "q", "selected": [], "custom": "this"}]}
                posted = await http.post(f"/api/questions/{pending.id}/answer", json=body)
                assert posted.status_code == 200, posted.text
                await asyncio.wait_for(pending.settled.wait(), 120)
        assert all(s == 1 for s in pages.snapshots), "a page fell into a snapshot loop"
        return Figures((after - before) / count, before, first, last)
    finally:
        for task in opened:
            task.cancel()
        await asyncio.gather(*opened, return_exceptions=True)
        stdin.close()
        child.terminate()
        await asyncio.to_thread(child.wait)


def percentile(values: list[float], cut: int) -> float:
    return statistics.quantiles(values, n=100)[cut - 1]


def measure(quick: bool) -> list[Row]:
    """(r) memory per open stream; the time from an ask to the event read by the last page."""
    count, questions = (50, 5) if quick else (1_000, 50)
    figures = asyncio.run(many_pages(count, questions))
    case = f"(r) {count:,} open event streams on one host"
    rows = [
        Row(
            case,
            "host memory per open stream (each page: 1 snapshot, no loop)",
            figures.rss_per_stream / 1024,
            "host RSS before the streams, per 1,000",
            figures.rss_before / 1024 / 1_000,
            "KiB",
            "report, KiB",
            headline=True,
        )
    ]
    for cut in (50, 99):
        rows.append(
            Row(
                case,
                f"ask -> event read by the last page, p{cut}",
                percentile(figures.last, cut) * 1e3,
                f"the same, first page, p{cut}",
                percentile(figures.first, cut) * 1e3,
                "ms",
                "report, ms",
                headline=cut == 99,
            )
        )
    return rows
