"""Review a scripted agent's edits to a real repository in the real window: decide, apply, roll back.

    python scripts/review_demo.py [--repo /path/to/git/repo] [--output PATH.png]

It clones ``--repo`` (default: this checkout's committed HEAD) into a temporary directory, opens the real
window offscreen on the clone with the real ``arbor acp`` backend and a scripted model whose turn reads
``ide/llm/spec.py``, edits it in three places, edits ``README.md`` and creates a test. Then, with the
Review pane's keys, it rejects README.md (Shift+R), accepts, rejects and accepts the three hunks of
spec.py (a, r, a) and accepts the new test (Shift+A); it saves a screenshot mid-review, clicks Apply,
checks the clone's new commit, rolls the batch back from the History tab and checks the files are as
before. Every step prints one JSON line; the exit code is 1 when a step fails. Nothing outside the
temporary directory is touched except the screenshot, written to ``--output`` or by default to a new
temporary directory (the path is printed), never into the checkout: the backend's data and config dirs and
the window's QSettings all point into the temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import qasync
from PySide6.QtCore import QCoreApplication, QSettings, Qt, QtMsgType, SignalInstance, qInstallMessageHandler
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QSplitter

from ide.app.background import next_emission
from ide.app.chat.part import ChatDock
from ide.app.main import configure_application
from ide.app.review.part import ReviewDock
from ide.app.window import MainWindow
from ide.app.workspace.part import WorkspaceDock

REPO = Path(__file__).resolve().parent.parent
TIMEOUT_S = 60.0
QUESTION = "Refuse model specs with whitespace inside the model name, and add a test for it."

SPEC = "ide/llm/spec.py"
README = "README.md"
NEW_TEST = "tests/llm/test_spec_whitespace.py"

SPEC_EDITS = [  # (old_text, new_text), in file order: one hunk each
    (
        'PROVIDERS = ("ollama", "openai", "anthropic", "scripted")\n',
        'PROVIDERS = ("ollama", "openai", "anthropic", "scripted")\n'
        '"""The providers a spec may name, in the order error messages list them."""\n',
    ),
    (
        '    return ModelError("settings", message, fix)\n',
        '    return ModelError("settings", message.rstrip(".") + ".", fix)\n',
    ),
    (
        "    model = model.strip()\n",
        "    model = model.strip()\n"
        '    if provider != "scripted" and any(char.isspace() for char in model):\n'
        "        raise _spec_error(\n"
        '            f"The model spec {raw!r} has whitespace inside the model name",\n'
        "            f\"Write it without spaces, e.g. {provider}:{''.join(model.split())}.\",\n"
        "        )\n",
    ),
]
SPEC_DECISIONS = ["accepted", "rejected", "accepted"]
README_EDIT = (
    "`scripted:FILE.jsonl` for tests and demos.",
    "`scripted:FILE.jsonl` for tests and demos. A model name with whitespace in it is refused with the fix.",
)
NEW_TEST_TEXT = '''"""A model spec with whitespace inside the model name is refused, naming the fix."""

import pytest

from ide.llm.errors import ModelError
from ide.llm.spec import parse_model_spec


def test_whitespace_inside_a_model_name_is_refused_with_the_fix() -> None:
    with pytest.raises(ModelError) as caught:
        parse_model_spec("ollama:qwen2.5 coder:7b")
    assert "whitespace" in caught.value.info.message
    assert caught.value.info.fix == "Write it without spaces, e.g. ollama:qwen2.5coder:7b."
'''


def model_script() -> list[dict[str, Any]]:
    edits = [
        {"name": "edit_file", "args": {"path": SPEC, "old_text": o, "new_text": n}} for o, n in SPEC_EDITS
    ]
    return [
        {
            "thinking": "Model specs are parsed in ide/llm/spec.py; I will read it before changing anything.",
            "tool_calls": [{"name": "read_file", "args": {"path": SPEC}}],
        },
        {
            "thinking": (
                "parse_model_spec strips the model name but accepts spaces inside it. I will refuse those "
                "with a fix, document PROVIDERS, mention it in the README and add a test."
            ),
            "tool_calls": [
                *edits,
                {
                    "name": "edit_file",
                    "args": {"path": README, "old_text": README_EDIT[0], "new_text": README_EDIT[1]},
                },
                {"name": "create_file", "args": {"path": NEW_TEST, "content": NEW_TEST_TEXT}},
            ],
        },
        {
            "content": (
                "`parse_model_spec` now refuses a model name with whitespace in it and names the fix "
                f"(**{SPEC}**); **{NEW_TEST}** pins it, and the README mentions it. Review the hunks "
                "before applying."
            )
        },
    ]


class StepFailed(Exception):
    pass


class Log:
    """One JSON line per step on stdout; ``check`` raises StepFailed after logging a failed step."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.failed = False

    def step(self, name: str, ok: bool = True, **details: Any) -> None:
        elapsed = round(time.perf_counter() - self.started, 2)
        print(json.dumps({"step": name, "ok": ok, "t_s": elapsed, **details}), flush=True)
        if not ok:
            self.failed = True
            raise StepFailed(name)


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


async def until(signal: SignalInstance, condition: Callable[[], bool], timeout: float = TIMEOUT_S) -> None:
    """Wait for emissions of ``signal`` until ``condition`` holds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        await next_emission([signal], max(0.01, deadline - asyncio.get_running_loop().time()))


def settle() -> None:
    """Deliver posted events (layout requests, deferred updates) so a grab shows the settled window."""
    for _ in range(3):
        QCoreApplication.sendPostedEvents()


async def press(window: MainWindow, key: Qt.Key, shift: bool = False) -> None:
    """Press ``key`` in the diff view and wait for the backend's updated change set."""
    review = window.part(ReviewDock).client
    pending = asyncio.ensure_future(next_emission([review.changesetReceived, review.failed], TIMEOUT_S))
    modifier = Qt.KeyboardModifier.ShiftModifier if shift else Qt.KeyboardModifier.NoModifier
    QTest.keyClick(window.part(ReviewDock).pane.unified, key, modifier)
    index, *args = await pending
    if index == 1:
        raise StepFailed(f"the backend refused the decision: {args}")


def states(window: MainWindow) -> dict[str, str]:
    model = window.part(ReviewDock).pane.files_model
    return {file.path: model.states[row] for row, file in enumerate(model.files)}


async def run(window: MainWindow, clone: Path, output: Path, log: Log) -> None:
    pane, bridge, review = window.part(ReviewDock).pane, window.bridge, window.part(ReviewDock).client
    originals = {path: (clone / path).read_text() for path in (SPEC, README)}
    head = git(clone, "rev-parse", "HEAD").strip()

    ready = asyncio.ensure_future(next_emission([bridge.sessionReady], TIMEOUT_S))
    window.start()
    await ready
    log.step("backend ready", agent=bridge.agent_name, review=pane.state.interactive)
    if not pane.state.interactive:
        log.step("review extension", ok=False)

    finished = asyncio.ensure_future(next_emission([bridge.turnFinished, bridge.errorRaised], TIMEOUT_S))
    window.send_prompt(QUESTION)
    index, *args = await finished
    if index == 1:
        log.step("turn", ok=False, error=args[0].text())
    stop_reason = args[0]
    await until(review.changesetReceived, lambda: pane.files_model.rowCount() == 3)
    on_disk = (
        all((clone / p).read_text() == t for p, t in originals.items()) and not (clone / NEW_TEST).exists()
    )
    files = {f.path: len(f.hunks) for f in pane.state.changeset.files} if pane.state.changeset else {}
    log.step(
        "turn proposed edits",
        ok=stop_reason == "end_turn" and files == {README: 1, SPEC: 3, NEW_TEST: 1} and on_disk,
        stop_reason=stop_reason,
        hunks_per_file=files,
        disk_untouched=on_disk,
        review_dock_visible=window.part(ReviewDock).dock.isVisible(),
    )

    # README.md is row 0 and selected: reject the whole file; the pane moves on to spec.py.
    await press(window, Qt.Key.Key_R, shift=True)
    now_on = pane.state.current_file_view().path  # type: ignore[union-attr]
    log.step("Shift+R README.md", ok=states(window)[README] == "rejected", now_on=now_on)
    for (name, key), decision in zip(
        (("a", Qt.Key.Key_A), ("r", Qt.Key.Key_R)), SPEC_DECISIONS, strict=False
    ):
        hunk = pane.state.current_hunk
        await press(window, key)
        decided = pane.state.changeset.files[pane.state.current_file].hunks[hunk].decision
        log.step(f"{name} on {SPEC} hunk {hunk + 1}", ok=decided == decision, decision=decided)

    # Mid-review: spec.py selected, hunk 1 accepted, hunk 2 rejected, hunk 3 current and pending.
    window.resizeDocks([window.part(ReviewDock).dock], [int(window.height() * 0.6)], Qt.Orientation.Vertical)
    body = pane.file_list.parentWidget()
    if isinstance(body, QSplitter):
        body.setSizes([360, max(1, body.width() - 360)])
    highlighted = asyncio.ensure_future(next_emission([window.viewer.highlighted], TIMEOUT_S))
    window.viewer.show_file(clone / SPEC, 51)
    await highlighted
    window.part(WorkspaceDock).panel.select(clone / SPEC)
    window.part(ChatDock).panel.flush()
    settle()
    output.parent.mkdir(parents=True, exist_ok=True)
    saved = window.grab().save(str(output))
    log.step(
        "screenshot",
        ok=saved,
        path=str(output),
        hunk=pane.state.current_hunk + 1,
        summary=pane.summary.text(),
    )

    hunk = pane.state.current_hunk
    await press(window, Qt.Key.Key_A)
    decided = [h.decision for f in pane.state.changeset.files if f.path == SPEC for h in f.hunks]
    log.step(f"a on {SPEC} hunk {hunk + 1}", ok=decided == SPEC_DECISIONS, decisions=decided)
    await press(window, Qt.Key.Key_A, shift=True)
    log.step(f"Shift+A {NEW_TEST}", ok=states(window)[NEW_TEST] == "accepted", states=states(window))

    applied = asyncio.ensure_future(next_emission([review.applied, review.failed], TIMEOUT_S))
    history = asyncio.ensure_future(next_emission([review.historyReceived], TIMEOUT_S))
    QTest.mouseClick(pane.apply_button, Qt.MouseButton.LeftButton)
    index, result, *_ = await applied
    await history
    if index == 1:
        log.step("apply", ok=False, error=result)
    batch = result.batch
    expected_spec = originals[SPEC]
    for (old, new), decision in zip(SPEC_EDITS, SPEC_DECISIONS, strict=True):
        if decision == "accepted":
            expected_spec = expected_spec.replace(old, new, 1)
    stat = git(clone, "show", "--stat", "--format=%H%n%B", "HEAD")
    committed = sorted(git(clone, "show", "--name-only", "--format=", "HEAD").split())
    trailer = next((line for line in stat.splitlines() if line.startswith("Arbor-Session:")), None)
    written = {
        SPEC: (clone / SPEC).read_text() == expected_spec,
        README: (clone / README).read_text() == originals[README],
        NEW_TEST: (clone / NEW_TEST).is_file() and (clone / NEW_TEST).read_text() == NEW_TEST_TEXT,
    }
    log.step(
        "apply",
        ok=(
            batch is not None
            and not result.conflicts
            and sorted(batch.paths) == [SPEC, NEW_TEST]
            and committed == [SPEC, NEW_TEST]
            and trailer is not None
            and git(clone, "rev-parse", "HEAD~1").strip() == head
            and all(written.values())
            and git(clone, "status", "--porcelain") == ""
        ),
        batch=batch.id if batch else None,
        batch_paths=sorted(batch.paths) if batch else None,
        commit_paths=committed,
        trailer=trailer,
        files_as_decided=written,
        left_in_review=pane.files_model.rowCount(),
        result=pane.result_label.text(),
    )
    log.step("git show --stat HEAD", lines=[line for line in stat.splitlines()[1:] if line.strip()])

    tests = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", NEW_TEST],
        cwd=clone,
        capture_output=True,
        text=True,
    )
    tail = tests.stdout.strip().splitlines()[-1:] if tests.stdout.strip() else [tests.stderr.strip()[-300:]]
    log.step("accepted test passes in the clone", ok=tests.returncode == 0, pytest=tail)

    history = asyncio.ensure_future(next_emission([review.historyReceived], TIMEOUT_S))
    pane.tabs.setCurrentIndex(pane.tabs.indexOf(pane.history_tree.parentWidget()))
    await history
    items = pane.history_tree.topLevelItemCount()
    pane.history_tree.setCurrentItem(pane.history_tree.topLevelItem(0))
    log.step("History tab", ok=items == 1 and pane.rollback_button.isEnabled(), batches=items)

    rolled = asyncio.ensure_future(next_emission([review.rolledBack, review.failed], TIMEOUT_S))
    history = asyncio.ensure_future(next_emission([review.historyReceived], TIMEOUT_S))
    QTest.mouseClick(pane.rollback_button, Qt.MouseButton.LeftButton)  # asks first
    next(b for b in pane.rollback_confirm.buttons() if b.text() == "Roll back").click()
    index, rollback, *_ = await rolled
    await history
    if index == 1:
        log.step("roll back", ok=False, error=rollback)
    restored = {path: (clone / path).read_text() == text for path, text in originals.items()}
    restored[NEW_TEST] = not (clone / NEW_TEST).exists()
    log.step(
        "roll back",
        ok=(
            not rollback.refused
            and all(restored.values())
            and git(clone, "rev-parse", "HEAD~2").strip() == head
            and git(clone, "status", "--porcelain") == ""
        ),
        restored=sorted(rollback.restored),
        files_as_before=restored,
        head=git(clone, "log", "-1", "--format=%s").strip(),
        history_state=pane.history_tree.topLevelItem(0).text(4),
    )


def _quiet_offscreen(kind: QtMsgType, context: Any, message: str) -> None:
    # The offscreen platform warns about window size hints it cannot honour; nothing else is hidden.
    if "propagateSizeHints" not in message:
        sys.stderr.write(message + "\n")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The options; ``output`` defaults to review.png in a new temporary directory, never the checkout."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=REPO, help="git repository to clone (default: Arbor)")
    parser.add_argument("--output", type=Path, default=None, help="the screenshot (default: a temporary dir)")
    parser.add_argument("--size", default="1280x800", help="window size, WIDTHxHEIGHT")
    parser.add_argument(
        "--backend-from-clone",
        action="store_true",
        help="run the backend from the clone's sources (the repository's HEAD) instead of this checkout",
    )
    args = parser.parse_args(argv)
    if args.output is None:
        args.output = Path(tempfile.mkdtemp(prefix="arbor-review-demo-out-")) / "review.png"
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    width, height = (int(part) for part in args.size.lower().split("x"))
    log = Log()

    with tempfile.TemporaryDirectory(prefix="arbor-review-demo-") as temp:
        root = Path(temp)
        clone = root / "arbor-clone"
        subprocess.run(["git", "clone", "-q", str(args.repo), str(clone)], check=True)
        tracked = len(git(clone, "ls-files").splitlines())
        missing = [
            old
            for path, old in [*((SPEC, old) for old, _ in SPEC_EDITS), (README, README_EDIT[0])]
            if (clone / path).read_text().count(old) != 1
        ]
        log.step(
            "clone",
            ok=not missing,
            path=str(clone),
            tracked_files=tracked,
            head=git(clone, "log", "-1", "--format=%h %s").strip(),
        )
        script = root / "model.jsonl"
        script.write_text("".join(json.dumps(line) + "\n" for line in model_script()))
        backend_env = {
            "ARBOR_MODEL": f"scripted:{script}",
            "ARBOR_DATA_DIR": str(root / "data"),
            "ARBOR_CONFIG_DIR": str(root / "config"),
            "GIT_AUTHOR_NAME": "Arbor demo",
            "GIT_AUTHOR_EMAIL": "demo@arbor.invalid",
            "GIT_COMMITTER_NAME": "Arbor demo",
            "GIT_COMMITTER_EMAIL": "demo@arbor.invalid",
        }
        backend_command = None
        if args.backend_from_clone:  # -P: not this directory's ide/ ahead of PYTHONPATH
            backend_command = [sys.executable, "-P", "-m", "ide", "acp"]
            backend_env["PYTHONPATH"] = str(clone)

        qInstallMessageHandler(_quiet_offscreen)
        app = QApplication([sys.argv[0]])
        configure_application(app)
        QCoreApplication.setOrganizationName("arbor-review-demo")
        QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(root / "qsettings"))
        loop = qasync.QEventLoop(app)
        asyncio.set_event_loop(loop)
        window = MainWindow(clone, backend_command=backend_command, backend_env=backend_env)
        window.resize(width, height)
        window.show()
        with loop:
            try:
                loop.run_until_complete(run(window, clone, args.output, log))
            except StepFailed:
                pass
            except Exception as exc:  # a timeout or a crash is a failed step too
                log.failed = True
                print(json.dumps({"step": "error", "ok": False, "error": f"{type(exc).__name__}: {exc}"}))
            finally:
                window.close()
                loop.run_until_complete(window.bridge.aclose())
    print(
        json.dumps(
            {"result": "failed" if log.failed else "ok", "t_s": round(time.perf_counter() - log.started, 2)}
        )
    )
    return 1 if log.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
