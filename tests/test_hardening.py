"""Regression tests for hostile, huge and unlucky inputs (issue #10): each failed on 0.x main."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import gc
import json
import logging
import pickle
import threading
import traceback
import weakref
from collections.abc import Awaitable, Collection, Iterator

import pytest

import interaction
from interaction import (
    AbortController,
    AbortSignal,
    AgentRegistry,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    UnknownIntent,
    UserInteractionError,
    wire,
)
from interaction._abort import _timers
from interaction.testing import ScriptedProvider
from interaction.tool import request_from_arguments, run_tool

from .helpers import FakeAgent, pkg_question

# ------------------------------------------------------------------------- timers


def _fires(signal: AbortSignal, within: float = 5.0) -> bool:
    fired = threading.Event()
    signal.add_listener(lambda _: fired.set())
    return fired.wait(within)


@pytest.mark.parametrize("seconds", [float("inf"), float("nan"), 1e10, 10**400, -0.5])
def test_timeouts_the_timer_cannot_keep_are_refused(seconds: float) -> None:
    with pytest.raises(ValueError, match="timeout seconds must be a non-negative number, finite"):
        AbortSignal.timeout(seconds)
    assert _fires(AbortSignal.timeout(0.01)), "the timer thread stopped"


def test_the_timer_survives_a_fault_and_keeps_firing(caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> AbortSignal:
        raise RuntimeError("broken entry")

    with caplog.at_level(logging.ERROR, logger="interaction"), _timers._cond:
        _timers._heap.insert(0, (0.0, -1, broken))  # type: ignore[arg-type]  # a faulty entry
        _timers._cond.notify()
    assert _fires(AbortSignal.timeout(0.01))
    assert "the abort timer failed; it goes on" in caplog.text


def test_a_dropped_timeout_signal_is_collected_before_it_is_due() -> None:
    refs = [weakref.ref(AbortSignal.timeout(3600)) for _ in range(2000)]
    gc.collect()
    assert all(ref() is None for ref in refs)
    with _timers._cond:
        live_entries = len(_timers._heap)
    assert live_entries < 1000  # entries of collected signals are compacted away


def test_a_timeout_signal_somebody_listens_to_is_kept_until_it_fires() -> None:
    fired = threading.Event()
    AbortSignal.timeout(0.01).add_listener(lambda _: fired.set())  # the signal itself is dropped
    gc.collect()
    assert fired.wait(5)


# ------------------------------------------------------------------------ signals


def test_a_dropped_combined_signal_leaves_its_sources() -> None:
    parent = AbortController()
    for _ in range(1000):
        AbortSignal.any([parent.signal])
    gc.collect()
    assert parent.signal._listeners == {}


def test_a_combined_signal_keeps_its_timeout_source_alive() -> None:
    combined = AbortSignal.any([AbortController().signal, AbortSignal.timeout(0.01)])
    gc.collect()
    assert _fires(combined)
    assert isinstance(combined.reason, TimeoutError)


def test_an_aborted_combined_signal_unsubscribes_from_every_source() -> None:
    first, second = AbortController(), AbortController()
    combined = AbortSignal.any([first.signal, second.signal])
    first.abort()
    assert combined.reason is first.signal.reason
    assert second.signal._listeners == {}


def _frames(error: BaseException) -> int:
    return len(traceback.extract_tb(error.__traceback__))


def test_throw_if_aborted_does_not_grow_the_reasons_traceback() -> None:
    controller = AbortController()
    controller.abort()
    depths = []
    for _ in range(5):
        with pytest.raises(UserInteractionError) as caught:
            controller.signal.throw_if_aborted()
        depths.append(_frames(caught.value))
    assert depths == [depths[0]] * 5


async def test_a_scripted_error_does_not_grow_its_traceback() -> None:
    provider = ScriptedProvider(RuntimeError("boom"))
    depths = []
    for _ in range(5):
        with pytest.raises(RuntimeError):
            await provider.ask(AskUserQuestionRequest([pkg_question()]))
        depths.append(_frames(provider.script))  # type: ignore[arg-type]  # the scripted error
    assert depths == [depths[0]] * 5


class AbortsWhileAdmitting:
    """A live-agent registry whose look-up aborts the ask, as a racing thread could."""

    def __init__(self, agent: FakeAgent, controller: AbortController) -> None:
        self.agent, self.controller = agent, controller

    def get(self, agent_id: str, /) -> FakeAgent | None:
        self.controller.abort()
        return self.agent if agent_id == self.agent.id else None

    def roots(self) -> Collection[FakeAgent]:
        return [self.agent]


async def test_an_abort_during_admission_never_reaches_the_provider() -> None:
    agent, controller = FakeAgent("a"), AbortController()
    provider = ScriptedProvider({"pkg": "npm"})
    request = AskUserQuestionRequest([pkg_question()], agent=agent, signal=controller.signal)
    with (
        interaction.provide(provider),
        interaction.provide_agents(AbortsWhileAdmitting(agent, controller)),
        pytest.raises(UserInteractionError) as caught,
    ):
        await interaction.ask(request)
    assert caught.value.code == ErrorCode.ASK_ABORTED
    assert provider.requests == []
    assert controller.signal._listeners == {}


class InterruptedWhileCleaningUp:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc
        self.started = asyncio.Event()

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise self.exc from None
        raise AssertionError("unreachable")


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), SystemExit(3)])
async def test_a_base_exception_from_cleanup_after_an_abort_passes_through(
    exc: BaseException,
) -> None:
    provider = InterruptedWhileCleaningUp(exc)
    controller = AbortController()
    request = AskUserQuestionRequest([pkg_question()], signal=controller.signal)
    with interaction.provide(provider):
        asking = asyncio.ensure_future(_outcome(interaction.ask(request)))
        await provider.started.wait()
        controller.abort()
        assert await asking is exc


async def _outcome(awaitable: Awaitable[object]) -> BaseException:
    """What ``awaitable`` raised, caught inside the task so asyncio never sees it."""
    try:
        await awaitable
    except BaseException as exc:  # the BaseException is the result under test
        return exc
    raise AssertionError("it returned")


# ------------------------------------------------------------------ hostile values

DEEP = "[" * 1000 + "]" * 1000


@pytest.mark.parametrize(
    "arguments",
    [
        DEEP,
        json.dumps({"questions": DEEP}),
        {"questions": DEEP},
    ],
)
async def test_deeply_nested_json_is_a_bad_request(arguments: object) -> None:
    with pytest.raises(UserInteractionError) as caught:
        request_from_arguments(arguments)
    assert caught.value.code == ErrorCode.BAD_REQUEST
    assert "nested too deeply" in caught.value.message
    with interaction.provide(ScriptedProvider()):
        result = await run_tool(arguments)
    assert result.error == {"name": "UserInteractionError", "code": "BAD_REQUEST"}


class UnprintableError(Exception):
    def __str__(self) -> str:
        raise ValueError("no text for you")


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            UnprintableError(),
            "the user-interaction provider failed: UnprintableError:"
            " <the exception's message could not be read>",
        ),
        (
            RuntimeError("x" * 10_000_000),
            "the user-interaction provider failed: RuntimeError: "
            + "x" * 1000
            + "... (9999000 more characters)",
        ),
        (
            RuntimeError("bad \ud800 text"),
            "the user-interaction provider failed: RuntimeError: bad \\ud800 text",
        ),
    ],
)
async def test_a_provider_failure_is_reported_bounded_and_printable(
    error: Exception, expected: str
) -> None:
    with interaction.provide(ScriptedProvider(error)):
        result = await run_tool({"questions": [{"id": "a", "question": "q?"}]})
    assert result.error == {"name": "UserInteractionError", "code": "PROVIDER_FAILED"}
    assert result.content == f"Error: {expected}"
    result.content.encode("utf-8")


class LyingStr(str):
    def strip(self, chars: str | None = None) -> str:
        raise RuntimeError("strip lies")

    def __hash__(self) -> int:
        raise RuntimeError("hash lies")


class LyingTuple(tuple):  # type: ignore[type-arg]
    def __iter__(self) -> Iterator[object]:
        raise RuntimeError("iteration lies")


@pytest.mark.parametrize(
    ("build", "path", "problem"),
    [
        (
            lambda: AskUserQuestionItem(LyingStr("a"), "q"),
            "questions[0].id",
            "expected a string, got LyingStr",
        ),
        (
            lambda: AskUserQuestionItem("a", LyingStr("q")),
            "questions[0].question",
            "expected a string, got LyingStr",
        ),
        (
            lambda: AskUserQuestionItem("a", "q", options=[AskUserQuestionOption(LyingStr("x"))]),
            "questions[0].options[0].label",
            "expected a string, got LyingStr",
        ),
        (
            lambda: AskUserQuestionItem("a", "q", options=LyingTuple()),
            "questions[0].options",
            "expected a sequence of options, got LyingTuple",
        ),
    ],
)
def test_lying_subclasses_are_refused_by_exact_type(build: object, path: str, problem: str) -> None:
    item = build()  # type: ignore[operator]  # a zero-argument builder
    with pytest.raises(UserInteractionError) as caught:
        interaction.check_request(AskUserQuestionRequest([item]))
    assert (caught.value.code, caught.value.path, caught.value.message) == (
        ErrorCode.BAD_REQUEST,
        path,
        f"{path}: {problem}",
    )


def test_lying_subclasses_in_an_answer_are_refused() -> None:
    request = AskUserQuestionRequest([pkg_question()])
    for item, path in [
        (AskUserQuestionAnswerItem(LyingStr("pkg")), "answers[0].id"),
        (AskUserQuestionAnswerItem("pkg", [LyingStr("npm")]), "answers[0].selected[0]"),
        (AskUserQuestionAnswerItem("pkg", custom=LyingStr("mine")), "answers[0].custom"),
    ]:
        with pytest.raises(UserInteractionError) as caught:
            interaction.check_answer(request, AskUserQuestionAnswer([item]))
        assert caught.value.code == ErrorCode.BAD_ANSWER
        assert caught.value.message == f"{path}: expected a string, got LyingStr"


class LyingDict(dict):  # type: ignore[type-arg]
    def get(self, *args: object) -> object:
        raise RuntimeError("get lies")


def test_tool_arguments_in_lying_containers_are_read_from_their_storage() -> None:
    arguments = LyingDict(questions=[LyingDict(id="a", question="Which?", options=["x", "y"])])
    request = request_from_arguments(arguments)
    assert request.questions == (
        AskUserQuestionItem(
            "a", "Which?", options=[AskUserQuestionOption("x"), AskUserQuestionOption("y")]
        ),
    )


INVISIBLE_ONLY = [
    "\u200b",
    "\ufeff",
    "\u3164",
    "\u2800",  # the braille blank, a favourite "invisible" character
    "\u200e",
    "\U000e0041\U000e0042",
    "\u2060 \u00ad",
]


@pytest.mark.parametrize("text", INVISIBLE_ONLY)
@pytest.mark.parametrize("field", ["id", "question", "label"])
def test_invisible_only_text_is_blank(text: str, field: str) -> None:
    if field == "label":
        item = pkg_question(options=[AskUserQuestionOption(text)])
        path = "questions[0].options[0].label"
    else:
        item = pkg_question(**{field: text})
        path = f"questions[0].{field}"
    with pytest.raises(UserInteractionError) as caught:
        interaction.check_request(AskUserQuestionRequest([item]))
    assert caught.value.code == ErrorCode.BAD_REQUEST
    assert caught.value.path == path
    assert caught.value.message.startswith(f"{path}: must not be empty")


def test_labels_differing_only_by_invisible_characters_are_look_alikes() -> None:
    item = pkg_question(options=[AskUserQuestionOption("npm"), AskUserQuestionOption("n\u200bpm")])
    with pytest.raises(UserInteractionError) as caught:
        interaction.check_request(AskUserQuestionRequest([item]))
    assert caught.value.message == (
        "questions[0].options[1].label: duplicate option label 'n\\u200bpm' (same as 'npm')"
    )


def test_emoji_zwj_sequences_stay_allowed() -> None:
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    item = pkg_question(
        id=family, options=[AskUserQuestionOption(family), AskUserQuestionOption("\U0001f468")]
    )
    interaction.check_request(AskUserQuestionRequest([item]))


def test_an_invisible_only_custom_answer_is_blank() -> None:
    request = AskUserQuestionRequest([pkg_question()])
    with pytest.raises(UserInteractionError) as caught:
        interaction.check_answer(
            request, AskUserQuestionAnswer([AskUserQuestionAnswerItem("pkg", custom="\u200b")])
        )
    assert caught.value.message == (
        "answers[0].custom: question pkg has a blank custom answer (leave it out to skip)"
    )


async def test_an_unpaired_surrogate_in_a_custom_answer_is_a_bad_answer() -> None:
    request = AskUserQuestionRequest([pkg_question()])
    answer = AskUserQuestionAnswer([AskUserQuestionAnswerItem("pkg", custom="mine \udc80")])
    with pytest.raises(UserInteractionError) as caught:
        interaction.check_answer(request, answer)
    assert caught.value.message == "answers[0].custom: contains unpaired surrogate U+DC80"
    provider = ScriptedProvider(lambda _: answer)
    with interaction.provide(provider):
        result = await run_tool({"questions": [{"id": "pkg", "question": "Which?"}]})
    assert result.error == {"name": "UserInteractionError", "code": "BAD_ANSWER"}


@pytest.mark.parametrize("request_", [None, AskUserQuestionRequest([pkg_question()])])
def test_the_wire_refuses_an_unpaired_surrogate_in_an_answer(
    request_: AskUserQuestionRequest | None,
) -> None:
    text = '{"answers":[{"id":"pkg","selected":[],"custom":"mine \\udc80"}]}'
    with pytest.raises(UserInteractionError) as caught:
        wire.decode_answer(text, request_)
    assert caught.value.code == ErrorCode.BAD_ANSWER
    assert caught.value.path == "answers[0].custom"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"v": float("nan")}, "intent.v: expected a finite number, got nan"),
        ({"v": [float("inf")]}, "intent.v[0]: expected a finite number, got inf"),
        ({"v": object()}, "intent.v: expected a JSON value, got object"),
        ({1: "x"}, "intent: expected string keys, got int"),
        (None, "intent.fields: expected an object, got None"),
        # What the wire could not write out, or a terminal would obey in an error message:
        ({"v": ["x\ud800"]}, "intent.v[0]: contains an unpaired surrogate"),
        ({"v": -(10**4000)}, "intent.v: has more than 4000 digits"),
        (
            {"\x1b]0;pwned\x07": 1},
            "intent: key '\\x1b]0;pwned\\x07' contains control character U+001B",
        ),
        (
            {"\u202eab": 1},
            "intent: key '\\u202eab' contains bidirectional override character U+202E",
        ),
        ({"kind": "x"}, "intent: must not hold kind, which is the intent's own"),
    ],
)
def test_unknown_intent_fields_must_be_json_values(fields: object, message: str) -> None:
    with pytest.raises(UserInteractionError) as caught:
        UnknownIntent("vote", fields)  # type: ignore[arg-type]  # deliberately not JSON
    assert (caught.value.code, caught.value.message) == (ErrorCode.BAD_INTENT, message)


def test_the_largest_allowed_integer_and_a_nested_kind_are_kept() -> None:
    intent = UnknownIntent("vote", {"v": 10**4000 - 1, "w": {"kind": "inner"}})
    assert intent.fields["v"] == 10**4000 - 1
    assert intent.fields["w"] == {"kind": "inner"}


def test_an_unknown_intent_cannot_take_the_plan_review_kind() -> None:
    # It would come back from the wire as a PlanReviewIntent, refused or changed.
    with pytest.raises(UserInteractionError) as caught:
        UnknownIntent("plan-review", {"approve": "Approve"})
    assert (caught.value.code, caught.value.message) == (
        ErrorCode.BAD_INTENT,
        "intent.kind: plan-review is PlanReviewIntent's kind",
    )


def test_a_control_character_in_an_intent_key_never_reaches_the_message_raw() -> None:
    text = (
        '{"questions":[{"id":"a","question":"q","detail":"d",'
        '"intent":{"kind":"vote","\\u001b[31mRED":1}}]}'
    )
    with pytest.raises(UserInteractionError) as caught:
        wire.decode_request(text)
    assert caught.value.code == ErrorCode.BAD_INTENT
    assert caught.value.path == "questions[0].intent"
    assert "\x1b" not in str(caught.value)


def test_deeply_nested_intent_fields_are_a_bad_intent_on_the_wire() -> None:
    nested = "[" * 200 + "]" * 200
    text = (
        '{"questions":[{"id":"a","question":"q","detail":"d",'
        f'"intent":{{"kind":"vote","v":{nested}}}}}]}}'
    )
    with pytest.raises(UserInteractionError) as caught:
        wire.decode_request(text)
    assert caught.value.code == ErrorCode.BAD_INTENT
    assert caught.value.message.startswith("questions[0].intent.v")
    assert caught.value.message.endswith("nests more than 64 levels deep")


def test_equal_unknown_intents_hash_equal_and_survive_pickle_and_deepcopy() -> None:
    one, other = (
        UnknownIntent("vote", {"v": 1, "w": [1]}),
        UnknownIntent("vote", {"v": 1.0, "w": (1,)}),
    )
    assert one == other
    assert hash(one) == hash(other)
    request = AskUserQuestionRequest([pkg_question(detail="plan", intent=one)])
    assert pickle.loads(pickle.dumps(request)) == request
    assert copy.deepcopy(request) == request
    assert wire.encode_request(copy.deepcopy(request)) == wire.encode_request(request)


# ------------------------------------------------------------------------- scaling


def test_an_answer_selecting_thousands_of_labels_is_checked() -> None:
    labels = [f"option {i}" for i in range(5000)]
    item = AskUserQuestionItem(
        "many", "Which?", multi_select=True, options=[AskUserQuestionOption(x) for x in labels]
    )
    request = AskUserQuestionRequest([item])
    answer = AskUserQuestionAnswer([AskUserQuestionAnswerItem("many", labels)])
    assert interaction.check_answer(request, answer) is answer
    bad = AskUserQuestionAnswer([AskUserQuestionAnswerItem("many", [*labels[:-1], "nope"])])
    with pytest.raises(UserInteractionError, match="offers no option 'nope'"):
        interaction.check_answer(request, bad)


class RootsMustNotBeScanned(AgentRegistry):
    def roots(self) -> list[interaction.Agent]:
        raise AssertionError("admission scanned every root")


async def test_admission_asks_the_registry_instead_of_scanning_roots() -> None:
    registry = RootsMustNotBeScanned()
    root, child = FakeAgent("root"), FakeAgent("child")
    registry.enter(root)
    registry.enter(child, owner=root)
    with (
        interaction.provide(ScriptedProvider({"pkg": "npm"})),
        interaction.provide_agents(registry),
    ):
        answer = await interaction.ask(AskUserQuestionRequest([pkg_question()], agent=root))
        assert answer.answers[0].selected == ("npm",)
        with pytest.raises(UserInteractionError) as caught:
            await interaction.ask(AskUserQuestionRequest([pkg_question()], agent=child))
    assert caught.value.code == ErrorCode.DELEGATED_CALLER


def test_leaving_removes_a_wide_and_deep_family_in_order() -> None:
    registry = AgentRegistry()
    root = FakeAgent("root")
    registry.enter(root)
    children = [FakeAgent(f"c{i}") for i in range(2000)]
    for child in children:
        registry.enter(child, owner=root)
    chain = [children[0]]
    for i in range(2000):
        agent = FakeAgent(f"d{i}")
        registry.enter(agent, owner=chain[-1])
        chain.append(agent)
    for child in children[1000:]:  # leaving one child at a time, as runs end
        assert registry.leave(child) == [child]
    removed = registry.leave(root)
    assert removed[0] is root
    assert len(removed) == 1 + 1000 + 2000
    assert len(registry) == 0


# -------------------------------------------------------------------- small truths


@pytest.mark.parametrize("name", ["label", "not_a_field"])
def test_assigning_to_a_frozen_vocabulary_object_is_a_frozen_instance_error(name: str) -> None:
    for value in (AskUserQuestionOption("a"), AskUserQuestionItem("a", "q"), UnknownIntent("x")):
        with pytest.raises(
            dataclasses.FrozenInstanceError, match=f"cannot assign to field '{name}'"
        ):
            setattr(value, name, "changed")
        with pytest.raises(dataclasses.FrozenInstanceError):
            delattr(value, name)


def test_ask_under_trio_says_asyncio_is_required() -> None:
    import trio  # in the test extra

    async def main() -> None:
        with interaction.provide(ScriptedProvider()):
            await interaction.ask(AskUserQuestionRequest([pkg_question()]))

    with pytest.raises(RuntimeError, match=r"must be awaited in an asyncio task.*trio"):
        trio.run(main)


def test_a_dropped_combined_signal_with_a_listener_still_fires() -> None:
    parent = AbortController()
    fired = threading.Event()
    AbortSignal.any([parent.signal]).add_listener(lambda _: fired.set())
    gc.collect()
    parent.abort()
    assert fired.is_set()
    assert parent.signal._listeners == {}


class _LyingDict(dict[str, object]):
    def __contains__(self, key: object) -> bool:
        raise RuntimeError("lying dict")

    def get(self, *args: object) -> object:
        raise RuntimeError("lying dict")


class _LyingList(list[object]):
    def __iter__(self) -> Iterator[object]:
        raise RuntimeError("lying list")


class _LyingStr(str):
    __slots__ = ()

    def __len__(self) -> int:
        raise RuntimeError("lying str")

    def strip(self, chars: str | None = None) -> str:
        raise RuntimeError("lying str")

    def lstrip(self, chars: str | None = None) -> str:
        raise RuntimeError("lying str")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("lying str")

    __hash__ = str.__hash__


def _lying_request() -> dict[str, object]:
    option = _LyingDict(label=_LyingStr("npm"), description=_LyingStr("Fast"))
    question = _LyingDict(id=_LyingStr("pkg"), question=_LyingStr("Which?"))
    question["options"] = _LyingList([option, _LyingDict(label=_LyingStr("pnpm"))])
    return _LyingDict(questions=_LyingList([question]))


def test_host_parsed_subclasses_are_read_as_the_plain_values_they_hold() -> None:
    # A host's parsed JSON may be of dict, list and str subclasses whose methods lie or raise.
    options = [AskUserQuestionOption("npm", "Fast"), AskUserQuestionOption("pnpm")]
    plain = AskUserQuestionRequest([AskUserQuestionItem("pkg", "Which?", options=options)])
    for decoded in (
        wire.decode_request(_lying_request()),
        request_from_arguments(_lying_request()),
    ):
        assert decoded == plain
        option = decoded.questions[0].options[0]
        assert (type(decoded.questions[0].id), type(option.label)) == (str, str)
    answer = _LyingDict(
        answers=_LyingList(
            [_LyingDict(id=_LyingStr("pkg"), selected=_LyingList([_LyingStr("npm")]))]
        )
    )
    assert wire.decode_answer(answer, plain).answers[0].selected == ("npm",)
    assert type(wire.decode_answer(answer).answers[0].selected[0]) is str
    assert wire.decode_request(_LyingStr(wire.dumps(plain))) == plain
