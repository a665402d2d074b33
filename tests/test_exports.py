"""The internal surface stays honest: extras reach the core only through ``interaction._core``.

In the manner of trio's ``test_exports.py``: the facade's names are pinned, every one of
them resolves, and no module outside the core imports a private core module directly.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import interaction
from interaction import _core

PACKAGE = Path(interaction.__file__).parent
CORE_MODULES = {
    "_abort",
    "_agents",
    "_ask",
    "_core",
    "_errors",
    "_helpers",
    "_presentation",
    "_provenance",
    "_team",
    "_registry",
    "_suspend",
    "_sync",
    "_types",
    "_request_checks",
    "_answer_checks",
    "_text_policy",
}
# What _core offers beyond the public facade: tools the codec, the tool and the relay share
# with ask(). Anything else an in-tree UI needs must be public, so an outside UI has it too.
INTERNAL_ONLY = {
    "DISPOSED_MESSAGE",
    "MAX_ASSIGNEES",
    "MAX_PROVENANCE_TEXT",
    "MISMATCH_MESSAGE",
    "SURROGATE",
    "aborted_error",
    "as_plain",
    "ask_with",
    "call_sync",
    "check_caller",
    "check_provenance",
    "check_questions",
    "fault",
    "problem_of",
    "json_type",
    "questions_from_json",
    "short_repr",
    "signal_deadline",
    "thaw",
    "with_provider",
    "with_provider_sync",
    "approves",
    "check_assignment",
    "check_assignment_in",
    "not_assigned_error",
    "now_utc",
    "is_name",
    "may_settle",
    "may_see",
    "assignment_of",
    "quorum_progress",
}


def _extras() -> list[Path]:
    return sorted(
        path
        for path in PACKAGE.rglob("*.py")
        if not (path.parent == PACKAGE and path.stem in CORE_MODULES | {"__init__"})
    )


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports from, resolved to a dotted name, with its line."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    if path.name == "__init__.py":
        package = ".".join(path.relative_to(PACKAGE.parent).parts[:-1])
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            found.append((node.lineno, name))
            found.extend((node.lineno, f"{name}.{alias.name}") for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
    return found


def test_the_scan_sees_every_extra() -> None:
    names = {path.relative_to(PACKAGE).as_posix() for path in _extras()}
    assert {"wire.py", "tool.py", "console.py", "relay.py", "mcp/__init__.py", "cli.py"} <= names
    assert {"terminal/_app.py", "web/_app.py", "testing.py"} <= names


def test_no_extra_imports_a_private_core_module() -> None:
    private = {f"interaction.{name}" for name in CORE_MODULES - {"_core"}}
    offences = [
        f"{path.relative_to(PACKAGE)}:{line} imports {name}"
        for path in _extras()
        for line, name in _imported_modules(path)
        if name in private
    ]
    assert offences == []


def test_the_facade_is_pinned_and_resolves() -> None:
    assert set(_core.__all__) == set(interaction.__all__) | INTERNAL_ONLY
    for name in _core.__all__:
        assert hasattr(_core, name), name


def test_the_public_names_in_the_facade_are_the_public_objects() -> None:
    for name in interaction.__all__:
        assert getattr(_core, name) is getattr(interaction, name), name


def test_import_interaction_loads_the_core_and_nothing_else() -> None:
    # ``import interaction`` loads its own core modules and, beyond what asyncio has loaded,
    # only standard-library modules: no extra, no optional dependency.
    probe = (
        f"import sys; sys.path.insert(0, {str(PACKAGE.parent)!r}); import asyncio;"
        " before = set(sys.modules); import interaction;"
        " print(*sorted(set(sys.modules) - before))"
    )
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", probe], capture_output=True, text=True, check=True
    )
    loaded = set(result.stdout.split())
    ours = {name for name in loaded if name.split(".")[0] == "interaction"}
    expected = {f"interaction.{name}" for name in CORE_MODULES - {"_core"}}
    assert ours == expected | {"interaction"}
    assert {name.split(".")[0] for name in loaded - ours} <= sys.stdlib_module_names


DRIVERS = {"redis": "redis/", "psycopg": "postgres/"}
# The deprecated names of the engine packages' modules import the driver only to name the
# extra when it is missing (tests/test_moved_modules.py).
MOVED_GUARDS = {
    "redis_relay/__init__.py",
    "redis_rules.py",
    "redis_audit.py",
    "redis_spent.py",
    "postgres_relay/__init__.py",
}


def test_each_driver_is_imported_by_its_engine_package_only() -> None:
    offences = [
        f"{where}:{line} imports {name}"
        for path in _extras()
        if (where := path.relative_to(PACKAGE).as_posix()) not in MOVED_GUARDS
        for line, name in _imported_modules(path)
        if (home := DRIVERS.get(name.split(".")[0])) is not None and not where.startswith(home)
    ]
    assert offences == []
    # and the check sees the drivers where they are
    seen = {
        name.split(".")[0]
        for home in ("redis/_stream.py", "postgres/_store.py")
        for _, name in _imported_modules(PACKAGE / home)
    }
    assert set(DRIVERS) <= seen
