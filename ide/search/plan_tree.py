"""The search tree of a plan / execute / replan run: plan, step, review, action and answer nodes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage

from ide.protocol.tree import ToolAction
from ide.search.base import RunContext
from ide.search.events import first_line
from ide.search.plan_prompts import EXECUTOR, PLANNER, REPLANNER, numbered


class PlanTree:
    """Records a plan/execute/replan run as a search tree (see the module docstring for its shape).

    ``phase`` is the node the running agent's model calls are charged to and its tool calls hang under:
    the plan node while planning, the step node while executing, the review node while replanning.
    """

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.recorder = ctx.recorder
        self.tip = ""
        self.root = self._add(
            None, kind="root", label=first_line(ctx.task) or "task", thought=ctx.task, status="active"
        )
        self.plan: str | None = None
        self.phase = self.root
        self.queued: list[str] = []
        """Step nodes of the queued tasks, in queue order."""
        self.tasks_run = 0
        self.tasks_failed = 0
        self.replans = 0

    def _add(self, parent: str | None, **fields: Any) -> str:
        self.tip = self.recorder.add(parent, **fields)
        return self.tip

    def keep(self, node: str) -> None:
        """Keep the run's change set as it stands now as the state after ``node`` (a later run may continue
        from it): at each tool call's end, each task's start and end, each review and the answer."""
        self.recorder.keep_state(node, self.ctx.changeset, self.ctx.branches)

    def _model_fields(self, role: str) -> dict[str, Any]:
        return {"role": role, "model": self.ctx.model_name(role)}

    def begin_plan(self) -> None:
        self.plan = self.phase = self._add(
            self.root, kind="plan", label="planning", status="active", **self._model_fields(PLANNER)
        )

    def begin_review(self) -> None:
        self.phase = self._add(
            self.plan or self.root,
            kind="evaluation",
            label="reviewing progress",
            status="active",
            **self._model_fields(REPLANNER),
        )
        self.keep(self.phase)

    def set_plan(self, tasks: Sequence[str]) -> None:
        """The phase node becomes the current plan; its tasks are queued as steps, earlier ones pruned."""
        for step in self.queued:
            self.recorder.update(step, status="pruned")
        self.adopt_plan(tasks)
        self.queued = [
            self._add(
                self.phase, kind="step", label=first_line(task), thought=task, **self._model_fields(EXECUTOR)
            )
            for task in tasks
        ]

    def add_subtask(self, title: str, detail: str = "") -> None:
        """A subtask the planner just made (create_subtask): a step node under the plan, queued at once."""
        thought = f"{title}\n\n{detail}" if detail else title
        fields = self._model_fields(EXECUTOR)
        self.queued.append(
            self._add(self.phase, kind="step", label=first_line(title), thought=thought, **fields)
        )

    def adopt_plan(self, tasks: Sequence[str]) -> None:
        """The phase node becomes the current plan of ``tasks`` (the steps already queued stay)."""
        node = self.phase
        if self.plan is not None and self.plan != node:
            self.recorder.update(self.plan, status="evaluated")
        self.recorder.update(
            node,
            kind="plan",
            label=f"plan: {len(tasks)} task{'s' * (len(tasks) != 1)}",
            thought=numbered(tasks),
        )
        self.plan = node

    def start_step(self) -> None:
        self.phase = self.queued.pop(0)
        self.recorder.update(self.phase, status="active")
        self.keep(self.phase)

    def end_step(self, ok: bool, result: str, *, how: str = "") -> None:
        """The running step ends done (evaluated) or failed; ``how`` says by what (attempt_completion)."""
        self.tasks_run += 1
        self.tasks_failed += not ok
        changes: dict[str, Any] = {"status": "evaluated" if ok else "failed", "reflection": result}
        if how:
            node = self.recorder.tree.nodes[self.phase]
            changes["observation"] = f"{how}: {'done' if ok else 'failed'}"
            changes["label"] = f"{node.label} · {'done' if ok else 'failed'}"
        self.recorder.update(self.phase, **changes)
        self.keep(self.phase)

    def end_phase(self, status: str, label: str | None = None, reflection: str | None = None) -> None:
        changes: dict[str, Any] = {"status": status}
        if label is not None:
            changes["label"] = label
        if reflection is not None:
            changes["reflection"] = reflection
        self.recorder.update(self.phase, **changes)

    def charge(self, reply: AIMessage, latency_ms: float) -> None:
        """Add one model call's tokens and latency to the phase node."""
        node = self.recorder.tree.nodes[self.phase]
        usage = reply.usage_metadata or {}
        self.recorder.update(
            self.phase,
            input_tokens=node.input_tokens + usage.get("input_tokens", 0),
            output_tokens=node.output_tokens + usage.get("output_tokens", 0),
            latency_ms=round(node.latency_ms + latency_ms, 1),
        )

    def start_action(self, call: dict[str, Any], *, read_only: bool, title: str | None = None) -> str:
        """A tool call of the running agent, under its phase node; ``title`` for the plan's own tools."""
        if title is None:
            title = self.ctx.toolbox(read_only=read_only).describe(call["name"], call["args"])[0]
        return self._add(self.phase, kind="action", label=title, action=ToolAction.of(call), status="active")

    def end_action(self, node: str, observation: str, failed: bool, label: str | None = None) -> None:
        """The call's result; ``label`` replaces the title (a command's label gains its exit status)."""
        changes: dict[str, Any] = {"observation": observation, "status": "failed" if failed else "evaluated"}
        if label is not None:
            changes["label"] = label
        self.recorder.update(node, **changes)
        self.keep(node)

    def answer(self, text: str, *, solution: bool) -> str:
        node = self._add(
            self.phase,
            kind="answer",
            label=first_line(text) or "answer",
            thought=text,
            status="solution" if solution else "terminated_early",
        )
        self.keep(node)
        return node

    def close(self, status: str) -> None:
        """Every node still active ends with ``status`` (evaluated at the end, terminated_early on cancel)."""
        with self.recorder.lock:
            active = [n.id for n in self.recorder.tree.nodes.values() if n.status == "active"]
            for node in active:
                self.recorder.update(node, status=status)
