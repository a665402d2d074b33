"""The A2A bridge, both ways, over the official ``a2a-sdk`` (extra ``[a2a]``).

- Server side (:mod:`interaction.a2a._server`): :class:`InteractiveExecutor` is an
  ``AgentExecutor`` whose work calls ``interaction.ask()``: each ask moves the task to
  ``input-required`` with a message carrying the questions (a data part with the wire
  JSON and a text rendering), and the client's reply resumes the work, also on a
  restarted server, from state signed with a key only the server holds.
- Client side (:mod:`interaction.a2a._client`): :func:`send_and_answer` sends a message
  and, each time the task needs input, asks any provider and replies in the same task.

The message shapes and the size limits are in docs/a2a.md.
"""

try:
    import a2a.server.agent_execution  # noqa: F401
    import starlette  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        'interaction.a2a needs the A2A SDK: pip install "interaction-seam[a2a]"'
    ) from exc

from ._client import send_and_answer
from ._common import DATA_KEY, MAX_REPLY, MAX_REQUEST, render_request
from ._server import DEFAULT_TTL, InteractiveExecutor, TaskWork, Wrap

__all__ = [
    "DATA_KEY",
    "DEFAULT_TTL",
    "MAX_REPLY",
    "MAX_REQUEST",
    "InteractiveExecutor",
    "TaskWork",
    "Wrap",
    "render_request",
    "send_and_answer",
]
