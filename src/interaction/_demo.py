"""The built-in demo: the questions ``interaction demo`` asks."""

from __future__ import annotations

from typing import Final

from ._core import (
    AskUserQuestionItem,
    AskUserQuestionOption,
    PlanReviewIntent,
)

__all__ = ["DEMO_BATCH", "DEMO_PLAN"]

DEMO_BATCH: Final = (
    AskUserQuestionItem(
        id="pkg",
        header="Package manager",
        question="Which package manager should the project use?",
        options=[
            AskUserQuestionOption("pnpm (Recommended)", "Fast, strict, saves disk space"),
            AskUserQuestionOption("npm", "Ships with Node.js"),
            AskUserQuestionOption("yarn", "Plug'n'Play installs"),
        ],
    ),
    AskUserQuestionItem(
        id="checks",
        header="CI",
        question="Which checks should run on every push?",
        multi_select=True,
        options=[
            AskUserQuestionOption("tests"),
            AskUserQuestionOption("lint", "ruff check and ruff format --check"),
            AskUserQuestionOption("types", "mypy --strict"),
        ],
    ),
    AskUserQuestionItem(
        id="notes",
        question="Anything else the agent should know before it starts?",
    ),
)
"""A single-select with a recommended option, a multi-select and a free-text question."""

DEMO_PLAN: Final = AskUserQuestionItem(
    id="plan",
    header="Plan",
    question="Approve this plan?",
    detail=(
        "# Set up the project\n"
        "1. Add a `pyproject.toml` with the chosen tools.\n"
        "2. Write the CI workflow with the chosen checks.\n"
        "3. Open a pull request for review."
    ),
    options=[AskUserQuestionOption("Approve"), AskUserQuestionOption("Revise")],
    intent=PlanReviewIntent(approve="Approve"),
)
"""A plan review, asked on its own so that UIs present it as one."""
