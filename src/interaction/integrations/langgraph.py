"""LangGraph: ask from inside a node by interrupting the graph, and answer to resume it.

- :class:`InterruptProvider` suspends every ask with LangGraph's ``interrupt()``. The
  interrupt's value is ``{"kind": "interaction/ask", "request": <wire request>, "digest":
  ..., "schema": <answer JSON Schema>}`` and the ask raises ``AskSuspended`` carrying the
  ``GraphInterrupt``, so ``ask()`` re-raises LangGraph's own exception (never
  ``PROVIDER_FAILED``) and the run stops with the question pending in the checkpoint.
- :func:`ask_user_tool` is the model-facing ``ask_user_question`` as a LangChain
  ``StructuredTool`` (sync and async), for prebuilt agents and ``ToolNode`` loops: with
  :class:`InterruptProvider` active it interrupts the graph like any other ask.
- :func:`answer_interrupts` reads a thread's pending interrupts, asks each question through
  any provider (terminal, web relay, MCP, a script), checks the answer against the
  request, and returns ``Command(resume={interrupt_id: <wire answer + digest>})``;
  :func:`run_graph` runs a graph to its end, answering every interrupt on the way.

On resume LangGraph **re-runs the interrupted node from its top**: code before the ask runs
again (keep it idempotent), and each ``interrupt()`` in the node gets its resume value in
order. The provider checks that the question asked now has the digest of the one that was
answered (else ``BAD_ANSWER``, "the resumed question is not the one that was asked") and
checks the answer against it. A dismissal, timeout or abort while answering is resumed
into the node as that error (``ASK_CANCELLED``, ``ASK_TIMEOUT``, ``ASK_ABORTED``), so the
node handles it as it would with a live provider.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, cast

try:
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import StructuredTool, ToolException
    from langgraph.config import get_config
    from langgraph.errors import GraphInterrupt
    from langgraph.pregel import Pregel
    from langgraph.types import Command, Interrupt, interrupt
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "interaction.integrations.langgraph needs LangGraph:"
        ' pip install "interaction-seam[langgraph]"'
    ) from exc

from .._core import (
    MISMATCH_MESSAGE,
    AbortSignal,
    AskSuspended,
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    HarnessError,
    Provenance,
    UserInteractionError,
    UserInteractionProvider,
    request_digest,
    with_provenance,
)
from ..tool import (
    DEFAULT_LIMITS,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    ToolLimits,
    ToolResult,
    run_tool,
    run_tool_sync,
    tool_parameters,
)
from ..wire import JSONObject, answer_schema, decode_answer, decode_request, encode_answer
from ..wire import encode_request as _encode_request
from ._common import (
    STOPPED,
    ask_through,
    asked_by,
    checked_timeout,
    timeout_signal,
    with_provider,
    with_provider_sync,
)

__all__ = [
    "FRAMEWORK",
    "KIND",
    "MAX_ROUNDS",
    "InterruptProvider",
    "answer_interrupts",
    "ask_user_tool",
    "is_question",
    "run_graph",
]

FRAMEWORK: Final = "LangGraph"
"""The source of a question when the run's config names no agent (``lc_agent_name``)."""
KIND: Final = "interaction/ask"
"""The ``kind`` of an interrupt value raised by :class:`InterruptProvider`."""
MAX_ROUNDS: Final = 100
"""How many times :func:`run_graph` resumes a graph before it gives up."""
MISMATCH: Final = MISMATCH_MESSAGE  # the core's, as interaction.resume() words it
FORGED: Final = "the interrupt's question does not match its digest"


def _resume_schema() -> JSONObject:
    schema = answer_schema()
    properties = schema.get("properties")
    assert isinstance(properties, dict)
    return {
        **schema,
        "properties": {
            **properties,
            "digest": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
            "error": {
                "type": "object",
                "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
                "required": ["code", "message"],
            },
        },
        "required": ["digest"],
        "oneOf": [{"required": ["answers"]}, {"required": ["error"]}],
    }


class InterruptProvider:
    """A provider for code that runs inside a LangGraph node: it interrupts the graph.

    Register it around the graph's run (``with interaction.provide(InterruptProvider()):``)
    and the node's ``ask()``, ``confirm()``, ``run_tool()``... suspend the run until
    :func:`answer_interrupts` answers. The graph needs a checkpointer. What the request's
    provenance leaves unset is filled from the run's config: the agent
    (``lc_agent_name``, else LangGraph) and the thread (``thread_id``) as its session.
    """

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        known = _asked_by(_run_config())
        request = with_provenance(request, source=known.source, session=known.session)
        digest = request_digest(request)
        value: JSONObject = {
            "kind": KIND,
            "request": _encode_request(request),
            "digest": digest,
            "schema": answer_schema(),
        }
        try:
            resumed = interrupt(value, response_schema=_resume_schema())
        except GraphInterrupt as control:
            raise AskSuspended(request, control=control) from None
        return _resumed_answer(request, digest, resumed)


def _run_config() -> RunnableConfig | None:
    """The config of the run the caller is in, or ``None`` outside one."""
    try:
        return get_config()
    except RuntimeError:  # not inside a runnable: LangGraph's word for it
        return None


def _asked_by(config: RunnableConfig | None, tool: str | None = None) -> Provenance:
    """Who asks, as a run's config says: its agent (``lc_agent_name``) and thread."""
    if config is None:
        return asked_by(FRAMEWORK, tool=tool)
    return asked_by(
        FRAMEWORK,
        agent=config.get("metadata", {}).get("lc_agent_name"),
        session=config.get("configurable", {}).get("thread_id"),
        tool=tool,
    )


def _resumed_answer(
    request: AskUserQuestionRequest, digest: str, resumed: object
) -> AskUserQuestionAnswer:
    if not isinstance(resumed, Mapping) or resumed.get("digest") != digest:
        raise UserInteractionError(MISMATCH, ErrorCode.BAD_ANSWER)
    error = resumed.get("error")
    if error is not None:
        if (
            isinstance(error, Mapping)
            and error.get("code") in STOPPED
            and isinstance(error.get("message"), str)
        ):
            raise UserInteractionError(str(error["message"]), str(error["code"]))
        raise UserInteractionError(
            "the resumed answer carries an error that is not a dismissal, timeout or abort",
            ErrorCode.BAD_ANSWER,
        )
    return decode_answer(dict(resumed), request)


def is_question(pending: Interrupt) -> bool:
    """Whether an interrupt was raised by :class:`InterruptProvider`."""
    value = pending.value
    return isinstance(value, Mapping) and value.get("kind") == KIND


def _pending_request(pending: Interrupt) -> tuple[AskUserQuestionRequest, str]:
    value = cast(Mapping[str, object], pending.value)
    request = decode_request(value.get("request"))
    digest = request_digest(request)
    if value.get("digest") != digest:
        raise UserInteractionError(FORGED, ErrorCode.BAD_REQUEST)
    return request, digest


async def answer_interrupts(
    graph: Pregel[Any, Any, Any, Any],
    config: RunnableConfig,
    *,
    provider: UserInteractionProvider | None = None,
    signal: AbortSignal | None = None,
) -> Command[object] | None:
    """Ask the pending questions of ``config``'s thread; the ``Command`` that resumes it.

    ``None`` when no question is pending. Each question is checked as it comes out of the
    checkpoint (``BAD_REQUEST`` if it is malformed or does not match its digest), asked
    through ``provider`` (else the one active here), and its answer checked before it goes
    into the command. Interrupts raised by other code are left alone.
    """
    snapshot = await graph.aget_state(config)
    resume: dict[str, object] = {}
    for pending in snapshot.interrupts:
        if not is_question(pending):
            continue
        request, digest = _pending_request(pending)
        asked = AskUserQuestionRequest(
            request.questions,
            signal=signal,
            key=f"{config.get('configurable', {}).get('thread_id')}:{pending.id}",
            provenance=request.provenance,
        )
        try:
            answer = await ask_through(asked, provider)
        except HarnessError as error:
            if error.code not in STOPPED:
                raise
            resume[pending.id] = {
                "digest": digest,
                "error": {"code": error.code, "message": error.message},
            }
            continue
        resume[pending.id] = {**encode_answer(answer), "digest": digest}
    if not resume:
        return None
    return Command(resume=resume)


async def run_graph(
    graph: Pregel[Any, Any, Any, Any],
    input: object,
    config: RunnableConfig,
    *,
    provider: UserInteractionProvider | None = None,
    max_rounds: int = MAX_ROUNDS,
) -> object:
    """Run ``graph`` with :class:`InterruptProvider` active, answering every question it asks.

    The graph runs in a fresh context with only the interrupting provider registered; the
    questions are asked through ``provider``, else the provider active here. Returns what
    the last ``ainvoke`` returned; ``RuntimeError`` if it still asks after ``max_rounds``
    resumptions.
    """
    asker = InterruptProvider()

    async def step(value: object) -> object:
        return await with_provider(asker, lambda: graph.ainvoke(value, config))

    result = await step(input)
    for _ in range(max_rounds):
        command = await answer_interrupts(graph, config, provider=provider)
        if command is None:
            return result
        result = await step(command)
    raise RuntimeError(f"the graph was still asking after {max_rounds} rounds")


# ---------------------------------------------------------------------------- the tool

_RETRIED: Final = frozenset({ErrorCode.BAD_REQUEST, ErrorCode.EMPTY_QUESTIONS})


def _content(result: ToolResult) -> str:
    """The tool's text; arguments the model must fix are a ``ToolException``, so LangChain
    returns them as an error ``ToolMessage`` (``status="error"``)."""
    if result.error is not None and result.error["code"] in _RETRIED:
        raise ToolException(result.content.removeprefix("Error: "))
    return result.content


def ask_user_tool(
    provider: UserInteractionProvider | None = None,
    *,
    limits: ToolLimits = DEFAULT_LIMITS,
    timeout: float | None = None,
) -> StructuredTool:
    """The model-facing ``ask_user_question`` tool for LangChain and LangGraph agents.

    Its schema is ``interaction.tool``'s and its calls go through ``run_tool`` (awaited by
    ``ainvoke``) or ``run_tool_sync`` (``invoke``, from a plain thread): the model gets
    ``{"answers":[...]}`` or a result it can act on. Arguments it must fix are an error
    tool message (``status="error"``). Inside a graph run with :class:`InterruptProvider`
    active (:func:`run_graph`), the ask interrupts the graph and the node that called the
    tool is re-run with the answer. ``timeout`` (seconds) bounds each ask; one that is not
    positive and finite is a ``ValueError`` here. Each question's provenance names the
    tool, the agent (the config's ``lc_agent_name``, else LangGraph) and the thread
    (``thread_id``) as its session.
    """
    timeout = checked_timeout(timeout)

    async def ask_async(config: RunnableConfig, **arguments: object) -> str:
        provenance = _asked_by(config, TOOL_NAME)
        return _content(
            await with_provider(
                provider,
                lambda: run_tool(
                    arguments,
                    signal=timeout_signal(timeout),
                    limits=limits,
                    provenance=provenance,
                ),
            )
        )

    def ask_sync(config: RunnableConfig, **arguments: object) -> str:
        provenance = _asked_by(config, TOOL_NAME)
        return _content(
            with_provider_sync(
                provider,
                lambda: run_tool_sync(
                    arguments,
                    signal=timeout_signal(timeout),
                    limits=limits,
                    provenance=provenance,
                ),
            )
        )

    return StructuredTool.from_function(
        func=ask_sync,
        coroutine=ask_async,
        name=TOOL_NAME,
        description=TOOL_DESCRIPTION,
        args_schema=dict(tool_parameters(limits)),
        infer_schema=False,
        handle_tool_error=True,
    )
