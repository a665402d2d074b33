"""Test doubles for plugin authors: answer ``ask()`` from a script, or never.

With pytest, the ``interaction_provider`` fixture (installed with the package) gives each
test a :class:`ScriptedProvider` that is already active.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TypeAlias

from ._core import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    answer_item,
    label_key,
)

__all__ = ["BlockingProvider", "Script", "ScriptedAnswer", "ScriptedProvider"]

ScriptedAnswer: TypeAlias = str | Sequence[str] | AskUserQuestionAnswerItem | None
"""One question's scripted answer.

A string is what the user typed as their own answer, under the rule every UI follows
(:func:`interaction.answer_item`): it selects the option it names (compared by
``label_key``), else it is the custom answer, and blank is a skip. A list of strings is
what the user chose and typed: each one naming an option selects it, in order, and the
one that names none is the custom answer (two such strings are a scripting error). An
item is returned as it is; ``None`` skips.
"""

Script: TypeAlias = (
    Mapping[str, ScriptedAnswer]
    | Callable[[AskUserQuestionRequest], AskUserQuestionAnswer | Awaitable[AskUserQuestionAnswer]]
    | BaseException
)
"""Answers by question id, a function of the request (sync or async), or an error to raise."""


class ScriptedProvider:
    """A provider that answers from :attr:`script` and records every request it saw.

    Questions the mapping does not name are skipped.
    """

    def __init__(self, script: Script | None = None) -> None:
        self.script: Script = {} if script is None else script
        self.requests: list[AskUserQuestionRequest] = []

    @property
    def last_request(self) -> AskUserQuestionRequest:
        """The latest request; ``AssertionError`` if none came."""
        assert self.requests, "the scripted provider was never asked"
        return self.requests[-1]

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        self.requests.append(request)
        script = self.script
        if isinstance(script, BaseException):
            # Raised afresh each time: re-raising one object would grow its traceback.
            raise script.with_traceback(None)
        if callable(script):
            result = script(request)
            if inspect.isawaitable(result):
                return await result
            return result
        return AskUserQuestionAnswer(
            [_scripted_item(question, script.get(question.id)) for question in request.questions]
        )


def _scripted_item(
    question: AskUserQuestionItem, scripted: ScriptedAnswer
) -> AskUserQuestionAnswerItem:
    if isinstance(scripted, AskUserQuestionAnswerItem):
        return scripted
    if scripted is None:
        return AskUserQuestionAnswerItem(question.id)
    if isinstance(scripted, str):  # typed as the user's own answer, as in every UI
        return answer_item(question, text=scripted)
    labels = {label_key(option.label): option.label for option in question.options}
    chosen: list[str] = []
    typed: list[str] = []
    for text in scripted:
        label = labels.get(label_key(text))
        if label is None:
            typed.append(text)
        else:
            chosen.append(label)
    if len(typed) > 1:
        raise ValueError(
            f"the script for question {question.id!r} types two answers of its own: {typed!r}"
        )
    return answer_item(question, chosen, typed[0] if typed else None)


class BlockingProvider:
    """A provider that never answers: for testing aborts, timeouts and cancellation.

    :attr:`started` is set when a request arrives; :attr:`cleaned_up` counts the asks whose
    cancellation reached the provider and ran its cleanup.
    """

    def __init__(self) -> None:
        self.requests: list[AskUserQuestionRequest] = []
        self.started = asyncio.Event()
        self.cleaned_up = 0
        self._arrived = asyncio.Condition()

    async def wait_until_pending(self, count: int) -> None:
        """Return once ``count`` asks are waiting in the provider at the same time."""
        async with self._arrived:
            await self._arrived.wait_for(lambda: self.pending >= count)

    @property
    def pending(self) -> int:
        """How many asks are waiting in this provider now."""
        return len(self.requests) - self.cleaned_up

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        self.requests.append(request)
        self.started.set()
        async with self._arrived:
            self._arrived.notify_all()
        try:
            return await asyncio.Future[AskUserQuestionAnswer]()
        finally:
            self.cleaned_up += 1
