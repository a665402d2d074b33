"""A real PostgreSQL server for the tests: the machine's ``initdb`` and ``postgres`` (from
PATH, or Debian's ``/usr/lib/postgresql/<version>/bin``), a temporary data directory,
loopback on a free port, stopped by its PID.

PostgreSQL refuses to run as root: as root (CI), the server runs as the ``postgres`` user
that Debian's package creates, through ``setpriv``, which execs it (so the PID is the
server's own). ``PostgresServer().start()`` waits until a connection succeeds (polled,
with a bounded deadline); ``stop()`` is a fast shutdown (SIGINT), then SIGKILL;
``crash()`` an immediate one (SIGQUIT: no checkpoint, recovery on the next start);
``restart()`` comes back on the same port and directory.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Self

import psycopg
import pytest

from interaction.postgres import PostgresRelay

from .loopback import LoopbackProcess


def binaries() -> Path:
    """The folder of ``initdb`` and ``postgres``: beside ``pg_ctl`` on PATH, else the
    newest of Debian's ``/usr/lib/postgresql/*/bin``."""
    on_path = shutil.which("pg_ctl")
    if on_path is not None:
        folder = Path(os.path.realpath(on_path)).parent
        if (folder / "postgres").exists():
            return folder
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/postgres"),
        key=lambda path: int(Path(path).parent.parent.name.split(".")[0]),
    )
    if not found:
        raise RuntimeError("no PostgreSQL server: apt-get install postgresql (.ci/run does)")
    return Path(found[-1]).parent


class PostgresServer(LoopbackProcess):
    """One ``postgres`` process over its own data directory."""

    STOP_SECONDS = 10.0
    STOP_SIGNAL = signal.SIGINT  # a fast shutdown

    def __init__(self, *, durable: bool = False) -> None:
        super().__init__()
        self.bin = binaries()
        self.durable = durable  # fsync on (benchmarks); tests need only survive a crash
        self.directory = Path(tempfile.mkdtemp(prefix="interaction-pg-"))
        self.data = self.directory / "data"
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            try:
                user = pwd.getpwnam("postgres")
            except KeyError:
                raise RuntimeError(
                    "PostgreSQL refuses to run as root, and there is no postgres user to run"
                    " it as (Debian's postgresql package makes one)"
                ) from None
            os.chown(self.directory, user.pw_uid, user.pw_gid)
            self._as_user = [
                "setpriv",
                f"--reuid={user.pw_uid}",
                f"--regid={user.pw_gid}",
                "--init-groups",
            ]

    @property
    def name(self) -> str:
        return "postgres"

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _initdb(self) -> None:
        argv = [str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres"]
        argv += ["--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"]
        subprocess.run(
            [*self._as_user, *argv],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=120,
        )

    def _argv(self) -> list[str]:
        argv = [str(self.bin / "postgres"), "-D", str(self.data), "-p", str(self.port)]
        settings = {
            "listen_addresses": "127.0.0.1",
            "unix_socket_directories": str(self.directory),
            "max_connections": "300",
            "fsync": "on" if self.durable else "off",
            "logging_collector": "off",
        }
        for name, value in settings.items():
            argv += ["-c", f"{name}={value}"]
        return [*self._as_user, *argv]

    def start(self) -> Self:
        self._initdb()
        return super().start()

    def spawn(self) -> subprocess.Popen[bytes]:
        log = open(self.directory / "postgres.log", "ab")  # noqa: SIM115 - the child's
        with log:
            return subprocess.Popen(self._argv(), stdout=log, stderr=log)

    def ready(self) -> bool:
        try:
            with psycopg.connect(self.url, connect_timeout=1):
                return True
        except psycopg.Error:
            return False

    def log(self) -> str:
        path = self.directory / "postgres.log"
        return path.read_text("utf-8", "replace")[-2000:] if path.exists() else "(no log)"

    def details(self) -> str:
        return f": {self.log()}"

    def crash(self) -> None:
        """An immediate shutdown (SIGQUIT): every backend ends at once, no checkpoint."""
        self.send_signal(signal.SIGQUIT)

    def restart(self, *, crash: bool = True) -> None:
        """Stop (at once when ``crash``) and start again on the same port and directory."""
        self.crash() if crash else self.stop()
        self.relaunch()

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One server for the session's relays (each under a schema of its own)."""
    with PostgresServer() as server:
        yield server


async def execute(url: str, query: str, *params: object) -> None:
    """One statement, on a connection of its own, committed."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as db:
        await db.execute(query, params)


@contextlib.asynccontextmanager
async def owner_and_role_relay(
    url: str, schema: str
) -> AsyncIterator[tuple[PostgresRelay, PostgresRelay, str]]:
    """A relay that made ``schema`` (migrated), and a relay connected as a new role that
    may read and write the schema's rows (a test may revoke some of that from the role,
    the third item); both closed, and the role dropped, at the end."""
    role = f"tail_{secrets.token_hex(4)}"
    owner = PostgresRelay(url, schema=schema, lease_ttl=120)
    await owner.migrate()
    await execute(url, f'CREATE ROLE "{role}" LOGIN')
    await execute(url, f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')
    await execute(
        url, f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "{schema}" TO "{role}"'
    )
    listener = PostgresRelay(url.replace("postgres@", f"{role}@"), schema=schema, lease_ttl=120)
    try:
        yield owner, listener, role
    finally:
        await listener.aclose()
        await owner.aclose()
        await execute(url, f'DROP OWNED BY "{role}"')
        await execute(url, f'DROP ROLE "{role}"')


class Statements:
    """The statements a relay runs on its pool, recorded as it runs them."""

    def __init__(self, relay: PostgresRelay) -> None:
        self.run: list[str] = []
        pool = relay._db
        original = pool.run

        async def run(query: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
            self.run.append(query)
            return await original(query, params)

        pool.run = run  # type: ignore[method-assign]


# append_event as schemas made before issue 41 hold it (the counter's next number, taken
# or not), each event announced by its position alone: for the tests of older schemas.
OLD_APPEND_EVENT = """CREATE OR REPLACE FUNCTION
  {s}.append_event(p_kind text, p_id text, p_outcome text)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE pos bigint;
BEGIN
  UPDATE {s}.meta SET last_position = last_position + 1 RETURNING last_position INTO pos;
  INSERT INTO {s}.events (position, kind, question_id, outcome)
    VALUES (pos, p_kind, p_id, p_outcome);
  PERFORM pg_notify('{channel}', pos::text);
  RETURN pos;
END $$"""
