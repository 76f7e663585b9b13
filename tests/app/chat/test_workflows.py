"""The window's workflow picker and permission dialog: pick a workflow, run it, allow the tests, review."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ide.app.chat.part import ChatDock
from ide.app.review.part import ReviewDock
from ide.app.tree.part import TreeDock
from tests.support.feature_workflow import FEATURE_SCRIPT, TASK, cli_project  # noqa: F401  (fixture)
from tests.support.window import TURN_TIMEOUT_MS, WindowFactory, wait_ready

pytestmark = pytest.mark.window


def test_picking_a_workflow_runs_it_and_asks_before_the_tests(
    qtbot: Any,
    make_window: WindowFactory,
    cli_project: Path,  # noqa: F811
    tmp_path: Path,
    user_config: Callable[[str], Path],
) -> None:
    user_config(f'[workflows]\ntest_command = "{sys.executable} -m pytest -q"\n')
    # The user picks the workflow, so the orchestrator only decides the optional stages.
    stages_only = json.dumps(
        {"stages": [{"stage_id": "3", "include": False}, {"stage_id": "4", "include": False}]}
    )
    lines = [{"role": "orchestrator", "content": stages_only}, *FEATURE_SCRIPT[1:]]
    script = tmp_path / "feature.jsonl"
    script.write_text("".join(json.dumps(line) + "\n" for line in lines))
    window = make_window(cli_project, env={"ARBOR_MODEL": f"scripted:{script}"})
    wait_ready(qtbot, window)
    box = window.part(ChatDock).panel.workflow_box
    qtbot.waitUntil(lambda: box.count() > 1, timeout=TURN_TIMEOUT_MS)
    names = [box.itemData(i) for i in range(box.count())]
    assert names[0] == "auto" and "feature_with_iterative_testing" in names
    assert "Context ranking: bm25" in box.toolTip()

    with qtbot.waitSignal(window.docks["workflows"].workflowsReceived, timeout=TURN_TIMEOUT_MS) as picked:
        box.setCurrentIndex(names.index("feature_with_iterative_testing"))
        box.activated.emit(names.index("feature_with_iterative_testing"))
    assert picked.args[0].selected == "feature_with_iterative_testing"
    assert window.bridge.mode == "workflow" and window.part(ChatDock).panel.current_mode() == "workflow"

    window.send_prompt(TASK)
    dialog = window.permission_dialog
    qtbot.waitUntil(dialog.isVisible, timeout=TURN_TIMEOUT_MS)
    assert "pytest" in dialog.title.text()
    allow = dialog.button_for("allow")
    assert allow is not None and dialog.button_for("deny") is not None
    with qtbot.waitSignal(window.part(ReviewDock).client.changesetReceived, timeout=TURN_TIMEOUT_MS):
        allow.click()
    qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=TURN_TIMEOUT_MS)
    assert not dialog.isVisible()
    assert window.part(ReviewDock).pane.files_model.rowCount() == 2
    window.part(ChatDock).panel.flush()
    text = "\n".join(view.plain_text() for view in window.part(ChatDock).panel.views())
    assert "Workflow feature_with_iterative_testing finished" in text.replace("**", "")
    assert any(
        tree.architecture == "workflow" and tree.finished for tree in window.part(TreeDock).view.runs.values()
    )
