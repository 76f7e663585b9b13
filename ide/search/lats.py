"""LATS (Language Agent Tree Search, seed 000): a UCT-guided search over tool-calling trajectories.

One iteration::

    select     UCT descent to an expandable leaf; with ≥ 2 leaves in the beam the selection model picks
    expand     expansion_width candidates at once, each one tool call (run in its own branch change set)
               or a final answer
    evaluate   the evaluation model scores each new node 0–10, joined with real signals: Python syntax of
               the branch's changed files, and the test command's exit status for answers
    backprop   rewards up the tree (UCT visits and values); failed trajectories yield lessons that later
               expansion prompts carry

The run stops at a solution (an answer scoring at least ``solution_threshold``), when no leaf is left to
expand, or at the iteration, time or token limit. The tree is the record: every candidate, score and
lesson is a node or a node field, and the best path is marked whenever the best node changes.

Steering (``ctx.steering``, read at each selection): a node the user pruned is recorded ``pruned`` (its
``steer`` too) and neither it nor anything under it is selected, expanded or made the best again (nor is
its parent expanded again for it); a node the user asked to expand is expanded next, before the selection.
Pruning the root, or every open leaf, ends the run. A continued run (``ctx.fork``) starts with the node
it continues from as its root, on that node's branch, its subtree recorded as explored (kept for UCT,
never the best), and expands that root first; its prompts carry the steps that led there and the hint.

Model calls, in order (what a ``scripted:`` file must hold), per iteration:

1. ``lats.selection`` once, only when the beam holds two or more leaves: ``{"node_id", "reason"}``; never
   when the iteration expands a node the user asked to expand, or a continued run's root (its first).
2. ``lats.expansion`` × ``expansion_width``, with the tools bound, in candidate order. A malformed tool
   call is re-asked once (its repair call comes after every candidate's first call has started).
3. ``lats.evaluation`` × each new node that was not pruned or failed, in node order:
   ``{"score": 0-10, "reflection", "is_solution"}``; a malformed answer's repair follows the first calls.
4. ``lats.backprop`` × each failed trajectory of this iteration (a failed node, an answer under the bar,
   a leaf at the depth limit), in node order: a short plain-text lesson.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel, Field

from ide.changes import ChangeSet
from ide.protocol.tree import ToolAction, TreeNode
from ide.search.base import (
    RunContext,
    RunOutcome,
    StructuredOutputError,
    ask_structured,
    gather_in_order,
    trajectory_text,
)
from ide.search.events import first_line
from ide.search.hints import hint_messages, memory_hint
from ide.search.lats_eval import BACKPROP, EVALUATION, LatsEvaluation, LatsState, plant_fork
from ide.search.uct import UNSELECTABLE, uct_score
from ide.tools import ToolError

__all__ = [
    "EXPANSION",
    "EXPANSION_PROMPT",
    "LESSONS_IN_PROMPT",
    "PHASES",
    "SELECTION",
    "SELECTION_PROMPT",
    "LatsSearch",
    "Selection",
]

SELECTION = "lats.selection"
EXPANSION = "lats.expansion"
PHASES = {"selection": SELECTION, "expansion": EXPANSION, "evaluation": EVALUATION, "backprop": BACKPROP}

LESSONS_IN_PROMPT = 8
"""The most recent lessons an expansion prompt carries."""

EXPANSION_PROMPT = """You are Arbor, a coding agent. You are one branch of a search for the best way to do the
user's task in the workspace at {root}.
Tools: {tools}. Paths are relative to the workspace root. Your edits are proposals in this branch only;
the user reviews the chosen branch before anything is written, and your reads already see your edits.
Take ONE next step: call one tool, or, when the task is done, answer without a tool call: a concise
summary in Markdown of what you found or changed, citing files as path:line.{lessons}"""

SELECTION_PROMPT = """You choose which partial trajectory of a coding agent's tree search to continue.
The candidates are listed best-first by UCT (value = mean evaluator reward 0–1, plus an exploration bonus
for rarely visited nodes). Prefer the candidate most likely to lead to a correct, complete solution."""


class Selection(BaseModel):
    node_id: str = Field(description="id of the chosen candidate, e.g. n7")
    reason: str = Field("", description="one short sentence")


class LatsSearch:
    """Language Agent Tree Search over a :class:`~ide.search.base.RunContext` (see the module docstring)."""

    name = "lats"

    async def run(self, ctx: RunContext) -> RunOutcome:
        """Search until a solution, an exhausted tree or a limit; return the best branch and its answer."""
        return await _LatsRun(ctx).run()


class _LatsRun:
    """One LATS run: the loop of phases over ``ctx.recorder``'s tree, with its evaluation composed in."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.limits = ctx.settings.lats
        self.tree = ctx.recorder.tree
        # Schemas and argument checks do not depend on the branch: one toolbox serves every candidate.
        self.toolbox = ctx.toolbox()
        self.tools = ctx.tools_for()
        if ctx.fork is None:
            root = ctx.recorder.add(None, kind="root", label=first_line(ctx.task) or "task", status="active")
            self.state = LatsState(root=root, branches={root: ctx.changeset})
        else:
            kinds = {name: spec.kind for name, spec in self.toolbox.specs.items()}
            self.state = plant_fork(ctx, ctx.fork, kinds)
        self.evaluation = LatsEvaluation(ctx, self.state)
        self.expansion_model = ctx.model_name(EXPANSION)
        self.hint = ""

    async def run(self) -> RunOutcome:
        ctx, state = self.ctx, self.state
        try:
            self.hint = await memory_hint(ctx)
            await self.evaluation.find_test_command()
            stop_reason = await self._search()
        except asyncio.CancelledError:
            self._close("cancelled")
            raise
        except Exception:
            # ModelError (and anything unexpected): the tree still closes, with the best so far.
            self._close("error")
            raise
        self._update_best()
        if state.root not in state.pruned:
            ctx.recorder.update(state.root, status="evaluated")
        best = state.best or state.root
        figures = self._close(stop_reason)
        node = self.tree.nodes[best]
        branch = state.branches.get(best)
        changed = branch is not None and bool(branch.changed_paths())
        return RunOutcome(
            stop_reason,
            answer=self.evaluation.answer(node),
            changeset=branch if changed else None,
            figures=figures,
        )

    async def _search(self) -> str:
        ctx, limits, state = self.ctx, self.limits, self.state
        if ctx.fork is not None:
            explored = len(state.explored)
            await ctx.think(
                f"Going on from {ctx.fork.node_id} of run {ctx.fork.origin.run_id[:8]} as {state.root}, "
                f"with {explored} explored node{'s' * (explored != 1)} below it kept"
            )
        while True:
            await self._take_prunes()
            if state.root in state.pruned:
                state.stop_note = "you pruned the root"
                return "end_turn"
            asked = await self._asked_expansion()
            top, beam = self._frontier()
            if top is None and asked is None and not state.continuing:
                pruned = state.pruned and self._frontier(steered=False)[0] is not None
                state.stop_note = "every open branch was pruned" if pruned else "every branch was explored"
                return "end_turn"
            if state.iterations >= limits.max_iterations:
                state.stop_note = f"the iteration limit ({limits.max_iterations}) was reached"
                return "max_turn_requests"
            if ctx.elapsed() >= limits.time_limit_s:
                state.stop_note = f"the time limit ({limits.time_limit_s:g} s) was reached"
                return "max_turn_requests"
            if ctx.tokens_used() >= limits.max_tokens:
                state.stop_note = f"the token budget ({limits.max_tokens}) was spent"
                return "max_tokens"
            state.iterations += 1
            if asked is not None:
                selected = await self._take_expansion(asked, "as you asked")
            elif state.continuing:
                selected = await self._take_expansion(state.root, "where this run continues from")
            else:
                assert top is not None
                selected = await self._select(top, beam)
            new = await self._expand(selected)
            state.nodes_per_iteration.append(len(new))
            verdicts = await gather_in_order(self.evaluation.evaluate(node_id) for node_id in new)
            self._update_best()
            await self.evaluation.report(new, verdicts)
            await self.evaluation.backpropagate(new)
            self._update_best()
            if state.best is not None and self.tree.nodes[state.best].status == "solution":
                state.stop_note = "a solution was found"
                return "end_turn"

    def _close(self, stop_reason: str) -> dict[str, Any]:
        """Mark the best path and finish the tree (once) with the run's figures; return the figures."""
        state = self.state
        if self.tree.finished:
            return dict(self.tree.figures)
        if stop_reason in ("cancelled", "error"):
            self._update_best()
        best = state.best or state.root
        best_node = self.tree.nodes[best]
        return self.ctx.finish_tree(
            stop_reason,
            best,
            iterations=state.iterations,
            nodes_per_iteration=list(state.nodes_per_iteration),
            solution_found=any(
                n.status == "solution" and n.id not in state.explored for n in self.tree.nodes.values()
            ),
            best_node=best,
            best_score=best_node.reward_raw,
            reflections=len(state.lessons),
            selection_fallbacks=state.selection_fallbacks,
            phases=self._phases(),
        )

    def _phases(self) -> dict[str, dict[str, int]]:
        usage = self.ctx.usage()
        phases = {}
        for phase, role in PHASES.items():
            used = usage.get(role, {})
            phases[phase] = {
                "calls": int(used.get("calls", 0)),
                "input_tokens": int(used.get("input_tokens", 0)),
                "output_tokens": int(used.get("output_tokens", 0)),
            }
        return phases

    def _frontier(self, *, steered: bool = True) -> tuple[str | None, list[str]]:
        """The UCT descent's leaf and the beam (that leaf first, then other expandable leaves by UCT).

        A leaf is expandable when it is the root or an evaluated action/thought above the depth limit
        with no selectable child (so a node whose candidates all failed is tried again) and a known
        branch. The descent only enters subtrees that still hold an expandable leaf. What the user pruned
        is out (``steered``), and a pruned child still counts as its parent's: it is not expanded again.
        """
        nodes = self.tree.nodes
        pruned = self.state.pruned if steered else set()
        cut = self._cut() if steered else set()
        parents_of_live = {n.parent for n in nodes.values() if n.status not in UNSELECTABLE or n.id in pruned}
        expandable: list[str] = []
        alive: set[str] = set()
        for node in reversed(nodes.values()):  # children come after their parents
            can_expand = (
                node.id not in parents_of_live
                and node.status in ("active", "evaluated")
                and node.kind != "answer"
                and node.depth < self.limits.max_depth
                and node.id in self.state.branches
                and node.id not in cut
            )
            if can_expand:
                expandable.append(node.id)
            if can_expand or node.id in alive:
                alive.add(node.id)
                if node.parent is not None:
                    alive.add(node.parent)
        if self.state.root not in alive:
            return None, []
        current = self.state.root
        c = self.limits.exploration_constant
        while True:
            children = [child for child in self.tree.children(current) if child in alive]
            if not children:
                break
            visits = nodes[current].visits
            scores = {kid: uct_score(nodes[kid].value, nodes[kid].visits, visits, c) for kid in children}
            current = max(children, key=scores.__getitem__)  # max keeps the earliest of equals
        others = sorted(
            (leaf for leaf in reversed(expandable) if leaf != current),
            key=lambda leaf: -self._uct(leaf)[0],
        )
        return current, [current, *others][: self.limits.beam_width]

    def _cut(self) -> set[str]:
        """The nodes the user pruned and every node under them."""
        cut: set[str] = set()
        if self.state.pruned:
            for node in self.tree.nodes.values():  # parents come before their children
                if node.id in self.state.pruned or node.parent in cut:
                    cut.add(node.id)
        return cut

    async def _take_prunes(self) -> None:
        """Record the prunes the user asked for since the last selection: those subtrees are out."""
        steering = self.ctx.steering
        with steering.lock:
            asked = set(steering.pruned) - self.state.pruned
        for node_id in [n for n in self.tree.nodes if n in asked]:  # in tree order
            self.state.pruned.add(node_id)
            self.ctx.recorder.update(node_id, steer="prune", status="pruned")
            await self.ctx.think(f"Pruned {node_id} as you asked: its branch is not explored further")

    async def _asked_expansion(self) -> str | None:
        """The node the user asked to expand next that can be, if any (those that cannot are said)."""
        while (node_id := self.ctx.steering.next_expand(self.tree)) is not None:
            node = self.tree.nodes[node_id]
            why = (
                "it is a final answer"
                if node.kind == "answer"
                else f"it is {node.status}"
                if node.status in UNSELECTABLE
                else f"it is at the depth limit ({self.limits.max_depth})"
                if node.depth >= self.limits.max_depth
                else "its branch's changes are not known"
                if node_id not in self.state.branches
                else None
            )
            if why is None:
                return node_id
            await self.ctx.think(f"Cannot expand {node_id} as you asked: {why}")
        return None

    async def _take_expansion(self, node_id: str, how: str) -> str:
        """Expand ``node_id`` now, without a selection: the node the user asked for (recorded as its
        ``steer``), or a continued run's root first."""
        state = self.state
        if how == "as you asked":
            self.ctx.recorder.update(node_id, steer="expand")
        if node_id == state.root:
            state.continuing = False
        await self.ctx.think(
            f"Iteration {state.iterations}/{self.limits.max_iterations}: expanding {node_id} ({how}); "
            f"{self.limits.expansion_width} candidates"
        )
        return node_id

    def _uct(self, node_id: str) -> tuple[float, float]:
        """(UCT score, exploration part) of a node against its parent's visits; the root scores inf."""
        node = self.tree.nodes[node_id]
        if node.parent is None:
            return float("inf"), 0.0
        parent_visits = self.tree.nodes[node.parent].visits
        score = uct_score(node.value, node.visits, parent_visits, self.limits.exploration_constant)
        return score, score - node.value

    def _describe_uct(self, node_id: str) -> str:
        node = self.tree.nodes[node_id]
        if node.parent is None:
            return "the root"
        score, exploration = self._uct(node_id)
        if node.visits == 0:
            return "unvisited"
        return f"UCT {score:.2f}: value {node.value:.2f} + exploration {exploration:.2f}"

    async def _select(self, top: str, beam: list[str]) -> str:
        """The node to expand: ``top``, or the selection model's pick when the beam has a choice."""
        ctx, state = self.ctx, self.state
        chosen, how = top, "the only candidate"
        if len(beam) >= 2:
            messages = [SystemMessage(SELECTION_PROMPT), HumanMessage(self._selection_brief(beam))]
            try:
                pick, _reply = await ask_structured(ctx.router, SELECTION, messages, Selection)
            except StructuredOutputError:
                pick = None
            picked = pick.node_id.strip() if pick is not None else ""
            if picked in beam:
                chosen = picked
                how = f"by the selection model from {len(beam)} candidates"
                if pick is not None and pick.reason.strip():
                    how += f" ({first_line(pick.reason, 120)})"
            else:
                state.selection_fallbacks += 1
                why = "a malformed answer" if pick is None else f"{picked or 'no id'}, not a candidate"
                how = f"by UCT from {len(beam)} candidates (the selection model gave {why})"
        elif top == state.root and not self.tree.children(top):
            how = "the first step"
        await ctx.think(
            f"Iteration {state.iterations}/{self.limits.max_iterations}: selected {chosen} "
            f"({self._describe_uct(chosen)}) {how}; expanding {self.limits.expansion_width} candidates"
        )
        return chosen

    def _selection_brief(self, beam: list[str]) -> str:
        nodes = self.tree.nodes
        lines = [f"Task:\n{self.evaluation.task()}\n"]
        if self.ctx.fork is not None:
            lines.append(f"Steps before the search's root:\n{trajectory_text(self.ctx.fork.steps())}\n")
        lines.append("Candidates:")
        for node_id in beam:
            node = nodes[node_id]
            path = " → ".join(nodes[n].label for n in self.tree.path_to(node_id)[1:]) or "(start)"
            uct = self._describe_uct(node_id)
            lines.append(f"- {node_id} ({uct}; visits {node.visits}; depth {node.depth}): {path}")
            if node.reflection:
                lines.append(f"  evaluation: {first_line(node.reflection, 200)}")
        return "\n".join(lines)

    def _expansion_messages(self, parent: str) -> list[BaseMessage]:
        """System prompt (with lessons), earlier turns, the task, then the path as tool-calling history."""
        ctx, state = self.ctx, self.state
        lessons = state.lessons[-LESSONS_IN_PROMPT:]
        lesson_text = (
            "\n\nLessons from attempts that failed:\n" + "\n".join(f"- {lesson}" for lesson in lessons)
            if lessons
            else ""
        )
        system = EXPANSION_PROMPT.format(
            root=ctx.changeset.root, tools=", ".join(self.toolbox.specs), lessons=lesson_text
        )
        messages: list[BaseMessage] = [
            SystemMessage(system),
            *hint_messages(self.hint),
            *ctx.history,
            HumanMessage(ctx.task),
        ]
        if ctx.fork is not None:  # the steps that led to the root, and the user's hint
            messages += ctx.fork.guidance()
        for node_id in self.tree.path_to(parent)[1:]:
            step = state.steps.get(node_id)
            if step is not None:
                messages.extend(step)
        return messages

    async def _expand(self, parent: str) -> list[str]:
        """``expansion_width`` candidates under ``parent``, concurrently; their node ids in order made."""
        messages = self._expansion_messages(parent)
        seen: dict[str, str] = {}
        made: list[str] = []
        await gather_in_order(
            self._expand_one(parent, messages, seen, made) for _ in range(self.limits.expansion_width)
        )
        return sorted(made, key=lambda node_id: int(node_id[1:]))

    def _malformed(self, reply: AIMessage) -> str | None:
        """Why the reply's first tool call cannot be run, or None when it can (or there is none)."""
        if reply.invalid_tool_calls:
            bad = reply.invalid_tool_calls[0]
            name = bad.get("name") or "a tool"
            return f"the call of {name} could not be parsed: {bad.get('error') or 'arguments are not JSON'}"
        if reply.tool_calls:
            call = reply.tool_calls[0]
            try:
                self.toolbox.parse(call["name"], call["args"])
            except ToolError as exc:
                return str(exc)
        return None

    async def _expand_one(
        self, parent: str, messages: list[BaseMessage], seen: dict[str, str], made: list[str]
    ) -> None:
        """One candidate: ask for the next step (one repair for a malformed call), record it, run its tool."""
        ctx, state = self.ctx, self.state
        branch = ctx.branch(state.branches[parent])
        started = time.perf_counter()
        reply = await ctx.router.stream(EXPANSION, messages, tools=self.tools)
        tokens = _tokens(reply)
        error = self._malformed(reply)
        if error is not None:
            repair = [
                *messages,
                AIMessage(reply.text),
                HumanMessage(
                    f"That step could not be run: {error}. Take the step again: one tool call with valid "
                    "arguments, or an answer with no tool call."
                ),
            ]
            reply = await ctx.router.stream(EXPANSION, repair, tools=self.tools)
            tokens = (tokens[0] + _tokens(reply)[0], tokens[1] + _tokens(reply)[1])
        fields: dict[str, Any] = {
            "role": EXPANSION,
            "model": self.expansion_model,
            "input_tokens": tokens[0],
            "output_tokens": tokens[1],
            "latency_ms": round((time.perf_counter() - started) * 1000, 1),
            "changeset_id": branch.id,
        }
        reasoning = reply.additional_kwargs.get("reasoning_content")
        thought = reply.text.strip() or (reasoning.strip() if isinstance(reasoning, str) else "") or None
        second_error = self._malformed(reply) if error is not None else None
        if second_error is not None:
            bad = (reply.tool_calls or reply.invalid_tool_calls)[0]
            args = bad.get("args")
            node_id = ctx.recorder.add(
                parent,
                kind="action",
                label=f"{bad.get('name') or 'tool'}: malformed call",
                thought=thought,
                action=ToolAction.of(bad),
                status="failed",
                reflection=f"Malformed tool call, also after one repair: {second_error}",
                **fields,
            )
            self._made(node_id, branch, made)
            return
        if not reply.tool_calls:
            text = reply.text.strip()
            node_id = ctx.recorder.add(
                parent, kind="answer", label=first_line(text) or "(empty answer)", thought=text, **fields
            )
            self._made(node_id, branch, made)
            return
        call = reply.tool_calls[0]
        name, args = call["name"], dict(call["args"])
        key = json.dumps([name, args], sort_keys=True, default=str)
        title = self.toolbox.describe(name, args)[0]
        action = ToolAction.of(call)
        duplicate = seen.get(key)
        if duplicate is not None:
            node_id = ctx.recorder.add(
                parent,
                kind="action",
                label=title,
                thought=thought,
                action=action,
                status="pruned",
                reflection=f"Same tool call as its sibling {duplicate}; not run again.",
                **fields,
            )
            self._made(node_id, branch, made)
            return
        node_id = ctx.recorder.add(
            parent, kind="action", label=title, thought=thought, action=action, **fields
        )
        seen[key] = node_id
        self._made(node_id, branch, made)
        call_id = call.get("id") or f"{node_id}-call"
        outcome = await ctx.call_tool(name, args, branch)
        state.steps[node_id] = (
            AIMessage(reply.content, tool_calls=[{**call, "id": call_id}]),
            ToolMessage(
                outcome.output,
                tool_call_id=call_id,
                name=name,
                status="error" if outcome.failed else "success",
            ),
        )
        ctx.recorder.update(node_id, observation=outcome.output)

    def _made(self, node_id: str, branch: ChangeSet, made: list[str]) -> None:
        self.state.branches[node_id] = branch
        made.append(node_id)

    def _update_best(self) -> None:
        """The solution, else the best-scored answer, else the highest-valued leaf; marked when it changes."""
        nodes = self.tree.nodes
        best: TreeNode | None = None
        out = self._cut() | self.state.explored
        answers = [
            n for n in nodes.values() if n.kind == "answer" and n.reward_raw is not None and n.id not in out
        ]
        solutions = [n for n in answers if n.status == "solution"]
        pool = solutions or [n for n in answers if n.status not in UNSELECTABLE]
        if pool:
            best = max(pool, key=lambda n: n.reward_raw or 0.0)  # max keeps the earliest of equals
        else:
            parents = {n.parent for n in nodes.values() if n.status not in UNSELECTABLE}
            leaves = [
                n
                for n in nodes.values()
                if n.parent is not None
                and n.status not in UNSELECTABLE
                and n.id not in parents
                and n.visits
                and n.id not in out
            ]
            if leaves:
                best = max(leaves, key=lambda n: n.value)
        if best is not None and best.id != self.state.best:
            self.state.best = best.id
            self.ctx.recorder.best_path(best.id)
        elif best is None and self.state.best in out:  # the best so far was pruned: none is left
            self.state.best = None
            self.ctx.recorder.best_path(self.state.root)


def _tokens(reply: AIMessage) -> tuple[int, int]:
    usage = reply.usage_metadata or {}
    return int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
