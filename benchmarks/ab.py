"""Another checkout's core against this one's, in one interleaved run: the core's headline cases.

    git worktree add /tmp/before <commit>
    python benchmarks/ab.py /tmp/before            # prints a Markdown table
    python benchmarks/ab.py /tmp/before --quick    # a few rounds (CI keeps it alive)

The other checkout's package is loaded beside this one under the name
``interaction_before``, so both run in the same process and take turns round by round with
the references, as medians of rounds: (a) a fresh ``ask()`` against pydantic, (j) build +
validate and (k) decode JSON against pydantic-ai-harness, (c) ``import interaction``
after asyncio (child interpreters, the other checkout's ``src`` first on their path).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import pydantic
from core import PeerQuestions, PydanticRequest, import_ms, peer_payload
from timing import Agent, interleaved, payload, timed

import interaction

HERE = Path(__file__).resolve().parent.parent


def load(checkout: Path) -> ModuleType:
    """The package in ``checkout``/src/interaction, imported as ``interaction_before``."""
    package = checkout / "src" / "interaction"
    spec = importlib.util.spec_from_file_location(
        "interaction_before", package / "__init__.py", submodule_search_locations=[str(package)]
    )
    assert spec is not None, package
    assert spec.loader is not None, package
    module = importlib.util.module_from_spec(spec)
    sys.modules["interaction_before"] = module
    spec.loader.exec_module(module)
    importlib.import_module("interaction_before.wire")
    return module


def fresh_ask(package: Any, agent: Agent) -> Callable[[], Awaitable[object]]:
    """What a plugin does per ask: build 1 question x 3 options, then ``ask()``."""

    def one() -> Awaitable[object]:
        return package.ask(  # type: ignore[no-any-return]
            package.AskUserQuestionRequest(
                [
                    package.AskUserQuestionItem(
                        "q0",
                        "Question number 0: which one should the agent use?",
                        header="Topic 0",
                        options=[
                            package.AskUserQuestionOption("Option 0 (Recommended)", "Because 0"),
                            package.AskUserQuestionOption("Option 1", "Because 1"),
                            package.AskUserQuestionOption("Option 2", "Because 2"),
                        ],
                    )
                ],
                agent=agent,
            )
        )

    return one


class _Instant:
    def __init__(self, answer: object) -> None:
        self.answer = answer

    async def ask(self, request: object) -> object:
        return self.answer


def ask_round(
    package: Any, agent: Agent, loop: asyncio.AbstractEventLoop, number: int
) -> Callable[[], float]:
    """A round of ``number`` fresh asks through ``package``, with its own registry and
    provider in the round's task."""
    registry = package.AgentRegistry()
    registry.enter(agent)
    provider = _Instant(
        package.AskUserQuestionAnswer([package.AskUserQuestionAnswerItem("q0", ["Option 1"])])
    )
    make = fresh_ask(package, agent)

    async def run() -> float:
        with package.provide_agents(registry), package.provide(provider):
            start = time.perf_counter()
            for _ in range(number):
                await make()
            return (time.perf_counter() - start) / number

    return lambda: loop.run_until_complete(run())


def measure(before: Any, checkout: Path, quick: bool) -> list[tuple[str, float, float, str, float]]:
    """Rows of (case, before, after, reference, the reference's figure), in µs or ms."""
    number, repeat = (200, 3) if quick else (500, 101)
    rows: list[tuple[str, float, float, str, float]] = []
    agent = Agent("lead")
    loop = asyncio.new_event_loop()
    adapter = pydantic.TypeAdapter(PydanticRequest)
    ask_before, ask_after, pyd = interleaved(
        [
            ask_round(before, agent, loop, number),
            ask_round(interaction, agent, loop, number),
            timed(partial(adapter.validate_python, payload(1, 3)), number),
        ],
        repeat,
    )
    loop.close()
    rows.append(
        ("(a) fresh ask() 1q x 3 opts", ask_before, ask_after, "pydantic validate_python", pyd)
    )
    peer = pydantic.TypeAdapter(PeerQuestions)
    for questions, options in ((1, 3), (8, 6)):
        data = payload(questions, options)
        raw = json.dumps(data).encode()
        peer_data = peer_payload(questions, options)
        peer_raw = json.dumps(peer_data).encode()
        count = max(number // questions, 1)
        figures = interleaved(
            [
                timed(partial(before.wire.decode_request, data), count),
                timed(partial(interaction.wire.decode_request, data), count),
                timed(partial(peer.validate_python, peer_data), count),
                timed(partial(before.wire.decode_request, raw), count),
                timed(partial(interaction.wire.decode_request, raw), count),
                timed(partial(peer.validate_json, peer_raw), count),
            ],
            repeat,
        )
        size = f"{questions}q x {options} opts"
        build_before, build_after, peer_build, decode_before, decode_after, peer_decode = figures
        rows.append(
            (f"(j) build + validate {size}", build_before, build_after, "harness", peer_build)
        )
        rows.append(
            (f"(k) decode JSON {size}", decode_before, decode_after, "harness", peer_decode)
        )
    imports = 3 if quick else 21
    source = str(checkout / "src")
    ours_before, ours_after, pyd_ms = interleaved(
        [
            partial(import_ms, "interaction", 1, path=source),
            partial(import_ms, "interaction", 1, path=str(HERE / "src")),
            partial(import_ms, "pydantic", 1),
        ],
        imports,
    )
    # import_ms gives milliseconds; the rows above are seconds per call.
    rows = [(case, b * 1e6, a * 1e6, ref, r * 1e6) for case, b, a, ref, r in rows]
    rows.append(("(c) import after asyncio", ours_before, ours_after, "import pydantic", pyd_ms))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path, help="the other checkout (its src/interaction)")
    parser.add_argument("--quick", action="store_true", help="a few rounds")
    args = parser.parse_args()
    before = load(args.checkout.resolve())
    print(f"load average at the start: {os.getloadavg()[0]:.1f}")
    rows = measure(before, args.checkout.resolve(), args.quick)
    print("| case | before | after | reference | its median | before ratio | after ratio |")
    print("|---|---:|---:|---|---:|---:|---:|")
    for case, b, a, ref, r in rows:
        unit = "ms" if case.startswith("(c)") else "µs"
        print(
            f"| {case} | {b:.2f} {unit} | {a:.2f} {unit} | {ref} | {r:.2f} {unit} |"
            f" {b / r:.2f}x | {a / r:.2f}x |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
