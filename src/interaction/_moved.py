"""The module names that moved to the engine packages (issue 46): each old name still
imports, re-exporting its names from the new place, with a :class:`DeprecationWarning`
for one minor release."""

from __future__ import annotations

import warnings

__all__ = ["moved"]


def moved(old: str, new: str) -> None:
    """Warn that the module ``old`` is now ``new`` (the caller is ``old``'s import)."""
    warnings.warn(
        f"{old} is deprecated: import from {new} (the old name goes in the next minor release)",
        DeprecationWarning,
        stacklevel=3,
    )
