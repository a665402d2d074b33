"""The Postgres relay under the Redis relay's load (benchmarks/redis_load.py): 10,000
pending asks from 4 asker processes, answered by 50 HTTP clients across two ``interaction
serve --postgres`` hosts; none lost, none answered twice.

    python benchmarks/postgres_load.py            # the full run (prints the figures)
    python benchmarks/postgres_load.py --quick    # 400 asks, 10 clients

Needs PostgreSQL's server binaries (as the tests find them) and the ``postgres`` and
``web`` extras; the server runs with ``fsync`` on. Every 20th question is claimed through
both hosts at once: exactly one claim may win.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.postgres_server import PostgresServer

from interaction.postgres_relay import PostgresRelay

ASKER = r"""
import asyncio, json, sys
from interaction import AskUserQuestionItem, AskUserQuestionRequest, ask, provide
from interaction.postgres_relay import PostgresRelay

async def main(url, schema, name, count):
    relay = PostgresRelay(url, schema=schema, max_pending=1_000_000)
    got = {}
    async def one(i):
        text = f"{name}-{i}"
        answer = await ask(AskUserQuestionRequest([AskUserQuestionItem("q", text)]))
        got[text] = answer.answers[0].custom
    with provide(relay):
        await asyncio.gather(*(one(i) for i in range(count)))
    await relay.aclose()
    print(json.dumps(got), flush=True)

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
"""


def host(server: PostgresServer, schema: str) -> tuple[subprocess.Popen[bytes], str, str]:
    argv = [sys.executable, "-m", "interaction", "serve", "--postgres", server.url]
    child = subprocess.Popen(
        [*argv, "--schema", schema, "--port", "0"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    assert child.stderr is not None
    line = child.stderr.readline().decode()
    url = line.removeprefix("interaction: answer at ").strip()
    base, _, token = url.partition("/#token=")
    return child, base, token


def start_askers(server: PostgresServer, prefix: str, per: int) -> list[subprocess.Popen[bytes]]:
    return [
        subprocess.Popen(
            [sys.executable, "-c", ASKER, server.url, prefix, f"a{n}", str(per)],
            stdout=subprocess.PIPE,
        )
        for n in range(4)
    ]


async def run(total: int, clients: int) -> dict[str, float]:  # noqa: PLR0915 - one scenario
    prefix = f"load{secrets.token_hex(4)}"
    with PostgresServer(durable=True) as server:
        observer = PostgresRelay(server.url, schema=prefix, max_pending=1_000_000)
        await observer.migrate()
        start = await observer.snapshot()
        hosts = [host(server, prefix) for _ in range(2)]
        per = total // 4
        askers = start_askers(server, prefix, per)
        try:
            began = time.perf_counter()
            events = observer.events(start.position)
            ids: dict[str, str] = {}
            async for event in events:
                if event.kind == "requested" and event.question is not None:
                    ids[event.question.request.questions[0].question] = event.id
                    if len(ids) == per * 4:
                        break
            await events.aclose()
            asked = time.perf_counter() - began
            pending = len((await observer.snapshot()).questions)
            queue: asyncio.Queue[str] = asyncio.Queue()
            for text in ids:
                queue.put_nowait(text)
            accepted: dict[str, int] = {}
            refused_second = 0
            https = [
                httpx.AsyncClient(
                    base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60
                )
                for _, base, token in hosts
            ]

            async def answer(http: httpx.AsyncClient, text: str) -> int:
                body = {"answers": [{"id": "q", "selected": [], "custom": f"for {text}"}]}
                response = await http.post(f"/api/questions/{ids[text]}/answer", json=body)
                if response.status_code == 200:
                    accepted[text] = accepted.get(text, 0) + 1
                return response.status_code

            async def client(number: int) -> None:
                nonlocal refused_second
                while not queue.empty():
                    text = queue.get_nowait()
                    if hash(text) % 20 == 0:  # claimed through both hosts at once
                        codes = await asyncio.gather(answer(https[0], text), answer(https[1], text))
                        assert sorted(codes) == [200, 409], (text, codes)
                        refused_second += 1
                    else:
                        assert await answer(https[number % 2], text) == 200

            began = time.perf_counter()
            await asyncio.gather(*(client(n) for n in range(clients)))
            answering = time.perf_counter() - began
            results: dict[str, str] = {}
            for child in askers:
                out, _ = await asyncio.to_thread(child.communicate, timeout=120)
                results.update(json.loads(out))
            returned = time.perf_counter() - began
            for http in https:
                await http.aclose()
        finally:
            for child in askers:
                if child.poll() is None:
                    child.kill()
                    child.wait()
            for child, _, _ in hosts:
                child.kill()
                child.wait()
        assert pending == total, (pending, total)
        assert set(results) == set(ids), "an ask was lost"
        assert all(count == 1 for count in accepted.values()), "a question was answered twice"
        assert results == {text: f"for {text}" for text in ids}, "an asker got a wrong answer"
        assert (await observer.snapshot()).questions == ()
        await observer.aclose()
    return {
        "asks": total,
        "clients": clients,
        "asked_s": asked,
        "answered_s": answering,
        "returned_s": returned,
        "answers_per_s": total / answering,
        "double_claims_refused": refused_second,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="400 asks, 10 clients")
    args = parser.parse_args()
    figures = asyncio.run(run(400, 10) if args.quick else run(10_000, 50))
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
