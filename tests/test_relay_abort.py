"""An abort ends a shared relay's ask, every time: an asker in a process of its own, a page
in another, on a real ``redis-server`` and a real PostgreSQL (issue 41, item 1).

``ask()`` stops a provider by cancelling its task, once. On Python 3.11 a cancellation
that lands as redis-py's socket write completes is swallowed (``asyncio.wait_for``,
CPython gh-86296): the relay then waited for an answer for ever. Its wait now ends on the
request's signal as well. Each repetition is bounded, so a regression fails, never hangs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest

from interaction import (
    AbortController,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    ask,
    provide,
)
from interaction.postgres import PostgresRelay
from interaction.redis import RedisRelay
from interaction.relay import RelayEvent

from .loopback import running
from .postgres_server import PostgresServer, postgres_server
from .redis_server import RedisServer, redis_server

__all__ = ["postgres_server", "redis_server"]  # fixtures

BOUND = 15.0  # seconds an aborted ask may take before the test calls it hung
REPETITIONS = 50
STEPS = 12  # loop steps over which an abort is swept in one process

# An asking process: a line is a question to ask with a fresh signal; "abort" aborts that
# signal from the thread that reads the lines (as a host's other thread would), and the
# ask's outcome is printed as one JSON line once it ends. Its loop has other work too (as
# a host's has, or as a loaded machine makes it): each of its steps holds the loop a while
# (blocked in a sleep, as in a blocking call, which leaves the machine's cores to the
# other tests), and an abort lands amid the ask's steps. The relay is built once; an empty
# line ends it.
ASKER = r"""
import asyncio, json, sys, threading, time
from interaction import AbortController, AskUserQuestionItem, AskUserQuestionRequest
from interaction import UserInteractionError, ask, provide

async def main(kind, url, space):
    if kind == "redis":
        from interaction.redis import RedisRelay
        relay = RedisRelay(url, prefix=space)
    else:
        from interaction.postgres import PostgresRelay
        relay = PostgresRelay(url, schema=space)
    await relay.connect()
    loop = asyncio.get_running_loop()
    lines = asyncio.Queue()

    def read():
        controller = None
        for line in sys.stdin:
            if line.strip() == "abort":
                aborted_at = time.monotonic()
                controller.abort()  # from this thread: AbortController is thread-safe
                loop.call_soon_threadsafe(lines.put_nowait, ("aborted", None, aborted_at))
            else:
                controller = AbortController()
                loop.call_soon_threadsafe(lines.put_nowait, (line.strip(), controller, 0.0))
        loop.call_soon_threadsafe(lines.put_nowait, ("", None, 0.0))

    async def one(request, ended):
        try:
            answer = await ask(request)
        except UserInteractionError as error:
            ended.set_result(error.code)
        else:
            ended.set_result("answered: " + answer.answers[0].custom)

    async def other_work():  # the host's own work: each step holds the loop a while
        while True:
            time.sleep(0.002)
            await asyncio.sleep(0)

    busy = asyncio.ensure_future(other_work())
    threading.Thread(target=read, daemon=True).start()
    print("ready", flush=True)
    with provide(relay):
        while (command := await lines.get())[0]:
            text, controller, _ = command
            request = AskUserQuestionRequest(
                [AskUserQuestionItem("q", text)], signal=controller.signal
            )
            ended = loop.create_future()
            task = asyncio.ensure_future(one(request, ended))
            what, _, aborted_at = await lines.get()
            assert what == "aborted", what
            code = await ended
            took = time.monotonic() - aborted_at
            print(json.dumps({"code": code, "ms": round(took * 1000, 1)}), flush=True)
            await task
    busy.cancel()
    await relay.aclose()

asyncio.run(main(*sys.argv[1:]))
"""


@contextlib.asynccontextmanager
async def asker(kind: str, url: str, space: str) -> AsyncIterator[asyncio.subprocess.Process]:
    """The asking process, ready; SIGKILLed by its PID on the way out if it still runs."""
    pipe = subprocess.PIPE
    argv = (sys.executable, "-c", ASKER, kind, url, space)
    async with running(*argv, stdin=pipe, stdout=pipe, stderr=pipe) as child:
        assert await line(child) == "ready"
        yield child


async def line(child: asyncio.subprocess.Process) -> str:
    assert child.stdout is not None
    assert child.stderr is not None
    try:
        text = await asyncio.wait_for(child.stdout.readline(), BOUND)
    except TimeoutError:
        raise AssertionError(f"the asker did not answer within {BOUND} s: hung") from None
    if not text:
        raise AssertionError(f"the asker ended: {(await child.stderr.read()).decode()[-2000:]}")
    return text.decode().strip()


async def send(child: asyncio.subprocess.Process, text: str) -> None:
    assert child.stdin is not None
    child.stdin.write(text.encode() + b"\n")
    await child.stdin.drain()


async def page(
    kind: str, request: pytest.FixtureRequest
) -> tuple[RedisRelay | PostgresRelay, str, str]:
    """The page's relay on a fresh space, with the URL and space an asker joins it by."""
    space = f"a{secrets.token_hex(6)}"
    if kind == "redis":
        server: RedisServer = request.getfixturevalue("redis_server")
        return RedisRelay(server.url, prefix=space), server.url, space
    database: PostgresServer = request.getfixturevalue("postgres_server")
    relay = PostgresRelay(database.url, schema=space)
    await relay.migrate()
    return relay, database.url, space


async def next_event(events: AsyncIterator[RelayEvent]) -> RelayEvent:
    return await asyncio.wait_for(anext(events), BOUND)


@pytest.mark.parametrize("kind", ["redis", "postgres"])
@pytest.mark.parametrize("when", ["seen", "asked"])
async def test_an_abort_ends_an_ask_in_another_process_every_time(
    kind: str, when: str, request: pytest.FixtureRequest
) -> None:
    """The asker aborts as soon as the page has seen its question (``seen``, the issue's
    repro), or as soon as it has begun to ask (``asked``: the abort races the publish), 50
    times over one process: each ask ends ``ASK_ABORTED`` within the bound, and the page
    sees each question it saw withdrawn."""
    relay, url, space = await page(kind, request)
    try:
        events = relay.events((await relay.snapshot()).position)
        async with asker(kind, url, space) as child:
            for repetition in range(REPETITIONS):
                await send(child, f"Q{repetition}")
                if when == "seen":
                    requested = await next_event(events)
                    assert requested.kind == "requested"
                    assert requested.question is not None
                    assert requested.question.request.questions[0].question == f"Q{repetition}"
                await send(child, "abort")
                outcome = json.loads(await line(child))
                assert outcome["code"] == ErrorCode.ASK_ABORTED, (repetition, outcome)
                if when == "seen":
                    assert await next_event(events) == RelayEvent(
                        "resolved", requested.id, outcome="aborted"
                    )
            await send(child, "")
        await events.aclose()
        assert (await relay.snapshot()).questions == ()
    finally:
        await relay.aclose()


@pytest.mark.parametrize("kind", ["redis", "postgres"])
async def test_an_abort_at_any_step_of_the_ask_ends_it(
    kind: str, request: pytest.FixtureRequest
) -> None:
    """The abort swept over the ask's first loop steps in one process, so it lands in each
    await of the relay's publishing (on Python 3.11, in redis-py's socket write whose
    ``wait_for`` swallowed it): every ask ends ``ASK_ABORTED``, nothing is left pending."""
    relay, _, _ = await page(kind, request)
    try:
        await relay.connect()
        with provide(relay):
            for steps in range(STEPS):
                controller = AbortController()
                question = AskUserQuestionRequest(
                    [AskUserQuestionItem("q", f"Step {steps}?")], signal=controller.signal
                )
                task = asyncio.create_task(ask(question))
                for _ in range(steps):
                    await asyncio.sleep(0)  # one loop step: the point of the sweep
                controller.abort()
                with pytest.raises(UserInteractionError) as info:
                    await asyncio.wait_for(asyncio.shield(task), BOUND)
                assert info.value.code == ErrorCode.ASK_ABORTED, steps
                assert (await relay.snapshot()).questions == ()
    finally:
        await relay.aclose()
