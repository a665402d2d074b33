"""The core's one internal facade: everything the in-tree extras may use from the core.

Every module outside the core (``wire``, ``tool``, ``display``, ``flow``, ``console``,
``relay``, ``redis``, ``postgres``, ``testing``, ``cli``, ``_demo``, ``_pytest_plugin``,
``terminal``, ``web``, ``mcp`` and ``integrations``) imports the core only from here
(``tests/test_exports.py`` fails when one reaches into ``_types``, ``_request_checks`` or
another private core module), so a core module can be split or renamed by changing this
file alone. Most names here are also public in ``interaction``; the rest are the few
internal tools the codec, the tool and the relay share with ``ask()``:

- ``check_questions`` / ``check_caller``: the structural and caller parts of
  ``check_request``, for a codec that has no signal or agent to check;
- ``ask_with`` / ``with_provider`` / ``with_provider_sync``: ``ask()`` (or any call)
  through a provider a host was handed, active in a fresh context so a provider
  registered around the host never makes it ``DUPLICATE_PROVIDER`` (the bridges' clients,
  the framework integrations);
- ``call_sync``: how the sync API runs a coroutine for a thread (on the provider's loop, or
  a fresh one), for the extras' sync forms (``run_tool_sync``, the sync framework tools);
- ``questions_from_json``: checked questions straight from parsed wire JSON in one pass,
  or ``None`` when the detailed decode must look closer;
- ``check_assignment``, ``check_assignment_in``, ``approves``, ``not_assigned_error`` and
  ``now_utc``: an assignment's checks without and with a team, whether an answer approves
  a quorum question, the ``NOT_ASSIGNED`` refusal and an approval's time, for the codec,
  the relays and the web app;
- ``check_provenance`` and ``MAX_PROVENANCE_TEXT``: the provenance check ``ask()`` makes,
  for the codec that reads one off the wire, and its length bound;
- ``SURROGATE``: the pattern of lone surrogates, which no JSON encoder can write;
- ``aborted_error``: the ``ASK_TIMEOUT`` / ``ASK_ABORTED`` error of an abort reason, for a
  provider wrapper that ends an ask by its own timeout (policies);
- ``DISPOSED_MESSAGE``: the fixed message of an ask aborted by its provider's disposal;
- ``MISMATCH_MESSAGE``: the fixed message of a resumed ask whose question changed, for the
  hosts that resume asks their own way (MCP rounds, LangGraph);
- ``thaw``: a plain, mutable JSON copy of a frozen intent field, and ``as_plain``: a
  ``dict``, ``list`` or ``str`` subclass a host parsed as the plain value it holds;
- ``json_type``: the one name for the JSON type of what a model or wire client sent;
- ``signal_deadline``: when a timeout signal aborts, for a host that carries the timeout
  past the process (the DBOS integration's durable deadline);
- ``short_repr``: a bad argument as a message shows it (cut short, never a huge int's
  digits);
- ``fault``: the one builder of a located fault (``"<path>: <problem>"``), and
  ``problem_of``, which takes the problem back out to locate it anew.
"""

from . import __version__
from ._abort import AbortController, AbortSignal, short_repr, signal_deadline
from ._agents import Agent, AgentRegistry, LiveAgents, current_agents, provide_agents
from ._answer_checks import check_answer
from ._ask import ask, ask_with
from ._errors import (
    BAD_TEAM,
    DISPOSED_MESSAGE,
    MISMATCH_MESSAGE,
    NOT_ASSIGNED,
    ErrorCode,
    HarnessError,
    UserInteractionError,
    aborted_error,
    cancelled_error,
    fault,
    json_type,
    problem_of,
)
from ._helpers import (
    PermissionVerdict,
    PlanVerdict,
    ask_permission,
    ask_text,
    choose,
    choose_many,
    confirm,
    permission_question,
    permission_verdict,
    review_plan,
)
from ._presentation import (
    OTHER_LABEL,
    RECOMMENDED_SUFFIX,
    answer_item,
    escape_controls,
    is_plan_review,
    split_recommended,
)
from ._provenance import MAX_PROVENANCE_TEXT, Provenance, check_provenance, with_provenance
from ._registry import (
    current_provider,
    provide,
    register_provider,
    with_provider,
    with_provider_sync,
)
from ._request_checks import check_caller, check_questions, check_request, questions_from_json
from ._suspend import AskSuspended, ResumedAnswer, Resumption, request_digest, resume
from ._sync import (
    ask_sync,
    ask_text_sync,
    call_sync,
    choose_many_sync,
    choose_sync,
    confirm_sync,
    review_plan_sync,
)
from ._team import (
    MAX_ASSIGNEES,
    Approval,
    Assignment,
    Team,
    approves,
    assignment_of,
    check_assignment,
    check_assignment_in,
    is_name,
    may_answer,
    may_see,
    may_settle,
    not_assigned_error,
    now_utc,
    quorum_progress,
)
from ._text_policy import SURROGATE, label_key
from ._types import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionIntent,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    JSONValue,
    PermissionIntent,
    PlanReviewIntent,
    UnknownIntent,
    UserInteractionProvider,
    as_plain,
    thaw,
)

__all__ = [
    "BAD_TEAM",
    "DISPOSED_MESSAGE",
    "MAX_ASSIGNEES",
    "MAX_PROVENANCE_TEXT",
    "MISMATCH_MESSAGE",
    "NOT_ASSIGNED",
    "OTHER_LABEL",
    "RECOMMENDED_SUFFIX",
    "SURROGATE",
    "AbortController",
    "AbortSignal",
    "Agent",
    "AgentRegistry",
    "Approval",
    "AskSuspended",
    "AskUserQuestionAnswer",
    "AskUserQuestionAnswerItem",
    "AskUserQuestionIntent",
    "AskUserQuestionItem",
    "AskUserQuestionOption",
    "AskUserQuestionRequest",
    "Assignment",
    "ErrorCode",
    "HarnessError",
    "JSONValue",
    "LiveAgents",
    "PermissionIntent",
    "PermissionVerdict",
    "PlanReviewIntent",
    "PlanVerdict",
    "Provenance",
    "ResumedAnswer",
    "Resumption",
    "Team",
    "UnknownIntent",
    "UserInteractionError",
    "UserInteractionProvider",
    "__version__",
    "aborted_error",
    "answer_item",
    "approves",
    "as_plain",
    "ask",
    "ask_permission",
    "ask_sync",
    "ask_text",
    "ask_text_sync",
    "ask_with",
    "assignment_of",
    "call_sync",
    "cancelled_error",
    "check_answer",
    "check_assignment",
    "check_assignment_in",
    "check_caller",
    "check_provenance",
    "check_questions",
    "check_request",
    "choose",
    "choose_many",
    "choose_many_sync",
    "choose_sync",
    "confirm",
    "confirm_sync",
    "current_agents",
    "current_provider",
    "escape_controls",
    "fault",
    "is_name",
    "is_plan_review",
    "json_type",
    "label_key",
    "may_answer",
    "may_see",
    "may_settle",
    "not_assigned_error",
    "now_utc",
    "permission_question",
    "permission_verdict",
    "problem_of",
    "provide",
    "provide_agents",
    "questions_from_json",
    "quorum_progress",
    "register_provider",
    "request_digest",
    "resume",
    "review_plan",
    "review_plan_sync",
    "short_repr",
    "signal_deadline",
    "split_recommended",
    "thaw",
    "with_provenance",
    "with_provider",
    "with_provider_sync",
]
