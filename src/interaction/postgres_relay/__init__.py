"""A :class:`~interaction.relay.RelayBackend` on PostgreSQL (extra ``[postgres]``): pending
questions in the database most deployments already run, shared by every process that
uses the same database and schema.

:class:`PostgresRelay` keeps each question in a row of ``<schema>.questions`` and the
``requested``/``resolved`` events in ``<schema>.events``, whose positions are the SSE event
ids; every change is one call of a PL/pgSQL function (``_schema``) that takes the schema's
one lock row first, so it is atomic, first-claim-wins, and the positions come in commit
order. Each process reads the events after its last position when ``NOTIFY`` wakes it (or
by polling, where ``LISTEN`` cannot pass), and wakes its own waiters and event iterators.
Askers hold leases, as with the Redis relay. Create the tables once with
``await relay.migrate()`` (or ``interaction serve --postgres URL --migrate``). See
docs/relay.md for the table layout, the guarantees and the failure table.
"""

try:
    import psycopg  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "interaction.postgres_relay needs psycopg 3:"
        ' pip install "interaction-seam[postgres]" (the interaction[postgres] extra)'
    ) from exc

from ..postgres import PostgresRelay as PostgresRelay

__all__ = ["PostgresRelay"]
