"""The audit trail: a record per outcome, the hash chain and --verify, the JSONL file."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from interaction import (
    AbortController,
    AbortSignal,
    AskUserQuestionRequest,
    ErrorCode,
    Provenance,
    UserInteractionError,
    ask,
    cancelled_error,
    permission_question,
    provide,
)
from interaction.audit import (
    AUDIT_FAILED,
    GENESIS,
    AuditLogError,
    AuditProvider,
    JsonlAuditLog,
    Problem,
    canonical,
    read_jsonl,
    verify,
)
from interaction.policies import MemoryRuleStore, PolicyProvider, TimeoutPolicy, new_rule
from interaction.testing import BlockingProvider, ScriptedProvider

REQUEST = AskUserQuestionRequest([permission_question("Bash", "rm -rf build/", id="q0")])


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for _, line in read_jsonl(path)]


def audited(inner: Any, path: Path, **options: Any) -> AuditProvider:
    return AuditProvider(inner, JsonlAuditLog(path), host="box", source="agent", **options)


async def test_a_human_answer_is_recorded_with_who_and_when(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with provide(audited(ScriptedProvider({"q0": "Allow"}), path, answerer="joe")):
        await ask(REQUEST)
    (record,) = records(path)
    assert record["asked" + "At"] <= record["at"]
    assert record["seconds"] >= 0
    volatile = {"at", "askedAt", "seconds", "digest"}
    assert {k: v for k, v in record.items() if k not in volatile} == {
        "v": 1,
        "seq": 1,
        "prev": GENESIS,
        "source": "agent",
        "host": "box",
        "session": None,
        "tool": "Bash",
        "provenance": None,
        "questions": [
            {
                "id": "q0",
                "question": "Allow Bash to run with this input?",
                "detail": "rm -rf build/",
                "options": [{"label": "Allow"}, {"label": "Always allow"}, {"label": "Deny"}],
                "intent": {
                    "kind": "permission",
                    "tool": "Bash",
                    "summary": "rm -rf build/",
                    "allow": "Allow",
                    "allowAlways": "Always allow",
                    "deny": "Deny",
                },
            }
        ],
        "outcome": "answered",
        "answer": [{"id": "q0", "selected": ["Allow"]}],
        "error": None,
        "decidedBy": "human",
        "answerer": "joe",
        "rule": None,
    }


async def test_the_requests_provenance_says_where_it_came_from(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    asked = datetime(2026, 12, 5, 8, 0, 0, 123000, tzinfo=UTC)
    provenance = Provenance("mcp-server", "ci-7", "run-42", "deploy", asked)
    request = AskUserQuestionRequest(REQUEST.questions, provenance=provenance)
    with provide(audited(ScriptedProvider({"q0": "Deny"}), path)):
        await ask(request)
    (record,) = records(path)
    assert (record["source"], record["host"], record["session"], record["tool"]) == (
        "mcp-server",
        "ci-7",
        "run-42",
        "deploy",
    )
    assert record["provenance"] == {
        "source": "mcp-server",
        "host": "ci-7",
        "session": "run-42",
        "tool": "deploy",
        "askedAt": "2026-12-05T08:00:00.123Z",
    }


async def test_a_policy_answer_names_its_rule(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    rule = new_rule("Bash(rm:*)", "deny")
    human = ScriptedProvider()
    with provide(audited(PolicyProvider(human, MemoryRuleStore([rule])), path, answerer="joe")):
        await ask(REQUEST)
    (record,) = records(path)
    assert (record["outcome"], record["decidedBy"], record["answerer"], record["rule"]) == (
        "answered",
        "policy",
        None,
        rule.id,
    )
    assert record["answer"] == [{"id": "q0", "selected": ["Deny"]}]
    assert human.requests == []


async def test_a_timeout_policy_answer_is_recorded_as_a_timeout(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    policy = PolicyProvider(BlockingProvider(), MemoryRuleStore(), timeout=TimeoutPolicy(0.01))
    with provide(audited(policy, path)):
        await ask(REQUEST)
    (record,) = records(path)
    assert (record["outcome"], record["decidedBy"], record["answer"]) == (
        "timeout",
        "timeout",
        [{"id": "q0", "selected": ["Deny"]}],
    )


async def test_cancel_abort_and_timeout_are_recorded_with_no_answer(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with (
        provide(audited(ScriptedProvider(cancelled_error()), path)),
        pytest.raises(UserInteractionError),
    ):
        await ask(REQUEST)
    blocking = BlockingProvider()
    controller = AbortController()
    with provide(audited(blocking, path)):
        task = asyncio.create_task(
            ask(AskUserQuestionRequest(REQUEST.questions, signal=controller.signal))
        )
        await blocking.wait_until_pending(1)
        controller.abort()
        with pytest.raises(UserInteractionError) as aborted:
            await task
        timed = AskUserQuestionRequest(REQUEST.questions, signal=AbortSignal.timeout(0.01))
        with pytest.raises(UserInteractionError) as timed_out:
            await ask(timed)
    with (
        provide(audited(ScriptedProvider(RuntimeError("boom")), path)),
        pytest.raises(UserInteractionError),
    ):
        await ask(REQUEST)
    assert aborted.value.code == ErrorCode.ASK_ABORTED
    assert timed_out.value.code == ErrorCode.ASK_TIMEOUT
    got = [(r["outcome"], r["answer"], r["error"], r["decidedBy"]) for r in records(path)]
    assert got == [
        (
            "cancelled",
            None,
            {
                "code": "ASK_CANCELLED",
                "message": "the user dismissed ask_user_question without answering",
            },
            None,
        ),
        ("aborted", None, None, None),
        ("timeout", None, None, None),
        ("failed", None, {"code": "PROVIDER_FAILED", "message": "RuntimeError"}, None),
    ]
    assert [r["seq"] for r in records(path)] == [1, 2, 3, 4]
    assert verify(read_jsonl(path))[:2] == ([], 4)
    assert blocking.pending == 0


async def test_a_bad_answer_is_recorded_as_failed(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with (
        provide(audited(ScriptedProvider({"q0": ["Allow", "Deny"]}), path)),
        pytest.raises(UserInteractionError) as caught,
    ):
        await ask(REQUEST)
    assert caught.value.code == ErrorCode.BAD_ANSWER
    (record,) = records(path)
    assert (record["outcome"], record["error"]["code"]) == ("failed", "BAD_ANSWER")


# ---------------------------------------------------------------------- the chain


async def write_log(path: Path, count: int, key: bytes | None = None) -> None:
    log = JsonlAuditLog(path, key=key)
    for n in range(count):
        await log.append({"n": n})
    log.close()


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


async def test_an_untouched_chain_verifies(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    await write_log(path, 5)
    problems, count, head = verify(read_jsonl(path))
    assert (problems, count) == ([], 5)
    assert head == records(path)[-1]["digest"]


@pytest.mark.parametrize(
    ("tamper", "expected"),
    [
        (
            "remove",
            [Problem("{path}:3", "record 4 follows record 2: records are missing or out of order")],
        ),
        (
            "reorder",
            [
                Problem(
                    "{path}:3", "record 4 follows record 2: records are missing or out of order"
                ),
                Problem(
                    "{path}:4", "record 3 follows record 4: records are missing or out of order"
                ),
                Problem(
                    "{path}:5", "record 5 follows record 3: records are missing or out of order"
                ),
            ],
        ),
        ("edit", [Problem("{path}:3", "record 3 was changed: its digest does not match")]),
        (
            "edit and rehash",
            [Problem("{path}:4", "record 4 does not follow record 3")],
        ),
        (
            "remove the first",
            [Problem("{path}:1", "record 2 follows nothing: the chain does not start at 1")],
        ),
    ],
)
async def test_verify_finds_each_kind_of_tampering(
    tmp_path: Path, tamper: str, expected: list[Problem]
) -> None:
    path = tmp_path / "audit.jsonl"
    await write_log(path, 5)
    lines = lines_of(path)
    if tamper == "remove":
        del lines[2]
    elif tamper == "reorder":
        lines[2], lines[3] = lines[3], lines[2]
    elif tamper == "remove the first":
        del lines[0]
    else:
        record = json.loads(lines[2])
        record["n"] = 99
        if tamper == "edit and rehash":
            del record["digest"]
            record["digest"] = hashlib.sha256(canonical(record)).hexdigest()
        lines[2] = json.dumps(record).encode() + b"\n"
    path.write_bytes(b"".join(lines))
    problems, _, _ = verify(read_jsonl(path))
    assert problems == [Problem(p.where.format(path=path), p.message) for p in expected]


async def test_a_keyed_chain_shows_an_edit_of_its_last_record(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    key = b"k" * 32
    await write_log(path, 3, key)
    assert verify(read_jsonl(path), key=key)[0] == []
    lines = lines_of(path)
    record = json.loads(lines[-1])
    record["n"] = 7
    del record["digest"]
    record["digest"] = hashlib.sha256(canonical(record)).hexdigest()  # without the key
    lines[-1] = json.dumps(record).encode() + b"\n"
    path.write_bytes(b"".join(lines))
    assert verify(read_jsonl(path), key=key)[0] == [
        Problem(f"{path}:3", "record 3 was changed: its digest does not match")
    ]


async def test_rotation_keeps_the_chain_across_files(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = JsonlAuditLog(path, max_bytes=1024, backups=3)
    for n in range(40):
        await log.append({"n": n, "pad": "x" * 100})
    log.close()
    names = sorted(name for name in os.listdir(tmp_path) if not name.endswith(".lock"))
    assert names == ["audit.jsonl", "audit.jsonl.1", "audit.jsonl.2", "audit.jsonl.3"]
    assert all(os.stat(tmp_path / name).st_size <= 1024 for name in names)
    problems, count, _ = verify(read_jsonl(path), whole=False)
    assert problems == []
    seqs = [r["seq"] for r in records(path)]
    assert seqs == list(range(41 - count, 41))


async def test_a_partial_last_line_stops_the_writer_with_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    await write_log(path, 1)
    path.write_bytes(path.read_bytes() + b'{"half')
    with pytest.raises(AuditLogError) as caught:
        await JsonlAuditLog(path).append({"n": 1})
    assert (caught.value.code, caught.value.message) == (
        AUDIT_FAILED,
        f"audit log {path}: ends with a partial record (run: interaction log --verify)",
    )
    with provide(audited(ScriptedProvider({"q0": "Allow"}), path)), pytest.raises(AuditLogError):
        await ask(REQUEST)


WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from interaction.audit import JsonlAuditLog

    async def main() -> None:
        log = JsonlAuditLog(sys.argv[1], max_bytes=int(sys.argv[4]))
        for n in range(int(sys.argv[3])):
            await log.append({"writer": sys.argv[2], "n": n, "pad": "y" * 200})

    asyncio.run(main())
    """
)


async def run_writer(path: Path, name: str, count: int, max_bytes: int) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", WRITER, str(path), name, str(count), str(max_bytes)
    )
    assert await process.wait() == 0


@pytest.mark.parametrize("max_bytes", [10 * 1024 * 1024, 64 * 1024])
async def test_two_processes_appending_lose_and_interleave_nothing(
    tmp_path: Path, max_bytes: int
) -> None:
    path = tmp_path / "audit.jsonl"
    await asyncio.gather(
        run_writer(path, "a", 150, max_bytes), run_writer(path, "b", 150, max_bytes)
    )
    log = [json.loads(line) for _, line in read_jsonl(path)]
    assert sorted((r["writer"], r["n"]) for r in log) == sorted(
        (w, n) for w in "ab" for n in range(150)
    )
    for writer in "ab":  # each writer's records in its own order
        mine = [r["n"] for r in log if r["writer"] == writer]
        assert mine == sorted(mine)
    assert [r["seq"] for r in log] == list(range(1, 301))
    assert verify(read_jsonl(path))[:2] == ([], 300)


async def test_a_durable_log_fsyncs_before_append_returns_and_flush_waits(tmp_path: Path) -> None:
    for durable in (True, False):
        path = tmp_path / f"{durable}.jsonl"
        log = JsonlAuditLog(path, durable=durable)
        for n in range(5):
            await log.append({"n": n})
        await log.flush()
        assert verify(read_jsonl(path))[:2] == ([], 5)
        log.close()
