"""What a finished run teaches the memory: an investigation, a tool pattern, lessons, or an error.

Only what is about the workspace is kept: a model server that is down or a missing model is a setup
failure, not a workspace error, and a run whose changes the user rejected or rolled back is no successful
investigation (``unlearn_changes`` takes back what it taught).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Literal

from ide.memory.store import INVESTIGATION_SCORE, MemoryStore, task_type
from ide.protocol.tree import SearchTree

MAX_PATTERN = 12
MAX_LESSONS = 3

ErrorClass = Literal["setup", "workspace"]

SETUP_FAILURE = re.compile(
    "|".join(
        (
            r"\bnot reachable\b",
            r"\bconnection (refused|reset|error)\b",
            r"\bconnecterror\b",
            r"\bis not pulled\b",
            r"\bollama (pull|serve|list)\b",
            r"\bdoes not know the model\b",
            r"\bmodel\b.*\bnot found\b",
            r"\bdoes not support tool",
            r"\bno api key\b",
            r"\b_api_key\b",
            r"\brefused the credentials\b",
            r"\bprovider needs\b",
            r"\bsent nothing within\b",
            r"\bstopped sending for\b",
            r"\bno longer fits the context window\b",
            r"\brate limiting\b",
            r"\bcannot think\b",
            r"\bscripted model\b",
            r"\bran out after\b",
            r"\bsettingserror\b",
            r"\bmodelerror\b",
        )
    ),
    re.IGNORECASE,
)
"""Messages of failures of the model server, the model or the setup (ide/llm/errors.py words them)."""


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
                    data={"tools": tools, "architecture": architecture, "files": list(changed)},
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


def classify_error(error: str) -> ErrorClass:
    """``setup`` for a failure of the model server, the model or the configuration (nothing the
    workspace taught), else ``workspace``."""
    return "setup" if SETUP_FAILURE.search(error) else "workspace"


def learn_from_error(
    memory: MemoryStore, *, task: str, error: str, session_id: str | None = None
) -> int | None:
    """Record a turn that failed because of the workspace; a setup failure (Ollama down, a model not
    pulled, no API key, a timeout) is not stored: None."""
    if classify_error(error) == "setup":
        return None
    return memory.add(
        "errors",
        error.splitlines()[0][:200] or "error",
        f"Task: {task}\n\n{error}",
        task_type=task_type(task),
        session_id=session_id,
    )


def unlearn_changes(memory: MemoryStore, *, session_id: str, paths: Iterable[str]) -> list[int]:
    """The user rejected or rolled back ``paths`` that ``session_id``'s runs changed: the investigations
    and patterns learned from those runs were no success. Removes them; their ids."""
    touched = set(paths)
    removed: list[int] = []
    if not touched:
        return removed
    for namespace in ("investigations", "patterns"):
        for item in memory.list(namespace, limit=1000):
            mine = item.author == "arbor" and item.session_id == session_id
            if mine and touched.intersection(item.data.get("files") or []) and memory.delete(item.id):
                removed.append(item.id)
    return removed


def rejected_paths(files: Iterable[tuple[str, Sequence[str]]]) -> list[str]:
    """Paths whose every hunk is rejected, from (path, decisions of its hunks) pairs."""
    return [path for path, decisions in files if decisions and all(d == "rejected" for d in decisions)]
