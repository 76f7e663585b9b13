"""Benchmark of the shadow workspace (issue 29's targets, issue 50's at 100,000 files): making the shadow
of a repository of ``--files`` files (10,000 by default; ``--files 100000`` for a kernel-sized tree) against
``git worktree add`` alone (as it comes — issue 50's peer — and with the parallel checkout the shadow uses,
which is the shadow's checkout alone; the shadow itself is a repository of its own since issue 45, checked
out the same way, with the secret list applied), and the capture after a one-file change against ``git
status`` alone in the same shadow.

The repository is generated in a temp dir with ``git fast-import`` (one commit, no ``git add`` of 100,000
paths) and checked out once. Prints JSON with medians over ``--runs`` and the ratios of those medians to
the peer measured in the same run, with the load average; on a loaded machine compare figures of one run.
"""

from __future__ import annotations

import argparse
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


def _git(root: Path, *args: str, input: bytes | None = None) -> None:
    subprocess.run(["git", *args], cwd=root, env=GIT_ENV, check=True, capture_output=True, input=input)


def module_path(i: int) -> str:
    """The ``i``-th generated file, repository-relative."""
    return f"pkg{i // PER_DIR}/mod{i}.py"


def _fast_import_stream(files: int) -> bytes:
    """One commit on ``main`` holding ``files`` small Python files, as ``git fast-import`` reads it."""
    parts = [b"commit refs/heads/main\ncommitter bench <bench@example.com> 1700000000 +0000\n"]
    parts.append(b"data 10\nbench base\n")
    for i in range(files):
        body = "".join(f"value_{i}_{n} = {n}\n" for n in range(30)).encode()
        parts.append(b"M 100644 inline %s\ndata %d\n%s\n" % (module_path(i).encode(), len(body), body))
    parts.append(b"\n")
    return b"".join(parts)


def make_repo(root: Path, files: int = FILES, uncommitted: int = UNCOMMITTED) -> Path:
    """``files`` small Python files in folders of ``PER_DIR``, one commit, ``uncommitted`` of them edited."""
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "fast-import", "--quiet", input=_fast_import_stream(files))
    _git(root, "-c", "checkout.workers=0", "checkout", "-q", "-f", "main")
    for i in range(uncommitted):
        with open(root / module_path(i), "a") as handle:
            handle.write("# the user's edit\n")
    _git(root, "status", "--porcelain")  # the user's index refreshed, as a user's usually is
    return root


def measure(files: int, runs: int) -> dict[str, object]:
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="arbor-bench-shadow-") as tmp:
        began = time.perf_counter()
        repo = make_repo(Path(tmp) / "repo", files)
        generated_s = time.perf_counter() - began
        worktree_s, parallel_s, create_s, status_s, capture_s, clean_capture_s = [], [], [], [], [], []
        status_again_s: list[float] = []
        first_capture_s: list[float] = []
        changed_rel = module_path(files // 2)
        for run in range(runs):
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
            workspace = Workspace(repo, WorkspaceSettings())  # the secret list, as the backend gives it
            made = Shadow.create(repo, secret=workspace.is_secret_rel)  # as the backend makes it
            create_s.append(time.perf_counter() - began)
            try:
                time.sleep(0.1)  # past the racy window, as an agent's first write is
                began = time.perf_counter()
                made.capture()  # the first capture reads the racy files once, as the first turn's does
                first_capture_s.append(time.perf_counter() - began)
                began = time.perf_counter()
                made.capture()
                clean_capture_s.append(time.perf_counter() - began)
                changed = made.root / changed_rel
                changed.write_text(changed.read_text() + "# the agent's edit\n")
                began = time.perf_counter()
                captured = made.capture()
                capture_s.append(time.perf_counter() - began)
                assert list(captured.changes) == [changed_rel], captured.changes
                began = time.perf_counter()
                _git(made.top, "status", "--porcelain")
                status_s.append(time.perf_counter() - began)
                began = time.perf_counter()  # again: its first run rehashes what the checkout left racy
                _git(made.top, "status", "--porcelain")
                status_again_s.append(time.perf_counter() - began)
            finally:
                made.close()
        shutil.rmtree(repo, ignore_errors=True)

    def median_ms(values: list[float]) -> float:
        return round(statistics.median(values) * 1000, 1)

    def ratio(mine: list[float], peer: list[float]) -> float:
        return round(statistics.median(mine) / statistics.median(peer), 2)

    return {
        "files": files,
        "uncommitted": UNCOMMITTED,
        "runs": runs,
        "generate_repo_s": round(generated_s, 1),
        "git_worktree_add_ms": median_ms(worktree_s),
        "git_worktree_add_parallel_checkout_ms": median_ms(parallel_s),
        "shadow_create_ms": median_ms(create_s),
        "git_status_ms": median_ms(status_s),
        "git_status_again_ms": median_ms(status_again_s),
        "capture_one_change_ms": median_ms(capture_s),
        "capture_nothing_changed_ms": median_ms(clean_capture_s),
        "capture_first_ms": median_ms(first_capture_s),
        "shadow_create_vs_worktree_add": ratio(create_s, worktree_s),
        "shadow_create_vs_worktree_add_parallel": ratio(create_s, parallel_s),
        "capture_one_change_vs_git_status": ratio(capture_s, status_s),
        "capture_one_change_vs_git_status_again": ratio(capture_s, status_again_s),
        # Issue 50's peer is `git worktree add` as git comes; the parallel one is the shadow's own checkout
        # alone, which the shadow can only match (it is that checkout plus its own work).
        "targets": {"shadow_create_vs_worktree_add": 1.0, "capture_one_change_vs_git_status": 0.5}
        | ({"capture_one_change_ms": 100} if files >= 100_000 else {"shadow_create_ms": 1000}),
        "load_average": {
            "before": [round(v, 2) for v in load_before],
            "after": [round(v, 2) for v in os.getloadavg()],
        },
        "samples_ms": {
            "shadow_create": [round(v * 1000, 1) for v in create_s],
            "git_worktree_add_parallel_checkout": [round(v * 1000, 1) for v in parallel_s],
            "capture_one_change": [round(v * 1000, 1) for v in capture_s],
            "git_status": [round(v * 1000, 1) for v in status_s],
            "git_status_again": [round(v * 1000, 1) for v in status_again_s],
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--files", type=int, default=FILES, help=f"files in the repository (default {FILES:,})"
    )
    parser.add_argument("--runs", type=int, default=RUNS, help=f"runs, medians taken (default {RUNS})")
    args = parser.parse_args()
    print(json.dumps(measure(args.files, args.runs), indent=2))


if __name__ == "__main__":
    main()
