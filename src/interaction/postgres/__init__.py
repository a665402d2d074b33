"""The stores on PostgreSQL (extra ``[postgres]``): rules, the audit trail and spent
states, in the relay's database and schema, so a deployment on PostgreSQL needs no other
engine.

- :class:`PostgresRuleStore`: a :class:`~interaction.policies.RuleStore` whose rules and
  their signed whole set are rows (docs/policies.md).
- :class:`PostgresAuditLog`: an :class:`~interaction.audit.AuditLog`, one row per record
  of the hash chain (docs/audit.md).
- :class:`PostgresSpentStore`: a :class:`~interaction.spent.SpentStateStore` for the MCP
  bridge and the AG-UI endpoint (docs/mcp.md).
- :class:`PostgresPushSubscriptionStore`: a :class:`~interaction.push.PushSubscriptionStore`,
  one row per device that asked for Web Push notices (docs/notify.md).

Each takes a libpq URL and the ``schema`` option of
:class:`~interaction.postgres_relay.PostgresRelay`; the ``migrate()`` of any of them (or
of the relay) creates every table of the schema, once.
"""

try:
    import psycopg  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "interaction.postgres needs psycopg 3:"
        ' pip install "interaction-seam[postgres]" (the interaction[postgres] extra)'
    ) from exc

from ._audit import PostgresAuditLog as PostgresAuditLog
from ._push import PostgresPushSubscriptionStore as PostgresPushSubscriptionStore
from ._rules import PostgresRuleStore as PostgresRuleStore
from ._spent import PostgresSpentStore as PostgresSpentStore

__all__ = [
    "PostgresAuditLog",
    "PostgresPushSubscriptionStore",
    "PostgresRuleStore",
    "PostgresSpentStore",
]
