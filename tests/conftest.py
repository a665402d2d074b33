from __future__ import annotations

import pytest

from interaction import AskUserQuestionRequest

from .helpers import pkg_question

pytest_plugins = ["pytester"]


@pytest.fixture
def request_one() -> AskUserQuestionRequest:
    return AskUserQuestionRequest([pkg_question()])
