"""2026-07-28: a tool's asks suspended into input-required results, then resumed.

On a 2026-07-28 connection a server cannot push ``elicitation/create`` during a tool call.
A tool served by :class:`InteractiveMCPServer` (every tool, its code unchanged) or wrapped
with :func:`interactive` answers instead with an ``InputRequiredResult`` that carries the
elicitation form and a ``request_state``; when the client calls again with the user's
response, the tool runs again from its top under ``interaction.resume(...)``: the asks it
already made get their stored answers, the one that was pending gets the client's
response, and the next new ask suspends again. A response that does not fit its form is
``BAD_ANSWER`` for that ask, as on a push, and is kept as that ask's outcome, so each
later round replays the same refusal there; a response to a question the tool no longer
asks is ``BAD_ANSWER`` too. On older connections the tool runs once and the provider
pushes, as before.

The ``request_state`` is the outcomes so far (answers and refusals), signed with
HMAC-SHA256 under a key only the server holds, bound to the tool and its arguments, with
an expiry and a single-use nonce: a forged, altered, expired, misdirected or replayed
state is ``BAD_REQUEST``, never an answer. (The SDK's own ``RequestStateBoundary`` also
seals it; this does not rely on it.)
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, ParamSpec, TypeVar

import mcp.types as mcp_types
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

from .._core import (
    MISMATCH_MESSAGE,
    AskSuspended,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    ResumedAnswer,
    UserInteractionError,
    cancelled_error,
    check_answer,
    request_digest,
    resume,
)
from ..wire import decode_answer, encode_answer
from ._server import (
    ACTIVE_ROUND,
    INPUT_REQUIRED_VERSION,
    NO_ELICITATION,
    ElicitationProvider,
    outcome,
    request_to_form,
    supports_form_elicitation,
)

__all__ = ["InputRequiredBridge", "InteractiveMCPServer", "interactive"]

P = ParamSpec("P")
R = TypeVar("R")

STATE_VERSION: Final = 2  # 2: outcomes, answers and refusals (1 held answers only)
BAD_STATE: Final = "the request state is not one this server issued for this tool call"
USED_STATE: Final = "the request state was already used; call the tool again without it"
EXPIRED_STATE: Final = "the request state has expired; call the tool again without it"
NO_CONTEXT: Final = "an @interactive tool takes the MCP Context as a parameter"


@dataclass(frozen=True, slots=True)
class _Refused:
    """An ask whose response did not fit its form: every later round raises it again."""

    digest: str
    code: str
    message: str
    path: str | None

    def error(self) -> UserInteractionError:
        return UserInteractionError(self.message, self.code, path=self.path)


_Outcome = ResumedAnswer | _Refused


@dataclass(slots=True)
class Suspension:
    """What one round of an interactive tool call knows: the client's response to the ask
    that was pending, the stored outcomes the core's ``resume`` cannot replay (those from
    the first refusal on), and the outcomes this round produced."""

    session: object
    version: str
    pending: tuple[str, mcp_types.ElicitResult] | None
    replay: deque[_Outcome] = field(default_factory=deque)
    collected: list[_Outcome] = field(default_factory=list)
    cancelled: bool = False

    def ask(
        self, provider: ElicitationProvider, request: AskUserQuestionRequest
    ) -> AskUserQuestionAnswer:
        if not supports_form_elicitation(provider.session):
            raise UserInteractionError(NO_ELICITATION, ErrorCode.NO_PROVIDER)
        if self.cancelled:  # the user cancelled this call's questions: no more of them
            raise cancelled_error()
        digest = request_digest(request)
        if self.replay:  # past the first refusal: replayed here, in order, as resume() does
            stored = self.replay.popleft()
            self.collected.append(stored)
            if stored.digest != digest:
                raise UserInteractionError(MISMATCH_MESSAGE, ErrorCode.BAD_ANSWER)
            if isinstance(stored, _Refused):
                raise stored.error()
            return check_answer(request, stored.answer)
        pending, self.pending = self.pending, None
        if pending is None:
            raise AskSuspended(request)
        if pending[0] != digest:  # the tool changed its question: never a silent re-ask
            # Kept as this ask's outcome, as any refusal is, so the asks after it keep
            # their places in every later round.
            self.collected.append(_Refused(digest, ErrorCode.BAD_ANSWER, MISMATCH_MESSAGE, None))
            raise UserInteractionError(MISMATCH_MESSAGE, ErrorCode.BAD_ANSWER)
        _, _, fields = request_to_form(request, self.version)
        try:
            answer = check_answer(request, outcome(request, fields, pending[1]))
        except UserInteractionError as error:
            if error.code == ErrorCode.ASK_CANCELLED:
                self.cancelled = True
            else:
                # Kept as this ask's outcome: a tool that catches it and asks on must meet
                # the same refusal here in every later round, or the replay loses its place.
                self.collected.append(_Refused(digest, str(error.code), error.message, error.path))
            raise
        self.collected.append(ResumedAnswer(digest, answer))
        return answer


@dataclass(frozen=True, slots=True)
class _State:
    outcomes: tuple[_Outcome, ...]
    pending_key: str | None
    pending_digest: str | None


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _call_identity(ctx: Context[Any, Any]) -> tuple[str, str]:
    params: Mapping[str, Any] = ctx.request_context.params or {}
    name = params.get("name")
    arguments = json.dumps(params.get("arguments") or {}, sort_keys=True, separators=(",", ":"))
    return str(name), hashlib.sha256(arguments.encode()).hexdigest()


class InputRequiredBridge:
    """Serves tools whose asks must work on every protocol generation.

    ``key`` (at least 32 bytes) signs the ``request_state``; by default a key made now and
    held only by this process, which suits stdio and single-worker servers. Servers behind
    several workers pass the same key to each. ``ttl`` is how long a state stays valid.
    """

    def __init__(self, key: bytes | None = None, *, ttl: float = 600.0) -> None:
        if key is not None and len(key) < 32:
            raise ValueError("the request-state key must be at least 32 bytes")
        if not ttl > 0:
            raise ValueError("the request-state ttl must be positive")
        self._key = key if key is not None else os.urandom(32)
        self._ttl = ttl
        # nonce -> expiry, in the order spent; an OrderedDict, whose first key is found in
        # O(1) however many were deleted before it (a dict's scan would grow with them).
        self._spent: OrderedDict[str, float] = OrderedDict()
        self._now = 0.0  # the latest time.time() seen: see _time
        self._lock = threading.Lock()

    # ---------------------------------------------------------------------- the state

    def _sign(self, body: bytes) -> str:
        return hmac.new(self._key, body, hashlib.sha256).hexdigest()

    def seal(self, ctx: Context[Any, Any], outcomes: list[_Outcome], key: str, digest: str) -> str:
        tool, arguments = _call_identity(ctx)
        payload = {
            "v": STATE_VERSION,
            "n": secrets.token_hex(16),
            "exp": self._time() + self._ttl,
            "t": tool,
            "a": arguments,
            "outcomes": [_encode_outcome(entry) for entry in outcomes],
            "pending": [key, digest],
        }
        body = json.dumps(payload, separators=(",", ":"), ensure_ascii=True).encode("ascii")
        return f"{_b64(body)}.{self._sign(body)}"

    def open(self, ctx: Context[Any, Any]) -> _State:
        """The verified state the client echoed (empty on the first round)."""
        token = ctx.request_state
        if token is None:
            return _State((), None, None)
        forged = UserInteractionError(BAD_STATE, ErrorCode.BAD_REQUEST, path="requestState")
        encoded, dot, signature = token.partition(".")
        try:
            body = _unb64(encoded)
        except (ValueError, binascii.Error):
            raise forged from None
        given = signature.encode("utf-8", "replace")  # compare_digest refuses non-ASCII str
        if not dot or not hmac.compare_digest(self._sign(body).encode("ascii"), given):
            raise forged
        payload = json.loads(body)
        tool, arguments = _call_identity(ctx)
        if (
            payload.get("v") != STATE_VERSION
            or payload.get("t") != tool
            or payload.get("a") != arguments
        ):
            raise forged
        self._spend(payload["n"], payload["exp"])
        outcomes = tuple(_decode_outcome(entry) for entry in payload["outcomes"])
        key, digest = payload["pending"]
        return _State(outcomes, str(key), str(digest))

    def _time(self) -> float:
        """The latest wall-clock reading seen: it never goes back, even when the clock does
        (so a state sealed after a step back is not born expired)."""
        with self._lock:
            return self._tick()

    def _tick(self) -> float:
        """:meth:`_time`, for a caller that holds ``_lock``."""
        self._now = max(self._now, time.time())
        return self._now

    def _spend(self, nonce: str, expires: float) -> None:
        """Use ``nonce`` once, or refuse its state as expired or already used.

        Time here is the latest clock reading seen, so a clock stepped backwards cannot
        revive a state whose nonce was already forgotten as expired. States are opened in
        about the order they were sealed, so their expiries come nearly in order: forgetting
        the expired ones from the front, up to the first live one, costs O(1) amortised.
        One that expires out of order is forgotten a little late, never early.
        """
        with self._lock:
            now = self._tick()
            if not now < expires:
                raise UserInteractionError(
                    EXPIRED_STATE, ErrorCode.BAD_REQUEST, path="requestState"
                )
            spent = self._spent
            while spent:
                oldest = next(iter(spent))
                if spent[oldest] > now:
                    break
                del spent[oldest]
            if nonce in spent:
                raise UserInteractionError(USED_STATE, ErrorCode.BAD_REQUEST, path="requestState")
            spent[nonce] = expires

    # ----------------------------------------------------------------------- the tool

    def __call__(
        self, tool: Callable[P, Awaitable[R]]
    ) -> Callable[P, Coroutine[Any, Any, R | mcp_types.InputRequiredResult]]:
        """Wrap an MCP tool (one that takes the ``Context``) so its asks work on 2026-07-28."""

        @functools.wraps(tool)
        async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R | mcp_types.InputRequiredResult:
            ctx = next((v for v in (*args, *kwargs.values()) if isinstance(v, Context)), None)
            if ctx is None:
                raise TypeError(NO_CONTEXT)
            return await self.run(ctx, lambda: tool(*args, **kwargs))

        return wrapper

    async def run(
        self, ctx: Context[Any, Any], call: Callable[[], Awaitable[R]]
    ) -> R | mcp_types.InputRequiredResult:
        """One tool call, ``call()``: as it is on a legacy connection, in rounds on 2026-07-28."""
        version = ctx.protocol_version or ""
        if version < INPUT_REQUIRED_VERSION or ACTIVE_ROUND.get() is not None:
            # Legacy: the provider pushes. Already in a round (an @interactive tool on an
            # InteractiveMCPServer): that round owns the state.
            return await call()
        return await self._round(ctx, version, call)

    async def _round(
        self, ctx: Context[Any, Any], version: str, call: Callable[[], Awaitable[R]]
    ) -> R | mcp_types.InputRequiredResult:
        try:
            state = self.open(ctx)
        except UserInteractionError as error:  # a protocol error, not the tool's result
            raise MCPError(
                mcp_types.INVALID_PARAMS, error.message, {"code": str(error.code)}
            ) from None
        pending = None
        if state.pending_key is not None and state.pending_digest is not None:
            response = (ctx.input_responses or {}).get(state.pending_key)
            if response is not None and not isinstance(response, mcp_types.ElicitResult):
                raise MCPError(
                    mcp_types.INVALID_PARAMS,
                    f"input response {state.pending_key} is not an elicitation result",
                    {"code": str(ErrorCode.BAD_ANSWER)},
                )
            if response is not None:
                pending = (state.pending_digest, response)
        # The core's resume() replays answers; from the first refusal on, the round does.
        answers: list[ResumedAnswer] = []
        for entry in state.outcomes:
            if not isinstance(entry, ResumedAnswer):
                break
            answers.append(entry)
        replay = deque(state.outcomes[len(answers) :])
        suspension = Suspension(ctx.request_context.session, version, pending, replay)
        token = ACTIVE_ROUND.set(suspension)
        try:
            with resume(answers):
                return await call()
        except Exception as exc:
            suspended = _suspension(exc)
            if suspended is None:
                raise
            request = suspended.request
            message, schema, _ = request_to_form(request, version)
            outcomes = [*answers, *suspension.collected]
            key = f"ask{len(outcomes) + 1}"
            form = mcp_types.ElicitRequest(
                params=mcp_types.ElicitRequestFormParams(message=message, requested_schema=schema)
            )
            return mcp_types.InputRequiredResult(
                input_requests={key: form},
                request_state=self.seal(ctx, outcomes, key, suspended.digest),
            )
        finally:
            ACTIVE_ROUND.reset(token)


def _encode_outcome(entry: _Outcome) -> list[object]:
    if isinstance(entry, _Refused):
        refused = {"code": entry.code, "message": entry.message, "path": entry.path}
        return [entry.digest, {"refused": refused}]
    return [entry.digest, encode_answer(entry.answer)]


def _decode_outcome(entry: list[Any]) -> _Outcome:
    """An outcome as :func:`_encode_outcome` wrote it (the state is signed: no forgery)."""
    digest, value = entry
    refused = value.get("refused")
    if refused is not None:
        path = refused["path"]
        return _Refused(
            str(digest),
            str(refused["code"]),
            str(refused["message"]),
            None if path is None else str(path),
        )
    return ResumedAnswer(str(digest), decode_answer(value))


def _suspension(exc: BaseException) -> AskSuspended | None:
    """The ask that suspended, also when the SDK wrapped it (``UnexpectedToolError``)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, AskSuspended):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__
    return None


interactive: Final = InputRequiredBridge()
"""The default bridge, under a key made when the process starts: ``@interactive``."""


class InteractiveMCPServer(MCPServer[Any]):
    """An ``MCPServer`` whose every tool can ask, on both protocol generations, unchanged.

    Tools are written and registered as on ``MCPServer``; a tool that asks through
    :class:`ElicitationProvider` pushes its questions on legacy connections and answers
    in input-required rounds on 2026-07-28 ones. ``bridge`` signs the request state (by
    default :data:`interactive`, under a key made when the process starts; servers behind
    several workers pass an :class:`InputRequiredBridge` with a shared key).
    """

    def __init__(
        self, *args: Any, bridge: InputRequiredBridge = interactive, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.bridge = bridge

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> mcp_types.CallToolResult | mcp_types.InputRequiredResult:
        if context is None:  # a direct call, as the SDK's own tests make: no connection
            return await super().call_tool(name, arguments)
        run = super().call_tool
        return await self.bridge.run(context, lambda: run(name, arguments, context))
