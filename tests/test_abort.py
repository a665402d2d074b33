from __future__ import annotations

import logging
import threading
import time
import weakref

import pytest

from interaction import AbortController, AbortSignal, ErrorCode, UserInteractionError, _abort


def test_abort_sets_state_once_and_keeps_the_first_reason() -> None:
    controller = AbortController()
    signal = controller.signal
    assert (signal.aborted, signal.reason) == (False, None)
    signal.throw_if_aborted()
    first = RuntimeError("first")
    controller.abort(first)
    controller.abort(RuntimeError("second"))
    assert signal.aborted
    assert signal.reason is first
    with pytest.raises(RuntimeError, match="first"):
        signal.throw_if_aborted()


def test_default_reason_is_an_ask_aborted_error() -> None:
    controller = AbortController()
    controller.abort()
    assert isinstance(controller.signal.reason, UserInteractionError)
    assert controller.signal.reason.code == ErrorCode.ASK_ABORTED


def test_reason_must_be_an_exception() -> None:
    with pytest.raises(TypeError, match="abort reason must be an exception, got str"):
        AbortController().abort("why")  # type: ignore[arg-type]


def test_listeners_run_once_and_can_be_removed() -> None:
    controller = AbortController()
    seen: list[BaseException] = []
    controller.signal.add_listener(seen.append)
    remove = controller.signal.add_listener(lambda r: seen.append(ValueError("removed")))
    remove()
    remove()  # idempotent
    reason = RuntimeError("x")
    controller.abort(reason)
    controller.abort(reason)
    assert seen == [reason]


def test_listener_added_after_abort_runs_at_once() -> None:
    controller = AbortController()
    controller.abort(KeyError("k"))
    seen: list[BaseException] = []
    remove = controller.signal.add_listener(seen.append)
    assert seen == [controller.signal.reason]
    remove()


def test_a_failing_listener_is_logged_and_the_others_still_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    controller = AbortController()
    seen: list[BaseException] = []

    def broken(_: BaseException) -> None:
        raise ValueError("listener bug")

    controller.signal.add_listener(broken)
    controller.signal.add_listener(seen.append)
    controller.abort(RuntimeError("r"))
    assert len(seen) == 1
    assert "an abort listener raised" in caplog.text


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_interrupting_listener_lets_the_others_run_then_comes_out_of_abort(
    interrupt: type[BaseException],
) -> None:
    controller = AbortController()
    seen: list[BaseException] = []

    def interrupting(_: BaseException) -> None:
        raise interrupt

    controller.signal.add_listener(interrupting)
    controller.signal.add_listener(seen.append)
    with pytest.raises(interrupt):
        controller.abort()
    assert seen == [controller.signal.reason]
    assert controller.signal._listeners == {}


def test_a_listener_raising_system_exit_does_not_stop_the_timeout_thread(
    caplog: pytest.LogCaptureFixture,
) -> None:
    first = AbortSignal.timeout(0)
    first_done = threading.Event()

    def exiting(_: BaseException) -> None:
        first_done.set()
        raise SystemExit

    first.add_listener(exiting)
    assert first_done.wait(5)
    second = AbortSignal.timeout(0)
    fired = threading.Event()
    second.add_listener(lambda _: fired.set())
    assert fired.wait(5)  # the thread went on, having logged the first one's exit
    assert isinstance(second.reason, TimeoutError)
    assert "the abort timer failed; it goes on" in caplog.text


def test_abort_from_many_threads_calls_each_listener_exactly_once() -> None:
    controller = AbortController()
    calls: list[BaseException] = []
    lock = threading.Lock()

    def record(reason: BaseException) -> None:
        with lock:
            calls.append(reason)

    for _ in range(20):
        controller.signal.add_listener(record)
    barrier = threading.Barrier(8)

    def worker(n: int) -> None:
        barrier.wait()
        controller.abort(RuntimeError(str(n)))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 20
    assert all(reason is controller.signal.reason for reason in calls)


def test_timeout_aborts_with_a_timeout_error() -> None:
    signal = AbortSignal.timeout(0.01)
    fired = threading.Event()
    signal.add_listener(lambda _: fired.set())
    assert fired.wait(5)
    assert isinstance(signal.reason, TimeoutError)


def test_timeouts_fire_in_due_order_on_one_thread() -> None:
    late = AbortSignal.timeout(0.2)
    early = AbortSignal.timeout(0.0)
    order: list[str] = []
    done = threading.Event()
    early.add_listener(lambda _: order.append("early"))

    def last(_: BaseException) -> None:
        order.append("late")
        done.set()

    late.add_listener(last)
    assert done.wait(5)
    assert order == ["early", "late"]


@pytest.mark.parametrize("seconds", [-1, "1", True, None])
def test_timeout_refuses_a_bad_duration(seconds: object) -> None:
    with pytest.raises(ValueError, match="timeout seconds must be a non-negative number"):
        AbortSignal.timeout(seconds)  # type: ignore[arg-type]


def test_any_follows_the_first_source_and_lets_go_of_the_others() -> None:
    a, b = AbortController(), AbortController()
    combined = AbortSignal.any([a.signal, b.signal])
    assert not combined.aborted
    reason = RuntimeError("b")
    b.abort(reason)
    assert combined.reason is reason
    assert a.signal._listeners == {}  # no listener left behind on the other source
    a.abort(RuntimeError("a"))
    assert combined.reason is reason


def test_any_of_an_already_aborted_signal_is_aborted_with_its_reason() -> None:
    a, b = AbortController(), AbortController()
    reason = RuntimeError("early")
    b.abort(reason)
    combined = AbortSignal.any([a.signal, b.signal])
    assert combined.reason is reason
    assert a.signal._listeners == {}


def test_a_combination_of_combinations_aborts_however_deep_the_nesting(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Each level's abort called the next one's: some 3,000 levels overflowed the stack,
    # which was logged, and the outermost signal never aborted.
    root, other = AbortController(), AbortController()
    signal = AbortSignal.any([root.signal])
    for depth in range(10_000):
        signal = AbortSignal.any([signal, other.signal] if depth % 2 else [signal])
    heard: list[BaseException] = []
    signal.add_listener(heard.append)
    reason = RuntimeError("root")
    with caplog.at_level(logging.DEBUG, logger="interaction"):
        root.abort(reason)
    assert signal.reason is reason
    assert heard == [reason]
    assert caplog.records == []
    assert other.signal._listeners == {}  # let go of, as any settled combination does


def test_nested_combinations_cost_one_listener_per_signal_given() -> None:
    # Each level listens on the signals it was given, never on theirs: n levels, n sources.
    root = AbortController()
    sources = [AbortController() for _ in range(500)]
    levels = [AbortSignal.any([root.signal])]
    for source in sources:
        levels.append(AbortSignal.any([levels[-1], source.signal]))
    listening = [*levels[:-1], root.signal, *(source.signal for source in sources)]
    assert sum(len(signal._listeners) for signal in listening) == 2 * len(sources) + 1
    root.abort(RuntimeError("root"))
    assert all(level.aborted for level in levels)
    assert sum(len(signal._listeners) for signal in listening) == 0


def test_a_combined_signal_is_aborted_in_the_order_its_listeners_came() -> None:
    # As nested calls would: a combination subscribed before a listener is aborted before
    # that listener runs, and one subscribed after it, after.
    root = AbortController()
    middle = AbortSignal.any([root.signal])
    before = AbortSignal.any([middle])
    seen: list[tuple[bool, bool]] = []
    middle.add_listener(lambda _: seen.append((before.aborted, after.aborted)))
    after = AbortSignal.any([middle])
    root.abort(RuntimeError("root"))
    assert seen == [(True, False)]
    assert after.aborted


def test_an_interrupt_while_a_combination_settles_leaves_the_others_to_abort(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A Ctrl-C from a signal handler can land anywhere, a combination's settling too; the
    # combinations after it were left pending for good, with their source aborted.
    root = AbortController()
    combinations = [AbortSignal.any([root.signal]) for _ in range(5)]
    settle = _abort._Follow.settle
    calls = 0

    def interrupted_once(follow: _abort._Follow, reason: BaseException) -> object:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise KeyboardInterrupt
        return settle(follow, reason)

    monkeypatch.setattr(_abort._Follow, "settle", interrupted_once)
    with pytest.raises(KeyboardInterrupt):
        root.abort(RuntimeError("root"))
    assert [c.aborted for c in combinations] == [True, False, True, True, True]


def test_a_removed_listener_is_let_go_of_outside_the_signal_s_lock() -> None:
    # It may hold the last reference to a combination of another signal, whose finalizer
    # takes that signal's lock: two threads doing so crosswise waited on each other.
    signal = AbortController().signal
    locked_when_dropped: list[bool] = []

    class Held:
        pass

    def dropped() -> None:
        locked_when_dropped.append(signal._lock._is_owned())  # type: ignore[attr-defined]

    held = Held()
    weakref.finalize(held, dropped)

    def listener(_: BaseException, kept: Held = held) -> Held:
        return kept

    remove = signal.add_listener(listener)
    del held, listener
    remove()
    assert locked_when_dropped == [False]


def test_any_of_an_aborted_combined_signal_takes_its_reason_not_a_source_s() -> None:
    a, b = AbortController(), AbortController()
    combined = AbortSignal.any([a.signal, b.signal])
    first = RuntimeError("b first")
    b.abort(first)
    a.abort(RuntimeError("a later"))
    assert AbortSignal.any([combined]).reason is first
    assert AbortSignal.any([a.signal, combined]).reason is a.signal.reason  # the order given


def test_a_source_given_twice_through_a_combined_signal_is_followed_once() -> None:
    a, b = AbortController(), AbortController()
    again = AbortSignal.any([AbortSignal.any([a.signal, b.signal]), a.signal])
    heard: list[BaseException] = []
    again.add_listener(heard.append)
    a.abort(RuntimeError("a"))
    assert heard == [a.signal.reason]


def test_any_of_nothing_never_aborts() -> None:
    assert not AbortSignal.any([]).aborted


def test_repr_says_the_state() -> None:
    controller = AbortController()
    assert repr(controller.signal) == "<AbortSignal pending>"
    controller.abort(RuntimeError("x"))
    assert repr(controller.signal) == "<AbortSignal aborted, reason=RuntimeError('x')>"


def test_any_takes_only_signals() -> None:
    with pytest.raises(TypeError, match=r"AbortSignal\.any\(\) takes AbortSignals, got int"):
        AbortSignal.any([AbortController().signal, 1])  # type: ignore[list-item]


def test_signal_deadline_says_when_a_timeout_is_due_and_the_earliest_of_a_combination() -> None:
    signal_deadline = _abort.signal_deadline
    before = time.monotonic()
    later, sooner = AbortSignal.timeout(50), AbortSignal.timeout(20)
    after = time.monotonic()
    due = signal_deadline(later)
    assert due is not None
    assert before + 50 <= due <= after + 50
    combined = AbortSignal.any([AbortController().signal, later, sooner])
    assert signal_deadline(combined) == signal_deadline(sooner)
    assert signal_deadline(AbortController().signal) is None
    assert signal_deadline(AbortSignal.any([AbortController().signal])) is None
