from __future__ import annotations

import sys
import threading

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from interaction import AgentRegistry, ErrorCode, UserInteractionError, provide_agents
from interaction._core import check_caller

from .helpers import FakeAgent


def test_agents_enter_as_roots_or_owned_and_are_found_by_id() -> None:
    registry = AgentRegistry()
    root, child = FakeAgent("root"), FakeAgent("child")
    registry.enter(root)
    registry.enter(child, owner=root)
    assert registry.get("root") is root
    assert registry.get("child") is child
    assert registry.get("nobody") is None
    assert registry.roots() == [root]
    assert registry.owner_of(child) is root
    assert registry.owner_of(root) is None
    assert len(registry) == 2
    assert child in registry
    assert FakeAgent("child") not in registry  # equal, but not the live object


def test_a_second_live_agent_under_a_live_id_is_refused() -> None:
    registry = AgentRegistry()
    first = FakeAgent("a")
    registry.enter(first)
    with pytest.raises(ValueError, match="an agent with id 'a' is already live"):
        registry.enter(FakeAgent("a"))
    assert registry.get("a") is first


def test_an_owner_must_be_the_live_agent() -> None:
    registry = AgentRegistry()
    registry.enter(FakeAgent("root"))
    with pytest.raises(ValueError, match="owner 'root' is not a live agent"):
        registry.enter(FakeAgent("child"), owner=FakeAgent("root"))


def test_an_agent_needs_a_string_id() -> None:
    with pytest.raises(TypeError, match="an agent needs a non-empty string id, got None"):
        AgentRegistry().enter(object())  # type: ignore[arg-type]


def test_an_owner_that_leaves_takes_its_descendants_with_it() -> None:
    registry = AgentRegistry()
    root, child, grandchild, other = (FakeAgent(n) for n in ("r", "c", "g", "o"))
    registry.enter(root)
    registry.enter(child, owner=root)
    registry.enter(grandchild, owner=child)
    registry.enter(other)
    assert registry.leave(root) == [root, child, grandchild]
    assert registry.roots() == [other]
    assert registry.get("g") is None
    assert registry.owner_of(grandchild) is None


def test_a_child_that_leaves_leaves_its_owner_live() -> None:
    registry = AgentRegistry()
    root, child = FakeAgent("r"), FakeAgent("c")
    registry.enter(root)
    registry.enter(child, owner=root)
    assert registry.leave(child) == [child]
    assert registry.roots() == [root]
    again = FakeAgent("c")
    registry.enter(again, owner=root)  # the id is free again
    assert registry.leave(root) == [root, again]


def test_leaving_an_agent_that_is_not_live_removes_nothing() -> None:
    registry = AgentRegistry()
    live = FakeAgent("a")
    registry.enter(live)
    assert registry.leave(FakeAgent("a")) == []
    assert registry.leave(FakeAgent("b")) == []
    assert registry.get("a") is live


def test_no_reader_sees_a_leave_half_done() -> None:
    # A leave removes an owner and its descendants one by one; readers that took no lock
    # saw the owner gone and its children still live. Each round has agents of its own,
    # published only once all are live, so "owner gone, child live" can mean nothing but a
    # leave half done (a reused owner could leave and come back between the two reads).
    registry = AgentRegistry()
    published: list[tuple[FakeAgent, FakeAgent]] = []
    done = threading.Event()
    halves: list[str] = []

    def enter_and_leave() -> None:
        for round_ in range(3000):
            owner = FakeAgent(f"owner-{round_}")
            children = [FakeAgent(f"child-{round_}-{i}") for i in range(50)]
            registry.enter(owner)
            for child in children:
                registry.enter(child, owner=owner)
            published.append((owner, children[-1]))
            registry.leave(owner)
        done.set()

    def look() -> None:
        while not done.is_set():
            if not published:
                continue
            owner, last = published[-1]
            if registry.get(owner.id) is None and registry.get(last.id) is last:
                halves.append("get")
            if owner not in registry and last in registry:
                halves.append("in")

    threads = [threading.Thread(target=enter_and_leave), threading.Thread(target=look)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert halves == []


class RegistryAgainstAModel(RuleBasedStateMachine):
    """Any sequence of entries and leaves: the registry answers as a plain model of it does.

    The model keeps, for each live agent, the owner it entered under; admission (``admit``
    through ``provide_agents``) must refuse exactly the agents the model says are not live
    roots, with the code that says why.
    """

    def __init__(self) -> None:
        super().__init__()
        self.registry = AgentRegistry()
        self.owners: dict[str, str | None] = {}  # live id -> owner id, in entry order
        self.agents: dict[str, FakeAgent] = {}
        self.made = 0

    def _descendants(self, agent_id: str) -> list[str]:
        found = [agent_id]
        for live_id, owner_id in self.owners.items():
            if owner_id in found:
                found.append(live_id)  # owners enter before what they own
        return found

    @rule(owned=st.booleans(), pick=st.integers(min_value=0))
    def enter(self, owned: bool, pick: int) -> None:
        self.made += 1
        agent = FakeAgent(f"a{self.made}")
        owner_id = list(self.owners)[pick % len(self.owners)] if owned and self.owners else None
        owner = self.agents[owner_id] if owner_id is not None else None
        self.registry.enter(agent, owner=owner)
        self.owners[agent.id] = owner_id
        self.agents[agent.id] = agent

    @precondition(lambda self: bool(self.owners))
    @rule(pick=st.integers(min_value=0))
    def leave(self, pick: int) -> None:
        agent_id = list(self.owners)[pick % len(self.owners)]
        gone = self._descendants(agent_id)
        removed = self.registry.leave(self.agents[agent_id])
        assert sorted(agent.id for agent in removed) == sorted(gone)
        assert removed[0] is self.agents[agent_id]
        for live_id in gone:
            del self.owners[live_id]

    @invariant()
    def answers_as_the_model(self) -> None:
        live = [self.agents[agent_id] for agent_id in self.owners]
        assert len(self.registry) == len(live)
        assert self.registry.roots() == [a for a in live if self.owners[a.id] is None]
        for agent in self.agents.values():
            is_live = agent.id in self.owners
            assert (agent in self.registry) is is_live
            assert self.registry.get(agent.id) is (agent if is_live else None)
            owner_id = self.owners.get(agent.id)
            expected_owner = self.agents[owner_id] if owner_id is not None else None
            assert self.registry.owner_of(agent) is expected_owner
            assert self.registry.is_root(agent) is (is_live and owner_id is None)
            with provide_agents(self.registry):
                if not is_live:
                    expected = ErrorCode.CALLER_NOT_LIVE
                elif owner_id is not None:
                    expected = ErrorCode.DELEGATED_CALLER
                else:
                    check_caller(None, agent)
                    continue
                with pytest.raises(UserInteractionError) as refused:
                    check_caller(None, agent)
                assert refused.value.code == expected


TestRegistryAgainstAModel = RegistryAgainstAModel.TestCase
TestRegistryAgainstAModel.settings = settings(max_examples=60, stateful_step_count=25)
