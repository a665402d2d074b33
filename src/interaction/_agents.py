"""Live agents: the ``Agent`` and ``LiveAgents`` protocols and the ready ``AgentRegistry``."""

from __future__ import annotations

import contextvars
import threading
from collections import deque
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import Final, Protocol, runtime_checkable

from ._errors import DELEGATED_MESSAGE, NOT_LIVE_MESSAGE, ErrorCode, UserInteractionError

__all__ = ["Agent", "AgentRegistry", "LiveAgents", "admit", "current_agents", "provide_agents"]


@runtime_checkable
class Agent(Protocol):
    """A calling agent; only its identity and ``id`` matter to the seam."""

    @property
    def id(self) -> str: ...


class LiveAgents(Protocol):
    """The runtime's view of which agents are live and which are roots (owned by none).

    A registry may also define ``is_root(agent) -> bool``; admission then asks it instead
    of scanning ``roots()``, so an ask costs the same however many agents are live.
    """

    def get(self, agent_id: str, /) -> Agent | None: ...

    def roots(self) -> Collection[Agent]: ...


# The live-agent registry of this context, kept beside its setter and getter.
_agents_var: Final[contextvars.ContextVar[LiveAgents | None]] = contextvars.ContextVar(
    "interaction_agents", default=None
)


def current_agents() -> LiveAgents | None:
    """The live-agent registry in this context, or ``None``."""
    return _agents_var.get()


@contextmanager
def provide_agents(registry: LiveAgents) -> Iterator[LiveAgents]:
    """Make ``registry`` the live-agent registry for the body of the ``with``.

    Unlike providers, an inner ``provide_agents`` shadows an outer one until it exits:
    a nested runtime brings its own live agents.
    """
    token = _agents_var.set(registry)
    try:
        yield registry
    finally:
        _agents_var.reset(token)


def admit(agent: object, agent_id: str) -> None:
    """The admission rule: only a live root of this context's registry may ask the human.

    ``agent_id`` is ``agent.id``, read once by the caller. Raises ``CALLER_NOT_LIVE`` when
    no registry is active or ``agent`` is not the live agent under its id, and
    ``DELEGATED_CALLER`` when a live agent owns it.
    """
    registry = _agents_var.get()
    # An AgentRegistry answers in one unlocked read for the common caller, a live root,
    # and otherwise from one locked look, so the refusal it names held at one moment.
    if type(registry) is AgentRegistry:
        entry = registry._agents.get(agent_id)  # _is_live_root, inline: every ask reads it
        if entry is not None and entry[0] is agent and entry[1] is None:
            return
        refusal = registry._refusal(agent, agent_id)
        if refusal is not None:
            raise refusal
        return
    if registry is None or registry.get(agent_id) is not agent:
        raise UserInteractionError(NOT_LIVE_MESSAGE, ErrorCode.CALLER_NOT_LIVE)
    check = getattr(registry, "is_root", None)
    if callable(check):
        is_root = bool(check(agent))
    else:
        is_root = any(root is agent for root in registry.roots())
    if not is_root:
        raise UserInteractionError(DELEGATED_MESSAGE, ErrorCode.DELEGATED_CALLER)


class AgentRegistry:
    """A thread-safe :class:`LiveAgents`: agents enter, optionally owned by another, and leave.

    An owner's descendants leave with it: a delegated run never outlives its owner and is
    never promoted to a root, so it cannot start asking the human once its owner is gone.
    """

    def __init__(self) -> None:
        # Each agent's entry holds it with its owner's id (None for a root, fixed at entry:
        # an owner's descendants leave with it), so one dict read, which is atomic, tells
        # whether it is a live root: admission's first look takes no lock. Everything else
        # holds it, so no reader sees a leave half done (an owner gone, its children not).
        self._lock = threading.Lock()
        self._agents: dict[str, tuple[Agent, str | None]] = {}
        # Children as ordered dicts (used as sets): leaving one child is O(1), not O(siblings).
        self._children: dict[str, dict[str, None]] = {}

    def enter(self, agent: Agent, owner: Agent | None = None) -> None:
        """Make ``agent`` live, owned by the live agent ``owner`` (a root when ``None``).

        Raises ``ValueError`` if an agent under the same id is already live, or if
        ``owner`` is not the live agent under its id.
        """
        agent_id = _id_of(agent)
        with self._lock:
            if agent_id in self._agents:
                raise ValueError(f"an agent with id {agent_id!r} is already live")
            owner_id = None
            if owner is not None:
                owner_id = _id_of(owner)
                if self._live(owner_id) is not owner:
                    raise ValueError(f"owner {owner_id!r} is not a live agent")
                self._children.setdefault(owner_id, {})[agent_id] = None
            self._agents[agent_id] = (agent, owner_id)

    def leave(self, agent: Agent) -> list[Agent]:
        """Remove ``agent`` and its descendants; returns those removed, ``agent`` first.

        Leaving an agent that is not live (or an equal but different object) removes nothing.
        """
        agent_id = _id_of(agent)
        with self._lock:
            entry = self._agents.get(agent_id)
            if entry is None or entry[0] is not agent:
                return []
            owner_id = entry[1]
            if owner_id is not None:
                del self._children[owner_id][agent_id]
            removed: list[Agent] = []
            pending = deque([agent_id])
            while pending:
                current = pending.popleft()
                removed.append(self._agents.pop(current)[0])
                pending.extend(self._children.pop(current, ()))
            return removed

    def get(self, agent_id: str, /) -> Agent | None:
        with self._lock:
            return self._live(agent_id)

    def _live(self, agent_id: str) -> Agent | None:
        entry = self._agents.get(agent_id)
        return None if entry is None else entry[0]

    def is_root(self, agent: object) -> bool:
        """Whether ``agent`` is live and owned by no live agent; O(1)."""
        return self._is_live_root(agent, getattr(agent, "id", None))

    def _is_live_root(self, agent: object, agent_id: object) -> bool:
        # Unlocked: one read. False sends admission to _refusal(), which waits out a leave.
        entry = self._agents.get(agent_id) if type(agent_id) is str else None
        return entry is not None and entry[0] is agent and entry[1] is None

    def _refusal(self, agent: object, agent_id: str) -> UserInteractionError | None:
        """Why ``agent`` may not ask the human now, or ``None`` if it may."""
        with self._lock:
            entry = self._agents.get(agent_id)
            if entry is None or entry[0] is not agent:
                return UserInteractionError(NOT_LIVE_MESSAGE, ErrorCode.CALLER_NOT_LIVE)
            if entry[1] is not None:
                return UserInteractionError(DELEGATED_MESSAGE, ErrorCode.DELEGATED_CALLER)
            return None

    def roots(self) -> list[Agent]:
        """The live agents owned by no live agent, in the order they entered."""
        with self._lock:  # iterating, unlike one read, must not meet a writer
            return [agent for agent, owner_id in self._agents.values() if owner_id is None]

    def owner_of(self, agent: Agent) -> Agent | None:
        """The live owner of the live ``agent``; ``None`` for a root or an agent not live."""
        agent_id = _id_of(agent)
        with self._lock:
            entry = self._agents.get(agent_id)
            if entry is None or entry[0] is not agent or entry[1] is None:
                return None
            return self._agents[entry[1]][0]

    def __len__(self) -> int:
        with self._lock:
            return len(self._agents)

    def __contains__(self, agent: object) -> bool:
        agent_id = getattr(agent, "id", None)
        with self._lock:
            return isinstance(agent_id, str) and self._live(agent_id) is agent


def _id_of(agent: object) -> str:
    agent_id = getattr(agent, "id", None)
    if not isinstance(agent_id, str) or not agent_id:
        raise TypeError(f"an agent needs a non-empty string id, got {agent_id!r}")
    return agent_id
