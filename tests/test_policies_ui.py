""" "Allow always" chosen in a real UI makes a rule that answers the next ask unseen.

The terminal UI runs in tmux (``interaction ask --rules``); the page runs in Chromium.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, expect

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionRequest,
    ask,
    permission_question,
    provide,
)
from interaction.audit import AuditProvider, JsonlAuditLog, read_jsonl, verify
from interaction.policies import JsonFileRuleStore, PolicyProvider, new_rule
from interaction.relay import Relay
from interaction.web import WebServer

from .tmux import Pane
from .web_helpers import client

INTERACTION = (sys.executable, "-m", "interaction")
PERMISSION = {
    "id": "perm",
    "question": "Allow Bash to run this command?",
    "detail": "npm test -- --bail",
    "options": [{"label": "Allow"}, {"label": "Always allow"}, {"label": "Deny"}],
    "intent": {
        "kind": "permission",
        "tool": "Bash",
        "summary": "npm test -- --bail",
        "allow": "Allow",
        "allowAlways": "Always allow",
        "deny": "Deny",
    },
}


@pytest.fixture
def panes(tmp_path: Path) -> Iterator[list[Pane]]:
    opened: list[Pane] = []
    yield opened
    for pane in opened:
        pane.close()


def pane_in(tmp_path: Path, panes: list[Pane], name: str) -> Pane:
    directory = tmp_path / name
    directory.mkdir()
    panes.append(Pane(directory))
    return panes[-1]


def test_allow_always_in_the_terminal_answers_the_next_ask_without_a_prompt(
    tmp_path: Path, panes: list[Pane]
) -> None:
    request, rules, audit = tmp_path / "req.json", tmp_path / "rules.json", tmp_path / "a.jsonl"
    request.write_text(json.dumps({"questions": [PERMISSION]}))
    command = (*INTERACTION, "ask", str(request), "--rules", str(rules), "--audit", str(audit))
    first = pane_in(tmp_path, panes, "first")
    first.start(*command)
    screen = first.wait_for("Permission · Bash")
    assert "  Bash: npm test -- --bail" in screen
    assert "Always allow [allow always]" in screen
    first.keys("Down")
    first.wait_for("❯ 2. Always allow")
    first.keys("Enter")
    status, stdout = first.finish()
    assert (status, json.loads(stdout)) == (
        0,
        {"answers": [{"id": "perm", "selected": ["Always allow"]}]},
    )
    (rule,) = json.loads(rules.read_text())["rules"]
    assert (rule["effect"], rule["tool"], rule["pattern"], rule["source"]) == (
        "allow",
        "Bash",
        "npm test -- --bail",
        "cli",
    )
    second = pane_in(tmp_path, panes, "second")
    second.start(*command)
    status, stdout = second.finish()
    assert (status, json.loads(stdout)) == (0, {"answers": [{"id": "perm", "selected": ["Allow"]}]})
    assert "Permission" not in second.screen()  # no prompt was drawn
    records = [json.loads(line) for _, line in read_jsonl(audit)]
    assert [(r["decidedBy"], r["rule"]) for r in records] == [
        ("human", None),
        ("policy", rule["id"]),
    ]
    assert verify(read_jsonl(audit))[:2] == ([], 2)


@pytest_asyncio.fixture(loop_scope="session")  # on the browser's loop: see tests/conftest.py
async def policy_site(
    browser: Browser, tmp_path: Path
) -> AsyncIterator[tuple[Relay, PolicyProvider, Page]]:
    relay = Relay()
    policy = PolicyProvider(relay, JsonFileRuleStore(tmp_path / "rules.json"), answerer="web")
    async with WebServer(relay) as server:
        page = await browser.new_page()
        page.on("dialog", lambda dialog: pytest.fail(f"the page opened a dialog: {dialog.message}"))
        try:
            await page.goto(server.url)
            with provide(AuditProvider(policy, JsonlAuditLog(tmp_path / "a.jsonl"))):
                yield relay, policy, page
        finally:
            await page.close()
            relay.close()


async def test_allow_always_on_the_page_answers_the_next_ask_without_a_prompt(
    policy_site: tuple[Relay, PolicyProvider, Page], tmp_path: Path
) -> None:
    relay, policy, page = policy_site
    request = AskUserQuestionRequest([permission_question("Bash", "rm -rf build/", id="perm")])
    task = asyncio.create_task(ask(request))
    card = page.get_by_test_id("question")
    await card.wait_for()
    assert await page.get_by_test_id("progress").inner_text() == "Permission · Bash"
    permission = page.get_by_test_id("permission")
    assert await permission.locator(".tool").inner_text() == "Bash"
    assert await permission.locator("code").inner_text() == "rm -rf build/"
    roles = page.locator(".badge.role")
    assert await roles.all_inner_texts() == ["Allow once", "Allow always", "Deny"]
    await page.get_by_test_id("option").filter(has_text="Always allow").click()
    await page.get_by_test_id("submit").click()
    assert await task == AskUserQuestionAnswer(
        [AskUserQuestionAnswerItem("perm", ["Always allow"])]
    )
    await page.get_by_text("No question is waiting.").wait_for()
    (rule,) = await policy.rules.rules()
    assert (rule.effect, rule.spec, rule.created_by) == ("allow", "Bash(rm -rf build/)", "web")
    again = await ask(request)  # answered by the rule: the relay never holds it
    assert again == AskUserQuestionAnswer([AskUserQuestionAnswerItem("perm", ["Allow"])])
    assert relay.pending() == []
    records = [json.loads(line) for _, line in read_jsonl(tmp_path / "a.jsonl")]
    assert [(r["decidedBy"], r["rule"]) for r in records] == [("human", None), ("policy", rule.id)]


# On the browser's loop (see tests/conftest.py), as are the tests using it.
@pytest_asyncio.fixture(loop_scope="session")
async def rules_site(tmp_path: Path) -> AsyncIterator[tuple[WebServer, JsonFileRuleStore]]:
    relay = Relay()
    store = JsonFileRuleStore(tmp_path / "rules.json")
    async with WebServer(relay, rules=store) as server:
        try:
            yield server, store
        finally:
            relay.close()


@pytest.mark.asyncio(loop_scope="session")  # rules_site's loop
async def test_the_rules_api_lists_adds_and_revokes_behind_the_token(
    rules_site: tuple[WebServer, JsonFileRuleStore],
) -> None:
    server, store = rules_site
    async with client(server) as http:
        assert (await http.get("/api/rules")).json() == {"rules": []}
        added = await http.post("/api/rules", json={"spec": "Bash(npm test:*)", "effect": "deny"})
        assert added.status_code == 201
        rule = added.json()
        assert (rule["effect"], rule["tool"], rule["pattern"], rule["createdBy"]) == (
            "deny",
            "Bash",
            "npm test:*",
            "web",
        )
        assert [r.id for r in await store.rules()] == [rule["id"]]
        bad = await http.post("/api/rules", json={"spec": "Bash(ls"})
        assert (bad.status_code, bad.json()["error"]) == (
            400,
            {
                "code": "BAD_REQUEST",
                "message": "rule spec 'Bash(ls' must end with ) after its pattern",
            },
        )
        huge = await http.post("/api/rules", content=b'{"spec": "' + b"x" * 9000 + b'"}')
        assert huge.status_code == 413
        assert (await http.post(f"/api/rules/{rule['id']}/revoke")).status_code == 204
        assert (await http.post(f"/api/rules/{rule['id']}/revoke")).status_code == 404
        assert await store.rules() == ()
    async with client(server, token=False) as stranger:
        assert (await stranger.get("/api/rules")).status_code == 401
        assert (await stranger.post("/api/rules", json={"spec": "*"})).status_code == 401
    assert await store.rules() == ()


async def test_a_server_without_rules_has_no_rules_api() -> None:
    relay = Relay()
    async with WebServer(relay) as server, client(server) as http:
        assert (await http.get("/api/rules")).status_code == 404
    relay.close()


async def test_the_page_lists_adds_and_revokes_rules(
    browser: Browser, rules_site: tuple[WebServer, JsonFileRuleStore]
) -> None:
    server, store = rules_site
    await store.add(new_rule("Read(src/**)", created_by="alice"))
    page = await browser.new_page()
    try:
        await page.goto(server.url)
        panel = page.get_by_test_id("rules")
        await panel.locator("summary").click()
        rows = page.get_by_test_id("rule")
        await rows.first.wait_for()
        assert await rows.first.locator("code").inner_text() == "Read(src/**)"
        await page.get_by_test_id("rule-spec").fill("Bash(rm:*)")
        await page.get_by_test_id("rule-effect").select_option("deny")
        await page.get_by_test_id("rule-add").click()
        await rows.nth(1).wait_for()
        assert [r.spec for r in await store.rules()] == ["Read(src/**)", "Bash(rm:*)"]
        await page.get_by_test_id("rule-spec").fill("Bash(")
        await page.get_by_test_id("rule-add").click()
        error = page.get_by_test_id("rule-error")
        await error.filter(has_text="must end with").wait_for()
        await rows.first.get_by_test_id("revoke").click()
        await expect(page.get_by_test_id("rule")).to_have_count(1)  # no eval: the page's CSP
        assert [r.spec for r in await store.rules()] == ["Bash(rm:*)"]
    finally:
        await page.close()


async def test_a_rules_refresh_keeps_what_is_being_typed_and_draws_only_the_latest_list(
    browser: Browser, rules_site: tuple[WebServer, JsonFileRuleStore]
) -> None:
    """The panel is refreshed when it opens, when the page starts and after each change:
    a refresh answered late once replaced the form and lost what was typed, so the rule
    added next was an empty one (a flake on a busy machine)."""
    server, store = rules_site
    page = await browser.new_page()
    try:
        await page.goto(server.url)
        panel = page.get_by_test_id("rules")
        await panel.locator("summary").click()
        await page.get_by_text("No rules yet.").wait_for()
        await page.get_by_test_id("rule-spec").fill("Bash(npm test:*)")
        await store.add(new_rule("Read(src/**)", created_by="alice"))
        await panel.locator("summary").click()  # closed, then opened: a refresh
        await panel.locator("summary").click()
        await page.get_by_test_id("rule").first.wait_for()
        assert await page.get_by_test_id("rule-spec").input_value() == "Bash(npm test:*)"
        await page.get_by_test_id("rule-add").click()
        await expect(page.get_by_test_id("rule")).to_have_count(2)
        assert [r.spec for r in await store.rules()] == ["Read(src/**)", "Bash(npm test:*)"]
        assert await page.get_by_test_id("rule-spec").input_value() == ""
        assert await page.get_by_test_id("rule-error").inner_text() == ""
    finally:
        await page.close()
