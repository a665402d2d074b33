"""The audit trail: every ask's outcome, who decided it and when, in a hash chain.

:class:`AuditProvider` wraps any provider (put it outside a
:class:`~interaction.policies.PolicyProvider`, so that it sees the rules' answers too) and
appends one record per ask to an :class:`AuditLog`: :class:`JsonlAuditLog` (a file,
append-only, fsync per record, rotated by size, shared safely by processes) or
``interaction.redis.RedisAuditLog`` (a Redis Stream). Each record holds the digest
of the one before it, so :func:`verify` finds a record removed, reordered or edited
(with a key, each digest is an HMAC, so an edit of the last record shows too). The
record's fields are listed in docs/audit.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import getpass
import hashlib
import hmac
import json
import os
import socket
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Literal, Protocol, TypeAlias

from ._core import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    HarnessError,
    PermissionIntent,
    UserInteractionError,
    UserInteractionProvider,
    check_answer,
)
from .decisions import Decision, collect_decisions
from .wire import encode_answer, encode_provenance, encode_request

__all__ = [
    "AUDIT_FAILED",
    "GENESIS",
    "AuditLog",
    "AuditLogError",
    "AuditProvider",
    "AuditRecord",
    "JsonlAuditLog",
    "Outcome",
    "Problem",
    "canonical",
    "chain",
    "chained",
    "os_user",
    "read_jsonl",
    "rotated",
    "verify",
]

Outcome: TypeAlias = Literal["answered", "cancelled", "timeout", "aborted", "failed", "suspended"]
AuditRecord: TypeAlias = dict[str, object]
"""One record as JSON data; its keys are listed in docs/audit.md."""

AUDIT_FAILED: Final = "AUDIT_FAILED"
"""The code of an ask whose outcome could not be recorded."""
GENESIS: Final = "0" * 64
"""The ``prev`` of the first record of a log."""
MAX_RECORD: Final = 1024 * 1024
"""The longest record line :func:`read_jsonl` reads, in bytes; a longer line is a fault."""


class AuditLogError(UserInteractionError):
    """The audit log cannot be written or read (code :data:`AUDIT_FAILED`)."""


def canonical(record: Mapping[str, object]) -> bytes:
    """The bytes a record's digest covers: sorted keys, no spaces, UTF-8."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def chain(body: Mapping[str, object], seq: int, prev: str, key: bytes | None) -> AuditRecord:
    """``body`` as the record after ``prev``: with its ``seq``, ``prev`` and ``digest``."""
    return chained(body, seq, prev, key)[0]


def chained(
    body: Mapping[str, object], seq: int, prev: str, key: bytes | None
) -> tuple[AuditRecord, bytes]:
    """:func:`chain`, and the record's line: its canonical JSON with the ``digest`` added
    last (one encoding for both; ``verify`` takes the digest out and encodes the rest)."""
    record: AuditRecord = {**body, "seq": seq, "prev": prev}
    data = canonical(record)
    digest = (
        hmac.new(key, data, hashlib.sha256).hexdigest()
        if key is not None
        else hashlib.sha256(data).hexdigest()
    )
    record["digest"] = digest
    return record, b'%s,"digest":"%s"}\n' % (data[:-1], digest.encode())


class AuditLog(Protocol):
    """Where records go: ``append`` chains ``body`` after the last record and stores it."""

    async def append(self, body: Mapping[str, object]) -> AuditRecord: ...


def os_user() -> str | None:
    """The operating system's name for the user running this process, if it has one."""
    with contextlib.suppress(Exception):
        return getpass.getuser()
    return None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# ---------------------------------------------------------------------- the provider


class AuditProvider:
    """A provider that records the outcome of every ask it passes to ``inner``.

    ``source``, ``host`` (this machine's name by default) and ``session`` say where the
    requests come from; ``answerer`` names who answers through ``inner`` when it does not
    say so itself (for a terminal, :func:`os_user`). The record is written before the
    answer or the error is passed on; a log that cannot be written fails the ask with
    :data:`AUDIT_FAILED`.
    """

    def __init__(
        self,
        inner: UserInteractionProvider,
        log: AuditLog,
        *,
        source: str | None = None,
        host: str | None = None,
        session: str | None = None,
        answerer: str | None = None,
    ) -> None:
        self.inner = inner
        self.log = log
        self.source = source
        self.host = host if host is not None else socket.gethostname()
        self.session = session
        self.answerer = answerer

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        asked_at = _now()
        started = time.monotonic()
        with collect_decisions() as notes:
            try:
                answer = check_answer(request, await self.inner.ask(request))
            except BaseException as exc:
                outcome, error = _failure(request, exc)
                await self._record(request, asked_at, started, notes, outcome, None, error)
                raise
        await self._record(request, asked_at, started, notes, "answered", answer, None)
        return answer

    async def _record(  # noqa: PLR0917 - one record's parts
        self,
        request: AskUserQuestionRequest,
        asked_at: str,
        started: float,
        notes: Sequence[Decision],
        outcome: Outcome,
        answer: AskUserQuestionAnswer | None,
        error: dict[str, str] | None,
    ) -> None:
        decision = notes[-1] if notes else None
        if decision is None and outcome == "answered":
            decision = Decision("human", self.answerer)
        if decision is not None and decision.by == "timeout":
            outcome = "timeout"
        provenance = request.provenance
        body: dict[str, object] = {
            "v": 1,
            "at": _now(),
            "askedAt": asked_at,
            "provenance": None if provenance is None else encode_provenance(provenance),
            "seconds": round(time.monotonic() - started, 3),
            **self._origin(request),
            "questions": encode_request(request)["questions"],
            "outcome": outcome,
            "answer": None if answer is None else encode_answer(answer)["answers"],
            "error": error,
            "decidedBy": None if decision is None else decision.by,
            "answerer": None if decision is None else decision.name,
            "rule": None if decision is None else decision.rule,
        }
        try:
            await self.log.append(body)
        except AuditLogError:
            raise
        except Exception as exc:
            raise AuditLogError(
                f"the audit log could not be written ({type(exc).__name__}: {exc})", AUDIT_FAILED
            ) from exc

    def _origin(self, request: AskUserQuestionRequest) -> dict[str, object]:
        """Where the ask came from: its provenance's, else this provider's, and the tools its
        permission questions name."""
        provenance = request.provenance
        tools = sorted(
            {q.intent.tool for q in request.questions if isinstance(q.intent, PermissionIntent)}
        )
        return {
            "source": (provenance and provenance.source) or self.source,
            "host": (provenance and provenance.host) or self.host,
            "session": (provenance and provenance.session) or self.session,
            "tool": (provenance and provenance.tool) or ",".join(tools) or None,
        }


def _failure(
    request: AskUserQuestionRequest, exc: BaseException
) -> tuple[Outcome, dict[str, str] | None]:
    if isinstance(exc, HarnessError):
        kinds: dict[str, Outcome] = {
            ErrorCode.ASK_CANCELLED: "cancelled",
            ErrorCode.ASK_TIMEOUT: "timeout",
            ErrorCode.ASK_ABORTED: "aborted",
            ErrorCode.ASK_SUSPENDED: "suspended",
        }
        return kinds.get(exc.code, "failed"), {"code": exc.code, "message": exc.message}
    if isinstance(exc, asyncio.CancelledError):
        signal = request.signal
        if signal is not None and signal.aborted and isinstance(signal.reason, TimeoutError):
            return "timeout", None
        return "aborted", None
    return "failed", {"code": ErrorCode.PROVIDER_FAILED, "message": type(exc).__name__}


# ---------------------------------------------------------------------- the JSONL file


def _files(path: Path) -> list[Path]:
    """The log's files, oldest first: ``PATH.N`` ... ``PATH.1``, ``PATH``."""
    rotated = []
    number = 1
    while (older := path.with_name(f"{path.name}.{number}")).exists():
        rotated.append(older)
        number += 1
    return [*reversed(rotated), path]


def _last_line(fd: int, size: int, where: str) -> bytes | None:
    """The last line of a file, read backwards in blocks; ``None`` when the file is empty."""
    if size == 0:
        return None
    if os.pread(fd, 1, size - 1) != b"\n":
        raise AuditLogError(
            f"audit log {where}: ends with a partial record (run: interaction log --verify)",
            AUDIT_FAILED,
        )
    tail = b""
    end = size - 1
    while end > 0 and len(tail) <= MAX_RECORD:
        start = max(0, end - 64 * 1024)
        tail = os.pread(fd, end - start, start) + tail
        end = start
        cut = tail.rfind(b"\n")
        if cut >= 0:
            return tail[cut + 1 :]
    if end == 0:
        return tail
    raise AuditLogError(
        f"audit log {where}: its last record is longer than {MAX_RECORD} bytes", AUDIT_FAILED
    )


class _Syncer:
    """fsyncs written records on a thread of its own, so that an ask does not wait for the
    disk: every record is fsynced, by an fsync that starts after it was written (one fsync
    covers every record written before it). ``wait()`` returns once all are synced; an
    fsync's error is kept and raised by the log's next append, ``flush`` or ``close``."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._pending: list[int] = []  # duplicates of the written files' descriptors
        self._written = self._synced = 0
        self._thread: threading.Thread | None = None
        self.error: OSError | None = None

    def written(self, fd: int) -> None:
        copy = os.dup(fd)  # the log may close or rotate its own while this one is synced
        with self._changed:
            self._pending.append(copy)
            self._written += 1
            self._changed.notify_all()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="interaction-audit-fsync", daemon=True
                )
                self._thread.start()

    def wait(self) -> None:
        with self._changed:
            self._changed.wait_for(lambda: self._synced >= self._written)

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: bool(self._pending))
                batch, self._pending = self._pending, []
            files: dict[tuple[int, int], int] = {}
            for fd in batch:
                stat = os.fstat(fd)
                files[(stat.st_dev, stat.st_ino)] = fd
            for fd in files.values():
                try:
                    os.fsync(fd)
                except OSError as exc:
                    self.error = exc
            for fd in batch:
                os.close(fd)
            with self._changed:
                self._synced += len(batch)
                self._changed.notify_all()


class JsonlAuditLog:
    """Records as JSON lines in ``path``: append-only, fsync per record, rotated by size.

    Each append takes an exclusive ``flock`` on ``PATH.lock``, finds the last record (its
    own, cached, unless another process has written since) and writes one line with
    ``O_APPEND``. Every record is fsynced: with ``durable=True`` before ``append`` returns
    (the ask waits for the disk), by default on a thread of the log's own right after, so
    the ask does not wait (the record is in the file at once for every reader and survives
    the process; a power cut may lose the last few milliseconds; ``flush()`` waits). When a
    line would take the file past ``max_bytes``, the file is renamed ``PATH.1`` (older ones
    shift up; ``PATH.<backups>`` is the oldest kept) and the chain goes on in a new
    ``PATH``. ``key`` makes each digest an HMAC.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_bytes: int = 10 * 1024 * 1024,
        backups: int = 5,
        key: bytes | None = None,
        durable: bool = False,
    ) -> None:
        if max_bytes < 1024 or backups < 1:
            raise ValueError("max_bytes is at least 1024 and backups at least 1")
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.backups = backups
        self._key = key
        self._lock: int | None = None
        self._fd: int | None = None
        self._head: tuple[int, str] | None = None
        self._head_at: tuple[int, int] | None = None  # (inode, size) after our last write
        self._syncer = None if durable else _Syncer()

    async def append(self, body: Mapping[str, object]) -> AuditRecord:
        # A few small writes and an fsync, on the loop's thread: a thread hop would cost
        # more than the write, and an ask being cancelled still records its outcome.
        try:
            self._raise_sync_error()
            return self._append(body)
        except OSError as exc:
            raise self._failed(exc) from None

    def _failed(self, exc: OSError) -> AuditLogError:
        return AuditLogError(
            f"audit log {self.path}: cannot be written ({exc.strerror or exc})", AUDIT_FAILED
        )

    def _raise_sync_error(self) -> None:
        syncer = self._syncer
        if syncer is not None and syncer.error is not None:
            error, syncer.error = syncer.error, None
            raise error

    async def flush(self) -> None:
        """Return once every record appended so far is fsynced."""
        if self._syncer is not None:
            await asyncio.to_thread(self._syncer.wait)
        try:
            self._raise_sync_error()
        except OSError as exc:
            raise self._failed(exc) from None

    def close(self) -> None:
        """Wait for the fsyncs, then close the file and the lock (the next append opens
        them again)."""
        if self._syncer is not None:
            self._syncer.wait()
        for fd in (self._fd, self._lock):
            if fd is not None:
                os.close(fd)
        self._fd = self._lock = None
        self._head_at = None

    def _append(self, body: Mapping[str, object]) -> AuditRecord:
        if self._lock is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._lock = os.open(
                self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600
            )
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        try:
            fd, inode, size = self._current()
            head = self._head if self._head_at == (inode, size) else self._read_head(fd, size)
            seq, prev = (head[0] + 1, head[1]) if head is not None else (1, GENESIS)
            record, line = chained(body, seq, prev, self._key)
            if size and size + len(line) > self.max_bytes:
                fd, inode, size = self._rotate()
            os.write(fd, line)
            if self._syncer is None:
                os.fsync(fd)
            else:
                self._syncer.written(fd)
            self._head = (seq, str(record["digest"]))
            self._head_at = (inode, size + len(line))
            return record
        finally:
            fcntl.flock(self._lock, fcntl.LOCK_UN)

    def _current(self) -> tuple[int, int, int]:
        """The open file at ``path`` (reopened if another process rotated it)."""
        if self._fd is not None:
            try:
                same = os.stat(self.path).st_ino == os.fstat(self._fd).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(self._fd)
                self._fd = None
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        stat = os.fstat(self._fd)
        return self._fd, stat.st_ino, stat.st_size

    def _read_head(self, fd: int, size: int) -> tuple[int, str] | None:
        line = None
        if size:
            reader = os.open(self.path, os.O_RDONLY)
            try:
                line = _last_line(reader, size, str(self.path))
            finally:
                os.close(reader)
        else:
            older = self.path.with_name(self.path.name + ".1")
            with contextlib.suppress(FileNotFoundError):
                reader = os.open(older, os.O_RDONLY)
                try:
                    line = _last_line(reader, os.fstat(reader).st_size, str(older))
                finally:
                    os.close(reader)
        if line is None:
            return None
        try:
            record = json.loads(line)
            return int(record["seq"]), str(record["digest"])
        except (ValueError, KeyError, TypeError):
            raise AuditLogError(
                f"audit log {self.path}: its last record is not readable"
                " (run: interaction log --verify)",
                AUDIT_FAILED,
            ) from None

    def _rotate(self) -> tuple[int, int, int]:
        for number in range(self.backups, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{number}")
            if number == self.backups:
                with contextlib.suppress(FileNotFoundError):
                    older.unlink()
            newer = (
                self.path if number == 1 else self.path.with_name(f"{self.path.name}.{number - 1}")
            )
            with contextlib.suppress(FileNotFoundError):
                newer.rename(older)
        assert self._fd is not None
        os.close(self._fd)
        self._fd = None
        return self._current()


# ---------------------------------------------------------------------- reading, verifying


@dataclass(frozen=True, slots=True)
class Problem:
    """A fault :func:`verify` found, at ``where`` (a file and line, or a stream entry)."""

    where: str
    message: str


def rotated(path: str | os.PathLike[str]) -> bool:
    """Whether the log at ``path`` has rotated files (so it may start past record 1)."""
    return len(_files(Path(path))) > 1


def read_jsonl(path: str | os.PathLike[str]) -> Iterator[tuple[str, bytes]]:
    """Every line of the log at ``path`` and its rotated files, oldest first, with where."""
    for file in _files(Path(path)):
        try:
            handle = open(file, "rb")  # noqa: SIM115 - closed below, after the lines
        except FileNotFoundError:
            continue
        with handle:
            for number, line in enumerate(handle, start=1):
                yield f"{file}:{number}", line.rstrip(b"\n")


def verify(
    lines: Iterable[tuple[str, bytes]], *, key: bytes | None = None, whole: bool = True
) -> tuple[list[Problem], int, str | None]:
    """Check a chain: each record's digest, its ``prev`` and its ``seq``.

    Returns the problems found, the number of records read and the last digest (keep it
    elsewhere: a log cut short after it shows against it). A record removed, moved or
    edited breaks the chain where it was. ``whole``: the lines start at the chain's first
    record (false for a log whose oldest files were rotated away).
    """
    problems: list[Problem] = []
    previous: tuple[int, str] | None = None
    count = 0
    for where, line in lines:
        count += 1
        if len(line) > MAX_RECORD:
            problems.append(Problem(where, f"is longer than {MAX_RECORD} bytes"))
            previous = None
            continue
        try:
            record = json.loads(line)
            seq, prev, digest = record["seq"], record["prev"], record.pop("digest")
        except (ValueError, KeyError, TypeError, AttributeError):
            problems.append(Problem(where, "is not an audit record"))
            previous = None
            continue
        if type(seq) is not int or type(prev) is not str or type(digest) is not str:
            problems.append(Problem(where, "is not an audit record"))
            previous = None
            continue
        data = canonical(record)
        expected = (
            hmac.new(key, data, hashlib.sha256).hexdigest()
            if key is not None
            else hashlib.sha256(data).hexdigest()
        )
        if not hmac.compare_digest(expected, digest):
            problems.append(Problem(where, f"record {seq} was changed: its digest does not match"))
        if previous is None:
            if count == 1 and whole and seq != 1:
                problems.append(
                    Problem(where, f"record {seq} follows nothing: the chain does not start at 1")
                )
            elif count == 1 and seq == 1 and prev != GENESIS:
                problems.append(Problem(where, "record 1 does not start the chain"))
        elif prev != previous[1]:
            if seq == previous[0] + 1:
                problems.append(
                    Problem(where, f"record {seq} does not follow record {previous[0]}")
                )
            else:
                problems.append(
                    Problem(
                        where,
                        f"record {seq} follows record {previous[0]}: records are missing"
                        " or out of order",
                    )
                )
        elif seq != previous[0] + 1:
            problems.append(Problem(where, f"record {seq} follows record {previous[0]}"))
        previous = (seq, digest)
    return problems, count, None if previous is None else previous[1]
