"""ask() returns an answer exactly when an independent oracle says it fits the request."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    ask,
    provide,
)
from interaction._answer_checks import is_clean_answer
from interaction.testing import ScriptedProvider

from .strategies import line, requests


def oracle(request: AskUserQuestionRequest, answer: AskUserQuestionAnswer) -> bool:
    """The answer rules of DESIGN.md, written out independently of the library."""
    questions = {q.id: q for q in request.questions}
    ids = [item.id for item in answer.answers]
    if sorted(ids) != sorted(questions):
        return False
    for item in answer.answers:
        question = questions[item.id]
        labels = [o.label for o in question.options]
        if any(label not in labels for label in item.selected):
            return False
        if len(set(item.selected)) != len(item.selected):
            return False
        if item.custom is not None and item.custom.strip() == "":
            return False
        if not question.multi_select and (
            len(item.selected) > 1 or (item.selected and item.custom is not None)
        ):
            return False
    return True


@st.composite
def request_and_answer(draw: st.DrawFn) -> tuple[AskUserQuestionRequest, AskUserQuestionAnswer]:
    request = draw(requests())
    qids = [q.id for q in request.questions]
    items = []
    for question in request.questions:
        if draw(st.integers(0, 9)) == 0:
            continue  # a missing answer
        labels = [o.label for o in question.options]
        pool = st.sampled_from(labels) | line if labels else line
        selected = draw(st.lists(pool, max_size=3)) if draw(st.booleans()) else []
        custom = draw(st.none() | st.sampled_from(["", "  ", "mine"]))
        items.append(AskUserQuestionAnswerItem(question.id, selected, custom))
    if draw(st.integers(0, 9)) == 0:
        items.append(AskUserQuestionAnswerItem(draw(st.sampled_from(qids) | line)))
    return request, AskUserQuestionAnswer(draw(st.permutations(items)))


@settings(max_examples=300, deadline=None)
@given(request_and_answer())
def test_ask_accepts_exactly_what_the_oracle_accepts(
    case: tuple[AskUserQuestionRequest, AskUserQuestionAnswer],
) -> None:
    request, answer = case

    async def run() -> AskUserQuestionAnswer | UserInteractionError:
        with provide(ScriptedProvider(lambda _: answer)):
            try:
                return await ask(request)
            except UserInteractionError as error:
                return error

    result = asyncio.run(run())
    if oracle(request, answer):
        assert isinstance(result, AskUserQuestionAnswer)
        assert [item.id for item in result.answers] == [q.id for q in request.questions]
        assert sorted(result.answers, key=repr) == sorted(answer.answers, key=repr)
    else:
        assert isinstance(result, UserInteractionError)
        assert result.code == ErrorCode.BAD_ANSWER


@settings(max_examples=300)
@given(request_and_answer())
def test_the_answer_fast_pass_agrees_with_the_detailed_checks(
    case: tuple[AskUserQuestionRequest, AskUserQuestionAnswer],
) -> None:
    request, answer = case
    if is_clean_answer(request, answer):
        assert oracle(request, answer)
        assert [item.id for item in answer.answers] == [q.id for q in request.questions]
