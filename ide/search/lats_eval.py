"""LATS evaluation and reflection: scoring new nodes (model, syntax, tests), backpropagation and lessons.

:class:`LatsState` is what one run keeps beside its tree; the run (``ide.search.lats``) and its
:class:`LatsEvaluation` share it.
"""

from __future__ import annotations

import ast
import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel, Field

from ide.changes import ChangeSet
from ide.changes.hunks import patch_text, text_hunks
from ide.changes.testrun import detect_test_command, run_tests
from ide.protocol.tree import SearchTree, TreeNode
from ide.search.base import (
    CACHEABLE_KINDS,
    RunContext,
    StructuredOutputError,
    ask_structured,
    gather_in_order,
    trajectory_text,
)
from ide.search.events import cap_text, first_line
from ide.search.steer import Fork, trajectory
from ide.search.uct import UNSELECTABLE, backpropagate, normalise_reward

EVALUATION = "lats.evaluation"
BACKPROP = "lats.backprop"

SYNTAX_CAP = 2.0
"""The highest score a node whose branch holds a Python syntax error can get."""
DIFF_CAP = 4000
"""Bytes of a branch's diff shown to the evaluator."""
TEST_OUTPUT_CAP = 300

EVALUATION_PROMPT = """You score one step of a coding agent's search by how likely its trajectory is to
complete the task correctly: 0 = wrong or useless, 5 = plausible progress, 10 = the task is done correctly.
Judge the changes themselves, not the agent's claims. For a final answer set is_solution to true only when
the answer and the branch's changes fully complete the task. The reflection says in one or two sentences
what is good or wrong."""

REFLECTION_PROMPT = """A coding agent's attempt at a task failed. State one lesson for the next attempts in
one or two sentences: what to do differently, naming the files, functions or tools concerned. Reply with
only the lesson."""


class Evaluation(BaseModel):
    score: float = Field(ge=0, le=10, description="0 to 10")
    reflection: str = Field("", description="one or two sentences")
    is_solution: bool = Field(False, description="true only if the task is fully and correctly done")


@dataclass
class LatsState:
    """The bookkeeping of one run besides the tree: branches, conversations, lessons, counters."""

    root: str
    branches: dict[str, ChangeSet]
    steps: dict[str, tuple[AIMessage, ToolMessage]] = field(default_factory=dict)
    """Per action node: the model's tool call and its observation (the conversation is rebuilt from these)."""
    lessons: list[str] = field(default_factory=list)
    iterations: int = 0
    nodes_per_iteration: list[int] = field(default_factory=list)
    selection_fallbacks: int = 0
    best: str | None = None
    stop_note: str = ""
    syntax_errors: dict[tuple[str, Any], str | None] = field(default_factory=dict)
    explored: set[str] = field(default_factory=set)
    """Nodes a continued run took over from the run it continues (never its best: judged without the hint)."""
    continuing: bool = False
    """A continued run whose root (the node it continues from) is still to be expanded, first."""
    pruned: set[str] = field(default_factory=set)
    """Nodes the user pruned whose prune is recorded: they and their subtrees are out of the search."""


def plant_fork(ctx: RunContext, fork: Fork, tool_kinds: dict[str, str]) -> LatsState:
    """The state of a run that continues from ``fork``: its node as the root, on the fork's branch, and its
    subtree as explored, each node on its recorded branch where the fork carries it (one that only read,
    thought or answered goes on from its parent's); the lessons learnt there kept."""
    root_branch = fork.branch_of(fork.node_id) or ctx.changeset
    ctx.branches.setdefault(root_branch.id, root_branch)
    branches = {fork.node_id: root_branch}
    subtree = fork.subtree()
    for node in subtree[1:]:
        branch = fork.branch_of(node.id)
        parent = branches.get(node.parent or "")
        read_only = node.action is None or tool_kinds.get(node.action.tool) in CACHEABLE_KINDS
        if branch is None and parent is not None and read_only:
            branch = ctx.branch(parent)
        if branch is not None:
            ctx.branches.setdefault(branch.id, branch)
            branches[node.id] = branch
    new_ids = fork.plant(ctx.recorder, {node_id: branch.id for node_id, branch in branches.items()})
    root = new_ids[fork.node_id]
    state = LatsState(root=root, branches={new_ids[old]: branch for old, branch in branches.items()})
    state.continuing = True
    for node in subtree[1:]:
        state.explored.add(new_ids[node.id])
        if node.action is not None:
            call, observation = trajectory([node])
            assert isinstance(call, AIMessage) and isinstance(observation, ToolMessage)
            state.steps[new_ids[node.id]] = (call, observation)
        if node.reflection and "Lesson: " in node.reflection:
            state.lessons.append(node.reflection.rsplit("Lesson: ", 1)[1].strip())
    return state


@dataclass
class Verdict:
    """What the evaluation phase concluded about one node (for the progress line)."""

    node_id: str
    score: float | None
    status: str


class LatsEvaluation:
    """The evaluate and backpropagate phases of one run, over the run's context and its shared state; the
    run (``ide.search.lats``) composes it and drives the loop."""

    def __init__(self, ctx: RunContext, state: LatsState) -> None:
        self.ctx = ctx
        self.state = state
        self.limits = ctx.settings.lats
        self.tree: SearchTree = ctx.recorder.tree
        self.test_command: str | None = None
        """What runs the tests at each answer: ``lats.test_command``, else the one detected."""

    async def find_test_command(self) -> None:
        """Set :attr:`test_command`; a detected one is said as a thought, so the user knows what runs."""
        self.test_command = self.limits.test_command
        if self.test_command:
            return
        root = Path(self.ctx.changeset.root)
        self.test_command = await asyncio.to_thread(detect_test_command, root)
        if self.test_command:
            await self.ctx.think(
                f"Tests: the workspace's test command looks like `{self.test_command}`; it runs at each "
                "answer in a scratch worktree once you allow it (lats.test_command sets another)"
            )

    async def evaluate(self, node_id: str) -> Verdict:
        """Score a new node: the evaluation model, capped by syntax errors, joined with the tests."""
        ctx, limits = self.ctx, self.limits
        node = self.tree.nodes[node_id]
        if node.status in UNSELECTABLE:
            return Verdict(node_id, None, node.status)
        branch = self.state.branches[node_id]
        changed = branch.changed_paths()
        messages = [SystemMessage(EVALUATION_PROMPT), HumanMessage(self._evaluation_brief(node, changed))]
        try:
            verdict, _reply = await ask_structured(ctx.router, EVALUATION, messages, Evaluation)
        except StructuredOutputError as exc:
            ctx.recorder.update(node_id, status="failed", reflection=f"Evaluation failed: {exc}")
            return Verdict(node_id, None, "failed")
        score = verdict.score
        notes = [verdict.reflection.strip()] if verdict.reflection.strip() else []
        passed: bool | None = None
        command = self.test_command
        if command and node.kind == "answer" and changed:
            if await ctx.permit(f"Run the tests while searching: {command}", command, for_the_run=True):
                passed, summary = await self._run_tests(branch, command)
                score = (score + (10.0 if passed else 0.0)) / 2
                notes.append(f"Tests {'passed' if passed else 'failed'} ({summary}).")
            else:
                notes.append(f"Tests not run: running {command} was not allowed.")
        syntax = self._syntax_error(branch, changed)
        if syntax is not None:
            score = min(score, SYNTAX_CAP)
            notes.append(f"Syntax error in {syntax}; score capped at {SYNTAX_CAP:g}.")
        status = "evaluated"
        if node.kind == "answer":
            if score >= limits.solution_threshold and (verdict.is_solution or passed is True):
                status = "solution"
        elif node.depth >= limits.max_depth:
            status = "terminated_early"
        ctx.recorder.update(
            node_id,
            reward_raw=round(score, 3),
            reward=normalise_reward(score),
            reflection="\n".join(notes) or None,
            status=status,
        )
        return Verdict(node_id, score, status)

    def _evaluation_brief(self, node: TreeNode, changed: list[str]) -> str:
        steps = self._steps(node.id)
        branch = self.state.branches[node.id]
        diffs = []
        for rel in changed:
            old, new = branch.diff_texts(rel)
            hunks = text_hunks(rel, (old or "").encode(), (new or "").encode())
            diffs.append(patch_text(rel, hunks).decode("utf-8", errors="replace"))
        diff = cap_text("".join(diffs), DIFF_CAP) if diffs else "(none)"
        last = (
            "The last step is the agent's final answer."
            if node.kind == "answer"
            else "The last step is an intermediate step: score how promising the trajectory is."
        )
        return (
            f"Task:\n{self.task()}\n\nTrajectory:\n{trajectory_text(steps)}\n\n"
            f"Changes proposed in this branch:\n{diff}\n\n{last}"
        )

    def task(self) -> str:
        """The task as prompts give it; in a continued run (whose task is the one it continues) with the
        user's hint."""
        fork = self.ctx.fork
        return self.ctx.task if fork is None else f"{self.ctx.task}\n\n{fork.hint_text}"

    def _syntax_error(self, branch: ChangeSet, changed: list[str]) -> str | None:
        """``path:line: message`` of the first changed Python file that does not parse, else None."""
        for rel in changed:
            if not rel.endswith(".py"):
                continue
            entry = branch.entry(rel)
            if entry is None or entry.data is None:
                continue
            key = (rel, entry)
            if key not in self.state.syntax_errors:
                try:
                    ast.parse(branch.read_text(rel), filename=rel)
                    self.state.syntax_errors[key] = None
                except (SyntaxError, ValueError) as exc:
                    line = getattr(exc, "lineno", None)
                    message = getattr(exc, "msg", None) or str(exc)
                    self.state.syntax_errors[key] = (
                        f"{rel}:{line}: {message}" if line else f"{rel}: {message}"
                    )
            error = self.state.syntax_errors[key]
            if error is not None:
                return error
        return None

    async def _run_tests(self, branch: ChangeSet, command: str) -> tuple[bool, str]:
        """Run the test command in a scratch worktree holding ``branch``; (passed, one-line summary)."""
        run = await run_tests(branch, command, self.limits.test_timeout_s)
        return run.passed, cap_text(run.summary, TEST_OUTPUT_CAP)

    async def report(self, new: list[str], verdicts: list[Verdict]) -> None:
        nodes = self.tree.nodes
        kinds = [nodes[n].kind for n in new]
        statuses = [nodes[n].status for n in new]
        scored = [v for v in verdicts if v.score is not None]
        scores = ", ".join(f"{v.node_id} {v.score:.1f}" for v in scored) or "none"
        best = self.state.best
        best_text = (
            f"{best} ({nodes[best].reward_raw:.1f})" if best and nodes[best].reward_raw is not None else "-"
        )
        await self.ctx.think(
            f"Iteration {self.state.iterations}: {len(new)} new nodes ({kinds.count('action')} actions, "
            f"{kinds.count('answer')} answers, {statuses.count('failed')} failed, "
            f"{statuses.count('pruned')} pruned); scores: {scores}; best so far {best_text}"
        )

    async def backpropagate(self, new: list[str]) -> None:
        """Rewards up the tree for every scored or failed node; lessons from failed trajectories."""
        nodes = self.tree.nodes
        failures: list[tuple[str, str]] = []
        for node_id in new:
            node = nodes[node_id]
            if node.status == "pruned":
                continue
            if node.status == "failed":
                backpropagate(self.ctx.recorder, node_id, 0.0)
                failures.append((node_id, node.reflection or "the step failed"))
                continue
            if node.reward is None:
                continue
            backpropagate(self.ctx.recorder, node_id, node.reward)
            if node.kind == "answer" and node.status != "solution":
                failures.append(
                    (
                        node_id,
                        f"its final answer scored {node.reward_raw:.1f}/10, below the bar of "
                        f"{self.limits.solution_threshold:g}: {node.reflection or 'no reason given'}",
                    )
                )
            elif node.status == "terminated_early":
                failures.append((node_id, f"it reached the depth limit of {self.limits.max_depth} steps"))
        lessons = await gather_in_order(self._lesson(node_id, why) for node_id, why in failures)
        learnt = 0
        for (node_id, _why), lesson in zip(failures, lessons, strict=True):
            if not lesson:
                continue
            reflection = nodes[node_id].reflection
            self.ctx.recorder.update(
                node_id, reflection=f"{reflection}\nLesson: {lesson}" if reflection else f"Lesson: {lesson}"
            )
            self.state.lessons.append(lesson)
            learnt += 1
        await self.ctx.think(
            f"Iteration {self.state.iterations}: backpropagated "
            f"{sum(1 for n in new if nodes[n].status != 'pruned' and nodes[n].visits)} rewards; "
            f"{learnt} new lessons ({len(self.state.lessons)} in all)"
        )

    async def _lesson(self, node_id: str, why: str) -> str:
        steps = self._steps(node_id)
        messages: list[BaseMessage] = [
            SystemMessage(REFLECTION_PROMPT),
            HumanMessage(
                f"Task:\n{self.task()}\n\nAttempt:\n{trajectory_text(steps)}\n\nWhy it failed: {why}"
            ),
        ]
        reply = await self.ctx.router.stream(BACKPROP, messages)
        return cap_text(" ".join(reply.text.split()), 500)

    def answer(self, node: TreeNode) -> str:
        """The run's answer from its best node: an answer's text, else why it stopped and the best path."""
        state, limits = self.state, self.limits
        if node.kind == "answer":
            text = node.thought or node.label
            if node.status != "solution" and node.reward_raw is not None:
                text += (
                    f"\n\n(No answer met the bar of {limits.solution_threshold:g}/10; this, the best, "
                    f"scored {node.reward_raw:.1f}. LATS stopped: {state.stop_note}.)"
                )
            return text
        lines = [
            f"LATS stopped after {state.iterations} iteration{'s' if state.iterations != 1 else ''} "
            f"without a solution: {state.stop_note}."
        ]
        path = self.tree.path_to(node.id)[1:]
        if path:
            lines.append("\nBest trajectory:")
            for number, node_id in enumerate(path, start=1):
                step = self.tree.nodes[node_id]
                score = f" (score {step.reward_raw:.1f}/10)" if step.reward_raw is not None else ""
                lines.append(f"{number}. {step.label}{score}")
        if state.lessons:
            lines.append("\nLessons learnt:")
            lines.extend(f"- {lesson}" for lesson in state.lessons)
        return "\n".join(lines)

    def _steps(self, node_id: str) -> list[tuple[str, str]]:
        """(label, text) of each step from the root's first child down to ``node_id``, for prompts; in a
        continued run, after the steps that led to its root."""
        nodes = self.tree.nodes
        before = self.ctx.fork.steps() if self.ctx.fork is not None else []
        return [*before, *((nodes[i].label, _step_text(nodes[i])) for i in self.tree.path_to(node_id)[1:])]


def _step_text(node: TreeNode) -> str:
    parts = []
    if node.thought and node.kind != "answer":
        parts.append(cap_text(node.thought, 300))
    if node.action is not None:
        parts.append(f"{node.action.tool}({json.dumps(node.action.args, default=str)[:300]})")
    if node.observation:
        parts.append("→ " + cap_text(node.observation, 600))
    if node.kind == "answer" and node.thought:
        parts.append("answer: " + cap_text(node.thought, 1500))
    if node.status in ("failed", "pruned") and node.reflection:
        parts.append(f"[{node.status}: {first_line(node.reflection, 200)}]")
    return " ".join(parts) or node.label
