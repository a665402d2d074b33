"""``ask()``: check, dispatch to the active provider, wait with abort, check the answer."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Final, NoReturn

from ._answer_checks import fit_answer, fit_in_detail, is_clean_answer
from ._errors import (
    DISPOSED_MESSAGE,
    NO_PROVIDER_MESSAGE,
    ErrorCode,
    HarnessError,
    UserInteractionError,
    aborted_error,
)
from ._presentation import escape_controls
from ._registry import registration_in_context, with_provider
from ._request_checks import check_request
from ._suspend import AskSuspended, current_resumption, take_resumed
from ._types import AskUserQuestionAnswer, AskUserQuestionRequest, UserInteractionProvider

__all__ = ["ask", "ask_with"]

ASYNCIO_REQUIRED_MESSAGE: Final = (
    "interaction.ask() must be awaited in an asyncio task; other event loops"
    " (trio, also through anyio) are not supported"
)
MAX_PROVIDER_TEXT: Final = 1000
"""How many characters of a failed provider's message ``PROVIDER_FAILED`` keeps."""


def _passes_through(task: asyncio.Task[object], exc: BaseException) -> bool:
    """Whether ``exc``, raised by a provider we cancelled, outranks our reason for it."""
    cancelled = isinstance(exc, asyncio.CancelledError)
    if task.uncancel() > 0 and cancelled:
        return True  # someone else cancelled the task as well: that cancellation wins
    return not cancelled and not isinstance(exc, Exception)  # KeyboardInterrupt, SystemExit...


async def ask(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
    """Ask the human through the provider active in this context.

    The request is checked first, in this order, and a refused request never reaches the
    provider: an aborted signal (``ASK_ABORTED``/``ASK_TIMEOUT``), ``EMPTY_QUESTIONS``,
    ``CALLER_NOT_LIVE``/``DELEGATED_CALLER``, ``BAD_REQUEST``, ``BAD_INTENT``,
    ``NO_PROVIDER``. While the provider works, an abort of ``request.signal`` or the
    provider's disposal cancels it; an ``Exception`` it raises that is not a
    ``HarnessError`` becomes ``PROVIDER_FAILED``, while any other ``BaseException``
    (``KeyboardInterrupt``, ``SystemExit``, a foreign cancellation) pass through; its answer
    is checked (``BAD_ANSWER``) and returned in question order. Inside
    :func:`interaction.resume` a checked request takes its stored answer instead of
    reaching the provider; a provider's ``AskSuspended`` passes through (its ``control``
    exception, when it has one, is raised instead). Needs an asyncio event loop
    (``RuntimeError`` otherwise).
    """
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running asyncio loop: trio, curio, a bare coroutine.send()
        task = None
    if task is None:
        raise RuntimeError(ASYNCIO_REQUIRED_MESSAGE)
    check_request(request)
    if current_resumption() is not None and (resumed := take_resumed(request)) is not None:
        return fit_answer(request, resumed)
    registration = registration_in_context()
    if registration is None or (provider := registration.provider) is None:
        raise UserInteractionError(NO_PROVIDER_MESSAGE, ErrorCode.NO_PROVIDER)
    # An abort of the request's signal or the provider's disposal cancels the provider. The
    # wait is written out here rather than in a helper coroutine: every ask runs it.
    stop = _Stop(task)
    if not registration.watch(stop):  # disposed from another thread since we looked it up
        stop.waiting = False  # a disposal that already collected the stop finds no one
        raise UserInteractionError(NO_PROVIDER_MESSAGE, ErrorCode.NO_PROVIDER)
    signal = request.signal
    remove_abort = signal.add_listener(stop.on_abort) if signal is not None else None
    try:
        # Aborted after check_request looked (during admission, say) but before we
        # listened: the provider must never see it.
        if signal is not None and (reason := signal.reason) is not None:
            raise aborted_error(reason) from reason
        answer: object = await provider.ask(request)
    except BaseException as exc:
        if stop.error is not None:  # we cancelled the provider: say why, unless cancelled too
            if _passes_through(task, exc):
                raise
            raise stop.error from stop.cause
        _raise_provider_failure(exc)
    finally:
        stop.waiting = False
        if remove_abort is not None:
            remove_abort()
        registration.unwatch(stop)
    if stop.error is not None:  # the provider swallowed the cancellation and answered anyway
        task.uncancel()
        raise stop.error from stop.cause
    if type(answer) is AskUserQuestionAnswer and is_clean_answer(request, answer):
        return answer  # fit_answer's fast pass, inline
    return fit_in_detail(request, answer)


class _Stop:
    """Why ``ask()`` cancels its provider: an abort or a disposal, taken once on its loop.

    One small object per ask rather than four closures over shared cells: every ask makes
    one, so it is cheap to build.
    """

    __slots__ = ("cause", "error", "task", "waiting")

    def __init__(self, task: asyncio.Task[object]) -> None:
        self.task = task
        self.error: UserInteractionError | None = None
        self.cause: BaseException | None = None
        self.waiting = True

    def _interrupt(self, error: UserInteractionError, cause: BaseException | None) -> None:
        if self.waiting and self.error is None:
            self.error, self.cause = error, cause
            self.task.cancel()

    def _schedule(self, error: UserInteractionError, cause: BaseException | None) -> None:
        # Abort may come from any thread: interrupt on the asking loop. A closed loop
        # raises RuntimeError, and then nobody is waiting any more.
        with contextlib.suppress(RuntimeError):
            self.task.get_loop().call_soon_threadsafe(self._interrupt, error, cause)

    def on_abort(self, reason: BaseException) -> None:
        self._schedule(aborted_error(reason), reason)

    def on_dispose(self) -> None:
        self._schedule(UserInteractionError(DISPOSED_MESSAGE, ErrorCode.ASK_ABORTED), None)


def _raise_provider_failure(exc: BaseException) -> NoReturn:
    """Re-raise ``exc`` if it passes through ``ask()``, else raise ``PROVIDER_FAILED``."""
    if isinstance(exc, AskSuspended) and exc.control is not None:
        raise exc.control
    if isinstance(exc, HarnessError) or not isinstance(exc, Exception):
        raise exc
    raise UserInteractionError(
        f"the user-interaction provider failed: {describe_exception(exc)}",
        ErrorCode.PROVIDER_FAILED,
    ) from exc


def describe_exception(exc: BaseException) -> str:
    """``Type: message`` of an exception from foreign code, bounded and always printable.

    A ``__str__`` that raises, a message of megabytes, text with unpaired surrogates or
    terminal control sequences must not make the error itself unreportable or unsafe to
    show: controls and lone surrogates are escaped (:func:`escape_controls`).
    """
    try:
        text = str(exc)
    except Exception:
        text = "<the exception's message could not be read>"
    if len(text) > MAX_PROVIDER_TEXT:
        omitted = len(text) - MAX_PROVIDER_TEXT
        text = f"{text[:MAX_PROVIDER_TEXT]}... ({omitted} more characters)"
    name = type(exc).__name__
    return escape_controls(f"{name}: {text}" if text else name)


async def ask_with(
    request: AskUserQuestionRequest, provider: UserInteractionProvider | None
) -> AskUserQuestionAnswer:
    """``ask(request)`` through ``provider``, or through the provider active here if ``None``.

    A given provider is active in a fresh context (:func:`with_provider`): the bridges'
    clients (MCP, ACP, A2A) ask the provider they were given, whatever is registered around
    them.
    """
    return await with_provider(provider, lambda: ask(request))
