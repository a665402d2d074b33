"""The web app's API and security, over real HTTP on loopback."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import httpx
import pytest

from interaction import (
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    ask,
)
from interaction.relay import Relay

from .helpers import import_error_without
from .web_helpers import client, served

SINGLE = AskUserQuestionItem(
    "pkg", "Which?", options=[AskUserQuestionOption("pnpm"), AskUserQuestionOption("npm")]
)


async def pending_id(relay: Relay) -> str:
    subscription = relay.subscribe()
    event = await anext(aiter(subscription))
    subscription.close()
    return event.id


async def test_every_route_without_the_token_is_401() -> None:
    async with served() as (_, server), client(server, token=False) as http:
        for method, path in (
            ("GET", "/"),
            ("GET", "/api/questions"),
            ("GET", "/api/events"),
            ("POST", "/api/questions/x/answer"),
            ("POST", "/api/questions/x/cancel"),
            ("POST", "/api/ping"),
            ("GET", "/nowhere"),
        ):
            for params in ({}, {"token": "wrong"}, {"token": server.token[:-1]}):
                response = await http.request(method, path, params=params)
                assert response.status_code == 401, (method, path, params)
                assert response.json() == {
                    "error": {"code": "UNAUTHORIZED", "message": "a valid token is required"}
                }


async def test_the_token_works_as_a_header_or_a_query_parameter() -> None:
    async with served() as (_, server), client(server, token=False) as http:
        by_query = await http.get("/api/questions", params={"token": server.token})
        by_header = await http.get(
            "/api/questions", headers={"Authorization": f"Bearer {server.token}"}
        )
    assert by_query.status_code == by_header.status_code == 200
    assert by_query.json() == {"questions": []}


async def test_foreign_hosts_and_cross_site_origins_are_refused() -> None:
    async with served() as (_, server), client(server) as http:
        rebinding = await http.get("/api/questions", headers={"Host": "attacker.example"})
        cross_site = await http.post("/api/ping", headers={"Origin": "http://attacker.example"})
        same_site = await http.post("/api/ping", headers={"Origin": server.base})
        localhost = await http.get("/api/questions", headers={"Host": f"localhost:{server.port}"})
    assert rebinding.status_code == 421
    assert cross_site.status_code == 403
    assert same_site.status_code == 204
    assert localhost.status_code == 200


async def test_the_page_has_a_strict_policy_and_safe_headers() -> None:
    async with served() as (_, server), client(server) as http:
        page = await http.get("/")
    assert page.status_code == 200
    csp = page.headers["content-security-policy"]
    assert csp.startswith("default-src 'none'; script-src 'nonce-")
    assert "connect-src 'self'" in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "no-referrer"
    assert page.headers["cache-control"] == "no-store"
    assert "innerHTML" not in page.text
    assert "https://" not in page.text  # no CDN


async def test_list_answer_and_forgeries_over_http() -> None:
    async with served() as (relay, server), client(server) as http:
        asking = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE])))
        qid = await pending_id(relay)
        listed = (await http.get("/api/questions")).json()
        assert listed == {
            "questions": [
                {
                    "id": qid,
                    "request": {
                        "questions": [
                            {
                                "id": "pkg",
                                "question": "Which?",
                                "options": [{"label": "pnpm"}, {"label": "npm"}],
                            }
                        ]
                    },
                    "planReview": False,
                }
            ]
        }
        url = f"/api/questions/{qid}/answer"
        for forged in (
            "not json",
            "null",
            '{"answers": []}',
            '{"answers": [{"id": "pkg", "selected": ["yarn"]}]}',
            '{"answers": [{"id": "pkg", "selected": ["npm", "npm"]}]}',
            '{"answers": [{"id": "pkg", "selected": ["npm", "pnpm"]}]}',
            '{"answers": [{"id": "pkg", "selected": [], "custom": " "}]}',
            '{"answers": [{"id": "pkg", "selected": ["npm"], "custom": "x"}]}',
            '{"answers": [{"id": "other", "selected": []}]}',
        ):
            refused = await http.post(url, content=forged)
            assert refused.status_code == 400, forged
            assert refused.json()["error"]["code"] == ErrorCode.BAD_ANSWER
            assert [q.id for q in relay.pending()] == [qid]
        good = '{"answers": [{"id": "pkg", "selected": ["npm"]}]}'
        first, second = await asyncio.gather(
            http.post(url, content=good), http.post(url, content=good)
        )
        assert sorted([first.status_code, second.status_code]) == [200, 409]
        late = first if first.status_code == 409 else second
        assert late.json()["error"]["code"] == "NOT_PENDING"
        answer = await asking
    assert answer.answers[0].selected == ("npm",)


async def test_cancel_over_http_and_late_answers() -> None:
    async with served() as (relay, server), client(server) as http:
        asking = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE])))
        qid = await pending_id(relay)
        assert (await http.post(f"/api/questions/{qid}/cancel")).status_code == 204
        with pytest.raises(UserInteractionError) as info:
            await asking
        assert info.value.code == ErrorCode.ASK_CANCELLED
        assert (await http.post(f"/api/questions/{qid}/cancel")).status_code == 409
        late = await http.post(f"/api/questions/{qid}/answer", content='{"answers": []}')
        assert late.status_code == 409


async def test_the_event_stream_replays_pending_questions_and_reports_outcomes() -> None:
    async with served() as (relay, server), client(server) as http:
        asking = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE])))
        qid = await pending_id(relay)
        async with http.stream("GET", "/api/events") as stream:
            lines = aiter(stream.aiter_lines())
            assert await anext(lines) == ": connected"
            assert await anext(lines) == ""
            assert await anext(lines) == "event: requested"
            data = json.loads((await anext(lines)).removeprefix("data: "))
            assert data["id"] == qid
            assert data["request"]["questions"][0]["id"] == "pkg"
            await http.post(
                f"/api/questions/{qid}/answer", content='{"answers":[{"id":"pkg","selected":[]}]}'
            )
            assert await anext(lines) == ""
            assert await anext(lines) == "event: resolved"
            assert json.loads((await anext(lines)).removeprefix("data: ")) == {
                "id": qid,
                "outcome": "answered",
            }
        assert (await asking).answers == (AskUserQuestionAnswerItem("pkg"),)


async def test_keep_alives_never_end_the_event_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("interaction.web._app.KEEPALIVE_SECONDS", 0.01)
    async with served() as (_relay, server), client(server) as http:
        async with http.stream("GET", "/api/events") as stream:
            lines = aiter(stream.aiter_lines())
            assert await anext(lines) == ": connected"
            assert await anext(lines) == ""
            for _ in range(3):  # several idle spells in a row
                assert await anext(lines) == ": keep-alive"
                assert await anext(lines) == ""
            asking = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE])))
            while (line := await anext(lines)) != "event: requested":
                assert line in {": keep-alive", ""}
            qid = json.loads((await anext(lines)).removeprefix("data: "))["id"]
            await http.post(f"/api/questions/{qid}/cancel")
        with pytest.raises(UserInteractionError):
            await asking


def test_the_web_module_names_its_extra_when_it_is_missing() -> None:
    assert import_error_without("starlette", "interaction.web") == (
        'interaction.web needs Starlette and uvicorn: pip install "interaction-seam[web]"'
    )


def test_serve_prints_the_url_and_asks_the_demo_again_and_again() -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "interaction", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            serve_and_answer(process)
        finally:
            process.terminate()
            process.wait(timeout=30)


def serve_and_answer(process: subprocess.Popen[str]) -> None:
    assert process.stderr is not None
    assert process.stdout is not None
    line = process.stderr.readline()
    assert line.startswith("interaction: answer at http://127.0.0.1:")
    url = line.split(" at ", 1)[1].strip()
    base, token = url.split("/?token=")
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, headers=headers, timeout=30) as http:
        assert http.get("/api/questions", headers={"Authorization": ""}).status_code == 401
        for expected in ("pkg", "plan", "pkg"):
            with http.stream("GET", "/api/events") as events:  # the next question, live
                data = next(ln for ln in events.iter_lines() if ln.startswith("data: "))
            question = json.loads(data.removeprefix("data: "))
            first = question["request"]["questions"][0]["id"]
            assert first == expected
            answers = [{"id": q["id"], "selected": []} for q in question["request"]["questions"]]
            posted = http.post(f"/api/questions/{question['id']}/answer", json={"answers": answers})
            assert posted.status_code == 200
            assert json.loads(process.stdout.readline()) == {"answers": answers}
