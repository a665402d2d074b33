"""Deprecated: :class:`PostgresRelay` is in :mod:`interaction.postgres`, with every other
PostgreSQL store. This name re-exports it, with a :class:`DeprecationWarning`, for
one minor release."""

try:
    import psycopg  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "interaction.postgres_relay needs psycopg 3:"
        ' pip install "interaction-seam[postgres]" (the interaction[postgres] extra)'
    ) from exc

from .._moved import moved
from ..postgres import PostgresRelay as PostgresRelay

moved(__name__, "interaction.postgres")

__all__ = ["PostgresRelay"]
