"""Teams: what a quorum costs across hosts.

(w) a permission question with a quorum of 2 (assigned to ``ops = alice, bob``), asked here
over Redis (host A) and approved on two other hosts: its ``requested`` event is read on
host B's stream, alice's approval is POSTed to B and bob's to host C (where bob's page is
open too, as it is when he approves what it shows), and the ask returns here; against two
plain answers' trips in the same run (the same permission question, unassigned, asked
here, read on B's stream and answered on B, twice). The subjects take turns round by
round. Both hosts are ``interaction serve --redis`` processes with the same team. Needs
``redis-server`` on PATH.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path

import httpx
from timing import CHILD_ENV, Row, turns

import interaction
from interaction import AskUserQuestionRequest, Assignment, permission_question

TITLE = "teams: a quorum-2 approval across hosts"
TOKENS = {"alice": "alice-bench-token-0123456789", "bob": "bob-bench-token-0123456789"}
DEPLOY = permission_question("Bash", "make deploy", id="deploy")
QUORUM = AskUserQuestionRequest([DEPLOY], assignment=Assignment(["ops"], 2))
PLAIN = AskUserQuestionRequest([DEPLOY])
ALLOW = {"answers": [{"id": "deploy", "selected": ["Allow"]}]}


def _host(url: str, prefix: str) -> tuple[subprocess.Popen[bytes], str]:
    """An ``interaction serve --redis`` process with the team: its base URL."""
    argv = [sys.executable, "-m", "interaction", "serve", "--redis", url, "--prefix", prefix]
    users = [f"--user={name}={name.upper()}_T" for name in TOKENS]
    env = {**CHILD_ENV, **{f"{name.upper()}_T": token for name, token in TOKENS.items()}}
    child = subprocess.Popen(
        [*argv, "--port", "0", *users, "--group", "ops=alice,bob"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        env=env,
    )
    assert child.stderr is not None
    base = ""
    for _ in TOKENS:  # one line per user: "interaction: NAME answers at BASE/#token=$VAR"
        line = child.stderr.readline().decode()
        if " answers at http" not in line:
            child.terminate()
            raise RuntimeError(f"interaction serve said: {line.strip()}")
        base = line.partition(" answers at ")[2].split("/#")[0]
    return child, base


async def _requested(lines: AsyncIterator[str]) -> str:
    while (await anext(lines)) != "event: requested":
        pass
    data: Mapping[str, object] = json.loads((await anext(lines)).removeprefix("data: "))
    question_id = data["id"]
    assert isinstance(question_id, str)
    return question_id


async def _quorum_trips(
    lines: AsyncIterator[str], alice: httpx.AsyncClient, bob: httpx.AsyncClient, number: int
) -> float:
    """Mean seconds of one quorum-2 approval: alice on B, then bob on C."""
    start = time.perf_counter()
    for _ in range(number):
        settled = asyncio.create_task(interaction.ask(QUORUM))
        question_id = await _requested(lines)
        path = f"/api/questions/{question_id}/answer"
        first = await alice.post(path, json=ALLOW)
        last = await bob.post(path, json=ALLOW)
        assert (first.status_code, last.status_code) == (202, 200), (first.text, last.text)
        await settled
    return (time.perf_counter() - start) / number


async def _plain_pairs(lines: AsyncIterator[str], alice: httpx.AsyncClient, number: int) -> float:
    """Mean seconds of two plain answers' trips, one after the other, on B."""
    start = time.perf_counter()
    for _ in range(2 * number):
        settled = asyncio.create_task(interaction.ask(PLAIN))
        question_id = await _requested(lines)
        answered = await alice.post(f"/api/questions/{question_id}/answer", json=ALLOW)
        assert answered.status_code == 200, answered.text
        await settled
    return (time.perf_counter() - start) / number


async def _read_all(lines: AsyncIterator[str]) -> None:
    """Read a page's stream as the page does, to its end."""
    async for _ in lines:
        pass


async def quorum_over_redis(url: str, number: int, repeat: int) -> tuple[float, float]:
    """Seconds of a quorum-2 approval across hosts, and of two plain trips (medians)."""
    from interaction.redis import RedisRelay

    prefix = f"teams{os.getpid()}"
    relay = RedisRelay(url, prefix=prefix)
    await relay.connect()
    (host_b, base_b), (host_c, base_c) = await asyncio.gather(
        asyncio.to_thread(_host, url, prefix), asyncio.to_thread(_host, url, prefix)
    )
    samples: list[list[float]] = [[], []]
    try:
        async with (
            httpx.AsyncClient(base_url=base_b, headers=_bearer("alice"), timeout=60) as alice,
            httpx.AsyncClient(base_url=base_c, headers=_bearer("bob"), timeout=60) as bob,
            alice.stream("GET", "/api/events") as events,
            bob.stream("GET", "/api/events") as bobs_events,
        ):
            lines = aiter(events.aiter_lines())
            while "snapshot" not in await anext(lines):  # asked from now on: requested events
                pass
            bobs_page = asyncio.create_task(_read_all(aiter(bobs_events.aiter_lines())))
            measured: list[Callable[[], Awaitable[float]]] = [
                lambda: _quorum_trips(lines, alice, bob, number),
                lambda: _plain_pairs(lines, alice, number),
            ]
            try:
                with interaction.provide(relay):
                    for subject in measured:  # warm every path (connections, scripts loaded)
                        await subject()
                    for round_number in range(repeat):
                        for index in turns(len(measured), round_number):
                            samples[index].append(await measured[index]())
            finally:
                bobs_page.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await bobs_page
    finally:
        for process in (host_b, host_c):
            process.terminate()
            await asyncio.to_thread(process.wait)
        await relay.aclose()
    quorum, plain = (statistics.median(s) for s in samples)
    return quorum, plain


def _bearer(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[name]}"}


def measure(quick: bool) -> list[Row]:
    """(w) a quorum-2 approval across hosts over Redis, against two plain trips."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.redis_server import RedisServer

    with tempfile.TemporaryDirectory() as directory, RedisServer(Path(directory)) as server:
        number, repeat = (3, 3) if quick else (30, 7)
        quorum, plain = asyncio.run(quorum_over_redis(server.url, number, repeat))
    return [
        Row(
            "(w) a quorum-2 approval across hosts over Redis",
            "ask on A -> event on B -> alice approves on B -> bob on C -> return on A",
            quorum * 1e3,
            "two plain answers' trips (ask on A, answer on B, twice)",
            plain * 1e3,
            "ms",
            "<= 1.2x",
            headline=True,
        )
    ]
