"""The answer check: every BAD_ANSWER case, and the answers it accepts."""

from __future__ import annotations

from typing import cast

import pytest

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    ask,
    check_answer,
    provide,
)
from interaction.testing import ScriptedProvider

Item = AskUserQuestionAnswerItem
OPTIONS = [AskUserQuestionOption("tests"), AskUserQuestionOption("docs")]
REQUEST = AskUserQuestionRequest(
    [
        AskUserQuestionItem("single", "One?", options=OPTIONS),
        AskUserQuestionItem("multi", "Many?", options=OPTIONS, multi_select=True),
        AskUserQuestionItem("free", "Anything?"),
    ]
)
SKIP_REST = [Item("multi"), Item("free")]


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (
            [Item("single"), *SKIP_REST, Item("ghost")],
            "answers[3].id: no question has id 'ghost'",
        ),
        (
            [Item("single"), Item("single"), *SKIP_REST],
            "answers[1].id: question single is answered more than once",
        ),
        ([Item("single"), Item("multi")], "answers: question free has no answer"),
        (
            [Item("single", ["lint"]), *SKIP_REST],
            "answers[0].selected[0]: question single offers no option 'lint'",
        ),
        (
            [Item("single"), Item("multi", ["docs", "docs"]), Item("free")],
            "answers[1].selected[1]: question multi selects 'docs' more than once",
        ),
        (
            [Item("single", ["tests", "docs"]), *SKIP_REST],
            "answers[0].selected: question single is single-select but 2 labels are selected",
        ),
        (
            [Item("single"), Item("multi"), Item("free", ["tests"])],
            "answers[2].selected[0]: question free offers no options, so none can be selected",
        ),
        (
            [Item("single", ["tests"], "also this"), *SKIP_REST],
            "answers[0].custom: question single is single-select, so a custom answer replaces"
            " the choice and cannot accompany a selected label",
        ),
        (
            [Item("single", custom="  \n"), *SKIP_REST],
            "answers[0].custom: question single has a blank custom answer (leave it out to skip)",
        ),
        (
            [Item("single", ["Tests"]), *SKIP_REST],
            "answers[0].selected[0]: question single offers no option 'Tests'",
        ),
    ],
)
async def test_each_unfit_answer_is_refused_naming_the_question(
    answer: list[AskUserQuestionAnswerItem], message: str
) -> None:
    with (
        provide(ScriptedProvider(lambda _: AskUserQuestionAnswer(answer))),
        pytest.raises(UserInteractionError) as info,
    ):
        await ask(REQUEST)
    assert info.value.code == ErrorCode.BAD_ANSWER
    assert info.value.message == message
    assert info.value.path == message.split(":", 1)[0]


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"answers": []}, "answer: expected an AskUserQuestionAnswer, got dict"),
        (None, "answer: expected an AskUserQuestionAnswer, got None"),
        (AskUserQuestionAnswer(None), "answers: expected a sequence of answer items, got None"),  # type: ignore[arg-type]
        (
            AskUserQuestionAnswer([{"id": "single"}]),  # type: ignore[list-item]
            "answers[0]: expected an AskUserQuestionAnswerItem, got dict",
        ),
        (
            AskUserQuestionAnswer([Item(3)]),  # type: ignore[arg-type]
            "answers[0].id: expected a string, got int",
        ),
        (
            AskUserQuestionAnswer([Item("single", "tests")]),  # a str is a Sequence[str]
            "answers[0].selected: expected a sequence of labels, got str",
        ),
        (
            AskUserQuestionAnswer([Item("single", [1])]),  # type: ignore[list-item]
            "answers[0].selected[0]: expected a string, got int",
        ),
        (
            AskUserQuestionAnswer([Item("single", custom=5)]),  # type: ignore[arg-type]
            "answers[0].custom: expected a string, got int",
        ),
    ],
)
def test_what_is_not_an_answer_is_refused(answer: object, message: str) -> None:
    with pytest.raises(UserInteractionError) as info:
        check_answer(REQUEST, answer)
    assert info.value.code == ErrorCode.BAD_ANSWER
    assert info.value.message == message


async def test_skips_custom_beside_labels_and_any_order_are_accepted_in_question_order() -> None:
    given = AskUserQuestionAnswer(
        [
            Item("free", custom="ship today"),
            Item("multi", ["docs", "tests"], custom="release notes"),
            Item("single"),
        ]
    )
    with provide(ScriptedProvider(lambda _: given)):
        answer = await ask(REQUEST)
    assert answer == AskUserQuestionAnswer(
        [
            Item("single"),
            Item("multi", ["docs", "tests"], custom="release notes"),
            Item("free", custom="ship today"),
        ]
    )


def test_an_answer_already_in_order_is_returned_as_it_is() -> None:
    given = AskUserQuestionAnswer(
        [Item("single", ["docs"]), Item("multi", ["tests"]), Item("free")]
    )
    assert check_answer(REQUEST, given) is given


def test_single_select_custom_alone_replaces_the_choice() -> None:
    given = AskUserQuestionAnswer([Item("single", custom=" my own "), *SKIP_REST])
    assert check_answer(REQUEST, given).answers[0].custom == " my own "  # kept as sent


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (
            "x",
            "request: expected an AskUserQuestionRequest with a tuple of questions, got str",
        ),
        (
            AskUserQuestionRequest(cast("tuple[AskUserQuestionItem, ...]", 7)),
            "request: expected an AskUserQuestionRequest with a tuple of questions,"
            " got AskUserQuestionRequest",
        ),
        (
            AskUserQuestionRequest([cast(AskUserQuestionItem, "pkg")]),
            "questions[0]: expected an AskUserQuestionItem, got str",
        ),
    ],
)
def test_check_answer_names_a_request_that_is_not_well_formed(
    request_: object, message: str
) -> None:
    answer = AskUserQuestionAnswer([AskUserQuestionAnswerItem("pkg", ["npm"])])
    with pytest.raises(UserInteractionError) as caught:
        check_answer(cast(AskUserQuestionRequest, request_), answer)
    assert (caught.value.code, caught.value.message) == (ErrorCode.BAD_REQUEST, message)
    assert caught.value.__context__ is None  # no internal slip chained to it
