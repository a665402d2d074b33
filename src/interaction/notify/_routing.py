"""Routing: which channels reach a question's assignees, and who is told next if it waits.

A :class:`Routing` gives each user and each group its own channels (alice by mail, ops in
a Slack channel) and a list of :class:`Escalation` (ops, then the on-call user 30 minutes
later). :class:`~interaction.notify.Notifications` reaches a question's assignees (its
:class:`~interaction.Assignment`) through them when it is asked, and each escalation's
target after its delay, only while the question still waits; with a quorum, only the
assignees who have not approved yet.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from .._core import Team
from ._dispatch import Notifier

__all__ = ["Escalation", "Reach", "Routing"]


@dataclass(frozen=True, slots=True)
class Escalation:
    """Reach ``to`` (a user or group) ``after`` seconds after ``source`` (a user or group)
    was reached, if the question still waits. ``source`` is a name as it was reached: an
    assignee as the request names it (reached when it is asked), or an escalation's ``to``.
    An escalation to its own source is a reminder: it repeats while the question waits."""

    source: str
    after: float
    to: str

    def __post_init__(self) -> None:
        for name in (self.source, self.to):
            if type(name) is not str or not name:
                raise ValueError(f"an escalation names a user or group, got {name!r}")
        if not self.after > 0:  # 0 would let a reminder repeat without end at once
            raise ValueError(f"an escalation waits more than 0 seconds, got {self.after!r}")


@dataclass(frozen=True, slots=True)
class Reach:
    """One channel to tell: ``to`` is the user or group whose channel it is; ``awaiting``,
    for a quorum question, the people it stands for who have not approved yet."""

    notifier: Notifier
    to: str
    awaiting: tuple[str, ...] = ()


def _no_channels() -> Mapping[str, tuple[Notifier, ...]]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Routing:
    """Each user's and group's ``channels`` (by name), the ``escalations``, and the
    ``team`` whose groups say who a group's members are (without one, every name is a
    user's).

    A user is reached through their channels. A group is reached through its own channels
    when it has any, otherwise through each member's. A name without channels is reached
    by nobody (its escalations still run). ``ValueError`` for a name the ``team`` does not
    know.
    """

    channels: Mapping[str, Sequence[Notifier]] = field(default_factory=_no_channels)
    escalations: Sequence[Escalation] = ()
    team: Team | None = None

    def __post_init__(self) -> None:
        channels = {name: tuple(notifiers) for name, notifiers in self.channels.items()}
        escalations = tuple(self.escalations)
        team = self.team
        if team is not None:
            named = [*channels, *(n for e in escalations for n in (e.source, e.to))]
            for name in named:
                if name not in team.users and name not in team.groups:
                    raise ValueError(f"{name} is no user or group of the team")
        object.__setattr__(self, "channels", MappingProxyType(channels))
        object.__setattr__(self, "escalations", escalations)

    def is_user(self, name: str) -> bool:
        """Whether ``name`` is a user's (without a team, every name is)."""
        return self.team is None or name in self.team.users

    def people(self, name: str) -> tuple[str, ...]:
        """The users ``name`` stands for: a group's members, or the user of that name."""
        members = self.team.groups.get(name) if self.team is not None else None
        return (name,) if members is None else tuple(members)

    def reach(self, names: Sequence[str], approved: Collection[str] | None = None) -> list[Reach]:
        """The channels that reach ``names`` now, each once. ``approved`` (a quorum
        question's approvers so far) leaves out who approved: a user who did is not
        reached, nor a group all of whose members did; a group's own channel is told who
        it still waits for."""
        found: list[Reach] = []
        seen: set[int] = set()
        for name in names:
            people = self.people(name)
            waiting = tuple(p for p in people if approved is None or p not in approved)
            if not waiting:
                continue
            if self.channels.get(name) or self.team is None or name not in self.team.groups:
                owners = [(name, waiting)]
            else:  # a group without channels of its own: its members, each by their own
                owners = [(member, (member,)) for member in waiting]
            for owner, awaiting in owners:
                for notifier in self.channels.get(owner, ()):
                    if id(notifier) not in seen:
                        seen.add(id(notifier))
                        said = awaiting if approved is not None else ()
                        found.append(Reach(notifier, owner, said))
        return found

    def first(self, assignees: Sequence[str]) -> tuple[str, ...]:
        """Whom a question assigned to ``assignees`` reaches when it is asked: each
        assignee but those another assignee escalates to (assigned to ops and oncall,
        with ops escalating to oncall: ops first), or all of them when that leaves none."""
        later = {e.to for e in self.escalations if e.source in assignees and e.source != e.to}
        return tuple(name for name in assignees if name not in later) or tuple(assignees)

    def after(self, name: str) -> list[Escalation]:
        """The escalations from ``name``."""
        return [escalation for escalation in self.escalations if escalation.source == name]
