"""One stage agent at work: an agent profile run on its own branch of the workflow's change set.

A ``react`` profile runs here as a tool loop (model call, its tool calls, again) of at most
``workflows.agent_max_steps`` calls, each recorded as tree nodes under the agent's node. Its last reply
(no tool calls) ends with ``{"status": "done" | "failed", "summary": ...}``; a reply without that
object counts as done. ``lats``, ``tot`` and ``plan`` profiles run that architecture on a RunContext
over the same branch (their own tree is recorded as a run of its own).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ide.changes import ChangeSet
from ide.protocol.tree import ToolAction
from ide.search.base import RunContext, schema_hint
from ide.search.events import first_line
from ide.search.hints import hint_messages, memory_hint
from ide.search.plan_prompts import TaskReport, task_report
from ide.workflows.schema import TOOL_ALIASES, AgentProfile, RetrievalStrategy

REPORT_PROMPT = """When the stage's work is done, or you find it cannot be done, stop calling tools and end
your reply with a JSON object {schema}. Say "failed" only when the stage's goal was not reached."""


@dataclass
class AgentReport:
    profile: str
    failed: bool
    summary: str
    steps: int
    node: str | None = None


def allowed_tools(
    profile: AgentProfile,
    extra: list[str],
    available: list[str],
    strategy: RetrievalStrategy | None = None,
) -> list[str]:
    """The tools this agent may call, in ``available``'s order: its profile's, plus the stage's
    ``mcp_tools`` (``extra``: names, or shell-style patterns that match MCP server tools only).

    An MCP server tool is one in ``available`` that is not Arbor's own (see ``builtin_tool_names``); it
    is offered only when ``extra`` names or matches it (the schema's default ``["*"]`` matches them all,
    ``[]`` none). With ``strategy`` (the workflow's ``retrieval_strategy_config``): no ``lsp_*`` tool
    while ``lsp_integration.enabled`` is false, no code-index tool while ``ast_parsing.enabled`` is false.
    """
    from ide.tools import builtin_tool_names

    builtin = builtin_tool_names()
    wanted = {TOOL_ALIASES.get(name, name) for name in (*profile.tools, *extra)}
    patterns = [name for name in extra if _is_pattern(name)]
    names = [
        name
        for name in available
        if name in wanted or (name not in builtin and any(fnmatchcase(name, p) for p in patterns))
    ]
    if profile.read_only:
        names = [name for name in names if not _is_edit(name)]
    if strategy is not None:
        names = [name for name in names if name not in builtin or strategy.withheld(name) is None]
    return names


def unavailable_tools(
    extra: list[str], available: list[str], offered: list[str], *, read_only: bool = False
) -> list[str]:
    """What to tell about a stage's ``mcp_tools`` the agent did not get: each name neither Arbor nor the
    session's MCP servers have, each Arbor tool withheld here, each pattern that matched nothing."""
    from ide.tools import builtin_tool_names

    builtin = builtin_tool_names()
    mcp = [name for name in available if name not in builtin]
    notes = []
    for entry in extra:
        name = TOOL_ALIASES.get(entry, entry)
        if entry == "*" or name in offered:
            continue
        if read_only and name not in builtin:
            notes.append(f"{entry}: a read-only agent gets no MCP server tools")
        elif _is_pattern(entry):
            if not any(fnmatchcase(tool, entry) for tool in mcp):
                notes.append(f"{entry} matches no tool of this session's MCP servers")
        elif name in builtin:
            notes.append(
                f"{entry} is withheld from this agent (read-only, or off in this workflow or workspace)"
            )
        else:
            notes.append(f"{entry} is neither an Arbor tool nor a tool of this session's MCP servers")
    return notes


def _is_pattern(name: str) -> bool:
    return any(char in name for char in "*?[")


def _is_edit(name: str) -> bool:
    return name in ("edit_file", "write_file", "create_file", "delete_file", "rename_file")


async def run_agent(
    ctx: RunContext,
    profile: AgentProfile,
    *,
    branch: ChangeSet,
    brief: str,
    extra_tools: list[str],
    parent: str | None,
    max_steps: int,
    strategy: RetrievalStrategy | None = None,
) -> AgentReport:
    """Run ``profile`` on ``branch`` with ``brief`` (task, stage, context, last failure) as its request.

    ``strategy`` (the workflow's retrieval settings) gates the LSP and code-index tools, ``extra_tools``
    (the stage's ``mcp_tools``) the MCP server tools (see allowed_tools); a stage tool the agent cannot
    have is noted under its node.
    """
    if profile.architecture != "react":
        return await _run_architecture(ctx, profile, branch=branch, brief=brief)
    toolbox = ctx.toolbox(branch, read_only=profile.read_only)
    available = list(toolbox.specs)
    names = allowed_tools(profile, extra_tools, available, strategy)
    tools = [tool for tool in toolbox.langchain_tools() if tool.name in names]
    system = SystemMessage(
        profile.prompt.format(root=ctx.changeset.root)
        + "\n"
        + REPORT_PROMPT.format(schema=schema_hint(TaskReport))
    )
    messages: list[BaseMessage] = [system, *hint_messages(await memory_hint(ctx)), HumanMessage(brief)]
    recorder = ctx.recorder
    node = recorder.add(
        parent,
        kind="step",
        label=f"{profile.name} agent",
        role=profile.role,
        model=ctx.model_name(profile.role),
    )
    notes = unavailable_tools(extra_tools, available, names, read_only=profile.read_only)
    if notes:
        recorder.add(node, kind="thought", label="mcp_tools", thought="; ".join(notes), status="evaluated")
    for step in range(1, max_steps + 1):
        started = time.perf_counter()
        reply: AIMessage = await ctx.router.stream(profile.role, messages, tools=tools)
        usage = reply.usage_metadata or {}
        current = recorder.tree.nodes[node]
        recorder.update(
            node,
            input_tokens=current.input_tokens + usage.get("input_tokens", 0),
            output_tokens=current.output_tokens + usage.get("output_tokens", 0),
            latency_ms=current.latency_ms + (time.perf_counter() - started) * 1000,
        )
        messages.append(reply)
        if not reply.tool_calls:
            report = task_report(reply.text)
            failed = report.status == "failed"
            recorder.update(
                node,
                status="failed" if failed else "solution",
                thought=first_line(reply.text, 400) or None,
                reflection=report.summary[:2000] or None,
            )
            return AgentReport(profile.name, failed, report.summary, step, node)
        for call in reply.tool_calls:
            name, args = call["name"], call.get("args") or {}
            action = recorder.add(node, kind="action", label=name, action=ToolAction.of(call))
            if name not in names:
                output, failed_call = (
                    f"{name} is not one of the {profile.name} agent's tools: {', '.join(names)}",
                    True,
                )
            else:
                outcome = await ctx.call_tool(
                    name, args, branch, read_only=profile.read_only, announce=True, call_id=call.get("id")
                )
                output, failed_call = outcome.output, outcome.failed
            recorder.update(action, observation=output, status="failed" if failed_call else "evaluated")
            recorder.keep_state(action, branch, ctx.branches)
            messages.append(ToolMessage(output, tool_call_id=call.get("id") or name, name=name))
    summary = f"ran out of steps ({max_steps} model calls) before finishing"
    recorder.update(node, status="terminated_early", reflection=summary)
    return AgentReport(profile.name, True, summary, max_steps, node)


async def _run_architecture(
    ctx: RunContext, profile: AgentProfile, *, branch: ChangeSet, brief: str
) -> AgentReport:
    from ide.search.architectures import load_architecture
    from ide.search.tree import TreeRecorder

    sub = dataclasses.replace(
        ctx,
        task=brief,
        changeset=branch,
        recorder=TreeRecorder(architecture=profile.architecture, emit=ctx.recorder.emitter),
        started=time.monotonic(),
        usage_before={},
        branches={},
        _toolboxes={},
    )
    outcome = await load_architecture(profile.architecture).run(sub)
    if outcome.changeset is not None and outcome.changeset is not branch:
        branch.adopt(outcome.changeset)
    failed = outcome.stop_reason != "end_turn"
    return AgentReport(profile.name, failed, outcome.answer or outcome.stop_reason, 0)


def brief_for(
    *,
    task: str,
    stage_name: str,
    description: str,
    context: str,
    failure: dict[str, Any] | None,
    summaries: dict[str, str],
    attempt: int,
    guidance: str = "",
) -> str:
    """The request a stage agent gets: the task, its stage, what earlier stages said, the context, and (a
    continued run's) the trajectory it continues and the user's hint."""
    parts = [f"Task: {task}", f"Workflow stage: {stage_name}" + (f" — {description}" if description else "")]
    if attempt > 1:
        parts.append(f"This is attempt {attempt} of this stage.")
    if summaries:
        parts.append("Earlier stages:\n" + "\n".join(f"- {name}: {text}" for name, text in summaries.items()))
    if failure:
        details = failure.get("details") or ""
        parts.append(
            f"The last attempt failed at stage {failure['stage']}: {failure['summary']}\n{details}".strip()
        )
    if context:
        parts.append("Context retrieved for this stage (verified against the workspace):\n" + context)
    if guidance:
        parts.append(guidance)
    return "\n\n".join(parts)
