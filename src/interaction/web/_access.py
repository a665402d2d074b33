"""Who sees and who may settle what on this server: its team (the relay's, or its own),
a deployment's default assignment for the questions that name nobody, and who may change
the rules. Every route asks :class:`Access`; the checks themselves are the core's."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .._core import (
    BAD_TEAM,
    AskUserQuestionRequest,
    Assignment,
    Team,
    UserInteractionError,
    assignment_of,
    may_see,
    may_settle,
)
from ..relay import PendingQuestion, RelayBackend

__all__ = ["Access", "team_of"]


def team_of(relay: RelayBackend, team: Team | None, users: Mapping[str, str] | None) -> Team | None:
    """The app's team: ``team``, else the relay's (``BAD_TEAM`` when both are given and
    differ, or when a user of the team has no token here)."""
    relays = getattr(relay, "team", None)
    relays = relays if isinstance(relays, Team) else None
    if team is not None and relays is not None and team != relays:
        raise UserInteractionError("team: the app's team is not its relay's", BAD_TEAM)
    chosen = team if team is not None else relays
    if chosen is not None and users is not None:
        for name in chosen.users:
            if name not in users:
                raise UserInteractionError(f"team: user {name} has no token here", BAD_TEAM)
    return chosen


@dataclass(frozen=True, slots=True)
class Access:
    """The server's answers to who sees a question and who may settle it: ``team``
    resolves the groups, ``default_assignment`` stands for a question that names nobody,
    ``rules_by`` names who may change the rules (anyone with a token without it)."""

    team: Team | None
    default_assignment: Assignment | None = None
    rules_by: Assignment | None = None

    def may_settle(self, user: str | None, request: AskUserQuestionRequest) -> bool:
        """:func:`may_answer`, a question that names nobody taking ``default_assignment``."""
        return may_settle(self.team, user, assignment_of(request, self.default_assignment))

    def sees(self, user: str | None, question: PendingQuestion) -> bool:
        """Whether ``user`` is shown ``question`` (:func:`may_see`)."""
        return may_see(self.team, user, question.request, self.default_assignment)

    def sees_everything(self, user: str | None) -> bool:
        """Whether ``user`` is shown every question, whoever it is assigned to."""
        return user is None or (self.team is not None and self.team.sees_all(user))

    def may_change_rules(self, user: str | None) -> bool:
        """Whether ``user`` may add or revoke a rule: anyone with a token, or with
        ``rules_by`` only its assignees (the check :func:`may_answer` makes)."""
        return may_settle(self.team, user, self.rules_by)
