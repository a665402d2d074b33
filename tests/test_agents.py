from __future__ import annotations

import pytest

from interaction import AgentRegistry

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
