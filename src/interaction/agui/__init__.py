"""AG-UI, both ways, over the official ``ag-ui-protocol`` package (extra ``[agui]``).

- :class:`AGUIEndpoint`: an ASGI app that runs an agent step for AG-UI clients; a step's
  ask ends the run with an interrupt (``RUN_FINISHED`` with an interrupt outcome) and the
  next run's ``resume`` entry answers it, checked like every answer, at most once.
- :class:`AGUIProvider`: the same, for a Python AG-UI server of the host's own: the
  provider of one run, whose :meth:`~AGUIProvider.run` gives the event that ends it.
- :class:`AGUIInterrupts`: the signed interrupt state and its spent-state store, shared
  by both and by every worker of a deployment.

The interrupt's shape, the outcomes and the size limits are in docs/agui.md.
"""

try:
    import ag_ui.core  # noqa: F401
    import starlette  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        'interaction.agui needs ag-ui-protocol and Starlette: pip install "interaction-seam[agui]"'
    ) from exc

from ._endpoint import AGUIEndpoint, Step
from ._interrupts import (
    DATA_KEY,
    DEFAULT_TTL,
    AGUIInterrupts,
    AGUIProvider,
    RunEnd,
    interrupt_reason,
)
from ._limits import MAX_INPUT_BYTES, MAX_INTERRUPT_ID, MAX_PAYLOAD, MAX_RESUME_ENTRIES

__all__ = [
    "DATA_KEY",
    "DEFAULT_TTL",
    "MAX_INPUT_BYTES",
    "MAX_INTERRUPT_ID",
    "MAX_PAYLOAD",
    "MAX_RESUME_ENTRIES",
    "AGUIEndpoint",
    "AGUIInterrupts",
    "AGUIProvider",
    "RunEnd",
    "Step",
    "interrupt_reason",
]
