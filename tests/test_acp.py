"""The ACP bridge across two processes: our agent (tests/fixtures/acp/agent.py) run by the
SDK's ``run_agent`` over stdio, and our client in this process on the SDK's
``ClientSideConnection`` (through ``spawn_agent_process``)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeclineElicitationResponse,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    ElicitationMode,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    PermissionIntent,
    Provenance,
    UserInteractionError,
    answer_item,
)
from interaction.acp import (
    MAX_FIELDS,
    MAX_OPTIONS,
    MAX_TEXT,
    MAX_TRIES,
    PERMISSION_LABELS,
    InteractionClient,
    permission_kind,
)
from interaction.testing import ScriptedProvider

from .helpers import import_error_without

AGENT = str(Path(__file__).parent / "fixtures" / "acp" / "agent.py")
FORMS = ClientCapabilities(elicitation=ElicitationCapabilities(form=ElicitationFormCapabilities()))
CANCELLED = {
    "code": "ASK_CANCELLED",
    "message": "the user dismissed ask_user_question without answering",
}


class Recording(InteractionClient):
    """Our client, keeping the agent's messages (each scenario's outcome)."""

    def __init__(self, provider: ScriptedProvider) -> None:
        super().__init__(provider)
        self.messages: list[Any] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.messages.append(json.loads(update.content.text))


class Session:
    def __init__(self, client: Recording, conn: ClientSideConnection, session_id: str) -> None:
        self.client = client
        self.conn = conn
        self.session_id = session_id

    async def run(self, scenario: str) -> Any:
        await self.conn.prompt(session_id=self.session_id, prompt=[text_block(scenario)])
        return self.client.messages.pop()

    async def raw(self, options: list[dict[str, Any]], title: str | None = "Run it?") -> Any:
        tool_call: dict[str, Any] = {"toolCallId": "t1", "title": title}
        params = {"options": options, "toolCall": tool_call}
        return await self.run("raw " + json.dumps(params))


async def session(
    client: Recording, capabilities: ClientCapabilities | None = None
) -> AsyncIterator[Session]:
    async with spawn_agent_process(client, sys.executable, AGENT, use_unstable_protocol=True) as (
        conn,
        process,
    ):
        try:
            init = await conn.initialize(
                protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities
            )
            assert init.agent_info is not None
            assert init.agent_info.name == "release-agent"
            client.agent_info = init.agent_info
            new = await conn.new_session(cwd=str(Path.cwd()))
            yield Session(client, conn, new.session_id)
        finally:
            if process.returncode is None:
                process.kill()
    assert process.returncode is not None


pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def plain_agent() -> AsyncIterator[Session]:
    async for opened in session(Recording(ScriptedProvider())):
        yield opened


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def forms_agent() -> AsyncIterator[Session]:
    async for opened in session(Recording(ScriptedProvider()), FORMS):
        yield opened


@pytest.fixture
def provider() -> ScriptedProvider:
    return ScriptedProvider({"permission": "Yes"})


@pytest.fixture
def agent(plain_agent: Session, provider: ScriptedProvider) -> Session:
    """The agent with a client that declares no forms, answering with a fresh provider."""
    plain_agent.client.provider = provider
    return plain_agent


@pytest.fixture
def form_agent(forms_agent: Session, provider: ScriptedProvider) -> Session:
    """The agent with a client that declares form elicitation."""
    forms_agent.client.provider = provider
    return forms_agent


# ------------------------------------------------------- permission: agent side to client side


async def test_confirm_reaches_the_client_as_a_permission_request(
    agent: Session, provider: ScriptedProvider
) -> None:
    assert await agent.run("confirm") == {"result": True}
    only = provider.last_request.questions[0]
    assert (only.id, only.question, only.detail) == (
        "permission",
        "Delete build/?",
        "It holds 2 GB.",
    )
    assert [(o.label, o.description) for o in only.options] == [
        ("Yes", "allow this time"),
        ("No", "reject this time"),
    ]


async def test_the_client_sees_a_permission_intent_and_where_it_comes_from(
    agent: Session, provider: ScriptedProvider
) -> None:
    await agent.run("confirm")
    request = provider.last_request
    assert request.questions[0].intent == PermissionIntent(
        "tool", "Delete build/?", allow="Yes", deny="No"
    )
    assert request.provenance == Provenance(source="release-agent", session="s1")


async def test_a_permission_intent_maps_its_roles_to_option_kinds(
    agent: Session, provider: ScriptedProvider
) -> None:
    provider.script = {"permission": "Always run"}
    assert await agent.run("permission") == {"result": [["bash", ["Always run"], None]]}
    only = provider.last_request.questions[0]
    assert [(o.label, o.description) for o in only.options] == [
        ("Run it", "allow this time"),
        ("Always run", "allow from now on"),
        ("Stop", "reject this time"),
    ]
    assert only.intent == PermissionIntent(
        "tool", "Allow Bash to run this command?", "Run it", "Stop", "Always run"
    )
    assert only.detail == "npm test -- --watch=false"


async def test_no_is_the_reject_option(agent: Session, provider: ScriptedProvider) -> None:
    provider.script = {"permission": "No"}
    assert await agent.run("confirm") == {"result": False}


async def test_inside_a_tool_call_the_question_is_its_text(
    agent: Session, provider: ScriptedProvider
) -> None:
    assert await agent.run("confirm-in-call") == {"result": True}
    only = provider.last_request.questions[0]
    assert (only.question, only.detail) == (
        "Allow the agent's tool call?",
        "Delete build/?\n\nIt holds 2 GB.",
    )


async def test_a_skip_is_the_cancelled_outcome(agent: Session, provider: ScriptedProvider) -> None:
    provider.script = {}
    assert await agent.run("confirm") == {"error": CANCELLED}


async def test_a_dismissal_is_the_cancelled_outcome(
    agent: Session, provider: ScriptedProvider
) -> None:
    provider.script = UserInteractionError("gone", ErrorCode.ASK_CANCELLED)
    assert await agent.run("confirm") == {"error": CANCELLED}


async def test_an_answer_of_ones_own_is_asked_again(
    agent: Session, provider: ScriptedProvider
) -> None:
    replies = iter(["maybe later", "No"])

    def reply(request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        return AskUserQuestionAnswer([answer_item(request.questions[0], text=next(replies))])

    provider.script = reply
    assert await agent.run("confirm") == {"result": False}
    assert [r.questions[0].detail for r in provider.requests] == [
        "It holds 2 GB.",
        "It holds 2 GB.\n\nPlease answer again: choose one of the options.",
    ]


async def test_no_option_after_the_last_try_is_an_error_for_the_agent(
    agent: Session, provider: ScriptedProvider
) -> None:
    provider.script = {"permission": "maybe later"}
    assert await agent.run("confirm") == {
        "error": {
            "code": "PROVIDER_FAILED",
            "message": "the user-interaction provider failed: RequestError: interaction could"
            f" not answer this permission request: no option chosen after {MAX_TRIES} tries",
        }
    }
    assert len(provider.requests) == MAX_TRIES


# ---------------------------------------------------------------- what ACP cannot carry


async def test_a_batch_without_forms_is_no_provider_saying_what_acp_lacks(
    agent: Session, provider: ScriptedProvider
) -> None:
    assert await agent.run("batch") == {
        "error": {
            "code": "NO_PROVIDER",
            "message": "the ACP client cannot answer this question: the request has 3"
            " questions, but ACP's session/request_permission carries only one single-select"
            " question whose options are all permission choices (a PermissionIntent's roles,"
            " or labels such as Yes/No, Allow/Deny, Always allow/Never: see"
            " interaction.acp.PERMISSION_LABELS), and the client did not declare the form"
            " elicitation capability (clientCapabilities.elicitation.form), through which"
            " ACP carries any other question",
        }
    }
    assert provider.requests == []


async def test_a_batch_goes_as_a_form_when_the_client_declares_forms(
    form_agent: Session, provider: ScriptedProvider
) -> None:
    provider.script = {"pkg_manager": "pnpm", "checks": ["lint", "mine"], "name": "Nova"}
    assert await form_agent.run("batch") == {
        "result": [
            ["pkg-manager", ["pnpm"], None],
            ["checks", ["lint"], "mine"],
            ["name", [], "Nova"],
        ]
    }
    asked = provider.last_request.questions
    assert [(q.id, q.question, q.multi_select) for q in asked] == [
        ("pkg_manager", "Setup: Which package manager?", False),
        ("checks", "Which checks?", True),
        ("name", "Name of the release?", False),
    ]
    assert [(o.label, o.description) for o in asked[0].options] == [("npm", None), ("pnpm", "fast")]
    assert asked[2].detail == "Shown on the page."


async def test_an_other_answer_and_a_skip_in_a_form(
    form_agent: Session, provider: ScriptedProvider
) -> None:
    provider.script = {"pkg_manager": "bun"}
    assert await form_agent.run("batch") == {
        "result": [["pkg-manager", [], "bun"], ["checks", [], None], ["name", [], None]]
    }


# ------------------------------------------------------------- forms from another agent


async def form(agent: Session, properties: dict[str, Any], **schema: Any) -> Any:
    params = {
        "message": "Tell us",
        "schema": {"type": "object", "properties": properties, **schema},
    }
    return await agent.run("form " + json.dumps(params))


async def test_a_foreign_form_is_answered_field_by_field(
    agent: Session, provider: ScriptedProvider
) -> None:
    provider.script = {
        "public": "Yes",
        "stars": "4",
        "ratio": "0.5",
        "licence": "MIT",
        "os": ["linux"],
    }
    outcome = await form(
        agent,
        {
            "public": {"type": "boolean", "title": "Make it public?"},
            "stars": {"type": "integer", "minimum": 1, "maximum": 5},
            "ratio": {"type": "number"},
            "licence": {"type": "string", "enum": ["MIT", "Apache-2.0"]},
            "os": {"type": "array", "items": {"type": "string", "enum": ["linux", "mac"]}},
            "site": {"type": "string", "description": "Optional."},
        },
        required=["stars"],
    )
    assert outcome == {
        "result": {
            "action": "accept",
            "content": {
                "public": True,
                "stars": 4,
                "ratio": 0.5,
                "licence": "MIT",
                "os": ["linux"],
            },
        }
    }
    asked = provider.last_request.questions
    assert [(q.id, q.question, q.detail) for q in asked] == [
        ("public", "Make it public?", "Tell us"),
        ("stars", "stars", "(required)"),
        ("ratio", "ratio", None),
        ("licence", "licence", None),
        ("os", "os", None),
        ("site", "site", "Optional."),
    ]


async def test_a_value_that_does_not_fit_is_asked_again_then_refused(
    agent: Session, provider: ScriptedProvider
) -> None:
    provider.script = {"stars": "9"}
    outcome = await form(agent, {"stars": {"type": "integer", "minimum": 1, "maximum": 5}})
    assert outcome == {
        "error": {
            "code": -32602,
            "message": "interaction could not fill this form: no valid answer after"
            f" {MAX_TRIES} tries (stars: enter a number from 1 to 5)",
        }
    }
    assert [r.questions[0].detail for r in provider.requests[1:]] == [
        "Tell us\n\nPlease answer again: enter a number from 1 to 5."
    ] * (MAX_TRIES - 1)


async def test_a_form_interaction_cannot_check_is_refused(
    agent: Session, provider: ScriptedProvider
) -> None:
    assert await form(agent, {"code": {"type": "string", "pattern": "^[a-z]+$"}}) == {
        "error": {
            "code": -32602,
            "message": "interaction cannot ask this form: code: interaction cannot check pattern",
        }
    }
    assert await form(agent, {"a": {"type": "string", "title": "A\x1b[1mB"}}) == {
        "error": {
            "code": -32602,
            "message": "interaction cannot ask this form: questions[0].question: contains"
            " control character U+001B",
        }
    }
    assert await form(agent, {"a": {"type": "string"}}, required=["b"]) == {
        "error": {
            "code": -32602,
            "message": "interaction cannot ask this form: the form requires 'b', which its"
            " properties do not define",
        }
    }
    assert provider.requests == []


async def test_form_size_limits(agent: Session, provider: ScriptedProvider) -> None:
    fields = {f"f{n}": {"type": "string"} for n in range(MAX_FIELDS)}
    assert (await form(agent, fields))["result"] == {"action": "accept", "content": {}}
    fields["one_more"] = {"type": "string"}
    assert (await form(agent, fields))["error"]["message"] == (
        f"interaction cannot ask this form: the form has more than {MAX_FIELDS} fields"
    )
    choices = [f"c{n}" for n in range(MAX_OPTIONS + 1)]
    assert (await form(agent, {"c": {"type": "string", "enum": choices}}))["error"]["message"] == (
        f"interaction cannot ask this form: more than {MAX_OPTIONS} choices"
    )
    assert len(provider.requests) == 1


# ------------------------------------------------------------ what the client refuses


def option(name: str, kind: str = "allow_once", option_id: str = "a") -> dict[str, str]:
    return {"optionId": option_id, "name": name, "kind": kind}


async def test_a_title_with_control_sequences_is_refused(
    agent: Session, provider: ScriptedProvider
) -> None:
    assert await agent.raw([option("Go")], title="Run \x1b[2Jit?") == {
        "error": {
            "code": -32602,
            "message": "interaction cannot ask this permission request: questions[0].question:"
            " contains control character U+001B",
        }
    }
    assert await agent.raw([option("Go\x1b]0;x\x07")]) == {
        "error": {
            "code": -32602,
            "message": "interaction cannot ask this permission request:"
            " questions[0].options[0].label: contains control character U+001B",
        }
    }
    assert provider.requests == []


async def test_an_unknown_option_kind_is_refused_by_the_sdk(
    agent: Session, provider: ScriptedProvider
) -> None:
    assert await agent.raw([option("Go", kind="allow_forever")]) == {
        "error": {"code": -32602, "message": "Invalid params"}
    }
    assert provider.requests == []


async def test_repeated_names_and_no_options_are_refused(
    agent: Session, provider: ScriptedProvider
) -> None:
    outcome = await agent.raw([option("Go"), option("go", "reject_once", "b")])
    assert outcome["error"]["message"] == (
        "interaction cannot ask this permission request: questions[0].options[1].label:"
        " duplicate option label 'go' (same as 'Go')"
    )
    assert await agent.raw([]) == {
        "error": {
            "code": -32602,
            "message": "interaction cannot ask this permission request: options: none offered",
        }
    }
    assert provider.requests == []


async def test_size_limits_at_the_limit_and_one_past_it(
    agent: Session, provider: ScriptedProvider
) -> None:
    provider.script = {"permission": "o1"}
    many = [option(f"o{n}", option_id=f"id{n}") for n in range(1, MAX_OPTIONS + 1)]
    assert await agent.raw(many) == {"result": {"outcome": "selected", "optionId": "id1"}}
    too_many = [*many, option("extra", option_id="x")]
    assert (await agent.raw(too_many))["error"]["message"] == (
        f"interaction cannot ask this permission request: options: more than {MAX_OPTIONS}"
    )
    long = "x" * MAX_TEXT
    assert (await agent.raw([option("o1")], title=long))["result"]["optionId"] == "a"
    assert (await agent.raw([option("o1")], title=long + "x"))["error"]["message"] == (
        "interaction cannot ask this permission request: toolCall.title: longer than"
        f" {MAX_TEXT} characters"
    )
    assert (await agent.raw([option("o1" + "x" * MAX_TEXT)]))["error"]["message"] == (
        "interaction cannot ask this permission request: options[0].name: longer than"
        f" {MAX_TEXT} characters"
    )
    assert len(provider.requests) == 2


# ------------------------------------------------------ what the agent refuses from a client


class Misbehaving(Recording):
    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id="zzz")
        )

    async def create_elicitation(self, message: str, mode: ElicitationMode, **kwargs: Any) -> Any:
        return DeclineElicitationResponse(action="decline")


async def test_an_option_id_never_sent_is_a_bad_answer_and_a_decline_a_cancel() -> None:
    async for opened in session(Misbehaving(ScriptedProvider()), FORMS):
        assert await opened.run("confirm") == {
            "error": {
                "code": "BAD_ANSWER",
                "message": 'request_permission: outcome.optionId: "zzz" names none of the'
                " options sent",
            }
        }
        assert await opened.run("batch") == {"error": CANCELLED}


# ------------------------------------------------------------------------------ the extra


async def test_without_the_sdk_the_import_error_names_the_extra() -> None:
    assert (
        import_error_without("acp", "interaction.acp")
        == 'interaction.acp needs the ACP SDK: pip install "interaction-seam[acp]"'
    )


async def test_the_permission_labels_name_each_kind_and_nothing_is_guessed() -> None:
    assert permission_kind(" Allow Once ") == "allow_once"  # compared by label_key
    assert [permission_kind(label) for label in ("Yes", "ALWAYS ALLOW", "Deny", "Never")] == [
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    ]
    assert permission_kind("npm") is None
    assert set(PERMISSION_LABELS.values()) == {
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    }
