"""`interaction rules` and `interaction log`: tables, JSON, filters, --follow and --verify."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from interaction import (
    AskUserQuestionItem,
    AskUserQuestionRequest,
    ask,
    permission_question,
    provide,
)
from interaction.audit import AuditProvider, JsonlAuditLog
from interaction.cli import main
from interaction.policies import MemoryRuleStore, PolicyProvider, new_rule, signed
from interaction.testing import ScriptedProvider


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_rules_add_list_and_revoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(tmp_path / "rules.json")
    status, allow_id, _ = run(capsys, "rules", "add", "Bash(npm test:*)", "--store", store)
    assert status == 0
    status, deny_id, _ = run(
        capsys, "rules", "add", "Bash(rm:*)", "--deny", "--source", "ci", "--once", "--store", store
    )
    status, out, _ = run(capsys, "rules", "list", "--store", store)
    rows = [line.split() for line in out.splitlines()]
    assert rows[0] == ["ID", "EFFECT", "RULE", "SOURCE", "SCOPE", "CREATED", "BY"]
    assert [row[:5] for row in rows[1:]] == [
        [allow_id.strip(), "allow", "Bash(npm", "test:*)", "*"],
        [deny_id.strip(), "deny", "Bash(rm:*)", "ci", "once"],
    ]
    status, out, _ = run(capsys, "rules", "list", "--json", "--store", store)
    assert [json.loads(line)["pattern"] for line in out.splitlines()] == ["npm test:*", "rm:*"]
    assert run(capsys, "rules", "revoke", allow_id.strip(), "--store", store)[0] == 0
    assert run(capsys, "rules", "revoke", allow_id.strip(), "--store", store) == (
        1,
        "",
        f"interaction: no rule {allow_id.strip()!r}\n",
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ("rules", "add", "Bash(", "--store", "{store}"),
            "rule spec 'Bash(' must end with ) after its pattern",
        ),
        (("rules", "list"), "name the rules: --store PATH, --redis URL, or $INTERACTION_RULES"),
        (
            ("rules", "list", "--redis", "redis://127.0.0.1:1/0"),
            "--redis needs the rules key in $INTERACTION_RULES_KEY",
        ),
        (
            ("log", "--since", "yesterday", "{log}"),
            "--since 'yesterday': use an ISO time or date (2026-12-05T09:00Z) or 30s, 15m, 2h, 7d",
        ),
        (("log", "{store}"), "no audit log at {store}"),
        (("log",), "name the log: PATH, --redis URL, or $INTERACTION_AUDIT"),
    ],
)
def test_bad_input_is_one_line_and_exit_status_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: tuple[str, ...],
    message: str,
) -> None:
    for name in ("INTERACTION_RULES", "INTERACTION_RULES_KEY", "INTERACTION_AUDIT"):
        monkeypatch.delenv(name, raising=False)
    log = tmp_path / "a.jsonl"
    log.write_text("")
    names = {"store": str(tmp_path / "rules.json"), "log": str(log)}
    status, out, err = run(capsys, *(arg.format(**names) for arg in argv))
    assert (status, out, err) == (2, "", f"interaction: {message.format(**names)}\n")


def test_a_corrupt_rules_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "rules.json"
    store.write_text("[]")
    assert run(capsys, "rules", "list", "--store", str(store)) == (
        2,
        "",
        f'interaction: rule store {store}: expected {{"version": 1, "rules": [...]}}\n',
    )


def test_rules_seal_signs_a_keyed_file_of_the_previous_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "rules.json"
    key = "a-test-key-of-32-bytes----------"
    rule = new_rule("Bash(npm test:*)", created_by="joe")
    store.write_text(json.dumps({"version": 1, "rules": [signed(rule, key.encode())]}))
    monkeypatch.delenv("INTERACTION_RULES_KEY", raising=False)
    assert run(capsys, "rules", "seal", "--store", str(store)) == (
        2,
        "",
        f"interaction: rule store {store}: sealing needs the store's key\n",
    )
    monkeypatch.setenv("INTERACTION_RULES_KEY", key)
    assert run(capsys, "rules", "list", "--store", str(store)) == (
        2,
        "",
        f"interaction: rule store {store}: holds 1 rules but no signed rule set (written before"
        " rule sets were signed, or its signature was removed): review them and run"
        " `interaction rules seal`\n",
    )
    status, out, err = run(capsys, "rules", "seal", "--store", str(store))
    assert (status, err) == (0, "")
    assert [line.split()[:3] for line in out.splitlines()] == [
        ["ID", "EFFECT", "RULE"],
        [rule.id, "allow", "Bash(npm"],
    ]
    status, out, _ = run(capsys, "rules", "list", "--json", "--store", str(store))
    assert (status, [json.loads(line)["id"] for line in out.splitlines()]) == (0, [rule.id])


async def fill_log(path: Path) -> str:
    rule = new_rule("Bash(ls)")
    policy = PolicyProvider(
        ScriptedProvider({"q": "Deny", "why": "because"}), MemoryRuleStore([rule])
    )
    for source, request in [
        ("ci", AskUserQuestionRequest([permission_question("Bash", "ls", id="q")])),
        ("dev", AskUserQuestionRequest([permission_question("Bash", "rm -rf /", id="q")])),
        ("dev", AskUserQuestionRequest([AskUserQuestionItem("why", "Why?")])),
    ]:
        with provide(AuditProvider(policy, JsonlAuditLog(path), source=source, answerer="joe")):
            await ask(request)
    return rule.id


async def test_the_log_table_filters_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "a.jsonl"
    rule_id = await fill_log(path)
    status, out, _ = run(capsys, "log", str(path))
    lines = out.splitlines()
    assert lines[0].split() == ["TIME", "SOURCE", "TOOL", "OUTCOME", "BY", "SECS", "QUESTION"]
    assert (
        len(
            {
                line.index("SOURCE") if n == 0 else len(line[: lines[0].index("SOURCE")])
                for n, line in enumerate(lines)
            }
        )
        == 1
    )
    cells = [line[lines[0].index("SOURCE") :].split("  ") for line in lines[1:]]
    got = [[c.strip() for c in row if c.strip()] for row in cells]
    assert [row[:4] for row in got] == [
        ["ci", "Bash", "answered", f"policy:{rule_id}"],
        ["dev", "Bash", "answered", "human:joe"],
        ["dev", "answered", "human:joe", got[2][3]],
    ]
    assert (got[1][-1], got[2][-1]) == ("Bash: rm -rf /", "Why?")
    # a record written by someone else may hold anything: no control sequence gets through
    await JsonlAuditLog(path).append({"source": "x\x1b]0;owned\x07", "outcome": "answered"})
    status, out, _ = run(capsys, "log", str(path))
    assert "x\\x1b]0;owned\\x07" in out.splitlines()[-1]
    assert "\x1b" not in out
    status, out, _ = run(capsys, "log", str(path), "--source", "dev", "--json")
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["seq"] for r in records] == [2, 3]
    status, out, _ = run(capsys, "log", str(path), "--since", "2999-01-01", "--json")
    assert out == ""
    status, out, _ = run(capsys, "log", str(path), "--since", "1h", "--json")
    assert (status, len(out.splitlines())) == (0, 3)  # the record without a time is left out


async def test_verify_passes_then_names_an_edit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "a.jsonl"
    await fill_log(path)
    status, out, _ = run(capsys, "log", str(path), "--verify")
    head = json.loads(path.read_text().splitlines()[-1])["digest"]
    assert (status, out) == (0, f"ok: 3 records, head {head}\n")
    lines = path.read_text().splitlines(keepends=True)
    lines[1] = lines[1].replace('"Deny"', '"Allow"')
    path.write_text("".join(lines))
    assert run(capsys, "log", str(path), "--verify") == (
        1,
        f"{path}:2: record 2 was changed: its digest does not match\n",
        "interaction: the chain is broken (1 problem in 3 records)\n",
    )


async def test_verify_counts_in_words_that_agree_with_the_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "a.jsonl"
    await JsonlAuditLog(path).append({"at": "2026-12-05T08:00:00.000Z", "outcome": "answered"})
    head = json.loads(path.read_text())["digest"]
    assert run(capsys, "log", str(path), "--verify") == (0, f"ok: 1 record, head {head}\n", "")
    await fill_log(path)
    lines = path.read_text().splitlines(keepends=True)
    for index in (1, 2):
        lines[index] = lines[index].replace('"ci"', '"cd"').replace('"dev"', '"ops"')
    path.write_text("".join(lines))
    status, out, err = run(capsys, "log", str(path), "--verify")
    assert (status, len(out.splitlines())) == (1, 2)
    assert err == "interaction: the chain is broken (2 problems in 4 records)\n"


async def test_follow_prints_records_as_they_come(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    log = JsonlAuditLog(path)
    await log.append({"at": "2026-12-05T08:00:00.000Z", "source": "first", "outcome": "answered"})
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "interaction", "log", str(path), "--follow",
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        header = await asyncio.wait_for(process.stdout.readline(), 30)
        assert header.split() == [
            b"TIME",
            b"SOURCE",
            b"TOOL",
            b"OUTCOME",
            b"BY",
            b"SECS",
            b"QUESTION",
        ]
        first = await asyncio.wait_for(process.stdout.readline(), 30)
        assert b"first" in first
        await log.append(
            {"at": "2026-12-05T08:00:01.000Z", "source": "second", "outcome": "cancelled"}
        )
        second = await asyncio.wait_for(process.stdout.readline(), 30)
        assert second.split()[2:4] == [b"second", b"cancelled"]
    finally:
        process.terminate()
        await process.wait()
        log.close()


def test_ask_with_rules_answers_without_reading_the_terminal(tmp_path: Path) -> None:
    request = tmp_path / "req.json"
    question = permission_question("Bash", "npm test", id="q")
    from interaction.wire import dumps

    request.write_text(dumps(AskUserQuestionRequest([question])))
    rules = tmp_path / "rules.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "interaction",
            "rules",
            "add",
            "Bash(npm test)",
            "--store",
            str(rules),
        ],
        check=True,
        capture_output=True,
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "interaction",
            "ask",
            str(request),
            "--rules",
            str(rules),
            "--plain",
        ],
        input="",
        capture_output=True,
        text=True,
        check=False,
    )
    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        '{"answers":[{"id":"q","selected":["Allow"]}]}\n',
        "",
    )
