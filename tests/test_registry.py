from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from interaction import (
    AgentRegistry,
    AskUserQuestionAnswer,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    ErrorCode,
    UserInteractionError,
    ask,
    current_agents,
    current_provider,
    provide,
    provide_agents,
    register_provider,
)
from interaction.testing import ScriptedProvider


def test_nothing_is_registered_by_default() -> None:
    assert current_provider() is None
    assert current_agents() is None


def test_provide_registers_for_the_body_only() -> None:
    provider = ScriptedProvider()
    with provide(provider) as given:
        assert given is provider
        assert current_provider() is provider
    assert current_provider() is None


def test_provide_disposes_on_an_exception() -> None:
    provider = ScriptedProvider()
    with pytest.raises(KeyError), provide(provider):
        raise KeyError("boom")
    assert current_provider() is None


async def test_disposing_twice_is_harmless_and_leaves_no_provider(
    request_one: AskUserQuestionRequest,
) -> None:
    dispose = register_provider(ScriptedProvider())
    dispose()
    dispose()
    assert current_provider() is None
    with pytest.raises(UserInteractionError) as info:
        await ask(request_one)
    assert info.value.code == ErrorCode.NO_PROVIDER
    assert info.value.message == "no user-interaction provider is registered"


def test_a_second_registration_is_refused_and_the_first_stays() -> None:
    first, second = ScriptedProvider(), ScriptedProvider()
    with provide(first):
        with pytest.raises(UserInteractionError) as info:
            register_provider(second)
        assert info.value.code == ErrorCode.DUPLICATE_PROVIDER
        assert info.value.message == "a user-interaction provider is already registered"
        with pytest.raises(UserInteractionError), provide(second):
            pass  # pragma: no cover - refused before the body
        assert current_provider() is first
    assert current_provider() is None


def test_a_new_registration_is_allowed_after_disposal() -> None:
    dispose = register_provider(ScriptedProvider())
    dispose()
    second = ScriptedProvider()
    dispose_second = register_provider(second)
    assert current_provider() is second
    dispose_second()


async def test_two_tasks_with_different_providers_never_see_each_other() -> None:
    both_registered = asyncio.Barrier(2)
    seen: dict[str, object] = {}

    async def run(name: str) -> None:
        provider = ScriptedProvider()
        with provide(provider):
            await both_registered.wait()
            await asyncio.sleep(0)  # interleave the two tasks
            seen[name] = current_provider() is provider
        seen[name + "-after"] = current_provider()

    await asyncio.gather(run("a"), run("b"))
    assert seen == {"a": True, "b": True, "a-after": None, "b-after": None}
    assert current_provider() is None


async def test_tasks_and_threads_started_inside_see_it_and_the_outside_does_not() -> None:
    provider = ScriptedProvider()
    outside = contextvars.copy_context()
    with provide(provider):
        in_task = await asyncio.create_task(_current())
        in_thread = await asyncio.to_thread(current_provider)
        in_copy = contextvars.copy_context().run(current_provider)
    assert in_task is provider
    assert in_thread is provider
    assert in_copy is provider
    assert outside.run(current_provider) is None
    assert current_provider() is None


async def _current() -> object:
    return current_provider()


def test_a_registration_made_in_a_child_context_is_not_seen_by_the_parent() -> None:
    provider = ScriptedProvider()
    dispose = contextvars.copy_context().run(register_provider, provider)
    assert current_provider() is None
    dispose()


async def test_a_copied_context_stops_seeing_a_disposed_registration() -> None:
    provider = ScriptedProvider()
    dispose = register_provider(provider)
    child = contextvars.copy_context()
    assert child.run(current_provider) is provider
    dispose()
    assert child.run(current_provider) is None


def test_a_disposer_called_from_another_thread_works() -> None:
    provider = ScriptedProvider()
    dispose = register_provider(provider)
    thread = threading.Thread(target=dispose)
    thread.start()
    thread.join()
    assert current_provider() is None


async def test_disposal_aborts_asks_pending_on_that_provider(
    request_one: AskUserQuestionRequest,
) -> None:
    from interaction.testing import BlockingProvider

    provider = BlockingProvider()
    dispose = register_provider(provider)
    pending = asyncio.create_task(ask(request_one))
    await provider.started.wait()
    await asyncio.to_thread(dispose)
    with pytest.raises(UserInteractionError) as info:
        await pending
    assert info.value.code == ErrorCode.ASK_ABORTED
    assert info.value.message == (
        "ask_user_question was aborted: the user-interaction provider was disposed"
        " while the question was pending"
    )
    assert provider.cleaned_up == 1
    assert provider.pending == 0


def test_provide_agents_scopes_and_nests() -> None:
    outer, inner = AgentRegistry(), AgentRegistry()
    with provide_agents(outer):
        assert current_agents() is outer
        with provide_agents(inner):
            assert current_agents() is inner
        assert current_agents() is outer
    assert current_agents() is None


async def test_the_answer_comes_from_the_provider_of_the_callers_context(
    request_one: AskUserQuestionRequest,
) -> None:
    async def answer_with(label: str) -> AskUserQuestionAnswer:
        with provide(ScriptedProvider({"pkg": label})):
            return await ask(request_one)

    npm, yarn = await asyncio.gather(answer_with("npm"), answer_with("yarn"))
    assert npm.answers[0].selected == ("npm",)
    assert yarn.answers[0].selected == ("yarn",)


async def test_disposal_aborts_the_pending_asks_in_the_order_they_came() -> None:
    started: list[str] = []
    cancelled: list[str] = []
    everyone_waits = asyncio.Event()

    class Recording:
        async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
            qid = request.questions[0].id
            started.append(qid)
            if len(started) == 5:
                everyone_waits.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(qid)
                raise
            raise AssertionError("unreachable")

    order = ["e", "b", "d", "a", "c"]
    dispose = register_provider(Recording())
    tasks = [
        asyncio.create_task(ask(AskUserQuestionRequest([AskUserQuestionItem(qid, "Which?")])))
        for qid in order
    ]
    await everyone_waits.wait()
    dispose()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert [getattr(r, "code", r) for r in results] == [ErrorCode.ASK_ABORTED] * 5
    assert started == order
    assert cancelled == order
