from __future__ import annotations

import subprocess
import sys
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


CHECKS = AskUserQuestionItem(
    "checks",
    "Which checks?",
    multi_select=True,
    options=[
        AskUserQuestionOption("tests"),
        AskUserQuestionOption("lint"),
        AskUserQuestionOption("types"),
    ],
)
NOTES = AskUserQuestionItem("notes", "Anything else?")


def import_error_without(missing: str, module: str) -> str:
    """The ImportError message of ``import module`` in a fresh interpreter without ``missing``."""
    code = (
        f"import sys; sys.modules[{missing!r}] = None\n"
        f"try:\n import {module}\nexcept ImportError as e:\n print(e)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()
