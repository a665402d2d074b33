"""Spent states: each signed suspension state a bridge issues is redeemed at most once.

The MCP bridge's ``request_state`` and the AG-UI endpoint's interrupt ids are such states.
:class:`SpentStateStore` is the seam: ``spend(nonce, expires_at)`` records a state's
nonce and says whether it was fresh. :class:`MemorySpentStore` (the default) remembers
them in this process; ``RedisSpentStore`` (:mod:`interaction.redis`, extra
``[redis]``) shares them across restarts and workers.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Protocol

__all__ = ["MemorySpentStore", "SpentStateStore", "SpentStoreUnavailable"]


class SpentStoreUnavailable(Exception):
    """A store could not be reached or did not answer: the state is refused, not redeemed.

    Its message says where the store is, never its credentials."""


class SpentStateStore(Protocol):
    """Where the nonces of redeemed request states are kept until their states expire.

    ``spend`` must be atomic: of two concurrent calls with one nonce (in one process or
    in several sharing the store), exactly one returns ``True``. ``expires_at`` is the
    state's expiry in Unix seconds; the nonce need not be kept past it (the bridge refuses
    an expired state before it asks the store). A store that cannot answer raises; the
    bridge then refuses the state (it never redeems a state it could not record).
    """

    async def spend(self, nonce: str, expires_at: float) -> bool:
        """Record ``nonce`` as spent; ``True`` if it was not spent before."""
        ...


class MemorySpentStore:
    """The nonces spent in this process, forgotten once their states expire.

    Enough for stdio and single-process servers. It does not survive a restart and is not
    shared between workers: a deployment that restarts or runs several workers uses a
    shared store (``RedisSpentStore``), or a state spent before a restart (or on another
    worker) could be redeemed again.

    Checking a nonce costs the same however many are remembered: states are redeemed in
    about the order they were issued, so their expiries come nearly in order and the
    expired ones are forgotten from the front, up to the first live one (O(1) amortised;
    one that expires out of order is forgotten a little late, never early). Time here is
    the latest wall-clock reading seen, so a clock stepped backwards cannot revive a state
    whose nonce was already forgotten.
    """

    def __init__(self) -> None:
        # nonce -> expiry, in the order spent; an OrderedDict, whose first key is found in
        # O(1) however many were deleted before it (a dict's scan would grow with them).
        self._spent: OrderedDict[str, float] = OrderedDict()
        self._now = 0.0
        self._lock = threading.Lock()  # one store may serve servers on several threads

    def __len__(self) -> int:
        """How many nonces are remembered now."""
        return len(self._spent)

    def __contains__(self, nonce: object) -> bool:
        return nonce in self._spent

    async def spend(self, nonce: str, expires_at: float) -> bool:
        with self._lock:
            self._now = now = max(self._now, time.time())
            spent = self._spent
            while spent:
                oldest = next(iter(spent))
                if spent[oldest] > now:
                    break
                del spent[oldest]
            if nonce in spent:
                return False
            spent[nonce] = expires_at
            return True
