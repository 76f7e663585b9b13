"""A solved ReAct run's search tree, for the tests of what memory learns from a run."""

from __future__ import annotations

from ide.protocol.tree import ToolAction
from ide.search.tree import TreeRecorder


def solved_tree(task: str, score: float | None = None) -> TreeRecorder:
    recorder = TreeRecorder(architecture="react")
    root = recorder.add(None, kind="root", label=task)
    read = recorder.add(root, kind="action", label="read_file", action=ToolAction(tool="read_file"))
    grep = recorder.add(
        read,
        kind="action",
        label="grep",
        action=ToolAction(tool="grep"),
        status="failed",
        reflection="nothing there\nLesson: greetings live in pkg/greet.py, not in the README",
    )
    edit = recorder.add(read, kind="action", label="edit_file", action=ToolAction(tool="edit_file"))
    answer = recorder.add(edit, kind="answer", label="done", status="solution", reward_raw=score)
    assert grep
    recorder.best_path(answer)
    return recorder
