"""What the Review pane shows for a generated change set, pinned: every file's row, its unified and its
side-by-side text, the hunk caption and the summary, digested and compared with the digest the pane gave
before issue 50's start-up and benchmark work (d6fc119). A speed-up of the pane that shows anything else
(a file, a hunk, a line, a count) fails here."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from ide.app.review.diffs import local_file_change
from ide.app.review.pane import ReviewPane
from ide.protocol.review import ChangeSetView
from tests.support.review_agent import sample_file

pytestmark = pytest.mark.window

SHOWN_DIGEST = "01684b9f1365cc07d1dbb7beeef7379f3e89895449c8c9f2fd10639028d8accf"
"""sha256 of :func:`shown` for :func:`generated` at d6fc119."""


def generated() -> ChangeSetView:
    """Forty files of ``bench/review_pane.py``'s kind (every tenth line of a function edited, ten hunks
    each) and twenty of the pane tests' samples (added, deleted, renamed and modified files)."""
    changes = []
    for index in range(40):
        old = [f"def f{n}(value):\n    return value * {n}  # step {n}\n" for n in range(100 + index)]
        new = list(old)
        for n in range(0, len(old), 10):
            new[n] = f"def f{n}(value, scale=1):\n    return value * scale * {n}  # step {n}\n"
        changes.append(local_file_change(f"pkg/module_{index:03d}.py", "".join(old), "".join(new)))
    changes += [local_file_change(*sample_file(index)) for index in range(20)]
    return ChangeSetView(session_id="s1", cwd="/w", title="generated", files=changes)


def shown(pane: ReviewPane, changeset: ChangeSetView) -> dict[str, Any]:
    """Everything the pane shows of ``changeset``, file by file, unified then side by side."""
    pane.set_changeset(changeset)
    model = pane.files_model
    out: dict[str, Any] = {"summary": pane.summary.text(), "files": []}
    for row in range(model.rowCount()):
        pane.select_file(row)
        entry = {
            "row": [model.text(row, column) for column in range(model.columnCount())],
            "caption": pane.hunk_label.text(),
            "unified": pane.unified.toPlainText(),
        }
        pane.set_side_by_side(True)
        entry["left"], entry["right"] = pane.left.toPlainText(), pane.right.toPlainText()
        pane.set_side_by_side(False)
        out["files"].append(entry)
    return out


def digest(seen: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(seen, sort_keys=True).encode()).hexdigest()


def test_the_pane_shows_the_same_files_hunks_and_text(qtbot: Any) -> None:
    pane = ReviewPane()
    qtbot.addWidget(pane)
    pane.set_session("s1", "/w")
    pane.set_interactive(True)
    changeset = generated()
    assert sum(len(file.hunks) for file in changeset.files) > 400
    seen = shown(pane, changeset)
    assert len(seen["files"]) == len(changeset.files)
    assert digest(seen) == SHOWN_DIGEST
