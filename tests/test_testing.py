"""interaction.testing: the scripted and blocking providers, and the pytest fixture."""

from __future__ import annotations

import pytest

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    ask,
    current_provider,
    provide,
)
from interaction.testing import ScriptedProvider

from .helpers import pkg_question

BATCH = AskUserQuestionRequest(
    [
        pkg_question(),
        pkg_question(id="many", multi_select=True),
        AskUserQuestionItem("notes", "Anything else?"),
        pkg_question(id="skipped"),
    ]
)


async def test_answers_by_question_id() -> None:
    provider = ScriptedProvider({"pkg": "npm", "many": ["yarn", "npm"], "notes": "ship it"})
    with provide(provider):
        answer = await ask(BATCH)
    assert answer == AskUserQuestionAnswer(
        [
            AskUserQuestionAnswerItem("pkg", ["npm"]),
            AskUserQuestionAnswerItem("many", ["yarn", "npm"]),
            AskUserQuestionAnswerItem("notes", custom="ship it"),
            AskUserQuestionAnswerItem("skipped"),
        ]
    )
    assert provider.requests == [BATCH]


async def test_a_string_that_is_no_label_is_the_custom_answer() -> None:
    with provide(ScriptedProvider({"pkg": "bun"})):
        answer = await ask(AskUserQuestionRequest([pkg_question()]))
    assert answer.answers[0] == AskUserQuestionAnswerItem("pkg", custom="bun")


async def test_an_item_is_returned_as_it_is_so_bad_answers_can_be_tested() -> None:
    provider = ScriptedProvider({"pkg": AskUserQuestionAnswerItem("pkg", ["bun"])})
    with provide(provider), pytest.raises(UserInteractionError) as info:
        await ask(AskUserQuestionRequest([pkg_question()]))
    assert info.value.code == ErrorCode.BAD_ANSWER


async def test_a_callable_sync_or_async_answers() -> None:
    def sync(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return AskUserQuestionAnswer([AskUserQuestionAnswerItem(q.id) for q in request.questions])

    async def async_(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return sync(request)

    for script in (sync, async_):
        with provide(ScriptedProvider(script)):
            answer = await ask(AskUserQuestionRequest([pkg_question()]))
        assert answer.answers == (AskUserQuestionAnswerItem("pkg"),)


async def test_an_error_to_raise() -> None:
    cancelled = UserInteractionError("dismissed", ErrorCode.ASK_CANCELLED)
    with provide(ScriptedProvider(cancelled)), pytest.raises(UserInteractionError) as info:
        await ask(AskUserQuestionRequest([pkg_question()]))
    assert info.value is cancelled


def test_last_request_says_when_never_asked() -> None:
    with pytest.raises(AssertionError, match="the scripted provider was never asked"):
        _ = ScriptedProvider().last_request


async def test_the_fixture_provides_a_scripted_provider(
    interaction_provider: ScriptedProvider,
) -> None:
    assert current_provider() is interaction_provider
    interaction_provider.script = {"pkg": "yarn"}
    answer = await ask(AskUserQuestionRequest([pkg_question()]))
    assert answer.answers[0].selected == ("yarn",)


def test_the_fixture_is_installed_by_entry_point_and_scoped_to_one_test(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        import asyncio
        import interaction
        from interaction import AskUserQuestionItem, AskUserQuestionRequest

        def test_asks(interaction_provider):
            interaction_provider.script = {"q": "hello"}
            request = AskUserQuestionRequest([AskUserQuestionItem("q", "Say?")])
            answer = asyncio.run(interaction.ask(request))
            assert answer.answers[0].custom == "hello"
            assert interaction_provider.requests == [request]

        def test_gone_afterwards():
            assert interaction.current_provider() is None
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:asyncio")
    result.assert_outcomes(passed=2)
