"""Remembered decisions: rules that answer a permission before a human sees it.

:class:`PolicyProvider` wraps any provider. For a request whose every question carries a
:class:`~interaction.PermissionIntent`, it looks for rules that match each question; when
each is decided, it answers with the intent's own allow or deny label (the answer still
passes ``ask()``'s answer check), and otherwise the whole request goes to the provider it
wraps. Deny rules win over allow rules. When the person chooses the intent's
``allow_always`` option, a rule is made that allows the same input from then on. A
:class:`TimeoutPolicy` says what happens when nobody answers. The rule grammar, the scopes
and the stores are described in docs/policies.md.

A store that cannot be read, or whose content is not exactly what this module writes, is
a :class:`RuleStoreError`: the ask fails with it, and nothing is ever allowed by it.
"""

from __future__ import annotations

from ._policy_provider import PolicyProvider
from ._rule_file import JsonFileRuleStore
from ._rules import (
    RULE_STORE_CORRUPT,
    RULE_STORE_UNAVAILABLE,
    Effect,
    MemoryRuleStore,
    Rule,
    RuleStore,
    RuleStoreError,
    Scope,
    corrupt_store,
    exact_pattern,
    mac_of,
    matches,
    new_rule,
    parse_spec,
    rule_from_json,
    rule_to_json,
    serial_of,
    set_mac,
    signed,
    unsealed,
    verified,
    went_back,
)
from ._timeout_policy import TimeoutPolicy, timeout_for

__all__ = [
    "RULE_STORE_CORRUPT",
    "RULE_STORE_UNAVAILABLE",
    "Effect",
    "JsonFileRuleStore",
    "MemoryRuleStore",
    "PolicyProvider",
    "Rule",
    "RuleStore",
    "RuleStoreError",
    "Scope",
    "TimeoutPolicy",
    "corrupt_store",
    "exact_pattern",
    "mac_of",
    "matches",
    "new_rule",
    "parse_spec",
    "rule_from_json",
    "rule_to_json",
    "serial_of",
    "set_mac",
    "signed",
    "timeout_for",
    "unsealed",
    "verified",
    "went_back",
]
