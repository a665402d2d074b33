"""Sync callers: ``ask()`` and the one-call helpers from a plain thread.

A thin bridge around the async API, not a second path through it: each function runs its
async counterpart, with the calling thread's context (so the provider, the live agents and
a resumption are found as an async caller would find them), and blocks until it ends.

- The provider was registered on an event loop (or with ``loop=``): the ask runs on that
  loop, which must be running, and the thread waits. This is the case of a worker thread of
  ``asyncio.to_thread`` (or of ``run_in_executor`` with the context copied) while the web
  relay or the terminal UI runs on its loop.
- Otherwise (registered outside any loop, no provider at all): the ask runs on a fresh
  event loop in the calling thread.
- On the thread of a running event loop the call is refused with a ``RuntimeError``: it
  would block that loop, and deadlock when it is the provider's.

A ``KeyboardInterrupt`` (or another ``BaseException``) while the thread waits cancels the
ask, which withdraws the question, and is re-raised once the withdrawal is done.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import signal
import threading
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar

from ._ask import ask
from ._errors import ErrorCode, UserInteractionError
from ._helpers import (
    OptionLike,
    PlanVerdict,
    ask_text,
    choose,
    choose_many,
    confirm,
    review_plan,
)
from ._registry import registration_in_context
from ._types import AskUserQuestionAnswer, AskUserQuestionAnswerItem, AskUserQuestionRequest

if TYPE_CHECKING:
    from ._abort import AbortSignal
    from ._agents import Agent

__all__ = [
    "ask_sync",
    "ask_text_sync",
    "call_sync",
    "choose_many_sync",
    "choose_sync",
    "confirm_sync",
    "review_plan_sync",
]

T = TypeVar("T")

LOOP_STOPPED_MESSAGE: Final = (
    "ask_user_question was aborted: the provider's event loop stopped while the question"
    " was pending"
)


def refusal(name: str, call: str) -> str:
    """The message of a sync call made on a running event loop's thread."""
    return (
        f"interaction.{name}() was called in a thread that runs an asyncio event loop, whose"
        f" provider could never answer while it blocks; there, use `await interaction.{call}`"
    )


def call_sync(make: Callable[[], Coroutine[Any, Any, T]], name: str, call: str) -> T:
    """Run the coroutine ``make()`` builds as the sync API runs an ask, and return its result.

    ``name`` is the sync function's name and ``call`` the awaitable form the refusal on a
    loop's thread names (``"ask(request)"``). For extras that build a sync form of their
    own async call (``interaction.tool.run_tool_sync``, the sync framework tools).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError(refusal(name, call))
    registration = registration_in_context()
    loop = None if registration is None or registration.provider is None else registration.loop
    if loop is None:
        return _on_fresh_loop(make)
    if not loop.is_running():
        raise RuntimeError(
            f"interaction.{name}(): the provider's event loop is not running; it must run"
            " (in another thread) while a thread asks through it"
        )
    return _on_loop(loop, make)


def _on_fresh_loop(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run ``make()`` on a fresh loop in this thread (in a copy of this context).

    On the main thread, with Python's default Ctrl-C handler, the first Ctrl-C cancels the
    ask (which withdraws the question) and ``KeyboardInterrupt`` is raised once it has
    ended; a second one raises at once. ``asyncio.run`` does the same with a handler that
    only flags the signal, so a Ctrl-C that lands just before the loop blocks in its
    selector stays unseen until some other event wakes the loop. The loop's own signal
    handler wakes it through its self-pipe, so every Ctrl-C is seen at once.
    """
    with asyncio.Runner() as runner:
        loop = runner.get_loop()
        task: asyncio.Task[T] | None = None
        interrupts = 0

        def on_ctrl_c() -> None:
            nonlocal interrupts
            interrupts += 1
            if interrupts > 1 or task is None:
                raise KeyboardInterrupt
            task.cancel()

        async def main() -> T:
            nonlocal task
            task = asyncio.current_task()
            return await make()

        catching = (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        )
        if catching:
            try:
                loop.add_signal_handler(signal.SIGINT, on_ctrl_c)
            except NotImplementedError:  # a loop without signal handlers (Windows')
                catching = False
        try:
            return runner.run(main())
        except asyncio.CancelledError:
            if interrupts:
                raise KeyboardInterrupt from None
            raise
        finally:
            if catching:
                loop.remove_signal_handler(signal.SIGINT)  # Python's default handler again


def _on_loop(loop: asyncio.AbstractEventLoop, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run ``make()`` as a task on ``loop`` (another thread's) in this context; wait for it."""
    outcome: concurrent.futures.Future[T] = concurrent.futures.Future()
    tasks: list[asyncio.Task[T]] = []

    def finish(task: asyncio.Task[T]) -> None:
        if task.cancelled():  # not by us alone: the loop is shutting down, say
            outcome.set_exception(UserInteractionError(LOOP_STOPPED_MESSAGE, ErrorCode.ASK_ABORTED))
        elif (error := task.exception()) is not None:
            outcome.set_exception(error)
        else:
            outcome.set_result(task.result())

    def start() -> None:
        task = loop.create_task(make(), context=context)
        tasks.append(task)
        task.add_done_callback(finish)

    def stop() -> None:  # runs after start(): call_soon_threadsafe keeps the order
        tasks[0].cancel()

    context = contextvars.copy_context()  # the caller's provider, agents and resumption
    try:
        loop.call_soon_threadsafe(start)
    except RuntimeError:  # closed since we looked
        raise RuntimeError("the provider's event loop is closed") from None
    try:
        concurrent.futures.wait((outcome,))
    except BaseException:
        # KeyboardInterrupt, SystemExit from a signal handler: withdraw the question, wait
        # for the provider's cleanup (a second interrupt stops the wait), then re-raise.
        try:
            loop.call_soon_threadsafe(stop)
        except RuntimeError:  # the loop closed meanwhile: nothing is left to withdraw
            raise
        concurrent.futures.wait((outcome,))
        raise
    return outcome.result()


def ask_sync(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
    """``interaction.ask(request)`` for a thread that is not running an event loop.

    The same checks, errors and answer rules. The ask runs on the loop the provider was
    registered on while this thread waits (a worker thread of ``asyncio.to_thread``), or
    on a fresh loop in this thread when the provider was registered outside any loop.
    ``RuntimeError`` on a running loop's thread, where ``await interaction.ask(request)``
    is the call to make. An abort of ``request.signal`` (a timeout) ends it as for an async
    caller; a ``KeyboardInterrupt`` while waiting withdraws the question.
    """
    return call_sync(lambda: ask(request), "ask_sync", "ask(request)")


def choose_sync(
    question: str,
    options: Sequence[OptionLike],
    *,
    header: str | None = None,
    detail: str | None = None,
    id: str = "choice",
    agent: Agent | None = None,
    signal: AbortSignal | None = None,
) -> str | None:
    """:func:`interaction.choose` for a thread, as :func:`ask_sync` runs an ask."""
    return call_sync(
        lambda: choose(
            question, options, header=header, detail=detail, id=id, agent=agent, signal=signal
        ),
        "choose_sync",
        "choose(...)",
    )


def choose_many_sync(
    question: str,
    options: Sequence[OptionLike],
    *,
    header: str | None = None,
    detail: str | None = None,
    id: str = "choices",
    agent: Agent | None = None,
    signal: AbortSignal | None = None,
) -> AskUserQuestionAnswerItem:
    """:func:`interaction.choose_many` for a thread, as :func:`ask_sync` runs an ask."""
    return call_sync(
        lambda: choose_many(
            question, options, header=header, detail=detail, id=id, agent=agent, signal=signal
        ),
        "choose_many_sync",
        "choose_many(...)",
    )


def confirm_sync(
    question: str,
    *,
    yes: str = "Yes",
    no: str = "No",
    header: str | None = None,
    detail: str | None = None,
    id: str = "confirm",
    agent: Agent | None = None,
    signal: AbortSignal | None = None,
) -> bool:
    """:func:`interaction.confirm` for a thread, as :func:`ask_sync` runs an ask."""
    return call_sync(
        lambda: confirm(
            question,
            yes=yes,
            no=no,
            header=header,
            detail=detail,
            id=id,
            agent=agent,
            signal=signal,
        ),
        "confirm_sync",
        "confirm(...)",
    )


def ask_text_sync(
    question: str,
    *,
    header: str | None = None,
    detail: str | None = None,
    id: str = "text",
    agent: Agent | None = None,
    signal: AbortSignal | None = None,
) -> str | None:
    """:func:`interaction.ask_text` for a thread, as :func:`ask_sync` runs an ask."""
    return call_sync(
        lambda: ask_text(question, header=header, detail=detail, id=id, agent=agent, signal=signal),
        "ask_text_sync",
        "ask_text(...)",
    )


def review_plan_sync(
    plan: str,
    *,
    question: str = "Approve this plan?",
    approve: str = "Approve",
    decline: Sequence[str] = ("Revise",),
    header: str | None = "Plan",
    id: str = "plan",
    agent: Agent | None = None,
    signal: AbortSignal | None = None,
) -> PlanVerdict:
    """:func:`interaction.review_plan` for a thread, as :func:`ask_sync` runs an ask."""
    return call_sync(
        lambda: review_plan(
            plan,
            question=question,
            approve=approve,
            decline=decline,
            header=header,
            id=id,
            agent=agent,
            signal=signal,
        ),
        "review_plan_sync",
        "review_plan(...)",
    )
