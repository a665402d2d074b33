"""2026-07-28: a tool's asks suspended into input-required results and resumed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._core import AskUserQuestionAnswer, AskUserQuestionRequest

if TYPE_CHECKING:
    from ._server import ElicitationProvider


class Suspension:
    def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        raise NotImplementedError(request)


def suspension_for(provider: ElicitationProvider) -> Suspension | None:
    del provider
    return None
