"""The seam between an agent's plugins that need a human decision and the UI that collects it.

A plugin calls ``await interaction.ask(request)``; a UI registers itself with
``interaction.provide(provider)``. Everything public lives here.
"""

from ._abort import AbortController as AbortController
from ._abort import AbortSignal as AbortSignal
from ._agents import Agent as Agent
from ._agents import AgentRegistry as AgentRegistry
from ._agents import LiveAgents as LiveAgents
from ._agents import current_agents as current_agents
from ._agents import provide_agents as provide_agents
from ._answer_checks import check_answer as check_answer
from ._ask import ask as ask
from ._errors import BAD_TEAM as BAD_TEAM
from ._errors import NOT_ASSIGNED as NOT_ASSIGNED
from ._errors import ErrorCode as ErrorCode
from ._errors import HarnessError as HarnessError
from ._errors import UserInteractionError as UserInteractionError
from ._errors import cancelled_error as cancelled_error
from ._helpers import PermissionVerdict as PermissionVerdict
from ._helpers import PlanVerdict as PlanVerdict
from ._helpers import ask_permission as ask_permission
from ._helpers import ask_text as ask_text
from ._helpers import choose as choose
from ._helpers import choose_many as choose_many
from ._helpers import confirm as confirm
from ._helpers import permission_question as permission_question
from ._helpers import permission_verdict as permission_verdict
from ._helpers import review_plan as review_plan
from ._presentation import OTHER_LABEL as OTHER_LABEL
from ._presentation import RECOMMENDED_SUFFIX as RECOMMENDED_SUFFIX
from ._presentation import answer_item as answer_item
from ._presentation import escape_controls as escape_controls
from ._presentation import is_plan_review as is_plan_review
from ._presentation import split_recommended as split_recommended
from ._provenance import Provenance as Provenance
from ._provenance import with_provenance as with_provenance
from ._registry import current_provider as current_provider
from ._registry import provide as provide
from ._registry import register_provider as register_provider
from ._request_checks import check_request as check_request
from ._suspend import AskSuspended as AskSuspended
from ._suspend import ResumedAnswer as ResumedAnswer
from ._suspend import Resumption as Resumption
from ._suspend import request_digest as request_digest
from ._suspend import resume as resume
from ._sync import ask_sync as ask_sync
from ._sync import ask_text_sync as ask_text_sync
from ._sync import choose_many_sync as choose_many_sync
from ._sync import choose_sync as choose_sync
from ._sync import confirm_sync as confirm_sync
from ._sync import review_plan_sync as review_plan_sync
from ._team import Approval as Approval
from ._team import Assignment as Assignment
from ._team import Team as Team
from ._team import may_answer as may_answer
from ._text_policy import label_key as label_key
from ._types import AskUserQuestionAnswer as AskUserQuestionAnswer
from ._types import AskUserQuestionAnswerItem as AskUserQuestionAnswerItem
from ._types import AskUserQuestionIntent as AskUserQuestionIntent
from ._types import AskUserQuestionItem as AskUserQuestionItem
from ._types import AskUserQuestionOption as AskUserQuestionOption
from ._types import AskUserQuestionRequest as AskUserQuestionRequest
from ._types import JSONValue as JSONValue
from ._types import PermissionIntent as PermissionIntent
from ._types import PlanReviewIntent as PlanReviewIntent
from ._types import UnknownIntent as UnknownIntent
from ._types import UserInteractionProvider as UserInteractionProvider

__version__ = "0.1.0"

__all__ = [
    "BAD_TEAM",
    "NOT_ASSIGNED",
    "OTHER_LABEL",
    "RECOMMENDED_SUFFIX",
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
    "answer_item",
    "ask",
    "ask_permission",
    "ask_sync",
    "ask_text",
    "ask_text_sync",
    "cancelled_error",
    "check_answer",
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
    "is_plan_review",
    "label_key",
    "may_answer",
    "permission_question",
    "permission_verdict",
    "provide",
    "provide_agents",
    "register_provider",
    "request_digest",
    "resume",
    "review_plan",
    "review_plan_sync",
    "split_recommended",
    "with_provenance",
]
