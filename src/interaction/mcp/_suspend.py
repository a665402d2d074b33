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
HMAC-SHA256 under a key derived from the deployment's one secret, bound to the tool and
its arguments, with an expiry and a nonce that the :class:`~interaction.mcp.SpentStateStore`
lets be redeemed once: a forged, altered, expired, misdirected or replayed state is
``BAD_REQUEST``, never an answer. (The SDK's own ``RequestStateBoundary`` also seals it,
under another key derived from the same secret; this does not rely on it.)
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import json
import math
import os
import secrets
import sys
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, ParamSpec, TypeVar

import mcp.types as mcp_types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.request_state import RequestStateSecurity
from mcp.server.session import ServerSession
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
from ..spent import MemorySpentStore, SpentStateStore, SpentStoreUnavailable
from ..wire import decode_answer, encode_answer
from ._limits import MAX_ARGUMENTS_BYTES, MAX_STATE
from ._server import (
    ACTIVE_ROUND,
    INPUT_REQUIRED_VERSION,
    NO_ELICITATION,
    ElicitationProvider,
    outcome,
    report_client,
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
UNCHECKED_STATE: Final = "the request state could not be checked against the spent-state store"
NO_CONTEXT: Final = (
    "an @interactive tool takes the MCP Context (mcp.server.mcpserver.Context or"
    " fastmcp.Context) as a parameter"
)
MIN_SECRET: Final = 32
SDK_TTL_MARGIN: Final = 60.0
"""Seconds the SDK's seal outlives the bridge's state, so the bridge judges expiry first."""
SECRET_VARIABLE: Final = "INTERACTION_MCP_SECRET"
"""The environment variable :meth:`InputRequiredBridge.from_env` reads by default."""


class StateRefused(MCPError):
    """The bridge's refusal of a call, before its tool runs (a forged, expired, replayed or
    oversized state, a store that could not record it, a response of the wrong kind): a
    JSON-RPC error, never the tool's result."""


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
        report_client(provider.session)
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


@dataclass(frozen=True, slots=True)
class Call:
    """What the bridge reads of one tool call, whichever server framework serves it."""

    session: ServerSession
    version: str
    request_state: str | None
    input_responses: Mapping[str, object] | None
    tool: str
    arguments: Callable[[], object]
    """The call's arguments as JSON, read only on 2026-07-28 (a state binds to them)."""

    def digest(self) -> str:
        """The SHA-256 of the arguments as canonical JSON; ``BAD_REQUEST`` past
        :data:`~interaction.mcp._limits.MAX_ARGUMENTS_BYTES`."""
        return arguments_digest(self.arguments())


def arguments_digest(arguments: object) -> str:
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    if len(text) > MAX_ARGUMENTS_BYTES:
        raise UserInteractionError(
            f"the tool's arguments are {len(text)} bytes long as JSON; at most"
            f" {MAX_ARGUMENTS_BYTES} are read",
            ErrorCode.BAD_REQUEST,
            path="arguments",
        )
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _call_of(ctx: Context[Any, Any]) -> Call:
    params: Mapping[str, Any] = ctx.request_context.params or {}
    return Call(
        ctx.request_context.session,
        ctx.protocol_version or "",
        ctx.request_state,
        ctx.input_responses,
        str(params.get("name")),
        lambda: params.get("arguments") or {},
    )


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _derive(secret: bytes, purpose: bytes) -> bytes:
    return hmac.new(secret, b"interaction.mcp/" + purpose, hashlib.sha256).digest()


def _secret_bytes(secret: bytes | str) -> bytes:
    raw = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)
    if len(raw) < MIN_SECRET:
        raise ValueError(
            f"the request-state secret must be at least {MIN_SECRET} bytes"
            ' (make one with: python -c "import secrets; print(secrets.token_hex(32))")'
        )
    return raw


class InputRequiredBridge:
    """Serves tools whose asks must work on every protocol generation.

    ``secret`` (at least 32 bytes; a ``str`` is taken as UTF-8) is the one secret of a
    deployment: the bridge signs its ``request_state`` under a key derived from it, and
    :meth:`request_state_security` gives the SDK's request-state sealing another key
    derived from it (an :class:`InteractiveMCPServer` installs that on its own). By
    default a secret made now and held only by this process, which suits stdio and
    single-worker servers that never restart mid-call. ``ttl`` is how long a state stays
    valid. ``store`` keeps the nonces of redeemed states, so a state is redeemed at most
    once: by default in this process (:class:`MemorySpentStore`); a deployment that
    restarts or runs several workers shares one (``RedisSpentStore``) and the secret.
    """

    def __init__(
        self,
        secret: bytes | str | None = None,
        *,
        ttl: float = 600.0,
        store: SpentStateStore | None = None,
    ) -> None:
        if not (math.isfinite(ttl) and ttl > 0):
            raise ValueError("the request-state ttl must be a positive number of seconds")
        self.shared = secret is not None
        """Whether the secret was given (and so may be shared), not made by this process."""
        raw = _secret_bytes(secret) if secret is not None else os.urandom(32)
        self._key = _derive(raw, b"bridge-state")
        self._sdk_key = _derive(raw, b"sdk-request-state")
        self.ttl = ttl
        self.store: SpentStateStore = store if store is not None else MemorySpentStore()
        self._now = 0.0  # the latest time.time() seen: see _time
        self._lock = threading.Lock()

    @classmethod
    def from_env(
        cls,
        variable: str = SECRET_VARIABLE,
        *,
        ttl: float = 600.0,
        store: SpentStateStore | None = None,
    ) -> InputRequiredBridge:
        """A bridge whose secret is the environment variable ``variable``.

        ``ValueError`` (naming the variable, never its value) when it is unset or short.
        """
        value = os.environ.get(variable)
        if not value:
            raise ValueError(
                f"the environment variable {variable} (the request-state secret) is not set"
            )
        if len(value.encode("utf-8")) < MIN_SECRET:
            raise ValueError(
                f"the environment variable {variable} must hold at least {MIN_SECRET} bytes"
            )
        return cls(value, ttl=ttl, store=store)

    def request_state_security(self, *, audience: str | None = None) -> RequestStateSecurity:
        """The SDK's ``RequestStateSecurity`` under a key derived from this bridge's secret.

        Pass it as ``request_state_security=`` to an ``MCPServer`` or ``FastMCP`` whose tools
        use this bridge (:class:`InteractiveMCPServer` does it itself), so a restarted
        process or another worker with the same secret opens both layers of a state. Its
        ``ttl`` is the bridge's plus :data:`SDK_TTL_MARGIN`, so the bridge's expiry, with
        its clearer message, comes first.
        """
        return RequestStateSecurity(
            keys=[self._sdk_key], ttl=self.ttl + SDK_TTL_MARGIN, audience=audience
        )

    # ---------------------------------------------------------------------- the state

    def _sign(self, body: bytes) -> str:
        return hmac.new(self._key, body, hashlib.sha256).hexdigest()

    def seal(self, call: Call, outcomes: list[_Outcome], key: str, digest: str) -> str:
        payload = {
            "v": STATE_VERSION,
            "n": secrets.token_hex(16),
            "exp": self._time() + self.ttl,
            "t": call.tool,
            "a": call.digest(),
            "outcomes": [_encode_outcome(entry) for entry in outcomes],
            "pending": [key, digest],
        }
        body = json.dumps(payload, separators=(",", ":"), ensure_ascii=True).encode("ascii")
        return f"{_b64(body)}.{self._sign(body)}"

    async def open(self, call: Call) -> _State:
        """The verified state the client echoed (empty on the first round), now spent."""
        token = call.request_state
        if token is None:
            return _State((), None, None)
        if len(token) > MAX_STATE:
            raise UserInteractionError(
                f"the request state is {len(token)} characters long; at most {MAX_STATE} are read",
                ErrorCode.BAD_REQUEST,
                path="requestState",
            )
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
        if (
            payload.get("v") != STATE_VERSION
            or payload.get("t") != call.tool
            or payload.get("a") != call.digest()
        ):
            raise forged
        expires = float(payload["exp"])
        if not self._time() < expires:
            raise UserInteractionError(EXPIRED_STATE, ErrorCode.BAD_REQUEST, path="requestState")
        try:
            fresh = await self.store.spend(str(payload["n"]), expires)
        except SpentStoreUnavailable as exc:
            raise _StoreFailed(f"{UNCHECKED_STATE}: {exc}") from None
        except Exception as exc:
            raise _StoreFailed(f"{UNCHECKED_STATE}: {type(exc).__name__}") from None
        if not fresh:
            raise UserInteractionError(USED_STATE, ErrorCode.BAD_REQUEST, path="requestState")
        outcomes = tuple(_decode_outcome(entry) for entry in payload["outcomes"])
        key, digest = payload["pending"]
        return _State(outcomes, str(key), str(digest))

    def _time(self) -> float:
        """The latest wall-clock reading seen: it never goes back, even when the clock does
        (so a state sealed after a step back is not born expired, and one judged expired
        stays expired)."""
        with self._lock:
            self._now = max(self._now, time.time())
            return self._now

    # ----------------------------------------------------------------------- the tool

    def __call__(
        self, tool: Callable[P, Awaitable[R]]
    ) -> Callable[P, Coroutine[Any, Any, R | mcp_types.InputRequiredResult]]:
        """Wrap an MCP tool (one that takes the ``Context``) so its asks work on 2026-07-28.

        The tool may be an ``MCPServer`` tool (``mcp.server.mcpserver.Context``) or a
        ``FastMCP`` one (``fastmcp.Context``).
        """

        @functools.wraps(tool)
        async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R | mcp_types.InputRequiredResult:
            values = (*args, *kwargs.values())
            ctx = next((v for v in values if isinstance(v, Context)), None)
            if ctx is not None:
                return await self.run(lambda: _call_of(ctx), lambda: tool(*args, **kwargs))
            fast = _fastmcp_call(tool, args, kwargs)
            if fast is None:
                raise TypeError(NO_CONTEXT)
            try:
                return await self.run(fast, lambda: tool(*args, **kwargs))
            except StateRefused as refused:
                from ._fastmcp import through_fastmcp

                raise through_fastmcp(refused) from None

        return wrapper

    async def run(
        self, call: Callable[[], Call | None], tool: Callable[[], Awaitable[R]]
    ) -> R | mcp_types.InputRequiredResult:
        """One tool call, ``tool()``: as it is on a legacy connection, in rounds on 2026-07-28.

        ``call()`` reads the call (``None`` outside a request: the tool just runs).
        """
        if ACTIVE_ROUND.get() is not None:
            # An @interactive tool on an InteractiveMCPServer: that round owns the state.
            return await tool()
        current = call()
        if current is None or current.version < INPUT_REQUIRED_VERSION:
            return await tool()  # legacy: the provider pushes
        return await self._round(current, tool)

    async def _round(
        self, call: Call, tool: Callable[[], Awaitable[R]]
    ) -> R | mcp_types.InputRequiredResult:
        try:
            call.digest()  # arguments past the limit are refused before the tool runs
            state = await self.open(call)
        except UserInteractionError as error:  # a protocol error, not the tool's result
            raise StateRefused(
                mcp_types.INVALID_PARAMS, error.message, {"code": str(error.code)}
            ) from None
        except _StoreFailed as failed:
            raise StateRefused(
                mcp_types.INTERNAL_ERROR, str(failed), {"code": str(ErrorCode.PROVIDER_FAILED)}
            ) from None
        pending = None
        if state.pending_key is not None and state.pending_digest is not None:
            response = (call.input_responses or {}).get(state.pending_key)
            if response is not None and not isinstance(response, mcp_types.ElicitResult):
                raise StateRefused(
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
        suspension = Suspension(call.session, call.version, pending, replay)
        token = ACTIVE_ROUND.set(suspension)
        try:
            with resume(answers):
                return await tool()
        except Exception as exc:
            suspended = _suspension(exc)
            if suspended is None:
                raise
            request = suspended.request
            message, schema, _ = request_to_form(request, call.version)
            outcomes = [*answers, *suspension.collected]
            key = f"ask{len(outcomes) + 1}"
            form = mcp_types.ElicitRequest(
                params=mcp_types.ElicitRequestFormParams(message=message, requested_schema=schema)
            )
            return mcp_types.InputRequiredResult(
                input_requests={key: form},
                request_state=self.seal(call, outcomes, key, suspended.digest),
            )
        finally:
            ACTIVE_ROUND.reset(token)


class _StoreFailed(Exception):
    """The spent-state store could not record a state: it is refused, not redeemed."""


def _fastmcp_call(
    tool: Callable[..., object], args: tuple[object, ...], kwargs: Mapping[str, object]
) -> Callable[[], Call | None] | None:
    """How to read a FastMCP tool call, when one of the arguments is a ``fastmcp.Context``.

    FastMCP is only consulted when it is already imported (a FastMCP tool is running):
    ``interaction.mcp`` does not need it installed.
    """
    if "fastmcp" not in sys.modules:
        return None
    from ._fastmcp import interactive_call

    return interactive_call(tool, args, kwargs)


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
"""The default bridge, under a secret made when the process starts: ``@interactive``."""


class InteractiveMCPServer(MCPServer[Any]):
    """An ``MCPServer`` whose every tool can ask, on both protocol generations, unchanged.

    Tools are written and registered as on ``MCPServer``; a tool that asks through
    :class:`ElicitationProvider` pushes its questions on legacy connections and answers
    in input-required rounds on 2026-07-28 ones. ``bridge`` signs the request state (by
    default :data:`interactive`, under a secret made when the process starts). A bridge
    built with a secret also configures the SDK's request-state sealing from it (unless
    ``request_state_security`` is given), so the one secret is all that restarted
    processes and other workers must share.
    """

    def __init__(
        self, *args: Any, bridge: InputRequiredBridge = interactive, **kwargs: Any
    ) -> None:
        if bridge.shared and kwargs.get("request_state_security") is None:
            kwargs["request_state_security"] = bridge.request_state_security()
        super().__init__(*args, **kwargs)
        self.bridge = bridge

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> mcp_types.CallToolResult | mcp_types.InputRequiredResult:
        if context is None:  # a direct call, as the SDK's own tests make: no connection
            return await super().call_tool(name, arguments)
        run = super().call_tool

        def read() -> Call:
            assert context is not None
            return Call(
                context.request_context.session,
                context.protocol_version or "",
                context.request_state,
                context.input_responses,
                name,
                lambda: arguments,
            )

        return await self.bridge.run(read, lambda: run(name, arguments, context))
