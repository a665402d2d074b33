"""smolagents: the model-facing ``ask_user_question`` as a ready ``Tool``.

:class:`AskUserTool` is a ``smolagents.Tool`` for ``ToolCallingAgent`` and ``CodeAgent``
(where the model's code calls ``ask_user_question(questions=[...])``). Its ``questions``
input carries ``interaction.tool``'s JSON Schema, and each call goes through
``interaction.tool.run_tool_sync``: smolagents runs tools in plain threads, so the ask runs
on the loop the provider was registered on, or on a fresh loop of the tool's thread (see
docs/providers.md, "Sync callers"). The model gets ``{"answers":[...]}``; a dismissal, a
timeout or a missing provider is a result it can act on; arguments it must fix raise, which
smolagents shows the model as the step's error.

The tool asks ``provider`` when one is given, else the provider active in context. Each
question's provenance names smolagents as its source and the tool's name as the one asking.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

try:
    from smolagents import Tool
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "interaction.integrations.smolagents needs smolagents:"
        ' pip install "interaction-seam[smolagents]"'
    ) from exc

from .._core import ErrorCode, UserInteractionProvider
from ..tool import (
    DEFAULT_LIMITS,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    ToolLimits,
    run_tool_sync,
    tool_parameters,
)
from ._common import asked_by, checked_timeout, timeout_signal, with_provider_sync

__all__ = ["FRAMEWORK", "AskUserTool", "ToolArgumentsError"]

FRAMEWORK: Final = "smolagents"
"""The source of the tool's questions: smolagents does not tell a tool which agent calls it."""

_RETRIED: Final = frozenset({ErrorCode.BAD_REQUEST, ErrorCode.EMPTY_QUESTIONS})


class ToolArgumentsError(ValueError):
    """The model's arguments do not describe a question: its message says how to fix them."""


class AskUserTool(Tool):  # type: ignore[no-untyped-call]  # smolagents' hooks are untyped
    """The model-facing ``ask_user_question`` tool for smolagents agents.

    ``provider`` is asked when given (registered on ``loop``, the event loop it lives on,
    if it lives on one), else the provider active where the agent runs. ``timeout``
    (seconds) bounds each ask: the model then gets the ``ASK_TIMEOUT`` result; one that is
    not positive and finite is a ``ValueError`` here. ``limits`` bounds a call, as
    everywhere.
    """

    name = TOOL_NAME
    description = TOOL_DESCRIPTION
    output_type = "string"
    skip_forward_signature_validation = True  # forward(questions) checks its own argument

    def __init__(
        self,
        provider: UserInteractionProvider | None = None,
        *,
        loop: asyncio.AbstractEventLoop | None = None,
        limits: ToolLimits = DEFAULT_LIMITS,
        timeout: float | None = None,
    ) -> None:
        self._timeout = checked_timeout(timeout)
        self._provider = provider
        self._loop = loop
        self._limits = limits
        properties = tool_parameters(limits)["properties"]
        assert isinstance(properties, dict)
        questions = properties["questions"]
        assert isinstance(questions, dict)
        self.inputs: dict[str, Any] = {"questions": dict(questions)}
        super().__init__()  # type: ignore[no-untyped-call]

    def forward(self, questions: object) -> str:
        """Ask ``questions``; the tool result text, or :class:`ToolArgumentsError`."""
        result = with_provider_sync(
            self._provider,
            lambda: run_tool_sync(
                {"questions": questions},
                signal=timeout_signal(self._timeout),
                limits=self._limits,
                provenance=asked_by(FRAMEWORK, tool=self.name),
            ),
            loop=self._loop,
        )
        if result.error is not None and result.error["code"] in _RETRIED:
            raise ToolArgumentsError(result.content.removeprefix("Error: "))
        return result.content
