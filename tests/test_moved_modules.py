"""The module names the engine packages replaced (issue 46) still import, re-exporting the
same objects, and each says once, with a ``DeprecationWarning``, where its names went."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import interaction.postgres
import interaction.redis

from .helpers import import_error_without

MOVED = [
    ("interaction.redis_relay", "interaction.redis", ["RedisRelay"]),
    (
        "interaction.redis_rules",
        "interaction.redis",
        ["MAX_ATTEMPTS", "MIN_KEY_BYTES", "RedisRuleStore"],
    ),
    ("interaction.redis_audit", "interaction.redis", ["RedisAuditLog"]),
    ("interaction.redis_spent", "interaction.redis", ["CLOCK_SKEW", "RedisSpentStore"]),
    ("interaction.postgres_relay", "interaction.postgres", ["PostgresRelay"]),
]


@pytest.mark.parametrize(("old", "new", "names"), MOVED)
def test_an_old_module_name_re_exports_with_a_deprecation_warning(
    old: str, new: str, names: list[str]
) -> None:
    code = (
        "import warnings; warnings.simplefilter('always')\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        f" import {old} as old\n"
        f"import {new} as new\n"
        "print(*[(w.category.__name__, str(w.message), w.filename) for w in seen], sep='\\n')\n"
        "print(old.__all__, all(getattr(old, n) is getattr(new, n)"
        " for n in old.__all__ if hasattr(new, n)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    message = (
        f"{old} is deprecated: import from {new} (the old name goes in the next minor release)"
    )
    # One warning, pointed at the line that imported the old name (the program's).
    assert out[:-1] == [str(("DeprecationWarning", message, "<string>"))]
    assert out[-1] == f"{names!r} True"
    classes = [name for name in names if not name.isupper()]
    assert set(classes) <= set(importlib.import_module(new).__all__)


def test_the_old_names_keep_their_constants() -> None:
    with pytest.warns(DeprecationWarning, match="interaction.redis_rules is deprecated"):
        rules = importlib.reload(importlib.import_module("interaction.redis_rules"))
    with pytest.warns(DeprecationWarning, match="interaction.redis_spent is deprecated"):
        spent = importlib.reload(importlib.import_module("interaction.redis_spent"))
    assert (rules.MAX_ATTEMPTS, rules.MIN_KEY_BYTES) == (
        interaction.redis._rules.MAX_ATTEMPTS,
        interaction.redis._rules.MIN_KEY_BYTES,
    )
    assert spent.CLOCK_SKEW == interaction.redis._spent.CLOCK_SKEW


def test_each_engine_package_names_its_extra_and_holds_every_store() -> None:
    assert import_error_without("redis", "interaction.redis") == (
        'interaction.redis needs the redis client: pip install "interaction-seam[redis]"'
        " (the interaction[redis] extra)"
    )
    assert interaction.postgres.__all__ == [
        "PostgresAuditLog",
        "PostgresPushSubscriptionStore",
        "PostgresRelay",
        "PostgresRuleStore",
        "PostgresSpentStore",
        "PostgresUsedLinks",
    ]
    assert interaction.redis.__all__ == [
        "RedisAuditLog",
        "RedisPushSubscriptionStore",
        "RedisRelay",
        "RedisRuleStore",
        "RedisSpentStore",
        "RedisUsedLinks",
    ]
