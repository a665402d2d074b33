"""Every code example in README.md and docs/ runs, and each one a reader may copy runs alone.

Each ```python block runs on its own, in a fresh namespace and a fresh context, unless the
paragraph right before it says that it "continues the example above": such a block runs
after the block before it (and whatever that one continues), in their namespace. A
```python test block is a pytest test module, run with the blocks it continues (or alone).
"""

from __future__ import annotations

import contextvars
import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
EXPECTED_PAGES = {
    "README.md",
    "vocabulary.md",
    "ask-and-errors.md",
    "providers.md",
    "agents.md",
    "abort.md",
    "testing.md",
    "wire.md",
    "tool.md",
    "helpers.md",
    "cli.md",
    "mcp.md",
    "web.md",
    "terminal.md",
    "architecture.md",
    "suspend.md",
    "relay.md",
    "integrations.md",
    "acp.md",
    "a2a.md",
    "agui.md",
    "policies.md",
    "audit.md",
    "notify.md",
    "durable.md",
    "deploy.md",
}
FENCE = re.compile(r"^```python( test)?\n(.*?)^```$", re.MULTILINE | re.DOTALL)
CONTINUES = "continues the example above"


@dataclass(frozen=True, slots=True)
class Block:
    page: Path
    line: int  # of the opening fence
    source: str
    is_test: bool
    continues: bool  # the paragraph right before it says so

    def compiled(self) -> types.CodeType:
        # Padded so that a traceback names the line of the page.
        return compile("\n" * self.line + self.source, str(self.page), "exec")


def paragraph_before(text: str, end: int) -> str:
    """The prose right before a fence: its lines back to a blank line or another fence."""
    lines = text[:end].rstrip().split("\n")
    start = len(lines)
    while start and lines[start - 1].strip() and not lines[start - 1].startswith("```"):
        start -= 1
    return " ".join(" ".join(lines[start:]).split())


def blocks(page: Path) -> list[Block]:
    text = page.read_text("utf-8")
    return [
        Block(
            page,
            text.count("\n", 0, match.start()) + 1,
            match.group(2),
            bool(match.group(1)),
            CONTINUES in paragraph_before(text, match.start()).lower(),
        )
        for match in FENCE.finditer(text)
    ]


def chains(page: Path) -> list[list[Block]]:
    """Each block that does not continue another starts a chain of the blocks continuing it."""
    found: list[list[Block]] = []
    for block in blocks(page):
        if block.continues and found:
            found[-1].append(block)
        else:
            found.append([block])
    return found


CHAINS = [chain for page in PAGES for chain in chains(page)]


def test_every_documentation_page_is_found() -> None:
    assert {page.name for page in PAGES} == EXPECTED_PAGES
    assert all(blocks(page) for page in PAGES), "a page without an example"


def test_only_a_block_after_another_says_it_continues_one() -> None:
    firsts = [blocks(page)[0] for page in PAGES]
    assert [f"{b.page.name}:{b.line}" for b in firsts if b.continues] == []


def test_a_block_is_alone_unless_the_paragraph_before_it_says_otherwise(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```python\na = 1\n```\n\nAlone:\n\n```python\nb = 2\n```\n\n"
        "Then (this continues the example\nabove):\n```python\nassert a + b == 3\n```\n"
        "This Continues The Example Above, in a test:\n\n```python test\ndef test_b(): ...\n```\n"
        "\nIt continues the example above.\n\nA new paragraph:\n\n```python\nc = 3\n```\n"
    )
    assert [[(b.line, b.is_test) for b in chain] for chain in chains(page)] == [
        [(1, False)],
        [(7, False), (13, False), (18, True)],
        [(26, False)],
    ]


@pytest.mark.parametrize("chain", CHAINS, ids=lambda chain: f"{chain[0].page.name}:{chain[0].line}")
def test_examples_run(chain: list[Block], request: pytest.FixtureRequest) -> None:
    page = chain[0].page
    code = [block for block in chain if not block.is_test]
    module = types.ModuleType(f"docs_{page.stem.replace('-', '_')}")
    sys.modules[module.__name__] = module  # dataclasses look their module up

    def run_all() -> None:
        for block in code:
            exec(block.compiled(), module.__dict__)

    try:
        contextvars.copy_context().run(run_all)
    finally:
        del sys.modules[module.__name__]
    tests = [block.source for block in chain if block.is_test]
    if tests:
        # Only now: pytester drops the modules imported after it starts when the test ends,
        # and a module such as cryptography's cannot be imported twice in one process.
        pytester: pytest.Pytester = request.getfixturevalue("pytester")
        source = "\n\n".join([*(block.source for block in code), *tests])
        pytester.makepyfile(**{f"test_{page.stem}_example": source})
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-o", "asyncio_mode=auto")
        result.assert_outcomes(passed=len(tests))


def test_the_readme_lists_every_page_and_links_only_what_the_repo_has() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    missing = [p.name for p in (ROOT / "docs").glob("*.md") if f"(docs/{p.name})" not in readme]
    assert missing == []
    targets = re.findall(r"\]\(([^)#\s]+)", readme)
    assert [t for t in targets if "://" not in t and not (ROOT / t).exists()] == []
    assert "`interaction-seam`" in readme  # the name to pip install
