"""The relay: the reference harness's web-relay cases, without a transport."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest

from interaction import (
    AbortController,
    AbortSignal,
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    ask,
    provide,
)
from interaction.relay import (
    NOT_PENDING,
    RELAY_FULL,
    STALE_POSITION,
    WITHDRAWN_KEPT,
    Relay,
    RelayEvent,
    Subscription,
)

from .relay_helpers import begin, first_event, take

Item = AskUserQuestionAnswerItem
Answer = AskUserQuestionAnswer
SINGLE = AskUserQuestionItem(
    "pkg", "Which?", options=[AskUserQuestionOption("pnpm"), AskUserQuestionOption("npm")]
)
MULTI = AskUserQuestionItem(
    "checks", "Which checks?", multi_select=True, options=[AskUserQuestionOption("tests")]
)
FREE = AskUserQuestionItem("notes", "Anything else?")


@pytest.fixture
def relay() -> Iterator[Relay]:
    relay = Relay()
    with provide(relay):
        yield relay
    relay.close()


async def next_event(subscription: Subscription) -> RelayEvent:
    iterator: AsyncIterator[RelayEvent] = aiter(subscription)
    return await anext(iterator)


async def start(
    relay: Relay, *questions: AskUserQuestionItem, signal: AbortSignal | None = None
) -> tuple[asyncio.Task[Answer], str]:
    subscription = relay.subscribe()
    task = asyncio.create_task(ask(AskUserQuestionRequest(questions or [SINGLE], signal=signal)))
    event = await next_event(subscription)
    subscription.close()
    assert event.kind == "requested"
    return task, event.id


@pytest.mark.parametrize(
    ("forged", "code"),
    [
        (Answer([Item("ghost")]), ErrorCode.BAD_ANSWER),
        (Answer([Item("pkg", ["yarn"])]), ErrorCode.BAD_ANSWER),
        (None, ErrorCode.BAD_ANSWER),
        (Answer([]), ErrorCode.BAD_ANSWER),
        (Answer([Item("pkg", ["npm", "npm"])]), ErrorCode.BAD_ANSWER),
        (Answer([Item("pkg", ["npm", "pnpm"])]), ErrorCode.BAD_ANSWER),
        (Answer([Item("pkg", custom=" ")]), ErrorCode.BAD_ANSWER),
        (Answer([Item("pkg", ["npm"], "also")]), ErrorCode.BAD_ANSWER),
    ],
)
async def test_each_forged_answer_is_refused_and_the_question_stays_pending(
    relay: Relay, forged: object, code: str
) -> None:
    task, qid = await start(relay)
    with pytest.raises(UserInteractionError) as info:
        relay.answer(qid, forged)
    assert info.value.code == code
    assert [q.id for q in relay.pending()] == [qid]
    relay.answer(qid, Answer([Item("pkg", ["npm"])]))  # the legitimate one stands
    assert (await task).answers == (Item("pkg", ["npm"]),)


async def test_an_unknown_id_is_not_pending(relay: Relay) -> None:
    with pytest.raises(UserInteractionError) as info:
        relay.answer("nope", Answer([Item("pkg")]))
    assert info.value.code == NOT_PENDING
    assert info.value.message == "question 'nope' is not pending (unknown, or already settled)"


async def test_two_identical_valid_answers_at_once_one_wins(relay: Relay) -> None:
    task, qid = await start(relay)
    answer = Answer([Item("pkg", ["pnpm"])])

    async def claim() -> str:
        try:
            relay.answer(qid, answer)
        except UserInteractionError as error:
            return error.code
        return "accepted"

    results = await asyncio.gather(claim(), claim())
    assert sorted(results) == [NOT_PENDING, "accepted"]
    assert await task == answer


async def test_an_optionless_question_answered_with_custom_text_and_a_blank_skip(
    relay: Relay,
) -> None:
    task, qid = await start(relay, FREE, MULTI)
    relay.answer(qid, Answer([Item("notes", custom="ship it"), Item("checks")]))
    assert (await task).answers == (Item("notes", custom="ship it"), Item("checks"))


async def test_a_subscriber_that_connects_later_gets_the_pending_question_with_its_id(
    relay: Relay,
) -> None:
    task, qid = await start(relay)
    first = relay.subscribe()
    replayed = await next_event(first)
    first.close()
    again = await next_event(relay.subscribe())  # a reconnect replays the same
    assert replayed.id == again.id == qid
    assert replayed.question is not None
    assert again.question is not None
    assert replayed.question.request is again.question.request
    relay.cancel(qid)
    with pytest.raises(UserInteractionError):
        await task


async def test_cancel_settles_with_ask_cancelled_and_an_event(relay: Relay) -> None:
    watcher = relay.subscribe()
    task, qid = await start(relay)
    assert (await next_event(watcher)).kind == "requested"
    relay.cancel(qid)
    assert await next_event(watcher) == RelayEvent("resolved", qid, outcome="cancelled")
    with pytest.raises(UserInteractionError) as info:
        await task
    assert info.value.code == ErrorCode.ASK_CANCELLED
    with pytest.raises(UserInteractionError) as late:
        relay.answer(qid, Answer([Item("pkg")]))
    assert late.value.code == NOT_PENDING


@pytest.mark.parametrize("by_timeout", [False, True])
async def test_the_askers_abort_or_timeout_withdraws_the_question(
    relay: Relay, by_timeout: bool
) -> None:
    controller = AbortController()
    signal = AbortSignal.timeout(0.05) if by_timeout else controller.signal
    watcher = relay.subscribe()
    task, qid = await start(relay, signal=signal)
    assert (await next_event(watcher)).kind == "requested"
    controller.abort()
    with pytest.raises(UserInteractionError) as info:
        await task
    assert info.value.code == (ErrorCode.ASK_TIMEOUT if by_timeout else ErrorCode.ASK_ABORTED)
    assert await next_event(watcher) == RelayEvent("resolved", qid, outcome="aborted")
    assert relay.pending() == []
    with pytest.raises(UserInteractionError) as late:
        relay.answer(qid, Answer([Item("pkg")]))
    assert late.value.code == NOT_PENDING


async def test_close_settles_everything_and_ends_every_subscription() -> None:
    relay = Relay()
    with provide(relay):
        watcher = relay.subscribe()
        task, qid = await start(relay)
        relay.close()
        with pytest.raises(UserInteractionError) as info:
            await task
    assert info.value.code == ErrorCode.ASK_ABORTED
    assert "provider was disposed" in info.value.message
    events = [event async for event in watcher]
    assert [e.kind for e in events] == ["requested", "resolved"]
    assert events[1].outcome == "aborted"
    with pytest.raises(UserInteractionError) as late:
        relay.answer(qid, Answer([Item("pkg")]))
    assert late.value.code == NOT_PENDING
    assert [e async for e in relay.subscribe()] == []
    with pytest.raises(UserInteractionError) as closed:
        await relay.ask(AskUserQuestionRequest([SINGLE]))
    assert closed.value.code == ErrorCode.ASK_ABORTED


async def test_over_the_limit_an_ask_is_refused_and_nothing_is_registered() -> None:
    relay = Relay(max_pending=2)
    with provide(relay):
        tasks = [asyncio.create_task(ask(AskUserQuestionRequest([SINGLE]))) for _ in range(2)]
        watcher = relay.subscribe()
        while len(relay.pending()) < 2:
            await next_event(watcher)
        with pytest.raises(UserInteractionError) as info:
            await ask(AskUserQuestionRequest([SINGLE]))
        assert info.value.code == RELAY_FULL
        assert info.value.message == "the relay already holds 2 pending questions"
        assert len(relay.pending()) == 2
        relay.close()
    await asyncio.gather(*tasks, return_exceptions=True)


async def test_a_slow_subscriber_is_dropped_as_lagged_and_blocks_nobody() -> None:
    relay = Relay(queue_size=3)
    with provide(relay):
        slow = relay.subscribe()
        fast = relay.subscribe()
        tasks, seen = [], []
        for _ in range(5):  # the fast subscriber keeps up; the slow one reads nothing
            tasks.append(asyncio.create_task(ask(AskUserQuestionRequest([SINGLE]))))
            seen.append(await next_event(fast))
        assert len({e.id for e in seen}) == 5
        assert slow.lagged
        assert slow.closed
        assert not fast.lagged
        for question in relay.pending():
            relay.answer(question.id, Answer([Item("pkg", ["npm"])]))
        results = await asyncio.gather(*tasks)
    assert all(r.answers == (Item("pkg", ["npm"]),) for r in results)
    relay.close()


async def test_answer_racing_the_askers_cancel_is_not_pending_and_resolved_once() -> None:
    relay = Relay()
    subscription = relay.subscribe()
    request = AskUserQuestionRequest([AskUserQuestionItem(id="q", header="H", question="Q?")])
    task = asyncio.ensure_future(relay.ask(request))
    await asyncio.sleep(0)
    (question,) = relay.pending()
    task.cancel()  # the asker's future is cancelled; its finally has not run yet
    with pytest.raises(UserInteractionError) as raised:
        relay.answer(question.id, {"answers": []})
    assert raised.value.code == NOT_PENDING
    with pytest.raises(UserInteractionError):
        relay.cancel(question.id)
    with pytest.raises(asyncio.CancelledError):
        await task
    relay.close()
    kinds = [event.kind async for event in subscription]
    assert kinds == ["requested", "resolved"]


async def test_a_closed_relays_questions_read_as_withdrawn_and_only_the_recent_ones() -> None:
    """The in-memory relay remembers withdrawn ids boundedly (a shared one keeps the state)."""
    relay = Relay()
    with provide(relay):
        task, requested = await begin(relay)
        relay.close()
        with pytest.raises(UserInteractionError):
            await task
    with pytest.raises(UserInteractionError) as late:
        relay.answer(requested.id, Answer([Item("pkg", ["npm"])]))
    assert late.value.message.endswith("(withdrawn by the asker)")
    relay._withdrawn.update(dict.fromkeys(f"x{n}" for n in range(WITHDRAWN_KEPT)))
    relay._withdraw("newest")  # one more than it keeps: the oldest is forgotten
    assert len(relay._withdrawn) == WITHDRAWN_KEPT
    with pytest.raises(UserInteractionError) as forgotten:
        relay.cancel(requested.id)
    assert forgotten.value.message.endswith("(unknown, or already settled)")


async def test_a_reader_that_falls_behind_the_history_is_told_its_position_is_stale() -> None:
    relay = Relay(history=3)
    with provide(relay):
        start_at = (await relay.snapshot()).position
        slow = relay.events(start_at)
        tasks = [(await begin(relay))[0] for _ in range(2)]  # two events: still replayable
        assert [e.kind for e in await take(slow, 1)] == ["requested"]
        for _ in range(3):
            tasks.append((await begin(relay))[0])  # now the slow reader is 4 behind
        with pytest.raises(UserInteractionError) as info:
            await anext(slow)
        assert info.value.code == STALE_POSITION
        with pytest.raises(UserInteractionError):
            await first_event(relay, start_at)
        fresh = await relay.snapshot()
        assert len(fresh.questions) == 5
        relay.close()
    await asyncio.gather(*tasks, return_exceptions=True)
