"""The audit log contract: the same tests over every AuditLog (a JSONL file, a Redis
Stream, PostgreSQL), through ``append`` and the log's lines, as docs/audit.md states it.

A new log joins by adding its name to ``LOGS``, a way to build it and read its lines in
``Logs``, and one in ``APPENDER`` (for other processes).
"""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from interaction import AskUserQuestionItem, AskUserQuestionRequest, ask, provide
from interaction.audit import (
    AUDIT_FAILED,
    GENESIS,
    AuditLog,
    AuditLogError,
    AuditProvider,
    JsonlAuditLog,
    read_jsonl,
    verify,
)
from interaction.postgres import PostgresAuditLog
from interaction.redis import RedisAuditLog
from interaction.testing import ScriptedProvider

from .postgres_server import postgres_server
from .redis_server import redis_server
from .store_contract import Place

__all__ = ["postgres_server", "redis_server"]  # fixtures, used through Logs

LOGS = ["jsonl", "redis", "postgres"]
KEY = b"an-audit-key-of-32-bytes--------"


class Logs(Place):
    """Builds logs of one kind on one place (or a fresh file), reads their lines back."""

    def __init__(self, kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
        super().__init__(kind, request)
        self.path = tmp_path / "audit.jsonl"
        self.files: list[JsonlAuditLog] = []

    async def make(self, key: bytes | None = None) -> AuditLog:
        """Another log on the same storage (as another process would open it)."""
        if self.kind == "jsonl":
            log = JsonlAuditLog(self.path, key=key, durable=True)
            self.files.append(log)
            return log
        if self.kind == "redis":
            return await self.keep(RedisAuditLog(self.url, prefix=self.space, key=key))
        return await self.keep(PostgresAuditLog(self.url, schema=self.space, key=key))

    def unreachable(self) -> AuditLog:
        if self.kind == "jsonl":
            return JsonlAuditLog(Path(__file__) / "not-a-folder" / "audit.jsonl")
        if self.kind == "redis":
            return RedisAuditLog(self.unreachable_url())
        return PostgresAuditLog(self.unreachable_url())

    async def lines(self) -> list[tuple[str, bytes]]:
        """Every record's line, oldest first, with where it is."""
        if self.kind == "jsonl":
            return list(read_jsonl(self.path))
        reader = await self.make()
        assert isinstance(reader, RedisAuditLog | PostgresAuditLog)
        return await reader.read_all(batch=7)

    def spec(self, **more: str) -> str:
        return super().spec(path=str(self.path), **more)

    async def close(self) -> None:
        for log in self.files:
            log.close()
        await super().close()


@pytest.fixture(params=LOGS)
async def logs(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Logs]:
    made = Logs(request.param, request, tmp_path)
    yield made
    await made.close()


def records(lines: list[tuple[str, bytes]]) -> list[dict[str, object]]:
    return [json.loads(line) for _, line in lines]


@pytest.mark.parametrize("key", [None, KEY])
async def test_appended_records_form_one_chain_read_back_as_returned(
    logs: Logs, key: bytes | None
) -> None:
    log = await logs.make(key)
    returned = [await log.append({"n": n, "text": "ünïcode ✓"}) for n in range(5)]
    returned.append(await (await logs.make(key)).append({"n": 5}))  # another host goes on
    lines = await logs.lines()
    assert records(lines) == returned
    assert [r["seq"] for r in returned] == [1, 2, 3, 4, 5, 6]
    assert [r["prev"] for r in returned] == [GENESIS] + [r["digest"] for r in returned[:-1]]
    assert verify(lines, key=key) == ([], 6, returned[-1]["digest"])
    if key is not None:  # each digest is an HMAC: without the key, nothing checks
        problems, count, _ = verify(lines)
        assert (len(problems), count) == (6, 6)


async def test_appends_at_once_in_one_process_keep_one_chain(logs: Logs) -> None:
    hosts = [await logs.make(), await logs.make()]
    await asyncio.gather(*(hosts[n % 2].append({"n": n}) for n in range(30)))
    lines = await logs.lines()
    assert sorted(int(str(r["n"])) for r in records(lines)) == list(range(30))
    assert verify(lines)[:2] == ([], 30)


APPENDER = textwrap.dedent(
    """
    import asyncio, json, sys

    def build(kind, spec):
        if kind == "jsonl":
            from interaction.audit import JsonlAuditLog
            return JsonlAuditLog(spec["path"])
        if kind == "redis":
            from interaction.redis import RedisAuditLog
            return RedisAuditLog(spec["url"], prefix=spec["space"])
        from interaction.postgres import PostgresAuditLog
        return PostgresAuditLog(spec["url"], schema=spec["space"])

    async def main() -> None:
        log = build(sys.argv[1], json.loads(sys.argv[2]))
        for n in range(int(sys.argv[4])):
            await log.append({"host": sys.argv[3], "n": n})
        if hasattr(log, "aclose"):
            await log.aclose()
        else:
            log.close()

    asyncio.run(main())
    """
)


async def test_processes_appending_at_once_keep_one_chain(logs: Logs) -> None:
    await logs.make()  # (and the tables made)

    async def host(name: str) -> None:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", APPENDER, logs.kind, logs.spec(), name, "40"
        )
        assert await process.wait() == 0

    await asyncio.gather(host("a"), host("b"), host("c"))
    lines = await logs.lines()
    found = records(lines)
    assert [r["seq"] for r in found] == list(range(1, 121))
    assert sorted((str(r["host"]), int(str(r["n"]))) for r in found) == sorted(
        (h, n) for h in "abc" for n in range(40)
    )
    assert verify(lines)[:2] == ([], 120)


async def test_a_log_that_cannot_be_written_fails_the_ask_with_audit_failed(logs: Logs) -> None:
    log = logs.unreachable()
    with pytest.raises(AuditLogError) as caught:
        await log.append({"n": 1})
    assert caught.value.code == AUDIT_FAILED
    human = ScriptedProvider({"q": "yes"})
    request = AskUserQuestionRequest([AskUserQuestionItem("q", "Go?")])
    with provide(AuditProvider(human, log)), pytest.raises(AuditLogError) as caught:
        await ask(request)
    assert caught.value.code == AUDIT_FAILED
    assert len(human.requests) == 1  # asked, answered, but the outcome could not be kept
    if isinstance(log, RedisAuditLog | PostgresAuditLog):
        await log.aclose()
