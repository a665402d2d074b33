"""Provenance: where a request comes from, shown by every UI and carried on the wire.

A request may say who asks (``source``: the agent, app or MCP server), on which ``host``,
in which ``session`` or run, through which ``tool``, and when (``asked_at``). It is data
*about* the request, never part of what the human is asked: it is left out of equality and
of :func:`~interaction.request_digest`, so a host that re-runs the code that asked (a
LangGraph node, a resumed MCP call) matches the suspended question although its
``asked_at`` is new.

Every field is untrusted text from a model or a remote peer: ``ask()`` refuses what it
refuses in a header (control characters, newlines, bidirectional overrides, lone
surrogates), blank text and more than :data:`MAX_PROVENANCE_TEXT` characters; UIs show it
escaped (``interaction.display``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

from ._errors import bad_request, type_name
from ._text_policy import check_text

if TYPE_CHECKING:  # _types imports this module
    from ._types import AskUserQuestionRequest

__all__ = ["MAX_PROVENANCE_TEXT", "Provenance", "check_provenance", "with_provenance"]

MAX_PROVENANCE_TEXT: Final = 200
"""The most characters a provenance text field may hold."""

_TEXT_FIELDS: Final = ("source", "host", "session", "tool")


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a request comes from; every field is optional.

    ``asked_at`` must be timezone-aware; the constructor converts it to UTC and keeps it to
    the millisecond, as the wire carries it (a naive one is kept as given, for ``ask()`` to
    refuse).
    """

    source: str | None = None
    """The agent, app or MCP server that asks."""
    host: str | None = None
    """The machine it runs on."""
    session: str | None = None
    """The session or run id."""
    tool: str | None = None
    """The tool that asks."""
    asked_at: datetime | None = None
    """When it asked, timezone-aware UTC."""

    def __post_init__(self) -> None:
        asked_at = self.asked_at
        if type(asked_at) is datetime:
            try:
                utc = asked_at.astimezone(UTC) if asked_at.utcoffset() is not None else None
            except Exception:  # out of range in UTC, or a tzinfo that raises: for the check
                return
            if utc is not None:
                millisecond = utc.replace(microsecond=utc.microsecond // 1000 * 1000)
                object.__setattr__(self, "asked_at", millisecond)


def check_provenance(provenance: object, path: str = "provenance") -> None:
    """``BAD_REQUEST`` naming the first fault of a request's provenance."""
    if type(provenance) is not Provenance:
        raise bad_request(path, f"expected a Provenance, got {type_name(provenance)}")
    for name in _TEXT_FIELDS:
        value = getattr(provenance, name)
        check_text(value, f"{path}.{name}", optional=True, nonblank=True)
        if value is not None and len(value) > MAX_PROVENANCE_TEXT:
            raise bad_request(f"{path}.{name}", f"longer than {MAX_PROVENANCE_TEXT} characters")
    asked_at = provenance.asked_at
    if asked_at is None:
        return
    if type(asked_at) is not datetime:
        raise bad_request(f"{path}.asked_at", f"expected a datetime, got {type_name(asked_at)}")
    try:
        offset = asked_at.utcoffset()
        if offset is not None:
            asked_at.astimezone(UTC)
    except OverflowError:
        raise bad_request(f"{path}.asked_at", "is out of range in UTC") from None
    except Exception as exc:  # a tzinfo whose utcoffset() raises
        raise bad_request(
            f"{path}.asked_at", f"reading its time zone raised {type(exc).__name__}"
        ) from None
    if offset is None:
        raise bad_request(f"{path}.asked_at", "must be timezone-aware")


def with_provenance(
    request: AskUserQuestionRequest,
    *,
    source: str | None = None,
    host: str | None = None,
    session: str | None = None,
    tool: str | None = None,
    asked_at: datetime | None = None,
) -> AskUserQuestionRequest:
    """``request`` with each provenance field it leaves unset taken from the arguments.

    What the asker said wins: a seam that knows where a request comes from (a relay its
    host, a CLI its ``--source``, an integration its subagent) fills only the gaps. The
    same request comes back when nothing changes; otherwise a copy with the same
    questions, agent, signal, key and assignment.
    """
    given = request.provenance
    current = Provenance() if given is None else given
    filled = Provenance(
        current.source if current.source is not None else source,
        current.host if current.host is not None else host,
        current.session if current.session is not None else session,
        current.tool if current.tool is not None else tool,
        current.asked_at if current.asked_at is not None else asked_at,
    )
    if filled == current:
        return request
    return replace(request, provenance=filled)
