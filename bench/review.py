"""Benchmark of batched review: a 300-file / 3,000-hunk change set built, viewed, applied, checkpointed and
rolled back.

Prints JSON. ``make_bench_repo`` and ``build_bench_changeset`` make the same change set for other timings
(e.g. the review pane's).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from ide.changes import BatchStore, ChangeSet, Review, rollback_batch
from ide.changes.hunks import patch_text
from ide.changes.review import file_changes
from ide.protocol.review import DecideParams

FILES = 300
HUNKS_PER_FILE = 10
GAP = 12  # lines between edits: more than 2×3 context lines, so every edit is its own hunk
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def _git(root: Path, *args: str, input: bytes | None = None) -> None:
    subprocess.run(["git", *args], cwd=root, env=GIT_ENV, check=True, capture_output=True, input=input)


def make_bench_repo(root: Path, files: int = FILES, hunks_per_file: int = HUNKS_PER_FILE) -> Path:
    """A git repository with ``files`` Python files of ``hunks_per_file`` × 12 lines, one commit."""
    for i in range(files):
        path = root / f"pkg{i % 10}" / f"mod{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            "".join(f"value_{i}_{n} = {n}  # line {n}\n" for n in range(hunks_per_file * GAP + GAP))
        )
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "bench base")
    return root


def build_bench_changeset(
    root: Path, files: int = FILES, hunks_per_file: int = HUNKS_PER_FILE, cs: ChangeSet | None = None
) -> ChangeSet:
    """The change set of the benchmark: ``hunks_per_file`` separate one-line edits in each file, made in
    ``cs`` when given (a review's change set, as a session's agent edits its review's)."""
    cs = ChangeSet(root) if cs is None else cs
    for i in range(files):
        rel = f"pkg{i % 10}/mod{i}.py"
        for h in range(hunks_per_file):
            n = GAP // 2 + h * GAP
            cs.edit(
                rel,
                f"value_{i}_{n} = {n}  #",
                f"value_{i}_{n} = {n * 100}  # changed\nextra_{i}_{n} = True  #",
            )
    return cs


def _checkpoint_bytes(store: BatchStore, root: Path, batch_id: str) -> int:
    total = 0
    for entry in store.files(batch_id):
        if entry.pre_blob:
            out = subprocess.run(
                ["git", "cat-file", "-s", entry.pre_blob], cwd=root, capture_output=True, check=True
            )
            total += int(out.stdout)
    return total


def _repo_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and ".git" not in p.parts)


def run(repeats: int = 5) -> dict[str, object]:
    build_ms, view_ms, apply_s, peer_s = [], [], [], []
    rollback_s: list[float] = []
    peer_revert_s: list[float] = []
    result: dict[str, object] = {}
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="arbor-bench-") as tmp:
            root = make_bench_repo(Path(tmp) / "repo")
            start = time.perf_counter()
            cs = build_bench_changeset(root)
            built = time.perf_counter()
            review = Review(cs, session_id="bench", title="bench", store=BatchStore(Path(tmp) / "data"))
            view = review.view()
            shown = time.perf_counter()
            build_ms.append((built - start) * 1000)
            view_ms.append((shown - built) * 1000)
            hunks = sum(len(f.hunks) for f in view.files)
            patch = b"".join(_whole_patch(cs))
            review.decide(DecideParams(session_id="bench", decision="accepted", all=True))
            start = time.perf_counter()
            applied = review.apply()
            apply_s.append(time.perf_counter() - start)
            assert applied.batch is not None and applied.batch.commit and not applied.conflicts
            store = review.store
            big = _checkpoint_bytes(store, root, applied.batch.id)
            start = time.perf_counter()
            undone = rollback_batch(root, store, applied.batch.id)
            rollback_s.append(time.perf_counter() - start)
            assert len(undone.restored) == FILES and not undone.refused

            small = ChangeSet(root)
            for i in range(3):
                small.edit(f"pkg{i % 10}/mod{i}.py", f"value_{i}_0 = 0", f"value_{i}_0 = -1")
            review = Review(small, session_id="bench", title="small", store=store)
            review.decide(DecideParams(session_id="bench", decision="accepted", all=True))
            small_batch = review.apply().batch
            assert small_batch is not None
            result = {
                "files": len(view.files),
                "hunks": hunks,
                "repo_bytes": _repo_bytes(root),
                "checkpoint_bytes_300_files": big,
                "checkpoint_bytes_3_files": _checkpoint_bytes(store, root, small_batch.id),
            }

            peer = make_bench_repo(Path(tmp) / "peer")
            start = time.perf_counter()
            _git(peer, "apply", "-", input=patch)
            _git(peer, "commit", "-qam", "peer")
            peer_s.append(time.perf_counter() - start)
            start = time.perf_counter()
            _git(peer, "revert", "--no-edit", "HEAD")
            peer_revert_s.append(time.perf_counter() - start)
    apply_median = statistics.median(apply_s)
    peer_median = statistics.median(peer_s)
    return {
        "benchmark": "review",
        "repeats": repeats,
        **result,
        "build_changeset_ms": round(statistics.median(build_ms), 1),
        "view_ms": round(statistics.median(view_ms), 1),
        "build_plus_view_ms": round(
            statistics.median(b + v for b, v in zip(build_ms, view_ms, strict=True)), 1
        ),
        "apply_all_s": round(apply_median, 3),
        "apply_target_s": 2.0,
        "peer_git_apply_commit_s": round(peer_median, 3),
        "apply_vs_peer_ratio": round(apply_median / peer_median, 2),
        "rollback_s": round(statistics.median(rollback_s), 3),
        "peer_git_revert_s": round(statistics.median(peer_revert_s), 3),
        "rollback_vs_peer_ratio": round(statistics.median(rollback_s) / statistics.median(peer_revert_s), 2),
    }


def _whole_patch(cs: ChangeSet) -> list[bytes]:
    return [patch_text(f.path, f.hunks) for f in file_changes(cs)]


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
