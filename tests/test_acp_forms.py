"""The ACP form both ways, in process: what our agent side sends, our client side asks and
fills, and the agent side reads back, for any request and any answer that fits it."""

from __future__ import annotations

from collections.abc import Callable

from acp.schema import ElicitationFormSessionMode
from hypothesis import given
from hypothesis import strategies as st

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    check_answer,
    label_key,
)
from interaction.acp._agent import form_to_answer, request_to_form
from interaction.acp._client import form_fields

from .strategies import line, requests


def names_none_of(labels: list[str]) -> Callable[[str], bool]:
    keys = {label_key(label) for label in labels}
    return lambda text: bool(text) and label_key(text) not in keys


@st.composite
def answered(draw: st.DrawFn) -> tuple[AskUserQuestionRequest, AskUserQuestionAnswer]:
    request = draw(requests())
    items = []
    for question in request.questions:
        labels = [o.label for o in question.options]
        own = draw(st.none() | line.map(str.strip).filter(names_none_of(labels)))
        if question.multi_select:
            chosen = draw(st.lists(st.sampled_from(labels), unique=True)) if labels else []
            items.append(AskUserQuestionAnswerItem(question.id, chosen, own))
        elif own is not None or not labels:
            items.append(AskUserQuestionAnswerItem(question.id, (), own))
        else:
            chosen = draw(st.lists(st.sampled_from(labels), max_size=1))
            items.append(AskUserQuestionAnswerItem(question.id, chosen))
    return request, check_answer(request, AskUserQuestionAnswer(items))


def client_item(
    asked: AskUserQuestionItem, given: AskUserQuestionAnswerItem
) -> AskUserQuestionAnswerItem:
    """What the person answers on the client's question for the agent's answer item."""
    return AskUserQuestionAnswerItem(asked.id, given.selected, given.custom)


@given(answered())
def test_a_form_and_its_content_round_trip(
    case: tuple[AskUserQuestionRequest, AskUserQuestionAnswer],
) -> None:
    request, answer = case
    message, schema, sent = request_to_form(request)
    mode = ElicitationFormSessionMode(session_id="s", requested_schema=schema)
    fields = form_fields(message, mode)
    assert len(fields) == len(request.questions)  # each "Other" field joins its question
    content: dict[str, object] = {}
    for field, original, given_item in zip(fields, request.questions, answer.answers, strict=True):
        assert field.item.multi_select == (original.multi_select and bool(original.options))
        assert [o.label for o in field.item.options] == [o.label for o in original.options]
        value, problem = field.read(client_item(field.item, given_item))
        assert problem is None
        if value is not None:
            content[field.key] = value
        if given_item.custom is not None:
            assert field.other_key is not None or not original.options
            content[field.other_key or field.key] = given_item.custom
    assert check_answer(request, form_to_answer(sent, content)) == answer


def test_a_question_whose_id_looks_like_an_other_field_keeps_its_place() -> None:
    request = AskUserQuestionRequest(
        [
            AskUserQuestionItem("a__other", "Why?"),
            AskUserQuestionItem("a", "Which?", options=[AskUserQuestionOption("x")]),
        ]
    )
    message, schema, sent = request_to_form(request)
    assert [(f.key, f.other_key) for f in sent] == [("a__other_", None), ("a", "a__other")]
    mode = ElicitationFormSessionMode(session_id="s", requested_schema=schema)
    assert [(f.key, f.other_key) for f in form_fields(message, mode)] == [
        ("a__other_", None),
        ("a", "a__other"),
    ]
