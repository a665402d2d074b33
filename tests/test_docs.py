"""Every code example in README.md and docs/ runs.

A page's ```python blocks run in order in one namespace, in a fresh context; a
```python test block is a pytest test module, run after the page's other blocks.
"""

from __future__ import annotations

import contextvars
import re
import sys
import types
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
    "policies.md",
    "audit.md",
    "notify.md",
    "durable.md",
}
FENCE = re.compile(r"^```python( test)?\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks(page: Path) -> list[tuple[bool, str]]:
    return [(bool(m.group(1)), m.group(2)) for m in FENCE.finditer(page.read_text("utf-8"))]


def test_every_documentation_page_is_found() -> None:
    assert {page.name for page in PAGES} == EXPECTED_PAGES
    assert all(blocks(page) for page in PAGES), "a page without an example"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_examples_run(page: Path, pytester: pytest.Pytester) -> None:
    code = [source for is_test, source in blocks(page) if not is_test]
    module = types.ModuleType(f"docs_{page.stem.replace('-', '_')}")
    sys.modules[module.__name__] = module  # dataclasses look their module up

    def run_all() -> None:
        for source in code:
            exec(compile(source, str(page), "exec"), module.__dict__)

    try:
        contextvars.copy_context().run(run_all)
    finally:
        del sys.modules[module.__name__]
    tests = [source for is_test, source in blocks(page) if is_test]
    if tests:
        pytester.makepyfile(**{f"test_{page.stem}_example": "\n\n".join([*code, *tests])})
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-o", "asyncio_mode=auto")
        result.assert_outcomes(passed=len(tests))


def test_the_readme_lists_every_page_and_links_only_what_the_repo_has() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    missing = [p.name for p in (ROOT / "docs").glob("*.md") if f"(docs/{p.name})" not in readme]
    assert missing == []
    targets = re.findall(r"\]\(([^)#\s]+)", readme)
    assert [t for t in targets if "://" not in t and not (ROOT / t).exists()] == []
    assert "`interaction-seam`" in readme  # the name to pip install


def test_each_web_example_runs_on_its_own() -> None:
    # A reader copies one block: it must not lean on the imports of the blocks before it.
    for is_test, source in blocks(ROOT / "docs" / "web.md"):
        assert not is_test
        module = types.ModuleType("docs_web_alone")
        sys.modules[module.__name__] = module
        try:
            contextvars.copy_context().run(exec, compile(source, "web.md", "exec"), module.__dict__)
        finally:
            del sys.modules[module.__name__]
