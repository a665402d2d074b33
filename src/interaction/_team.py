"""Who may answer what: a request's assignment, a team's directory, and the one check.

A request may carry an :class:`Assignment`: the users and groups who may answer it
(``to``, names), and for a permission or plan-review question a ``quorum``, the number of
distinct assignees who must approve before it settles as approved. It travels with the
question on the wire and through every relay, like the provenance; it is about who
answers, not what is asked, so it is left out of equality and of ``request_digest``.

A :class:`Team` is the directory that gives the names a meaning: its users, its groups
(``ops = alice, bob``) and the users who may see every question (``see_all``). A name in
an assignment is a group of the team if it has one of that name, else a user.
:func:`may_answer` is the one check every transport and relay makes before an answer, a
dismissal or a rule change; a refusal is :data:`NOT_ASSIGNED`. :func:`may_see` is the one
answer to who is shown a question (on the page, and on a device by Web Push); a deployment's
default assignment stands in for a request that names nobody (:func:`assignment_of`).

Quorum: an *approval* is an answer that selects only the approving option (a permission's
``allow`` or ``allow_always``, a plan review's ``approve``) with no text of one's own; any
other answer by an assignee is a decline, and settles the question at once with that
answer (one veto is enough, as with GitHub's required reviewers); so does a dismissal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

from ._errors import BAD_TEAM, NOT_ASSIGNED, UserInteractionError, bad_request, type_name

if TYPE_CHECKING:  # _types imports this module
    from ._types import AskUserQuestionAnswer, AskUserQuestionRequest

__all__ = [
    "MAX_ASSIGNEES",
    "Approval",
    "Assignment",
    "Team",
    "approves",
    "assignment_of",
    "check_assignment",
    "check_assignment_in",
    "is_name",
    "may_answer",
    "may_see",
    "may_settle",
    "not_assigned_error",
    "quorum_progress",
]

MAX_ASSIGNEES: Final = 32
"""The most names an assignment may hold."""
MAX_TEAM: Final = 1_000
"""The most users, and the most groups, a team may hold."""

_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}", re.ASCII)


def is_name(name: object) -> bool:
    """Whether ``name`` may name a user or a group: 1 to 64 letters, digits or ``._@-``,
    starting with a letter or digit (what a web user's name may be)."""
    return type(name) is str and _NAME.fullmatch(name) is not None


def _name_rule(name: object) -> str:
    return f"{name!r} is not 1-64 letters, digits or ._@- (starting with a letter or digit)"


@dataclass(frozen=True, slots=True)
class Assignment:
    """Who may answer a request: ``to`` names users and groups (a group is resolved by the
    :class:`Team` of the host that checks); ``quorum``, for a permission or plan-review
    question, is how many distinct assignees must approve (``None``: the first answer
    settles it, as without an assignment)."""

    to: Sequence[str]
    quorum: int | None = None

    def __post_init__(self) -> None:
        if type(self.to) is list:
            object.__setattr__(self, "to", tuple(self.to))


@dataclass(frozen=True, slots=True)
class Approval:
    """One assignee's approval of a quorum question: who, and when (UTC)."""

    user: str
    at: datetime


def _frozen_groups() -> Mapping[str, tuple[str, ...]]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Team:
    """The directory of a deployment: ``users``, ``groups`` (name -> members, each a
    user) and the users who ``see_all`` questions, not only those assigned to them.

    The constructor refuses (``BAD_TEAM``, one line naming the fault) a bad or duplicate
    name, a group with no members, a member or ``see_all`` entry that is no user, and a
    group named like a user.
    """

    users: Sequence[str] = ()
    groups: Mapping[str, Sequence[str]] = field(default_factory=_frozen_groups)
    see_all: Sequence[str] = ()

    def __post_init__(self) -> None:
        users = _names(self.users, "users")
        if not isinstance(self.groups, Mapping):
            raise _bad_team(f"groups: expected a mapping, got {type_name(self.groups)}")
        if len(self.groups) > MAX_TEAM:
            raise _bad_team(f"groups: more than {MAX_TEAM} groups")
        known = frozenset(users)
        groups: dict[str, tuple[str, ...]] = {}
        for name, members in self.groups.items():
            if not is_name(name):
                raise _bad_team(f"group name {_name_rule(name)}")
            if name in known:
                raise _bad_team(f"group {name} is named like a user")
            listed = _names(members, f"group {name}")
            if not listed:
                raise _bad_team(f"group {name} has no members")
            for member in listed:
                if member not in known:
                    raise _bad_team(f"group {name}: {member} is not a user")
            groups[name] = listed
        see_all = _names(self.see_all, "see_all")
        for user in see_all:
            if user not in known:
                raise _bad_team(f"see_all: {user} is not a user")
        object.__setattr__(self, "users", users)
        object.__setattr__(self, "groups", MappingProxyType(groups))
        object.__setattr__(self, "see_all", see_all)

    def __hash__(self) -> int:
        return hash((self.users, tuple(self.groups.items()), self.see_all))

    def __reduce__(self) -> tuple[object, ...]:
        return (Team, (self.users, dict(self.groups), self.see_all))

    def people(self, names: Iterable[str]) -> frozenset[str]:
        """The users ``names`` (users and groups) stand for; a name the team does not know
        stands for nobody."""
        found: set[str] = set()
        for name in names:
            members = self.groups.get(name)
            if members is not None:
                found.update(members)
            elif name in self.users:
                found.add(name)
        return frozenset(found)

    def sees_all(self, user: str | None) -> bool:
        """Whether ``user`` is shown every question (unnamed: the one-token owner is)."""
        return user is None or user in self.see_all


def _bad_team(problem: str) -> UserInteractionError:
    return UserInteractionError(f"team: {problem}", BAD_TEAM)


def _names(value: object, what: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise _bad_team(f"{what}: expected a sequence of names, got {type_name(value)}")
    names = tuple(value)
    if len(names) > MAX_TEAM:
        raise _bad_team(f"{what}: more than {MAX_TEAM} names")
    seen: set[str] = set()
    for name in names:
        if not is_name(name):
            raise _bad_team(f"{what}: name {_name_rule(name)}")
        if name in seen:
            raise _bad_team(f"{what}: {name} is named twice")
        seen.add(name)
    return names


def _approval_question(request: AskUserQuestionRequest) -> bool:
    from ._types import PermissionIntent, PlanReviewIntent  # here: _types imports this module

    questions = request.questions
    return len(questions) == 1 and isinstance(
        questions[0].intent, PermissionIntent | PlanReviewIntent
    )


def check_assignment(request: AskUserQuestionRequest, path: str = "assignment") -> None:
    """``BAD_REQUEST`` naming the first fault of ``request.assignment`` that can be seen
    without a team: a bad, duplicate or missing name, more than :data:`MAX_ASSIGNEES`, a
    quorum that is not a whole number of at least 1, and a quorum on a request that is not
    one permission or plan-review question."""
    assignment = request.assignment
    if type(assignment) is not Assignment:
        raise bad_request(path, f"expected an Assignment, got {type_name(assignment)}")
    to = assignment.to
    if type(to) is not tuple:
        raise bad_request(f"{path}.to", f"expected a sequence of names, got {type_name(to)}")
    if not to:
        raise bad_request(f"{path}.to", "names nobody (name at least one user or group)")
    if len(to) > MAX_ASSIGNEES:
        raise bad_request(f"{path}.to", f"names more than {MAX_ASSIGNEES} users and groups")
    seen: set[str] = set()
    for index, name in enumerate(to):
        if not is_name(name):
            raise bad_request(f"{path}.to[{index}]", _name_rule(name))
        if name in seen:
            raise bad_request(f"{path}.to[{index}]", f"{name} is named twice")
        seen.add(name)
    quorum = assignment.quorum
    if quorum is None:
        return
    if type(quorum) is not int:
        raise bad_request(f"{path}.quorum", f"expected a whole number, got {type_name(quorum)}")
    if quorum < 1:
        raise bad_request(f"{path}.quorum", f"must be at least 1, got {quorum}")
    if quorum > MAX_TEAM:
        raise bad_request(f"{path}.quorum", f"must be at most {MAX_TEAM}, got {quorum}")
    if not _approval_question(request):
        raise bad_request(
            f"{path}.quorum", "applies to one permission or plan-review question only"
        )


def check_assignment_in(team: Team, request: AskUserQuestionRequest) -> None:
    """``BAD_REQUEST`` when ``team`` cannot serve ``request``'s assignment: a name it does
    not know, or a quorum larger than the people the names stand for."""
    assignment = request.assignment
    if assignment is None:
        return
    for index, name in enumerate(assignment.to):
        if name not in team.groups and name not in team.users:
            raise bad_request(f"assignment.to[{index}]", f"{name} is no user or group of this team")
    quorum = assignment.quorum
    if quorum is not None:
        people = len(team.people(assignment.to))
        if quorum > people:
            raise bad_request(
                "assignment.quorum",
                f"needs {quorum} approvers but {', '.join(assignment.to)}"
                f" {'stands' if len(assignment.to) == 1 else 'stand'} for {people}"
                f" {'person' if people == 1 else 'people'}",
            )


def may_answer(team: Team | None, user: str | None, request: AskUserQuestionRequest) -> bool:
    """Whether ``user`` may answer, dismiss or make a rule from ``request``: anyone may
    settle an unassigned one; an assigned one only a named assignee (``team`` resolves
    the groups; without one, each name is a user's)."""
    return may_settle(team, user, request.assignment)


def may_settle(team: Team | None, user: str | None, assignment: Assignment | None) -> bool:
    """:func:`may_answer` for an assignment alone (who may change the rules, say)."""
    if assignment is None:
        return True
    if user is None:
        return False
    if team is None:
        return user in assignment.to
    return user in team.people(assignment.to)


def assignment_of(
    request: AskUserQuestionRequest, default: Assignment | None = None
) -> Assignment | None:
    """Who may settle ``request``: its own assignment, else the deployment's ``default``."""
    return request.assignment if request.assignment is not None else default


def may_see(
    team: Team | None,
    user: str | None,
    request: AskUserQuestionRequest,
    default: Assignment | None = None,
) -> bool:
    """Whether ``user`` is shown ``request``: one assigned (by itself, else by ``default``)
    to nobody or to them, and every one to the unnamed token and the team's ``see_all``
    users. The page lists what this allows, and Web Push tells those devices only."""
    assignment = assignment_of(request, default)
    if assignment is None or user is None:
        return True
    if team is not None and team.sees_all(user):
        return True
    return may_settle(team, user, assignment)


def quorum_progress(approvals: Sequence[Approval], quorum: int) -> str:
    """How far a quorum question has come, as every channel says it: ``"1 of 2 approved:
    alice"`` (the approvers in the order they approved)."""
    names = ", ".join(approval.user for approval in approvals)
    return f"{len(approvals)} of {quorum} approved: {names}"


def not_assigned_error(question_id: str, user: str | None) -> UserInteractionError:
    """The ``NOT_ASSIGNED`` refusal of ``user``'s claim on ``question_id``."""
    who = "someone unnamed" if user is None else repr(user)
    return UserInteractionError(
        f"question {question_id!r} is assigned to others: {who} may not settle it", NOT_ASSIGNED
    )


def approves(request: AskUserQuestionRequest, answer: AskUserQuestionAnswer) -> bool:
    """Whether ``answer`` (checked against ``request``, one approval question) approves:
    it selects only the approving option and adds no text of its own."""
    from ._types import PermissionIntent, PlanReviewIntent  # here: _types imports this module

    intent = request.questions[0].intent
    if isinstance(intent, PermissionIntent):
        approving = {intent.allow} | ({intent.allow_always} if intent.allow_always else set())
    elif isinstance(intent, PlanReviewIntent):
        approving = {intent.approve}
    else:
        return False
    if len(answer.answers) != 1:
        return False
    item = answer.answers[0]
    return item.custom is None and len(item.selected) == 1 and item.selected[0] in approving


def now_utc() -> datetime:
    """When an approval is made, to the millisecond (as the wire carries it)."""
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)
