"""Steering the session from its Search tree over the real backend: Continue from here… (the hint as the
user's message, the new run drawn under its origin), Use this branch (asked first when the review holds
decisions, then shown in the Review dock), and a refusal said plainly, never raised."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from ide.app.chat.part import ChatDock
from ide.app.review.part import ReviewDock
from ide.app.tree.part import TreeDock
from ide.app.window import MainWindow
from tests.support.lats_script import EDIT_WINS, LATS_ENV
from tests.support.window import TURN_TIMEOUT_MS, WindowFactory, wait_ready

pytestmark = pytest.mark.window

TREE_AGENT = [sys.executable, str(Path(__file__).parents[2] / "support" / "tree_agent.py")]
HINT = "Keep the Hi greeting and say so."


def lats_window(
    qtbot: Any, make_window: WindowFactory, workspace: Path, script: Path, then: list[dict[str, Any]]
) -> MainWindow:
    """A window whose first turn is the LATS run of EDIT_WINS (solution n1 → n2 → n4), ``then`` the
    script's lines for what comes after."""
    script.write_text("".join(json.dumps(line) + "\n" for line in [*EDIT_WINS, *then]))
    env = {"ARBOR_MODEL": f"scripted:{script}", "ARBOR_AGENT_ARCHITECTURE": "lats", **LATS_ENV}
    window = make_window(workspace, env=env)
    wait_ready(qtbot, window)
    with qtbot.waitSignal(window.part(ReviewDock).client.changesetReceived, timeout=TURN_TIMEOUT_MS):
        window.send_prompt("Make greet say Hi")
    qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=TURN_TIMEOUT_MS)
    view = window.part(TreeDock).view
    qtbot.waitUntil(lambda: any(t.finished for t in view.runs.values()), timeout=TURN_TIMEOUT_MS)
    return window


def test_continue_from_a_node_sends_the_hint_and_draws_the_new_run_under_its_origin(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path, tmp_path: Path
) -> None:
    window = lats_window(qtbot, make_window, git_workspace, tmp_path / "s.jsonl", [{"content": "Hi stays."}])
    dock = window.part(TreeDock)
    view, steering = dock.view, dock.steering
    (origin,) = view.runs
    view.flush()
    view.select_node("n2")
    action = view.node_actions.actions["continue"]
    assert action.isEnabled(), action.toolTip()
    action.trigger()
    dialog = steering.dialog
    assert dialog is not None and dialog.isVisible()
    assert "n2" in dialog.node_label.text()
    assert dialog.mode() == "lats", "the run's own architecture is chosen"
    dialog.hint_box.setPlainText(HINT)
    dialog.mode_box.setCurrentIndex(dialog.mode_box.findData("react"))
    with qtbot.waitSignal(steering.forked, timeout=TURN_TIMEOUT_MS) as forked:
        dialog.continue_button.click()
    assert (forked.args[0].node_id, forked.args[0].mode) == ("n2", "react")
    qtbot.waitUntil(lambda: len(view.runs) == 2 and window.bridge.state == "ready", timeout=TURN_TIMEOUT_MS)
    (continued,) = (key for key in view.runs if key != origin)
    tree = view.runs[continued]
    assert tree.forked_from is not None and (tree.forked_from.run_id, tree.forked_from.node_id) == (
        origin,
        "n2",
    )

    chat = window.part(ChatDock).panel
    chat.flush()
    assert HINT in chat.transcript(), "the hint is the user's message, as any prompt"
    combo = view.run_combo
    assert [combo.itemData(i) for i in range(combo.count())] == [origin, continued]
    assert combo.itemText(1).startswith("↳ ") and combo.itemText(1).endswith(f"· from run {origin[:12]} · n2")
    view.select_run(continued)
    view.flush()
    assert view.node_actions.origin_bar.isVisible()
    assert view.node_actions.go_to_origin() and (view.current, view.selected_id) == (origin, "n2")


def test_use_this_branch_asks_before_it_replaces_decisions_then_shows_the_branch_for_review(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path, tmp_path: Path
) -> None:
    window = lats_window(qtbot, make_window, git_workspace, tmp_path / "s.jsonl", [])
    review, dock = window.part(ReviewDock), window.part(TreeDock)
    view, steering = dock.view, dock.steering
    pane = review.pane
    assert pane.files_model.rowCount() == 1  # the best branch's edit
    with qtbot.waitSignal(review.client.changesetReceived, timeout=TURN_TIMEOUT_MS):
        pane.accept_all_button.click()

    view.flush()
    view.select_node("n3")  # the sibling that only read the file: no changes
    action = view.node_actions.actions["adopt"]
    assert action.isEnabled(), action.toolTip()
    action.trigger()
    qtbot.waitUntil(
        lambda: steering.confirm_box is not None and steering.confirm_box.isVisible(), timeout=5000
    )
    box = steering.confirm_box
    assert "1 decision" in box.text()
    (replace,) = [b for b in box.buttons() if b.text() == "Replace the review"]
    with qtbot.waitSignal(steering.adopted, timeout=TURN_TIMEOUT_MS) as adopted:
        replace.click()
    assert adopted.args[0].adopted and adopted.args[0].decisions == 1
    assert pane.files_model.rowCount() == 0, "n3's branch proposes nothing"
    assert review.dock.isVisible()


def test_prune_on_a_running_lats_search_is_taken_and_its_node_shows_the_mark(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path, tmp_path: Path
) -> None:
    script = tmp_path / "s.jsonl"
    held = [dict(line) for line in EDIT_WINS]
    held[2] = {**held[2], "latency_ms": 4000}  # the first evaluation waits: the search is live meanwhile
    script.write_text("".join(json.dumps(line) + "\n" for line in held))
    env = {"ARBOR_MODEL": f"scripted:{script}", "ARBOR_AGENT_ARCHITECTURE": "lats", **LATS_ENV}
    window = make_window(git_workspace, env=env)
    wait_ready(qtbot, window)
    dock = window.part(TreeDock)
    view, steering = dock.view, dock.steering
    window.send_prompt("Make greet say Hi")

    def candidates_drawn() -> bool:
        return any("n3" in t.nodes and not t.finished for t in view.runs.values())

    qtbot.waitUntil(candidates_drawn, timeout=TURN_TIMEOUT_MS)
    view.flush()
    view.select_node("n3")  # the read: the weaker candidate
    prune = view.node_actions.actions["prune"]
    assert prune.isEnabled(), prune.toolTip()
    assert not view.node_actions.actions["continue"].isEnabled(), "a turn runs"
    with qtbot.waitSignal(steering.steered, timeout=TURN_TIMEOUT_MS) as steered:
        prune.trigger()
    assert steered.args[0].accepted
    (tree,) = view.runs.values()
    qtbot.waitUntil(lambda: tree.nodes["n3"].steer == "prune", timeout=TURN_TIMEOUT_MS)
    qtbot.waitUntil(lambda: window.bridge.state == "ready", timeout=TURN_TIMEOUT_MS)
    view.flush()
    assert view.canvas.geometry.steer[view.canvas.geometry.index["n3"]] == "prune"
    assert "n3" not in tree.best_path


def test_a_refusal_is_said_plainly(qtbot: Any, make_window: WindowFactory, tmp_path: Path) -> None:
    window = make_window(tmp_path, command=TREE_AGENT, env={"TREE_AGENT_STORE": str(tmp_path / "store.json")})
    wait_ready(qtbot, window)
    with qtbot.waitSignal(window.bridge.turnFinished, timeout=TURN_TIMEOUT_MS):
        window.send_prompt("tree 12")
    dock = window.part(TreeDock)
    view, steering = dock.view, dock.steering
    (key,) = view.runs
    view.flush()
    view.select_node("n3")
    action = view.node_actions.actions["continue"]
    assert not action.isEnabled()
    assert action.toolTip() == "The backend does not offer Continue from here (_arbor/tree/fork)."
    with qtbot.waitSignal(steering.said, timeout=1000) as said:
        assert not steering.fork(key, "n3", HINT)
    assert said.args == ["Continue from here: this backend does not offer it (_arbor/tree/fork)."]
    assert view.message.isVisible() and view.message.text() == said.args[0]
    assert window.statusBar().currentMessage() == said.args[0]
