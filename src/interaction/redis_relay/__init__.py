"""Deprecated: :class:`RedisRelay` is in :mod:`interaction.redis`, with every other Redis
store. This name re-exports it, with a :class:`DeprecationWarning`, for one minor release."""

try:
    import redis  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        'interaction.redis_relay needs the redis client: pip install "interaction-seam[redis]"'
        " (the interaction[redis] extra)"
    ) from exc

from .._moved import moved
from ..redis import RedisRelay as RedisRelay

moved(__name__, "interaction.redis")

__all__ = ["RedisRelay"]
