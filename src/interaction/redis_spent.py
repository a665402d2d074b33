"""Deprecated: :class:`RedisSpentStore` is in :mod:`interaction.redis`, with every other
Redis store. This name re-exports it, with a :class:`DeprecationWarning`, for
one minor release."""

try:
    import redis  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "interaction.redis_spent.RedisSpentStore needs the redis client:"
        ' pip install "interaction-seam[redis]"'
    ) from exc

from ._moved import moved
from .redis import RedisSpentStore
from .redis._spent import CLOCK_SKEW

moved(__name__, "interaction.redis")

__all__ = ["CLOCK_SKEW", "RedisSpentStore"]
