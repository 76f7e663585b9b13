"""What a finished run teaches the memory: an investigation, a tool pattern, lessons, or an error."""

from __future__ import annotations

from collections.abc import Sequence

from ide.memory.store import INVESTIGATION_SCORE, MemoryStore, task_type
from ide.protocol.tree import SearchTree

MAX_PATTERN = 12
MAX_LESSONS = 3


def run_score(tree: SearchTree, stop_reason: str) -> float | None:
    """The run's best evaluator score (0–10); 10 for a run that reached a solution without scores
    (a ReAct answer, a workflow whose tests passed); None when it did not finish well."""
    scores = [n.reward_raw for n in tree.nodes.values() if n.reward_raw is not None]
    if scores:
        return max(scores)
    if stop_reason == "end_turn" and any(n.status == "solution" for n in tree.nodes.values()):
        return 10.0
    return None


def tool_sequence(tree: SearchTree) -> list[str]:
    """The tools of the best path (else of the whole run), in order, repeats folded."""
    path = [tree.nodes[i] for i in tree.best_path if i in tree.nodes] if tree.best_path else []
    actions = [n for n in path if n.action is not None] or [
        n for n in sorted(tree.nodes.values(), key=lambda n: n.created_at) if n.action is not None
    ]
    sequence: list[str] = []
    for node in actions:
        if (
            node.action is not None
            and node.status != "failed"
            and (not sequence or sequence[-1] != node.action.tool)
        ):
            sequence.append(node.action.tool)
    return sequence[:MAX_PATTERN]


def learn_from_run(
    memory: MemoryStore,
    *,
    task: str,
    answer: str,
    tree: SearchTree,
    stop_reason: str,
    changed: Sequence[str] = (),
    architecture: str = "",
    session_id: str | None = None,
) -> list[int]:
    """Store what the run taught; the ids of the new entries."""
    kind = task_type(task)
    added: list[int] = []
    score = run_score(tree, stop_reason)
    tools = tool_sequence(tree)
    if score is not None and score >= INVESTIGATION_SCORE and stop_reason == "end_turn":
        path = [tree.nodes[i].label for i in tree.best_path if i in tree.nodes]
        content = answer.strip() or "(no answer text)"
        if changed:
            content += "\n\nFiles: " + ", ".join(changed)
        if path:
            content += "\nSolution path: " + " → ".join(path)
        data = {"files": list(changed), "path": path, "architecture": architecture, "tools": tools}
        added.append(
            memory.add(
                "investigations", task, content, task_type=kind, data=data, score=score, session_id=session_id
            )
        )
        if tools:
            added.append(
                memory.add(
                    "patterns",
                    f"{kind}: {' → '.join(tools)}",
                    f"Task: {task}\nTools: {' → '.join(tools)}",
                    task_type=kind,
                    data={"tools": tools, "architecture": architecture},
                    score=score,
                    session_id=session_id,
                )
            )
    # LATS writes the lesson of a failed trajectory into the node's reflection as a "Lesson: …" line.
    lessons: list[str] = []
    for node in tree.nodes.values():
        for line in (node.reflection or "").splitlines():
            lesson = line.strip().removeprefix("Lesson:").strip()
            if line.strip().startswith("Lesson:") and lesson and lesson not in lessons:
                lessons.append(lesson)
    for lesson in lessons[:MAX_LESSONS]:
        added.append(memory.add("insights", lesson[:120], lesson, task_type=kind, session_id=session_id))
    return added


def learn_from_error(memory: MemoryStore, *, task: str, error: str, session_id: str | None = None) -> int:
    return memory.add(
        "errors",
        error.splitlines()[0][:200] or "error",
        f"Task: {task}\n\n{error}",
        task_type=task_type(task),
        session_id=session_id,
    )
