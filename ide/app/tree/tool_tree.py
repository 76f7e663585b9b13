"""A search tree from a plain ACP session's events (:mod:`ide.client.events`), Qt-free: an agent that sends
no ``_arbor/tree`` events (Claude Code, Gemini CLI, goose …) still gets one run per turn — a node per tool
call (title, kind, status, raw input and output) and its plan's steps — as
:class:`~ide.protocol.tree.TreeEvent` records."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ide.client.events import PlanEntry, SessionEvent, ToolCallEvent
    from ide.protocol.tree import NodeKind, NodeStatus, ToolAction, TreeEvent, TreeNode


STATUSES: dict[str, NodeStatus] = {
    "pending": "generated",
    "in_progress": "active",
    "completed": "evaluated",
    "failed": "failed",
}
"""ACP tool-call and plan-entry statuses as node statuses."""
ROOT = "turn"
PLAN = "plan"


def _text(value: Any) -> str | None:
    """A raw output (or content) as capped text for the node's observation."""
    import json

    from ide.protocol.tree import OBSERVATION_CAP

    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    data = text.encode("utf-8")
    return text if len(data) <= OBSERVATION_CAP else data[:OBSERVATION_CAP].decode("utf-8", "ignore") + "…"


def _content_text(content: Any) -> str | None:
    """The text items of a tool call's ACP content (diffs are shown by the review, not here)."""
    parts = []
    for item in content or []:
        inner = getattr(item, "content", None)
        text = getattr(inner, "text", None)
        if isinstance(text, str):
            parts.append(text)
    return "\n".join(parts) or None


def _args(raw_input: Any) -> dict[str, Any]:
    if raw_input is None:
        return {}
    return dict(raw_input) if isinstance(raw_input, dict) else {"input": raw_input}


def _action(call: ToolCallEvent) -> ToolAction:
    """The call as a node's action: its kind and input."""
    from ide.protocol.tree import ToolAction

    return ToolAction(tool=call.kind or "other", args=_args(call.raw_input))


class ToolCallTree:
    """Feed it a turn's session events; each call returns the tree events they make.

    A run opens at the first tool call or plan of a turn (a turn of plain chat makes no tree) and ends
    with :meth:`finish`, which ends every node's ``active`` with it. Updates of unknown tool calls add
    their node; plan entries are steps under one plan node, and a step a later plan dropped is marked
    pruned."""

    def __init__(self, agent: str = "agent") -> None:
        self.agent = agent
        self.run_id: str | None = None
        self._seq = 0
        self._nodes: set[str] = set()
        self._active: set[str] = set()
        """The run's nodes whose status is ``active`` (the root until the turn ends)."""
        self._steps = 0
        self._tool_calls = 0
        self._prompt = ""

    def start_turn(self, prompt: str = "") -> list[TreeEvent]:
        """A new turn: what is open ends (unfinished), the next tool call starts a new run."""
        events = self.finish("interrupted") if self.run_id is not None else []
        self._prompt = prompt
        return events

    def apply(self, event: SessionEvent) -> list[TreeEvent]:
        """The tree events one session event makes (none for chat text, thoughts, modes …)."""
        from ide.client.events import PlanChanged, ToolCallEvent

        if isinstance(event, ToolCallEvent):
            return self._tool_call(event)
        if isinstance(event, PlanChanged):
            return self._plan(event.entries)
        return []

    def changed(self, tool_call_id: str, note: str) -> list[TreeEvent]:
        """What the tool call changed, said on its node (none once its run has finished)."""
        node_id = f"tool:{tool_call_id}"
        if self.run_id is None or node_id not in self._nodes:
            return []
        return [self._event("node_updated", node_id=node_id, changes={"reflection": note})]

    def finish(self, stop_reason: str) -> list[TreeEvent]:
        """The turn ended: the open run is finished with its stop reason and count of tool calls. Nothing
        stays ``active``: the root is evaluated (cut short unless the turn ended normally), and a tool
        call or plan the agent never said was done is cut short."""
        if self.run_id is None:
            return []
        now = time.time()
        events = []
        for node_id in sorted(self._active - {ROOT}) + sorted(self._active & {ROOT}):
            status = "evaluated" if node_id == ROOT and stop_reason == "end_turn" else "terminated_early"
            changes = {"status": status, "updated_at": now}
            events.append(self._event("node_updated", node_id=node_id, changes=changes))
        figures = {"stop_reason": stop_reason, "tool_calls": self._tool_calls}
        events.append(self._event("finished", figures=figures))
        self.run_id = None
        self._active = set()
        return events

    def _event(self, kind: str, **fields: Any) -> TreeEvent:
        from ide.protocol.tree import TreeEvent

        assert self.run_id is not None
        self._seq += 1
        node = fields.get("node")
        node_id, status = (node.id, node.status) if node is not None else (fields.get("node_id"), None)
        status = (fields.get("changes") or {}).get("status", status)
        if status == "active":
            self._active.add(node_id)
        elif status is not None:
            self._active.discard(node_id)
        return TreeEvent(
            run_id=self.run_id, seq=self._seq, kind=kind, architecture="acp", at=time.time(), **fields
        )  # type: ignore[arg-type]

    def _open(self) -> list[TreeEvent]:
        if self.run_id is not None:
            return []
        import uuid  # here, not at import: uuid imports platform, ~2 ms before the first frame

        self.run_id, self._seq, self._steps, self._tool_calls = f"acp-{uuid.uuid4().hex[:12]}", 0, 0, 0
        self._nodes, self._active = {ROOT}, set()
        label = f"{self.agent}: {self._prompt}" if self._prompt else self.agent
        return [self._event("node_added", node=self._node(ROOT, None, "root", label[:200], "active"))]

    def _node(
        self, node_id: str, parent: str | None, kind: NodeKind, label: str, status: NodeStatus
    ) -> TreeNode:
        from ide.protocol.tree import TreeNode

        now = time.time()
        depth = 0 if parent is None else (1 if parent == ROOT else 2)
        return TreeNode(
            id=node_id, parent=parent, depth=depth, kind=kind, label=label, status=status,
            created_at=now, updated_at=now,
        )  # fmt: skip

    def _tool_call(self, call: ToolCallEvent) -> list[TreeEvent]:
        """A node for a call new to this run, from its whole state; else what this event changed."""
        events = self._open()
        node_id = f"tool:{call.id}"
        if node_id not in self._nodes:
            self._nodes.add(node_id)
            self._tool_calls += 1
            status = STATUSES.get(call.status or "", "generated")
            node = self._node(node_id, ROOT, "action", call.title or "tool call", status)
            node.action = _action(call)
            node.observation = _text(call.raw_output) or _text(_content_text(call.content))
            return [*events, self._event("node_added", node=node)]
        changed = call.changed
        changes: dict[str, Any] = {"updated_at": time.time()}
        if "status" in changed and (status := STATUSES.get(call.status or "")) is not None:
            changes["status"] = status
        if "title" in changed:
            changes["label"] = call.title
        observation = ("raw_output" in changed and _text(call.raw_output)) or (
            "content" in changed and _text(_content_text(call.content))
        )
        if observation:
            changes["observation"] = observation
        if "raw_input" in changed:
            changes["action"] = _action(call)
        return [*events, self._event("node_updated", node_id=node_id, changes=changes)]

    def _plan(self, entries: tuple[PlanEntry, ...]) -> list[TreeEvent]:
        events = self._open()
        if PLAN not in self._nodes:
            self._nodes.add(PLAN)
            events.append(self._event("node_added", node=self._node(PLAN, ROOT, "plan", "Plan", "active")))
        for index, entry in enumerate(entries):
            step_id, status = f"{PLAN}:{index + 1}", STATUSES.get(entry.status, "generated")
            if index < self._steps:
                changes = {"label": entry.content[:200], "status": status, "updated_at": time.time()}
                events.append(self._event("node_updated", node_id=step_id, changes=changes))
            else:
                node = self._node(step_id, PLAN, "step", entry.content[:200], status)
                events.append(self._event("node_added", node=node))
        for index in range(len(entries), self._steps):
            changes = {"status": "pruned", "updated_at": time.time()}
            events.append(self._event("node_updated", node_id=f"{PLAN}:{index + 1}", changes=changes))
        self._steps = max(self._steps, len(entries))
        done = entries and all(entry.status == "completed" for entry in entries)
        events.append(
            self._event("node_updated", node_id=PLAN, changes={"status": "evaluated" if done else "active"})
        )
        return events
