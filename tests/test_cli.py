"""The `interaction ask` and `interaction schema` commands, through real pipes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from interaction import PermissionIntent, wire
from interaction.tool import tool_parameters

from .loopback import popen

ROOT = Path(__file__).parent.parent
PERMISSION_EXAMPLE = "docs/examples/permission-request.json"  # as the docs spell it

REQUEST = {
    "questions": [
        {"id": "pkg", "question": "Which?", "options": [{"label": "pnpm"}, {"label": "npm"}]},
        {"id": "notes", "question": "Notes?"},
    ]
}


def run(*args: str, typed: str = "", cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "interaction", *args],
        input=typed,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )


def test_ask_a_file_prints_the_answer_json(tmp_path: Path) -> None:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(REQUEST))
    result = run("ask", str(path), typed="2\nhello\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        '{"answers":[{"id":"pkg","selected":["npm"]},{"id":"notes","selected":[],"custom":"hello"}]}\n'
    )


def test_ask_cancelled_exits_1(tmp_path: Path) -> None:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(REQUEST))
    result = run("ask", str(path), typed="")
    assert result.returncode == 1
    assert result.stdout == ""
    assert "(ASK_CANCELLED)" in result.stderr


def test_ask_timeout_exits_1(tmp_path: Path) -> None:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(REQUEST))
    argv = [sys.executable, "-m", "interaction", "ask", str(path), "--timeout", "0.2"]
    pipe = subprocess.PIPE
    with popen(argv, stdin=pipe, stdout=pipe, stderr=pipe) as process:
        assert process.wait(timeout=60) == 1  # stdin stays open: only the timeout ends the ask
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        process.stdin.close()
        out, err = process.stdout.read(), process.stderr.read()
    assert out == ""
    assert err.endswith(
        "interaction: ask_user_question timed out before the user answered (ASK_TIMEOUT)\n"
    )


def test_bad_input_exits_2_with_the_message_on_stderr(tmp_path: Path) -> None:
    path = tmp_path / "request.json"
    path.write_text('{"questions": [{"id": 1}]}')
    result = run("ask", str(path))
    assert result.returncode == 2
    assert result.stderr == (
        "interaction: questions[0].id: expected a string, got number (BAD_REQUEST)\n"
    )
    empty = tmp_path / "empty.json"
    empty.write_text('{"questions": []}')
    assert run("ask", str(empty)).returncode == 2
    missing = run("ask", str(tmp_path / "missing.json"))
    assert missing.returncode == 2
    assert "cannot read" in missing.stderr


def test_a_request_on_stdin_without_a_terminal_is_refused() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "interaction", "ask", "-"],
        input=json.dumps(REQUEST),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        start_new_session=True,  # no controlling terminal
    )
    assert result.returncode == 2
    assert "there is no terminal to answer on" in result.stderr


def test_schema_prints_each_schema() -> None:
    for which, expected in (
        ("request", wire.REQUEST_SCHEMA),
        ("answer", wire.ANSWER_SCHEMA),
        ("tool", tool_parameters()),
    ):
        result = run("schema", which)
        assert result.returncode == 0
        printed = json.loads(result.stdout)
        assert printed == expected
        jsonschema.Draft202012Validator.check_schema(printed)


def test_serve_refuses_a_port_out_of_range_a_port_in_use_and_an_unknown_host() -> None:
    for port in ("70000", "-1"):
        result = run("serve", "--port", port)
        assert (result.returncode, result.stdout) == (2, "")
        assert result.stderr == f"interaction: --port {port} is out of range: use 0-65535\n"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run("serve", "--port", str(port))
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        f"interaction: cannot serve on 127.0.0.1:{port}: the port is in use"
        " (pass another --port, or --port 0 to pick a free one)\n"
    )
    result = run("serve", "--host", "no-such-host.invalid", "--port", "0")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith(
        "interaction: cannot serve on no-such-host.invalid:0: unknown host ("
    )
    assert result.stderr.count("\n") == 1


def test_schema_without_an_argument_names_its_choices() -> None:
    result = run("schema")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "interaction: name the schema to print: request, answer, tool"
        " (as in: interaction schema request)\n"
    )


@pytest.mark.parametrize("command", ["demo", "ask", "serve", "schema"])
def test_each_command_help_has_a_description_examples_and_the_exit_codes(command: str) -> None:
    result = run(command, "--help")
    assert result.returncode == 0
    assert f"usage: interaction {command}" in result.stdout
    assert f"examples:\n  interaction {command}" in result.stdout
    assert "\nexit status:\n  0  " in result.stdout  # each its own: test_cli_newcomer.py
    description = result.stdout.split("\n\n")[1]
    assert len(description) > 40
    assert all(len(line) <= 78 for line in description.split("\n"))


# What a user typed may hold C1 controls and bidirectional overrides; on stdout they stand
# as \uXXXX escapes (the same JSON value), so the answer cannot steer the terminal it meets.
TYPED = "bun \x9b31m \u202eevil\u202c \x7f é ✓"
SHOWN = "bun \\u009b31m \\u202eevil\\u202c \\u007f é ✓"


def test_ask_prints_unsafe_characters_of_an_answer_as_escapes(tmp_path: Path) -> None:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(REQUEST))
    result = run("ask", str(path), typed=f"{TYPED}\n\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        '{"answers":[{"id":"pkg","selected":[],"custom":"' + SHOWN + '"},'
        '{"id":"notes","selected":[]}]}\n'
    )
    assert json.loads(result.stdout)["answers"][0]["custom"] == TYPED


def test_the_demo_prints_unsafe_characters_of_an_answer_as_escapes() -> None:
    result = run("demo", "--plain", typed=f"{TYPED}\n\n\n\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith('{"answers":[{"id":"pkg","selected":[],"custom":"' + SHOWN)
    assert json.loads(result.stdout)["answers"][0]["custom"] == TYPED


def test_the_permission_example_fits_the_request_schema_and_the_docs_show_it_as_it_is() -> None:
    text = (ROOT / PERMISSION_EXAMPLE).read_text("utf-8")
    schema = json.loads(run("schema", "request").stdout)
    jsonschema.Draft202012Validator(schema).validate(json.loads(text))
    (question,) = wire.decode_request(text).questions
    assert isinstance(question.intent, PermissionIntent)
    assert (question.intent.tool, question.intent.summary) == ("Bash", "npm test")
    policies = (ROOT / "docs" / "policies.md").read_text("utf-8")
    assert f"```json\n{text}```" in policies
    for page in ("policies.md", "cli.md"):
        assert f"interaction ask {PERMISSION_EXAMPLE} --rules" in (ROOT / "docs" / page).read_text()


def test_asking_the_permission_example_with_rules_as_the_docs_show(tmp_path: Path) -> None:
    rules = str(tmp_path / "rules.json")
    ask = ("ask", PERMISSION_EXAMPLE, "--rules", rules, "--plain")

    def answered(result: subprocess.CompletedProcess[str]) -> tuple[int, str]:
        return result.returncode, json.loads(result.stdout)["answers"][0]["selected"][0]

    always = run(*ask, typed="2\n", cwd=ROOT)  # the person picks "Always allow"
    assert answered(always) == (0, "Always allow")
    listed = json.loads(run("rules", "list", "--store", rules, "--json").stdout)
    assert (listed["effect"], listed["tool"], listed["pattern"], listed["source"]) == (
        "allow",
        "Bash",
        "npm test",
        "build-bot",  # the example's provenance
    )
    again = run(*ask, cwd=ROOT)  # nothing typed: the rule answers, the terminal is not shown
    assert (answered(again), again.stderr) == ((0, "Allow"), "")
    elsewhere = run(*ask, "--source", "other-bot", cwd=ROOT)  # the rule is build-bot's only
    assert elsewhere.returncode == 1
    assert elsewhere.stderr.endswith("(ASK_CANCELLED)\n")
    assert run("rules", "add", "Bash(npm test:*)", "--deny", "--store", rules).returncode == 0
    denied = run(*ask, cwd=ROOT)
    assert (answered(denied), denied.stderr) == ((0, "Deny"), "")  # deny wins
