"""Sign-in behind an authenticating reverse proxy: a trusted proxy's header names the user;
the header from any other peer is refused. Tested with a real nginx, ``auth_basic`` standing
in for the identity provider."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from playwright.async_api import Browser

from interaction import (
    AskUserQuestionItem,
    AskUserQuestionRequest,
    ask,
    cli,
    permission_question,
    provide,
)
from interaction import AskUserQuestionOption as Option
from interaction.relay import Relay
from interaction.web import WebServer

from .loopback import LoopbackProcess, accepts, serve
from .web_helpers import sse

ALICE = "alice-token-0123456789"
BOB = "bob-token-abcdefghijkl"
HEADER = "X-Forwarded-Email"
PROXY = "127.0.0.2"  # the proxy's address; every other client here comes from 127.0.0.1
WAIT = 60
REQUEST = AskUserQuestionRequest([permission_question("Bash", "rm -rf build/", id="bash")])


def from_address(base: str, address: str, **headers: str) -> httpx.AsyncClient:
    """A client whose requests leave from ``address`` (a loopback address of the machine)."""
    transport = httpx.AsyncHTTPTransport(local_address=address)
    return httpx.AsyncClient(base_url=base, transport=transport, headers=headers, timeout=WAIT)


@asynccontextmanager
async def proxied_page(**options: Any) -> AsyncIterator[tuple[Relay, WebServer]]:
    relay = Relay()
    with provide(relay):
        server = WebServer(
            relay,
            users={"alice": ALICE, "bob": BOB},
            trusted_proxies=options.pop("trusted_proxies", [PROXY]),
            user_header=HEADER,
            **options,
        )
        async with server:
            try:
                yield relay, server
            finally:
                relay.close()


# ---------------------------------------------------------------------- the Python API


@pytest.mark.parametrize(
    "trusted", [[PROXY], ["127.0.0.0/30"], ["10.0.0.1", "::1", "127.0.0.2/32"]]
)
async def test_a_trusted_proxys_header_names_the_user(trusted: list[str]) -> None:
    async with proxied_page(trusted_proxies=trusted) as (_, server):
        async with from_address(server.base, PROXY, **{HEADER: "alice"}) as http:
            me = await http.get("/api/me")
            page = await http.get("/")
        async with from_address(server.base, PROXY, **{HEADER.lower(): "bob"}) as http:
            bob = await http.get("/api/me", headers={"Authorization": f"Bearer {ALICE}"})
    assert me.json() == {"user": "alice", "question": None}
    assert page.status_code == 200
    assert bob.json() == {"user": "bob", "question": None}  # the proxy's word, not a token


async def test_the_header_from_any_other_peer_is_refused_even_with_a_token() -> None:
    async with proxied_page() as (_, server):
        for headers in ({HEADER: "alice"}, {HEADER: "alice", "Authorization": f"Bearer {ALICE}"}):
            async with from_address(server.base, "127.0.0.1", **headers) as http:
                for path in ("/api/me", "/api/questions", "/"):
                    refused = await http.get(path)
                    assert refused.status_code == 401, path
                    assert refused.json()["error"] == {
                        "code": "UNAUTHORIZED",
                        "message": f"the {HEADER} header is taken from a trusted proxy only",
                    }
        # Without the header, a direct request signs in by token as before.
        async with from_address(server.base, "127.0.0.1", Authorization=f"Bearer {BOB}") as http:
            assert (await http.get("/api/me")).json() == {"user": "bob", "question": None}
        async with from_address(server.base, PROXY) as http:  # the proxy, naming nobody
            assert (await http.get("/api/me")).status_code == 401


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ([(HEADER, "mallory")], "the proxy names 'mallory', not a user of this server"),
        ([(HEADER, "Alice")], "the proxy names 'Alice', not a user of this server"),
        ([(HEADER, "")], "the proxy names '', not a user of this server"),
        ([(HEADER, "alice"), (HEADER, "bob")], "the proxy sent X-Forwarded-Email more than once"),
    ],
)
async def test_a_proxied_request_naming_no_one_user_is_refused(
    headers: list[tuple[str, str]], message: str
) -> None:
    async with proxied_page() as (_, server), from_address(server.base, PROXY) as http:
        refused = await http.get("/api/me", headers=headers)
    assert refused.status_code == 401
    assert refused.json()["error"] == {"code": "UNAUTHORIZED", "message": message}


async def test_an_answer_through_the_proxy_is_the_named_users() -> None:
    async with proxied_page() as (relay, server):
        subscription = relay.subscribe()
        task = asyncio.create_task(ask(REQUEST))
        question = ""
        async with asyncio.timeout(WAIT):
            async for event in subscription:
                if event.kind == "requested":
                    question = event.id
                    break
        subscription.close()
        async with from_address(server.base, PROXY, **{HEADER: "bob"}) as http:
            answer = {"answers": [{"id": "bash", "selected": ["Allow"]}]}
            answered = await http.post(f"/api/questions/{question}/answer", json=answer)
        assert answered.status_code == 200, answered.text
        assert (await task).answers[0].selected == ("Allow",)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"trusted_proxies": [PROXY]}, "trusted_proxies take the user from a header"),
        ({"user_header": HEADER}, "the user header needs a trusted proxy address"),
        ({"user_header": HEADER, "trusted_proxies": ["proxy.lan"]}, "'proxy.lan' is not an IP"),
        ({"user_header": "X Email", "trusted_proxies": [PROXY]}, "'X Email' is not a header"),
        ({"user_header": "Authorization", "trusted_proxies": [PROXY]}, "cannot be Authorization"),
        ({"user_header": HEADER, "trusted_proxies": [PROXY] * 65}, "at most 64 trusted proxies"),
    ],
)
def test_a_bad_proxy_setting_is_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        WebServer(Relay(), users={"alice": ALICE}, **options)
    with pytest.raises(ValueError, match="user_header names users: give users"):
        WebServer(Relay(), user_header=HEADER, trusted_proxies=[PROXY])


# ---------------------------------------------------------------------- a real nginx


def nginx_binary() -> str:
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")
    if found is None:
        pytest.fail("nginx is not installed (Debian package nginx; .ci/run installs it)")
    return found


class Nginx(LoopbackProcess):
    """nginx on loopback: ``auth_basic`` signs people in (the identity provider's part),
    and the request goes on to ``upstream`` from :data:`PROXY`, naming the user in the
    header."""

    START_SECONDS: ClassVar[float] = 30.0

    def __init__(self, root: Path, upstream: int, users: dict[str, str]) -> None:
        super().__init__()
        self.root, self.upstream = root, upstream
        self.htpasswd = root / "htpasswd"
        self.htpasswd.write_text("".join(f"{n}:{{PLAIN}}{p}\n" for n, p in users.items()))
        self.log = root / "error.log"

    @property
    def name(self) -> str:
        return "nginx"

    def details(self) -> str:
        return f": {self.log.read_text()[-2000:]}" if self.log.exists() else ""

    def spawn(self) -> subprocess.Popen[bytes]:
        root = self.root
        conf = root / "nginx.conf"
        conf.write_text(f"""
worker_processes 1;
pid {root}/nginx.pid;
error_log {self.log} warn;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {root}/body;
    proxy_temp_path {root}/proxy;
    fastcgi_temp_path {root}/fastcgi;
    uwsgi_temp_path {root}/uwsgi;
    scgi_temp_path {root}/scgi;
    server {{
        listen 127.0.0.1:{self.port};
        auth_basic "approval desk";
        auth_basic_user_file {self.htpasswd};
        location / {{
            proxy_pass http://127.0.0.1:{self.upstream};
            proxy_bind {PROXY};
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_set_header {HEADER} $remote_user;
            proxy_buffering off;
        }}
    }}
}}
""")
        # As root, the workers would run as nobody, who cannot read the test's directory.
        directives = "daemon off;" + (" user root;" if os.geteuid() == 0 else "")
        command = [nginx_binary(), "-p", str(root), "-c", str(conf), "-e", str(self.log)]
        return subprocess.Popen(
            [*command, "-g", directives], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    def ready(self) -> bool:
        return accepts(self.port)


async def first_question(http: httpx.AsyncClient) -> dict[str, Any]:
    """The first question pending on the page, from its event stream (no polling)."""
    async with http.stream("GET", "/api/events") as response:
        assert response.status_code == 200
        async for event in sse(response.aiter_lines()):
            if event.kind == "snapshot" and isinstance(event.data, dict):
                if event.data["questions"]:
                    return dict(event.data["questions"][0])
            elif event.kind == "requested" and isinstance(event.data, dict):
                return dict(event.data)
    raise AssertionError("the stream ended before a question came")


async def test_through_nginx_alice_is_signed_in_and_answers_and_a_forged_header_is_refused(
    tmp_path: Path,
) -> None:
    config = tmp_path / "interaction.toml"
    config.write_text(
        f'trusted_proxy = ["{PROXY}"]\nuser_header = "{HEADER}"\nallow_host = ["127.0.0.1"]\n'
        '[users.alice]\ntoken_env = "ALICE_TOKEN"\n[users.bob]\n'
    )
    pipe = subprocess.PIPE
    env = {**os.environ, "ALICE_TOKEN": ALICE}
    async with serve(
        "--config", str(config), stdout=pipe, stderr=pipe, env=env, number=signal.SIGTERM
    ) as child:
        assert child.stderr is not None
        assert child.stdout is not None
        async with asyncio.timeout(WAIT):
            alice_line = (await child.stderr.readline()).decode()
            bob_line = (await child.stderr.readline()).decode()
        base = alice_line.removeprefix("interaction: alice answers at ").split("/#")[0]
        assert alice_line == f"interaction: alice answers at {base}/#token=$ALICE_TOKEN\n"
        assert bob_line == f"interaction: bob signs in through the proxy at {base}\n"
        port = int(base.rsplit(":", 1)[1])
        users = {"alice": "alice-pw", "mallory": "mallory-pw"}
        nginx = Nginx(tmp_path, port, users)
        await asyncio.to_thread(nginx.start)
        try:
            front = f"http://127.0.0.1:{nginx.port}"
            alice = httpx.AsyncClient(base_url=front, auth=("alice", "alice-pw"), timeout=WAIT)
            async with alice:
                assert (await alice.get("/api/me")).json() == {"user": "alice", "question": None}
                page = await alice.get("/")
                assert page.status_code == 200
                assert 'id="who"' in page.text  # where the page says who is signed in
                question = await first_question(alice)
                answer = {
                    "answers": [
                        {"id": q["id"], "selected": []} for q in question["request"]["questions"]
                    ]
                }
                answered = await alice.post(f"/api/questions/{question['id']}/answer", json=answer)
                assert answered.status_code == 200, answered.text
                async with asyncio.timeout(WAIT):
                    assert json.loads(await child.stdout.readline()) == answer
            async with httpx.AsyncClient(base_url=front, timeout=WAIT) as anyone:
                wrong = await anyone.get("/api/me", auth=("alice", "guess"))
                assert wrong.status_code == 401  # nginx's own refusal: never reached serve
                mallory = await anyone.get("/api/me", auth=("mallory", "mallory-pw"))
            assert mallory.status_code == 401
            assert mallory.json()["error"]["message"] == (
                "the proxy names 'mallory', not a user of this server"
            )
        finally:
            await asyncio.to_thread(nginx.stop)
        # Straight to serve, past nginx: a forged header is refused, with a token or not.
        async with from_address(base, "127.0.0.1", **{HEADER: "alice"}) as forger:
            forged = await forger.get("/api/me")
            with_token = await forger.get("/api/me", headers={"Authorization": f"Bearer {ALICE}"})
        for refused in (forged, with_token):
            assert refused.status_code == 401
            assert refused.json()["error"]["message"] == (
                "the X-Forwarded-Email header is taken from a trusted proxy only"
            )
        child.send_signal(signal.SIGINT)
        async with asyncio.timeout(WAIT):
            _, err = await child.communicate()
        assert child.returncode == 0, err
    assert ALICE.encode() not in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--user", "alice", "--trusted-proxy", PROXY],
            "--trusted-proxy: say which header names the user: --user-header NAME",
        ),
        (
            ["--user", "alice", "--user-header", HEADER],
            "--user-header: say which proxy may send it: --trusted-proxy ADDRESS",
        ),
        (
            ["--trusted-proxy", PROXY, "--user-header", HEADER],
            "--user-header names users: name them with --user NAME",
        ),
        (
            ["--user", "alice", "--trusted-proxy", "proxy.lan", "--user-header", HEADER],
            "the trusted proxy 'proxy.lan' is not an IP address or a CIDR network",
        ),
        (
            ["--user", "alice", "--trusted-proxy", PROXY, "--user-header", "Host"],
            "the user header cannot be Host: the server reads it itself",
        ),
    ],
)
def test_serve_refuses_a_bad_proxy_setting_with_one_line(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["serve", "--port", "0", *args]) == 2
    assert capsys.readouterr().err == f"interaction: {message}\n"


async def test_in_a_browser_through_nginx_alice_sees_herself_signed_in_and_answers(
    browser: Browser, tmp_path: Path
) -> None:
    """The page holds no token: the browser signs in to nginx (auth_basic) and the page's
    requests carry only those credentials, which nginx turns into the header."""
    question = AskUserQuestionItem(
        "pkg", "Which package manager?", options=[Option("pnpm"), Option("npm")]
    )
    async with proxied_page(hosts=["127.0.0.1"]) as (_, server):  # nginx passes its Host
        nginx = Nginx(tmp_path, server.port, {"alice": "alice-pw"})
        await asyncio.to_thread(nginx.start)
        context = await browser.new_context(
            http_credentials={"username": "alice", "password": "alice-pw"}
        )
        try:
            page = await context.new_page()
            await page.goto(f"http://127.0.0.1:{nginx.port}/")
            await page.get_by_test_id("user").get_by_text("Signed in as alice").wait_for()
            asking = asyncio.create_task(ask(AskUserQuestionRequest([question])))
            await page.get_by_text("npm", exact=True).click()
            await page.get_by_test_id("submit").click()
            async with asyncio.timeout(WAIT):
                answer = await asking
            assert answer.answers[0].selected == ("npm",)
        finally:
            await context.close()
            await asyncio.to_thread(nginx.stop)
