"""Named web users: each person has a token of their own, and the audit records who
answered or dismissed a question from the page; ``interaction serve --user``, ``--rules``
and ``--audit`` through the command in a subprocess."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    UserInteractionError,
    ask,
    permission_question,
    provide,
)
from interaction.audit import AuditProvider, JsonlAuditLog, read_jsonl, verify
from interaction.policies import JsonFileRuleStore, new_rule
from interaction.relay import Relay
from interaction.web import WebServer

from .loopback import serve
from .web_helpers import sse

ALICE = "alice-token-0123456789"
BOB = "bob-token-abcdefghijkl"
LOCAL = "the-servers-own-user"
WAIT = 60
REQUEST = AskUserQuestionRequest([permission_question("Bash", "rm -rf build/", id="bash")])
ALLOW = {"answers": [{"id": "bash", "selected": ["Allow"]}]}


def outcomes(path: Path) -> list[tuple[Any, ...]]:
    records = [json.loads(line) for _, line in read_jsonl(path)]
    assert verify(read_jsonl(path))[0] == []
    return [(r["outcome"], r["decidedBy"], r["answerer"]) for r in records]


@asynccontextmanager
async def audited_page(
    path: Path, **options: Any
) -> AsyncIterator[tuple[Relay, WebServer, JsonlAuditLog]]:
    relay = Relay()
    log = JsonlAuditLog(path)
    with provide(AuditProvider(relay, log, answerer=LOCAL)):
        async with WebServer(relay, **options) as server:
            try:
                yield relay, server, log
            finally:
                relay.close()
                log.close()


async def asked(relay: Relay) -> tuple[asyncio.Task[AskUserQuestionAnswer], str]:
    """An ask in a task of its own, and the id of its question once it is pending."""
    subscription = relay.subscribe()
    task = asyncio.create_task(ask(REQUEST))
    async with asyncio.timeout(WAIT):
        async for event in subscription:
            if event.kind == "requested":
                subscription.close()
                return task, event.id
    raise AssertionError("the question never came")


def as_user(server: WebServer, token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=server.base, headers={"Authorization": f"Bearer {token}"}, timeout=WAIT
    )


# ---------------------------------------------------------------------- the Python API


async def test_each_users_token_opens_the_api_and_no_other_token_does(tmp_path: Path) -> None:
    async with audited_page(tmp_path / "a.jsonl", users={"alice": ALICE, "bob": BOB}) as (
        _,
        server,
        _,
    ):
        assert server.user_url("alice") == f"{server.base}/#token={ALICE}"
        assert server.user_url("bob") == f"{server.base}/#token={BOB}"
        with pytest.raises(ValueError, match="this server has no user named 'carol'"):
            server.user_url("carol")
        with pytest.raises(ValueError, match="named users: each has a link, user_url"):
            _ = server.url
        with pytest.raises(ValueError, match="named users: each has a link, user_url"):
            _ = server.token
        for token, status in ((ALICE, 200), (BOB, 200), (ALICE[:-1], 401), (BOB + "x", 401)):
            async with as_user(server, token) as http:
                response = await http.get("/api/questions")
            assert response.status_code == status, token
        async with httpx.AsyncClient(base_url=server.base) as http:
            by_query = await http.get("/api/questions", params={"token": BOB})
            refused = await http.get("/api/questions")
        assert by_query.status_code == 200
        assert refused.json()["error"]["code"] == "UNAUTHORIZED"


async def test_the_audit_names_the_user_who_answered_and_who_dismissed(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    async with audited_page(path, users={"alice": ALICE, "bob": BOB}) as (relay, server, _):
        task, question = await asked(relay)
        async with as_user(server, ALICE) as http:
            response = await http.post(f"/api/questions/{question}/answer", json=ALLOW)
        assert response.status_code == 200
        assert (await task).answers[0].selected == ("Allow",)
        task, question = await asked(relay)
        async with as_user(server, BOB) as http:
            response = await http.post(f"/api/questions/{question}/cancel")
        assert response.status_code == 204
        with pytest.raises(UserInteractionError) as caught:
            await task
        assert caught.value.code == "ASK_CANCELLED"
        assert relay.pending() == []
    assert outcomes(path) == [("answered", "human", "alice"), ("cancelled", "human", "bob")]


async def test_with_one_token_the_audit_keeps_its_own_answerer(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    async with audited_page(path) as (relay, server, _):
        task, question = await asked(relay)
        async with as_user(server, server.token) as http:
            response = await http.post(f"/api/questions/{question}/answer", json=ALLOW)
        assert response.status_code == 200
        await task
    assert outcomes(path) == [("answered", "human", LOCAL)]


async def test_a_rule_added_by_a_named_user_is_credited_to_them(tmp_path: Path) -> None:
    store = JsonFileRuleStore(tmp_path / "rules.json")
    async with audited_page(tmp_path / "a.jsonl", users={"alice": ALICE}, rules=store) as (
        _,
        server,
        _,
    ):
        async with as_user(server, ALICE) as http:
            response = await http.post("/api/rules", json={"spec": "Bash(npm test:*)"})
        assert response.status_code == 201
        assert response.json()["createdBy"] == "web:alice"
    assert [rule.created_by for rule in await store.rules()] == ["web:alice"]


@pytest.mark.parametrize(
    ("users", "message"),
    [
        ({}, "users names no user"),
        ({"": ALICE}, "user name '' is not 1-64 letters, digits or ._@-"),
        ({"al ice": ALICE}, "user name 'al ice' is not 1-64 letters"),
        ({"-alice": ALICE}, "user name '-alice' is not 1-64 letters"),
        ({"a" * 65: ALICE}, "is not 1-64 letters"),
        ({"al\x1bice": ALICE}, "user name 'al\\x1bice' is not"),
        ({"alice": "short-token"}, "the token of user alice is shorter than 16 characters"),
        ({"alice": ALICE + "#x"}, "the token of user alice has characters other than"),
        ({"alice": ALICE, "bob": ALICE}, "the token of user bob is another user's too"),
    ],
)
def test_bad_users_are_refused_with_a_message_that_shows_no_token(
    users: dict[str, str], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        WebServer(Relay(), users=users)
    for token in users.values():
        assert token not in str(caught.value)


def test_named_users_and_one_token_do_not_mix() -> None:
    with pytest.raises(ValueError, match="give named users or one token, not both"):
        WebServer(Relay(), token=ALICE, users={"bob": BOB})


# --------------------------------------------------------------------------- the command


def serving(
    *args: str, env: dict[str, str]
) -> AbstractAsyncContextManager[asyncio.subprocess.Process]:
    """``interaction serve`` with ``env``: the test stops it with Ctrl-C; on a failure,
    SIGTERM by its PID."""
    pipe = subprocess.PIPE
    return serve(
        *args,
        stdout=pipe,
        stderr=pipe,
        env={**os.environ, **env},
        number=signal.SIGTERM,
        seconds=WAIT,
    )


async def line(stream: asyncio.StreamReader | None) -> str:
    assert stream is not None
    async with asyncio.timeout(WAIT):
        return (await stream.readline()).decode()


async def first_question(http: httpx.AsyncClient) -> dict[str, Any]:
    """The first question pending on the page, from its event stream (no polling)."""
    async with http.stream("GET", "/api/events") as response:
        async for event in sse(response.aiter_lines()):
            questions: list[dict[str, Any]] = []
            if event.kind == "snapshot":
                assert isinstance(event.data, dict)
                questions = event.data["questions"]
            elif event.kind == "requested":
                assert isinstance(event.data, dict)
                questions = [event.data]
            if questions:
                return questions[0]
    raise AssertionError("the stream ended before a question came")


async def test_serve_users_rules_and_audit_from_the_command(tmp_path: Path) -> None:
    rules, audit = tmp_path / "rules.json", tmp_path / "audit.jsonl"
    kept = new_rule("Bash(ls:*)", "allow", created_by="cli")
    await JsonFileRuleStore(rules).add(kept)
    options = ["--user", "alice=ALICE_TOKEN", "--user", "bob", "--rules", str(rules)]
    async with serving(*options, "--audit", str(audit), env={"ALICE_TOKEN": ALICE}) as child:
        alice_line, bob_line = await line(child.stderr), await line(child.stderr)
        base = alice_line.removeprefix("interaction: alice answers at ").split("/#")[0]
        assert alice_line == f"interaction: alice answers at {base}/#token=$ALICE_TOKEN\n"
        assert bob_line.startswith(f"interaction: bob answers at {base}/#token=")
        bob = bob_line.strip().rsplit("#token=", 1)[1]
        alice_http = httpx.AsyncClient(
            base_url=base, headers={"Authorization": f"Bearer {ALICE}"}, timeout=WAIT
        )
        bob_http = httpx.AsyncClient(
            base_url=base, headers={"Authorization": f"Bearer {bob}"}, timeout=WAIT
        )
        async with alice_http, bob_http:
            listed = (await alice_http.get("/api/rules")).json()["rules"]
            assert [rule["id"] for rule in listed] == [kept.id]
            added = await bob_http.post("/api/rules", json={"spec": "Bash(npm test:*)"})
            assert added.status_code == 201
            revoked = await alice_http.post(f"/api/rules/{kept.id}/revoke")
            assert revoked.status_code == 204
            batch = await first_question(alice_http)
            answer = {
                "answers": [{"id": q["id"], "selected": []} for q in batch["request"]["questions"]]
            }
            answered = await alice_http.post(f"/api/questions/{batch['id']}/answer", json=answer)
            assert answered.status_code == 200, answered.text
            assert json.loads(await line(child.stdout)) == answer  # the demo printed it
            plan = await first_question(bob_http)
            assert plan["id"] != batch["id"]
            dismissed = await bob_http.post(f"/api/questions/{plan['id']}/cancel")
            assert dismissed.status_code == 204
            assert "(ASK_CANCELLED)" in await line(child.stderr)
            again = await first_question(alice_http)  # the demo asks again: Ctrl-C aborts it
            assert again["id"] not in {batch["id"], plan["id"]}
        child.send_signal(signal.SIGINT)
        async with asyncio.timeout(WAIT):
            out, err = await child.communicate()
        assert child.returncode == 0, err
    assert ALICE.encode() not in out + err
    assert [(r.spec, r.created_by) for r in await JsonFileRuleStore(rules).rules()] == [
        ("Bash(npm test:*)", "web:bob")
    ]
    assert outcomes(audit) == [
        ("answered", "human", "alice"),
        ("cancelled", "human", "bob"),
        ("aborted", None, None),
    ]
    assert {json.loads(raw)["source"] for _, raw in read_jsonl(audit)} == {"serve"}


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--user", "al ice"], {}, "--user: user name 'al ice' is not 1-64 letters"),
        (["--user", "alice=NO_SUCH_TOKEN_VARIABLE"], {}, "$NO_SUCH_TOKEN_VARIABLE is not set"),
        (["--user", "alice=1BAD"], {}, "after = comes the name of the environment variable"),
        (["--user", "alice=SHORT"], {"SHORT": "abc"}, "the token of user alice is shorter"),
        (["--user", "alice", "--user", "alice"], {}, "--user: each user is named once"),
        (
            ["--audit", "a.jsonl", "--redis", "redis://127.0.0.1:1/0"],
            {},
            "--audit records the demo's asks; with --redis or --postgres each asker",
        ),
    ],
)
def test_serve_refuses_bad_users_and_audit_with_one_line(
    args: list[str], env: dict[str, str], message: str
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "interaction", "serve", "--port", "0", *args],
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
        env={**os.environ, **env},
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("interaction: ")
    assert message in result.stderr
    assert "abc" not in result.stderr
