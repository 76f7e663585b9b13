"""The ``workflow`` session mode: orchestrator → plan → workflow graph, as an architecture a session runs.

:class:`WorkflowMode` runs on a :class:`~ide.search.base.RunContext` like LATS or ToT do: it loads the
workflows (shipped, user, workspace), lets the orchestrator model pick one (or takes the user's pick)
and decide the optional stages, assembles the plan, says what it chose and why, and runs the plan with
:class:`~ide.workflows.runner.WorkflowRun`. :class:`ActiveRun` is what the session store keeps about a
run while it goes, so a backend killed mid-run can offer ``/resume``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ide.search.base import RunContext, RunOutcome
from ide.search.steer import lineage
from ide.workflows.fork import StageStart, guidance_text, stage_start
from ide.workflows.loader import Catalog, load_catalog
from ide.workflows.orchestrator import select_workflow
from ide.workflows.plan import ExecutionPlan, assemble_plan
from ide.workflows.runner import WorkflowRun

AUTO = "auto"


class ActiveRun(BaseModel):
    """A workflow run as the session store keeps it: enough to resume it after a restart."""

    run_id: str
    workflow: str
    task: str
    plan: dict[str, Any]
    status: str = "running"
    """running (or killed while running), cancelled, finished."""

    @property
    def resumable(self) -> bool:
        return self.status in ("running", "cancelled")


Remember = Callable[[ActiveRun], Awaitable[None] | None]


class WorkflowMode:
    """One prompt turn in the workflow mode (see the module docstring)."""

    name = "workflow"

    def __init__(
        self,
        *,
        chosen: str | None = None,
        remember: Remember | None = None,
        resume: ActiveRun | None = None,
        catalog: Catalog | None = None,
    ) -> None:
        self.chosen = None if chosen in (None, AUTO) else chosen
        self.remember = remember
        self.resume_run = resume
        self.catalog = catalog

    async def _remember(self, active: ActiveRun) -> None:
        if self.remember is not None:
            result = self.remember(active)
            if result is not None:
                await result

    async def run(self, ctx: RunContext) -> RunOutcome:
        catalog = self.catalog or load_catalog(Path(ctx.changeset.root))
        for problem in catalog.problems:
            await ctx.think(f"Workflow file skipped: {problem}")
        if not catalog.workflows:
            return RunOutcome(
                "end_turn", "No usable workflow was found; run `arbor workflows list` to see why."
            )
        if self.resume_run is not None:
            return await self._resume(ctx, catalog, self.resume_run)
        guidance = ""
        if ctx.fork is not None:
            fork = ctx.fork
            guidance = guidance_text(lineage(fork.tree, fork.node_id), fork.hint, fork.lead())
            start = stage_start(fork.tree, fork.node_id, fork.notes)
            if start is not None and start.workflow in catalog.workflows:
                return await self._continue(ctx, catalog, start, guidance)
            await ctx.think(
                "The workflow stage of that node is not known: the workflow starts from its beginning, with "
                "the node's trajectory and your hint as context"
            )
        if self.chosen is not None and self.chosen not in catalog.workflows:
            known = ", ".join(sorted(catalog.workflows))
            return RunOutcome(
                "end_turn", f"There is no workflow {self.chosen!r}. The workflows are: {known}."
            )
        selection = await select_workflow(ctx.router, ctx.task, catalog.workflows, chosen=self.chosen)
        plan = assemble_plan(
            selection.workflow,
            selection.decisions,
            default_budget=ctx.settings.workflows.default_token_budget,
        )
        who = {"user": "You chose", "fallback": "Fallback chose", "orchestrator": "The orchestrator chose"}
        await ctx.think(f"{who[selection.chosen_by]} the workflow {plan.workflow}: {selection.reason}")
        for stage, decision in plan.decisions.items():
            verb = "including" if decision.include else "skipping"
            await ctx.think(f"Optional stage {plan.name_of(stage)}: {verb} — {decision.reason}")
        run = WorkflowRun(ctx, catalog, selection.workflow, plan, guidance=guidance)
        active = ActiveRun(
            run_id=run.run_id, workflow=plan.workflow, task=ctx.task, plan=plan.model_dump(mode="json")
        )
        return await self._watch(run, active, run.run())

    async def _continue(
        self, ctx: RunContext, catalog: Catalog, start: StageStart, guidance: str
    ) -> RunOutcome:
        """Run the workflow again from the stage a node belonged to (ide.workflows.fork), on the node's
        changes, the stages before it done."""
        plan = start.plan.model_copy(update={"entry": start.stage})
        await ctx.think(f"Continuing the workflow {plan.workflow} from its stage {plan.name_of(start.stage)}")
        run = WorkflowRun(ctx, catalog, catalog.workflows[start.workflow], plan, guidance=guidance)
        active = ActiveRun(
            run_id=run.run_id, workflow=plan.workflow, task=ctx.task, plan=plan.model_dump(mode="json")
        )
        return await self._watch(run, active, run.run(summaries=start.summaries))

    async def _resume(self, ctx: RunContext, catalog: Catalog, active: ActiveRun) -> RunOutcome:
        if active.workflow not in catalog.workflows:
            return RunOutcome("end_turn", f"The workflow {active.workflow} of the interrupted run is gone.")
        plan = ExecutionPlan.model_validate(active.plan)
        await ctx.think(f"Resuming the workflow {plan.workflow} from its last finished step")
        run = WorkflowRun(
            ctx,
            catalog,
            catalog.workflows[active.workflow],
            plan,
            run_id=active.run_id,
        )
        return await self._watch(run, active, run.resume())

    async def _watch(self, run: WorkflowRun, active: ActiveRun, work: Awaitable[RunOutcome]) -> RunOutcome:
        """Keep the store's record of the run current: running, then finished or cancelled."""
        await self._remember(active.model_copy(update={"status": "running"}))
        try:
            outcome = await work
        except BaseException:
            await self._remember(active.model_copy(update={"status": "cancelled"}))
            raise
        await self._remember(active.model_copy(update={"status": "finished"}))
        return outcome
