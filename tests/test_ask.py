"""ask(): every refusal in DESIGN.md's order, dispatch, abort, cancellation, provider failure."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator

import pytest

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
    HarnessError,
    PlanReviewIntent,
    UnknownIntent,
    UserInteractionError,
    ask,
    check_request,
    provide,
    provide_agents,
)
from interaction._ask import ASYNCIO_REQUIRED_MESSAGE, _Stop
from interaction._core import ask_with, with_provider_sync
from interaction._registry import current_registration
from interaction.testing import BlockingProvider, ScriptedProvider

from .helpers import FakeAgent, pkg_question

PLAN = "# Plan\n1. do it"


def _current_task() -> asyncio.Task[object]:
    task = asyncio.current_task()
    assert task is not None
    return task


@pytest.fixture
def provider() -> Iterator[ScriptedProvider]:
    scripted = ScriptedProvider({"pkg": "npm"})
    with provide(scripted):
        yield scripted


async def refused(request: object, provider: ScriptedProvider) -> UserInteractionError:
    with pytest.raises(UserInteractionError) as info:
        await ask(request)  # type: ignore[arg-type]
    assert provider.requests == [], "a refused request reached the provider"
    return info.value


async def test_a_request_reaches_the_provider_unchanged(provider: ScriptedProvider) -> None:
    controller = AbortController()
    request = AskUserQuestionRequest([pkg_question()], signal=controller.signal)
    answer = await ask(request)
    assert provider.requests == [request]
    assert provider.requests[0] is request
    assert answer == AskUserQuestionAnswer([AskUserQuestionAnswerItem("pkg", ["npm"])])


async def test_a_pre_aborted_signal_wins_even_over_an_empty_batch(
    provider: ScriptedProvider,
) -> None:
    controller = AbortController()
    reason = RuntimeError("stop")
    controller.abort(reason)
    error = await refused(AskUserQuestionRequest([], signal=controller.signal), provider)
    assert error.code == ErrorCode.ASK_ABORTED
    assert error.message == "ask_user_question was aborted before the user answered"
    assert error.__cause__ is reason


async def test_a_timed_out_signal_gives_ask_timeout(provider: ScriptedProvider) -> None:
    controller = AbortController()
    controller.abort(TimeoutError())
    error = await refused(
        AskUserQuestionRequest([pkg_question()], signal=controller.signal), provider
    )
    assert error.code == ErrorCode.ASK_TIMEOUT
    assert error.message == "ask_user_question timed out before the user answered"


async def test_an_empty_batch_is_refused(provider: ScriptedProvider) -> None:
    error = await refused(AskUserQuestionRequest([]), provider)
    assert error.code == ErrorCode.EMPTY_QUESTIONS
    assert error.message == "ask_user_question requires at least one question"


async def test_empty_questions_comes_before_admission(provider: ScriptedProvider) -> None:
    error = await refused(AskUserQuestionRequest([], agent=FakeAgent("ghost")), provider)
    assert error.code == ErrorCode.EMPTY_QUESTIONS


NOT_LIVE = "human interaction requires the exact live calling agent when an agent is supplied"
DELEGATED = (
    "human interaction is unavailable while the calling agent is owned by another live agent;"
    " include the unresolved question or decision in the child agent's final result"
)


async def test_an_agent_with_no_registry_in_context_is_not_live(provider: ScriptedProvider) -> None:
    error = await refused(AskUserQuestionRequest([pkg_question()], agent=FakeAgent("a")), provider)
    assert error.code == ErrorCode.CALLER_NOT_LIVE
    assert error.message == NOT_LIVE


async def test_an_equal_but_not_identical_agent_is_not_live(provider: ScriptedProvider) -> None:
    registry = AgentRegistry()
    registry.enter(FakeAgent("a"))
    impostor = FakeAgent("a")
    assert impostor == registry.get("a")
    with provide_agents(registry):
        error = await refused(AskUserQuestionRequest([pkg_question()], agent=impostor), provider)
    assert error.code == ErrorCode.CALLER_NOT_LIVE
    assert error.message == NOT_LIVE


async def test_an_agent_under_no_live_id_is_not_live(provider: ScriptedProvider) -> None:
    with provide_agents(AgentRegistry()):
        error = await refused(
            AskUserQuestionRequest([pkg_question()], agent=FakeAgent("a")), provider
        )
    assert error.code == ErrorCode.CALLER_NOT_LIVE


async def test_a_child_agent_is_a_delegated_caller(provider: ScriptedProvider) -> None:
    registry = AgentRegistry()
    root, child = FakeAgent("root"), FakeAgent("child")
    registry.enter(root)
    registry.enter(child, owner=root)
    with provide_agents(registry):
        error = await refused(AskUserQuestionRequest([pkg_question()], agent=child), provider)
    assert error.code == ErrorCode.DELEGATED_CALLER
    assert error.message == DELEGATED


async def test_an_agent_whose_session_says_delegated_but_live_as_root_may_ask(
    provider: ScriptedProvider,
) -> None:
    registry = AgentRegistry()
    agent = FakeAgent("resumed", session="delegated")
    registry.enter(agent)
    with provide_agents(registry):
        answer = await ask(AskUserQuestionRequest([pkg_question()], agent=agent))
    assert answer.answers[0].selected == ("npm",)
    assert provider.last_request.agent is agent


async def test_admission_comes_before_structure(provider: ScriptedProvider) -> None:
    request = AskUserQuestionRequest([pkg_question(id="")], agent=FakeAgent("a"))
    error = await refused(request, provider)
    assert error.code == ErrorCode.CALLER_NOT_LIVE


async def test_a_request_without_agent_is_not_checked_for_admission(
    provider: ScriptedProvider,
) -> None:
    await ask(AskUserQuestionRequest([pkg_question()]))
    assert len(provider.requests) == 1


@pytest.mark.parametrize(
    ("question", "message"),
    [
        (
            pkg_question(detail=PLAN, intent=PlanReviewIntent("Ship it")),
            'question pkg declares intent plan-review whose approve label "Ship it"'
            " names none of its options",
        ),
        (
            AskUserQuestionItem("plan", "Approve?", detail=PLAN, intent=PlanReviewIntent("Yes")),
            'question plan declares intent plan-review whose approve label "Yes"'
            " names none of its options",
        ),
        (
            pkg_question(intent=PlanReviewIntent("npm")),
            "question pkg declares intent plan-review without the detail it reviews",
        ),
        (
            pkg_question(intent=UnknownIntent("vote")),
            "question pkg declares intent vote without the detail an intent requires",
        ),
        (  # a plan of invisible characters shows nothing to approve
            pkg_question(detail="\u200b\u2060 \n", intent=PlanReviewIntent("npm")),
            "question pkg declares intent plan-review without the detail it reviews",
        ),
    ],
)
async def test_bad_intents_are_refused(
    provider: ScriptedProvider, question: AskUserQuestionItem, message: str
) -> None:
    error = await refused(AskUserQuestionRequest([question]), provider)
    assert error.code == ErrorCode.BAD_INTENT
    assert error.message == message


async def test_structure_comes_before_intents(provider: ScriptedProvider) -> None:
    bad_intent = pkg_question(intent=PlanReviewIntent("npm"))
    bad_structure = pkg_question(id="other", question="")
    error = await refused(AskUserQuestionRequest([bad_intent, bad_structure]), provider)
    assert error.code == ErrorCode.BAD_REQUEST
    assert error.message == "questions[1].question: must not be empty"


async def test_a_valid_intent_passes_through(provider: ScriptedProvider) -> None:
    question = pkg_question(detail=PLAN, intent=PlanReviewIntent("npm"))
    await ask(AskUserQuestionRequest([question]))
    assert provider.last_request.questions[0].intent == PlanReviewIntent("npm")


async def test_unknown_intents_pass_through(provider: ScriptedProvider) -> None:
    question = pkg_question(detail=PLAN, intent=UnknownIntent("vote", {"quorum": 2}))
    await ask(AskUserQuestionRequest([question]))
    assert provider.last_request.questions[0].intent == UnknownIntent("vote", {"quorum": 2})


async def test_no_provider_comes_last(request_one: AskUserQuestionRequest) -> None:
    with pytest.raises(UserInteractionError) as info:
        await ask(AskUserQuestionRequest([pkg_question(intent=PlanReviewIntent("npm"))]))
    assert info.value.code == ErrorCode.BAD_INTENT
    with pytest.raises(UserInteractionError) as info:
        await ask(request_one)
    assert info.value.code == ErrorCode.NO_PROVIDER
    assert info.value.message == "no user-interaction provider is registered"


def test_check_request_makes_the_same_checks_without_dispatch() -> None:
    request = AskUserQuestionRequest([pkg_question()])
    assert check_request(request) is request
    with pytest.raises(UserInteractionError) as info:
        check_request(AskUserQuestionRequest([]))
    assert info.value.code == ErrorCode.EMPTY_QUESTIONS


# ---------------------------------------------------------------- provider failures


class Raising:
    def __init__(self, error: BaseException) -> None:
        self.error = error

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        raise self.error


async def test_a_provider_bug_becomes_provider_failed_with_the_original_as_cause(
    request_one: AskUserQuestionRequest,
) -> None:
    bug = KeyError("oops")
    with provide(Raising(bug)), pytest.raises(UserInteractionError) as info:
        await ask(request_one)
    assert info.value.code == ErrorCode.PROVIDER_FAILED
    assert info.value.message == "the user-interaction provider failed: KeyError: 'oops'"
    assert info.value.__cause__ is bug


@pytest.mark.parametrize(
    "error",
    [
        UserInteractionError("the user dismissed it", ErrorCode.ASK_CANCELLED),
        HarnessError("the UI is gone", "UI_GONE"),
    ],
)
async def test_harness_errors_from_the_provider_pass_through_unchanged(
    request_one: AskUserQuestionRequest, error: HarnessError
) -> None:
    with provide(Raising(error)), pytest.raises(HarnessError) as info:
        await ask(request_one)
    assert info.value is error


async def test_a_provider_without_ask_is_a_provider_failure(
    request_one: AskUserQuestionRequest,
) -> None:
    with provide(object()), pytest.raises(UserInteractionError) as info:  # type: ignore[arg-type]
        await ask(request_one)
    assert info.value.code == ErrorCode.PROVIDER_FAILED
    assert isinstance(info.value.__cause__, AttributeError)


# ---------------------------------------------------------------- abort and cancellation


async def test_abort_from_another_thread_while_the_provider_waits() -> None:
    provider = BlockingProvider()
    controller = AbortController()
    reason = RuntimeError("user closed the tab")
    with provide(provider):
        pending = asyncio.create_task(
            ask(AskUserQuestionRequest([pkg_question()], signal=controller.signal))
        )
        await provider.started.wait()
        thread = threading.Thread(target=controller.abort, args=(reason,))
        thread.start()
        with pytest.raises(UserInteractionError) as info:
            await pending
        thread.join()
    assert info.value.code == ErrorCode.ASK_ABORTED
    assert info.value.message == "ask_user_question was aborted before the user answered"
    assert info.value.__cause__ is reason
    assert provider.cleaned_up == 1
    assert provider.pending == 0
    assert controller.signal._listeners == {}
    assert _current_task().cancelling() == 0


async def test_a_timeout_signal_gives_ask_timeout_and_cleans_up() -> None:
    provider = BlockingProvider()
    signal = AbortSignal.timeout(0.05)
    with provide(provider), pytest.raises(UserInteractionError) as info:
        await ask(AskUserQuestionRequest([pkg_question()], signal=signal))
    assert info.value.code == ErrorCode.ASK_TIMEOUT
    assert info.value.message == "ask_user_question timed out before the user answered"
    assert isinstance(info.value.__cause__, TimeoutError)
    assert provider.pending == 0
    assert signal._listeners == {}


async def test_a_cancelled_calling_task_cancels_the_provider() -> None:
    provider = BlockingProvider()
    controller = AbortController()
    with provide(provider):
        pending = asyncio.create_task(
            ask(AskUserQuestionRequest([pkg_question()], signal=controller.signal))
        )
        await provider.started.wait()
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pending
    assert provider.cleaned_up == 1
    assert controller.signal._listeners == {}


async def test_an_abort_racing_an_outer_cancel_lets_the_cancel_win() -> None:
    provider = BlockingProvider()
    controller = AbortController()
    with provide(provider):
        pending = asyncio.create_task(
            ask(AskUserQuestionRequest([pkg_question()], signal=controller.signal))
        )
        await provider.started.wait()
        controller.abort()
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pending
    assert provider.pending == 0


class SwallowsCancellation:
    """A badly behaved provider that answers even when cancelled."""

    def __init__(self) -> None:
        self.started = asyncio.Event()

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        self.started.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.Future()
        return AskUserQuestionAnswer([AskUserQuestionAnswerItem("pkg", ["npm"])])


async def test_an_abort_wins_over_a_provider_that_swallows_cancellation() -> None:
    provider = SwallowsCancellation()
    controller = AbortController()
    with provide(provider):
        pending = asyncio.create_task(
            ask(AskUserQuestionRequest([pkg_question()], signal=controller.signal))
        )
        await provider.started.wait()
        controller.abort()
        with pytest.raises(UserInteractionError) as info:
            await pending
    assert info.value.code == ErrorCode.ASK_ABORTED
    assert pending.cancelling() == 0


async def test_an_abort_after_the_answer_changes_nothing() -> None:
    controller = AbortController()
    with provide(ScriptedProvider({"pkg": "npm"})):
        answer = await ask(AskUserQuestionRequest([pkg_question()], signal=controller.signal))
    controller.abort()
    await asyncio.sleep(0)  # let any stray callback run: there must be none
    assert answer.answers[0].selected == ("npm",)
    assert _current_task().cancelling() == 0


async def test_many_concurrent_asks_leave_nothing_pending() -> None:
    provider = BlockingProvider()
    controllers = [AbortController() for _ in range(50)]
    with provide(provider):
        tasks = [
            asyncio.create_task(ask(AskUserQuestionRequest([pkg_question()], signal=c.signal)))
            for c in controllers
        ]
        await provider.wait_until_pending(50)
        for controller in controllers:
            controller.abort()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        registration = current_registration()
        assert registration is not None
        assert registration._watchers == {}
    assert all(
        isinstance(r, UserInteractionError) and r.code == ErrorCode.ASK_ABORTED for r in results
    )
    assert provider.pending == 0
    assert all(c.signal._listeners == {} for c in controllers)


async def test_answered_and_failed_asks_stop_watching_their_provider() -> None:
    class Flaky:
        def __init__(self) -> None:
            self.calls = 0

        async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
            self.calls += 1
            if self.calls == 2:
                raise OSError("the UI went away")
            return AskUserQuestionAnswer([AskUserQuestionAnswerItem("pkg", ["npm"])])

    with provide(Flaky()):
        registration = current_registration()
        assert registration is not None
        answer = await ask(AskUserQuestionRequest([pkg_question()]))
        assert answer.answers[0].selected == ("npm",)
        with pytest.raises(UserInteractionError) as failed:
            await ask(AskUserQuestionRequest([pkg_question()]))
        assert failed.value.code == ErrorCode.PROVIDER_FAILED
        assert registration._watchers == {}


async def test_options_with_descriptions_reach_the_provider(provider: ScriptedProvider) -> None:
    question = pkg_question(options=[AskUserQuestionOption("npm", "ships with node")])
    await ask(AskUserQuestionRequest([question]))
    assert provider.last_request.questions[0].options[0].description == "ships with node"


# ------------------------------------------------------------------- the asking task
# ask() must find the task it runs in: it refuses to run outside one, and an abort or a
# disposal cancels that task. These hold it to asyncio's answer in another thread's loop,
# a loop callback and trio run as a guest.


class _TaskWitness:
    """Answers at once, noting the task it runs in and the task ``ask()`` would cancel."""

    def __init__(self) -> None:
        self.seen: list[tuple[asyncio.Task[object] | None, list[asyncio.Task[object]]]] = []

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        registration = current_registration()
        assert registration is not None
        stops = [stop for stop in registration._watchers if isinstance(stop, _Stop)]
        self.seen.append((asyncio.current_task(), [stop.task for stop in stops]))
        return AskUserQuestionAnswer([AskUserQuestionAnswerItem("pkg", ["npm"])])

    def running_tasks(self) -> list[asyncio.Task[object]]:
        """The task of each ask, once each is known to be the task ``ask()`` found."""
        for running, found in self.seen:
            assert running is not None
            assert found == [running]
        return [running for running, _ in self.seen if running is not None]


def _first_step_of_an_ask() -> str:
    """Step a new ask by hand, outside any task: its ``RuntimeError``'s message, or what it did."""
    coroutine = ask(AskUserQuestionRequest([pkg_question()]))
    try:
        coroutine.send(None)
    except RuntimeError as exc:
        return str(exc)
    except StopIteration:
        return "answered outside a task"
    coroutine.close()
    return "waiting outside a task"


async def test_each_threads_loop_finds_its_own_task() -> None:
    witness = _TaskWitness()

    def in_a_thread() -> None:
        async def twice() -> None:
            await ask(AskUserQuestionRequest([pkg_question()]))
            await ask(AskUserQuestionRequest([pkg_question()]))

        asyncio.run(twice())

    with provide(witness):
        await ask(AskUserQuestionRequest([pkg_question()]))
        await asyncio.to_thread(in_a_thread)  # its loop asks after ours was found
        await ask(AskUserQuestionRequest([pkg_question()]))  # and ours after its
    tasks = witness.running_tasks()
    assert len(tasks) == 4
    here = asyncio.get_running_loop()
    assert [task.get_loop() is here for task in tasks] == [True, False, False, True]


async def test_ask_from_a_loop_callback_outside_any_task_is_refused(
    provider: ScriptedProvider,
) -> None:
    await ask(AskUserQuestionRequest([pkg_question()]))  # this loop is found, in a task
    loop = asyncio.get_running_loop()
    outcome: asyncio.Future[str] = loop.create_future()

    loop.call_soon(lambda: outcome.set_result(_first_step_of_an_ask()))
    assert await outcome == ASYNCIO_REQUIRED_MESSAGE
    assert len(provider.requests) == 1


async def test_trio_run_as_a_guest_on_this_loop_is_refused(provider: ScriptedProvider) -> None:
    import trio  # in the test extra

    await ask(AskUserQuestionRequest([pkg_question()]))  # this loop is found, in a task
    loop = asyncio.get_running_loop()
    refusal: asyncio.Future[str] = loop.create_future()

    async def ask_from_trio() -> str:
        try:
            await ask(AskUserQuestionRequest([pkg_question()]))
        except RuntimeError as exc:
            return str(exc)
        return "asked from trio"

    trio.lowlevel.start_guest_run(
        ask_from_trio,
        run_sync_soon_threadsafe=loop.call_soon_threadsafe,
        done_callback=lambda outcome: refusal.set_result(outcome.unwrap()),
    )
    assert await refusal == ASYNCIO_REQUIRED_MESSAGE
    assert len(provider.requests) == 1


# ---------------------------------------------------------------------------- ask_with


async def test_ask_with_asks_the_given_provider_whatever_is_registered_around() -> None:
    request = AskUserQuestionRequest([pkg_question()])
    outer, given = ScriptedProvider({"pkg": "npm"}), ScriptedProvider({"pkg": "yarn"})
    with provide(outer):
        mine = await ask_with(request, given)
        theirs = await ask_with(request, None)  # none given: the one in context
        registration = current_registration()  # the given one left no trace here
        assert registration is not None
        assert registration.provider is outer
    assert (mine.answers[0].selected, theirs.answers[0].selected) == (("yarn",), ("npm",))
    assert (given.requests, outer.requests) == ([request], [request])


async def test_ask_with_none_and_nothing_registered_is_no_provider() -> None:
    with pytest.raises(UserInteractionError) as caught:
        await ask_with(AskUserQuestionRequest([pkg_question()]), None)
    assert caught.value.code == ErrorCode.NO_PROVIDER


async def test_cancelling_the_caller_of_ask_with_withdraws_the_question() -> None:
    blocking = BlockingProvider()
    task = asyncio.create_task(ask_with(AskUserQuestionRequest([pkg_question()]), blocking))
    await blocking.started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert blocking.cleaned_up == 1


def test_with_provider_sync_registers_the_provider_for_the_call_only() -> None:
    given = ScriptedProvider()
    seen = with_provider_sync(given, current_registration)
    assert seen is not None
    assert seen.provider is None
    assert current_registration() is None
