"""Benchmark of the shadow workspace (issue 29's targets): making the shadow of a 10,000-file repository
(≤ 1 s) against ``git worktree add`` alone (as it comes, and with the parallel checkout the shadow uses;
the shadow itself is a repository of its own since issue 45, checked out the same way, with the secret list
applied),
and the capture after a one-file change (≤ 100 ms) against ``git status`` alone in the same shadow.
Prints JSON with medians over ``RUNS``; on a loaded machine compare figures of one run only.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from ide.changes.shadow import Shadow
from ide.settings import WorkspaceSettings
from ide.tools import Workspace

FILES = 10_000
PER_DIR = 100
UNCOMMITTED = 20
"""Files the user has edited but not committed: copied into every shadow."""
RUNS = 7
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, env=GIT_ENV, check=True, capture_output=True)


def make_repo(root: Path, files: int = FILES) -> Path:
    """``files`` small Python files in folders of ``PER_DIR``, one commit, ``UNCOMMITTED`` of them edited."""
    for i in range(files):
        path = root / f"pkg{i // PER_DIR}" / f"mod{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"value_{i}_{n} = {n}\n" for n in range(30)))
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "bench base")
    for i in range(UNCOMMITTED):
        with open(root / f"pkg{i // PER_DIR}" / f"mod{i}.py", "a") as handle:
            handle.write("# the user's edit\n")
    return root


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="arbor-bench-shadow-") as tmp:
        repo = make_repo(Path(tmp) / "repo")
        worktree_s, parallel_s, create_s, status_s, capture_s, clean_capture_s = [], [], [], [], [], []
        for run in range(RUNS):
            target = Path(tmp) / f"plain{run}"
            began = time.perf_counter()
            _git(repo, "worktree", "add", "-q", "--detach", str(target))
            worktree_s.append(time.perf_counter() - began)
            _git(repo, "worktree", "remove", "--force", str(target))
            began = time.perf_counter()
            _git(repo, "-c", "checkout.workers=0", "worktree", "add", "-q", "--detach", str(target))
            parallel_s.append(time.perf_counter() - began)
            _git(repo, "worktree", "remove", "--force", str(target))
            began = time.perf_counter()
            files = Workspace(repo, WorkspaceSettings())  # the secret list, as the backend gives it
            made = Shadow.create(repo, secret=lambda rel, files=files: files.is_secret(files.root / rel))
            create_s.append(time.perf_counter() - began)
            try:
                time.sleep(0.1)  # past the racy window, as an agent's first write is
                made.capture()  # the first capture reads the racy files once, as the first turn's does
                began = time.perf_counter()
                made.capture()
                clean_capture_s.append(time.perf_counter() - began)
                changed = made.root / "pkg50" / "mod5000.py"
                changed.write_text(changed.read_text() + "# the agent's edit\n")
                began = time.perf_counter()
                captured = made.capture()
                capture_s.append(time.perf_counter() - began)
                assert list(captured.changes) == ["pkg50/mod5000.py"], captured.changes
                began = time.perf_counter()
                _git(made.top, "status", "--porcelain")
                status_s.append(time.perf_counter() - began)
            finally:
                made.close()
        shutil.rmtree(repo, ignore_errors=True)

    def median_ms(values: list[float]) -> float:
        return round(statistics.median(values) * 1000, 1)

    print(
        json.dumps(
            {
                "files": FILES,
                "uncommitted": UNCOMMITTED,
                "runs": RUNS,
                "git_worktree_add_ms": median_ms(worktree_s),
                "git_worktree_add_parallel_checkout_ms": median_ms(parallel_s),
                "shadow_create_ms": median_ms(create_s),
                "git_status_ms": median_ms(status_s),
                "capture_one_change_ms": median_ms(capture_s),
                "capture_nothing_changed_ms": median_ms(clean_capture_s),
                "targets_ms": {"shadow_create": 1000, "capture_one_change": 100},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
