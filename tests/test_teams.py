"""Groups, assignment and quorum in one process: the Team directory's refusals, what
``ask()`` refuses in an assignment, the in-memory relay's enforcement and counting (from
Python), the page's view, 403 and partial approvals, the audit's fields, the wire's round
trip, and ``interaction serve`` / ``ask`` refusing a bad team or assignment at start."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from interaction import (
    BAD_TEAM,
    NOT_ASSIGNED,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    Assignment,
    ErrorCode,
    PlanReviewIntent,
    Team,
    UserInteractionError,
    ask,
    check_request,
    may_answer,
    permission_question,
    provide,
)
from interaction.audit import AuditProvider, JsonlAuditLog, read_jsonl
from interaction.integrations import AssignByTool
from interaction.integrations._common import approval_item, ask_approval, ask_approvals
from interaction.policies import JsonFileRuleStore
from interaction.relay import Relay, RelayEvent
from interaction.web import WebServer
from interaction.web._app import WebApp
from interaction.wire import REQUEST_SCHEMA, decode_request, encode_request

from .relay_helpers import take
from .web_helpers import sse

WAIT = 30
TEAM = Team(
    ["alice", "bob", "carol", "dave", "erin"],
    {"ops": ["alice", "bob", "carol"]},
    see_all=["erin"],
)
TOKENS = {name: f"{name}-token-0123456789ab" for name in TEAM.users}
DEPLOY = permission_question("Bash", "make deploy", id="deploy")


def deploy(*to: str, quorum: int | None = None) -> AskUserQuestionRequest:
    return AskUserQuestionRequest([DEPLOY], assignment=Assignment(list(to), quorum))


def chose(label: str) -> AskUserQuestionAnswer:
    return AskUserQuestionAnswer([AskUserQuestionAnswerItem("deploy", [label])])


ALLOW, DENY = chose("Allow"), chose("Deny")


def refusal(call: Any, *args: Any, **kwargs: Any) -> tuple[str, str]:
    with pytest.raises(UserInteractionError) as info:
        call(*args, **kwargs)
    return info.value.code, info.value.message


# ---------------------------------------------------------------------- the directory


@pytest.mark.parametrize(
    ("users", "groups", "see_all", "message"),
    [
        (["alice"], {"ops": []}, [], "team: group ops has no members"),
        (["alice"], {"ops": ["alice", "bob"]}, [], "team: group ops: bob is not a user"),
        (["alice", "alice"], {}, [], "team: users: alice is named twice"),
        (["alice"], {"ops": ["alice", "alice"]}, [], "team: group ops: alice is named twice"),
        (["alice"], {"alice": ["alice"]}, [], "team: group alice is named like a user"),
        (["alice"], {}, ["bob"], "team: see_all: bob is not a user"),
        (
            ["al ice"],
            {},
            [],
            "team: users: name 'al ice' is not 1-64 letters, digits or ._@- (starting with a"
            " letter or digit)",
        ),
        (["alice"], {}, "alice", "team: see_all: expected a sequence of names, got str"),
    ],
)
def test_a_team_that_cannot_be_used_is_bad_team_naming_the_fault(
    users: Any, groups: Any, see_all: Any, message: str
) -> None:
    assert refusal(Team, users, groups, see_all) == (BAD_TEAM, message)


def test_a_team_resolves_groups_and_users_and_nothing_else() -> None:
    assert TEAM.people(["ops", "dave", "nobody"]) == {"alice", "bob", "carol", "dave"}
    assert TEAM.groups["ops"] == ("alice", "bob", "carol")
    assert may_answer(TEAM, "bob", deploy("ops"))
    assert not may_answer(TEAM, "dave", deploy("ops"))
    assert not may_answer(TEAM, None, deploy("ops"))  # an assigned question needs a name
    assert may_answer(TEAM, None, AskUserQuestionRequest([DEPLOY]))  # unassigned: anyone
    assert may_answer(None, "ops", deploy("ops"))  # no team: each name is a user's
    assert not may_answer(None, "alice", deploy("ops"))


# ---------------------------------------------------------------------- ask()'s checks


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (deploy(), "assignment.to: names nobody (name at least one user or group)"),
        (deploy("ops", "ops"), "assignment.to[1]: ops is named twice"),
        (
            deploy("o ps"),
            "assignment.to[0]: 'o ps' is not 1-64 letters, digits or ._@-"
            " (starting with a letter or digit)",
        ),
        (deploy("ops", quorum=0), "assignment.quorum: must be at least 1, got 0"),
        (
            AskUserQuestionRequest([DEPLOY], assignment=Assignment(["ops"], True)),
            "assignment.quorum: expected a whole number, got bool",
        ),
        (
            AskUserQuestionRequest(
                [AskUserQuestionItem("q", "Why?")], assignment=Assignment(["ops"], 2)
            ),
            "assignment.quorum: applies to one permission or plan-review question only",
        ),
        (
            AskUserQuestionRequest(
                [DEPLOY, permission_question("Bash", "ls", id="ls")],
                assignment=Assignment(["ops"], 2),
            ),
            "assignment.quorum: applies to one permission or plan-review question only",
        ),
    ],
)
def test_ask_refuses_an_assignment_it_can_see_is_wrong(
    request_: AskUserQuestionRequest, message: str
) -> None:
    assert refusal(check_request, request_) == (ErrorCode.BAD_REQUEST, message)


async def test_a_relay_with_a_team_refuses_names_it_does_not_know_and_an_unreachable_quorum() -> (
    None
):
    relay = Relay(team=TEAM)
    with provide(relay):
        for request, message in [
            (deploy("ops", "nobody"), "assignment.to[1]: nobody is no user or group of this team"),
            (
                deploy("ops", quorum=4),
                "assignment.quorum: needs 4 approvers but ops stands for 3 people",
            ),
            (
                deploy("dave", "ops", quorum=5),
                "assignment.quorum: needs 5 approvers but dave, ops stand for 4 people",
            ),
        ]:
            with pytest.raises(UserInteractionError) as info:
                await ask(request)
            assert (info.value.code, info.value.message) == (ErrorCode.BAD_REQUEST, message)
    assert relay.pending() == []


# ---------------------------------------------------------------------- the in-memory relay


async def _asked(relay: Relay, request: AskUserQuestionRequest) -> tuple[asyncio.Task[Any], str]:
    """Start an ask through the relay; its task and its question's id, once it is pending."""
    events = relay.events(relay.position)
    task = asyncio.create_task(ask(request))
    try:
        event = await asyncio.wait_for(anext(events), WAIT)
    finally:
        await events.aclose()
    assert event.kind == "requested"
    return task, event.id


async def test_someone_not_assigned_is_refused_and_the_question_stays_pending() -> None:
    relay = Relay(team=TEAM)
    with provide(relay):
        task, question = await _asked(relay, deploy("ops"))
        for who in ("dave", None):
            assert refusal(relay.answer, question, ALLOW, answerer=who)[0] == NOT_ASSIGNED
            assert refusal(relay.cancel, question, answerer=who)[0] == NOT_ASSIGNED
            with pytest.raises(UserInteractionError) as info:
                await relay.submit(question, ALLOW, answerer=who)
            assert info.value.code == NOT_ASSIGNED
        assert refusal(relay.answer, question, ALLOW, answerer="dave")[1] == (
            f"question {question!r} is assigned to others: 'dave' may not settle it"
        )
        assert [q.id for q in relay.pending()] == [question]
        await relay.dismiss(question, answerer="carol")  # an assignee may dismiss it
        with pytest.raises(UserInteractionError) as cancelled:
            await task
        assert cancelled.value.code == ErrorCode.ASK_CANCELLED


async def test_a_quorum_counts_distinct_assignees_and_settles_at_the_last(tmp_path: Path) -> None:
    relay = Relay(team=TEAM)
    log = JsonlAuditLog(tmp_path / "audit.jsonl")
    events = relay.events(relay.position)
    with provide(AuditProvider(relay, log)):
        task, question = await _asked(relay, deploy("ops", quorum=2))
        relay.answer(question, ALLOW, answerer="alice")
        relay.answer(question, ALLOW, answerer="alice")  # the same person: counted once
        assert refusal(relay.answer, question, ALLOW, answerer="dave")[0] == NOT_ASSIGNED
        (pending,) = relay.pending()
        assert [a.user for a in pending.approvals] == ["alice"]
        assert not task.done()
        relay.answer(question, chose("Always allow"), answerer="bob")  # also an approval
        assert await task == chose("Always allow")
    requested, approved, resolved = await take(events, 3)
    await events.aclose()
    assert (requested.kind, approved.kind, approved.answerer) == ("requested", "approved", "alice")
    assert approved.question is not None
    assert [a.user for a in approved.question.approvals] == ["alice"]
    assert resolved == RelayEvent("resolved", question, outcome="answered", answerer="bob")
    log.close()
    (record,) = [json.loads(line) for _, line in read_jsonl(tmp_path / "audit.jsonl")]
    assert record["assignment"] == {"to": ["ops"], "quorum": 2}
    assert [a["user"] for a in record["approvals"]] == ["alice", "bob"]
    assert all(datetime.fromisoformat(a["at"]).tzinfo for a in record["approvals"])
    assert (record["outcome"], record["answerer"]) == ("answered", "bob")


async def test_one_decline_settles_a_quorum_question_at_once(tmp_path: Path) -> None:
    relay = Relay(team=TEAM)
    log = JsonlAuditLog(tmp_path / "audit.jsonl")
    with provide(AuditProvider(relay, log)):
        task, question = await _asked(relay, deploy("ops", quorum=3))
        relay.answer(question, ALLOW, answerer="alice")
        relay.answer(question, DENY, answerer="carol")
        assert await task == DENY
        assert relay.pending() == []
    log.close()
    (record,) = [json.loads(line) for _, line in read_jsonl(tmp_path / "audit.jsonl")]
    assert [a["user"] for a in record["approvals"]] == ["alice"]
    assert record["answerer"] == "carol"


async def test_a_plan_review_takes_a_quorum_too() -> None:
    item = AskUserQuestionItem(
        "plan",
        "Go ahead with this plan?",
        detail="1. deploy",
        options=[AskUserQuestionOption("Approve"), AskUserQuestionOption("Revise")],
        intent=PlanReviewIntent("Approve"),
    )
    relay = Relay(team=TEAM)
    with provide(relay):
        request = AskUserQuestionRequest([item], assignment=Assignment(["ops"], 2))
        task, question = await _asked(relay, request)
        approve = AskUserQuestionAnswer([AskUserQuestionAnswerItem("plan", ["Approve"])])
        relay.answer(question, approve, answerer="bob")
        edited = AskUserQuestionAnswer([AskUserQuestionAnswerItem("plan", [], "step 1 first")])
        relay.answer(question, approve, answerer="carol")
        assert await task == approve
        task, question = await _asked(relay, request)
        relay.answer(question, edited, answerer="bob")  # text of one's own: not an approval
        assert await task == edited


# ---------------------------------------------------------------------- the page


@asynccontextmanager
async def team_page(**options: Any) -> AsyncIterator[tuple[Relay, WebServer]]:
    relay = Relay(team=TEAM)
    with provide(relay):
        async with WebServer(relay, users=TOKENS, **options) as server:
            try:
                yield relay, server
            finally:
                relay.close()


def page(server: WebServer, user: str) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {TOKENS[user]}"}
    return httpx.AsyncClient(base_url=server.base, headers=headers, timeout=WAIT)


ALLOW_JSON = {"answers": [{"id": "deploy", "selected": ["Allow"]}]}


async def test_each_person_sees_what_is_assigned_to_them_or_nobody_and_erin_sees_all() -> None:
    async with team_page() as (relay, server):
        ops, _ = await _asked(relay, deploy("ops"))
        mine, _ = await _asked(relay, deploy("dave"))
        free, _ = await _asked(relay, AskUserQuestionRequest([DEPLOY]))
        ids = [q.id for q in relay.pending()]
        seen: dict[str, list[str]] = {}
        for user in ("alice", "dave", "erin"):
            async with page(server, user) as client:
                listed = (await client.get("/api/questions")).json()["questions"]
                seen[user] = [q["id"] for q in listed]
                async with client.stream("GET", "/api/events") as stream:
                    async for event in sse(stream.aiter_lines()):
                        assert event.kind == "snapshot"
                        assert isinstance(event.data, dict)
                        assert [q["id"] for q in event.data["questions"]] == seen[user]
                        break
        assert seen == {"alice": [ids[0], ids[2]], "dave": [ids[1], ids[2]], "erin": ids}
        for task in (ops, mine, free):
            task.cancel()


async def test_the_page_refuses_a_claim_by_someone_not_assigned_with_403() -> None:
    async with team_page() as (relay, server):
        task, question = await _asked(relay, deploy("ops"))
        async with page(server, "dave") as dave:
            for path, body in (("answer", ALLOW_JSON), ("cancel", None)):
                refused = await dave.post(f"/api/questions/{question}/{path}", json=body)
                assert refused.status_code == 403
                assert refused.json() == {
                    "error": {
                        "code": "NOT_ASSIGNED",
                        "message": f"question {question!r} is assigned to others:"
                        " 'dave' may not settle it",
                    }
                }
        assert [q.id for q in relay.pending()] == [question]
        async with page(server, "alice") as alice:
            taken = await alice.post(f"/api/questions/{question}/answer", json=ALLOW_JSON)
            assert taken.status_code == 200
        assert await task == ALLOW


async def test_a_default_assignment_takes_the_questions_that_name_nobody() -> None:
    async with team_page(default_assignment=Assignment(["ops"])) as (relay, server):
        task, question = await _asked(relay, AskUserQuestionRequest([DEPLOY]))
        mine, _ = await _asked(relay, deploy("dave"))  # its own assignment still wins
        async with page(server, "dave") as dave:
            listed = (await dave.get("/api/questions")).json()["questions"]
            assert [q["request"]["assignment"]["to"] for q in listed] == [["dave"]]
            for path, body in (("answer", ALLOW_JSON), ("cancel", None)):
                refused = await dave.post(f"/api/questions/{question}/{path}", json=body)
                assert (refused.status_code, refused.json()["error"]["code"]) == (
                    403,
                    "NOT_ASSIGNED",
                )
        async with page(server, "erin") as erin:  # see_all: shown, but not assigned
            listed = (await erin.get("/api/questions")).json()["questions"]
            assert len(listed) == 2
        assert len(relay.pending()) == 2
        async with page(server, "bob") as bob:
            assert (await bob.post(f"/api/questions/{question}/cancel")).status_code == 204
        with pytest.raises(UserInteractionError) as cancelled:
            await task
        assert cancelled.value.code == ErrorCode.ASK_CANCELLED
        mine.cancel()


async def test_the_page_records_an_approval_short_of_the_quorum_and_shows_it_everywhere() -> None:
    async with team_page() as (relay, server):
        async with page(server, "erin") as erin, erin.stream("GET", "/api/events") as stream:
            events = sse(stream.aiter_lines())
            assert (await anext(events)).kind == "snapshot"
            task, question = await _asked(relay, deploy("ops", quorum=2))
            requested = await anext(events)
            assert isinstance(requested.data, dict)
            assert (requested.kind, requested.data["approvals"]) == ("requested", [])
            async with page(server, "alice") as alice:
                first = await alice.post(f"/api/questions/{question}/answer", json=ALLOW_JSON)
            assert first.status_code == 202
            body = first.json()
            assert (body["pending"], body["quorum"]) == (True, 2)
            assert [a["user"] for a in body["approvals"]] == ["alice"]
            approved = await anext(events)
            assert isinstance(approved.data, dict)
            assert approved.kind == "approved"
            assert [a["user"] for a in approved.data["approvals"]] == ["alice"]
            async with page(server, "bob") as bob:
                last = await bob.post(f"/api/questions/{question}/answer", json=ALLOW_JSON)
            assert last.status_code == 200
            resolved = await anext(events)
            assert (resolved.kind, resolved.data) == (
                "resolved",
                {"id": question, "outcome": "answered", "answerer": "bob"},
            )
        assert await task == ALLOW


async def test_rules_by_lets_only_its_assignees_change_the_rules(tmp_path: Path) -> None:
    store = JsonFileRuleStore(tmp_path / "rules.json")
    async with team_page(rules=store, rules_by=Assignment(["ops"])) as (_, server):
        rule = {"spec": "Bash(npm test:*)", "effect": "allow"}
        async with page(server, "dave") as dave:
            refused = await dave.post("/api/rules", json=rule)
            assert (refused.status_code, refused.json()["error"]["code"]) == (403, NOT_ASSIGNED)
            revoked = await dave.post("/api/rules/r1/revoke")
            assert revoked.status_code == 403
        async with page(server, "carol") as carol:
            added = await carol.post("/api/rules", json=rule)
            assert added.status_code == 201, added.text
    assert [r.created_by for r in await store.rules()] == ["web:carol"]


def test_a_page_whose_team_names_a_user_without_a_token_is_refused() -> None:
    with pytest.raises(UserInteractionError) as info:
        WebServer(Relay(team=TEAM), users={"alice": TOKENS["alice"]})
    assert (info.value.code, info.value.message) == (BAD_TEAM, "team: user bob has no token here")
    with pytest.raises(UserInteractionError) as other:
        WebServer(Relay(team=TEAM), users=TOKENS, team=Team(["alice"]))
    assert other.value.message == "team: the app's team is not its relay's"


# ---------------------------------------------------------------------- the wire

NAMES = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,20}", fullmatch=True)


@given(
    to=st.lists(NAMES, min_size=1, max_size=8, unique=True),
    quorum=st.none() | st.integers(1, 1000),
)
def test_an_assignment_goes_over_the_wire_and_back_unchanged(
    to: list[str], quorum: int | None
) -> None:
    request = deploy(*to, quorum=quorum)
    encoded = encode_request(request)
    assert encoded["assignment"] == {"to": to, **({} if quorum is None else {"quorum": quorum})}
    jsonschema.Draft202012Validator(REQUEST_SCHEMA).validate(encoded)
    for decoded in (decode_request(encoded), decode_request(json.dumps(encoded))):
        assert decoded.assignment == request.assignment


def test_a_document_without_an_assignment_decodes_as_before() -> None:
    plain = {"questions": [{"id": "q", "question": "Why?"}]}
    assert decode_request(plain).assignment is None
    assert "assignment" not in encode_request(decode_request(plain))


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ({}, "assignment.to: is required"),
        ({"to": "ops"}, "assignment.to: expected an array, got string"),
        ({"to": [1]}, "assignment.to[0]: expected a string, got number"),
        ({"to": ["ops"], "quorum": "2"}, "assignment.quorum: expected a whole number, got string"),
        ({"to": ["ops"], "quorum": None}, "assignment.quorum: expected a whole number, got null"),
        ({"to": ["x"] * 33}, "assignment.to: names more than 32 users and groups"),
    ],
)
def test_the_wire_refuses_a_malformed_assignment(assignment: object, message: str) -> None:
    document = {**encode_request(deploy("ops")), "assignment": assignment}
    assert refusal(decode_request, document) == (ErrorCode.BAD_REQUEST, message)


# ---------------------------------------------------------------------- the command


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "interaction", *argv],
        capture_output=True,
        text=True,
        timeout=WAIT,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        check=False,
    )


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (["--user", "alice", "--group", "ops="], "team: group ops has no members"),
        (["--user", "alice", "--group", "ops=alice,bob"], "team: group ops: bob is not a user"),
        (
            ["--user", "alice", "--group", "ops"],
            "--group 'ops': write NAME=USER,USER (as in ops=alice,bob)",
        ),
        (
            ["--user", "alice", "--group", "ops=alice", "--group", "ops=alice"],
            "--group: ops is named twice",
        ),
        (["--group", "ops=alice"], "--group needs named users (--user NAME)"),
        (["--user", "alice", "--see-all", "bob"], "team: see_all: bob is not a user"),
        (
            ["--user", "alice", "--rules-by", "ops"],
            "--rules-by: ops is no user or group (--user, --group)",
        ),
        (
            ["--user", "alice", "--assign-default", "ops"],
            "--assign-default: ops is no user or group (--user, --group)",
        ),
        (["--assign-default", "ops"], "--assign-default needs named users (--user NAME)"),
    ],
)
def test_serve_refuses_a_bad_team_in_one_line(flags: list[str], line: str) -> None:
    done = run("serve", "--port", "0", *flags)
    assert (done.returncode, done.stderr, done.stdout) == (2, f"interaction: {line}\n", "")


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (["--quorum", "2"], "--quorum needs --assign (the users or groups who approve)"),
        (["--assign", "ops", "--quorum", "0"], "assignment.quorum: must be at least 1, got 0"),
        (
            ["--assign", "ops", "--assign", "ops"],
            "assignment.to[1]: ops is named twice",
        ),
    ],
)
def test_ask_refuses_a_bad_assignment_in_one_line(
    flags: list[str], line: str, tmp_path: Path
) -> None:
    question = tmp_path / "q.json"
    question.write_text(json.dumps(encode_request(AskUserQuestionRequest([DEPLOY]))))
    done = run("ask", str(question), "--plain", *flags)
    assert (done.returncode, done.stderr) == (2, f"interaction: {line} (BAD_REQUEST)\n")


# ---------------------------------------------------------------------- the integrations


async def test_assign_by_tool_assigns_each_tools_approvals_for_every_integration() -> None:
    relay = Relay(team=TEAM)
    desk = AssignByTool(relay, {"Bash": Assignment(["ops"], 2)})
    events = relay.events(relay.position)
    bash = approval_item("Bash", {"command": "make deploy"})
    verdict = asyncio.create_task(ask_approval(bash, tool_name="Bash", provider=desk))
    requested = await asyncio.wait_for(anext(events), WAIT)
    assert requested.question is not None
    assert requested.question.request.assignment == Assignment(["ops"], 2)
    allow = AskUserQuestionAnswer([AskUserQuestionAnswerItem("permission", ["Allow"])])
    relay.answer(requested.id, allow, answerer="alice")
    assert refusal(relay.answer, requested.id, allow, answerer="dave")[0] == NOT_ASSIGNED
    relay.answer(requested.id, allow, answerer="carol")
    assert (await verdict).allowed
    read = approval_item("Read", {"path": "README.md"})
    unmapped = asyncio.create_task(ask_approval(read, tool_name="Read", provider=desk))
    while (event := await asyncio.wait_for(anext(events), WAIT)).kind != "requested":
        pass
    assert event.question is not None
    assert event.question.request.assignment is None  # a tool it does not map: anyone
    relay.answer(event.id, allow)
    assert (await unmapped).allowed
    await events.aclose()
    batch = [(approval_item("Bash", {}, id=f"c{i}"), "Bash") for i in range(2)]
    denied = await ask_approvals(batch, provider=desk)  # a quorum is for one question
    assert [(v.allowed, v.code) for v in denied] == [(False, ErrorCode.BAD_REQUEST)] * 2
    with pytest.raises(UserInteractionError) as bad:
        AssignByTool(relay, {"Bash": Assignment(["ops"], 0)})
    assert bad.value.message == "assignment.quorum: must be at least 1, got 0"


async def test_an_answer_taken_elsewhere_goes_through_the_same_checks() -> None:
    # What a Slack click becomes: the page's answer route, in-process, under a user's name.
    relay = Relay(team=TEAM)
    app = WebApp(relay, token=None, hosts=["127.0.0.1"], users=TOKENS)
    with provide(relay):
        task, question = await _asked(relay, deploy("ops", quorum=2))
        body = json.dumps(ALLOW_JSON).encode()
        assert await app.answer_as(question, body, "dave") == (
            403,
            NOT_ASSIGNED,
            f"question {question!r} is assigned to others: 'dave' may not settle it",
        )
        assert await app.answer_as(question, body, "alice") == (202, "", "1 of 2 approved: alice")
        assert await app.answer_as(question, body, "bob") == (200, "", "")
        assert await task == ALLOW


def test_the_config_file_gives_the_team_and_a_bad_one_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "interaction.toml"
    config.write_text(
        '[users.alice]\n[users.bob]\n[groups]\nops = ["alice", "dave"]\n', encoding="utf-8"
    )
    done = run("serve", "--port", "0", "--config", str(config))
    assert (done.returncode, done.stderr) == (
        2,
        "interaction: team: group ops: dave is not a user\n",
    )
    config.write_text(
        'see_all = ["bob"]\n[users.alice]\n[groups]\nops = ["alice"]\n', encoding="utf-8"
    )
    done = run("serve", "--port", "0", "--config", str(config))
    assert (done.returncode, done.stderr) == (2, "interaction: team: see_all: bob is not a user\n")
