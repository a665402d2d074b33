"""The ACP bridge, both ways, over the official ``agent-client-protocol`` SDK (extra ``[acp]``).

- Agent side (:mod:`interaction.acp._agent`): :class:`ACPProvider` asks the editor (the
  ACP client) a permission question through ``session/request_permission``, and any other
  question through ACP's form elicitation when the client declared it; where ACP cannot
  carry a question it is ``NO_PROVIDER``, with what ACP lacks.
- Client side (:mod:`interaction.acp._client`): :class:`InteractionClient` is an ACP client
  that answers ``session/request_permission`` and form elicitations with any provider.

What ACP cannot carry, and the size limits of what a peer sends, are in docs/acp.md.
"""

try:
    import acp  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        'interaction.acp needs the ACP SDK: pip install "interaction-seam[acp]"'
    ) from exc

from ._agent import PERMISSION_LABELS, ACPPeer, ACPProvider, permission_kind
from ._client import InteractionClient
from ._limits import MAX_FIELDS, MAX_OPTIONS, MAX_TEXT, MAX_TRIES

__all__ = [
    "MAX_FIELDS",
    "MAX_OPTIONS",
    "MAX_TEXT",
    "MAX_TRIES",
    "PERMISSION_LABELS",
    "ACPPeer",
    "ACPProvider",
    "InteractionClient",
    "permission_kind",
]
