from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

from interaction import AskUserQuestionRequest

from .helpers import pkg_question

pytest_plugins = ["pytester"]

# On a loaded 2-core CI machine one example can take far longer than on a quiet one: no
# per-example deadline and no speed health checks, so only a wrong result fails a property.
# Every @settings(...) in the suite inherits this profile.
settings.register_profile(
    "interaction",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("interaction")


@pytest.fixture
def request_one() -> AskUserQuestionRequest:
    return AskUserQuestionRequest([pkg_question()])
