from __future__ import annotations

from dataclasses import dataclass

from interaction import AskUserQuestionItem, AskUserQuestionOption


@dataclass(frozen=True, eq=True)
class FakeAgent:
    """An agent whose equality is by value, so identity checks are really tested."""

    id: str
    session: str = "root"


def pkg_question(**changes: object) -> AskUserQuestionItem:
    fields: dict[str, object] = {
        "id": "pkg",
        "question": "Which package manager?",
        "options": [
            AskUserQuestionOption("pnpm (Recommended)"),
            AskUserQuestionOption("npm"),
            AskUserQuestionOption("yarn"),
        ],
    }
    fields.update(changes)
    return AskUserQuestionItem(**fields)  # type: ignore[arg-type]
