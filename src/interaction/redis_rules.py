"""Deprecated: :class:`RedisRuleStore` is in :mod:`interaction.redis`, with every other
Redis store. This name re-exports it, with a :class:`DeprecationWarning`, for
one minor release."""

try:
    import redis  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        'interaction.redis_rules needs the redis client: pip install "interaction-seam[redis]"'
        " (the interaction[redis] extra)"
    ) from exc

from ._moved import moved
from .redis import RedisRuleStore
from .redis._rules import MAX_ATTEMPTS, MIN_KEY_BYTES

moved(__name__, "interaction.redis")

__all__ = ["MAX_ATTEMPTS", "MIN_KEY_BYTES", "RedisRuleStore"]
