"""Who decided an ask: the note a provider leaves for the audit trail around it.

A provider wrapper that answers by itself (a policy rule, a timeout) or a provider that
knows who answered (a named web user, an MCP or ACP client) calls :func:`report_decision`
while it handles an ask; :class:`interaction.audit.AuditProvider`, which wraps it, reads
what was reported with :func:`collect_decisions`. Nothing is kept when no audit listens.
A provider's ``ask()`` runs in the asking task's own context, so the note needs no
plumbing through the request.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

from ._core import Approval, escape_controls

__all__ = [
    "MAX_NAME",
    "DecidedBy",
    "Decision",
    "answerer_name",
    "collect_decisions",
    "listening",
    "peer_decision",
    "report_decision",
]

MAX_NAME: Final = 100
"""Characters of a remote peer's name that :func:`peer_decision` keeps (cut with "…")."""

DecidedBy: TypeAlias = Literal["human", "policy", "timeout"]
"""A person answered; a policy rule answered; the timeout policy answered."""


@dataclass(frozen=True, slots=True)
class Decision:
    """Who decided: ``by`` what, ``name`` of whom (an OS user, a web user, a client's
    name), for a policy the ``rule`` id that answered, and for a question with a quorum
    every ``approvals`` it collected (who and when, oldest first)."""

    by: DecidedBy
    name: str | None = None
    rule: str | None = None
    approvals: tuple[Approval, ...] = ()


_NOTES: ContextVar[list[Decision] | None] = ContextVar("interaction_decisions", default=None)


def listening() -> bool:
    """Whether an audit collects decisions here (so a hot path can skip building one)."""
    return _NOTES.get() is not None


def report_decision(decision: Decision) -> None:
    """Say who decided the ask being handled; the last report of an ask counts."""
    notes = _NOTES.get()
    if notes is not None:
        notes.append(decision)


def answerer_name(name: object) -> str | None:
    """``name``, untrusted text naming a person (a peer's own name, a web user's name read
    back from a shared relay's store), as a record may keep it: stripped, with its control
    characters escaped, cut to :data:`MAX_NAME` characters (with "…"); anything but a
    non-blank string names nobody (None)."""
    if not isinstance(name, str) or not name.strip():
        return None
    shown = escape_controls(name.strip(), keep_newlines=False)
    return shown if len(shown) <= MAX_NAME else shown[:MAX_NAME] + "…"


def peer_decision(name: object) -> Decision:
    """A person decided through a remote peer that calls itself ``name`` (an MCP or ACP
    client's name from its handshake, an A2A server's authenticated caller); the name is
    kept as :func:`answerer_name` keeps it."""
    return Decision("human", answerer_name(name))


@contextmanager
def collect_decisions() -> Iterator[list[Decision]]:
    """Collect the decisions reported inside the block (nested blocks collect their own)."""
    notes: list[Decision] = []
    token = _NOTES.set(notes)
    try:
        yield notes
    finally:
        _NOTES.reset(token)
