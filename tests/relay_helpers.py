"""Helpers for the relay tests: start an ask and see it through ``events()``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from interaction import (
    AbortSignal,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ask,
)
from interaction.relay import RelayBackend, RelayEvent

Item = AskUserQuestionAnswerItem
Answer = AskUserQuestionAnswer
SINGLE = AskUserQuestionItem(
    "pkg", "Which?", options=[AskUserQuestionOption("pnpm"), AskUserQuestionOption("npm")]
)
WAIT = 10.0  # the bound on one event's wait (a loaded machine), never a pause


async def first_event(backend: RelayBackend, after: str) -> RelayEvent:
    iterator = backend.events(after)
    try:
        return await asyncio.wait_for(anext(iterator), WAIT)
    finally:
        await iterator.aclose()


async def take(iterator: AsyncGenerator[RelayEvent, None], count: int) -> list[RelayEvent]:
    return [await asyncio.wait_for(anext(iterator), WAIT) for _ in range(count)]


async def begin(
    backend: RelayBackend, *questions: AskUserQuestionItem, signal: AbortSignal | None = None
) -> tuple[asyncio.Task[Answer], RelayEvent]:
    """Start an ask and return it with its ``requested`` event, seen through events()."""
    before = (await backend.snapshot()).position
    task = asyncio.create_task(ask(AskUserQuestionRequest(questions or [SINGLE], signal=signal)))
    event = await first_event(backend, before)
    assert event.kind == "requested"
    assert event.question is not None
    return task, event
