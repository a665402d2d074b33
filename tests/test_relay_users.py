"""Named users on every host, through the command in real processes: two pages serve one
Redis (or Postgres) store, each with ``--user alice=VARIABLE``; ``interaction ask --audit``
asks in a third process. Alice answers (or dismisses) on host B: the asker's audit record
and host A's event stream name her; an answer given by nobody named names nobody (never
the asker's OS user)."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from interaction import AskUserQuestionAnswer, AskUserQuestionAnswerItem
from interaction.audit import read_jsonl, verify
from interaction.postgres import PostgresRelay
from interaction.redis import RedisRelay

from .loopback import stop_async
from .postgres_server import PostgresServer, postgres_server
from .redis_server import RedisServer, redis_server
from .web_helpers import Sse, sse

__all__ = ["postgres_server", "redis_server"]  # fixtures, used through getfixturevalue

WAIT = 60
ALICE = "alice-token-0123456789"
QUESTION = {"questions": [{"id": "go", "question": "Deploy?"}]}
YES = {"answers": [{"id": "go", "selected": [], "custom": "yes"}]}


class Store:
    """The flags that name one fresh space (Redis prefix, Postgres schema) of a store."""

    def __init__(self, kind: str, request: pytest.FixtureRequest) -> None:
        self.kind = kind
        self.space = f"u{secrets.token_hex(6)}"
        if kind == "redis":
            server: RedisServer = request.getfixturevalue("redis_server")
            self.url = server.url
            self.flags = ["--redis", server.url, "--prefix", self.space]
        else:
            database: PostgresServer = request.getfixturevalue("postgres_server")
            self.url = database.url
            self.flags = ["--postgres", database.url, "--schema", self.space]

    def relay(self) -> RedisRelay | PostgresRelay:
        if self.kind == "redis":
            return RedisRelay(self.url, prefix=self.space)
        return PostgresRelay(self.url, schema=self.space)


@pytest.fixture(params=["redis", "postgres"])
def store(request: pytest.FixtureRequest) -> Store:
    return Store(request.param, request)


@asynccontextmanager
async def command(*argv: str) -> AsyncIterator[asyncio.subprocess.Process]:
    """``interaction ARGV...`` in a process of its own, stopped by its PID at the end."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "interaction",
        *argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "ALICE_T": ALICE},
    )
    try:
        yield child
    finally:
        await stop_async(child, WAIT)


async def page_of(host: asyncio.subprocess.Process) -> httpx.AsyncClient:
    """Alice's client of a host's page, from the link the host prints for her."""
    assert host.stderr is not None
    async with asyncio.timeout(WAIT):
        line = (await host.stderr.readline()).decode()
    assert line.startswith("interaction: alice answers at "), line
    assert line.endswith("/#token=$ALICE_T\n"), line  # the token itself is never printed
    base = line.removeprefix("interaction: alice answers at ").split("/#")[0]
    headers = {"Authorization": f"Bearer {ALICE}"}
    return httpx.AsyncClient(base_url=base, headers=headers, timeout=WAIT)


async def next_of(events: AsyncIterator[Sse], kind: str) -> dict[str, Any]:
    async with asyncio.timeout(WAIT):
        async for event in events:
            if event.kind == kind:
                assert isinstance(event.data, dict)
                return event.data
    raise AssertionError(f"the stream ended before a {kind} event")


async def finished(asker: asyncio.subprocess.Process) -> tuple[int, str, str]:
    async with asyncio.timeout(WAIT):
        out, err = await asker.communicate()
    assert asker.returncode is not None
    return asker.returncode, out.decode(), err.decode()


async def test_alice_answers_on_host_b_and_the_asker_on_host_a_names_her(
    store: Store, tmp_path: Path
) -> None:
    question, audit = tmp_path / "q.json", tmp_path / "audit.jsonl"
    question.write_text(json.dumps(QUESTION))
    asking = ["ask", str(question), *store.flags, "--audit", str(audit)]
    serving = ["serve", *store.flags, "--port", "0", "--user", "alice=ALICE_T"]
    if store.kind == "postgres":
        serving.append("--migrate")  # (idempotent: each host may make the tables)
    relay = store.relay()  # an answer from here is given by nobody named
    try:
        async with (
            command(*serving) as host_a,
            command(*serving) as host_b,
            await page_of(host_a) as page_a,
            await page_of(host_b) as page_b,
            page_a.stream("GET", "/api/events") as stream,
        ):
            seen = sse(stream.aiter_lines())
            assert (await next_of(seen, "snapshot"))["questions"] == []

            async with command(*asking) as asker:
                asked = (await next_of(seen, "requested"))["id"]
                posted = await page_b.post(f"/api/questions/{asked}/answer", json=YES)
                assert posted.status_code == 200, posted.text
                resolved = await next_of(seen, "resolved")
                code, out, err = await finished(asker)
            assert resolved == {"id": asked, "outcome": "answered", "answerer": "alice"}
            assert (code, json.loads(out)) == (0, YES), err

            async with command(*asking) as asker:
                asked = (await next_of(seen, "requested"))["id"]
                posted = await page_b.post(f"/api/questions/{asked}/cancel")
                assert posted.status_code == 204, posted.text
                resolved = await next_of(seen, "resolved")
                code, _, err = await finished(asker)
            assert resolved == {"id": asked, "outcome": "cancelled", "answerer": "alice"}
            assert code != 0
            assert "(ASK_CANCELLED)" in err

            async with command(*asking) as asker:
                asked = (await next_of(seen, "requested"))["id"]
                yes = AskUserQuestionAnswer([AskUserQuestionAnswerItem("go", custom="yes")])
                await relay.submit(asked, yes)
                resolved = await next_of(seen, "resolved")
                code, out, err = await finished(asker)
            assert resolved == {"id": asked, "outcome": "answered"}
            assert (code, json.loads(out)) == (0, YES), err
    finally:
        await relay.aclose()
    assert verify(read_jsonl(audit))[0] == []
    records = [json.loads(line) for _, line in read_jsonl(audit)]
    assert [(r["outcome"], r["decidedBy"], r["answerer"]) for r in records] == [
        ("answered", "human", "alice"),
        ("cancelled", "human", "alice"),
        ("answered", "human", None),
    ]
