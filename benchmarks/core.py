"""The core: ``ask()``, the wire decoder and the answer check against pydantic, msgspec and
the real Python peer (pydantic-ai-harness), the import's cost, and how the core scales.

(a) ``ask()`` end to end on a request built fresh for each call, 1 question x 3 options,
with agent admission and an instant provider, against pydantic validating the same data;
(b) ``wire.decode_request`` from JSON bytes against pydantic and msgspec; (c) cumulative
``-X importtime`` of the package in an interpreter that has already imported asyncio (also
with the cyclic GC off, and an empty twin: the same module names, each empty, which is
what loading that layout costs); (g)-(i) cost at 10x size against 1x; (j)-(l) against
pydantic-ai-harness's AskUser models.
"""

from __future__ import annotations

import ast
import asyncio
import gc
import importlib.util
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import msgspec
import pydantic
from pydantic_ai_harness.ask_user import AskUserAnswer as PeerAnswer
from pydantic_ai_harness.ask_user import AskUserRequest as PeerRequest
from pydantic_ai_harness.ask_user import AskUserResponse as PeerResponse
from pydantic_ai_harness.ask_user import Question as PeerQuestion
from pydantic_ai_harness.ask_user import check_response as peer_check_response
from timing import (
    CHILD_ENV,
    Agent,
    Instant,
    Row,
    interleaved,
    payload,
    timed,
    timed_await,
)

import interaction
from interaction import (
    AgentRegistry,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    wire,
)

TITLE = "the core: ask(), decode, import, scaling, the peer"


def measure(quick: bool) -> list[Row]:
    """Every row of this area."""
    return measure_core(quick) + measure_scaling(quick)


# ---------------------------------------------------------------- reference types


class PydanticOption(pydantic.BaseModel):
    label: str = pydantic.Field(min_length=1)
    description: str | None = None


class PydanticIntent(pydantic.BaseModel):
    kind: str = pydantic.Field(min_length=1)
    approve: str | None = None


class PydanticItem(pydantic.BaseModel):
    id: str = pydantic.Field(min_length=1)
    question: str = pydantic.Field(min_length=1)
    detail: str | None = None
    header: str | None = None
    options: list[PydanticOption] = []
    multi_select: bool = pydantic.Field(False, alias="multiSelect")
    intent: PydanticIntent | None = None


class PydanticRequest(pydantic.BaseModel):
    questions: list[PydanticItem]


class MsgspecOption(msgspec.Struct, frozen=True):
    label: str
    description: str | None = None


class MsgspecIntent(msgspec.Struct, frozen=True):
    kind: str
    approve: str | None = None


class MsgspecItem(msgspec.Struct, frozen=True, rename={"multi_select": "multiSelect"}):
    id: str
    question: str
    detail: str | None = None
    header: str | None = None
    options: list[MsgspecOption] = []
    multi_select: bool = False
    intent: MsgspecIntent | None = None


class MsgspecRequest(msgspec.Struct, frozen=True):
    questions: list[MsgspecItem]


PeerQuestions = list[PeerQuestion]


# ---------------------------------------------------------------- (a)-(c), (j)-(l)


def import_ms(module: str, repeat: int, *, collect: bool = True, path: str = "") -> float:
    """Median cumulative ``-X importtime`` of ``module`` after asyncio is imported, in ms.

    ``collect=False`` turns the cyclic GC off first: the pass that the import's allocations
    set off (over every object asyncio left) then drops out, leaving the import's own work.
    ``path`` is put first on the child's ``sys.path``.
    """
    samples = []
    setup = "" if collect else "import gc; gc.disable(); "
    env = CHILD_ENV | {"PYTHONPATH": path} if path else CHILD_ENV
    for _ in range(repeat + 1):  # the first run writes the bytecode and is not counted
        result = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", f"{setup}import asyncio; import {module}"],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        line = [ln for ln in result.stderr.splitlines() if re.search(rf"\|\s*{module}$", ln)][-1]
        samples.append(int(line.split("|")[1]) / 1000)
    return statistics.median(samples[1:])


def empty_twin(package: str, root: Path, *, dataclasses: bool = False) -> str:
    """Write under ``root`` a package of the modules ``import package`` loads, each empty.

    Its ``__init__`` imports the same standard-library modules that the real import adds to
    an interpreter that has imported asyncio, then its empty submodules: what loading that
    layout costs with none of its code. With ``dataclasses``, each submodule keeps its
    ``@dataclass`` declarations (fields only, no methods): the floor of the layout once its
    classes are the standard dataclasses that issue 30 asks for. Returns the twin's name.
    """
    probe = (
        "import asyncio, sys; before = set(sys.modules); "
        f"import {package}; print(*sorted(set(sys.modules) - before))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=CHILD_ENV
    ).stdout.split()
    own = [name.removeprefix(f"{package}.") for name in loaded if name.startswith(f"{package}.")]
    assert all("." not in name for name in own), own  # a flat package: no subpackages
    others = [name for name in loaded if name != package and not name.startswith(f"{package}.")]
    twin = f"{package}_{'dataclass_' if dataclasses else ''}twin"
    (root / twin).mkdir()
    for name in own:
        spec = importlib.util.find_spec(f"{package}.{name}")
        assert spec is not None, name
        assert spec.origin is not None, name
        source = Path(spec.origin).read_text()
        (root / twin / f"{name}.py").write_text(dataclass_skeleton(source) if dataclasses else "")
    lines = [f"import {name}" for name in others] + [f"from . import {name}" for name in own]
    (root / twin / "__init__.py").write_text("\n".join(lines) + "\n")
    return twin


def dataclass_skeleton(source: str) -> str:
    """The ``@dataclass`` classes of a module's ``source``, each with its decorator and its
    fields (a default becomes ``None``, so that the order of defaults holds), nothing else."""
    lines = [
        "from __future__ import annotations",
        "from dataclasses import dataclass",
        "from typing import ClassVar",
    ]
    for node in ast.parse(source).body:
        decorators = [ast.unparse(d) for d in getattr(node, "decorator_list", ())]
        if not isinstance(node, ast.ClassDef) or not any("dataclass" in d for d in decorators):
            continue
        lines += [f"@{d}" for d in decorators if "dataclass" in d] + [f"class {node.name}:"]
        fields = [stmt for stmt in node.body if isinstance(stmt, ast.AnnAssign)]
        lines += [
            f"    {ast.unparse(f.target)}: {ast.unparse(f.annotation)}"
            + (" = None" if f.value is not None else "")
            for f in fields
        ] or ["    pass"]
    return "\n".join(lines) + "\n"


def fresh_request(agent: Agent) -> AskUserQuestionRequest:
    """What a plugin builds for each ask: 1 question x 3 options, new objects every time."""
    return AskUserQuestionRequest(
        [
            AskUserQuestionItem(
                "q0",
                "Question number 0: which one should the agent use?",
                header="Topic 0",
                options=[
                    AskUserQuestionOption("Option 0 (Recommended)", "Because 0"),
                    AskUserQuestionOption("Option 1", "Because 1"),
                    AskUserQuestionOption("Option 2", "Because 2"),
                ],
            )
        ],
        agent=agent,
    )


def peer_payload(questions: int, options: int) -> list[dict[str, object]]:
    """``payload`` in pydantic-ai-harness's shape: the header is the key, there is no id."""
    items = payload(questions, options)["questions"]
    assert isinstance(items, list)
    return [
        {key: value for key, value in item.items() if key not in ("id", "multiSelect")}
        | {"multi_select": item.get("multiSelect", False)}
        for item in items
        if isinstance(item, dict)
    ]


def measure_core(quick: bool) -> list[Row]:
    """Cases (a)-(c) and the peer rows (j)-(l); each row's subjects take turns per round."""
    # Short rounds, many of them: a burst of load from elsewhere lands on every subject.
    number, repeat = (200, 3) if quick else (500, 101)
    rows: list[Row] = []

    # (a) ask() end to end on a request built fresh for each call, with agent admission and
    # an instant provider; the reference builds and validates the same data with pydantic.
    data = payload(1, 3)
    agent = Agent("lead")
    registry = AgentRegistry()
    registry.enter(agent)
    provider = Instant(AskUserQuestionAnswer([AskUserQuestionAnswerItem("q0", ["Option 1"])]))
    adapter = pydantic.TypeAdapter(PydanticRequest)
    loop = asyncio.new_event_loop()
    with interaction.provide_agents(registry), interaction.provide(provider):
        ask_s, pyd_s, bare_s = interleaved(
            [
                timed_await(loop, lambda: interaction.ask(fresh_request(agent)), number),
                timed(partial(adapter.validate_python, data), number),
                timed_await(loop, lambda: provider.ask(fresh_request(agent)), number),
            ],
            repeat,
        )
    loop.close()
    case = "(a) fresh ask() 1q x 3 opts"
    rows.append(
        Row(
            case,
            "ask()",
            ask_s * 1e6,
            "pydantic validate_python",
            pyd_s * 1e6,
            "µs",
            "report",
            headline=True,
        )
    )
    rows.append(Row(case, "ask()", ask_s * 1e6, "build + provider.ask()", bare_s * 1e6, "µs", "-"))

    # (b) decode_request from JSON bytes, against pydantic and msgspec.
    for questions, options in ((1, 3), (8, 6)):
        raw = json.dumps(payload(questions, options)).encode()
        decoder = msgspec.json.Decoder(MsgspecRequest)
        count = max(number // questions, 1)
        ours, pyd, ms = interleaved(
            [
                timed(partial(wire.decode_request, raw), count),
                timed(partial(adapter.validate_json, raw), count),
                timed(partial(decoder.decode, raw), count),
            ],
            repeat,
        )
        case = f"(b) decode {questions}q x {options} opts"
        rows.append(
            Row(
                case,
                "decode_request",
                ours * 1e6,
                "pydantic validate_json",
                pyd * 1e6,
                "µs",
                "report",
                headline=True,
            )
        )
        rows.append(Row(case, "decode_request", ours * 1e6, "msgspec decode", ms * 1e6, "µs", "-"))

    # (c) import cost after asyncio, the imports taking turns, with and without the GC; and
    # the floors of the layout: the same modules, empty, and with only their dataclasses.
    imports = 3 if quick else 15
    with tempfile.TemporaryDirectory() as root:
        twin = empty_twin("interaction", Path(root))
        classes = empty_twin("interaction", Path(root), dataclasses=True)
        ours_ms, pyd_ms, ours_quiet, pyd_quiet, twin_ms, twin_quiet, classes_ms = interleaved(
            [
                partial(import_ms, "interaction", 1),
                partial(import_ms, "pydantic", 1),
                partial(import_ms, "interaction", 1, collect=False),
                partial(import_ms, "pydantic", 1, collect=False),
                partial(import_ms, twin, 1, path=root),
                partial(import_ms, twin, 1, collect=False, path=root),
                partial(import_ms, classes, 1, path=root),
            ],
            imports,
        )
    rows.append(
        Row(
            "(c) import after asyncio",
            "import interaction",
            ours_ms,
            "import pydantic",
            pyd_ms,
            "ms",
            "<= 10 ms",
            headline=True,
        )
    )
    rows.append(
        Row(
            "(c) the same, cyclic GC off",
            "import interaction",
            ours_quiet,
            "import pydantic",
            pyd_quiet,
            "ms",
            "-",
        )
    )
    for gc_note, twin_value, ours_value in (
        ("", twin_ms, ours_ms),
        (", GC off", twin_quiet, ours_quiet),
    ):
        rows.append(
            Row(
                f"(c) the same modules, empty{gc_note}",
                "empty twin (the layout's floor)",
                twin_value,
                "import interaction",
                ours_value,
                "ms",
                "-",
            )
        )
    rows.append(
        Row(
            "(c) the same modules, with only their dataclasses",
            "dataclass twin (the floor with standard dataclasses)",
            classes_ms,
            "import interaction",
            ours_ms,
            "ms",
            "-",
        )
    )
    rows.extend(measure_peer(number, repeat))
    return rows


def measure_peer(number: int, repeat: int) -> list[Row]:
    """The real Python peer: pydantic-ai-harness's AskUser models and ``check_response``."""
    peer_adapter = pydantic.TypeAdapter(PeerQuestions)
    rows: list[Row] = []
    for questions, options in ((1, 3), (8, 6)):
        ours_data = payload(questions, options)
        peer_data = peer_payload(questions, options)
        raw = json.dumps(ours_data).encode()
        peer_raw = json.dumps(peer_data).encode()
        count = max(number // questions, 1)
        build, peer_build, decode, peer_decode = interleaved(
            [
                timed(partial(wire.decode_request, ours_data), count),
                timed(partial(peer_adapter.validate_python, peer_data), count),
                timed(partial(wire.decode_request, raw), count),
                timed(partial(peer_adapter.validate_json, peer_raw), count),
            ],
            repeat,
        )
        size = f"{questions}q x {options} opts"
        rows.append(
            Row(
                f"(j) build + validate {size}",
                "decode_request(dict)",
                build * 1e6,
                "harness validate_python",
                peer_build * 1e6,
                "µs",
                "<= 0.5x",
                headline=True,
            )
        )
        rows.append(
            Row(
                f"(k) decode JSON {size}",
                "decode_request(bytes)",
                decode * 1e6,
                "harness validate_json",
                peer_decode * 1e6,
                "µs",
                "<= 0.5x",
                headline=True,
            )
        )
        request = wire.decode_request(ours_data)
        answer = AskUserQuestionAnswer(
            [AskUserQuestionAnswerItem(f"q{q}", ["Option 1"]) for q in range(questions)]
        )
        peer_request = PeerRequest(questions=tuple(peer_adapter.validate_python(peer_data)))
        peer_response = PeerResponse(
            answers=tuple(
                PeerAnswer(header=f"Topic {q}", selected=("Option 1",)) for q in range(questions)
            )
        )
        ours_check, peer_check = interleaved(
            [
                timed(partial(interaction.check_answer, request, answer), count),
                timed(partial(peer_check_response, peer_request, peer_response), count),
            ],
            repeat,
        )
        rows.append(
            Row(
                f"(l) answer check {size}",
                "check_answer",
                ours_check * 1e6,
                "harness check_response",
                peer_check * 1e6,
                "µs",
                "<= 0.7x",
            )
        )
    return rows


# ---------------------------------------------------------------- scaling


def check_answer_round(labels: int, number: int) -> Callable[[], float]:
    names = [f"option {i}" for i in range(labels)]
    item = AskUserQuestionItem(
        "many", "Which?", multi_select=True, options=[AskUserQuestionOption(n) for n in names]
    )
    request = AskUserQuestionRequest([item])
    answer = AskUserQuestionAnswer([AskUserQuestionAnswerItem("many", names)])
    return timed(partial(interaction.check_answer, request, answer), number)


def label_sets_round(labels: int, number: int) -> Callable[[], float]:
    """The set work of a fitting many-label answer alone: the labels offered, as a set, hold
    those selected, and those selected are distinct. Its own growth from 3,000 to 30,000
    labels (the cache misses of the larger sets) is the floor for (g)'s."""
    names = [f"option {i}" for i in range(labels)]
    return timed(lambda: set(names).issuperset(names) and len(set(names)), number)


def ask_round(live: int, number: int) -> Callable[[], float]:
    registry = AgentRegistry()
    for i in range(live - 1):
        registry.enter(Agent(f"other {i}"))
    agent = Agent("lead")
    registry.enter(agent)
    request = AskUserQuestionRequest(wire.decode_request(payload(1, 3)).questions, agent=agent)
    provider = Instant(AskUserQuestionAnswer([AskUserQuestionAnswerItem("q0", ["Option 1"])]))

    def one_round() -> float:
        async def run() -> float:
            with interaction.provide_agents(registry), interaction.provide(provider):
                start = time.perf_counter()
                for _ in range(number):
                    await interaction.ask(request)
                return (time.perf_counter() - start) / number

        return asyncio.run(run())

    return one_round


def leave_round(descendants: int) -> Callable[[], float]:
    def one_round() -> float:
        registry = AgentRegistry()
        root = Agent("root")
        registry.enter(root)
        for i in range(descendants // 2):  # children, each with one child of its own
            child = Agent(f"c{i}")
            registry.enter(child, owner=root)
            registry.enter(Agent(f"g{i}"), owner=child)
        # The setup's garbage is collected here, not in a collection that the leave's own
        # allocations may set off: that pass walks the whole process, whatever N is.
        gc.collect()
        start = time.perf_counter()
        registry.leave(root)
        return time.perf_counter() - start

    return one_round


def measure_scaling(quick: bool) -> list[Row]:
    """Cost at 1x and 10x size, the two sizes interleaved; linear reads ~10x, O(1) ~1x."""
    repeat = 3 if quick else 9
    rows: list[Row] = []
    small, large, sets_small, sets_large = interleaved(
        [
            check_answer_round(3_000, 5 if quick else 50),
            check_answer_round(30_000, 1 if quick else 5),
            label_sets_round(3_000, 5 if quick else 50),
            label_sets_round(30_000, 1 if quick else 5),
        ],
        repeat,
    )
    rows.append(
        Row(
            "(g) check_answer, N labels selected",
            "N = 30,000",
            large * 1e3,
            "N = 3,000",
            small * 1e3,
            "ms",
            "~10x (linear)",
        )
    )
    rows.append(
        Row(
            "(g) its set work alone (the floor)",
            "N = 30,000",
            sets_large * 1e3,
            "N = 3,000",
            sets_small * 1e3,
            "ms",
            "-",
        )
    )
    number = 100 if quick else 5_000
    small, large = interleaved([ask_round(1_000, number), ask_round(10_000, number)], repeat)
    rows.append(
        Row(
            "(h) ask() with N live agents",
            "N = 10,000",
            large * 1e6,
            "N = 1,000",
            small * 1e6,
            "µs",
            "~1x (O(1))",
        )
    )
    small, large = interleaved([leave_round(2_000), leave_round(20_000)], repeat)
    rows.append(
        Row(
            "(i) AgentRegistry.leave, N descendants",
            "N = 20,000",
            large * 1e3,
            "N = 2,000",
            small * 1e3,
            "ms",
            "~10x (linear)",
        )
    )
    return rows
