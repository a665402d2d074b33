"""``interaction serve --notify ... --public-url ...``: configured at start with one clear
line, secrets from the environment and never printed, the webhook sent for real."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

import httpx
import pytest

from interaction.notify._config import parse_delay, steps_from_specs
from interaction.relay import Relay
from interaction.signing import SIGNATURE_HEADER, verify_webhook
from interaction.web import WebServer

from . import loopback
from .notify_helpers import WAIT, receiving

SECRET = "cli-webhook-secret-0123456789"
SLACK_URL = "https://hooks.slack.com/services/T0/B0/very-secret-token"


def serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("INTERACTION_")}
    return subprocess.run(
        [sys.executable, "-m", "interaction", "serve", "--port", "0", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**clean, **(env or {})},
    )


@pytest.mark.parametrize(
    ("args", "env", "line"),
    [
        (
            ["--notify", "pager=x"],
            {},
            "--notify 'pager': the kinds are webhook, email, slack, telegram",
        ),
        (
            ["--notify", "webhook=https://example.com/h"],
            {},
            "--notify webhook needs INTERACTION_WEBHOOK_SECRET in the environment",
        ),
        (
            ["--notify", "webhook=https://example.com/h"],
            {"INTERACTION_WEBHOOK_SECRET": "short"},
            "--notify webhook: a webhook secret must be at least 16 bytes long",
        ),
        (
            ["--notify", "webhook=ftp://example.com/h"],
            {"INTERACTION_WEBHOOK_SECRET": SECRET},
            "--notify webhook: a webhook URL is http:// or https:// with a host",
        ),
        (
            ["--notify", "slack"],
            {},
            "--notify slack (without =URL) needs INTERACTION_SLACK_WEBHOOK_URL in the environment",
        ),
        (
            ["--notify", "slack@soon"],
            {"INTERACTION_SLACK_WEBHOOK_URL": SLACK_URL},
            "--notify slack: 'soon' is not a delay (write 90s, 5m, 2h or 1d)",
        ),
        (
            ["--notify", "email=me@example.com"],
            {},
            "--notify email needs INTERACTION_SMTP_URL in the environment",
        ),
        (
            ["--notify", "email=me@example.com"],
            {"INTERACTION_SMTP_URL": "http://mail.example.com"},
            "--notify email: INTERACTION_SMTP_URL is smtp://[USER@]HOST[:PORT] or smtps://...",
        ),
        (
            ["--public-url", "ftp://answers.example.com"],
            {},
            "--public-url 'ftp://answers.example.com' is not a page address:"
            " use https://HOST[:PORT]",
        ),
    ],
)
def test_a_bad_channel_is_one_clear_line_at_start(
    args: list[str], env: dict[str, str], line: str
) -> None:
    result = serve(*args, env=env)
    assert result.returncode == 2
    assert result.stderr == f"interaction: {line}\n"
    for secret in (SECRET, SLACK_URL):
        assert secret not in result.stderr


def test_specs_become_steps_with_their_delays() -> None:
    env = {
        "INTERACTION_SLACK_WEBHOOK_URL": SLACK_URL,
        "INTERACTION_SMTP_URL": "smtps://bot%40x.org@mail.example.com:465",
        "INTERACTION_SMTP_PASSWORD": "pw",
        "INTERACTION_SMTP_FROM": "bot@x.org",
    }
    steps = steps_from_specs(["slack", "email@30m=a@x.org, b@x.org"], env)
    assert [(step.notifier.name, step.after) for step in steps] == [
        ("slack", 0.0),
        ("email via mail.example.com", 1800.0),
    ]
    mail = steps[1].notifier
    assert (mail.port, mail.use_tls, mail.to, mail.sender) == (  # type: ignore[attr-defined]
        465,
        True,
        ("a@x.org", "b@x.org"),
        "bot@x.org",
    )
    assert [parse_delay(t) for t in ("90", "90s", "5m", "2h", "1d")] == [90, 90, 300, 7200, 86400]


async def test_serve_notifies_a_webhook_with_a_link_under_the_public_url() -> None:
    async with receiving() as receiver:
        env = {k: v for k, v in os.environ.items() if not k.startswith("INTERACTION_")}
        env["INTERACTION_WEBHOOK_SECRET"] = SECRET
        async with loopback.serve(
            "--notify",
            f"webhook={receiver.url}",
            "--public-url",
            "https://answers.example.com/",
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        ) as child:
            try:
                assert child.stderr is not None
                async with asyncio.timeout(WAIT):
                    first = (await child.stderr.readline()).decode()
                assert first.startswith(
                    "interaction: answer at https://answers.example.com/#token="
                )
                call = await receiver.next_call()  # the demo's first question
                assert verify_webhook(SECRET, call.body, call.headers[SIGNATURE_HEADER])
                sent = call.json()
                assert sent["event"] == "pending"
                assert sent["link"].startswith("https://answers.example.com/link?t=v1.")
            finally:
                child.send_signal(signal.SIGINT)
                async with asyncio.timeout(WAIT):
                    rest = (await child.stderr.read()).decode() if child.stderr else ""
                    await child.wait()
    assert SECRET not in first + rest
    assert "Traceback" not in rest


async def test_behind_a_tls_proxy_the_public_host_and_origin_are_answered() -> None:
    relay = Relay()
    async with WebServer(relay, public_url="https://answers.example.com/") as server:
        assert server.url == f"https://answers.example.com/#token={server.token}"
        local = f"http://127.0.0.1:{server.port}"
        auth = {"Authorization": f"Bearer {server.token}"}
        async with httpx.AsyncClient(base_url=local, headers=auth) as http:
            # What a proxy that keeps Host sends for a page at https://answers.example.com
            proxied = {"Host": "answers.example.com", "Origin": "https://answers.example.com"}
            reply = await http.post("/api/ping", headers=proxied)
            assert reply.status_code == 204
            forged = {**proxied, "Origin": "https://evil.example.com"}
            assert (await http.post("/api/ping", headers=forged)).status_code == 403
            other = {"Host": "other.example.com"}
            assert (await http.post("/api/ping", headers=other)).status_code == 421
    relay.close()
