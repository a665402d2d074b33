"""``interaction push keys`` and ``serve --push``: the private key written once, mode
0600, and never printed; a bad push setup one clear line at start; the page offered the
public key that matches the private one in the environment."""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from interaction._push_cli import push_setup
from interaction.notify import PushNotifier, VapidKeys
from interaction.postgres import PostgresPushSubscriptionStore
from interaction.push import MemoryPushSubscriptionStore
from interaction.redis import RedisPushSubscriptionStore

from . import loopback
from .notify_helpers import WAIT
from .push_helpers import Device


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("INTERACTION_")}
    return subprocess.run(
        [sys.executable, "-m", "interaction", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**clean, **(env or {})},
    )


def test_push_keys_writes_the_private_key_once_mode_0600_and_prints_only_the_public_one(
    tmp_path: Path,
) -> None:
    out = tmp_path / "vapid.key"
    made = run("push", "keys", "--out", str(out))
    assert made.returncode == 0, made.stderr
    private = out.read_text().strip()
    keys = VapidKeys.from_private(private)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert made.stdout == (
        f"public key: {keys.public}\n"
        f"the private key is in {out}; give it to the server as:\n"
        f'  export INTERACTION_VAPID_PRIVATE_KEY="$(cat {out})"\n'
    )
    assert private not in made.stdout + made.stderr
    again = run("push", "keys", "--out", str(out))
    assert again.returncode == 2
    assert again.stderr == (
        f"interaction: {out} exists: keys are made once (remove it to make new ones, and"
        " every device subscribes again)\n"
    )
    assert out.read_text().strip() == private  # untouched
    nowhere = run("push", "keys", "--out", str(tmp_path / "no" / "such" / "dir"))
    assert nowhere.returncode == 2
    assert nowhere.stderr.startswith("interaction: cannot write ")
    assert nowhere.stderr.count("\n") == 1


def test_push_keys_needs_out_the_private_key_is_never_printed() -> None:
    result = run("push", "keys")
    assert result.returncode == 2
    assert "the following arguments are required: --out" in result.stderr
    assert result.stdout == ""


KEY = VapidKeys.generate()


@pytest.mark.parametrize(
    ("args", "env", "line"),
    [
        (
            ["--push", "mailto:ops@example.org"],
            {},
            "--push needs INTERACTION_VAPID_PRIVATE_KEY in the environment (make the keys once"
            " with: interaction push keys --out PATH)",
        ),
        (
            ["--push", "mailto:ops@example.org"],
            {"INTERACTION_VAPID_PRIVATE_KEY": "c2hvcnQ"},
            "the VAPID private key is not 32 bytes of base64url (make one with: interaction"
            " push keys --out PATH)",
        ),
        (
            ["--push", "ops@example.org"],
            {"INTERACTION_VAPID_PRIVATE_KEY": KEY.private},
            "--push 'ops@example.org': the VAPID subject is a mailto: or https: URL (your contact)",
        ),
        (["--push-private"], {}, "--push-private needs --push SUBJECT"),
    ],
)
def test_a_bad_push_setup_is_one_clear_line_at_start(
    args: list[str], env: dict[str, str], line: str
) -> None:
    result = run("serve", "--port", "0", *args, env=env)
    assert result.returncode == 2
    assert result.stderr == f"interaction: {line}\n"
    assert KEY.private not in result.stderr


async def test_serve_push_offers_the_public_key_and_keeps_a_devices_subscription() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERACTION_")}
    env["INTERACTION_VAPID_PRIVATE_KEY"] = KEY.private
    async with loopback.serve(
        "--push",
        "mailto:ops@example.org",
        "--push-private",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    ) as child:
        try:
            assert child.stderr is not None
            async with asyncio.timeout(WAIT):
                first = (await child.stderr.readline()).decode()
            url = first.removeprefix("interaction: answer at ").strip()
            base, _, token = url.partition("/#token=")
            auth = {"Authorization": f"Bearer {token}"}
            async with httpx.AsyncClient(base_url=base, headers=auth) as http:
                assert (await http.get("/api/push")).json() == {"publicKey": KEY.public}
                phone = Device("phone", "https://push.example.net/send/phone").as_browser_json()
                assert (await http.post("/api/push/subscribe", json=phone)).status_code == 201
        finally:
            child.send_signal(signal.SIGINT)
            async with asyncio.timeout(WAIT):
                rest = (await child.stderr.read()).decode() if child.stderr else ""
                await child.wait()
    assert KEY.private not in first + rest
    assert "Traceback" not in rest


async def test_serve_keeps_subscriptions_beside_the_relays_questions() -> None:
    setup = push_setup(
        "mailto:ops@example.org", True, {"INTERACTION_VAPID_PRIVATE_KEY": KEY.private}
    )
    assert setup is not None
    redis = setup.store("team", "desk", redis_url="redis://127.0.0.1:1/0")
    assert isinstance(redis, RedisPushSubscriptionStore)
    assert redis.hash == "team:push"
    await redis.aclose()
    postgres = setup.store("team", "desk", postgres_url="postgresql://app@127.0.0.1:1/app")
    assert isinstance(postgres, PostgresPushSubscriptionStore)
    assert postgres.table == "desk.push_subscriptions"
    memory = setup.store("team", "desk")
    assert isinstance(memory, MemoryPushSubscriptionStore)
    offer, step = setup.parts(memory)
    assert (offer.store, offer.public_key, offer.allow_http_loopback) == (memory, KEY.public, False)
    assert isinstance(step.notifier, PushNotifier)
    assert (step.notifier.private, step.notifier.subject, step.after) == (
        True,
        "mailto:ops@example.org",
        0.0,
    )
