"""The stores on Redis or Valkey (extra ``[redis]``): the relay, rules, the audit trail,
spent states and used answer links, each under a key prefix, so a deployment on Redis
needs no other engine.

- :class:`RedisRelay`: a :class:`~interaction.relay.RelayBackend`. Each question is a
  hash, the pending ids a sorted set, the ``requested``/``resolved`` events a Stream whose
  entry ids are the positions (the SSE event ids); every change is one Lua script
  (``EVALSHA``, in ``_scripts``), so it is atomic and first-claim-wins. Each process tails
  the stream with one blocking ``XREAD`` (``_tail``) and wakes its own waiters and event
  iterators from it. An asking process holds a lease, refreshed while it lives; when it
  lapses, any live process withdraws the dead asker's plain questions, while those asked
  with a resume key (``AskUserQuestionRequest.key``) stay pending for the restarted asker.
  See docs/relay.md for the key layout, the guarantees and the failure table.
- :class:`RedisRuleStore`: a :class:`~interaction.policies.RuleStore` (docs/policies.md).
- :class:`RedisAuditLog`: an :class:`~interaction.audit.AuditLog` in a Stream (docs/audit.md).
- :class:`RedisSpentStore`: a :class:`~interaction.spent.SpentStateStore` for the MCP
  bridge and the AG-UI endpoint (docs/mcp.md).
- :class:`RedisUsedLinks`: a :class:`~interaction.signing.UsedLinkStore`, the answer
  links' single-use set (docs/notify.md).
- :class:`RedisPushSubscriptionStore`: a :class:`~interaction.push.PushSubscriptionStore`,
  the devices that asked for Web Push notices (docs/notify.md).
"""

try:
    import redis  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        'interaction.redis needs the redis client: pip install "interaction-seam[redis]"'
        " (the interaction[redis] extra)"
    ) from exc

from ._audit import RedisAuditLog as RedisAuditLog
from ._links import RedisUsedLinks as RedisUsedLinks
from ._push import RedisPushSubscriptionStore as RedisPushSubscriptionStore
from ._relay import RedisRelay as RedisRelay
from ._rules import RedisRuleStore as RedisRuleStore
from ._spent import RedisSpentStore as RedisSpentStore

__all__ = [
    "RedisAuditLog",
    "RedisPushSubscriptionStore",
    "RedisRelay",
    "RedisRuleStore",
    "RedisSpentStore",
    "RedisUsedLinks",
]
