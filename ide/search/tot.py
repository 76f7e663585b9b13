"""Tree of Thoughts (seed 004): a coordinator growing a tree of thoughts with five specialist agents.

    root ─ planner → strategies (depth 1)
    loop:  researcher (read-only tools) → analyzer + critic → coordinator keeps some active
           ─(active nodes, limits left)→ planner → next thoughts (depth + 1) → loop
           └─(no active nodes, or a limit)→ synthesizer: the answer from every node scoring
             ≥ ``tot.score_threshold`` (else the ``tot.top_n`` best)

Every proposed thought passes :func:`validate_thought` (a title, not a sibling's duplicate, within
``tot.max_depth`` and ``tot.max_nodes``, which counts the root and thought nodes) before it becomes a
``thought`` node. A node's findings go in its ``observation``, the analysis and critique in its
``reflection``, the mean of the two scores in ``reward_raw`` (``reward`` = that / 10), and its tokens are
those its researcher, analyzer and critic spent (every role's totals are in the figures' ``roles``).
Statuses: ``generated`` → ``evaluated`` → ``active`` (the pool the planner expands next; ``evaluated``
again once expanded) or ``terminated_early`` (dropped by the coordinator, or recommended for termination
by the critic where no coordinator call is made); ``failed`` when an agent's JSON stayed malformed after
one repair (the reason in ``reflection``). A planner answer that stays malformed is recorded as a
``failed`` thought under the node it was expanding, which keeps its own evaluation. Research tool calls
are ``action`` children of their thought. The answer is a ``synthesis`` node under the root, at the end
of the best path.

Model calls, in order (what a ``scripted:`` file must hold). Calls of one phase run concurrently and
take script lines in the order they start, which is the order listed; a malformed JSON answer is
repaired once, after all first answers of its phase, in the same order.

1. ``tot.planner``: ``{"thoughts": [{"title", "detail"}, ...]}``, the initial strategies (1 to
   ``tot.max_thoughts``; more are cut).
2. For each depth, with the new nodes N1, N2, … in node order:

   a. ``tot.researcher`` in lockstep rounds, at most three: round 1 is N1, N2, … each offered
      read_file, list_dir and grep; round 2 is the nodes whose round-1 reply called tools (after the
      tools ran), again with tools; round 3 the nodes that called tools in round 2, with no tools, told
      to write their findings. A reply without tool calls is that node's findings.
   b. ``tot.analyzer`` N1, ``tot.critic`` N1, ``tot.analyzer`` N2, ``tot.critic`` N2, … (``{"score",
      "analysis"}`` and ``{"score", "critique", "terminate"}``, scores 0–10), then repairs.
   c. ``tot.coordinator`` ``{"continue_ids": [...], "reason"}`` over the nodes evaluated — only when
      some could still be expanded (depth < ``tot.max_depth``, node budget and time left); otherwise
      there is no call and the critic's recommendations decide. Malformed after its repair: nodes not
      recommended for termination are kept.
   d. ``tot.planner`` for each node the user asked to expand (in the order asked), then each kept node
      in node order: its next thoughts (same JSON as 1), then repairs.

3. ``tot.synthesizer``: the answer as plain text, streamed to the user (no call when no node was
   evaluated: the answer then says why).

Steering (``ctx.steering``, read before each depth's research, before the coordinator and before the
planner): a node the user pruned is recorded ``pruned`` (its ``steer`` too); neither it nor anything
under it is researched, kept, expanded or synthesised from. A thought (or the root) the user asked to
expand goes to the planner next, before the coordinator's picks, within the depth and node limits
(recorded as its ``steer``). Pruning every open thought ends the exploration (the synthesis draws on what
is left); pruning the root ends the run with a plain note and no synthesis. A continued run
(``ctx.fork``) starts with the node it continues from as its root, its subtree recorded as explored (its
thoughts kept with their findings and scores: siblings the planner must not repeat, and material for the
synthesis), reads on that node's branch (the run's change set), and asks the planner first for the next
thoughts from there; every prompt carries the steps that led to the root and the user's hint.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

from ide.changes import ChangeSet
from ide.search.base import RunContext, RunOutcome, StructuredOutputError, ask_structured
from ide.search.events import first_line
from ide.search.tot_agents import (
    Evaluator,
    Planner,
    Researcher,
    Synthesizer,
    TotAgent,
    TotState,
    plant_fork,
)
from ide.search.tot_prompts import COORDINATOR, COORDINATOR_PROMPT, ContinueDecision
from ide.search.uct import UNSELECTABLE

__all__ = ["TotSearch"]


class TotSearch:
    """Tree of Thoughts: a coordinator with planner, researcher, analyzer, critic and synthesizer agents."""

    name = "tot"

    async def run(self, ctx: RunContext) -> RunOutcome:
        """Explore the task as a tree of thoughts and synthesise the answer from the best nodes.

        Nothing is edited (the outcome's change set is None); the answer is streamed to the user as it is
        written. On cancellation the tree is closed at the best-scored node so far and ``CancelledError``
        propagates; a model error closes it with stop reason ``error`` and propagates.
        """
        run = _TotRun(ctx)
        try:
            return await run.explore_and_answer()
        except asyncio.CancelledError:
            run.close_unfinished()
            if not ctx.recorder.tree.finished:
                ctx.finish_tree("cancelled", run.best_scored(), **run.figures())
            raise
        except Exception:
            run.close_unfinished()
            if not ctx.recorder.tree.finished:
                ctx.finish_tree("error", run.best_scored(), **run.figures())
            raise


class Coordinator(TotAgent):
    """The coordinator: which evaluated thoughts stay active, within the run's limits."""

    async def select(self, nodes: list[str], depth: int) -> list[str]:
        """Which evaluated nodes of this depth stay active; the others end terminated early or evaluated."""
        candidates = [node for node in nodes if self.state.thoughts[node].score is not None]
        if not candidates:
            return []
        limit = self.limit_reached(depth)
        if limit is not None:
            # Nothing more can be expanded: no coordinator call; the critic's recommendations stand.
            self.state.stopped_by = limit
            for node in candidates:
                if self.critique_says_stop(node):
                    self.recorder.update(node, status="terminated_early")
            await self.ctx.think(f"Stopping at depth {depth}: {self.limit_text(limit)}.")
            return []
        keep, reason = await self.ask_coordinator(candidates)
        for node in candidates:
            self.recorder.update(node, status="active" if node in keep else "terminated_early")
        kept = [node for node in candidates if node in keep]
        await self.ctx.think(f"Coordinator keeps {', '.join(kept) or 'none'} ({reason})")
        return kept

    def critique_says_stop(self, node: str) -> bool:
        critique = self.state.thoughts[node].critique
        return critique is not None and critique.terminate

    def limit_text(self, limit: str) -> str:
        return {
            "depth": f"tot.max_depth {self.settings.max_depth} reached",
            "nodes": f"tot.max_nodes {self.settings.max_nodes} reached",
            "time": f"tot.time_limit_s {self.settings.time_limit_s:g} s reached",
        }[limit]

    def limit_reached(self, depth: int) -> str | None:
        """Which limit stops the exploration after evaluating ``depth``: depth, nodes, time, or None."""
        if depth >= self.settings.max_depth:
            return "depth"
        if 1 + len(self.state.thoughts) >= self.settings.max_nodes:
            return "nodes"
        if self.ctx.elapsed() >= self.settings.time_limit_s:
            return "time"
        return None

    async def ask_coordinator(self, candidates: list[str]) -> tuple[set[str], str]:
        """The coordinator's choice among ``candidates``, or the fallback rule when its JSON is unusable."""
        lines = []
        for node in candidates:
            thought = self.state.thoughts[node]
            assert thought.analysis is not None and thought.critique is not None
            lines.append(
                f"- {node} (depth {thought.depth}) {thought.title}: analyzer {thought.analysis.score:g}/10, "
                f"critic {thought.critique.score:g}/10, terminate recommended: "
                f"{'yes' if thought.critique.terminate else 'no'}. "
                f"Findings: {' '.join(thought.findings.split())[:300]}"
            )
        prompt = f"{self.task_text()}\n\nEvaluated thoughts:\n" + "\n".join(lines)
        try:
            decision, _reply = await ask_structured(
                self.ctx.router,
                COORDINATOR,
                [SystemMessage(COORDINATOR_PROMPT), HumanMessage(prompt)],
                ContinueDecision,
            )
        except StructuredOutputError as exc:
            self.state.coordinator_fallbacks += 1
            self.state.notes.append(f"coordinator fallback: {exc}")
            keep = {node for node in candidates if not self.critique_says_stop(node)}
            return keep, f"its answer was unusable, so keeping those not recommended for termination: {exc}"
        unknown = [i for i in decision.continue_ids if i not in candidates]
        if unknown:
            self.state.notes.append(f"coordinator named unknown nodes {', '.join(unknown)}")
        keep = {i for i in decision.continue_ids if i in candidates}
        return keep, decision.reason.strip() or "no reason given"


class _TotRun:
    """One Tree-of-Thoughts run over one RunContext: the agents composed over one shared state, the loop
    of phases, and the figures."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.recorder = ctx.recorder
        if ctx.fork is None:
            root = self.recorder.add(
                None, kind="root", label=first_line(ctx.task) or "task", thought=ctx.task, status="active"
            )
            self.state = TotState(tree=self.recorder.tree, root=root)
        else:
            self.state = plant_fork(ctx, ctx.fork)
        self.planner = Planner(ctx, self.state)
        self.researcher = Researcher(ctx, self.state)
        self.evaluator = Evaluator(ctx, self.state)
        self.coordinator = Coordinator(ctx, self.state)
        self.synthesizer = Synthesizer(ctx, self.state)

    async def explore_and_answer(self) -> RunOutcome:
        state = self.state
        if self.ctx.fork is not None:
            await self.ctx.think(
                f"Going on from {self.ctx.fork.node_id} of run {self.ctx.fork.origin.run_id[:8]} as "
                f"{state.root}, with {len(state.explored)} explored thought(s) below it kept"
            )
        new = await self.planner.initial_thoughts()
        while True:
            new = await self.steered(new)
            if not new:
                break
            depth = max(state.thoughts[node].depth for node in new)
            await self.ctx.think(f"Depth {depth}: {len(new)} thought{'s' * (len(new) != 1)}; evaluating…")
            await self.researcher.research(new)
            await self.evaluator.evaluate(new)
            pool = await self.coordinator.select(await self.steered(new), depth)
            state.active_per_depth.append(len(pool))
            pool = await self.steered(pool, asked=True)
            if not pool:
                break
            new = await self.planner.expand(pool)
        if state.root in state.pruned:
            return await self.stop_pruned()
        for node in self.recorder.tree.nodes.values():
            if node.status == "active" and node.id != state.root:
                self.recorder.update(node.id, status="evaluated")
        self.recorder.update(state.root, status="evaluated")
        answer, synthesis = await self.synthesizer.synthesise()
        figures = self.ctx.finish_tree("end_turn", synthesis, **self.figures())
        return RunOutcome("end_turn", answer=answer, changeset=self.changes(), figures=figures, answered=True)

    async def steered(self, nodes: list[str], *, asked: bool = False) -> list[str]:
        """``nodes`` less what the user pruned (the prunes recorded now); with ``asked``, the nodes the user
        asked to expand first. Pruning every open node, or the root, ends the exploration."""
        state, steering = self.state, self.ctx.steering
        with steering.lock:
            pruned = set(steering.pruned) - state.pruned
        for node in [n for n in self.recorder.tree.nodes if n in pruned]:  # in tree order
            state.pruned.add(node)
            self.recorder.update(node, steer="prune", status="pruned")
            await self.ctx.think(f"Pruned {node} as you asked: it is not explored further")
        out = state.out()
        if state.root in out:
            return []
        kept = [node for node in nodes if node not in out]
        if asked:
            first: list[str] = []
            while (node := steering.next_expand(self.recorder.tree)) is not None:
                why = self.cannot_expand(node)
                if why is not None:
                    await self.ctx.think(f"Cannot expand {node} as you asked: {why}")
                elif node not in first:
                    self.recorder.update(node, steer="expand")
                    first.append(node)
            if first:
                await self.ctx.think(f"Expanding {', '.join(first)} as you asked")
            kept = [*first, *(node for node in kept if node not in first)]
        if nodes and not kept and out:
            state.stopped_by = "pruned"
            await self.ctx.think("Stopping: every open thought was pruned.")
        return kept

    def cannot_expand(self, node: str) -> str | None:
        """Why the planner cannot expand ``node`` now (the user asked), or None when it can."""
        record = self.recorder.tree.nodes[node]
        thought = self.state.thoughts.get(node)
        if node != self.state.root and thought is None:
            return "it is not a thought the planner can go on from"
        if node != self.state.root and record.status in UNSELECTABLE:
            return f"it is {record.status}"
        limit = self.coordinator.limit_reached(record.depth)
        return None if limit is None else self.coordinator.limit_text(limit)

    async def stop_pruned(self) -> RunOutcome:
        """The user pruned the root: the run ends with a plain note, no synthesis."""
        self.state.stopped_by = "pruned"
        answer = "Tree of Thoughts stopped: you pruned the root, so nothing is explored further."
        await self.ctx.say(answer)
        self.close_unfinished()
        figures = self.ctx.finish_tree("end_turn", self.state.root, **self.figures())
        return RunOutcome("end_turn", answer=answer, changeset=self.changes(), figures=figures, answered=True)

    def changes(self) -> ChangeSet | None:
        """A continued run's branch when it holds changes (the run reads, never edits), else None."""
        changeset = self.state.changeset
        return changeset if changeset is not None and changeset.changed_paths() else None

    def figures(self) -> dict[str, Any]:
        """The run's own figures (``RunContext.figures`` adds wall time, tokens and nodes)."""
        state, usage = self.state, self.ctx.usage()
        return {
            "depth_reached": max((t.depth for t in state.thoughts.values()), default=0),
            "thoughts": len(state.thoughts),
            "invalid_thoughts": state.invalid,
            "thoughts_cut": state.cut,
            "failed_nodes": state.failed,
            "coordinator_fallbacks": state.coordinator_fallbacks,
            "active_per_depth": list(state.active_per_depth),
            "stopped_by": state.stopped_by,
            "synthesis": dict(state.synthesis),
            "roles": {
                role: {"calls": int(u["calls"]), "tokens": int(u["input_tokens"] + u["output_tokens"])}
                for role, u in usage.items()
            },
            "notes": list(state.notes),
        }

    def best_scored(self) -> str:
        """The thought with the highest score so far (the first of equals), else the root."""
        out = self.state.out()
        scored = [t for t in self.state.thoughts.values() if t.score is not None and t.id not in out]
        return max(scored, key=lambda t: t.score or 0.0).id if scored else self.state.root

    def close_unfinished(self) -> None:
        """On cancellation or error: nodes still waiting or active end as terminated early."""
        with self.recorder.lock:
            if self.recorder.tree.finished:
                return
            for node in list(self.recorder.tree.nodes.values()):
                if node.status in ("active", "generated"):
                    self.recorder.update(node.id, status="terminated_early")
