"""Ready integrations with agent frameworks, one module per framework, each behind its extra.

- ``interaction.integrations.claude_agent_sdk`` (extra ``[claude]``): a ``can_use_tool``
  callback for the Claude Agent SDK and an MCP permission-prompt tool for ``claude -p``;
- ``interaction.integrations.pydantic_ai`` (extra ``[pydantic-ai]``): a toolset, a
  deferred-tool approval handler and an answerer for pydantic-ai-harness's ``AskUser``;
- ``interaction.integrations.openai_agents`` (extra ``[openai-agents]``): a ``FunctionTool``
  and a resolver of a run's tool-approval interruptions;
- ``interaction.integrations.langgraph`` (extra ``[langgraph]``): a provider that suspends
  with ``interrupt()``, a driver that answers pending interrupts and resumes the graph, and
  a ready ``ask_user_question`` LangChain tool;
- ``interaction.integrations.smolagents`` (extra ``[smolagents]``): a ready
  ``ask_user_question`` ``Tool``;
- ``interaction.integrations.crewai`` (extra ``[crewai]``): a ready ``ask_user_question``
  tool and the human-input path of a task;
- ``interaction.integrations.dbos`` (extra ``[dbos]``): a provider whose asks inside a
  DBOS workflow are durable: published once as a step, awaited with ``DBOS.recv``,
  delivered with ``DBOS.send`` (docs/durable.md).

This package imports no framework: import the module you need. See docs/integrations.md.
:class:`AssignByTool` wraps the provider every integration asks through, so a deployment
assigns each tool's approvals to a group (``Bash`` to ``ops``, with a quorum), whatever
the framework (docs/teams.md).
"""

from ._common import AssignByTool

__all__ = ["AssignByTool"]
