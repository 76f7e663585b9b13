"""Change sets for the review tests: a committed package of small modules with the scripted edits of every
one of them, and a full change set summarised as the backend sends it to a client with ``reviewHunks``."""

from __future__ import annotations

import json
from pathlib import Path

from ide.protocol.review import ChangeSetView
from tests.support.git import git


def commit_modules(workspace: Path, count: int) -> Path:
    """``src/mod_NN.py`` (``VALUE = N`` and a function) for N below ``count``, committed in ``workspace``."""
    src = workspace / "src"
    src.mkdir()
    for n in range(count):
        (src / f"mod_{n:02d}.py").write_text(f"VALUE = {n}\n\n\ndef value():\n    return VALUE\n")
    git(workspace, "add", "-A")
    git(workspace, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", f"{count} modules")
    return workspace


def value_edits_script(path: Path, count: int, answer: str) -> Path:
    """A scripted model's turn at ``path``: one ``edit_file`` call per module adding 100 to its VALUE, then
    ``answer``."""
    edits = [
        {
            "name": "edit_file",
            "args": {
                "path": f"src/mod_{n:02d}.py",
                "old_text": f"VALUE = {n}",
                "new_text": f"VALUE = {n + 100}",
            },
        }
        for n in range(count)
    ]
    path.write_text(json.dumps({"tool_calls": edits}) + "\n" + json.dumps({"content": answer}) + "\n")
    return path


def summarised(full: ChangeSetView, keep: int = 1) -> ChangeSetView:
    """``full`` summarised: the first ``keep`` files whole, of the others their hunk ids and decisions."""
    files = [
        file
        if index < keep
        else file.model_copy(
            update={
                "hunks": [],
                "hunk_ids": [h.id for h in file.hunks],
                "decisions": [h.decision for h in file.hunks],
            }
        )
        for index, file in enumerate(full.files)
    ]
    return full.model_copy(update={"files": files})
