"""``ask()``: check, dispatch to the active provider, wait with abort, check the answer."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Final

from ._errors import (
    DISPOSED_MESSAGE,
    ErrorCode,
    HarnessError,
    UserInteractionError,
    aborted_error,
)
from ._registry import current_registration
from ._types import AskUserQuestionAnswer, AskUserQuestionRequest
from ._validation import check_answer, check_request

__all__ = ["ask"]

NO_PROVIDER_MESSAGE: Final = "no user-interaction provider is registered"


async def ask(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
    """Ask the human through the provider active in this context.

    The request is checked first, in this order, and a refused request never reaches the
    provider: an aborted signal (``ASK_ABORTED``/``ASK_TIMEOUT``), ``EMPTY_QUESTIONS``,
    ``CALLER_NOT_LIVE``/``DELEGATED_CALLER``, ``BAD_REQUEST``, ``BAD_INTENT``,
    ``NO_PROVIDER``. While the provider works, an abort of ``request.signal`` or the
    provider's disposal cancels it; a non-``HarnessError`` it raises becomes
    ``PROVIDER_FAILED``; its answer is checked (``BAD_ANSWER``) and returned in question order.
    """
    check_request(request)
    registration = current_registration()
    if registration is None or (provider := registration.provider) is None:
        raise UserInteractionError(NO_PROVIDER_MESSAGE, ErrorCode.NO_PROVIDER)

    task = asyncio.current_task()
    assert task is not None, "ask() must be awaited in an asyncio task"
    loop = asyncio.get_running_loop()
    stop: UserInteractionError | None = None
    stop_cause: BaseException | None = None
    waiting = True

    def interrupt(error: UserInteractionError, cause: BaseException | None) -> None:
        nonlocal stop, stop_cause
        if waiting and stop is None:
            stop, stop_cause = error, cause
            task.cancel()

    def schedule(error: UserInteractionError, cause: BaseException | None) -> None:
        # Abort may come from any thread: interrupt on the asking loop. A closed loop
        # raises RuntimeError, and then nobody is waiting any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(interrupt, error, cause)

    def on_abort(reason: BaseException) -> None:
        schedule(aborted_error(reason), reason)

    def on_dispose() -> None:
        schedule(UserInteractionError(DISPOSED_MESSAGE, ErrorCode.ASK_ABORTED), None)

    remove_dispose = registration.watch(on_dispose)
    if remove_dispose is None:  # disposed from another thread since we looked it up
        raise UserInteractionError(NO_PROVIDER_MESSAGE, ErrorCode.NO_PROVIDER)
    signal = request.signal
    remove_abort = signal.add_listener(on_abort) if signal is not None else None
    try:
        answer = await provider.ask(request)
    except BaseException as exc:
        if stop is not None:  # we cancelled the provider: report why, unless cancelled too
            if task.uncancel() == 0 or not isinstance(exc, asyncio.CancelledError):
                raise stop from stop_cause
            raise
        if isinstance(exc, HarnessError) or not isinstance(exc, Exception):
            raise
        raise UserInteractionError(
            f"the user-interaction provider failed: {type(exc).__name__}: {exc}",
            ErrorCode.PROVIDER_FAILED,
        ) from exc
    finally:
        waiting = False
        if remove_abort is not None:
            remove_abort()
        remove_dispose()
    if stop is not None:  # the provider swallowed the cancellation and answered anyway
        task.uncancel()
        raise stop from stop_cause
    return check_answer(request, answer)
