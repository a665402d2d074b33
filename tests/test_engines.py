"""One engine per deployment (issue 46): ``--redis URL`` or ``--postgres URL`` puts every
store there. ``engine_stores`` builds the relay, the rules, the audit log, the spent states
and the used links on one engine, under one prefix or schema; ``interaction serve``
shows that engine's rules; ``interaction rules`` and ``interaction log`` read and write
PostgreSQL as they do Redis and files."""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Literal

import httpx
import pytest

from interaction import UserInteractionError
from interaction._engines import Engine, EngineStores, engine_relay, engine_stores
from interaction.audit import verify
from interaction.policies import Rule, new_rule
from interaction.postgres import (
    PostgresAuditLog,
    PostgresRelay,
    PostgresRuleStore,
    PostgresSpentStore,
    PostgresUsedLinks,
)
from interaction.redis import (
    RedisAuditLog,
    RedisRelay,
    RedisRuleStore,
    RedisSpentStore,
    RedisUsedLinks,
)
from interaction.signing import LINK_REFUSED, AnswerLinks

from .loopback import ANSWER_AT, announced, serve
from .postgres_server import PostgresServer, postgres_server
from .redis_server import RedisServer, redis_server

__all__ = ["postgres_server", "redis_server"]  # fixtures

KEY = b"a-test-key-of-32-bytes-----------"
ENV = {**os.environ, "INTERACTION_RULES_KEY": KEY.decode()}
WAIT = 60.0
ENGINES: tuple[Literal["postgres", "redis"], ...] = ("postgres", "redis")
KINDS: dict[str, tuple[type, ...]] = {
    "redis": (RedisRelay, RedisRuleStore, RedisAuditLog, RedisSpentStore, RedisUsedLinks),
    "postgres": (
        PostgresRelay,
        PostgresRuleStore,
        PostgresAuditLog,
        PostgresSpentStore,
        PostgresUsedLinks,
    ),
}


def url_of(kind: str, request: pytest.FixtureRequest) -> str:
    server: RedisServer | PostgresServer = request.getfixturevalue(f"{kind}_server")
    return server.url


@pytest.fixture(params=ENGINES)
async def stores(request: pytest.FixtureRequest) -> AsyncIterator[EngineStores]:
    kind = request.param
    made = engine_stores(
        Engine(kind, url_of(kind, request), f"t{secrets.token_hex(6)}"), rules_key=KEY
    )
    await made.migrate()
    yield made
    await made.aclose()


async def cli(*args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "interaction", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=ENV,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_every_store_is_on_the_named_engine(stores: EngineStores) -> None:
    kind = stores.engine.kind
    made = (stores.relay, stores.rules, stores.audit, stores.spent, stores.links)
    assert [type(store) for store in made] == list(KINDS[kind])
    # each works there, and a second deployment process on the engine sees it
    other = engine_stores(stores.engine, rules_key=KEY)
    try:
        assert stores.rules is not None
        assert other.rules is not None
        await stores.rules.add(rule := _rule())
        assert [r.id for r in await other.rules.rules()] == [rule.id]
        await stores.audit.append({"n": 1})
        lines = await other.audit.read_all()
        assert verify(lines)[:2] == ([], 1)
        assert await stores.spent.spend("n1", time.time() + 60) is True
        assert await other.spent.spend("n1", time.time() + 60) is False
        here = AnswerLinks(KEY, used=stores.links)
        there = AnswerLinks(KEY, used=other.links)
        token = here.token("q-1")
        assert await here.aredeem(token) == "q-1"
        with pytest.raises(UserInteractionError) as caught:
            await there.aredeem(token)
        assert (caught.value.code, caught.value.message) == (
            LINK_REFUSED,
            "this answer link was already used",
        )
        question = await other.relay.snapshot()
        assert question.questions == ()
    finally:
        await other.aclose()


def _rule() -> Rule:
    return new_rule("Bash(npm test:*)", "allow", created_by="test")


def test_without_a_rules_key_there_is_no_shared_rule_store() -> None:
    made = engine_stores(Engine("redis", "redis://127.0.0.1:1/0"))
    assert made.rules is None
    assert isinstance(made.spent, RedisSpentStore)
    assert isinstance(made.links, RedisUsedLinks)
    assert (made.spent.prefix, made.links.prefix) == (
        "interaction:mcp:spent",
        "interaction:links:used",
    )


@pytest.mark.parametrize(
    ("engine", "message"),
    [
        (
            Engine("redis", "https://user:secret@cache:6379"),
            "--redis 'https://user:***@cache:6379' is not a Redis URL: use"
            " redis://HOST:PORT/DB, rediss://HOST:PORT/DB or unix:///PATH",
        ),
        (
            Engine("postgres", "password=secret nonsense"),
            "--postgres is not a PostgreSQL URL or connection string:"
            " use postgresql://USER@HOST:PORT/DB",
        ),
        (
            Engine("postgres", "postgresql://db/app", "Bad-Schema"),
            "--schema: the schema must be a lower-case SQL name (a-z, 0-9, _; up to 40):"
            " 'Bad-Schema'",
        ),
    ],
)
def test_a_bad_url_or_space_names_its_flag_and_never_the_password(
    engine: Engine, message: str
) -> None:
    for build in (engine_stores, engine_relay):
        with pytest.raises(ValueError, match=re.escape(message)) as caught:
            build(engine)
        assert str(caught.value) == message
        assert "secret" not in str(caught.value)


async def test_rules_and_log_on_postgres_work_as_on_redis(stores: EngineStores) -> None:
    flag, space = f"--{stores.engine.kind}", stores.engine.space
    where = (flag, stores.engine.url, stores.engine.space_flag, space)
    status, out, err = await cli("rules", "add", "Bash(npm test:*)", *where)
    assert (status, err) == (0, "")
    status, out, err = await cli("rules", "list", "--json", *where)
    assert (status, err) == (0, "")
    listed = [json.loads(line) for line in out.splitlines()]
    assert [(r["tool"], r["pattern"], r["effect"]) for r in listed] == [
        ("Bash", "npm test:*", "allow")
    ]
    status, _, err = await cli("rules", "revoke", listed[0]["id"], *where)
    assert (status, err) == (0, "")
    status, out, _ = await cli("rules", "list", "--json", *where)
    assert (status, out) == (0, "")
    for n in range(3):
        await stores.audit.append({"n": n})
    status, out, err = await cli("log", *where, "--verify")
    assert (status, out.split(",")[0], err) == (0, "ok: 3 records", "")
    status, out, _ = await cli("log", *where, "--json")
    assert [json.loads(line)["n"] for line in out.splitlines()] == [0, 1, 2]


async def test_the_command_refuses_two_engines() -> None:
    both = ("--redis", "redis://127.0.0.1:1/0", "--postgres", "postgresql://127.0.0.1:1/db")
    assert await cli("rules", "list", *both) == (
        2,
        "",
        "interaction: name one engine: --redis URL or --postgres URL\n",
    )
    env = {k: v for k, v in ENV.items() if k != "INTERACTION_RULES_KEY"}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "interaction", "rules", "list", "--postgres", "postgresql://x/db",
        stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    _, said = await process.communicate()
    assert (process.returncode, said.decode()) == (
        2,
        "interaction: --postgres needs the rules key in $INTERACTION_RULES_KEY\n",
    )


async def test_serve_on_an_engine_shows_the_rules_kept_there(
    request: pytest.FixtureRequest,
) -> None:
    for kind in ENGINES:
        engine = Engine(kind, url_of(kind, request), f"t{secrets.token_hex(6)}")
        where = (engine.flag, engine.url, engine.space_flag, engine.space)
        migrate = ("--migrate",) if kind == "postgres" else ()
        async with serve(
            *where, *migrate, stderr=asyncio.subprocess.PIPE, env=ENV, number=signal.SIGTERM
        ) as child:
            page = await announced(child.stderr, ANSWER_AT, WAIT)
            base, _, token = page.partition("/#token=")
            status, _, err = await cli("rules", "add", "Bash(ls:*)", *where)
            assert (status, err) == (0, "")
            async with httpx.AsyncClient(
                base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=WAIT
            ) as http:
                response = await http.get("/api/rules")
            assert response.status_code == 200, kind
            rules = response.json()["rules"]
            assert [(r["tool"], r["pattern"]) for r in rules] == [("Bash", "ls:*")], kind


async def test_a_rules_file_named_beside_an_engine_is_the_one_the_page_shows(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """``--rules PATH`` names the page's rules explicitly: it wins over the engine's."""
    engine = Engine("redis", url_of("redis", request), f"t{secrets.token_hex(6)}")
    where = (engine.flag, engine.url, engine.space_flag, engine.space)
    rules = tmp_path / "rules.json"
    assert (await cli("rules", "add", "Read(src/**)", "--store", str(rules)))[0] == 0
    assert (await cli("rules", "add", "Bash(ls:*)", *where))[0] == 0
    async with serve(
        *where, "--rules", str(rules), stderr=asyncio.subprocess.PIPE, env=ENV,
        number=signal.SIGTERM,
    ) as child:  # fmt: skip
        page = await announced(child.stderr, ANSWER_AT, WAIT)
        base, _, token = page.partition("/#token=")
        async with httpx.AsyncClient(
            base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=WAIT
        ) as http:
            response = await http.get("/api/rules")
    assert [(r["tool"], r["pattern"]) for r in response.json()["rules"]] == [("Read", "src/**")]
