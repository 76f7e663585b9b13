"""A workflow run: the work behind each node of the workflow graph, and the run as a whole.

:class:`WorkflowRun` does what :mod:`ide.workflows.graph` wires: upfront retrieval for every planned
stage (in parallel, before the first stage), each stage's agents on their own branches, merging their
edits, the test run in a scratch worktree after the user allowed it, adaptive retrieval from a failure,
and the closing answer. It reports progress as ACP plan updates and thoughts, and records the run as a
tree (stage runs chained in the order they ran, agents and their tool calls under them, each routing
decision on its stage's node). The graph's state is checkpointed after every node in the session's
checkpointer, so a run stopped mid-way — cancelled, or the backend killed — goes on from its last
finished step with :meth:`WorkflowRun.resume`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from pathlib import Path
from typing import Any

from ide.changes import ChangeSet
from ide.changes.snapshot import decode_changeset, encode_changeset
from ide.changes.testrun import detect_test_command, run_tests
from ide.search.base import RunContext, RunOutcome
from ide.search.events import first_line
from ide.workflows.agents import brief_for, run_agent
from ide.workflows.fork import NOTES_KEY, notes_of
from ide.workflows.fusion import fuse
from ide.workflows.graph import ADAPTIVE, WorkflowState, aggregate, build_workflow_graph
from ide.workflows.loader import Catalog
from ide.workflows.plan import ExecutionPlan
from ide.workflows.retrieval import RetrievalAgent, RetrievalRequest
from ide.workflows.schema import ABORT, DONE, Workflow
from ide.workflows.sources import RunMemory

log = logging.getLogger(__name__)

DETAILS_CAP = 4000
"""Characters of test output carried into the failure context."""


def thread_of(session_id: str, run_id: str) -> str:
    return f"{session_id}:workflow:{run_id}"


class WorkflowRun:
    """One run of one workflow plan in one session (see the module docstring)."""

    def __init__(
        self,
        ctx: RunContext,
        catalog: Catalog,
        workflow: Workflow,
        plan: ExecutionPlan,
        *,
        run_id: str | None = None,
        guidance: str = "",
    ) -> None:
        self.ctx = ctx
        self.catalog = catalog
        self.workflow = workflow
        self.plan = plan
        self.run_id = run_id or uuid.uuid4().hex
        self.guidance = guidance
        """What every stage agent is told besides its brief: a continued run's trajectory and the hint."""
        self.notes = notes_of(plan.workflow, plan)
        """Kept beside the tree (``TreeRecorder.notes``): the plan and each stage node's stage, what a later
        run needs to continue from one of its nodes (ide.workflows.fork)."""
        ctx.recorder.notes[NOTES_KEY] = self.notes
        self.settings = ctx.settings.workflows
        self.root = Path(ctx.changeset.root)
        self.status: dict[str, str] = dict.fromkeys(plan.order, "pending")
        self.attempt_of: dict[str, int] = {}
        self.stage_nodes: dict[str, str] = {}
        self.last_node: str | None = None
        self._memory: RunMemory | bool | None = None
        self._root_node: str | None = None

    def config(self) -> dict[str, Any]:
        return {
            "configurable": {"thread_id": thread_of(self.ctx.session_id, self.run_id)},
            "recursion_limit": 8 * self.settings.max_stage_runs + 16,
        }

    def graph(self) -> Any:
        return build_workflow_graph(
            self.plan,
            self,
            max_enrichments=self.settings.max_enrichments,
            max_stage_runs=self.settings.max_stage_runs,
            checkpointer=self.ctx.checkpointer,
        )

    async def run(self, summaries: dict[str, str] | None = None) -> RunOutcome:
        """Retrieve upfront, then run the graph from its entry stage to DONE or ABORT; ``summaries``: what
        the stages before the entry said (a continued run's, taken as done)."""
        for stage in summaries or {}:
            self.status[stage] = "completed"
        self._begin_tree(resumed=False)
        await self._show_plan()
        context = await self.upfront_context()
        state: WorkflowState = {
            "plan": self.plan.model_dump(mode="json"),
            "task": self.ctx.task,
            "attempts": {},
            "enrichments": {},
            "stage_runs": 0,
            "agent_results": {},
            "failure": None,
            "context": context,
            "changes": encode_changeset(self.ctx.changeset),
            "summaries": dict(summaries or {}),
            "log": [],
        }
        final = await self.graph().ainvoke(state, self.config(), durability="sync")
        return self.outcome(final)

    async def resume(self) -> RunOutcome:
        """Go on from the last checkpoint of this run (its finished stages are not run again)."""
        graph = self.graph()
        snapshot = await graph.aget_state(self.config())
        values = snapshot.values or {}
        for entry in values.get("log", []):
            self.status[entry["stage"]] = "failed" if entry["failed"] else "completed"
        self._begin_tree(resumed=True, after=values.get("log", []))
        await self._show_plan()
        if not snapshot.next and not snapshot.tasks:
            # Finished. A task that saved its writes but whose step was never checkpointed (the
            # backend killed in between) is not in ``next`` but is in ``tasks``: that run goes on.
            return self.outcome(values)
        final = await graph.ainvoke(None, self.config(), durability="sync")
        return self.outcome(final)

    def outcome(self, final: dict[str, Any]) -> RunOutcome:
        changes = final.get("changes")
        changeset = decode_changeset(changes) if changes else None
        stop = "end_turn"
        figures = self.ctx.finish_tree(
            stop, self.last_node, workflow=self.plan.workflow, outcome=final.get("outcome")
        )
        figures["routing"] = final.get("log", [])
        return RunOutcome(stop, final.get("answer", ""), changeset, figures)

    def memory(self) -> RunMemory | None:
        if self._memory is None:
            try:
                self._memory = RunMemory(self.root, self.ctx.settings)
            except Exception as exc:  # an unusable memory file must not stop the workflow
                log.warning("workflow memory unavailable: %s", exc)
                self._memory = False
        return self._memory if isinstance(self._memory, RunMemory) else None

    def retrieval_agent(self, changeset: ChangeSet) -> RetrievalAgent:
        return RetrievalAgent(
            self.root,
            self.ctx.settings,
            changeset=changeset,
            index=self.ctx.services.index if self.plan.is_code else None,
            router=self.ctx.router,
            memory=self.memory(),
        )

    async def _retrieve(
        self, stage: str, changeset: ChangeSet, failure: str | None, agent: RetrievalAgent | None = None
    ) -> tuple[str, str]:
        """(rendered context, one line saying what was found) for ``stage``."""
        context = self.plan.task_context[stage]
        agent = agent or self.retrieval_agent(changeset)
        request = RetrievalRequest(
            task=self.ctx.task,
            stage_name=context.name,
            guidance=context.retrieval_guidance,
            strategy=self.workflow.retrieval_strategy_config,
            is_code=self.plan.is_code,
            focus_files=changeset.changed_paths(),
            failure=failure,
        )
        result = await agent.retrieve(request)
        fused = await fuse(
            result.snippets,
            f"{self.ctx.task}\n{failure or ''}",
            budget_tokens=context.token_budget,
            root=self.root,
            changeset=changeset,
            settings=self.ctx.settings,
            memory=self.memory(),
        )
        used = ", ".join(f"{s.name} {s.snippets}" for s in result.sources if s.available and s.snippets)
        missing = "; ".join(f"{s.name}: {s.reason}" for s in result.sources if not s.available)
        line = (
            f"{len(fused.snippets)} snippets, {fused.tokens} of {fused.budget} tokens "
            f"({used or 'nothing found'}); reranked by {fused.reranker}"
            + (f"; {len(fused.rejected)} rejected by the grounding check" if fused.rejected else "")
            + (f"; unavailable: {missing}" if missing else "")
            + "".join(f"; {note}" for note in [*result.notes, *fused.notes()])
        )
        return fused.render(), line

    async def upfront_context(self) -> dict[str, str]:
        """Context for every planned stage, retrieved concurrently before the first stage runs."""
        if self._root_node is None:
            self._begin_tree(resumed=False)
        stages = list(self.plan.order)
        agent = self.retrieval_agent(self.ctx.changeset)  # one agent: the stages share its document index
        found = await asyncio.gather(*(self._retrieve(s, self.ctx.changeset, None, agent) for s in stages))
        context: dict[str, str] = {}
        for stage, (text, line) in zip(stages, found, strict=True):
            context[stage] = text
            name = self.plan.name_of(stage)
            await self.ctx.think(f"Retrieval for {name}: {line}")
            self._node(
                self._root_node, kind="thought", label=f"retrieval: {name}", thought=line, status="evaluated"
            )
        return context

    async def start_stage(self, state: WorkflowState, stage: str) -> dict[str, Any]:
        attempt = (state.get("attempts") or {}).get(stage, 1)
        self.attempt_of[stage] = attempt
        self.status[stage] = "in_progress"
        name = self.plan.name_of(stage)
        self._open_stage(stage, attempt)
        await self._show_plan()
        await self.ctx.think(f"Stage {name}" + (f", attempt {attempt}" if attempt > 1 else ""))
        return {}

    def _open_stage(self, stage: str, attempt: int, *, resumed: bool = False) -> str:
        name = self.plan.name_of(stage)
        label = f"{name}" + (f" (attempt {attempt})" if attempt > 1 else "")
        label += " (started before the restart)" if resumed else ""
        self.stage_nodes[stage] = self._node(self.last_node, kind="plan", label=label, status="active")
        self.last_node = self.stage_nodes[stage]
        self.notes["stages"][self.last_node] = stage
        return self.stage_nodes[stage]

    def _stage_node(self, stage: str, attempt: int) -> str:
        """The tree node of ``stage``; one whose start ran before a restart gets one now."""
        if stage in self.stage_nodes:
            return self.stage_nodes[stage]
        self.attempt_of[stage] = attempt
        self.status[stage] = "in_progress"
        return self._open_stage(stage, attempt, resumed=True)

    async def run_agent(self, payload: dict[str, Any]) -> dict[str, Any]:
        stage = payload["stage"]
        route = self.plan.routing_table[stage]
        profile = self.catalog.profiles[payload["profile"]]
        base = decode_changeset(payload["changes"]) if payload.get("changes") else self.ctx.changeset
        branch = self.ctx.branch(base)
        context = self.plan.task_context[stage]
        brief = brief_for(
            task=payload["task"],
            stage_name=context.name,
            description=context.description,
            context=payload.get("context", ""),
            failure=payload.get("failure"),
            summaries={self.plan.name_of(k): v for k, v in (payload.get("summaries") or {}).items()},
            attempt=payload.get("attempt", 1),
            guidance=self.guidance,
        )
        read_only = route.read_only or profile.read_only
        if read_only and not profile.read_only:
            profile = profile.model_copy(update={"read_only": True})
        report = await run_agent(
            self.ctx,
            profile,
            branch=branch,
            brief=brief,
            extra_tools=payload.get("tools") or [],
            parent=self._stage_node(stage, payload.get("attempt", 1)),
            max_steps=self.settings.agent_max_steps,
            strategy=self.workflow.retrieval_strategy_config,
        )
        if report.node is not None:
            self.ctx.recorder.keep_state(report.node, branch, self.ctx.branches)
        result = {
            "profile": profile.name,
            "failed": report.failed,
            "summary": report.summary,
            "changes": None if read_only else encode_changeset(branch),
        }
        return {"agent_results": {payload["key"]: result}}

    async def join_stage(self, state: WorkflowState, stage: str) -> dict[str, Any]:
        route = self.plan.routing_table[stage]
        self._stage_node(stage, (state.get("attempts") or {}).get(stage, 1))
        prefix = f"{stage}#{state.get('stage_runs', 0)}/"
        results = [v for k, v in sorted((state.get("agent_results") or {}).items()) if k.startswith(prefix)]
        failures = [bool(r["failed"]) and route.agent_defined for r in results]
        failed = aggregate(failures, route.failure_aggregation)
        summary = "; ".join(f"{r['profile']}: {first_line(r['summary'], 300)}" for r in results)
        details = ""
        base = decode_changeset(state["changes"]) if state.get("changes") else self.ctx.changeset
        merged, conflicts = merge_branches(
            base, [decode_changeset(r["changes"]) for r in results if not r["failed"] and r.get("changes")]
        )
        self.ctx.recorder.keep_state(self.stage_nodes[stage], merged, self.ctx.branches)
        if conflicts:
            summary += (
                f" (kept the first agent's version of {', '.join(conflicts)}: the agents' edits conflicted)"
            )
        if not failed and route.tests_must_pass:
            passed, test_summary, details = await self._tests(merged, stage)
            summary = f"{summary}; tests: {test_summary}" if summary else f"tests: {test_summary}"
            failed = not passed
        update: dict[str, Any] = {}
        if not failed:
            update["changes"] = encode_changeset(merged)
            update["summaries"] = {**(state.get("summaries") or {}), stage: summary}
        memory = self.memory()
        if memory is not None:
            await asyncio.to_thread(
                memory.record,
                self.ctx.task,
                self.plan.workflow,
                self.plan.name_of(stage),
                failed,
                summary + details[-500:],
            )
        return {"failed": failed, "summary": summary, "details": details, "update": update}

    async def _tests(self, changeset: ChangeSet, stage: str) -> tuple[bool, str, str]:
        """(passed, summary, output tail) of the workspace's tests over ``changeset``."""
        command = self.settings.test_command or detect_test_command(self.root)
        node = self._node(self.stage_nodes[stage], kind="evaluation", label="tests")
        if command is None:
            why = "no test command: set [workflows] test_command in .arbor/config.toml"
            self.ctx.recorder.update(node, status="failed", reflection=why)
            return False, why, ""
        if not await self.ctx.permit(f"Run the tests: {command}", command):
            why = f"the test command was not allowed ({command})"
            self.ctx.recorder.update(node, status="failed", reflection=why)
            return False, why, ""
        await self.ctx.think(f"Running {command} in a scratch worktree with the proposed changes")
        run = await run_tests(changeset, command, self.settings.test_timeout_s)
        self.ctx.recorder.update(
            node,
            label=f"tests {'passed' if run.passed else 'failed'}",
            status="solution" if run.passed else "failed",
            observation=run.output[-2000:],
            reflection=run.summary,
        )
        return run.passed, run.summary, "" if run.passed else run.output[-DETAILS_CAP:]

    async def adaptive_retrieval(self, state: WorkflowState) -> dict[str, Any]:
        stage = state["current"]
        failure = state.get("failure") or {}
        base = decode_changeset(state["changes"]) if state.get("changes") else self.ctx.changeset
        text, line = await self._retrieve(
            stage, base, f"{failure.get('summary', '')}\n{failure.get('details', '')}"
        )
        name = self.plan.name_of(stage)
        await self.ctx.think(f"Adaptive retrieval for {name}: {line}")
        self.last_node = self._node(self.last_node, kind="thought", label=f"{ADAPTIVE}: {name}", thought=line)
        upfront = (state.get("context") or {}).get(stage, "")
        enriched = f"{upfront}\n\nMore context after the failure:\n{text}" if text else upfront
        return {"context": {**(state.get("context") or {}), stage: enriched}}

    async def record_route(self, state: WorkflowState, stage: str, decision: dict[str, Any]) -> None:
        failed = decision["failed"]
        node = self.stage_nodes.get(stage)
        if node is not None:
            self.ctx.recorder.update(
                node,
                status="failed" if failed else "solution",
                thought=decision["summary"][:2000] or None,
                reflection=f"{decision['condition']}: {self._target_name(decision['next'])}",
            )
        if decision["next"] == ADAPTIVE or decision["next"] == stage:
            self.status[stage] = "in_progress"
        else:
            self.status[stage] = "failed" if failed else "completed"
            if decision["next"] in self.status and decision["next"] != stage:
                self.status[decision["next"]] = "pending"
        target = self._target_name(decision["next"])
        await self.ctx.think(f"Routing after {decision['name']}: {decision['condition']} → {target}")
        await self._show_plan()

    async def finish(self, state: WorkflowState, outcome: str) -> dict[str, Any]:
        if outcome == "done":
            for stage, status in self.status.items():
                if status == "in_progress":
                    self.status[stage] = "completed"
        await self._show_plan()
        summaries = state.get("summaries") or {}
        lines = [f"Workflow **{self.plan.workflow}** {'finished' if outcome == 'done' else 'was aborted'}."]
        for entry in state.get("log", []):
            mark = "failed" if entry["failed"] else "passed"
            said = first_line(entry["summary"], 240)
            lines.append(f"- {entry['name']} (attempt {entry['attempt']}): {mark} — {said}")
        last = next(
            (summaries[s] for s in reversed(self.plan.order) if summaries.get(s)),
            "",
        )
        changes = decode_changeset(state["changes"]).changed_paths() if state.get("changes") else []
        if changes:
            lines.append(
                f"\nProposed changes to {len(changes)} file(s) wait for your review: {', '.join(changes)}."
            )
        if outcome != "done":
            failure = state.get("failure") or {}
            lines.append(f"\nStopped at {failure.get('stage', '?')}: {failure.get('summary', '')}")
        answer = (
            last + "\n\n" if last and self.plan.routing_table[self.plan.order[-1]].read_only else ""
        ) + "\n".join(lines)
        self.last_node = self._node(
            self.last_node,
            kind="answer",
            label=f"workflow {outcome}",
            thought=answer[:4000],
            status="solution" if outcome == "done" else "failed",
        )
        return {"answer": answer}

    def _target_name(self, target: str) -> str:
        if target in (DONE, ABORT, ADAPTIVE):
            return target
        return self.plan.name_of(target)

    def _node(self, parent: str | None, **fields: Any) -> str:
        return self.ctx.recorder.add(parent or self._root_node, **fields)

    def _begin_tree(self, *, resumed: bool, after: list[dict[str, Any]] | None = None) -> None:
        recorder = self.ctx.recorder
        label = f"workflow {self.plan.workflow}" + (" (resumed)" if resumed else "")
        self._root_node = recorder.add(None, kind="root", label=label, thought=self.ctx.task[:2000])
        decisions = "; ".join(
            f"{self.plan.name_of(k)}: {'include' if d.include else 'skip'} ({d.reason})"
            for k, d in self.plan.decisions.items()
        )
        self.last_node = recorder.add(
            self._root_node,
            kind="plan",
            label="plan: " + " → ".join(self.plan.name_of(s) for s in self.plan.order),
            thought=decisions or None,
            status="evaluated",
        )
        for entry in after or []:
            self.last_node = recorder.add(
                self.last_node,
                kind="plan",
                label=f"{entry['name']} (attempt {entry['attempt']}, before the restart)",
                status="failed" if entry["failed"] else "solution",
                thought=entry["summary"][:2000] or None,
                reflection=f"{entry['condition']}: {self._target_name(entry['next'])}",
            )

    async def _show_plan(self) -> None:
        entries = []
        for stage in self.plan.order:
            name = self.plan.name_of(stage)
            attempt = self.attempt_of.get(stage, 1)
            content = f"{name}" + (f" (attempt {attempt})" if attempt > 1 else "")
            entries.append({"content": content, "status": self.status.get(stage, "pending")})
        await self.ctx.progress({"type": "plan", "entries": entries})


def merge_branches(base: ChangeSet, branches: list[ChangeSet]) -> tuple[ChangeSet, list[str]]:
    """``base`` plus each branch's own edits, in order; a path two branches changed differently keeps the
    first branch's version and is named in the second list."""
    merged = base.child()
    base_bases, base_entries = base.recorded()
    touched: dict[str, Any] = {}
    conflicts: list[str] = []
    for branch in branches:
        bases, entries = branch.recorded()
        for path, entry in entries.items():
            if base_entries.get(path) == entry:
                continue
            if path in touched and touched[path] != entry:
                conflicts.append(path)
                continue
            touched[path] = entry
            for recorded in (path, entry.origin):
                if recorded and recorded in bases and recorded not in base_bases:
                    merged.rebase(recorded, bases[recorded])
            merged.set_entry(path, entry)
    return merged, sorted(set(conflicts))
