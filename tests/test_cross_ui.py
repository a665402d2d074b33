"""The same user actions through every UI give the same answer.

Each scenario says what the user does on one question (options chosen by number, text typed
as their own answer) and the one answer every UI must return: the console (typed lines),
the terminal UI (keys), the web page (clicks in a real browser), the MCP form (the content
a client sends back) and ``ScriptedProvider`` (its script). Text that names an option
selects it everywhere; typed text is trimmed everywhere.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import pytest
from playwright.async_api import Page
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ask,
    check_answer,
    provide,
)
from interaction.console import ConsoleProvider
from interaction.mcp import form_to_answer, request_to_form
from interaction.relay import Relay
from interaction.terminal import TerminalProvider
from interaction.testing import ScriptedProvider
from interaction.web import WebServer

from .terminal_helpers import ENTER

Item = AskUserQuestionAnswerItem
Option = AskUserQuestionOption

GO = AskUserQuestionItem("go", "Go ahead?", options=[Option("Yes"), Option("No")])
PKG = AskUserQuestionItem(
    "pkg", "Which package manager?", options=[Option("pnpm (Recommended)"), Option("npm")]
)
CHECKS = AskUserQuestionItem(
    "checks",
    "Which checks?",
    multi_select=True,
    options=[Option("tests"), Option("lint"), Option("types")],
)
NOTES = AskUserQuestionItem("notes", "Anything else?")
# Labels that are numbers: a typed "2" is the label "2", not the option numbered 2.
WORKERS = AskUserQuestionItem(
    "workers", "How many workers?", options=[Option("2"), Option("4"), Option("8")]
)
SIZES = AskUserQuestionItem(
    "sizes", "Which sizes?", multi_select=True, options=[Option("2"), Option("4"), Option("8")]
)


@dataclass(frozen=True)
class Scenario:
    """On ``question``: choose the options numbered ``chosen`` (1-based), then type ``typed``."""

    name: str
    question: AskUserQuestionItem
    chosen: tuple[int, ...]
    typed: str | None
    expected: AskUserQuestionAnswerItem

    @property
    def labels(self) -> list[str]:
        return [self.question.options[n - 1].label for n in self.chosen]


SCENARIOS = [
    Scenario("typed label", GO, (), "YES", Item("go", ["Yes"])),
    Scenario("typed own", PKG, (), "  bun ", Item("pkg", custom="bun")),
    Scenario("chosen", PKG, (2,), None, Item("pkg", ["npm"])),
    Scenario(
        "ticked and typed label", CHECKS, (3, 1), "Lint", Item("checks", ["types", "tests", "lint"])
    ),
    Scenario("ticked and typed own", CHECKS, (1,), "docs ", Item("checks", ["tests"], "docs")),
    Scenario("free text", NOTES, (), " ship it ", Item("notes", custom="ship it")),
    Scenario("skipped", PKG, (), None, Item("pkg")),
    Scenario("typed label that is a number", WORKERS, (), "2", Item("workers", ["2"])),
    Scenario("typed label that is the Other number", WORKERS, (), "4", Item("workers", ["4"])),
    Scenario("chosen among number labels", WORKERS, (3,), None, Item("workers", ["8"])),
    Scenario("ticked and typed number label", SIZES, (3,), "2", Item("sizes", ["8", "2"])),
]


def console_lines(scenario: Scenario) -> str:
    """What the user types on the console: a single-select's text as the reply itself;
    otherwise numbers (the last one opens "Other…"), then text."""
    question = scenario.question
    if not question.options:
        return f"{scenario.typed or ''}\n"
    if not question.multi_select and not scenario.chosen and scenario.typed is not None:
        return f"{scenario.typed}\n"
    numbers = [str(n) for n in scenario.chosen]
    if scenario.typed is not None:
        numbers.append(str(len(question.options) + 1))
        return f"{' '.join(numbers)}\n{scenario.typed}\n"
    return f"{' '.join(numbers)}\n"


def terminal_keys(scenario: Scenario) -> str:
    """The keys on the terminal UI: a digit jumps to a row, Space ticks, the "Other…" row
    opens the text field, Enter confirms, s skips."""
    question = scenario.question
    if not question.options:
        return f"{scenario.typed or ''}{ENTER}"
    if not scenario.chosen and scenario.typed is None:
        return "s"
    other = str(len(question.options) + 1)
    if question.multi_select:
        keys = "".join(f"{n} " for n in scenario.chosen)
        if scenario.typed is not None:
            return f"{keys}{other} {scenario.typed}{ENTER}"
        return f"{keys}{ENTER}"
    if scenario.typed is not None:
        return f"{other}{ENTER}{scenario.typed}{ENTER}"
    return f"{scenario.chosen[0]}{ENTER}"


def form_content(scenario: Scenario) -> dict[str, object]:
    """The content an MCP client sends back for the form ``request_to_form`` asked for."""
    (field,) = request_to_form(AskUserQuestionRequest([scenario.question]))[2]
    content: dict[str, object] = {}
    if not scenario.question.options:
        content[field.key] = scenario.typed or ""
        return content
    if scenario.chosen:
        multi = scenario.question.multi_select
        content[field.key] = scenario.labels if multi else scenario.labels[0]
    if scenario.typed is not None and field.other_key is not None:
        content[field.other_key] = scenario.typed
    return content


async def via_console(scenario: Scenario) -> AskUserQuestionAnswer:
    provider = ConsoleProvider(io.StringIO(console_lines(scenario)), io.StringIO())
    with provide(provider):
        return await ask(AskUserQuestionRequest([scenario.question]))


async def via_terminal(scenario: Scenario) -> AskUserQuestionAnswer:
    with create_pipe_input() as keyboard:
        keyboard.send_text(terminal_keys(scenario))
        with provide(TerminalProvider(keyboard, DummyOutput())):
            async with asyncio.timeout(10):  # keys that do not finish the batch fail, not hang
                return await ask(AskUserQuestionRequest([scenario.question]))


async def via_mcp_form(scenario: Scenario) -> AskUserQuestionAnswer:
    request = AskUserQuestionRequest([scenario.question])
    _, _, fields = request_to_form(request)
    return check_answer(request, form_to_answer(fields, form_content(scenario)))


async def via_script(scenario: Scenario) -> AskUserQuestionAnswer:
    typed = [] if scenario.typed is None else [scenario.typed]
    scripted = ScriptedProvider({scenario.question.id: [*scenario.labels, *typed]})
    with provide(scripted):
        return await ask(AskUserQuestionRequest([scenario.question]))


UIS: dict[str, Callable[[Scenario], Awaitable[AskUserQuestionAnswer]]] = {
    "console": via_console,
    "terminal": via_terminal,
    "mcp form": via_mcp_form,
    "script": via_script,
}


@pytest.mark.parametrize("ui", UIS)
async def test_every_scenario_gives_the_same_answer(ui: str) -> None:
    answers = [await UIS[ui](scenario) for scenario in SCENARIOS]
    assert answers == [AskUserQuestionAnswer([s.expected]) for s in SCENARIOS]


async def on_the_page(page: Page, scenario: Scenario) -> None:
    """Clicks the chosen options, types into the text field, and submits (or skips)."""
    await page.get_by_test_id("question").wait_for()
    for label in scenario.labels:
        await page.get_by_text(label, exact=True).click()
    if scenario.typed is not None:
        await page.get_by_test_id("other").fill(scenario.typed)
    if not scenario.chosen and scenario.typed is None:
        await page.get_by_test_id("skip").click()
    else:
        await page.get_by_test_id("submit").click()


async def test_the_web_page_gives_the_same_answers(site: tuple[Relay, WebServer, Page]) -> None:
    _, _, page = site
    answers = []
    for scenario in SCENARIOS:
        asking = asyncio.create_task(ask(AskUserQuestionRequest([scenario.question])))
        await on_the_page(page, scenario)
        answers.append(await asking)
        await page.get_by_text("No question is waiting.").wait_for()
    assert answers == [AskUserQuestionAnswer([s.expected]) for s in SCENARIOS]
