"""The pytest plugin (entry point ``pytest11``): the ``interaction_provider`` fixture."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._core import provide
from .testing import ScriptedProvider


@pytest.fixture
def interaction_provider() -> Iterator[ScriptedProvider]:
    """A :class:`~interaction.testing.ScriptedProvider` active for one test.

    It skips every question until the test gives it a script (``provider.script = {...}``).
    """
    provider = ScriptedProvider()
    with provide(provider):
        yield provider
