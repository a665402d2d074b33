"""The context-scoped registry of the active provider.

A registration lives in a ``ContextVar``, so it is seen by its own context and by every
context copied from it (asyncio tasks, ``asyncio.to_thread``, ``copy_context().run``), never
by a sibling or a parent. A registration is a mutable cell: disposing it empties the cell,
which every copied context sees at once, whichever thread or context disposes it.

A registration also remembers the event loop its provider lives on (the loop running where
it was registered, or the one given): ``interaction.ask_sync`` runs a thread's ask there.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Final, Protocol, TypeVar

from ._errors import DUPLICATE_MESSAGE, ErrorCode, UserInteractionError, bad_request, type_name
from ._types import UserInteractionProvider

__all__ = [
    "current_provider",
    "provide",
    "register_provider",
    "with_provider",
    "with_provider_sync",
]

T = TypeVar("T")


class Watcher(Protocol):
    """An ask waiting on a registration: told when the provider is disposed."""

    def on_dispose(self) -> None: ...


class Registration:
    """One provider registration and the asks it is serving."""

    __slots__ = ("_lock", "_watchers", "loop", "provider")

    def __init__(
        self, provider: UserInteractionProvider, loop: asyncio.AbstractEventLoop | None
    ) -> None:
        self.provider: UserInteractionProvider | None = provider
        self.loop = loop  # where a thread's ask_sync() runs the ask; None: on a loop of its own
        self._lock = threading.Lock()
        # A dict used as an ordered set: a disposal aborts the asks in the order they came.
        self._watchers: dict[Watcher, None] = {}

    def watch(self, watcher: Watcher) -> bool:
        """Tell ``watcher`` when this registration is disposed; ``False`` if it already is.

        Every ask watches and unwatches, so neither takes the lock (two lock round trips
        were a tenth of an ask): each dict operation is atomic, and ``dispose`` clears
        ``provider`` before it collects the watchers, so a watcher added after the
        collection sees the cleared provider here. A caller told ``False`` must ignore a
        late ``on_dispose`` (``dispose`` may have collected it just before).
        """
        self._watchers[watcher] = None
        if self.provider is None:
            self._watchers.pop(watcher, None)
            return False
        return True

    def unwatch(self, watcher: Watcher) -> None:
        self._watchers.pop(watcher, None)

    def dispose(self) -> None:
        with self._lock:  # one disposal collects the watchers
            if self.provider is None:
                return
            self.provider = None
            watchers = list(self._watchers)
            self._watchers.clear()
        for watcher in watchers:
            watcher.on_dispose()


_provider_var: Final[contextvars.ContextVar[Registration | None]] = contextvars.ContextVar(
    "interaction_provider", default=None
)


registration_in_context: Final = _provider_var.get
"""This context's registration, disposed or not (the variable's ``get``), for ``ask()``,
which looks at its ``provider`` itself."""


def current_registration() -> Registration | None:
    registration = _provider_var.get()
    if registration is None or registration.provider is None:
        return None
    return registration


def current_provider() -> UserInteractionProvider | None:
    """The provider active in this context, or ``None``."""
    registration = current_registration()
    return None if registration is None else registration.provider


def _register(
    provider: UserInteractionProvider, loop: asyncio.AbstractEventLoop | None
) -> tuple[Registration, contextvars.Token[Registration | None]]:
    if loop is None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # registered outside any loop: ask_sync() brings its own
            loop = None
    elif not isinstance(loop, asyncio.AbstractEventLoop):
        raise bad_request("loop", f"expected an asyncio event loop, got {type_name(loop)}")
    if current_registration() is not None:
        raise UserInteractionError(DUPLICATE_MESSAGE, ErrorCode.DUPLICATE_PROVIDER)
    registration = Registration(provider, loop)
    return registration, _provider_var.set(registration)


def register_provider(
    provider: UserInteractionProvider, *, loop: asyncio.AbstractEventLoop | None = None
) -> Callable[[], None]:
    """Make ``provider`` active in this context; returns its disposer.

    The disposer is idempotent and works from any thread or context. Disposing also
    aborts the asks still pending on this provider (``ASK_ABORTED``).
    Raises ``DUPLICATE_PROVIDER`` while another provider is active here.

    ``loop`` is the event loop the provider lives on, where ``interaction.ask_sync`` runs
    the asks of threads; by default the loop running here, if any.
    """
    registration, _ = _register(provider, loop)
    return registration.dispose


@contextmanager
def provide(
    provider: UserInteractionProvider, *, loop: asyncio.AbstractEventLoop | None = None
) -> Iterator[UserInteractionProvider]:
    """Make ``provider`` active for the body of the ``with``, and dispose it on exit.

    ``loop`` is as :func:`register_provider`'s.
    """
    registration, token = _register(provider, loop)
    try:
        yield provider
    finally:
        registration.dispose()
        # Exited in another context (a generator moved between tasks): the cell is empty anyway.
        with contextlib.suppress(ValueError):
            _provider_var.reset(token)


async def with_provider(
    provider: UserInteractionProvider | None, call: Callable[[], Awaitable[T]]
) -> T:
    """Await ``call()`` with ``provider`` active, or as it is if ``provider`` is ``None``.

    For a host that is handed a provider (a bridge's client, an integration's tool): a
    given provider is made active in a fresh context, so a provider registered around the
    caller never makes it ``DUPLICATE_PROVIDER``. Cancelling the caller cancels it.
    """
    if provider is None:
        return await call()

    async def inside() -> T:
        with provide(provider):
            return await call()

    return await asyncio.get_running_loop().create_task(inside(), context=contextvars.Context())


def with_provider_sync(
    provider: UserInteractionProvider | None,
    call: Callable[[], T],
    *,
    loop: asyncio.AbstractEventLoop | None = None,
) -> T:
    """:func:`with_provider` for a plain function's thread: ``call()`` with ``provider``
    registered (on ``loop``, the loop it lives on, if any) in a fresh context."""
    if provider is None:
        return call()

    def inside() -> T:
        with provide(provider, loop=loop):
            return call()

    return contextvars.Context().run(inside)
