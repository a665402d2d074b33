"""A :class:`~interaction.relay.RelayBackend` on Redis (extra ``[redis]``): pending questions
that outlive the asking process and are shared by every host using the same store.

:class:`RedisRelay` keeps each question in a hash, the pending ids in a sorted set and the
``requested``/``resolved`` events in a Stream whose entry ids are the positions (the SSE
event ids); every change is one Lua script (``EVALSHA``, in ``_scripts``), so it is atomic
and first-claim-wins. Each process tails the stream with one blocking ``XREAD``
(``_tail``) and wakes its own waiters and event iterators from it. An asking process
holds a lease, refreshed while it lives; when it lapses, any live process withdraws the
dead asker's plain questions, while those asked with a resume key
(``AskUserQuestionRequest.key``) stay pending for the restarted asker, which asks again
with the same key and gets the stored answer at once. See docs/relay.md for the key
layout, the guarantees and the failure table.
"""

try:
    import redis  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        'interaction.redis_relay needs the redis client: pip install "interaction-seam[redis]"'
        " (the interaction[redis] extra)"
    ) from exc

from ._audit import RedisAuditLog as RedisAuditLog
from ._relay import RedisRelay as RedisRelay
from ._rules import RedisRuleStore as RedisRuleStore
from ._spent import RedisSpentStore as RedisSpentStore

__all__ = ["RedisAuditLog", "RedisRelay", "RedisRuleStore", "RedisSpentStore"]
