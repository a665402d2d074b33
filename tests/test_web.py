"""The web app's API and security, over real HTTP on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import subprocess
import sys
import time
import warnings
from collections.abc import AsyncGenerator, Callable, Iterator
from typing import Any, cast

import httpx
import pytest

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    ask,
    provide,
)
from interaction.display import present
from interaction.relay import (
    RELAY_UNAVAILABLE,
    PendingQuestion,
    Relay,
    RelayBackend,
    RelayEvent,
    RelaySnapshot,
)
from interaction.web import WebServer, create_app
from interaction.web._guard import HOSTS_SEEN, _Hosts, parse_host
from interaction.web._streams import _EventStream
from interaction.web._uvicorn import GRACE_SECONDS
from interaction.wire import asked_at_text

from .helpers import import_error_without
from .loopback import popen
from .web_helpers import Sse, client, served, sse

SINGLE = AskUserQuestionItem(
    "pkg", "Which?", options=[AskUserQuestionOption("pnpm"), AskUserQuestionOption("npm")]
)
NOTE = AskUserQuestionItem("note", "Anything else?")


async def pending_id(relay: Relay) -> str:
    subscription = relay.subscribe()
    event = await anext(aiter(subscription))
    subscription.close()
    return event.id


def test_the_guard_remembers_host_verdicts_within_a_bound() -> None:
    """The guard keeps its verdict per raw Host value (the same on every request of a
    client), and the same verdicts hold once more values came than it keeps."""
    hosts = _Hosts(["example.com", "127.0.0.1:8000"])
    values = [f"example.com:{port}" for port in range(1, HOSTS_SEEN)]
    values += [f"127.0.0.1:{port}" for port in (8000, 8001)] + ["evil.test", "", "[::1"]
    values += [f"other{n}.test" for n in range(HOSTS_SEEN)]
    for _ in range(2):
        for value in values:
            assert hosts.allows_raw(value.encode()) is hosts.allows(value), value
            assert len(hosts.seen) <= HOSTS_SEEN
    assert hosts.allows_raw(b"Example.COM.:443")
    assert not hosts.allows_raw(b"127.0.0.1:8001")


async def test_every_route_without_the_token_is_401() -> None:
    async with served() as (_, server), client(server, token=False) as http:
        for method, path in (
            ("POST", "/"),
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


async def test_the_page_is_the_same_for_anyone_and_holds_no_question_nor_token() -> None:
    async with served() as (relay, server), client(server, token=False) as http:
        asking = asyncio.create_task(ask(AskUserQuestionRequest([NOTE])))
        await pending_id(relay)
        page = await http.get("/")
        asking.cancel()
        refused = await http.get("/", headers={"Host": "attacker.example"})
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert server.token not in page.text
    assert NOTE.question not in page.text
    assert "sessionStorage" in page.text  # the script keeps the token for this tab only
    assert refused.status_code == 421  # the Host check holds for the page too


async def test_no_cookie_is_set_and_none_is_taken_as_a_credential() -> None:
    async with served() as (_, server), client(server, token=False) as http:
        assert server.url == f"{server.base}/#token={server.token}"  # a fragment: never sent
        page = await http.get("/", params={"token": server.token})
        assert "set-cookie" not in page.headers
        for name in (f"interaction_token_{server.port}", "interaction_token", "token"):
            http.cookies.clear()
            http.cookies.set(name, server.token)
            response = await http.get("/api/questions")
            assert response.status_code == 401, name


async def test_a_port_in_use_is_an_oserror_that_leaves_no_socket_open() -> None:
    async with WebServer(Relay()) as first:
        second = WebServer(Relay(), port=first.port)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            with pytest.raises(OSError, match="Address already in use") as refused:
                await second.start()
            del refused  # its traceback holds start()'s frame, and through it the socket
            gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


async def test_binding_beyond_loopback_answers_the_named_hosts_with_their_ports() -> None:
    relay = Relay()
    hosts = ["box.example", "10.0.0.7:8443", "[fd00::1]"]
    async with WebServer(relay, host="0.0.0.0", hosts=hosts) as server:
        assert server.base == f"http://box.example:{server.port}"
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{server.port}",
            headers={"Authorization": f"Bearer {server.token}"},
        ) as http:

            async def status(host: str, origin: str | None = None) -> int:
                headers = {"Host": host} | ({"Origin": origin} if origin else {})
                return (await http.post("/api/ping", headers=headers)).status_code

            port = server.port
            assert await status(f"box.example:{port}") == 204
            assert await status("box.example") == 204  # behind a proxy on port 80
            assert await status("BOX.example.:8080") == 204  # a name entry matches any port
            assert await status("10.0.0.7:8443") == 204
            assert await status(f"10.0.0.7:{port}") == 421  # that entry names its port
            assert await status(f"[fd00::1]:{port}") == 204
            assert await status(f"127.0.0.1:{port}") == 204
            assert await status(f"localhost:{port}") == 204
            assert await status(f"0.0.0.0:{port}") == 421
            assert await status(f"attacker.example:{port}") == 421
            assert await status("box.example:notaport") == 421
            assert await status(f"box.example:{port}", f"http://box.example:{port}") == 204
            assert await status(f"box.example:{port}", f"http://localhost:{port}") == 403
            assert await status(f"box.example:{port}", "null") == 403
    relay.close()
    with pytest.raises(ValueError, match="not a host name or host:port"):
        WebServer(relay, hosts=["box.example:http"])


def test_host_values_parse_with_ports_and_brackets() -> None:
    assert parse_host("Example.COM.:8080") == ("example.com", 8080)
    assert parse_host("example.com") == ("example.com", None)
    assert parse_host("[::1]:8765") == ("[::1]", 8765)
    assert parse_host("[::1]") == ("[::1]", None)
    for bad in ("::1", "[::1]x", "host:0", "host:65536", "host:+80", "host:٨٠", ""):
        assert parse_host(bad)[0] == "" or bad == "", bad


async def test_create_app_answers_the_loopback_names_on_any_port() -> None:
    app = create_app(Relay(), token="t")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport, headers={"Authorization": "Bearer t"}
    ) as http:
        for host in ("127.0.0.1:8765", "localhost:9", "[::1]:80", "localhost"):
            response = await http.post("http://x/api/ping", headers={"Host": host})
            assert response.status_code == 204, host
        assert (
            await http.post("http://x/api/ping", headers={"Host": "evil:80"})
        ).status_code == 421


async def test_every_error_is_the_json_shape_404_and_405_included() -> None:
    async with served() as (_, server), client(server) as http:
        missing = await http.get("/nowhere")
        wrong_method = await http.get("/api/ping")
        wrong_method_2 = await http.delete("/api/questions/x/answer")
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/json"
    assert missing.json() == {
        "error": {"code": "NOT_FOUND", "message": "there is nothing at '/nowhere'"}
    }
    assert wrong_method.status_code == wrong_method_2.status_code == 405
    assert wrong_method.json() == {
        "error": {"code": "METHOD_NOT_ALLOWED", "message": "GET is not allowed on this path"}
    }
    assert wrong_method.headers["allow"] == "POST"


async def test_malformed_http_gets_the_json_shape_not_uvicorns_text() -> None:
    async with served() as (relay, server):
        reader, writer = await asyncio.open_connection(server.host, server.port)
        writer.write(b"NOT HTTP AT ALL\r\n\r\n")
        reply = await reader.read()  # the server closes the connection after its answer
        writer.close()
        assert relay.pending() == []
    head, _, body = reply.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0] == "HTTP/1.1 400 Bad Request"
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    assert headers["content-type"] == "application/json"
    assert headers["x-content-type-options"] == "nosniff"
    assert json.loads(body) == {
        "error": {
            "code": "BAD_HTTP",
            "message": "the request was refused before it reached the app:"
            " Invalid HTTP request received.",
        }
    }


async def test_unencodable_or_undecodable_text_is_400_and_the_question_stays() -> None:
    async with served() as (relay, server), client(server) as http:
        asking = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE])))
        qid = await pending_id(relay)
        url = f"/api/questions/{qid}/answer"
        for body in (
            b'{"answers": [{"id": "pkg", "selected": [], "custom": "\\ud800"}]}',
            b'{"answers": [{"id": "pkg", "selected": [], "custom": "a\\udfffb"}]}',
            b'{"answers": [{"id": "pkg", "selected": [], "custom": "\xff\xfe"}]}',
            b'{"answers": [{"id": "\\ud83d", "selected": []}]}',
        ):
            refused = await http.post(url, content=body)
            assert refused.status_code == 400, body
            assert refused.json()["error"]["code"] == ErrorCode.BAD_ANSWER, body
            assert [q.id for q in relay.pending()] == [qid]
        odd_id = await http.post("/api/questions/%ED%A0%80/answer", json={"answers": []})
        assert odd_id.status_code == 409
        assert odd_id.json()["error"]["code"] == "NOT_PENDING"
        await http.post(f"/api/questions/{qid}/cancel")
        with pytest.raises(UserInteractionError):
            await asking


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
        stored = relay.get(qid)
        assert stored is not None
        assert stored.request.provenance is not None  # the relay stamped when it was asked
        asked_at = stored.request.provenance.asked_at
        assert asked_at is not None
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
                        ],
                        "provenance": {"askedAt": asked_at_text(asked_at)},
                    },
                    "planReview": False,
                    "view": present(stored.request).to_json(),
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


async def test_typed_text_naming_an_option_is_that_option_as_in_every_ui() -> None:
    async with served() as (relay, server), client(server) as http:
        asking = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE])))
        qid = await pending_id(relay)
        posted = await http.post(
            f"/api/questions/{qid}/answer",
            json={"answers": [{"id": "pkg", "selected": [], "custom": "  NPM "}]},
        )
        assert posted.json() == {"answers": [{"id": "pkg", "selected": ["npm"]}]}
        answer = await asking
    assert answer.answers == (AskUserQuestionAnswerItem("pkg", ["npm"]),)


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


async def test_the_stream_opens_with_a_snapshot_then_reports_outcomes() -> None:
    async with served() as (relay, server), client(server) as http:
        asking = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE])))
        qid = await pending_id(relay)
        async with http.stream("GET", "/api/events") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            events = sse(stream.aiter_lines())
            snapshot = await anext(events)
            assert snapshot.kind == "snapshot"
            assert snapshot.retry == 1000
            assert snapshot.data == {
                "questions": (await http.get("/api/questions")).json()["questions"]
            }
            await http.post(
                f"/api/questions/{qid}/answer", content='{"answers":[{"id":"pkg","selected":[]}]}'
            )
            resolved = await anext(events)
            assert (resolved.kind, resolved.data) == (
                "resolved",
                {"id": qid, "outcome": "answered"},
            )
        assert (await asking).answers == (AskUserQuestionAnswerItem("pkg"),)


async def test_a_reconnect_drops_what_was_settled_while_away() -> None:
    """The ghost question: withdrawn while the page was away, it is not in the new snapshot."""
    async with served() as (relay, server), client(server) as http:
        kept = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE])))
        kept_id = await pending_id(relay)
        withdrawn = asyncio.create_task(ask(AskUserQuestionRequest([NOTE])))
        async with http.stream("GET", "/api/events") as stream:
            first = await anext(sse(stream.aiter_lines()))
        ids = [q["id"] for q in first.data["questions"]]  # type: ignore[index]
        assert len(ids) == 2
        assert ids[0] == kept_id
        withdrawn.cancel()  # the asker gives up while no page is connected
        with pytest.raises(asyncio.CancelledError):
            await withdrawn
        async with http.stream("GET", "/api/events", headers={"Last-Event-ID": "0"}) as stream:
            again = await anext(sse(stream.aiter_lines()))
        assert again.kind == "snapshot"
        assert [q["id"] for q in again.data["questions"]] == [kept_id]  # type: ignore[index]
        late = await http.post(f"/api/questions/{ids[1]}/answer", json={"answers": []})
        assert late.status_code == 409
        assert late.json() == {
            "error": {
                "code": "NOT_PENDING",
                "message": f"question {ids[1]!r} is not pending (withdrawn by the asker)",
                "outcome": "aborted",
            }
        }
        await http.post(f"/api/questions/{kept_id}/cancel")
        with pytest.raises(UserInteractionError):
            await kept


async def test_keep_alives_never_end_the_event_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("interaction.web._streams.KEEPALIVE_SECONDS", 0.01)
    async with served() as (_relay, server), client(server) as http:
        async with http.stream("GET", "/api/events") as stream:
            events = sse(stream.aiter_lines(), comments=True)
            assert (await anext(events)).kind == "snapshot"
            for _ in range(3):  # several idle spells in a row
                assert await anext(events) == Sse(":", "keep-alive")
            asking = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE])))
            while (event := await anext(events)).kind == ":":
                pass
            assert event.kind == "requested"
            qid = event.data["id"]  # type: ignore[index]
            await http.post(f"/api/questions/{qid}/cancel")
        with pytest.raises(UserInteractionError):
            await asking


class ReopenedRelay(Relay):
    """A relay that records where each event stream reads from, and can settle a question
    just as a stream reopens its events (between the end of one read and the next)."""

    def __init__(self) -> None:
        super().__init__()
        self.starts: list[str] = []
        self.on_reopen: Callable[[], None] | None = None

    def events(self, after: str) -> AsyncGenerator[RelayEvent, None]:
        self.starts.append(after)
        if self.on_reopen is not None:
            self.on_reopen()
            self.on_reopen = None
        return super().events(after)


async def test_an_idle_spell_reads_on_after_the_last_event_and_loses_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A keep-alive ends the wait for the relay's next event, and the stream reads on after
    the last event it read: what happened in between arrives once, in order."""
    monkeypatch.setattr("interaction.web._streams.KEEPALIVE_SECONDS", 0.01)
    relay = ReopenedRelay()
    with provide(relay):
        async with WebServer(relay) as server, client(server) as http:
            async with http.stream("GET", "/api/events") as stream:
                events = sse(stream.aiter_lines(), comments=True)
                snapshot = await anext(events)
                assert snapshot.kind == "snapshot"
                asking = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE])))
                while (requested := await anext(events)).kind == ":":
                    pass
                assert requested.kind == "requested"
                qid = requested.data["id"]  # type: ignore[index]
                reopened = len(relay.starts)
                relay.on_reopen = lambda: relay.cancel(qid)  # settled while no read waits
                seen: list[Sse] = []
                while len([e for e in seen if e.kind == ":"]) < 3:  # idle spells after it
                    seen.append(await anext(events))
            relay.close()
    assert [e for e in seen if e.kind != ":"] == [
        Sse("resolved", {"id": qid, "outcome": "cancelled"})
    ]
    resolved = next(e for e in seen if e.kind == "resolved")
    # Read on after the question (the cancel came just then), then after its resolution.
    assert relay.starts[reopened : reopened + 2] == [requested.id, resolved.id]
    with pytest.raises(UserInteractionError) as caught:
        await asking
    assert caught.value.code == ErrorCode.ASK_CANCELLED


async def test_open_streams_share_each_events_text_and_keep_only_the_recent_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("interaction.web._streams.TEXTS_KEPT", 8)
    async with served() as (_relay, server), client(server) as http:
        assert server._app is not None
        positions: list[str | None] = []
        async with (
            http.stream("GET", "/api/events") as one,
            http.stream("GET", "/api/events") as two,
        ):
            streams = [sse(one.aiter_lines()), sse(two.aiter_lines())]
            for events in streams:
                assert (await anext(events)).kind == "snapshot"
            for _ in range(20):
                asking = asyncio.create_task(ask(AskUserQuestionRequest([NOTE])))
                requested = [await anext(events) for events in streams]
                qid = requested[0].data["id"]  # type: ignore[index]
                await http.post(f"/api/questions/{qid}/cancel")
                resolved = [await anext(events) for events in streams]
                for pair in (requested, resolved):
                    assert pair[0] == pair[1]
                    assert pair[0].id == pair[1].id is not None
                    positions.append(pair[0].id)
                with pytest.raises(UserInteractionError):
                    await asking
        assert list(server._app._texts) == positions[-8:]  # the newest, and no more


async def test_two_claims_at_once_the_loser_is_told_it_was_answered_elsewhere() -> None:
    async with served() as (relay, server), client(server) as http:
        asking = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE])))
        qid = await pending_id(relay)
        answer = http.post(
            f"/api/questions/{qid}/answer", json={"answers": [{"id": "pkg", "selected": ["npm"]}]}
        )
        dismiss = http.post(f"/api/questions/{qid}/cancel")
        first, second = await asyncio.gather(answer, dismiss)
        assert (await asking).answers[0].selected == ("npm",)
    assert first.status_code == 200
    assert second.status_code == 409
    assert second.json() == {
        "error": {
            "code": "NOT_PENDING",
            "message": f"question {qid!r} was already answered (in another tab or client)",
            "outcome": "answered",
        }
    }


async def test_a_claim_racing_the_askers_abort_is_409_and_resolved_once() -> None:
    async with served() as (relay, server), client(server) as http:
        asking = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE])))
        qid = await pending_id(relay)
        real_get = relay.get

        def get_and_abort(question_id: str) -> PendingQuestion | None:
            found = real_get(question_id)
            asking.cancel()  # the abort lands while the claim is under way
            return found

        async with http.stream("GET", "/api/events") as stream:
            events = sse(stream.aiter_lines())
            assert (await anext(events)).kind == "snapshot"
            relay.get = get_and_abort  # type: ignore[method-assign]
            claim = await http.post(
                f"/api/questions/{qid}/answer", json={"answers": [{"id": "pkg", "selected": []}]}
            )
            relay.get = real_get  # type: ignore[method-assign]
            assert claim.status_code == 409
            assert claim.json()["error"]["code"] == "NOT_PENDING"
            assert await anext(events) == Sse("resolved", {"id": qid, "outcome": "aborted"})
            with pytest.raises(asyncio.CancelledError):
                await asking
            following = asyncio.create_task(ask(AskUserQuestionRequest([NOTE])))
            nxt = await anext(events)  # the next event is the next question: resolved came once
            assert nxt.kind == "requested"
            await http.post(f"/api/questions/{nxt.data['id']}/cancel")  # type: ignore[index]
            with pytest.raises(UserInteractionError):
                await following


async def test_stop_with_pages_open_is_quick_and_ends_their_streams(
    caplog: pytest.LogCaptureFixture,
) -> None:
    relay = Relay()
    server = WebServer(relay)
    await server.start()
    uvicorn_log = logging.getLogger("uvicorn")  # configured by uvicorn not to propagate
    uvicorn_log.addHandler(caplog.handler)
    async with client(server) as http, contextlib.AsyncExitStack() as streams:
        opened = [
            await streams.enter_async_context(http.stream("GET", "/api/events")) for _ in range(3)
        ]
        readers = [sse(stream.aiter_lines()) for stream in opened]
        for events in readers:
            assert (await anext(events)).kind == "snapshot"
        started = time.perf_counter()
        await server.stop()
        elapsed = time.perf_counter() - started
        for events in readers:
            assert await anext(events) == Sse("closing", {"reason": "stopped"})
            with pytest.raises(StopAsyncIteration):
                await anext(events)
    relay.close()
    uvicorn_log.removeHandler(caplog.handler)
    assert elapsed < GRACE_SECONDS, elapsed  # the streams ended themselves, none was cut off
    assert [r for r in caplog.records if r.name.startswith("uvicorn")] == []  # no traceback


@pytest.mark.parametrize("stopping", [True, False], ids=["server-stopping", "otherwise"])
async def test_a_stream_cancelled_by_the_stopping_server_ends_quietly(stopping: bool) -> None:
    """Past the stop's grace (a busy machine), the server cancels the streams still open:
    each ends without an error for uvicorn to log as a traceback, and gives its place back.
    A cancellation for any other reason goes on up."""
    sent: list[dict[str, object]] = []
    blocked = asyncio.Event()
    released: list[bool] = []

    async def body() -> AsyncGenerator[str]:
        yield "event: snapshot\n\n"

    async def send(message: dict[str, object]) -> None:  # a client that stopped reading
        sent.append(message)
        if message.get("more_body"):
            blocked.set()
            await asyncio.Event().wait()

    async def receive() -> dict[str, object]:
        await asyncio.Event().wait()
        return {}

    stream = _EventStream(body(), lambda: released.append(True), lambda: stopping)
    scope = {"type": "http", "asgi": {"spec_version": "2.4"}, "method": "GET", "path": "/"}
    task = asyncio.create_task(stream(scope, receive, send))  # type: ignore[arg-type]
    await blocked.wait()
    task.cancel()
    if stopping:
        await task
    else:
        with pytest.raises(asyncio.CancelledError):
            await task
    assert released == [True]
    assert sent[0]["type"] == "http.response.start"


async def test_closing_the_relay_tells_the_page() -> None:
    async with (
        served() as (relay, server),
        client(server) as http,
        http.stream("GET", "/api/events") as stream,
    ):
        events = sse(stream.aiter_lines())
        assert (await anext(events)).kind == "snapshot"
        relay.close()
        assert await anext(events) == Sse("closing", {"reason": "closed"})


def test_the_web_module_names_its_extra_when_it_is_missing() -> None:
    assert import_error_without("starlette", "interaction.web") == (
        'interaction.web needs Starlette and uvicorn: pip install "interaction-seam[web]"'
    )


def test_serve_prints_the_url_and_asks_the_demo_again_and_again() -> None:
    argv = [sys.executable, "-m", "interaction", "serve", "--port", "0"]
    with popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        serve_and_answer(process)


def serve_and_answer(process: subprocess.Popen[str]) -> None:
    assert process.stderr is not None
    assert process.stdout is not None
    line = process.stderr.readline()
    assert line.startswith("interaction: answer at http://127.0.0.1:")
    url = line.split(" at ", 1)[1].strip()
    base, token = url.split("/#token=")
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, headers=headers, timeout=30) as http:
        assert http.get("/api/questions", headers={"Authorization": ""}).status_code == 401
        for expected in ("pkg", "plan", "pkg"):
            with http.stream("GET", "/api/events") as events:  # the next question, live
                question = next_question(events.iter_lines())
            first = question["request"]["questions"][0]["id"]
            assert first == expected
            answers = [{"id": q["id"], "selected": []} for q in question["request"]["questions"]]
            posted = http.post(f"/api/questions/{question['id']}/answer", json={"answers": answers})
            assert posted.status_code == 200
            assert json.loads(process.stdout.readline()) == {"answers": answers}


def next_question(lines: Iterator[str]) -> dict[str, Any]:
    """The first question of a stream: in its snapshot, or the first one asked after it."""
    for line in lines:
        if line.startswith("data: "):
            data = json.loads(line.removeprefix("data: "))
            if "questions" not in data:
                return cast(dict[str, Any], data)
            if data["questions"]:
                return cast(dict[str, Any], data["questions"][0])
    raise AssertionError("the stream ended without a question")


def test_serve_answers_the_hosts_named_by_allow_host() -> None:
    argv = [sys.executable, "-m", "interaction", "serve", "--port", "0"]
    with popen(
        [*argv, "--allow-host", "box.example", "--allow-host", "10.1.2.3:9000"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stderr is not None
        url = process.stderr.readline().split(" at ", 1)[1].strip()
        base, token = url.split("/#token=")
        port = base.rsplit(":", 1)[1]
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=base, headers=headers, timeout=30) as http:
            for host, status in (
                (f"box.example:{port}", 204),
                ("10.1.2.3:9000", 204),
                (f"10.1.2.3:{port}", 421),
                (f"other.example:{port}", 421),
            ):
                assert http.post("/api/ping", headers={"Host": host}).status_code == status
    refused = subprocess.run(
        [*argv, "--allow-host", "box.example:http"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2
    assert refused.stderr.splitlines()[-1] == (
        "interaction serve: error: --allow-host 'box.example:http' is not a host name,"
        " an address or HOST:PORT"
    )


async def test_odd_requests_get_a_json_error_never_a_500() -> None:
    async with served() as (relay, server), client(server) as http:
        asking = asyncio.create_task(ask(AskUserQuestionRequest([NOTE])))
        qid = await pending_id(relay)
        url = f"/api/questions/{qid}/answer"
        for method, path, body, status, code in (
            ("POST", url, b"[" * 100_000 + b"]" * 100_000, 400, "BAD_ANSWER"),
            (
                "POST",
                url,
                b'{"answers": [' + b'{"a":' * 5000 + b"1" + b"}" * 5000 + b"]}",
                400,
                "BAD_ANSWER",
            ),
            (
                "POST",
                url,
                b'{"answers": [{"id": "note", "custom": "' + b"x" * (1 << 20) + b'"}]}',
                400,
                "BAD_ANSWER",
            ),
            (
                "POST",
                url,
                b'{"answers": [{"id": "note", "selected": [], "custom": 1e999}]}',
                400,
                "BAD_ANSWER",
            ),
            ("POST", "/api/questions/%00/cancel", b"", 409, "NOT_PENDING"),
            ("POST", "/api/questions//answer", b"", 404, "NOT_FOUND"),
            ("OPTIONS", "/api/questions", b"", 405, "METHOD_NOT_ALLOWED"),
            ("PUT", "/", b"", 405, "METHOD_NOT_ALLOWED"),
        ):
            response = await http.request(method, path, content=body)
            assert response.status_code == status, (method, path[:40])
            assert response.json()["error"]["code"] == code, (method, path[:40])
        assert [q.id for q in relay.pending()] == [qid]
        await http.post(f"/api/questions/{qid}/cancel")
        with pytest.raises(UserInteractionError):
            await asking


async def test_last_event_id_resumes_with_exactly_the_events_missed() -> None:
    async with served() as (relay, server), client(server) as http:
        first = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE])))
        async with http.stream("GET", "/api/events") as stream:
            events = sse(stream.aiter_lines())
            snapshot = await anext(events)
            assert snapshot.kind == "snapshot"
            assert snapshot.id
            if not snapshot.data["questions"]:  # type: ignore[index]
                seen = await anext(events)
                assert seen.kind == "requested"
            else:
                seen = snapshot
            assert seen.id
            last = seen.id
        first_id = relay.pending()[0].id
        # While the page is away: a new question, and the first one answered.
        second = asyncio.create_task(ask(AskUserQuestionRequest([NOTE])))
        second_id = await pending_id_after(relay, first_id)
        body = {"answers": [{"id": "pkg", "selected": ["npm"]}]}
        assert (await http.post(f"/api/questions/{first_id}/answer", json=body)).status_code == 200
        async with http.stream("GET", "/api/events", headers={"Last-Event-ID": last}) as stream:
            events = sse(stream.aiter_lines())
            missed = [await anext(events), await anext(events)]
        assert [(e.kind, e.data["id"]) for e in missed] == [  # type: ignore[index]
            ("requested", second_id),
            ("resolved", first_id),
        ]
        assert missed[1].data == {"id": first_id, "outcome": "answered"}
        assert missed[0].id
        assert missed[1].id
        assert len({last, missed[0].id, missed[1].id}) == 3
        await http.post(f"/api/questions/{second_id}/cancel")
        await first
        with pytest.raises(UserInteractionError):
            await second


async def pending_id_after(relay: Relay, known: str) -> str:
    """The id of the next question to be pending besides ``known``."""
    subscription = relay.subscribe()
    async for event in subscription:
        if event.kind == "requested" and event.id != known:
            subscription.close()
            return event.id
    raise AssertionError("no new question")


async def test_an_unknown_or_too_old_last_event_id_gets_a_fresh_snapshot() -> None:
    async with served(history=2) as (relay, server), client(server) as http:
        asking = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE])))
        qid = await pending_id(relay)
        async with http.stream("GET", "/api/events") as stream:
            old = (await anext(sse(stream.aiter_lines()))).id
        assert old
        for _ in range(3):  # more events than the relay keeps
            other = asyncio.create_task(ask(AskUserQuestionRequest([NOTE])))
            await http.post(f"/api/questions/{await pending_id_after(relay, qid)}/cancel")
            with pytest.raises(UserInteractionError):
                await other
        for last in (old.encode(), b"not-a-position", b"x" * 500, "\u00e9.1".encode()):
            headers = {b"Last-Event-ID": last}
            async with http.stream("GET", "/api/events", headers=headers) as stream:
                fresh = await anext(sse(stream.aiter_lines()))
            assert fresh.kind == "snapshot", last[:20]
            assert [q["id"] for q in fresh.data["questions"]] == [qid]  # type: ignore[index]
        await http.post(f"/api/questions/{qid}/cancel")
        with pytest.raises(UserInteractionError):
            await asking


async def test_a_stream_that_falls_behind_the_history_gets_a_fresh_snapshot() -> None:
    async with (
        served(history=2) as (relay, server),
        client(server) as http,
        http.stream("GET", "/api/events") as stream,
    ):
        events = sse(stream.aiter_lines())
        assert await anext(events) == Sse("snapshot", {"questions": []})
        burst = [asyncio.create_task(ask(AskUserQuestionRequest([NOTE]))) for _ in range(5)]
        while (event := await anext(events)).kind != "snapshot":
            assert event.kind == "requested"  # what it could still read, then a snapshot
        assert {q["id"] for q in event.data["questions"]} == {  # type: ignore[index]
            q.id for q in relay.pending()
        }
        assert len(relay.pending()) == 5
        for question in relay.pending():
            await http.post(f"/api/questions/{question.id}/cancel")
        for task in burst:
            with pytest.raises(UserInteractionError):
                await task


class FlakyRelay:
    """A RelayBackend over an in-memory Relay whose "store" can be taken down."""

    def __init__(self) -> None:
        self.inner = Relay()
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise UserInteractionError("the store is down", RELAY_UNAVAILABLE)

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        self._check()
        return await self.inner.ask(request)

    async def snapshot(self) -> RelaySnapshot:
        self._check()
        return await self.inner.snapshot()

    async def events(self, after: str) -> AsyncGenerator[RelayEvent, None]:
        self._check()
        async for event in self.inner.events(after):
            yield event

    async def lookup(self, question_id: str) -> PendingQuestion | None:
        self._check()
        return await self.inner.lookup(question_id)

    async def submit(
        self, question_id: str, answer: object, *, answerer: str | None = None
    ) -> AskUserQuestionAnswer:
        self._check()
        return await self.inner.submit(question_id, answer, answerer=answerer)

    async def dismiss(self, question_id: str, *, answerer: str | None = None) -> None:
        self._check()
        await self.inner.dismiss(question_id, answerer=answerer)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_relay_whose_store_is_down_is_503_and_the_stream_says_so() -> None:
    relay = FlakyRelay()
    assert isinstance(relay, RelayBackend)
    with provide(relay):
        async with WebServer(relay) as server, client(server) as http:
            asking = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE])))
            qid = await pending_id(relay.inner)
            relay.down = True
            async with http.stream("GET", "/api/events") as stream:
                said = await anext(sse(stream.aiter_lines()))
            assert said == Sse(
                "unavailable", {"code": "RELAY_UNAVAILABLE", "message": "the store is down"}
            )
            for response in (
                await http.get("/api/questions"),
                await http.post(f"/api/questions/{qid}/answer", json={"answers": []}),
                await http.post(f"/api/questions/{qid}/cancel"),
            ):
                assert response.status_code == 503
                assert response.json() == {
                    "error": {"code": "RELAY_UNAVAILABLE", "message": "the store is down"}
                }
            relay.down = False
            assert [q.id for q in relay.inner.pending()] == [qid]  # nothing was settled
            assert (await http.post(f"/api/questions/{qid}/cancel")).status_code == 204
            with pytest.raises(UserInteractionError):
                await asking
    await relay.aclose()


async def until(condition: Callable[[], bool], what: str) -> None:
    """Poll a counter the server keeps (there is no event to wait on), within a bound."""
    async with asyncio.timeout(20):
        while not condition():  # noqa: ASYNC110 - polls a counter, no event to wait on
            await asyncio.sleep(0.005)
    assert condition(), what


@pytest.mark.parametrize("method", ["GET", "HEAD"])
async def test_a_stream_whose_client_left_behind_a_pipelined_request_ends_at_once(
    method: str,
) -> None:
    """A second request pipelined behind the stream makes uvicorn stop reading; the client's
    close must still end the stream, without waiting for a keep-alive to fail."""
    async with served() as (_, server):
        app = server._app
        assert app is not None
        assert server._server is not None
        state = server._server.server_state
        clients = []
        head = (
            f"Host: 127.0.0.1:{server.port}\r\nAuthorization: Bearer {server.token}\r\n"
        ).encode()
        for _ in range(5):
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(f"{method} /api/events HTTP/1.1\r\n".encode() + head + b"\r\n")
            status = await reader.readuntil(b"\r\n\r\n")
            assert status.startswith(b"HTTP/1.1 200 ")
            writer.write(b"POST /api/ping HTTP/1.1\r\n" + head + b"Content-Length: 0\r\n\r\n")
            await writer.drain()
            clients.append(writer)
        if method == "HEAD":  # headers only: no stream was opened
            assert app._opened == 0
        else:
            await until(lambda: len(app._streams) == 5, "five open streams")
        for writer in clients:
            writer.close()
            await writer.wait_closed()
        await until(lambda: not (app._streams or state.tasks or state.connections), "nothing left")


async def test_head_on_the_event_stream_answers_its_headers_without_a_stream() -> None:
    async with served() as (_, server), client(server) as http:
        response = await http.head("/api/events")
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.content == b""
        assert server._app is not None
        assert server._app._opened == 0


async def test_a_resumed_stream_starts_with_retry_then_an_event_and_a_stale_one_a_snapshot() -> (
    None
):
    async with served() as (relay, server), client(server) as http:
        start = relay.position
        asking = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE])))
        qid = await pending_id(relay)
        for last, kind in ((start, "requested"), ("garbage", "snapshot")):
            async with http.stream("GET", "/api/events", headers={"Last-Event-ID": last}) as got:
                lines = aiter(got.aiter_lines())
                assert await anext(lines) == "retry: 1000"
                assert (await anext(lines)).startswith("id: ")
                assert await anext(lines) == f"event: {kind}"
        await http.post(f"/api/questions/{qid}/cancel")
        with pytest.raises(UserInteractionError):
            await asking


async def test_a_body_must_be_json_in_utf_8_with_numbers_python_can_read() -> None:
    async with served() as (relay, server), client(server) as http:
        asking = asyncio.create_task(ask(AskUserQuestionRequest([SINGLE])))
        qid = await pending_id(relay)
        url = f"/api/questions/{qid}/answer"
        good = '{"answers": [{"id": "pkg", "selected": ["npm"]}]}'
        for body, media, status, code, message in (
            (good.encode("utf-16"), "application/json", 400, "BAD_ANSWER", "not valid UTF-8"),
            (good.encode("utf-32"), "application/json", 400, "BAD_ANSWER", "not valid UTF-8"),
            (good.encode("utf-16-le"), None, 400, "BAD_ANSWER", "not valid JSON"),
            (good.encode(), "text/plain", 415, "UNSUPPORTED_MEDIA_TYPE", "application/json"),
            (good.encode(), "application/x-www-form-urlencoded", 415, "UNSUPPORTED_MEDIA_TYPE", ""),
            (good.encode(), "application/json; charset=utf-16", 415, "UNSUPPORTED_MEDIA_TYPE", ""),
        ):
            headers = {} if media is None else {"content-type": media}
            refused = await http.post(url, content=body, headers=headers)
            assert refused.status_code == status, (body[:8], media)
            assert refused.json()["error"]["code"] == code
            assert message in refused.json()["error"]["message"]
        digits = b'{"answers": [{"id": "pkg", "selected": [], "custom": ' + b"9" * 100_000 + b"}]}"
        refused = await http.post(url, content=digits)
        assert refused.status_code == 400
        assert refused.json()["error"] == {
            "code": "BAD_ANSWER",
            "message": "answer: holds an integer of more than 4300 digits",
        }
        assert [q.id for q in relay.pending()] == [qid]  # none of it settled anything
        long_text = '{"answers": [{"id": "pkg", "selected": [], "custom": "' + "9" * 5000 + '"}]}'
        headers = {"content-type": "application/json; charset=UTF-8"}
        taken = await http.post(url, content=long_text, headers=headers)
        assert taken.status_code == 200  # digits in a string are text, however many
    assert (await asking).answers == (AskUserQuestionAnswerItem("pkg", custom="9" * 5000),)


async def websocket_handshake(server: WebServer, extra: str) -> tuple[int, bytes]:
    """The status and body of a raw WebSocket handshake to ``/api/events``."""
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(
        (
            "GET /api/events HTTP/1.1\r\n"
            f"Host: 127.0.0.1:{server.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            f"{extra}\r\n"
        ).encode()
    )
    answer = await asyncio.wait_for(reader.read(), 20)
    writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body


async def test_a_websocket_handshake_meets_the_same_guard_and_finds_nothing() -> None:
    async with served() as (_, server):
        token = f"Authorization: Bearer {server.token}\r\n"
        for extra, status, code in (
            ("", 401, "UNAUTHORIZED"),
            (token + f"Origin: http://evil.example:{server.port}\r\n", 403, "BAD_ORIGIN"),
            (token, 404, "NOT_FOUND"),
        ):
            got, body = await websocket_handshake(server, extra)
            assert got == status
            assert json.loads(body)["error"]["code"] == code
