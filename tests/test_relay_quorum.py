"""Assignment and quorum across hosts, in real processes: two ``interaction serve`` pages
(``--redis`` or ``--postgres``) with a team (``--group ops=alice,bob,carol``, dave outside
it) serve one store; the asker asks from this process through its own relay, inside an
audit. Alice and bob approve on different hosts at the same moment, a hundred times over:
each question settles exactly once, with both approvals counted and audited; one decline
settles at once; dave is refused on every host and from Python."""

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

from interaction import (
    NOT_ASSIGNED,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionRequest,
    Assignment,
    Team,
    UserInteractionError,
    ask,
    permission_question,
    provide,
)
from interaction.audit import AuditProvider, JsonlAuditLog, read_jsonl, verify
from interaction.postgres_relay import PostgresRelay
from interaction.redis_relay import RedisRelay

from .loopback import stop_async
from .postgres_server import PostgresServer, postgres_server
from .redis_server import RedisServer, redis_server
from .web_helpers import Sse, sse

__all__ = ["postgres_server", "redis_server"]  # fixtures, used through getfixturevalue

WAIT = 60
RACES = 100
NAMES = ("alice", "bob", "carol", "dave")
TOKENS = {name: f"{name}-token-{secrets.token_hex(8)}" for name in NAMES}
TEAM = Team(list(NAMES), {"ops": ["alice", "bob", "carol"]})
DEPLOY = permission_question("Bash", "make deploy", id="deploy")
QUORUM = AskUserQuestionRequest([DEPLOY], assignment=Assignment(["ops"], 2))
ALLOW = {"answers": [{"id": "deploy", "selected": ["Allow"]}]}
DENY = {"answers": [{"id": "deploy", "selected": ["Deny"]}]}


class Store:
    """One fresh space (Redis prefix, Postgres schema) of a store, and its flags."""

    def __init__(self, kind: str, request: pytest.FixtureRequest) -> None:
        self.kind = kind
        self.space = f"t{secrets.token_hex(6)}"
        if kind == "redis":
            server: RedisServer = request.getfixturevalue("redis_server")
            self.url = server.url
            self.flags = ["--redis", server.url, "--prefix", self.space]
        else:
            database: PostgresServer = request.getfixturevalue("postgres_server")
            self.url = database.url
            self.flags = ["--postgres", database.url, "--schema", self.space, "--migrate"]

    def relay(self, team: Team | None = None) -> RedisRelay | PostgresRelay:
        if self.kind == "redis":
            return RedisRelay(self.url, prefix=self.space, team=team)
        return PostgresRelay(self.url, schema=self.space, team=team)


@pytest.fixture(params=["redis", "postgres"])
def store(request: pytest.FixtureRequest) -> Store:
    return Store(request.param, request)


@asynccontextmanager
async def host(store: Store) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    """A page serving the store for the team, in a process of its own; each user's client
    of it, from the links it prints (tokens from the environment, never printed)."""
    users = [f"--user={name}={name.upper()}_T" for name in NAMES]
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "interaction",
        "serve",
        *store.flags,
        "--port",
        "0",
        *users,
        "--group",
        "ops=alice,bob,carol",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **{f"{n.upper()}_T": t for n, t in TOKENS.items()}},
    )
    try:
        assert child.stderr is not None
        clients: dict[str, httpx.AsyncClient] = {}
        async with asyncio.timeout(WAIT):
            for _ in NAMES:
                line = (await child.stderr.readline()).decode()
                name, _, rest = line.removeprefix("interaction: ").partition(" answers at ")
                assert name in NAMES, line
                headers = {"Authorization": f"Bearer {TOKENS[name]}"}
                base = rest.split("/#")[0]
                clients[name] = httpx.AsyncClient(base_url=base, headers=headers, timeout=WAIT)
        try:
            yield clients
        finally:
            for client in clients.values():
                await client.aclose()
    finally:
        await stop_async(child, WAIT)


async def next_of(events: AsyncIterator[Sse], kind: str, skipped: list[Sse]) -> dict[str, Any]:
    """The next event of ``kind``; the others read on the way are added to ``skipped``."""
    async with asyncio.timeout(WAIT):
        async for event in events:
            if event.kind == kind:
                assert isinstance(event.data, dict)
                return event.data
            skipped.append(event)
    raise AssertionError(f"the stream ended before a {kind} event")


def records(path: Path) -> list[dict[str, Any]]:
    assert verify(read_jsonl(path))[0] == []
    return [json.loads(line) for _, line in read_jsonl(path)]


async def test_two_approvers_racing_on_two_hosts_settle_each_question_once(
    store: Store, tmp_path: Path
) -> None:
    asker = store.relay()
    log = JsonlAuditLog(tmp_path / "audit.jsonl")
    answers: list[AskUserQuestionAnswer] = []
    statuses: list[tuple[int, int]] = []
    skipped: list[Sse] = []
    try:
        async with (
            host(store) as a,
            host(store) as b,
            a["alice"].stream("GET", "/api/events") as stream,
        ):
            seen = sse(stream.aiter_lines())
            await next_of(seen, "snapshot", skipped)
            with provide(AuditProvider(asker, log)):
                for _ in range(RACES):
                    task = asyncio.create_task(ask(QUORUM))
                    asked = (await next_of(seen, "requested", skipped))["id"]
                    path = f"/api/questions/{asked}/answer"
                    first, second = await asyncio.gather(
                        a["alice"].post(path, json=ALLOW), b["bob"].post(path, json=ALLOW)
                    )
                    statuses.append((first.status_code, second.status_code))
                    answers.append(await asyncio.wait_for(task, WAIT))
                    resolved = await next_of(seen, "resolved", skipped)
                    assert resolved["id"] == asked
                    assert resolved["outcome"] == "answered"
                    assert resolved["answerer"] in ("alice", "bob")
    finally:
        await asker.aclose()
        log.close()
    assert all(set(pair) <= {200, 202} for pair in statuses), statuses
    assert (
        answers == [AskUserQuestionAnswer([AskUserQuestionAnswerItem("deploy", ["Allow"])])] * RACES
    )
    # Between one question's resolved event and the next one's requested, nothing settled:
    # only approved events were passed over, never a second resolved.
    assert {event.kind for event in skipped} <= {"approved"}
    audited = records(tmp_path / "audit.jsonl")
    assert len(audited) == RACES
    for record in audited:
        assert record["assignment"] == {"to": ["ops"], "quorum": 2}
        assert sorted(a["user"] for a in record["approvals"]) == ["alice", "bob"]
        assert record["answerer"] == record["approvals"][-1]["user"]
        assert (record["outcome"], record["decidedBy"]) == ("answered", "human")


async def test_a_decline_on_host_b_settles_at_once_and_dave_is_refused_everywhere(
    store: Store, tmp_path: Path
) -> None:
    asker, python = store.relay(), store.relay(TEAM)
    log = JsonlAuditLog(tmp_path / "audit.jsonl")
    skipped: list[Sse] = []
    try:
        async with (
            host(store) as a,
            host(store) as b,
            b["carol"].stream("GET", "/api/events") as stream,
        ):
            seen = sse(stream.aiter_lines())
            await next_of(seen, "snapshot", skipped)
            with provide(AuditProvider(asker, log)):
                task = asyncio.create_task(ask(QUORUM))
                asked = (await next_of(seen, "requested", skipped))["id"]
                for page in (a["dave"], b["dave"]):
                    for action, body in (("answer", ALLOW), ("cancel", None)):
                        refused = await page.post(f"/api/questions/{asked}/{action}", json=body)
                        assert refused.status_code == 403
                        assert refused.json()["error"]["code"] == NOT_ASSIGNED
                for call in (
                    python.submit(asked, _answer("Allow"), answerer="dave"),
                    python.dismiss(asked, answerer="dave"),
                    python.submit(asked, _answer("Allow")),
                ):
                    with pytest.raises(UserInteractionError) as info:
                        await call
                    assert info.value.code == NOT_ASSIGNED
                dave_view = (await a["dave"].get("/api/questions")).json()["questions"]
                assert dave_view == []  # assigned to ops: dave's page does not show it
                approved = await a["alice"].post(f"/api/questions/{asked}/answer", json=ALLOW)
                assert approved.status_code == 202, approved.text
                shown = await next_of(seen, "approved", skipped)
                assert [x["user"] for x in shown["approvals"]] == ["alice"]
                listed = (await b["carol"].get("/api/questions")).json()["questions"]
                assert [x["user"] for x in listed[0]["approvals"]] == ["alice"]
                declined = await b["bob"].post(f"/api/questions/{asked}/answer", json=DENY)
                assert declined.status_code == 200, declined.text
                assert await asyncio.wait_for(task, WAIT) == _answer("Deny")
                resolved = await next_of(seen, "resolved", skipped)
                assert resolved == {"id": asked, "outcome": "answered", "answerer": "bob"}
    finally:
        await asker.aclose()
        await python.aclose()
        log.close()
    (record,) = records(tmp_path / "audit.jsonl")
    assert [x["user"] for x in record["approvals"]] == ["alice"]
    assert (record["answerer"], record["answer"]) == ("bob", DENY["answers"])


def _answer(label: str) -> AskUserQuestionAnswer:
    return AskUserQuestionAnswer([AskUserQuestionAnswerItem("deploy", [label])])
