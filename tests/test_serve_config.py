"""``interaction serve --config FILE``: every flag has its key (derived from the parser),
the command line wins, and every fault is one line naming the key, exit status 2."""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from interaction import cli
from interaction._serve_config import ConfigError, config_keys, file_values

from .loopback import serve

ROOT = Path(__file__).parent.parent
ALICE = "alice-token-0123456789"
WAIT = 60


def serve_parser() -> argparse.ArgumentParser:
    return cli._parser()[1]["serve"]


def arguments(tmp_path: Path, text: str, *argv: str) -> argparse.Namespace:
    path = tmp_path / "interaction.toml"
    path.write_text(text, "utf-8")
    return cli._arguments(["serve", "--config", str(path), *argv])


def refusal(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, *argv: str) -> str:
    """The one line ``serve --config`` prints for ``text``, after exiting with status 2."""
    with pytest.raises(SystemExit) as exited:
        arguments(tmp_path, text, *argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err.removeprefix(f"interaction serve: {tmp_path / 'interaction.toml'}: ").strip()


# ---------------------------------------------------------------------- the keys


def test_every_serve_flag_has_a_key_named_after_it() -> None:
    keys = config_keys(serve_parser())
    flags = {  # each flag's first long name (a --no-X of --X is the same key's false)
        next(name for name in action.option_strings if name.startswith("--"))
        for action in serve_parser()._actions
        if set(action.option_strings).isdisjoint({"--help", "--config"})
    }
    assert {f"--{key.replace('_', '-')}" for key in keys} == flags
    assert keys["max_streams"].dest == "max_streams"
    assert keys["allow_host"].dest == "allow_host"
    assert "config" not in keys


def test_a_flag_any_parser_adds_gets_its_key_and_the_tables_map_onto_theirs() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--group", action="append", default=[])
    parser.add_argument("--user", action="append", default=[])
    parser.add_argument("--slack-user", action="append", default=[])
    parser.add_argument("--quorum", type=int)
    parser.add_argument("--ratio", type=float)
    parser.add_argument("--mode", choices=["a", "b"])
    parser.add_argument("--fast", action="store_true")
    parser.add_argument("--color", action=argparse.BooleanOptionalAction)
    parser.add_argument("--many", nargs="+")  # no key can stand for it
    stores = parser.add_mutually_exclusive_group()
    stores.add_argument("--redis")
    stores.add_argument("--postgres")
    data = {
        "slack_user": ["alice=U1"],
        "quorum": 2,
        "ratio": 1,
        "mode": "b",
        "fast": True,
        "color": False,
        "redis_env": "REDIS_URL",
        "user": ["carol"],
        "users": {"alice": {"token_env": "ALICE_TOKEN"}, "bob": {}},
        "groups": {"ops": ["alice", "bob"], "oncall": ["carol"]},
    }
    env = {"ALICE_TOKEN": ALICE, "REDIS_URL": "redis://:secret@db/0"}
    assert file_values(data, parser, env) == {
        "slack_user": ["alice=U1"],
        "quorum": 2,
        "ratio": 1.0,
        "mode": "b",
        "fast": True,
        "color": False,
        "redis": "redis://:secret@db/0",
        "user": ["carol", "alice=ALICE_TOKEN", "bob"],
        "group": ["ops=alice,bob", "oncall=carol"],
    }
    assert "many" not in config_keys(parser)
    with pytest.raises(ConfigError, match=r"^redis, postgres: give one of them$"):
        file_values({"redis": "redis://db/0", "postgres": "postgresql://db/app"}, parser, {})
    with pytest.raises(ConfigError, match=r"^redis_env: give redis or redis_env, not both$"):
        file_values({"redis": "redis://db/0", "redis_env": "REDIS_URL"}, parser, env)


def test_without_a_group_flag_the_groups_table_is_an_unknown_key() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--user", action="append", default=[])
    with pytest.raises(ConfigError, match=r"^groups: unknown key"):
        file_values({"groups": {"ops": ["alice"]}}, parser, {})


# ---------------------------------------------------------------------- the command line wins


def test_the_file_gives_each_flag_the_command_line_did_not(tmp_path: Path) -> None:
    text = """
        host = "0.0.0.0"
        port = 9000
        allow_host = ["desk.example.com", "desk2.example.com:8443"]
        public_url = "https://desk.example.com"
        max_streams = 8
        request_timeout = 5
        migrate = true
        postgres_env = "DESK_DATABASE"
        trusted_proxy = ["10.0.0.0/24"]
        user_header = "X-Forwarded-Email"
        notify = ["webhook=https://hooks.example.com/desk"]
        [users.alice]
        token_env = "ALICE_TOKEN"
        [users.bob]
    """
    os.environ["ALICE_TOKEN"] = ALICE
    os.environ["DESK_DATABASE"] = "postgresql://desk@db.internal/desk"
    try:
        args = arguments(tmp_path, text)
        overridden = arguments(
            tmp_path, text, "--port", "0", "--allow-host", "other.example.com", "--redis", "r://"
        )
    finally:
        del os.environ["ALICE_TOKEN"], os.environ["DESK_DATABASE"]
    assert (args.host, args.port, args.max_streams, args.request_timeout) == (
        "0.0.0.0",
        9000,
        8,
        5.0,
    )
    assert args.allow_host == ["desk.example.com", "desk2.example.com:8443"]
    assert (args.migrate, args.public_url) == (True, "https://desk.example.com")
    assert args.postgres == "postgresql://desk@db.internal/desk"
    assert (args.trusted_proxy, args.user_header) == (["10.0.0.0/24"], "X-Forwarded-Email")
    assert args.user == ["alice=ALICE_TOKEN", "bob"]
    assert args.max_connections is None  # neither gave it: the flag's default
    # A flag on the command line replaces its key; a repeatable one replaces the array;
    # one of a mutually exclusive group drops the file's others.
    assert (overridden.port, overridden.allow_host) == (0, ["other.example.com"])
    assert (overridden.redis, overridden.postgres) == ("r://", None)
    assert overridden.host == "0.0.0.0"


BAD_FILES = [
    ("prot = 1", "prot: unknown key (did you mean port?)"),
    ("config = 'other.toml'", "config: unknown key"),
    ("port = '8765'", "port: must be an integer, got a string"),
    ("port = true", "port: must be an integer, got a boolean"),
    ("request_timeout = 'soon'", "request_timeout: must be a number, got a string"),
    ("migrate = 'yes'", "migrate: must be true or false, got a string"),
    ("allow_host = 'desk.example.com'", "allow_host: must be an array, got a string"),
    ("allow_host = ['a', 2]", "allow_host[1]: must be a string, got an integer"),
    ("public_url = 1979-05-27", "public_url: must be a string, got a date or time"),
    (
        "[users.alice]\ntoken_env = 'NO_SUCH_VARIABLE_43'",
        ("users.alice.token_env: $NO_SUCH_VARIABLE_43 is not set"),
    ),
    (
        "[users.alice]\ntoken_env = '1BAD'",
        ("users.alice.token_env: '1BAD' is not the name of an environment variable"),
    ),
    (
        "[users.alice]\ntoken = 'alice-token-0123456789'",
        (
            "users.alice.token: a secret is never written in the file: name the environment"
            " variable that holds it (token_env for a user's token)"
        ),
    ),
    ("[users.alice]\ncolour = 'red'", "users.alice.colour: unknown key"),
    ("users = ['alice']", "users: must be a table of users ([users.NAME]), got an array"),
    (
        "api_key = 'abc'",
        (
            "api_key: a secret is never written in the file: name the environment variable"
            " that holds it (token_env for a user's token)"
        ),
    ),
    (
        "redis = 'redis://:hunter2@db:6379/0'",
        (
            "redis: a password is never written in the file: name the environment variable"
            " that holds the value with redis_env"
        ),
    ),
    ("redis_env = 'NO_SUCH_VARIABLE_43'", "redis_env: $NO_SUCH_VARIABLE_43 is not set"),
    (
        "redis = 'redis://db/0'\npostgres = 'postgresql://db/app'",
        ("redis, postgres: give one of them"),
    ),
    ("host = 'a'\nport = = 1\n", "not TOML: Invalid value (at line 2, column 8)"),
]


@pytest.mark.parametrize(("text", "message"), BAD_FILES, ids=[m for _, m in BAD_FILES])
def test_a_bad_file_is_one_line_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    said = refusal(tmp_path, capsys, text)
    assert said == message
    assert "hunter2" not in said
    assert ALICE not in said


def test_a_file_that_cannot_be_read_or_is_too_large_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.toml"
    with pytest.raises(SystemExit):
        cli._arguments(["serve", "--config", str(missing)])
    err = capsys.readouterr().err
    assert err == f"interaction serve: {missing}: cannot read it: No such file or directory\n"
    assert refusal(tmp_path, capsys, "# " + "x" * (1 << 20)) == "larger than 1048576 bytes"
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b"public_url = '\xe9'\n")
    with pytest.raises(SystemExit):
        cli._arguments(["serve", "--config", str(latin)])
    assert capsys.readouterr().err == f"interaction serve: {latin}: not UTF-8 text\n"


# ---------------------------------------------------------------------- any value


TOML_VALUES = st.recursive(
    st.none().map(lambda _: datetime.date(1979, 5, 27))
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
KEYS = sorted(config_keys(serve_parser()))


def command_line(key: str, action: argparse.Action, value: object) -> list[str]:
    """The flags that give ``value`` on the command line."""
    flag = f"--{key.replace('_', '-')}"
    if isinstance(value, bool):
        return [flag] if value else []
    items = value if isinstance(value, list) else [value]
    return [f"{flag}={item}" for item in items]


@given(key=st.sampled_from(KEYS), value=TOML_VALUES)
def test_any_value_is_the_command_lines_or_one_line_naming_the_key(key: str, value: Any) -> None:
    parser = serve_parser()
    action = config_keys(parser)[key]
    try:
        given_ = file_values({key: value}, parser, {})
    except ConfigError as exc:
        message = str(exc)
        assert re.match(rf"{key}(\[\d+\])?: ", message), message
        assert "\n" not in message
        return
    parsed = vars(parser.parse_args(command_line(key, action, value)))
    if value is False:  # a flag turned off is the flag's default
        assert given_ == {action.dest: False}
        assert parsed[action.dest] is False
        return
    assert given_ == {action.dest: parsed[action.dest]}


@given(
    name=st.text(min_size=1, max_size=12),
    table=st.dictionaries(st.text(max_size=12), TOML_VALUES, max_size=3),
)
def test_any_user_table_is_a_user_or_one_line_naming_the_key(
    name: str, table: dict[str, Any]
) -> None:
    try:
        given_ = file_values({"users": {name: table}}, serve_parser(), {"ALICE_TOKEN": ALICE})
    except ConfigError as exc:
        message = str(exc)
        assert message.startswith(f"users.{name}"), message
        assert ALICE not in message
        return
    assert set(table) <= {"token_env"}
    assert given_ == {"user": [f"{name}={table['token_env']}" if table else name]}


# ---------------------------------------------------------------------- a real serve


async def test_serve_takes_its_flags_from_the_file_and_the_command_line_wins(
    tmp_path: Path,
) -> None:
    config = tmp_path / "interaction.toml"
    config.write_text(
        'port = 1\nmax_streams = 4\n[users.alice]\ntoken_env = "ALICE_TOKEN"\n[users.bob]\n'
    )
    pipe = subprocess.PIPE
    env = {**os.environ, "ALICE_TOKEN": ALICE}
    async with serve(  # --port 0 on the command line: the file's port 1 is not used
        "--config", str(config), stdout=pipe, stderr=pipe, env=env, number=signal.SIGTERM
    ) as child:
        assert child.stderr is not None
        async with asyncio.timeout(WAIT):
            alice_line = (await child.stderr.readline()).decode()
            bob_line = (await child.stderr.readline()).decode()
        base = alice_line.removeprefix("interaction: alice answers at ").split("/#")[0]
        assert alice_line == f"interaction: alice answers at {base}/#token=$ALICE_TOKEN\n"
        assert bob_line.startswith(f"interaction: bob answers at {base}/#token=")
        assert not base.endswith(":1")
        async with httpx.AsyncClient(base_url=base, timeout=WAIT) as http:
            me = await http.get("/api/me", headers={"Authorization": f"Bearer {ALICE}"})
            nobody = await http.get("/api/me")
        assert me.json() == {"user": "alice", "question": None}
        assert nobody.status_code == 401
        child.send_signal(signal.SIGINT)
        async with asyncio.timeout(WAIT):
            out, err = await child.communicate()
        assert child.returncode == 0, err
    assert ALICE.encode() not in out + err


def test_serve_with_a_missing_variable_exits_2_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "interaction.toml"
    config.write_text('[users.alice]\ntoken_env = "ALICE_TOKEN"\n')
    env = {key: value for key, value in os.environ.items() if key != "ALICE_TOKEN"}
    result = subprocess.run(
        [sys.executable, "-m", "interaction", "serve", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
        env=env,
    )
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        f"interaction serve: {config}: users.alice.token_env: $ALICE_TOKEN is not set\n"
    )


# ---------------------------------------------------------------------- docs/deploy.md


def test_the_deploy_pages_file_is_a_config_serve_takes() -> None:
    page = (ROOT / "docs" / "deploy.md").read_text("utf-8")
    (text,) = re.findall(r"^```toml\n(.*?)^```$", page, re.MULTILINE | re.DOTALL)
    import tomllib

    data = tomllib.loads(text)
    variables = re.findall(r'_env = "([A-Z_]+)"', text)
    env = {name: f"{name.lower().replace('_', '-')}-0123456789" for name in variables}
    values = file_values(data, serve_parser(), env)
    assert values["trusted_proxy"] == ["10.0.0.5"]
    assert values["user_header"] == "X-Forwarded-Email"
    assert values["public_url"] == "https://desk.example.com"
    assert values["redis"] == env["DESK_REDIS_URL"]
    assert values["user"] == ["alice@example.com", "bob@example.com", "deploy-bot=DEPLOY_BOT_TOKEN"]
    assert (values["host"], values["port"], values["max_streams"]) == ("0.0.0.0", 8765, 128)
