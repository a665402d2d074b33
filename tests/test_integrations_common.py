"""What the framework integrations share, and the relay answering as the web page would.

The other ``test_integrations_*`` modules import :class:`WebPage` from here.
"""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Final

import pytest
from hypothesis import given
from hypothesis import strategies as st

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionAnswerItem,
    AskUserQuestionOption,
    AskUserQuestionRequest,
    ErrorCode,
    Provenance,
    provide,
)
from interaction._core import MAX_PROVENANCE_TEXT, check_provenance
from interaction.integrations._common import (
    ALLOW,
    DENY,
    approval_item,
    ask_approval,
    ask_approvals,
    ask_through,
    asked_by,
    checked_timeout,
    question_ids,
    usable_id,
)
from interaction.relay import PendingQuestion, Relay
from interaction.testing import BlockingProvider, ScriptedProvider
from interaction.wire import decode_answer, encode_request

WAIT: Final = 10.0
"""A generous bound on every wait for an event; nothing here sleeps."""
HOLD: Final = "hold"
"""What an answer function returns to leave a question pending."""


class WebPage:
    """Answers a relay's questions the way the web page does: wire JSON in, wire JSON out.

    ``answer`` gets the question's wire-encoded request (what the page renders) and returns
    the answer JSON text it would post, ``None`` to dismiss the question, or :data:`HOLD`
    to leave it pending.
    """

    def __init__(
        self, relay: Relay, answer: Callable[[dict[str, object]], str | None] | None = None
    ) -> None:
        self.relay = relay
        self.answer = answer if answer is not None else (lambda _: HOLD)
        self.seen: list[PendingQuestion] = []
        self.withdrawn: list[str] = []
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None

    async def wait(self, predicate: Callable[[], bool]) -> None:
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(predicate), WAIT)

    async def _run(self) -> None:
        async for event in self.relay.subscribe():
            if event.kind == "resolved":
                if event.outcome == "aborted":
                    self.withdrawn.append(event.id)
            else:
                assert event.question is not None
                self._settle(event.question)
            async with self._changed:
                self._changed.notify_all()

    def _settle(self, question: PendingQuestion) -> None:
        self.seen.append(question)
        text = self.answer(json.loads(json.dumps(encode_request(question.request))))
        if text is None:
            self.relay.cancel(question.id)
        elif text != HOLD:
            self.relay.answer(question.id, decode_answer(text, question.request))

    async def __aenter__(self) -> WebPage:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)


def select(*labels: str, custom: str | None = None) -> Callable[[dict[str, object]], str]:
    """The page's answer selecting ``labels`` in the first question (and skipping the rest)."""

    def answer(request: dict[str, object]) -> str:
        questions = request["questions"]
        assert isinstance(questions, list)
        items: list[dict[str, object]] = []
        for index, question in enumerate(questions):
            item: dict[str, object] = {"id": question["id"], "selected": []}
            if index == 0:
                item["selected"] = list(labels)
                if custom is not None:
                    item["custom"] = custom
            items.append(item)
        return json.dumps({"answers": items})

    return answer


# ---------------------------------------------------------------------------- _common


def test_an_approval_question_offers_allow_the_extra_options_and_deny() -> None:
    item = approval_item(
        "Bash\x1b[31m",
        {"command": "rm -rf /tmp/x\x07"},
        question="Claude wants to run a command",
        notes=["Runs a shell command", None],
        more=[AskUserQuestionOption("Allow, and always allow Bash")],
    )
    assert item.question == "Claude wants to run a command"
    assert [o.label for o in item.options] == [ALLOW, "Allow, and always allow Bash", DENY]
    assert item.options[0].description == "Run Bash\\x1b[31m this once"
    assert item.detail == (
        'Runs a shell command\n\nInput:\n{\n  "command": "rm -rf /tmp/x\\u0007"\n}'
    )


@pytest.mark.parametrize(
    ("answer", "allowed", "message"),
    [
        (AskUserQuestionAnswerItem("permission", [ALLOW]), True, ""),
        (AskUserQuestionAnswerItem("permission", [DENY]), False, "The user denied Write"),
        (
            AskUserQuestionAnswerItem("permission", custom="use /tmp"),
            False,
            "The user denied Write and said: use /tmp",
        ),
        (
            AskUserQuestionAnswerItem("permission"),
            False,
            "The user skipped the permission question for Write",
        ),
    ],
)
async def test_only_an_allow_option_allows(
    answer: AskUserQuestionAnswerItem, allowed: bool, message: str
) -> None:
    provider = ScriptedProvider({"permission": answer})
    verdict = await ask_approval(approval_item("Write", {}), tool_name="Write", provider=provider)
    assert (verdict.allowed, verdict.message) == (allowed, message)
    assert verdict.choice == (ALLOW if allowed else None)


async def test_an_approval_names_its_tool_as_the_one_asking() -> None:
    provider = ScriptedProvider({"permission": ALLOW, "a": ALLOW, "b": ALLOW})
    await ask_approval(approval_item("Write", {}), tool_name="Write", provider=provider)
    await ask_approval(
        approval_item("Write", {}),
        tool_name="Write",
        provider=provider,
        provenance=Provenance(source="agent-7"),  # a host that knows more says so
    )
    await ask_approvals(
        [(approval_item("Read", {}, id="a"), "Read"), (approval_item("Bash", {}, id="b"), "Bash")],
        provider=provider,
    )
    await ask_approval(approval_item("x", {}), tool_name="a\x1bb", provider=provider)
    assert [request.provenance for request in provider.requests] == [
        Provenance(tool="Write"),
        Provenance(source="agent-7", tool="Write"),  # the host's word, the tool filled in
        None,  # two tools: neither is the one asking
        Provenance(tool="a\\x1bb"),  # escaped, never a refusal
    ]


async def test_a_given_provider_is_asked_even_inside_another_registration() -> None:
    outer, inner = ScriptedProvider(), ScriptedProvider({"permission": ALLOW})
    with provide(outer):
        verdict = await ask_approval(approval_item("Read", {}), tool_name="Read", provider=inner)
    assert verdict.allowed
    assert outer.requests == []
    assert len(inner.requests) == 1


async def test_cancelling_the_caller_withdraws_the_question() -> None:
    blocking = BlockingProvider()
    request = AskUserQuestionRequest([approval_item("Read", {})])
    task = asyncio.create_task(ask_through(request, blocking))
    await asyncio.wait_for(blocking.started.wait(), WAIT)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert blocking.cleaned_up == 1


async def test_a_timeout_denies_with_its_code() -> None:
    from interaction import AbortSignal

    verdict = await ask_approval(
        approval_item("Read", {}),
        tool_name="Read",
        provider=BlockingProvider(),
        signal=AbortSignal.timeout(0.01),
    )
    assert not verdict.allowed
    assert verdict.code == ErrorCode.ASK_TIMEOUT
    assert verdict.message == (
        "Read was not approved: ask_user_question timed out before the user answered"
    )


class AnswersAfterTheTimeout:
    """Allows, but only once the request's timeout has fired, and without yielding to the
    loop meanwhile: ``ask()`` cannot hear of the abort before it has the answer."""

    def __init__(self) -> None:
        self.asked = 0

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        self.asked += 1
        fired = threading.Event()
        assert request.signal is not None
        request.signal.add_listener(lambda reason: fired.set())
        assert fired.wait(WAIT)  # the timer thread sets it; this loop stays blocked
        return AskUserQuestionAnswer(
            [AskUserQuestionAnswerItem(q.id, [ALLOW]) for q in request.questions]
        )


async def test_an_answer_that_comes_after_the_timeout_fired_still_denies() -> None:
    from interaction import AbortSignal

    late = AnswersAfterTheTimeout()
    verdicts = await ask_approvals(
        [(approval_item("Read", {}, id="a"), "Read"), (approval_item("Edit", {}, id="b"), "Edit")],
        provider=late,
        signal=AbortSignal.timeout(0.01),
    )
    assert late.asked == 1
    assert [(v.allowed, v.code, v.message) for v in verdicts] == [
        (
            False,
            ErrorCode.ASK_TIMEOUT,
            f"{name} was not approved: ask_user_question timed out before the user answered",
        )
        for name in ("Read", "Edit")
    ]


@pytest.mark.parametrize(
    ("timeout", "shown"),
    [
        (-1, "-1"),
        (0, "0"),
        (0.0, "0.0"),
        (math.nan, "nan"),
        (math.inf, "inf"),
        (1e300, "1e+300"),
        (True, "True"),
        ("5", "'5'"),
        (10**5000, "a huge int"),
        ("9" * 100, "'" + "9" * 39 + "..."),
    ],
    ids=lambda value: f"{type(value).__name__}",
)
def test_a_timeout_that_is_not_positive_and_finite_is_refused_when_built(
    timeout: object, shown: str
) -> None:
    with pytest.raises(ValueError, match=r"^deny_after must be") as refused:
        checked_timeout(timeout, name="deny_after")  # type: ignore[arg-type]
    assert str(refused.value) == (
        "deny_after must be a positive, finite number of seconds (at most"
        f" {threading.TIMEOUT_MAX:.0f}), got {shown}"
    )


def test_a_good_timeout_is_kept_as_seconds() -> None:
    assert checked_timeout(None) is None
    assert checked_timeout(300) == 300.0
    assert checked_timeout(0.05) == 0.05


def test_question_ids_keep_usable_call_ids_and_derive_the_rest() -> None:
    call_ids = ["call-2", " ", "a", "a", None, "c\x1b", "", "\u202eb", 7, "call-4"]
    assert question_ids(call_ids) == [
        "call-2",
        "call-2-2",  # call-2 is a usable id of another call: it keeps it
        "a",
        "call-4-2",  # a repeat; call-4 is also taken
        "call-5",
        "call-6",
        "call-7",
        "call-8",
        "call-9",
        "call-4",
    ]
    assert [usable_id(v) for v in ("ok", " ", "", "a\nb", "\u200b", 5, None)] == [
        True,
        False,
        False,
        False,
        False,
        False,
        False,
    ]


# ---------------------------------------------------------------------------- imports

MODULES: Final = {
    "claude_agent_sdk": ("claude_agent_sdk", "claude"),
    "pydantic_ai": ("pydantic_ai", "pydantic-ai"),
    "openai_agents": ("agents", "openai-agents"),
    "langgraph": ("langgraph", "langgraph"),
}


def test_the_ask_user_answerer_names_the_harness_extra() -> None:
    code = (
        "import sys; sys.modules['pydantic_ai_harness'] = None\n"
        "from interaction.integrations.pydantic_ai import answerer\n"
        "try:\n"
        "    answerer()\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == (
        "interaction.integrations.pydantic_ai.answerer needs pydantic-ai-harness:"
        ' pip install "interaction-seam[pydantic-ai-harness]"'
    )


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_missing_framework_names_its_extra(module: str) -> None:
    framework, extra = MODULES[module]
    code = (
        f"import sys; sys.modules[{framework!r}] = None\n"
        "try:\n"
        f"    import interaction.integrations.{module}\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert f'pip install "interaction-seam[{extra}]"' in out.stdout
    assert f"interaction.integrations.{module} needs" in out.stdout


def test_the_package_imports_no_framework() -> None:
    code = (
        "import sys, interaction.integrations;"
        "print([m for m in ('claude_agent_sdk', 'pydantic_ai', 'agents', 'langgraph', 'mcp')"
        " if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


async def test_a_suspension_is_for_the_host_never_a_denial() -> None:
    from interaction import AskSuspended

    class Suspends:
        async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
            raise AskSuspended(request)

    with pytest.raises(AskSuspended):
        await ask_approval(approval_item("Read", {}), tool_name="Read", provider=Suspends())


def test_the_langgraph_resume_value_schema_takes_an_answer_or_an_error() -> None:
    import jsonschema

    from interaction.integrations.langgraph import _resume_schema

    validator = jsonschema.Draft202012Validator(_resume_schema())
    digest = "0" * 64
    assert validator.is_valid({"digest": digest, "answers": [{"id": "a", "selected": []}]})
    assert validator.is_valid(
        {"digest": digest, "error": {"code": "ASK_CANCELLED", "message": "m"}}
    )
    assert not validator.is_valid({"answers": []})
    assert not validator.is_valid({"digest": "x", "answers": []})


# ---------------------------------------------------------------------------- provenance

_NAMES = st.one_of(st.none(), st.text(max_size=300), st.integers(), st.uuids(), st.booleans())


@given(agent=_NAMES, session=_NAMES, tool=_NAMES)
def test_what_a_framework_says_of_the_asker_never_makes_a_refused_question(
    agent: object, session: object, tool: object
) -> None:
    asker = asked_by("Framework", agent=agent, session=session, tool=tool)
    check_provenance(asker)  # ask() accepts it, whatever the framework's names hold
    assert asker.source is not None
    if not isinstance(agent, str) or not agent.strip():
        assert asker.source == "Framework"
    for text in (asker.source, asker.session, asker.tool):
        assert text is None or (0 < len(text) <= MAX_PROVENANCE_TEXT and "\n" not in text)
    assert asker.host is None
    assert asker.asked_at is None


def test_an_asker_keeps_plain_names_and_takes_numbers_and_uuids_as_text() -> None:
    assert asked_by("LangGraph", agent="planner", session=42, tool="ask_user_question") == (
        Provenance(source="planner", session="42", tool="ask_user_question")
    )
    assert asked_by("CrewAI", session=True).session is None  # a flag is no id
    assert asked_by("CrewAI", agent="  ", tool="a\x1b[31mb").tool == "a\\x1b[31mb"
