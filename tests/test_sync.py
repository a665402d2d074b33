"""The sync API: ask_sync and the helpers' sync forms, from plain threads and worker threads."""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextvars
import signal
import threading
from collections.abc import Awaitable, Callable, Iterator

import pytest
from hypothesis import given, settings
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput

import interaction
from interaction import (
    AbortController,
    AbortSignal,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    HarnessError,
    PlanVerdict,
    UserInteractionError,
    ask,
    ask_sync,
    provide,
)
from interaction.relay import Relay, RelayEvent
from interaction.terminal import TerminalProvider
from interaction.testing import BlockingProvider, ScriptedProvider
from interaction.tool import run_tool_sync

from .strategies import requests
from .terminal_helpers import DOWN, ENTER
from .web_helpers import client, served

Item = AskUserQuestionAnswerItem


def one(question_id: str = "q", *, signal: AbortSignal | None = None) -> AskUserQuestionRequest:
    return AskUserQuestionRequest(
        [AskUserQuestionItem(question_id, "Which one?", options=[AskUserQuestionOption("a")])],
        signal=signal,
    )


def refusal(name: str, call: str) -> str:
    return (
        f"interaction.{name}() was called in a thread that runs an asyncio event loop, whose"
        f" provider could never answer while it blocks; there, use `await interaction.{call}`"
    )


class Where:
    """A provider that answers "a" and records the thread and loop it was asked on."""

    def __init__(self) -> None:
        self.places: list[tuple[int, asyncio.AbstractEventLoop]] = []
        self.requests: list[AskUserQuestionRequest] = []

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        self.places.append((threading.get_ident(), asyncio.get_running_loop()))
        self.requests.append(request)
        return AskUserQuestionAnswer([Item(q.id, ["a"]) for q in request.questions])


def outcome(call: Callable[[], object]) -> object:
    try:
        return call()
    except HarnessError as error:
        return (type(error), error.code, error.message)


# ---------------------------------------------------------------- a thread with no loop


def test_a_plain_thread_asks_the_provider_registered_there() -> None:
    provider = Where()
    request = one()
    with provide(provider):
        answer = ask_sync(request)
    assert answer == AskUserQuestionAnswer([Item("q", ["a"])])
    assert provider.requests == [request]
    assert provider.requests[0] is request  # unchanged, as ask() passes it
    assert provider.places[0][0] == threading.get_ident()  # on a loop of this thread's own


def aborted() -> AbortSignal:
    controller = AbortController()
    controller.abort()
    return controller.signal


def bad_answer(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
    return AskUserQuestionAnswer([Item("nope")])


@pytest.mark.parametrize(
    ("request_", "script", "code"),
    [
        (one(signal=aborted()), {}, ErrorCode.ASK_ABORTED),
        (AskUserQuestionRequest([]), {}, ErrorCode.EMPTY_QUESTIONS),
        (AskUserQuestionRequest([AskUserQuestionItem("q", "")]), {}, ErrorCode.BAD_REQUEST),
        (one(), bad_answer, ErrorCode.BAD_ANSWER),
        (one(), RuntimeError("broken"), ErrorCode.PROVIDER_FAILED),
        (one(), None, ErrorCode.NO_PROVIDER),
    ],
)
def test_the_same_checks_and_errors_as_ask(
    request_: AskUserQuestionRequest, script: object, code: str
) -> None:
    def run(call: Callable[[], object]) -> object:
        if script is None:
            return outcome(call)
        with provide(ScriptedProvider(script)):  # type: ignore[arg-type]
            return outcome(call)

    synced = run(lambda: ask_sync(request_))
    awaited = run(lambda: asyncio.run(ask(request_)))
    assert synced == awaited
    assert isinstance(synced, tuple)
    assert synced[1] == code


@settings(max_examples=60, deadline=None)
@given(requests())
def test_any_request_is_answered_as_ask_answers_it(request: AskUserQuestionRequest) -> None:
    def skip_all(asked: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return AskUserQuestionAnswer([Item(q.id) for q in reversed(asked.questions)])

    with provide(ScriptedProvider(skip_all)):
        assert outcome(lambda: ask_sync(request)) == outcome(lambda: asyncio.run(ask(request)))


@pytest.mark.parametrize(
    ("call", "script", "expected"),
    [
        (lambda: interaction.choose_sync("Which?", ["a", "b"]), {"choice": "b"}, "b"),
        (
            lambda: interaction.choose_many_sync("Which?", ["a", "b"]),
            {"choices": ["b", "a", "mine"]},
            Item("choices", ["b", "a"], "mine"),
        ),
        (lambda: interaction.confirm_sync("Go?"), {"confirm": "Yes"}, True),
        (lambda: interaction.confirm_sync("Go?"), {"confirm": "later"}, False),
        (lambda: interaction.ask_text_sync("Name?"), {"text": "seam"}, "seam"),
        (
            lambda: interaction.review_plan_sync("# Plan"),
            {"plan": "Approve"},
            PlanVerdict(True, "Approve"),
        ),
        (
            lambda: interaction.review_plan_sync("# Plan"),
            {"plan": "smaller steps"},
            PlanVerdict(False, None, "smaller steps"),
        ),
    ],
)
def test_the_helpers_sync_forms(
    call: Callable[[], object], script: dict[str, object], expected: object
) -> None:
    provider = ScriptedProvider(script)  # type: ignore[arg-type]
    with provide(provider):
        assert call() == expected
    assert len(provider.requests) == 1


# ---------------------------------------------------------------- on the provider's loop


async def test_a_to_thread_worker_asks_on_the_providers_loop() -> None:
    provider = Where()
    with provide(provider):
        answer = await asyncio.to_thread(ask_sync, one())
    assert answer.answers == (Item("q", ["a"]),)
    assert provider.places == [(threading.get_ident(), asyncio.get_running_loop())]


async def test_run_in_executor_finds_the_provider_when_it_runs_in_the_context() -> None:
    provider = Where()
    loop = asyncio.get_running_loop()
    with provide(provider), concurrent.futures.ThreadPoolExecutor(1) as pool:
        answer = await loop.run_in_executor(pool, contextvars.copy_context().run, ask_sync, one())
        # run_in_executor alone does not copy the context, so it has no provider (as an
        # async caller in a context without one would not).
        with pytest.raises(UserInteractionError) as caught:
            await loop.run_in_executor(pool, ask_sync, one())
    assert answer.answers == (Item("q", ["a"]),)
    assert provider.places == [(threading.get_ident(), loop)]
    assert caught.value.code == ErrorCode.NO_PROVIDER


@pytest.mark.parametrize(
    ("call", "name", "awaitable"),
    [
        (lambda: ask_sync(one()), "ask_sync", "ask(request)"),
        (lambda: interaction.choose_sync("?", ["a"]), "choose_sync", "choose(...)"),
        (lambda: interaction.choose_many_sync("?", ["a"]), "choose_many_sync", "choose_many(...)"),
        (lambda: interaction.confirm_sync("?"), "confirm_sync", "confirm(...)"),
        (lambda: interaction.ask_text_sync("?"), "ask_text_sync", "ask_text(...)"),
        (lambda: interaction.review_plan_sync("p"), "review_plan_sync", "review_plan(...)"),
    ],
)
async def test_refused_on_a_running_loops_thread(
    call: Callable[[], object], name: str, awaitable: str
) -> None:
    provider = Where()
    with provide(provider), pytest.raises(RuntimeError) as caught:
        call()
    assert str(caught.value) == refusal(name, awaitable)
    assert provider.requests == []


async def test_refused_on_a_loop_thread_even_without_a_provider() -> None:
    with pytest.raises(RuntimeError) as caught:
        ask_sync(one())
    assert str(caught.value) == refusal("ask_sync", "ask(request)")


def test_a_provider_on_a_loop_that_is_not_running_is_refused() -> None:
    loop = asyncio.new_event_loop()
    provider = Where()
    try:
        with provide(provider, loop=loop), pytest.raises(RuntimeError) as caught:
            ask_sync(one())
    finally:
        loop.close()
    assert str(caught.value) == (
        "interaction.ask_sync(): the provider's event loop is not running; it must run"
        " (in another thread) while a thread asks through it"
    )
    assert provider.requests == []


def test_provide_refuses_a_loop_that_is_not_one() -> None:
    with pytest.raises(UserInteractionError) as caught, provide(Where(), loop="main"):  # type: ignore[arg-type]
        pass
    assert caught.value.code == ErrorCode.BAD_REQUEST
    assert caught.value.message == "loop: expected an asyncio event loop, got str"
    assert interaction.current_provider() is None


async def test_a_timeout_ends_the_threads_ask_and_withdraws_the_question() -> None:
    relay = Relay()
    events = relay.subscribe()
    # The timeout must fall after the relay was asked: one that fell first would refuse the
    # ask before any provider saw it (as it should), and there would be nothing to withdraw.
    # The thread's hop to the loop took over 50 ms on a loaded machine; half a second is
    # ample, and the waits are bounded so that a miss fails here rather than hangs.
    with provide(relay), pytest.raises(UserInteractionError) as caught:
        await asyncio.to_thread(ask_sync, one(signal=AbortSignal.timeout(0.5)))
    assert caught.value.code == ErrorCode.ASK_TIMEOUT
    assert isinstance(caught.value.__cause__, TimeoutError)
    assert relay.pending() == []
    async with asyncio.timeout(10):
        assert [(await anext(aiter(events))).kind, (await anext(aiter(events))).outcome] == [
            "requested",
            "aborted",
        ]


async def test_an_abort_from_another_thread_ends_the_threads_ask() -> None:
    relay = Relay()
    events = relay.subscribe()
    controller = AbortController()
    reason = RuntimeError("the run was stopped")
    with provide(relay):
        asking = asyncio.create_task(asyncio.to_thread(ask_sync, one(signal=controller.signal)))
        assert (await anext(aiter(events))).kind == "requested"
        threading.Thread(target=controller.abort, args=(reason,)).start()
        with pytest.raises(UserInteractionError) as caught:
            await asking
    assert caught.value.code == ErrorCode.ASK_ABORTED
    assert caught.value.__cause__ is reason
    assert relay.pending() == []


async def test_disposing_the_provider_aborts_the_threads_ask() -> None:
    provider = BlockingProvider()
    dispose = interaction.register_provider(provider)
    asking = asyncio.create_task(asyncio.to_thread(ask_sync, one()))
    await provider.wait_until_pending(1)
    dispose()
    with pytest.raises(UserInteractionError) as caught:
        await asking
    assert caught.value.code == ErrorCode.ASK_ABORTED
    assert caught.value.message == (
        "ask_user_question was aborted: the user-interaction provider was disposed while"
        " the question was pending"
    )
    assert provider.cleaned_up == 1


# ---------------------------------------------------------------- a loop in another thread


class LoopThread:
    """An event loop running a relay in a thread of its own, as a background UI would."""

    def __init__(self) -> None:
        self.runner = asyncio.Runner()
        self.loop = self.runner.get_loop()
        self.relay = Relay()
        self.requested = threading.Event()
        self.resolved = threading.Event()
        self.outcomes: list[str] = []
        self.on_requested: Callable[[], None] = lambda: None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        with self.runner:  # which cancels what is left, and lets it finish, as asyncio.run()
            self.runner.run(self._main())

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        watch = asyncio.create_task(self._watch())
        self._ready.set()
        await self._stop.wait()
        watch.cancel()

    async def _watch(self) -> None:
        event: RelayEvent
        async for event in self.relay.subscribe():
            if event.kind == "requested":
                self.requested.set()
                self.on_requested()
            elif event.outcome is not None:
                self.outcomes.append(event.outcome)
                self.resolved.set()

    def __enter__(self) -> LoopThread:
        self.thread.start()
        self._ready.wait()
        return self

    def stop(self) -> None:
        if self._stop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._stop.set)
        self.thread.join()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def call(self, make: Callable[[], Awaitable[object]]) -> object:
        async def run() -> object:
            return await make()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result()


@pytest.fixture
def default_sigint() -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("default_sigint")
def test_ctrl_c_in_the_waiting_thread_withdraws_the_question() -> None:
    main = threading.get_ident()
    assert threading.current_thread() is threading.main_thread()
    with LoopThread() as background:
        background.on_requested = lambda: signal.pthread_kill(main, signal.SIGINT)
        with provide(background.relay, loop=background.loop), pytest.raises(KeyboardInterrupt):
            ask_sync(one())
        # The interrupt returned only once the question was withdrawn from the relay.

        async def pending() -> list[object]:
            return list(background.relay.pending())

        assert background.call(pending) == []
        assert background.resolved.wait(10)
    assert background.outcomes == ["aborted"]


@pytest.mark.usefixtures("default_sigint")
@pytest.mark.usefixtures("default_sigint")
def test_ctrl_c_in_a_thread_asking_on_its_own_loop_cancels_the_provider() -> None:
    main = threading.get_ident()
    asked = threading.Event()
    cleaned: list[str] = []

    class Waits:
        async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
            asked.set()
            try:
                return await asyncio.Future()
            finally:
                cleaned.append(request.questions[0].id)

    def interrupt() -> None:
        asked.wait()
        signal.pthread_kill(main, signal.SIGINT)

    interrupter = threading.Thread(target=interrupt)
    interrupter.start()
    with provide(Waits()), pytest.raises(KeyboardInterrupt):
        ask_sync(one())
    interrupter.join()
    assert cleaned == ["q"]


CTRL_C_TRIES = 200


def ctrl_c_was_seen_at_once() -> bool:
    """Ask on a fresh loop, Ctrl-C as the provider waits; whether the ask ended within 2 s.

    When it did not, the loop is woken by another event so that the ask still ends.
    """
    main = threading.get_ident()
    asked = threading.Event()
    ended = threading.Event()
    loops: list[asyncio.AbstractEventLoop] = []
    seen: list[bool] = []

    class Waits:
        async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
            loops.append(asyncio.get_running_loop())
            asked.set()
            try:
                return await asyncio.Future()
            finally:
                ended.set()

    def interrupt() -> None:
        asked.wait()
        signal.pthread_kill(main, signal.SIGINT)
        seen.append(ended.wait(2))
        if not seen[0]:
            loops[0].call_soon_threadsafe(lambda: None)

    interrupter = threading.Thread(target=interrupt)
    interrupter.start()
    with provide(Waits()), pytest.raises(KeyboardInterrupt):
        ask_sync(one())
    interrupter.join()
    return seen[0]


@pytest.mark.usefixtures("default_sigint")
def test_ctrl_c_reaches_a_fresh_loop_however_it_is_timed() -> None:
    # A Ctrl-C that lands just before the loop blocks in its selector must still end the
    # ask at once: the signal wakes the loop, it is not left pending until another event.
    assert [ctrl_c_was_seen_at_once() for _ in range(CTRL_C_TRIES)].count(False) == 0


def test_the_providers_loop_stopping_aborts_the_waiting_ask() -> None:
    with (
        LoopThread() as background,
        provide(background.relay, loop=background.loop),
        concurrent.futures.ThreadPoolExecutor(1) as pool,
    ):
        asking = pool.submit(contextvars.copy_context().run, ask_sync, one())
        background.requested.wait()
        background.stop()
        with pytest.raises(UserInteractionError) as caught:
            asking.result()
    assert caught.value.code == ErrorCode.ASK_ABORTED
    assert caught.value.message == (
        "ask_user_question was aborted: the provider's event loop stopped while the"
        " question was pending"
    )


def test_a_closed_loop_is_refused() -> None:
    with LoopThread() as background:
        pass
    with provide(Where(), loop=background.loop), pytest.raises(RuntimeError) as caught:
        ask_sync(one())
    assert "the provider's event loop is not running" in str(caught.value)


# ---------------------------------------------------------------- many threads, one relay

ASKS = 1000
THREADS = 16


async def test_a_thousand_sync_asks_from_sixteen_threads_over_the_web_relay() -> None:
    loop = asyncio.get_running_loop()
    statuses: collections.Counter[int] = collections.Counter()
    async with asyncio.timeout(300), served() as (relay, server):
        watcher = relay.subscribe()
        queue: asyncio.Queue[RelayEvent] = asyncio.Queue()

        async def feed() -> None:
            async for event in watcher:
                if event.kind == "requested":
                    queue.put_nowait(event)

        async def answer_from_the_page() -> None:
            async with client(server) as http:
                while True:
                    event = await queue.get()
                    assert event.question is not None
                    qid = event.question.request.questions[0].id
                    body = {"answers": [{"id": qid, "selected": [], "custom": f"for {qid}"}]}
                    response = await http.post(f"/api/questions/{event.id}/answer", json=body)
                    statuses[response.status_code] += 1
                    queue.task_done()

        def worker(thread: int) -> list[tuple[str, str | None]]:
            got = []
            for n in range(thread, ASKS, THREADS):
                answer = ask_sync(AskUserQuestionRequest([AskUserQuestionItem(f"q{n}", "?")]))
                got.append((f"q{n}", answer.answers[0].custom))
            return got

        helpers = [asyncio.create_task(feed())]
        helpers += [asyncio.create_task(answer_from_the_page()) for _ in range(4)]
        with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
            results = await asyncio.gather(
                *(
                    loop.run_in_executor(pool, contextvars.copy_context().run, worker, thread)
                    for thread in range(THREADS)
                )
            )
        watcher.close()
        for helper in helpers:
            helper.cancel()
        await asyncio.gather(*helpers, return_exceptions=True)
        assert relay.pending() == []
    pairs = [pair for result in results for pair in result]
    assert len(pairs) == ASKS
    assert sorted(qid for qid, _ in pairs) == sorted(f"q{n}" for n in range(ASKS))
    assert all(custom == f"for {qid}" for qid, custom in pairs)  # its own answer, once each
    assert statuses == {200: ASKS}


# ---------------------------------------------------------------- the terminal UI


@pytest.fixture
def keyboard() -> Iterator[PipeInput]:
    with create_pipe_input() as pipe:
        yield pipe


async def test_a_thread_asks_while_the_terminal_ui_runs_on_the_main_loop(
    keyboard: PipeInput,
) -> None:
    keyboard.send_text(DOWN + ENTER)
    with provide(TerminalProvider(keyboard, DummyOutput())):
        async with asyncio.timeout(10):
            chosen = await asyncio.to_thread(
                interaction.choose_sync, "Which package manager?", ["pnpm", "npm", "yarn"]
            )
    assert chosen == "npm"


# ---------------------------------------------------------------- the tool's sync form


def test_run_tool_sync_renders_the_answer_and_the_errors() -> None:
    arguments = {"questions": [{"id": "q", "question": "Which?", "options": ["a", "b"]}]}
    with provide(ScriptedProvider({"q": "b"})):
        assert run_tool_sync(arguments).content == '{"answers":[{"id":"q","selected":["b"]}]}'
        failed = run_tool_sync('["not", "an", "object"]')
    assert failed.error == {"name": "UserInteractionError", "code": ErrorCode.BAD_REQUEST}
    assert failed.content == (
        "Error: ask_user_question: arguments: expected an object with questions, got array."
        " Fix the arguments and call ask_user_question again."
    )


async def test_run_tool_sync_is_refused_on_a_loops_thread() -> None:
    with pytest.raises(RuntimeError) as caught:
        run_tool_sync({"questions": []})
    assert str(caught.value) == refusal("tool.run_tool_sync", "tool.run_tool(arguments)")
