"""The LangGraph integration: real graphs on InMemorySaver, interrupted and resumed."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, create_react_agent, tools_condition
from langgraph.pregel import Pregel
from langgraph.types import interrupt

from interaction import (
    AbortSignal,
    AskUserQuestionItem,
    AskUserQuestionRequest,
    ErrorCode,
    Provenance,
    UserInteractionError,
    ask,
    choose,
    confirm,
    provide,
)
from interaction.integrations.langgraph import (
    KIND,
    InterruptProvider,
    answer_interrupts,
    ask_user_tool,
    is_question,
    run_graph,
)
from interaction.relay import Relay
from interaction.testing import BlockingProvider, ScriptedProvider
from interaction.wire import decode_request

from .test_integrations_common import WebPage, select


class State(TypedDict):
    result: str


class Deployer:
    """A one-node graph whose node asks two questions, and records what happened."""

    def __init__(self, *, changing: bool = False) -> None:
        self.runs = 0
        self.errors: list[tuple[str, str]] = []
        self.changing = changing

    async def node(self, state: State) -> State:
        self.runs += 1
        region_question = f"Which region? (run {self.runs})" if self.changing else "Which region?"
        try:
            region = await choose(region_question, ["eu", "us"], id="region")
            ok = await confirm(f"Deploy to {region}?", id="go")
        except UserInteractionError as error:
            self.errors.append((error.code, error.message))
            return {"result": f"stopped: {error.code}"}
        return {"result": f"deployed to {region}" if ok else "not deployed"}

    def build(self, saver: InMemorySaver) -> Pregel[Any, Any, Any, Any]:
        graph = StateGraph(State)
        graph.add_node("deploy", self.node)
        graph.add_edge(START, "deploy")
        graph.add_edge("deploy", END)
        return graph.compile(checkpointer=saver)


CONFIG: RunnableConfig = {"configurable": {"thread_id": "thread-1"}}


async def test_run_graph_answers_each_interrupt_and_the_node_reruns_from_its_top() -> None:
    deployer = Deployer()
    scripted = ScriptedProvider({"region": "us", "go": "Yes"})
    result = await run_graph(
        deployer.build(InMemorySaver()), {"result": ""}, CONFIG, provider=scripted
    )
    assert result == {"result": "deployed to us"}
    assert deployer.runs == 3  # asks, re-runs to ask again, re-runs to finish
    assert [[q.id for q in r.questions] for r in scripted.requests] == [["region"], ["go"]]
    assert scripted.requests[1].questions[0].question == "Deploy to us?"
    assert scripted.requests[0].key is not None
    assert scripted.requests[0].key.startswith("thread-1:")
    assert deployer.errors == []
    # the run's thread is the session of what the person is asked
    assert {r.provenance for r in scripted.requests} == {
        Provenance(source="LangGraph", session="thread-1")
    }


async def test_what_a_node_says_of_its_question_wins_over_the_run_config() -> None:
    async def node(state: State) -> State:
        question = AskUserQuestionItem("go", "Go on?", options=[])
        request = AskUserQuestionRequest([question], provenance=Provenance(source="deployer"))
        answer = await ask(request)
        return {"result": answer.answers[0].custom or ""}

    graph = StateGraph(State)
    graph.add_node("ask", node)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    scripted = ScriptedProvider({"go": "yes"})
    config: RunnableConfig = {
        "configurable": {"thread_id": 42},
        "metadata": {"lc_agent_name": "planner"},
    }
    result = await run_graph(
        graph.compile(checkpointer=InMemorySaver()), {"result": ""}, config, provider=scripted
    )
    assert result == {"result": "yes"}
    assert scripted.last_request.provenance == Provenance(source="deployer", session="42")


async def test_the_interrupt_carries_the_request_and_its_answer_schema() -> None:
    deployer = Deployer()
    graph = deployer.build(InMemorySaver())
    with provide(InterruptProvider()):
        first = await graph.ainvoke({"result": ""}, CONFIG)
    (pending,) = first["__interrupt__"]
    assert is_question(pending)
    assert pending.value["kind"] == KIND
    request = decode_request(pending.value["request"])
    assert [(q.id, q.question) for q in request.questions] == [("region", "Which region?")]
    assert pending.value["schema"]["required"] == ["answers"]
    assert deployer.errors == []  # GraphInterrupt passed through, never PROVIDER_FAILED


async def test_a_graph_rebuilt_on_the_same_saver_is_answered_on_the_web_page() -> None:
    saver = InMemorySaver()
    with provide(InterruptProvider()):
        await Deployer().build(saver).ainvoke({"result": ""}, CONFIG)
    relay = Relay()
    rebuilt = Deployer()
    graph = rebuilt.build(saver)  # as a new process would, from the checkpoint alone
    async with WebPage(relay, select("eu")) as page:
        with provide(relay):
            command = await answer_interrupts(graph, CONFIG)
    assert command is not None
    assert isinstance(command.resume, dict)
    (resumed,) = command.resume.values()
    assert resumed["answers"] == [{"id": "region", "selected": ["eu"]}]
    with provide(InterruptProvider()):
        second = await graph.ainvoke(command, CONFIG)
    assert [
        q.id for q in decode_request(second["__interrupt__"][0].value["request"]).questions
    ] == ["go"]
    async with WebPage(relay, select("Yes")):
        with provide(relay):
            command = await answer_interrupts(Deployer().build(saver), CONFIG)
    assert command is not None
    with provide(InterruptProvider()):
        final = await graph.ainvoke(command, CONFIG)
    assert final == {"result": "deployed to eu"}
    assert [q.request.questions[0].question for q in page.seen] == ["Which region?"]


async def test_a_dismissal_on_the_web_page_reaches_the_node_as_ask_cancelled() -> None:
    deployer = Deployer()
    relay = Relay()
    async with WebPage(relay, lambda request: None):
        with provide(relay):
            result = await run_graph(deployer.build(InMemorySaver()), {"result": ""}, CONFIG)
    assert result == {"result": "stopped: ASK_CANCELLED"}
    assert deployer.errors == [
        (ErrorCode.ASK_CANCELLED, "the user dismissed ask_user_question without answering")
    ]


async def test_a_timeout_while_answering_reaches_the_node_as_ask_timeout() -> None:
    deployer = Deployer()
    graph = deployer.build(InMemorySaver())
    with provide(InterruptProvider()):
        await graph.ainvoke({"result": ""}, CONFIG)
    blocking = BlockingProvider()
    command = await answer_interrupts(
        graph, CONFIG, provider=blocking, signal=AbortSignal.timeout(0.05)
    )
    assert command is not None
    with provide(InterruptProvider()):
        result = await graph.ainvoke(command, CONFIG)
    assert result == {"result": "stopped: ASK_TIMEOUT"}
    assert deployer.errors == [
        (ErrorCode.ASK_TIMEOUT, "ask_user_question timed out before the user answered")
    ]
    assert blocking.cleaned_up == 1


async def test_a_question_that_changed_on_rerun_is_not_given_the_old_answer() -> None:
    deployer = Deployer(changing=True)
    result = await run_graph(
        deployer.build(InMemorySaver()),
        {"result": ""},
        CONFIG,
        provider=ScriptedProvider({"region": "eu"}),
    )
    assert result == {"result": "stopped: BAD_ANSWER"}
    assert deployer.errors == [
        (ErrorCode.BAD_ANSWER, "the resumed question is not the one that was asked")
    ]


def single_node(node: Any) -> Pregel[Any, Any, Any, Any]:
    graph = StateGraph(State)
    graph.add_node("only", node)
    graph.add_edge(START, "only")
    graph.add_edge("only", END)
    return graph.compile(checkpointer=InMemorySaver())


async def test_a_forged_interrupt_is_refused_before_anyone_is_asked() -> None:
    async def forger(state: State) -> State:
        interrupt(
            {
                "kind": KIND,
                "request": {"questions": [{"id": "a", "question": "Wire the money?"}]},
                "digest": "0" * 64,
            }
        )
        return state

    graph = single_node(forger)
    await graph.ainvoke({"result": ""}, CONFIG)
    scripted = ScriptedProvider()
    with pytest.raises(UserInteractionError) as caught:
        await answer_interrupts(graph, CONFIG, provider=scripted)
    assert (caught.value.code, caught.value.message) == (
        ErrorCode.BAD_REQUEST,
        "the interrupt's question does not match its digest",
    )
    assert scripted.requests == []


async def test_other_interrupts_are_left_alone() -> None:
    async def plain(state: State) -> State:
        return {"result": str(interrupt("approve?"))}

    graph = single_node(plain)
    await graph.ainvoke({"result": ""}, CONFIG)
    assert await answer_interrupts(graph, CONFIG, provider=ScriptedProvider()) is None


class Pair(TypedDict, total=False):
    left: str
    right: str


async def test_parallel_nodes_are_answered_and_resumed_by_interrupt_id() -> None:
    async def left(state: Pair) -> Pair:
        return {"left": str(await choose("Left?", ["a", "b"], id="left"))}

    async def right(state: Pair) -> Pair:
        return {"right": str(await choose("Right?", ["c", "d"], id="right"))}

    graph = StateGraph(Pair)
    graph.add_node("left", left)
    graph.add_node("right", right)
    graph.add_edge(START, "left")
    graph.add_edge(START, "right")
    graph.add_edge("left", END)
    graph.add_edge("right", END)
    compiled = graph.compile(checkpointer=InMemorySaver())
    scripted = ScriptedProvider({"left": "b", "right": "c"})
    result = await run_graph(compiled, {}, CONFIG, provider=scripted)
    assert result == {"left": "b", "right": "c"}
    assert sorted(q.id for r in scripted.requests for q in r.questions) == ["left", "right"]


# ---------------------------------------------------------------------------- the tool

TOOL_ARGS: dict[str, object] = {
    "questions": [
        {"id": "db", "question": "Which database?", "options": ["postgres", "sqlite"]},
        {
            "id": "extras",
            "question": "Which extras?",
            "options": ["redis", "web"],
            "multi_select": True,
        },
    ]
}


class ScriptedChat(BaseChatModel):
    """Calls ``ask_user_question`` with ``arguments``, then says what the tool returned."""

    arguments: list[dict[str, object]]

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChat:
        del tools, kwargs
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        del stop, run_manager, kwargs
        calls = sum(isinstance(m, ToolMessage) for m in messages)
        last = messages[-1]
        if isinstance(last, ToolMessage) and (
            last.status == "success" or calls == len(self.arguments)
        ):
            reply = AIMessage(f"tool said ({last.status}): {last.content}")
        else:
            call = {
                "name": "ask_user_question",
                "args": self.arguments[calls],
                "id": f"call-{calls + 1}",
            }
            reply = AIMessage("", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=reply)])


def tool_loop(model: ScriptedChat, saver: InMemorySaver) -> Pregel[Any, Any, Any, Any]:
    """The ToolNode loop a LangGraph user writes: model, tools, back to the model."""

    async def call_model(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode([ask_user_tool()]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile(checkpointer=saver)


async def test_the_ready_tool_in_a_tool_node_loop_interrupts_and_resumes() -> None:
    graph = tool_loop(ScriptedChat(arguments=[TOOL_ARGS]), InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "tool-1"}}
    scripted = ScriptedProvider({"db": "sqlite", "extras": ["web", "redis", "docs"]})
    result = await run_graph(
        graph, {"messages": [HumanMessage("set up")]}, config, provider=scripted
    )
    assert isinstance(result, dict)
    assert result["messages"][-1].content == (
        'tool said (success): {"answers":[{"id":"db","selected":["sqlite"]},'
        '{"id":"extras","selected":["web","redis"],"custom":"docs"}]}'
    )
    assert len(scripted.requests) == 1  # asked once, though the tool node ran twice
    assert scripted.last_request.provenance == Provenance(
        source="LangGraph", session="tool-1", tool="ask_user_question"
    )


async def test_the_ready_tool_tells_the_model_to_fix_bad_arguments() -> None:
    bad: dict[str, object] = {"questions": [{"id": "db"}]}
    graph = tool_loop(ScriptedChat(arguments=[bad, TOOL_ARGS]), InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "tool-2"}}
    scripted = ScriptedProvider({"db": "postgres"})
    result = await run_graph(graph, {"messages": [HumanMessage("go")]}, config, provider=scripted)
    assert isinstance(result, dict)
    errors = [m for m in result["messages"] if isinstance(m, ToolMessage) and m.status == "error"]
    assert [m.content for m in errors] == [
        "ask_user_question: questions[0].question: is required."
        " Fix the arguments and call ask_user_question again."
    ]
    assert result["messages"][-1].content.startswith('tool said (success): {"answers":[{"id":"db"')


@pytest.mark.filterwarnings("ignore:create_react_agent has been moved")
def test_the_ready_tool_in_a_prebuilt_agent_invoked_from_plain_code() -> None:
    agent = create_react_agent(ScriptedChat(arguments=[TOOL_ARGS]), [ask_user_tool()])
    scripted = ScriptedProvider({"db": "postgres"})
    # the agent's name and thread as a run's config carries them: untrusted, kept to a line
    config: RunnableConfig = {
        "configurable": {"thread_id": "t\u202e7"},
        "metadata": {"lc_agent_name": "setup\nbot"},
    }
    with provide(scripted):  # no event loop anywhere: the sync path asks
        result = agent.invoke({"messages": [HumanMessage("set up")]}, config)
    assert result["messages"][-1].content == (
        'tool said (success): {"answers":[{"id":"db","selected":["postgres"]},'
        '{"id":"extras","selected":[]}]}'
    )
    assert scripted.last_request.provenance == Provenance(
        source="setup bot", session="t\\u202e7", tool="ask_user_question"
    )


@pytest.mark.filterwarnings("ignore:create_react_agent has been moved")
async def test_the_ready_tool_in_a_prebuilt_agent_with_a_timeout() -> None:
    agent = create_react_agent(
        ScriptedChat(arguments=[TOOL_ARGS]), [ask_user_tool(BlockingProvider(), timeout=0.05)]
    )
    result = await agent.ainvoke({"messages": [HumanMessage("set up")]})
    assert result["messages"][-1].content.startswith(
        "tool said (success): Error: ask_user_question timed out before the user answered\n"
    )


def test_a_bad_tool_timeout_is_refused_when_built() -> None:
    with pytest.raises(ValueError, match="timeout must be a positive"):
        ask_user_tool(timeout=0)
