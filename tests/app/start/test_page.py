"""The start page (issue 31, item 1): a fresh workspace with no model server opens on it, with the model's
problem and fix in the status bar instead of a banner over the work (not again on New Session); its
buttons reach the recorded sample tree, an eval report and the scripted demo; Ollama's models are offered
and Use switches to one; ``arbor --open`` never shows it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog
from shiboken6 import delete

from ide.app.chat.part import ChatDock
from ide.app.eval.part import EvalDock
from ide.app.main import build_window, open_at_start
from ide.app.sessions.part import SessionsDock
from ide.app.start.demo import SAMPLE_TREE, sample_dir
from ide.app.start.part import StartPart
from ide.app.tree.part import TreeDock
from ide.app.window import MainWindow
from ide.client.agentproc import ARBOR_AGENT, AgentChoice, default_backend_command
from ide.protocol.eval import EvalReport, EvalRun, save_report
from tests.support.fake_ollama import FakeOllama
from tests.support.net import closed_port
from tests.support.window import (
    BACKEND_START_TIMEOUT_MS,
    TURN_TIMEOUT_MS,
    WindowFactory,
    close_window,
    wait_ready,
)

pytestmark = pytest.mark.window

SAMPLES = sample_dir()
assert SAMPLES is not None, "the tests run from the source checkout, which holds resources/samples"
DEMO_TIMEOUT_MS = 90_000
"""The demo is a whole LATS search with its test command run in a scratch worktree."""


def no_model_server() -> dict[str, str]:
    return {"ARBOR_MODEL": "ollama:qwen3:8b", "OLLAMA_HOST": f"http://127.0.0.1:{closed_port()}"}


def on_start_page(window: MainWindow) -> bool:
    return window.centre.currentWidget() is window.part(StartPart).page


def write_report(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    run = EvalRun(task="bug-chunked", mode="react", status="solved", input_tokens=900, wall_s=4.0)
    report = EvalReport(
        model="ollama:qwen3:8b", modes=["react"], tasks=["bug-chunked"], budget_tokens=8000, budget_s=60.0,
        runs=[run],
    )  # fmt: skip
    save_report(report, out)
    return out / "report.json"


def test_a_fresh_workspace_opens_on_the_start_page_with_the_fix_in_the_status_bar_not_a_banner(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path
) -> None:
    window = make_window(git_workspace, env=no_model_server())
    assert on_start_page(window)
    wait_ready(qtbot, window)
    status, page = window.status, window.part(StartPart).page
    qtbot.waitUntil(lambda: status.health.property("level") == "error", timeout=TURN_TIMEOUT_MS)
    # The status bar says what is wrong and how to fix it, in one line beside the dot.
    assert "Ollama is not reachable" in status.health.text()
    assert "ollama serve" in status.health.toolTip()
    assert "A turn would fail: Ollama is not reachable" in page.verdict.text()
    assert 'Start it with "ollama serve"' in page.fix.text() and page.fix.isVisibleTo(page)
    assert page.model_label.text() == "This window's model: ollama:qwen3:8b"
    assert not window.banner.wanted and not window.banner.isVisible()
    assert on_start_page(window)

    # New Session checks the model again, quietly: still no banner.
    with qtbot.waitSignal(window.bridge.sessionReady, timeout=BACKEND_START_TIMEOUT_MS):
        window.part(SessionsDock).new()
    qtbot.waitUntil(lambda: status.health.property("level") == "error", timeout=TURN_TIMEOUT_MS)
    assert not window.banner.wanted

    # A file opened puts the code in the centre; the model's element brings the page back.
    window.viewer.show_file(git_workspace / "README.md")
    qtbot.waitUntil(lambda: window.centre.currentWidget() is window.viewer)
    qtbot.mouseClick(status.health, Qt.MouseButton.LeftButton)
    assert on_start_page(window)


def test_open_of_a_recording_shows_the_tree_with_no_start_page_and_no_banner(
    qtbot: Any, qloop: Any, qsettings_dir: Path, git_workspace: Path
) -> None:
    agent = AgentChoice(ARBOR_AGENT, default_backend_command(), no_model_server())
    sample = SAMPLES / SAMPLE_TREE
    window = build_window(git_workspace, sample, agent)
    try:
        window.show()
        assert not on_start_page(window)
        assert open_at_start(window, sample)
        window.start()
        wait_ready(qtbot, window)
        qtbot.waitUntil(lambda: window.status.health.property("level") == "error", timeout=TURN_TIMEOUT_MS)
        assert not window.banner.wanted
        assert window.maximised is window.part(TreeDock).dock  # the recording has the window
        assert window.part(TreeDock).view.shown is not None and window.part(TreeDock).view.shown.best_path
    finally:
        close_window(qtbot, window)


def test_the_start_page_opens_the_sample_tree_and_an_eval_report(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path, tmp_path: Path
) -> None:
    window = make_window(git_workspace, start=False)
    page = window.part(StartPart).page
    qtbot.mouseClick(page.sample_button, Qt.MouseButton.LeftButton)
    tree = window.part(TreeDock).view.shown
    assert tree is not None and len(tree.nodes) >= 9 and tree.best_path
    assert window.maximised is window.part(TreeDock).dock
    window.maximise_action.trigger()  # back to the layout, the page still in the centre
    assert window.maximised is None and on_start_page(window)

    report = write_report(tmp_path / "eval-out")
    qtbot.mouseClick(page.report_button, Qt.MouseButton.LeftButton)
    dialog = window.findChild(QFileDialog, "startReportDialog")
    assert dialog is not None and dialog.isVisible()
    with qtbot.waitSignal(window.docks["eval"].reportLoaded):
        dialog.selectFile(str(report))
        dialog.accept()
    assert (
        window.part(EvalDock).panel.report is not None
        and window.part(EvalDock).panel.report.runs[0].task == "bug-chunked"
    )
    assert window.part(EvalDock).dock.isVisible()


def test_the_start_page_lists_ollamas_models_and_use_switches_the_backend(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path
) -> None:
    models = {"qwen2.5-coder:7b": {"tools": True}, "qwen3:8b": {"tools": True}}
    with FakeOllama(models=models) as server:
        env = {"ARBOR_MODEL": "ollama:qwen2.5-coder:7b", "OLLAMA_HOST": server.url}
        window = make_window(git_workspace, env=env)
        wait_ready(qtbot, window)
        page = window.part(StartPart).page
        qtbot.waitUntil(lambda: page.ollama_models.count() == 2, timeout=TURN_TIMEOUT_MS)
        assert f"Ollama answers at {server.url}, with 2 models pulled." == page.ollama_label.text()
        assert "Ready" in page.verdict.text() and not page.fix.isVisibleTo(page)
        page.ollama_models.setCurrentText("qwen3:8b")
        with qtbot.waitSignal(window.bridge.sessionReady, timeout=BACKEND_START_TIMEOUT_MS):
            qtbot.mouseClick(page.use_button, Qt.MouseButton.LeftButton)
        assert window.bridge.agent_meta is not None and window.bridge.agent_meta.model == "ollama:qwen3:8b"
        assert page.model_label.text() == "This window's model: ollama:qwen3:8b"
        assert '[llm] model = "ollama:qwen3:8b"' in page.model_note.text()  # how to keep it


def test_the_demo_runs_the_sample_task_in_a_window_of_its_own(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path
) -> None:
    window = make_window(git_workspace, start=False)
    with qtbot.waitSignal(window.docks["start"].demoOpened, timeout=TURN_TIMEOUT_MS) as opened:
        qtbot.mouseClick(window.part(StartPart).page.demo_button, Qt.MouseButton.LeftButton)
    demo: MainWindow = opened.args[0]
    room: list[bool] = []  # the run has the window while it runs, and gives it back when its turn ends
    demo.maximisedChanged.connect(room.append)
    [run] = window.part(StartPart).demos
    try:
        assert demo.workspace.is_relative_to(run.root) and (demo.workspace / "check_stats.py").is_file()
        dialog = demo.permission_dialog

        def allowed_or_finished() -> bool:
            button = dialog.button_for("allow") if dialog.isVisible() else None
            if button is not None:
                button.click()
            return (
                bool(demo.part(TreeDock).view.runs)
                and next(iter(demo.part(TreeDock).view.runs.values())).finished
            )

        qtbot.waitUntil(allowed_or_finished, timeout=DEMO_TIMEOUT_MS)
        tree = next(iter(demo.part(TreeDock).view.runs.values()))
        assert any(node.status == "solution" for node in tree.nodes.values())
        assert (room or demo.maximised is demo.part(TreeDock).dock) and demo.part(
            ChatDock
        ).dock.isVisible()  # the run had the room
        assert "mean() in stats.py" in demo.part(ChatDock).panel.transcript()
    finally:
        close_window(qtbot, demo)
    qtbot.waitUntil(lambda: not run.root.exists(), timeout=10_000)  # the throwaway copy is gone


def test_the_demo_copy_is_removed_even_when_its_window_is_deleted_at_once(
    qtbot: Any, make_window: WindowFactory, git_workspace: Path
) -> None:
    """The copy was removed when the demo window's bridge said its backend stopped; a window deleted
    before its bridge had said so (a test's teardown did) left the copy behind, and the bridge's watcher
    raised on the deleted bridge."""
    window = make_window(git_workspace, start=False)
    with qtbot.waitSignal(window.docks["start"].demoOpened, timeout=TURN_TIMEOUT_MS) as opened:
        qtbot.mouseClick(window.part(StartPart).page.demo_button, Qt.MouseButton.LeftButton)
    demo: MainWindow = opened.args[0]
    [run] = window.part(StartPart).demos
    qtbot.waitUntil(lambda: demo.bridge.process is not None, timeout=BACKEND_START_TIMEOUT_MS)
    process = demo.bridge.process
    demo.close()
    delete(demo)  # the window and its bridge are gone before the backend is
    qtbot.waitUntil(lambda: process.returncode is not None, timeout=10_000)
    qtbot.waitUntil(lambda: not run.root.exists(), timeout=10_000)
