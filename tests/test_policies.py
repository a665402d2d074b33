"""Policies: the rule grammar, the provider wrapper, scopes, stores and the timeout policy."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    PermissionVerdict,
    Provenance,
    UserInteractionError,
    ask,
    ask_permission,
    permission_question,
    provide,
)
from interaction.audit import AuditProvider, JsonlAuditLog
from interaction.decisions import Decision, collect_decisions
from interaction.policies import (
    RULE_STORE_CORRUPT,
    JsonFileRuleStore,
    MemoryRuleStore,
    PolicyProvider,
    Rule,
    RuleStoreError,
    TimeoutPolicy,
    exact_pattern,
    matches,
    new_rule,
    parse_spec,
    rule_to_json,
    signed,
    timeout_for,
)
from interaction.testing import BlockingProvider, ScriptedProvider

# ---------------------------------------------------------------------- the grammar

NO_TOOL = "must start with a tool name (no spaces or parentheses), or *"
KEYS = ["id", "effect", "tool", "pattern", "source", "scope", "session", "createdAt", "createdBy"]
NOT_JSON = "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"

# spec, effect, tool, summary asked about, whether the rule matches
MATCHING: list[tuple[str, str, str, str, bool]] = [
    # the tool alone: any input of that tool, exactly that tool
    ("Bash", "allow", "Bash", "anything at all", True),
    ("Bash", "allow", "bash", "ls", False),
    ("Bash", "allow", "Bash2", "ls", False),
    ("*", "allow", "Read", "/etc/passwd", True),
    # exact
    ("Bash(npm test)", "allow", "Bash", "npm test", True),
    ("Bash(npm test)", "allow", "Bash", "npm test ", False),
    ("Bash(npm test)", "allow", "Bash", " npm test", False),
    ("Bash(npm test)", "allow", "Bash", "npm  test", False),
    ("Bash(npm test)", "allow", "Bash", "npm\u00a0test", False),
    ("Bash(npm test)", "allow", "Bash", "NPM TEST", False),
    ("Bash(npm test)", "allow", "Bash", "npm tests", False),
    ("Bash(npm test)", "allow", "Read", "npm test", False),
    ("Bash()", "allow", "Bash", "", True),
    ("Bash()", "allow", "Bash", " ", False),
    # exact holds shell operators as written: it vouches for exactly that text
    ("Bash(make && make install)", "allow", "Bash", "make && make install", True),
    # prefix: the text, or the text and a space and more
    ("Bash(npm test:*)", "allow", "Bash", "npm test", True),
    ("Bash(npm test:*)", "allow", "Bash", "npm test --watch", True),
    ("Bash(npm test:*)", "allow", "Bash", "npm testify", False),
    ("Bash(npm test:*)", "allow", "Bash", "npm tes", False),
    ("Bash(npm test:*)", "allow", "Bash", "npx npm test", False),
    ("Bash(npm test:*)", "allow", "Bash", "npm test\t--x", False),
    # hostile inputs behind an allowed prefix: chained, piped, redirected, substituted
    ("Bash(npm test:*)", "allow", "Bash", "npm test && rm -rf ~", False),
    ("Bash(npm test:*)", "allow", "Bash", "npm test; rm -rf ~", False),
    ("Bash(npm test:*)", "allow", "Bash", "npm test | sh", False),
    ("Bash(npm test:*)", "allow", "Bash", "npm test > ~/.bashrc", False),
    ("Bash(npm test:*)", "allow", "Bash", "npm test < /etc/shadow", False),
    ("Bash(npm test:*)", "allow", "Bash", "npm test `rm -rf ~`", False),
    ("Bash(npm test:*)", "allow", "Bash", "npm test $(rm -rf ~)", False),
    ("Bash(npm test:*)", "allow", "Bash", "npm test ${IFS}x", False),
    # ... which a deny prefix still catches: denying more is safe
    ("Bash(rm:*)", "deny", "Bash", "rm -rf / && echo done", True),
    ("Bash(rm:*)", "deny", "Bash", "rmdir x", False),
    # glob: * within a path segment, ** across, ? one character
    ("Read(src/*.py)", "allow", "Read", "src/a.py", True),
    ("Read(src/*.py)", "allow", "Read", "src/sub/a.py", False),
    ("Read(src/**)", "allow", "Read", "src/sub/a.py", True),
    ("Read(src/**)", "allow", "Read", "src", False),
    ("Read(src/**)", "allow", "Read", "src/../etc/passwd", True),  # documented: no resolving
    ("Read(src/?.py)", "allow", "Read", "src/ab.py", False),
    ("Read(src/?.py)", "allow", "Read", "src/a.py", True),
    ("Read(src/*)", "allow", "Read", "src/a;rm", False),
    # escapes: a literal star, question mark, backslash
    (r"Bash(echo \*)", "allow", "Bash", "echo *", True),
    (r"Bash(echo \*)", "allow", "Bash", "echo x", False),
    (r"Bash(ls a\:*)", "allow", "Bash", "ls a:*", True),
    (r"Bash(ls a\:*)", "allow", "Bash", "ls a:b", True),  # \: is a plain colon: a glob star
    (r"Bash(x\\)", "allow", "Bash", "x\\", True),
    # regex characters are literal
    ("Bash(a.c)", "allow", "Bash", "abc", False),
    ("Bash(a+(b))", "allow", "Bash", "a+(b)", True),
    ("Bash([ab])", "allow", "Bash", "a", False),
]


@pytest.mark.parametrize(("spec", "effect", "tool", "summary", "expected"), MATCHING)
def test_rule_matching(spec: str, effect: str, tool: str, summary: str, expected: bool) -> None:
    rule = new_rule(spec, effect)  # type: ignore[arg-type]
    assert matches(rule, tool, summary, None, None) is expected


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", f"rule spec '' {NO_TOOL}"),
        ("Bash (ls)", f"rule spec 'Bash (ls)' {NO_TOOL}"),
        ("Bash(ls", "rule spec 'Bash(ls' must end with ) after its pattern"),
        ("Bash(ls)x", "rule spec 'Bash(ls)x' must end with ) after its pattern"),
        ("Bash(:*)", "pattern ':*' has an empty prefix: write the tool alone"),
        ("Bash(a*b:*)", "pattern 'a*b:*' mixes a prefix (:*) with a glob"),
        ("Bash(x\\)", "pattern 'x\\\\' ends with a lone backslash"),
        ("Bash(a\nb)", "rule spec 'Bash(a\\nb)' contains a control character"),
        ("B" * 5000, "a rule spec is at most 4096 characters, got 5000"),
    ],
)
def test_bad_specs_are_refused_with_a_reason(spec: str, message: str) -> None:
    with pytest.raises(UserInteractionError) as caught:
        parse_spec(spec)
    assert (caught.value.code, caught.value.message) == (ErrorCode.BAD_REQUEST, message)


@given(st.text(min_size=0, max_size=40).filter(lambda s: s.isprintable()))
def test_the_exact_pattern_of_an_input_matches_it_and_only_it(summary: str) -> None:
    rule = new_rule(f"Bash({exact_pattern(summary)})")
    assert matches(rule, "Bash", summary, None, None)
    assert not matches(rule, "Bash", summary + "x", None, None)
    assert not matches(rule, "Bash", "x" + summary, None, None)


def test_source_and_session_narrow_a_rule() -> None:
    by_source = new_rule("Bash(ls)", source="ci-bot")
    assert matches(by_source, "Bash", "ls", "ci-bot", None)
    assert not matches(by_source, "Bash", "ls", "other", None)
    assert not matches(by_source, "Bash", "ls", None, None)
    session = new_rule("Bash(ls)", scope="session", session="s1")
    assert matches(session, "Bash", "ls", None, "s1")
    assert not matches(session, "Bash", "ls", None, "s2")


# ---------------------------------------------------------------------- the provider


def request_for(*summaries: str, tool: str = "Bash") -> AskUserQuestionRequest:
    return AskUserQuestionRequest(
        [permission_question(tool, s, id=f"q{n}") for n, s in enumerate(summaries)]
    )


def answered(*pairs: tuple[str, str]) -> AskUserQuestionAnswer:
    return AskUserQuestionAnswer([AskUserQuestionAnswerItem(qid, (label,)) for qid, label in pairs])


async def ask_through(
    provider: PolicyProvider, request: AskUserQuestionRequest
) -> tuple[AskUserQuestionAnswer, list[Decision]]:
    with provide(provider), collect_decisions() as notes:
        answer = await ask(request)
    return answer, notes


async def test_an_allow_rule_answers_before_the_human_sees_the_question() -> None:
    human = ScriptedProvider({"q0": "Deny"})
    rule = new_rule("Bash(npm test:*)")
    provider = PolicyProvider(human, MemoryRuleStore([rule]))
    answer, notes = await ask_through(provider, request_for("npm test --bail"))
    assert answer == answered(("q0", "Allow"))
    assert human.requests == []
    assert notes == [Decision("policy", rule=rule.id)]


async def test_deny_wins_over_allow_whatever_the_order() -> None:
    human = ScriptedProvider()
    allow, deny = new_rule("Bash"), new_rule("Bash(git push:*)", "deny")
    for rules in ([allow, deny], [deny, allow]):
        provider = PolicyProvider(human, MemoryRuleStore(rules))
        answer, notes = await ask_through(provider, request_for("git push --force"))
        assert answer == answered(("q0", "Deny"))
        assert notes == [Decision("policy", rule=deny.id)]
    answer, _ = await ask_through(provider, request_for("git status"))
    assert answer == answered(("q0", "Allow"))
    assert human.requests == []


async def test_an_undecided_question_sends_the_whole_request_to_the_human() -> None:
    human = ScriptedProvider({"q0": "Deny", "q1": "Allow"})
    provider = PolicyProvider(human, MemoryRuleStore([new_rule("Bash(ls)")]))
    request = request_for("ls", "rm x")
    answer, notes = await ask_through(provider, request)
    assert answer == answered(("q0", "Deny"), ("q1", "Allow"))
    assert human.requests == [request]
    assert notes == []
    # a request with a question that is no permission is never decided by a rule
    mixed = AskUserQuestionRequest(
        [permission_question("Bash", "ls", id="q0"), AskUserQuestionItem("why", "Why?")]
    )
    await ask_through(provider, mixed)
    assert human.requests[-1] == mixed


async def test_allow_always_makes_a_rule_that_answers_the_next_ask() -> None:
    human = ScriptedProvider({"q0": "Always allow"})
    store = MemoryRuleStore()
    provider = PolicyProvider(human, store, source="agent-1", answerer="alice")
    first, notes = await ask_through(provider, request_for("npm test *"))
    assert first == answered(("q0", "Always allow"))
    assert notes == []
    (rule,) = await store.rules()
    assert (rule.effect, rule.spec, rule.source, rule.scope, rule.created_by) == (
        "allow",
        r"Bash(npm test \*)",
        "agent-1",
        "persisted",
        "alice",
    )
    second, notes = await ask_through(provider, request_for("npm test *"))
    assert second == answered(("q0", "Allow"))
    assert notes == [Decision("policy", rule=rule.id)]
    assert len(human.requests) == 1
    # exactly that input: another one still reaches the human
    await ask_through(provider, request_for("npm test x"))
    assert len(human.requests) == 2


async def test_an_edit_or_a_plain_allow_makes_no_rule() -> None:
    for script in ("npm test --bail", "Allow", "Deny", None):
        store = MemoryRuleStore()
        provider = PolicyProvider(ScriptedProvider({"q0": script}), store)
        await ask_through(provider, request_for("npm test"))
        assert await store.rules() == ()


async def test_a_once_rule_answers_one_ask_and_is_gone() -> None:
    human = ScriptedProvider({"q0": "Deny"})
    once = new_rule("Bash(deploy)", scope="once")
    store = MemoryRuleStore([once])
    provider = PolicyProvider(human, store)
    answer, _ = await ask_through(provider, request_for("deploy"))
    assert answer == answered(("q0", "Allow"))
    assert await store.rules() == ()
    answer, _ = await ask_through(provider, request_for("deploy"))
    assert answer == answered(("q0", "Deny"))


async def test_the_requests_provenance_names_its_source() -> None:
    human = ScriptedProvider({"q0": "Always allow"})
    store = MemoryRuleStore([new_rule("Bash(ls)", source="ci-bot")])
    provider = PolicyProvider(human, store, source="host-default")

    def from_source(source: str | None, summary: str = "ls") -> AskUserQuestionRequest:
        return AskUserQuestionRequest(
            request_for(summary).questions,
            provenance=None if source is None else Provenance(source=source),
        )

    answer, _ = await ask_through(provider, from_source("ci-bot"))
    assert answer == answered(("q0", "Allow"))
    assert human.requests == []
    await ask_through(provider, from_source(None))  # the provider's own source: no match
    assert len(human.requests) == 1
    await ask_through(provider, from_source("other", "make"))  # always: a rule for "other"
    rule = next(r for r in await store.rules() if r.spec == "Bash(make)")
    assert rule.source == "other"
    assert (await provider.decide("Bash", "make", "other")) == rule
    assert await provider.decide("Bash", "make") is None


async def test_session_rules_last_as_long_as_their_session() -> None:
    persisted = MemoryRuleStore()
    provider = PolicyProvider(ScriptedProvider({"q0": "Always allow"}), persisted, always="session")
    await ask_through(provider, request_for("make"))
    assert await persisted.rules() == ()
    (rule,) = await provider.session_rules.rules()
    assert (rule.scope, rule.session) == ("session", provider.session)
    answer, _ = await ask_through(provider, request_for("make"))
    assert answer == answered(("q0", "Allow"))
    human = ScriptedProvider({"q0": "Deny"})
    later = PolicyProvider(human, persisted, session_rules=provider.session_rules)
    answer, _ = await ask_through(later, request_for("make"))
    assert answer == answered(("q0", "Deny"))  # another session: the rule does not apply


async def test_ask_permission_reads_the_verdict() -> None:
    for script, verdict in [
        ("Allow", PermissionVerdict(True, False, None, "Allow")),
        ("Always allow", PermissionVerdict(True, True, None, "Always allow")),
        ("Deny", PermissionVerdict(False, False, None, "Deny")),
        ("ls -la", PermissionVerdict(False, False, "ls -la", None)),
        (None, PermissionVerdict(False)),
    ]:
        with provide(ScriptedProvider({"permission": script})):
            assert await ask_permission("Bash", "ls") == verdict


# ---------------------------------------------------------------------- the JSON file store


async def test_the_json_store_keeps_rules_across_instances_and_refuses_corruption(
    tmp_path: Path,
) -> None:
    path = tmp_path / "rules.json"
    store = JsonFileRuleStore(path)
    assert await store.rules() == ()
    rule = new_rule("Bash(ls)")
    await store.add(rule)
    assert await JsonFileRuleStore(path).rules() == (rule,)
    assert json.loads(path.read_text()) == {"version": 1, "rules": [rule_to_json(rule)]}
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert await store.revoke(rule.id) is True
    assert await store.revoke(rule.id) is False
    assert await store.rules() == ()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", f"is not valid JSON ({NOT_JSON})"),
        ("[]", 'expected {"version": 1, "rules": [...]}'),
        ('{"version": 2, "rules": []}', 'expected {"version": 1, "rules": [...]}'),
        ('{"version": 1, "rules": {}}', 'expected {"version": 1, "rules": [...]}'),
        ('{"version": 1, "rules": [3]}', "rules[0]: expected an object, got int"),
    ],
)
async def test_a_corrupt_file_is_a_clear_error_and_never_an_allow(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "rules.json"
    path.write_text(content)
    human = ScriptedProvider({"q0": "Allow"})
    provider = PolicyProvider(human, JsonFileRuleStore(path))
    with provide(provider), pytest.raises(RuleStoreError) as caught:
        await ask(request_for("ls"))
    assert caught.value.code == RULE_STORE_CORRUPT
    assert caught.value.message == f"rule store {path}: {message}"
    assert human.requests == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"effect": "permit"}, "rules[0].effect: expected allow or deny, got 'permit'"),
        (
            {"scope": "forever"},
            "rules[0].scope: expected once, session or persisted, got 'forever'",
        ),
        ({"tool": "Ba sh"}, f"rules[0]: rule spec 'Ba sh(ls)' {NO_TOOL}"),
        ({"id": "../x"}, "rules[0].id: expected 1-64 letters, digits, - or _"),
        ({"pattern": 3}, "rules[0].pattern: expected a string, got int"),
        ({"extra": 1}, f"rules[0]: expected exactly the keys {KEYS}"),
    ],
)
async def test_each_bad_field_of_a_stored_rule_is_named(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    path = tmp_path / "rules.json"
    data: dict[str, object] = {**rule_to_json(new_rule("Bash(ls)")), **change}
    path.write_text(json.dumps({"version": 1, "rules": [data]}))
    with pytest.raises(RuleStoreError) as caught:
        await JsonFileRuleStore(path).rules()
    assert caught.value.message == f"rule store {path}: {message}"


async def test_a_keyed_store_refuses_a_rule_changed_without_the_key(tmp_path: Path) -> None:
    path = tmp_path / "rules.json"
    key = b"k" * 32
    await JsonFileRuleStore(path, key=key).add(new_rule("Bash(ls)", "deny"))
    document = json.loads(path.read_text())
    document["rules"][0]["effect"] = "allow"
    path.write_text(json.dumps(document))
    with pytest.raises(RuleStoreError) as caught:
        await JsonFileRuleStore(path, key=key).rules()
    assert caught.value.message == (
        f"rule store {path}: rules[0]: fails its MAC: it was changed, or written with another key"
    )
    del document["rules"][0]["mac"]
    path.write_text(json.dumps(document))
    with pytest.raises(RuleStoreError) as caught:
        await JsonFileRuleStore(path, key=key).rules()
    assert caught.value.message == f"rule store {path}: rules[0]: has no MAC (the store has a key)"


KEY = b"k" * 32
SET_MAC = "its rule set fails its MAC: a rule was added, removed or put back without the key"


async def keyed_rules(path: Path) -> tuple[JsonFileRuleStore, dict[str, Rule]]:
    """A keyed file holding ``allow Bash(git:*)``, ``deny Bash(git push:*)``, a once-rule
    ``Bash(deploy)`` and ``allow Bash(rm -rf build)``, added in that order."""
    store = JsonFileRuleStore(path, key=KEY)
    rules = {
        "git": new_rule("Bash(git:*)"),
        "push": new_rule("Bash(git push:*)", "deny"),
        "once": new_rule("Bash(deploy)", scope="once"),
        "rm": new_rule("Bash(rm -rf build)"),
    }
    for rule in rules.values():
        await store.add(rule)
    return store, rules


def entry(path: Path, rule: Rule) -> dict[str, object]:
    (found,) = [item for item in json.loads(path.read_text())["rules"] if item["id"] == rule.id]
    return found  # type: ignore[no-any-return]


def rewrite(path: Path, change: Callable[[list[dict[str, object]]], None]) -> None:
    """Change the file's rules as someone without the key can: the set's serial and MAC
    are left as they were."""
    document = json.loads(path.read_text())
    change(document["rules"])
    path.write_text(json.dumps(document))


async def refused(store: JsonFileRuleStore, summary: str) -> RuleStoreError:
    """The store's error, for a fresh provider (and a fresh store) too; nobody asked."""
    human = ScriptedProvider({"q0": "Allow"})
    for each in (store, JsonFileRuleStore(store.path, key=KEY)):
        with provide(PolicyProvider(human, each)), pytest.raises(RuleStoreError) as caught:
            await ask(request_for(summary))
        assert caught.value.code == RULE_STORE_CORRUPT
    assert human.requests == []
    return caught.value


async def test_a_revoked_rule_written_back_without_the_key_is_corruption(tmp_path: Path) -> None:
    path = tmp_path / "rules.json"
    store, rules = await keyed_rules(path)
    copy = entry(path, rules["rm"])
    assert await store.revoke(rules["rm"].id) is True
    rewrite(path, lambda items: items.append(copy))
    assert (await refused(store, "rm -rf build")).message == f"rule store {path}: {SET_MAC}"


async def test_a_used_once_rule_replayed_without_the_key_is_corruption(tmp_path: Path) -> None:
    path = tmp_path / "rules.json"
    store, rules = await keyed_rules(path)
    copy = entry(path, rules["once"])
    answer, _ = await ask_through(PolicyProvider(ScriptedProvider(), store), request_for("deploy"))
    assert answer == answered(("q0", "Allow"))
    assert rules["once"] not in await store.rules()
    rewrite(path, lambda items: items.append(copy))
    assert (await refused(store, "deploy")).message == f"rule store {path}: {SET_MAC}"


async def test_a_deny_rule_deleted_without_the_key_is_corruption(tmp_path: Path) -> None:
    path = tmp_path / "rules.json"
    store, rules = await keyed_rules(path)
    answer, _ = await ask_through(
        PolicyProvider(ScriptedProvider(), store), request_for("git push --force")
    )
    assert answer == answered(("q0", "Deny"))
    rewrite(path, lambda items: items.remove(entry(path, rules["push"])))
    assert (await refused(store, "git push --force")).message == f"rule store {path}: {SET_MAC}"


async def test_an_entry_added_or_changed_without_the_key_is_corruption(tmp_path: Path) -> None:
    path = tmp_path / "rules.json"
    store, _ = await keyed_rules(path)
    original = path.read_text()
    # a rule the key signed, in another store: valid on its own, not one of this set
    elsewhere = tmp_path / "elsewhere.json"
    await JsonFileRuleStore(elsewhere, key=KEY).add(new_rule("Bash"))
    stranger = json.loads(elsewhere.read_text())["rules"][0]
    rewrite(path, lambda items: items.append(stranger))
    assert (await refused(store, "ls")).message == f"rule store {path}: {SET_MAC}"
    path.write_text(original)
    rewrite(path, lambda items: items[1].update(effect="allow"))
    assert (await refused(store, "git push")).message == (
        f"rule store {path}: rules[1]: fails its MAC: it was changed, or written with another key"
    )


async def test_an_older_copy_of_the_whole_file_is_refused_by_a_store_that_read_a_newer(
    tmp_path: Path,
) -> None:
    path = tmp_path / "rules.json"
    store, rules = await keyed_rules(path)
    older = path.read_text()
    assert json.loads(older)["serial"] == 4
    assert await store.revoke(rules["rm"].id) is True
    path.write_text(older)
    with pytest.raises(RuleStoreError) as caught:
        await store.rules()
    assert (caught.value.code, caught.value.message) == (
        RULE_STORE_CORRUPT,
        f"rule store {path}: went back from serial 5 to 4: an older copy of the whole rule set"
        " was restored",
    )
    # the one thing the key cannot tell: a store that never read the newer set accepts it
    assert rules["rm"] in await JsonFileRuleStore(path, key=KEY).rules()
    path.unlink()  # the oldest copy of all: no rules
    with pytest.raises(RuleStoreError) as caught:
        await store.add(new_rule("Bash(ls)"))
    assert caught.value.message == (
        f"rule store {path}: went back from serial 5 to 0: an older copy of the whole rule set"
        " was restored"
    )


async def test_a_keyed_file_of_the_previous_format_is_refused_until_sealed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "rules.json"
    rule = new_rule("Bash(npm test:*)")
    path.write_text(json.dumps({"version": 1, "rules": [signed(rule, KEY)]}))
    store = JsonFileRuleStore(path, key=KEY)
    message = (
        f"rule store {path}: holds 1 rules but no signed rule set (written before rule sets"
        " were signed, or its signature was removed): review them and run"
        " `interaction rules seal`"
    )
    for attempt in (store.rules(), store.add(new_rule("Bash(ls)")), store.revoke(rule.id)):
        with pytest.raises(RuleStoreError) as caught:
            await attempt
        assert (caught.value.code, caught.value.message) == (RULE_STORE_CORRUPT, message)
    assert await store.seal() == (rule,)
    assert await JsonFileRuleStore(path, key=KEY).rules() == (rule,)
    assert json.loads(path.read_text())["serial"] == 1
    # an empty file of the previous format holds nothing to vouch for
    path.write_text('{"version": 1, "rules": []}')
    assert await JsonFileRuleStore(path, key=KEY).rules() == ()
    # a rule that fails its own MAC is never sealed
    path.write_text(json.dumps({"version": 1, "rules": [{**signed(rule, KEY), "effect": "deny"}]}))
    with pytest.raises(RuleStoreError) as caught:
        await JsonFileRuleStore(path, key=KEY).seal()
    assert caught.value.message == (
        f"rule store {path}: rules[0]: fails its MAC: it was changed, or written with another key"
    )
    with pytest.raises(UserInteractionError) as unkeyed:
        await JsonFileRuleStore(path).seal()
    assert (unkeyed.value.code, unkeyed.value.message) == (
        ErrorCode.BAD_REQUEST,
        f"rule store {path}: sealing needs the store's key",
    )


ADDER = textwrap.dedent(
    """
    import asyncio, sys
    from interaction.policies import JsonFileRuleStore, new_rule

    async def main() -> None:
        store = JsonFileRuleStore(sys.argv[1], key=sys.argv[4].encode() or None)
        for n in range(int(sys.argv[3])):
            rule = new_rule(f"Bash({sys.argv[2]}-{n})")
            await store.add(rule)
            if n % 2:
                assert await store.revoke(rule.id)

    asyncio.run(main())
    """
)


async def run_adder(path: Path, name: str, count: int, key: bytes = b"") -> None:
    """Add ``count`` rules from another process, revoking every second one it added."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", ADDER, str(path), name, str(count), key.decode()
    )
    assert await process.wait() == 0


@pytest.mark.parametrize("key", [None, KEY], ids=["unkeyed", "keyed"])
async def test_two_processes_changing_one_file_lose_nothing(
    tmp_path: Path, key: bytes | None
) -> None:
    path = tmp_path / "rules.json"
    await asyncio.gather(run_adder(path, "a", 40, key or b""), run_adder(path, "b", 40, key or b""))
    specs = sorted(rule.spec for rule in await JsonFileRuleStore(path, key=key).rules())
    assert specs == sorted(f"Bash({name}-{n})" for name in "ab" for n in range(0, 40, 2))
    assert [name for name in os.listdir(tmp_path) if name.endswith(".tmp")] == []
    if key is not None:  # every add and revoke bumped the signed serial once
        assert json.loads(path.read_text())["serial"] == 2 * (40 + 20)


async def test_a_rule_added_by_another_process_answers_here(tmp_path: Path) -> None:
    path = tmp_path / "rules.json"
    human = ScriptedProvider({"q0": "Deny"})
    provider = PolicyProvider(human, JsonFileRuleStore(path))
    answer, _ = await ask_through(provider, request_for("x-0"))
    assert answer == answered(("q0", "Deny"))
    await run_adder(path, "x", 1)
    answer, _ = await ask_through(provider, request_for("x-0"))
    assert answer == answered(("q0", "Allow"))
    assert len(human.requests) == 1


# ---------------------------------------------------------------------- timeouts


async def test_nobody_answering_is_denied_and_recorded_as_a_timeout() -> None:
    human = BlockingProvider()
    provider = PolicyProvider(human, MemoryRuleStore(), timeout=TimeoutPolicy(0.01))
    answer, notes = await ask_through(provider, request_for("ls"))
    assert answer == answered(("q0", "Deny"))
    assert notes == [Decision("timeout")]
    assert (human.cleaned_up, human.pending) == (1, 0)


async def test_a_timeout_never_allows_unless_it_says_so() -> None:
    provider = PolicyProvider(BlockingProvider(), MemoryRuleStore())
    with timeout_for(TimeoutPolicy(0.01, choose="Allow")):
        answer, _ = await ask_through(provider, request_for("ls"))
    assert answer == answered(("q0", "Deny"))
    with timeout_for(TimeoutPolicy(0.01, choose="Always allow")):
        answer, _ = await ask_through(provider, request_for("ls"))
    assert answer == answered(("q0", "Deny"))
    with timeout_for(TimeoutPolicy(0.01, choose="Allow", allow=True)):
        answer, _ = await ask_through(provider, request_for("ls"))
    assert answer == answered(("q0", "Allow"))


async def test_a_timeout_answers_its_one_ask_and_makes_no_rule_for_anyone(
    tmp_path: Path,
) -> None:
    store = JsonFileRuleStore(tmp_path / "rules.json")
    human = BlockingProvider()
    policy = PolicyProvider(
        human,
        store,
        answerer="alice",
        timeout=TimeoutPolicy(0.01, choose="Always allow", allow=True),
    )
    log = tmp_path / "audit.jsonl"
    with provide(AuditProvider(policy, JsonlAuditLog(log), answerer="alice")):
        answer = await ask(request_for("deploy"))
    assert await store.rules() == ()
    assert not (tmp_path / "rules.json").exists()
    assert answer == answered(("q0", "Allow"))  # allowed this once, not always
    (record,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert (record["outcome"], record["decidedBy"], record["answerer"], record["rule"]) == (
        "timeout",
        "timeout",
        None,
        None,
    )
    assert record["answer"] == [{"id": "q0", "selected": ["Allow"]}]
    assert (human.cleaned_up, human.pending) == (1, 0)
    # without allow=True, choosing "Always allow" on a timeout still denies
    with timeout_for(TimeoutPolicy(0.01, choose="Always allow")):
        answer, notes = await ask_through(policy, request_for("deploy"))
    assert (answer, notes) == (answered(("q0", "Deny")), [Decision("timeout")])
    assert await store.rules() == ()


async def test_a_timeout_chooses_a_named_option_of_any_question() -> None:
    question = AskUserQuestionItem(
        "pkg", "Which?", options=[AskUserQuestionOption("npm"), AskUserQuestionOption("skip it")]
    )
    provider = PolicyProvider(
        BlockingProvider(), MemoryRuleStore(), timeout=TimeoutPolicy(0.01, "skip it")
    )
    answer, notes = await ask_through(provider, AskUserQuestionRequest([question]))
    assert answer == answered(("pkg", "skip it"))
    assert notes == [Decision("timeout")]
    free = AskUserQuestionRequest([AskUserQuestionItem("why", "Why?")])
    with provide(provider), pytest.raises(UserInteractionError) as caught:
        await ask(free)
    assert (caught.value.code, caught.value.message) == (
        ErrorCode.ASK_TIMEOUT,
        "ask_user_question timed out before the user answered",
    )


async def test_a_request_may_keep_waiting_past_the_rule_sets_timeout() -> None:
    human = BlockingProvider()
    provider = PolicyProvider(human, MemoryRuleStore(), timeout=TimeoutPolicy(0.01))
    with provide(provider), timeout_for(TimeoutPolicy(None)):
        task = asyncio.create_task(ask(request_for("ls")))
        await human.wait_until_pending(1)
        await asyncio.sleep(0.05)  # past the rule set's timeout: still waiting
        assert not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert human.pending == 0


def test_a_bad_timeout_is_refused() -> None:
    for seconds in (0, -1, float("nan"), float("inf"), "5"):
        with pytest.raises(UserInteractionError) as caught:
            TimeoutPolicy(seconds)  # type: ignore[arg-type]
        assert caught.value.message == f"a timeout is a positive number of seconds, got {seconds!r}"


def test_rules_are_frozen_values() -> None:
    rule = Rule("r1", "allow", "Bash", "ls")
    assert rule.spec == "Bash(ls)"
    assert Rule("r1", "deny", "Bash").spec == "Bash"


SPECS = [spec for spec, *_ in MATCHING] + ["Bash(npm :*)", "Bash(npm  test:*)", "*(npm:*)"]
SUMMARIES = [summary for _, _, _, summary, _ in MATCHING] + ["npm  test", "npm ", "npm"]


@given(
    st.lists(st.tuples(st.sampled_from(SPECS), st.sampled_from(["allow", "deny"])), max_size=8),
    st.sampled_from(["Bash", "Read", "bash"]),
    st.one_of(st.sampled_from(SUMMARIES), st.text(alphabet="npm tes*/;a ", max_size=12)),
)
def test_the_index_decides_as_checking_every_rule_would(
    specs: list[tuple[str, str]], tool: str, summary: str
) -> None:
    rules = [new_rule(spec, effect) for spec, effect in specs]  # type: ignore[arg-type]
    found = [rule for rule in rules if matches(rule, tool, summary, None, None)]
    expected = "deny" if any(r.effect == "deny" for r in found) else "allow" if found else None
    provider = PolicyProvider(ScriptedProvider(), MemoryRuleStore(rules))
    decided = asyncio.run(provider.decide(tool, summary))
    assert (decided.effect if decided else None) == expected
    assert decided is None or decided in found
