"""What a newcomer met on the command line, each fixed: a closed pipe, an unknown flag,
each command's own help, one wording for every bad --timeout, bad --allow-host and
--prefix, a URL that works from serve --host 0.0.0.0, and ask --redis."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser

from interaction import AskUserQuestionAnswer, AskUserQuestionAnswerItem
from interaction.redis import RedisRelay

from .loopback import running, serve
from .notify_helpers import WAIT
from .redis_server import RedisServer, redis_server

__all__ = ["redis_server"]  # a fixture


def run(*args: str, typed: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "interaction", *args],
        input=typed,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )


def test_a_closed_pipe_ends_quietly() -> None:
    command = f"{sys.executable} -m interaction schema tool | head -c 100"
    result = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {command}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert len(result.stdout) == 100
    assert result.stderr == ""  # no BrokenPipeError traceback


@pytest.mark.parametrize(
    ("args", "usage", "error"),
    [
        (
            ["--bogus"],
            "usage: interaction [-h]",
            "interaction: error: unrecognized arguments: --bogus",
        ),
        (
            ["ask", "--bogus"],
            "usage: interaction ask [-h]",
            "interaction ask: error: unrecognized arguments: --bogus",
        ),
        (
            ["serve", "--prefix", "p"],
            "usage: interaction serve [-h]",
            "interaction serve: error: --prefix needs --redis (it names the Redis keys)",
        ),
        (
            ["ask", "r.json", "--prefix", "p"],
            "usage: interaction ask [-h]",
            "interaction ask: error: --prefix needs --redis (it names the Redis keys)",
        ),
        (
            ["serve", "--allow-host", "bad host!!"],
            "usage: interaction serve [-h]",
            "interaction serve: error: --allow-host 'bad host!!' is not a host name,"
            " an address or HOST:PORT",
        ),
        ([], "usage: interaction [-h]", "name a command: demo, ask, serve or schema"),
    ],
)
def test_a_bad_flag_is_named_with_its_commands_usage(
    args: list[str], usage: str, error: str
) -> None:
    result = run(*args)
    assert result.returncode == 2
    assert result.stderr.startswith(usage)
    assert error in result.stderr.splitlines()[-1]


@pytest.mark.parametrize(
    ("command", "statuses"),
    [
        ("ask", ["0  answered", "1  not answered", "2  bad input"]),
        ("demo", ["0  answered", "1  not answered", "2  bad input"]),
        ("serve", ["0  stopped (Ctrl-C or SIGTERM)", "2  bad input"]),
        ("schema", ["0  printed", "2  bad input"]),
    ],
)
def test_each_command_lists_its_own_exit_statuses(command: str, statuses: list[str]) -> None:
    shown = run(command, "--help").stdout
    listed = shown.split("exit status:\n", 1)[1]
    codes = [line.strip()[0] for line in listed.splitlines() if line.strip()[:1].isdigit()]
    assert codes == [status[0] for status in statuses]
    for status in statuses:
        assert f"  {status}" in listed
    if command in {"serve", "schema"}:
        assert "not answered" not in listed


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "-inf", "1e300"])
def test_every_bad_timeout_gets_one_wording(value: str, tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"questions": [{"id": "a", "question": "?"}]}))
    result = run("ask", str(path), f"--timeout={value}")
    assert result.returncode == 2
    shown = f"{float(value):g}"
    assert result.stderr == (
        "interaction: --timeout must be a positive number of seconds up to 9223372036,"
        f" got {shown} (BAD_REQUEST)\n"
    )


def test_ask_redis_on_a_store_that_cannot_be_used_is_one_line_before_any_wait(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"questions": [{"id": "a", "question": "?"}]}))
    result = run("ask", str(path), "--redis", "redis://user:secret@127.0.0.1:1/0")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith("interaction: the relay's store at 127.0.0.1:1 cannot be used")
    assert result.stderr.endswith(" (RELAY_UNAVAILABLE)\n")
    assert result.stderr.count("\n") == 1  # not "the question waits on the page" first
    assert "secret" not in result.stderr


async def test_serve_on_every_address_prints_a_url_that_answers() -> None:
    async with serve(
        "--host", "0.0.0.0", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    ) as child:
        try:
            assert child.stderr is not None
            async with asyncio.timeout(WAIT):
                first = (await child.stderr.readline()).decode().strip()
                hint = (await child.stderr.readline()).decode().strip()
            url = first.removeprefix("interaction: answer at ")
            assert url.startswith("http://127.0.0.1:")
            assert hint == (
                "interaction: other machines reach it only by a name it allows:"
                " add --allow-host NAME[:PORT] (or --public-url URL behind a proxy)"
            )
            async with httpx.AsyncClient() as http:
                assert (await http.get(url)).status_code == 200
                port = url.split(":")[2].split("/")[0]
                other = await http.get(url, headers={"Host": f"box.example:{port}"})
                assert other.status_code == 421
                assert "--allow-host NAME[:PORT]" in other.json()["error"]["message"]
        finally:
            child.send_signal(signal.SIGINT)
            async with asyncio.timeout(WAIT):
                await child.wait()


async def test_ask_redis_puts_the_question_on_the_shared_page(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    prefix = "cli-" + os.urandom(4).hex()
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"questions": [{"id": "go", "question": "Deploy?"}]}))
    page = RedisRelay(redis_server.url, prefix=prefix)
    await page.connect()
    events = page.events((await page.snapshot()).position)
    argv = (
        "ask",
        str(path),
        "--redis",
        redis_server.url,
        "--prefix",
        prefix,
        "--source",
        "nightly",
    )
    async with running(
        sys.executable, "-m", "interaction", *argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as child:
        try:
            async with asyncio.timeout(WAIT):
                async for event in events:
                    if event.question is not None:
                        break
            assert event.question is not None
            provenance = event.question.request.provenance
            assert provenance is not None
            assert provenance.source == "nightly"
            await page.submit(
                event.id, AskUserQuestionAnswer([AskUserQuestionAnswerItem("go", custom="yes")])
            )
            async with asyncio.timeout(WAIT):
                out, err = await child.communicate()
            assert child.returncode == 0, err
            assert out.decode() == '{"answers":[{"id":"go","selected":[],"custom":"yes"}]}\n'
        finally:
            await events.aclose()
            await page.aclose()


@pytest.mark.parametrize("shared", [False, True], ids=["demo", "redis"])
async def test_ctrl_c_with_a_page_open_stops_without_a_traceback(
    browser: Browser, redis_server: RedisServer, shared: bool
) -> None:
    store = ["--redis", redis_server.url, "--prefix", "cc-" + os.urandom(4).hex()] if shared else []
    async with serve(*store, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as child:
        assert child.stderr is not None
        async with asyncio.timeout(WAIT):
            url = (await child.stderr.readline()).decode().split(" at ", 1)[1].strip()
        page = await browser.new_page()
        try:
            await page.goto(url)
            await page.get_by_test_id("status").get_by_text("connected").wait_for()
            child.send_signal(signal.SIGINT)
            async with asyncio.timeout(WAIT):
                rest = (await child.stderr.read()).decode()
                await child.wait()
            await page.get_by_test_id("stopped").wait_for()  # the page was told, too
        finally:
            await page.close()
    assert child.returncode == 0
    assert rest == ""  # no "Exception in ASGI application", no CancelledError traceback
