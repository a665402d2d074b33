"""The stores on PostgreSQL (extra ``[postgres]``): the relay, rules, the audit trail,
spent states and used answer links, in one database and schema, so a deployment on
PostgreSQL needs no other engine.

- :class:`PostgresRelay`: a :class:`~interaction.relay.RelayBackend`. Each question is a
  row of ``<schema>.questions``, the ``requested``/``resolved`` events rows of
  ``<schema>.events`` whose positions are the SSE event ids; every change is one call of
  a PL/pgSQL function (``_schema``) that takes the schema's one lock row first, so it is
  atomic, first-claim-wins, and the positions come in commit order. Each process reads
  the events after its last position when ``NOTIFY`` wakes it (or by polling, where
  ``LISTEN`` cannot pass). Askers hold leases, as with the Redis relay. See docs/relay.md
  for the table layout, the guarantees and the failure table.
- :class:`PostgresRuleStore`: a :class:`~interaction.policies.RuleStore` whose rules and
  their signed whole set are rows (docs/policies.md).
- :class:`PostgresAuditLog`: an :class:`~interaction.audit.AuditLog`, one row per record
  of the hash chain (docs/audit.md).
- :class:`PostgresSpentStore`: a :class:`~interaction.spent.SpentStateStore` for the MCP
  bridge and the AG-UI endpoint (docs/mcp.md).
- :class:`PostgresUsedLinks`: a :class:`~interaction.signing.UsedLinkStore`, the answer
  links' single-use set (docs/notify.md).
- :class:`PostgresPushSubscriptionStore`: a :class:`~interaction.push.PushSubscriptionStore`,
  one row per device that asked for Web Push notices (docs/notify.md).

Each takes a libpq URL and a ``schema`` (``interaction`` by default); the ``migrate()`` of
any of them creates every table of the schema, once.
"""

try:
    import psycopg  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "interaction.postgres needs psycopg 3:"
        ' pip install "interaction-seam[postgres]" (the interaction[postgres] extra)'
    ) from exc

from ._audit import PostgresAuditLog as PostgresAuditLog
from ._links import PostgresUsedLinks as PostgresUsedLinks
from ._push import PostgresPushSubscriptionStore as PostgresPushSubscriptionStore
from ._relay import PostgresRelay as PostgresRelay
from ._rules import PostgresRuleStore as PostgresRuleStore
from ._spent import PostgresSpentStore as PostgresSpentStore

__all__ = [
    "PostgresAuditLog",
    "PostgresPushSubscriptionStore",
    "PostgresRelay",
    "PostgresRuleStore",
    "PostgresSpentStore",
    "PostgresUsedLinks",
]
