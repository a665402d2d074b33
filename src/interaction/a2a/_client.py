"""Client side: send a message to an A2A agent and answer each question it asks."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Final

from a2a.client import Client
from a2a.helpers.proto_helpers import new_data_part, new_text_part
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
)

from .._core import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    Provenance,
    UserInteractionError,
    UserInteractionProvider,
    ask_with,
)
from ..wire import decode_request, encode_answer
from ._common import DATA_KEY, MAX_REQUEST, payload, text_field

_DISMISSALS: Final = (ErrorCode.ASK_CANCELLED, ErrorCode.ASK_ABORTED, ErrorCode.ASK_TIMEOUT)


async def _send(client: Client, message: Message) -> Task | Message:
    """The task (as the agent holds it after the events) or the message the agent replied."""
    task_id = ""
    async for response in client.send_message(SendMessageRequest(message=message)):
        if response.HasField("message"):
            return response.message
        if response.HasField("task"):
            task_id = response.task.id
        elif response.HasField("status_update"):
            task_id = response.status_update.task_id
    if not task_id:
        raise UserInteractionError(
            "the agent sent neither a task nor a message", ErrorCode.BAD_REQUEST
        )
    return await client.get_task(GetTaskRequest(id=task_id))


def render_answer(request: AskUserQuestionRequest, answer: AskUserQuestionAnswer) -> str:
    """The answers as plain text, one line per question, beside the reply's data part."""
    lines = []
    for item, given in zip(request.questions, answer.answers, strict=True):
        chosen = [*given.selected, *([given.custom] if given.custom is not None else [])]
        lines.append(f"{item.question} {', '.join(chosen) if chosen else '(skipped)'}")
    return "\n".join(lines)


async def send_and_answer(
    client: Client,
    message: Message,
    provider: UserInteractionProvider | None = None,
    *,
    agent_card: AgentCard | None = None,
    max_rounds: int = 100,
) -> Task | Message:
    """Send ``message`` and answer the agent's questions until its task no longer needs input.

    Each time the task is ``input-required`` with interaction's data part, the questions
    are asked through ``provider`` (or else the provider active here: terminal, console,
    web page, policies) and the answer is sent back in the same task. The result is the
    task as the agent holds it at the end (completed, failed, cancelled, or
    ``input-required`` with a question interaction cannot read: a text-only one), or the
    message an agent answered without a task.

    A dismissal (``ASK_CANCELLED``, an abort or a timeout) cancels the task, and its
    cancelled state is returned. A question that does not decode, with more than
    ``MAX_REQUEST`` characters or text no UI may show (control characters) is
    ``BAD_REQUEST``; an agent that refuses a reply is ``BAD_ANSWER`` with its reason; both
    leave the task ``input-required``. More than ``max_rounds`` questions is
    ``BAD_REQUEST``.

    Each question's provenance names the agent (``agent_card``'s name, which the client
    knows, rather than what the agent's message claims) and the task's context as the
    session; the tool and the time the agent sent are kept.
    """
    result = await _send(client, message)
    for _ in range(max_rounds):
        if (
            not isinstance(result, Task)
            or result.status.state != TaskState.TASK_STATE_INPUT_REQUIRED
        ):
            return result
        data = payload(result.status.message.parts, MAX_REQUEST, ErrorCode.BAD_REQUEST, "question")
        if data is None:
            return result
        if message.task_id and isinstance(error := data.get("error"), dict):
            raise UserInteractionError(
                f"the agent refused the reply: {error.get('message')}", ErrorCode.BAD_ANSWER
            )
        request = decode_request(data.get("request"))
        request = replace(
            request,
            provenance=replace(
                request.provenance or Provenance(),
                source=None if agent_card is None else agent_card.name,
                session=result.context_id,
            ),
        )
        state = text_field(data, "state", ErrorCode.BAD_REQUEST)
        try:
            answer = await ask_with(request, provider)
        except UserInteractionError as error:
            if error.code in _DISMISSALS:
                return await client.cancel_task(CancelTaskRequest(id=result.id))
            raise
        message = Message(
            role=Role.ROLE_USER,
            message_id=str(uuid.uuid4()),
            task_id=result.id,
            context_id=result.context_id,
            parts=[
                new_text_part(render_answer(request, answer)),
                new_data_part({DATA_KEY: {"answer": encode_answer(answer), "state": state}}),
            ],
        )
        result = await _send(client, message)
    raise UserInteractionError(
        f"the agent asked more than {max_rounds} times", ErrorCode.BAD_REQUEST
    )
