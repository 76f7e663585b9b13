"""Plan / execute / replan (seed 002): three ReAct agents taking turns in one conversation thread.

    START → start_plan → planner ⇄ planner_tools → make_plan ─(tasks)→ start_task
                                                            └─(no usable plan)→ END
    start_task → executor ⇄ executor_tools → finish_task ─(done, tasks queued)→ start_task
                                                          └─(failed, or queue empty)→ start_review
    start_review → replanner ⇄ replanner_tools → review ─(revised tasks)→ start_task
                                                        └─(done, plan.max_replans reached, unusable)→ END

The three agents share the graph's ``messages`` (one LangGraph thread, ``<session thread>:plan``, kept in
the session's checkpointer), so the executor sees what the planner read and the replanner sees every
task's work — no context is passed by hand. Each agent gets its own system prompt, tools and model role.

Model calls, in order (what a ``scripted:`` file must hold); every agent may make at most
``plan.executor_max_steps`` calls per visit, a reply with tool calls asking for another. Each agent has
its own tools beside the toolbox's (``ide.search.plan_tools``):

1. ``plan.planner`` with the read-only tools (read_file, list_dir, grep) and ``create_subtask(title,
   detail?, files?)``: each call appends a subtask (at most ``plan.max_tasks``, no duplicates), shown at
   once in the user's plan view. When it made subtasks, they are the plan, and its last reply (no tool
   calls) is only a summary. Otherwise (a model that answers in text) its last reply is the plan, a
   numbered list or ``{"tasks": [...]}``; if that is unusable, one repair call of ``plan.planner`` with no
   tools; unusable again ends the run, saying why.
2. Per task, ``plan.executor`` with read and edit tools over the session's change set, ``run_command(argv,
   timeout_s?)`` (asks the user first, runs in a scratch worktree; no model call of its own) and
   ``attempt_completion(status, summary)``, which ends the task: the next model call is the next task's
   (or the replanner's). Without it, the last reply (no tool calls) ends with ``{"status": "done" |
   "failed", "summary": "..."}``; a reply without that object counts as done, with its text as the
   summary. Running out of calls fails the task (a last reply calling attempt_completion still counts).
3. After a failed task, and when the queue is empty (never after a task that went well while others
   wait), ``plan.replanner`` with the read-only tools and ``analyze_failure(task?)`` (a digest of a failed
   task from the run's state): its last reply is ``{"done": true, "answer": ...}`` or ``{"tasks": [...]}``
   (the new queue, which after a failure must differ from the one left). If it is unusable, one repair
   call with no tools; unusable again ends the run with what was done. New tasks when
   ``plan.max_replans`` replans were already made end the run (stop reason ``max_turn_requests``).

The tree: root → ``plan`` node (its tasks as ``step`` children — a subtask from create_subtask the
moment it is made — each step's tool calls as ``action`` children, a run_command labelled with its exit
status, a step ended by attempt_completion labelled done or failed) → each replanner visit as a node
under the plan it reviews (kind ``plan`` when it revises the queue, ``evaluation`` otherwise) → the
``answer`` on the best path.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

from ide.search import plan_tools
from ide.search.base import RunContext, RunOutcome, schema_hint
from ide.search.events import cap_text, tool_end, tool_start
from ide.search.hints import hint_messages, memory_hint
from ide.search.plan_fork import continuation
from ide.search.plan_prompts import (
    AGENT_NAMES,
    EXECUTOR,
    EXECUTOR_PROMPT,
    PLANNER,
    PLANNER_PROMPT,
    REPLANNER,
    REPLANNER_PROMPT,
    PastStep,
    PlanReply,
    PlanState,
    ReplanReply,
    TaskReport,
    numbered,
    parse_plan,
    parse_replan,
    progress_text,
    task_report,
)
from ide.search.plan_tools import ATTEMPT_COMPLETION, CREATE_SUBTASK, ToolResult
from ide.search.plan_tree import PlanTree
from ide.search.react import close_dangling_tool_calls, turn_ran_out_of_steps

__all__ = ["PlanExecute"]


class PlanExecute:
    """Plan / execute / replan: a planner, an executor and a replanner continuing one thread."""

    name = "plan"

    async def run(self, ctx: RunContext) -> RunOutcome:
        """Plan the task, run the tasks one by one in the session's change set, replan as needed.

        The edits stay in ``ctx.changeset`` (the outcome's change set is None). On cancellation or a model
        error the tree is closed at the last node reached and the exception propagates.
        """
        tree = PlanTree(ctx)
        run = _PlanRun(ctx, tree)
        run.hint = await memory_hint(ctx)
        # A continuation (ctx.fork) starts a thread of its own: the trajectory done so far and the hint,
        # never what the origin run did after the node (ide.search.plan_fork).
        given, past = continuation(ctx.fork) if ctx.fork is not None else ([], [])
        checkpointer = (
            ctx.checkpointer if ctx.checkpointer is not None and ctx.fork is None else InMemorySaver()
        )
        graph = run.build().compile(checkpointer=checkpointer)
        plan = ctx.settings.plan
        # Supersteps: per visit two per model call plus the visit's start and end nodes.
        visits = 1 + plan.max_tasks * (plan.max_replans + 1) + plan.max_replans + 1
        config = {
            "configurable": {"thread_id": f"{ctx.thread_id}:plan" + (":fork" if ctx.fork else "")},
            "recursion_limit": visits * (2 * plan.executor_max_steps + 4) + 10,
        }
        fresh: PlanState = {
            "messages": [HumanMessage(ctx.task), *given],
            "steps": 0,
            "tasks": [],
            "current": None,
            "past_steps": past,
            "replans": 0,
            "answer": None,
            "stop_reason": "end_turn",
            "details": {},
            "completion": None,
            "step_log": {},
            "failures": [],
        }
        try:
            state: PlanState = await graph.ainvoke(fresh, config)
        except asyncio.CancelledError:
            tree.close("terminated_early")
            ctx.finish_tree("cancelled", tree.tip, **run.figures())
            raise
        except Exception:
            tree.close("terminated_early")
            ctx.finish_tree("error", tree.tip, **run.figures())
            raise
        tree.close("evaluated")
        stop_reason = state.get("stop_reason", "end_turn")
        answer = state.get("answer") or ""
        figures = ctx.finish_tree(stop_reason, tree.tip, **run.figures())
        return RunOutcome(stop_reason, answer=answer, changeset=None, figures=figures, answered=False)


class _PlanRun:
    """The graph's nodes for one run: model calls, tool calls and the tree, over one RunContext."""

    def __init__(self, ctx: RunContext, tree: PlanTree) -> None:
        self.ctx = ctx
        self.tree = tree
        self.plan = ctx.settings.plan
        self.max_steps = self.plan.executor_max_steps
        self.hint = ""
        """The workspace memory's hint for the task (ide.search.hints): the planner's prompt carries it."""
        root = ctx.changeset.root
        self.prompts = {
            PLANNER: PLANNER_PROMPT.format(
                root=root, schema=schema_hint(PlanReply), max_tasks=self.plan.max_tasks
            ),
            EXECUTOR: EXECUTOR_PROMPT.format(root=root, schema=schema_hint(TaskReport)),
            REPLANNER: REPLANNER_PROMPT.format(
                root=root, schema=schema_hint(ReplanReply), max_tasks=self.plan.max_tasks
            ),
        }
        self.tools: dict[str, list[BaseTool]] = {
            role: [*ctx.tools_for(read_only=role != EXECUTOR), *plan_tools.tool_schemas(role)]
            for role in (PLANNER, EXECUTOR, REPLANNER)
        }

    def figures(self) -> dict[str, Any]:
        """The run's own figures: tasks run and failed, replans, the model each role used."""
        return {
            "tasks": self.tree.tasks_run,
            "tasks_failed": self.tree.tasks_failed,
            "replans": self.tree.replans,
            "roles": {role: usage["model"] for role, usage in self.ctx.usage().items()},
        }

    def build(self) -> StateGraph:
        graph = StateGraph(PlanState)
        graph.add_node("start_plan", self.start_plan)
        graph.add_node("planner", self.agent(PLANNER))
        graph.add_node("planner_tools", self.tool_node(PLANNER))
        graph.add_node("make_plan", self.make_plan)
        graph.add_node("start_task", self.start_task)
        graph.add_node("executor", self.agent(EXECUTOR))
        graph.add_node("executor_tools", self.tool_node(EXECUTOR))
        graph.add_node("finish_task", self.finish_task)
        graph.add_node("start_review", self.start_review)
        graph.add_node("replanner", self.agent(REPLANNER))
        graph.add_node("replanner_tools", self.tool_node(REPLANNER))
        graph.add_node("review", self.review)
        graph.add_edge(START, "start_plan")
        graph.add_edge("start_plan", "planner")
        for agent, tools, after in (
            ("planner", "planner_tools", "make_plan"),
            ("executor", "executor_tools", "finish_task"),
            ("replanner", "replanner_tools", "review"),
        ):
            graph.add_conditional_edges(agent, self.route_after(tools, after), [tools, after])
            graph.add_conditional_edges(tools, self.route_back(agent, after), [agent, after])
        graph.add_conditional_edges("make_plan", self.after_plan, ["start_task", END])
        graph.add_edge("start_task", "executor")
        graph.add_conditional_edges("finish_task", self.after_task, ["start_task", "start_review"])
        graph.add_edge("start_review", "replanner")
        graph.add_conditional_edges("review", self.after_plan, ["start_task", END])
        return graph

    def route_after(self, tools: str, after: str) -> Any:
        """Run the tool calls while the agent has model calls left; otherwise go on to ``after``."""

        def route(state: PlanState) -> str:
            last = state["messages"][-1]
            if isinstance(last, AIMessage) and last.tool_calls:
                if state.get("steps", 0) < self.max_steps:
                    return tools
                ends = any(call["name"] == ATTEMPT_COMPLETION for call in last.tool_calls)
                if ends and tools == "executor_tools":
                    return tools  # the last call ends the task: honoured, the rest answered "not run"
            return after

        return route

    def route_back(self, agent: str, after: str) -> Any:
        """After the tool calls: back to the agent, or on once the task ended or no model calls are left."""

        def route(state: PlanState) -> str:
            if state.get("completion") or state.get("steps", 0) >= self.max_steps:
                return after
            return agent

        return route

    def after_plan(self, state: PlanState) -> str:
        return "start_task" if state.get("answer") is None and state.get("tasks") else END

    def after_task(self, state: PlanState) -> str:
        past = state.get("past_steps", [])
        if past and past[-1]["ok"] and state.get("tasks"):
            return "start_task"
        return "start_review"

    def agent(self, role: str) -> Any:
        """The node of one ReAct step of ``role``: a model call with the role's tools bound."""

        async def step(state: PlanState) -> dict[str, Any]:
            reply = await self.ask(role, state["messages"], self.tools[role])
            return {"messages": [reply], "steps": state.get("steps", 0) + 1}

        return step

    async def ask(
        self,
        role: str,
        messages: Sequence[AnyMessage],
        tools: Sequence[BaseTool] = (),
        schema: type[BaseModel] | None = None,
    ) -> AIMessage:
        """One model call of ``role`` over the shared thread; its reasoning and text stream as thoughts."""
        streamed = False

        async def on_chunk(_kind: str, text: str) -> None:
            nonlocal streamed
            streamed = True
            await self.ctx.progress({"type": "thought", "text": text})

        history = close_dangling_tool_calls(list(messages))
        started = time.perf_counter()
        hint = hint_messages(self.hint) if role == PLANNER else []
        reply = await self.ctx.router.stream(
            role,
            [SystemMessage(self.prompts[role]), *hint, *history],
            tools=tools,
            on_chunk=on_chunk,
            schema=schema,
        )
        self.tree.charge(reply, (time.perf_counter() - started) * 1000)
        if streamed:
            await self.ctx.think("")
        reply.name = AGENT_NAMES[role]
        return reply

    def tool_node(self, role: str) -> Any:
        """The node running the last reply's tool calls (announced to the user, recorded as actions):
        the toolbox's through the run context, the role's own (create_subtask, run_command,
        attempt_completion, analyze_failure) here, their results folded into the graph's state."""
        read_only = role != EXECUTOR

        async def run_tools(state: PlanState) -> dict[str, Any]:
            last = state["messages"][-1]
            changes: dict[str, Any] = {}
            results = []
            for call in last.tool_calls:
                call_id = call.get("id") or ""
                name = call["name"]
                seen = {**state, **changes}
                skip = plan_tools.skip_reason(name, seen, self.max_steps)
                if skip:
                    output, failed = skip, True
                elif plan_tools.offers(role, name):
                    result = await self.own_tool(call, seen)
                    changes.update(result.changes)
                    output, failed = result.output, result.failed
                else:
                    node = self.tree.start_action(call, read_only=read_only)
                    outcome = await self.ctx.call_tool(
                        name, call["args"], read_only=read_only, announce=True, call_id=call_id or None
                    )
                    self.tree.end_action(node, outcome.output, outcome.failed)
                    output, failed = outcome.output, outcome.failed
                if failed and role == EXECUTOR:
                    log = {**state, **changes}.get("step_log") or {}
                    changes["step_log"] = plan_tools.record_failed_call(log, name, call["args"], output)
                results.append(
                    ToolMessage(
                        content=output,
                        tool_call_id=call_id,
                        name=name,
                        status="error" if failed else "success",
                    )
                )
            return {"messages": results, **changes}

        return run_tools

    async def own_tool(self, call: dict[str, Any], state: dict[str, Any]) -> ToolResult:
        """Run one of the role's own tools, shown to the user as a tool call and in the tree."""
        name, args = call["name"], call["args"]
        title, kind = plan_tools.describe(name, args)
        ident = call.get("id") or f"plan-{name}-{len(self.ctx.recorder.tree.nodes)}"
        await self.ctx.progress(tool_start(ident, name, args, title, kind, []))
        # A subtask that was made is a step node, not an action; everything else is an action.
        node = None if name == CREATE_SUBTASK else self.tree.start_action(call, read_only=True, title=title)
        result = await plan_tools.dispatch(self.ctx, name, args, state)
        output = cap_text(result.output, self.ctx.observation_cap)
        await self.ctx.progress(tool_end(ident, result.failed, output))
        if node is not None:
            self.tree.end_action(node, output, result.failed, label=result.label)
        elif result.failed:
            self.tree.end_action(self.tree.start_action(call, read_only=True, title=title), output, True)
        else:
            title = result.changes["tasks"][-1]
            self.tree.add_subtask(title, result.changes["details"].get(title, ""))
            await self.show_plan([], None, result.changes["tasks"])
        return ToolResult(output, result.failed, result.label, result.changes)

    async def repair(
        self, role: str, messages: list[AnyMessage], reason: str, wanted: str, schema: type[BaseModel]
    ) -> AIMessage:
        """The one repair call (no tools, constrained to ``schema`` where the server can): the reply could
        not be used, say why, ask again."""
        request = HumanMessage(f"That reply could not be used: {reason}. Answer again with only {wanted}.")
        messages.append(request)
        reply = await self.ask(role, messages, schema=schema)
        messages.append(reply)
        return reply

    def unrun_calls(self, messages: list[AnyMessage]) -> list[AnyMessage]:
        """Answers for the tool calls of a reply made with no calls left, so the thread stays well-formed."""
        if not turn_ran_out_of_steps(messages):
            return []
        note = f"not run: this agent used all {self.max_steps} model calls (plan.executor_max_steps)"
        return [
            ToolMessage(content=note, tool_call_id=call.get("id") or "", name=call["name"], status="error")
            for call in messages[-1].tool_calls
        ]

    async def start_plan(self, state: PlanState) -> dict[str, Any]:
        self.tree.begin_plan()
        return {"steps": 0}

    async def make_plan(self, state: PlanState) -> dict[str, Any]:
        """Parse the planner's plan (one repair call if unusable) and queue its tasks."""
        messages = list(state["messages"])
        added = self.unrun_calls(messages)
        messages += added
        drafted = list(state.get("tasks") or [])
        if drafted:  # the subtasks it made with create_subtask are the plan (already shown)
            self.tree.adopt_plan(drafted)
            await self.ctx.think(f"Plan:\n{numbered(drafted)}")
            return {"messages": added, "tasks": drafted, "steps": 0}
        try:
            if added:
                raise ValueError("it ran out of model calls before giving a plan")
            tasks = parse_plan(messages[-1].text, self.plan.max_tasks)
        except ValueError as exc:
            reason = str(exc)
            before = len(messages)
            wanted = f"a numbered list or the JSON object {schema_hint(PlanReply)}"
            reply = await self.repair(PLANNER, messages, reason, wanted, PlanReply)
            added += messages[before:]
            try:
                tasks = parse_plan(reply.text, self.plan.max_tasks)
            except ValueError as again:
                problem = f"{reason}; after one repair: {again}"
                self.tree.end_phase("failed", label="no usable plan", reflection=problem)
                answer = (
                    "I could not make a usable plan for this task, so nothing was changed. "
                    f"The planner's answer was malformed twice ({problem}). Try rephrasing the request, "
                    "or use another mode (react or lats)."
                )
                self.tree.answer(answer, solution=False)
                return {"messages": added, "answer": answer, "tasks": [], "steps": 0}
        self.tree.set_plan(tasks)
        await self.ctx.think(f"Plan:\n{numbered(tasks)}")
        await self.show_plan([], None, tasks)
        return {"messages": added, "tasks": tasks, "steps": 0}

    async def show_plan(self, past: Sequence[PastStep], current: str | None, queued: Sequence[str]) -> None:
        """The task list as the user's plan view shows it (ACP plan update): done, running, queued."""
        entries = [
            {"content": step["task"], "status": "completed" if step["ok"] else "failed"} for step in past
        ]
        if current is not None:
            entries.append({"content": current, "status": "in_progress"})
        entries += [{"content": task, "status": "pending"} for task in queued]
        await self.ctx.progress({"type": "plan", "entries": entries})

    async def start_task(self, state: PlanState) -> dict[str, Any]:
        """Take the next task off the queue and hand it to the executor in the thread."""
        task, *rest = state["tasks"]
        number = len(state.get("past_steps", [])) + 1
        self.tree.start_step()
        await self.ctx.think(f"Task {number}: {task}")
        await self.show_plan(state.get("past_steps", []), task, rest)
        queued = f" ({len(rest)} more queued after it)" if rest else " (the last one queued)"
        prompt = f"Execute task {number}{queued}: {task}"
        detail = (state.get("details") or {}).get(task)
        if detail:
            prompt += f"\n\n{detail}"
        return {
            "messages": [HumanMessage(prompt)],
            "tasks": rest,
            "current": task,
            "steps": 0,
            "completion": None,
            "step_log": {},
        }

    async def finish_task(self, state: PlanState) -> dict[str, Any]:
        """Read the executor's report: done, failed, or out of model calls (failed)."""
        messages = list(state["messages"])
        added = self.unrun_calls(messages)
        completion = state.get("completion")
        last = messages[-1]
        how = ""
        if completion:
            ok, result = completion["status"] == "done", completion["summary"]
            how = ATTEMPT_COMPLETION
        elif added or not isinstance(last, AIMessage):
            ok, result = False, f"ran out of model calls ({self.max_steps}, plan.executor_max_steps)"
        else:
            report = task_report(last.text)
            ok, result = report.status == "done", report.summary.strip() or report.status
        self.tree.end_step(ok, result, how=how)
        if not ok:
            await self.ctx.think(f"Task failed: {result}")
        task = state.get("current") or ""
        past = [*state.get("past_steps", []), PastStep(task=task, result=result, ok=ok)]
        failures = list(state.get("failures") or [])
        if not ok:
            log = state.get("step_log") or {}
            failures.append(plan_tools.failure_digest(len(past), task, result, log))
        await self.show_plan(past, None, state.get("tasks", []))
        return {
            "messages": added,
            "past_steps": past,
            "current": None,
            "steps": 0,
            "completion": None,
            "step_log": {},
            "failures": failures,
        }

    async def start_review(self, state: PlanState) -> dict[str, Any]:
        """Hand the thread to the replanner: after a failure, or when every queued task has run."""
        self.tree.begin_review()
        past = state.get("past_steps", [])
        left = state.get("tasks", [])
        if past and not past[-1]["ok"]:
            why = f"Task {len(past)} failed: {past[-1]['result']}"
            queue = f"Still queued:\n{numbered(left)}" if left else "Nothing else is queued."
            ask = (
                "Revise the plan, or finish if the request cannot be completed. "
                "analyze_failure() shows the failed task's tool errors and command output."
            )
        else:
            why = "Every planned task has run."
            queue = ""
            ask = "Finish with the answer for the user, or give the tasks still needed."
        text = "\n\n".join(part for part in (why, f"Progress:\n{progress_text(past)}", queue, ask) if part)
        return {"messages": [HumanMessage(text)], "steps": 0}

    async def review(self, state: PlanState) -> dict[str, Any]:
        """Apply the replanner's decision: the answer, or a revised queue (within plan.max_replans)."""
        messages = list(state["messages"])
        added = self.unrun_calls(messages)
        messages += added
        past = state.get("past_steps", [])
        left = state.get("tasks", [])
        after_failure = bool(past) and not past[-1]["ok"]

        def parse(text: str) -> ReplanReply:
            return parse_replan(text, self.plan.max_tasks, left=left, after_failure=after_failure)

        try:
            if added:
                raise ValueError("it ran out of model calls before deciding")
            decision = parse(messages[-1].text)
        except ValueError as exc:
            reason = str(exc)
            before = len(messages)
            reply = await self.repair(
                REPLANNER, messages, reason, f"the JSON object {schema_hint(ReplanReply)}", ReplanReply
            )
            added += messages[before:]
            try:
                decision = parse(reply.text)
            except ValueError as again:
                problem = f"{reason}; after one repair: {again}"
                self.tree.end_phase("failed", label="no usable decision", reflection=problem)
                answer = self.summary(
                    past, f"I stopped because the replanner's answer was malformed twice ({problem})."
                )
                self.tree.answer(answer, solution=False)
                return {"messages": added, "answer": answer, "tasks": [], "steps": 0}
        if decision.done:
            self.tree.end_phase("evaluated", label="done")
            self.tree.answer(decision.answer.strip(), solution=True)
            return {"messages": added, "answer": decision.answer.strip(), "tasks": [], "steps": 0}
        replans = state.get("replans", 0)
        if replans >= self.plan.max_replans:
            self.tree.end_phase(
                "terminated_early",
                label=f"over the limit of {self.plan.max_replans} replans",
                reflection=numbered(decision.tasks),
            )
            answer = self.summary(
                past,
                f"I stopped after {replans} replans (the limit, plan.max_replans). Still to do:\n"
                + numbered(decision.tasks),
            )
            self.tree.answer(answer, solution=False)
            return {"messages": added, "answer": answer, "stop_reason": "max_turn_requests", "steps": 0}
        self.tree.set_plan(decision.tasks)
        self.tree.replans += 1
        await self.ctx.think(f"Revised plan:\n{numbered(decision.tasks)}")
        await self.show_plan(past, None, decision.tasks)
        return {"messages": added, "tasks": decision.tasks, "replans": replans + 1, "steps": 0}

    def summary(self, past: Sequence[PastStep], why: str) -> str:
        """The answer when the run ends without the replanner's: why, then what each task came to."""
        done = progress_text(past) if past else "No task was run."
        return f"{why}\n\nWhat was done:\n{done}\n\nThe edits made so far are in the change set for review."
