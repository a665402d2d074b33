"""Suspended and resumed asks: AskSuspended passes through, resume() replays in order."""

from __future__ import annotations

import asyncio
import copy
import pickle
import subprocess
import sys

import pytest

import interaction
from interaction import (
    AbortController,
    AskSuspended,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionIntent,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    PlanReviewIntent,
    ResumedAnswer,
    UnknownIntent,
    UserInteractionError,
    request_digest,
)
from interaction.testing import ScriptedProvider
from interaction.tool import run_tool

from .helpers import CHECKS, FakeAgent, pkg_question

PKG = AskUserQuestionRequest([pkg_question()])
PKG_OPTIONS = pkg_question().options
NPM = AskUserQuestionAnswer([AskUserQuestionAnswerItem("pkg", selected=["npm"])])


class Suspending:
    """Suspends every ask and records what it saw."""

    def __init__(self, control: BaseException | None = None) -> None:
        self.seen: list[AskUserQuestionRequest] = []
        self.control = control

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        self.seen.append(request)
        raise AskSuspended(request, control=self.control)


class HostInterrupt(Exception):
    """Stands for a host's own control-flow exception, such as LangGraph's GraphInterrupt."""


# ------------------------------------------------------------------------------ digest


def test_the_digest_is_stable_across_processes() -> None:
    code = (
        "from interaction import *;"
        "from tests.helpers import pkg_question;"
        "print(request_digest(AskUserQuestionRequest([pkg_question()])))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="."
    )
    assert out.stdout.strip() == request_digest(PKG)
    assert len(request_digest(PKG)) == 64


def test_the_digest_ignores_agent_signal_and_key_but_not_any_question_field() -> None:
    base = request_digest(PKG)
    same = AskUserQuestionRequest([pkg_question()], signal=AbortController().signal, key="k")
    assert request_digest(same) == base
    intents: list[AskUserQuestionIntent] = [
        PlanReviewIntent("npm"),
        UnknownIntent("x-new", {"a": [1, 2]}),
    ]
    changes: list[dict[str, object]] = [
        {"id": "pkg2"},
        {"question": "Which one?"},
        {"detail": "d"},
        {"header": "h"},
        {"options": [AskUserQuestionOption("npm"), AskUserQuestionOption("yarn")]},
        {
            "options": [
                AskUserQuestionOption("pnpm (Recommended)", "fast"),
                *pkg_question().options[1:],
            ]
        },
        {"multi_select": True},
        {"intent": intents[0], "detail": "plan"},
        {"intent": intents[1], "detail": "plan"},
    ]
    digests = {request_digest(AskUserQuestionRequest([pkg_question(**c)])) for c in changes}
    assert base not in digests
    assert len(digests) == len(changes)
    assert request_digest(AskUserQuestionRequest([CHECKS, pkg_question()])) != request_digest(
        AskUserQuestionRequest([pkg_question(), CHECKS])
    )


def test_the_digest_of_a_malformed_request_is_bad_request() -> None:
    with pytest.raises(UserInteractionError) as caught:
        request_digest(AskUserQuestionRequest([AskUserQuestionItem("", "q")]))
    assert caught.value.code == ErrorCode.BAD_REQUEST
    assert caught.value.message == "questions[0].id: must not be empty"
    with pytest.raises(UserInteractionError) as caught:
        request_digest("not a request")  # type: ignore[arg-type]
    assert caught.value.code == ErrorCode.BAD_REQUEST


# ---------------------------------------------------------------------------- suspend


async def test_a_suspension_passes_through_ask_unchanged() -> None:
    provider = Suspending()
    with interaction.provide(provider), pytest.raises(AskSuspended) as caught:
        await interaction.ask(PKG)
    error = caught.value
    assert (error.code, error.message) == (
        ErrorCode.ASK_SUSPENDED,
        "the question was suspended until the host resumes it",
    )
    assert error.request is PKG
    assert error.digest == request_digest(PKG)
    assert provider.seen == [PKG]


async def test_a_control_exception_is_raised_in_place_of_the_suspension() -> None:
    control = HostInterrupt("interrupt")
    with interaction.provide(Suspending(control)), pytest.raises(HostInterrupt) as caught:
        await interaction.ask(PKG)
    assert caught.value is control


async def test_run_tool_and_the_helpers_do_not_render_a_suspension() -> None:
    with interaction.provide(Suspending()):
        with pytest.raises(AskSuspended):
            await run_tool({"questions": [{"id": "q", "question": "Why?"}]})
        with pytest.raises(AskSuspended):
            await interaction.confirm("Go?")
        with pytest.raises(AskSuspended):
            await interaction.choose("Which?", ["a", "b"])


def test_a_suspension_pickles_without_its_control() -> None:
    error = AskSuspended(PKG, control=HostInterrupt("x"))
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.code, copy.digest, copy.request, copy.control) == (
        ErrorCode.ASK_SUSPENDED,
        error.digest,
        PKG,
        None,
    )


def test_a_suspension_pickles_and_copies_without_its_requests_process_local_parts() -> None:
    # run_tool(..., signal=...) puts a signal (which holds a lock) on every request it makes.
    agent = FakeAgent("lead")
    request = AskUserQuestionRequest(PKG.questions, agent, AbortController().signal, "step-1")
    error = AskSuspended(request)
    for copied in (pickle.loads(pickle.dumps(error)), copy.deepcopy(error)):
        assert (copied.digest, copied.request, copied.request.key) == (error.digest, PKG, "step-1")
        assert (copied.request.agent, copied.request.signal) == (None, None)


# ----------------------------------------------------------------------------- resume


async def test_resume_replays_answers_in_order_without_the_provider() -> None:
    provider = ScriptedProvider({})
    second = AskUserQuestionRequest([CHECKS])
    tests = AskUserQuestionAnswer([AskUserQuestionAnswerItem("checks", selected=["tests"])])
    stored = [ResumedAnswer(request_digest(PKG), NPM), ResumedAnswer(request_digest(second), tests)]
    with interaction.provide(provider), interaction.resume(stored) as resumption:
        assert (resumption.consumed, resumption.remaining) == (0, 2)
        assert await interaction.ask(PKG) == NPM
        assert await interaction.ask(second) == tests
        assert (resumption.consumed, resumption.remaining) == (2, 0)
        skipped = await interaction.ask(PKG)  # past the stored answers: the provider
    assert skipped.answers == (AskUserQuestionAnswerItem("pkg"),)
    assert provider.requests == [PKG]


async def test_resume_needs_no_provider_for_stored_answers() -> None:
    with interaction.resume([ResumedAnswer(request_digest(PKG), NPM)]):
        assert await interaction.ask(PKG) == NPM
        with pytest.raises(UserInteractionError) as caught:
            await interaction.ask(PKG)
    assert caught.value.code == ErrorCode.NO_PROVIDER


async def test_a_changed_question_never_reuses_the_stored_answer() -> None:
    provider = ScriptedProvider({"pkg": "npm"})
    changed = AskUserQuestionRequest([pkg_question(question="Which runtime?")])
    with (
        interaction.provide(provider),
        interaction.resume([ResumedAnswer(request_digest(PKG), NPM)]),
        pytest.raises(UserInteractionError) as caught,
    ):
        await interaction.ask(changed)
    assert (caught.value.code, caught.value.message) == (
        ErrorCode.BAD_ANSWER,
        "the resumed question is not the one that was asked",
    )
    assert provider.requests == []


async def test_a_stored_answer_that_does_not_fit_is_bad_answer() -> None:
    wrong = AskUserQuestionAnswer([AskUserQuestionAnswerItem("pkg", selected=["bun"])])
    with (
        interaction.resume([ResumedAnswer(request_digest(PKG), wrong)]),
        pytest.raises(UserInteractionError) as caught,
    ):
        await interaction.ask(PKG)
    assert caught.value.code == ErrorCode.BAD_ANSWER
    assert caught.value.message == "answers[0].selected[0]: question pkg offers no option 'bun'"


async def test_a_resumed_request_is_still_checked_first() -> None:
    controller = AbortController()
    controller.abort()
    aborted = AskUserQuestionRequest([pkg_question()], signal=controller.signal)
    with interaction.resume([ResumedAnswer(request_digest(PKG), NPM)]) as resumption:
        with pytest.raises(UserInteractionError) as caught:
            await interaction.ask(aborted)
        assert caught.value.code == ErrorCode.ASK_ABORTED
        assert resumption.consumed == 0  # a refused ask takes no stored answer


async def test_tasks_started_inside_resume_share_its_order() -> None:
    stored = [ResumedAnswer(request_digest(PKG), NPM)]
    with interaction.resume(stored) as resumption:
        answer = await asyncio.create_task(interaction.ask(PKG))
    assert answer == NPM
    assert resumption.consumed == 1


async def test_the_resumption_ends_with_its_block() -> None:
    with interaction.resume([ResumedAnswer(request_digest(PKG), NPM)]):
        pass
    with pytest.raises(UserInteractionError) as caught:
        await interaction.ask(PKG)
    assert caught.value.code == ErrorCode.NO_PROVIDER


def test_nested_resume_and_wrong_items_are_refused() -> None:
    with (
        interaction.resume([]),
        pytest.raises(ValueError, match="already active"),
        interaction.resume([]),
    ):
        pass
    with (
        pytest.raises(TypeError, match="takes ResumedAnswer items, got tuple"),
        interaction.resume([("digest", NPM)]),  # type: ignore[list-item]
    ):
        pass


def test_a_round_trip_of_suspensions_through_the_docs_host() -> None:
    # Several asks in one tool and several rounds: each round adds one stored answer.
    async def tool() -> tuple[str | None, str | None]:
        first = await interaction.ask_text("First?", id="first")
        second = await interaction.ask_text("Second?", id="second")
        return first, second

    async def host() -> tuple[tuple[str | None, str | None], int]:
        answers: list[ResumedAnswer] = []
        rounds = 0
        with interaction.provide(Suspending()):
            while True:
                rounds += 1
                try:
                    with interaction.resume(answers):
                        return await tool(), rounds
                except AskSuspended as suspended:
                    qid = suspended.request.questions[0].id
                    item = AskUserQuestionAnswerItem(qid, custom=qid.upper())
                    answers.append(ResumedAnswer(suspended.digest, AskUserQuestionAnswer([item])))

    assert asyncio.run(host()) == (("FIRST", "SECOND"), 3)


# -------------------------------------------------------------------------------- key


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (1, "key: expected a string, got int"),
        ("", "key: must not be empty"),
        ("\u200b", "key: must not be empty: it has only invisible characters"),
        ("a\x1bb", "key: contains control character U+001B"),
    ],
)
async def test_a_bad_key_is_bad_request(key: object, message: str) -> None:
    request = AskUserQuestionRequest([pkg_question()], key=key)  # type: ignore[arg-type]
    with interaction.provide(ScriptedProvider({})), pytest.raises(UserInteractionError) as caught:
        await interaction.ask(request)
    assert (caught.value.code, caught.value.message) == (ErrorCode.BAD_REQUEST, message)


def test_the_key_is_left_out_of_equality() -> None:
    assert AskUserQuestionRequest([pkg_question()], key="a") == PKG


def test_a_suspensions_control_must_be_an_exception() -> None:
    with pytest.raises(TypeError, match="control must be an exception, got str"):
        AskSuspended(PKG, control="interrupt")  # type: ignore[arg-type]
