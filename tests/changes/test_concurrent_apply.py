"""Two Applies on one workspace never lose an update (issue 27, item 7).

Both change sets are made from the same base of the same file. The race of the issue — one Apply planned,
the other applying whole, then the first writing and committing — is forced by pausing the first Apply
after it planned until the second has finished or is waiting for the workspace lock; on main the first
then wrote over the second's change (3 of 3 trials). Also: a commit that lands between an Apply's plan
and its commit is never overwritten, and another process holding the lock makes Apply and Roll back wait,
then say so, before anything is written.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ide.changes import BatchStore, ChangeError, ChangeSet, Review, rollback_batch
from ide.changes import review as review_module
from ide.protocol.review import ApplyResult, DecideParams
from tests.support.git import git

LINES = [f"line {i}\n" for i in range(40)]


def workspace(root: Path) -> Path:
    (root / "notes.txt").write_text("".join(LINES))
    git(root, "add", "notes.txt")
    git(root, "commit", "-qm", "notes")
    return root


def review_of(root: Path, store: BatchStore, old: str, new: str) -> Review:
    changes = ChangeSet(root)
    changes.edit("notes.txt", old, new)
    review = Review(changes, session_id="s", title=f"edit {new.strip()}", store=store)
    review.decide(DecideParams(session_id="s", decision="accepted", all=True))
    return review


def waiting_for_the_lock(thread: threading.Thread) -> bool:
    """Whether ``thread`` is inside the Apply lock's wait (its frames name ide/changes/applylock.py)."""
    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None:
        if frame.f_code.co_filename.endswith("applylock.py"):
            return True
        frame = frame.f_back
    return False


def race(root: Path, store: BatchStore, first: Review, second: Review) -> list[ApplyResult | Exception]:
    """Apply ``first`` and ``second`` in two threads; ``first`` pauses after planning until ``second``
    has finished or waits for the lock."""
    results: list[ApplyResult | Exception] = [ChangeError("not run"), ChangeError("not run")]
    second_done = threading.Event()
    planned = threading.Event()
    real_same_repository = review_module.same_repository

    def run(index: int, review: Review) -> None:
        try:
            results[index] = review.apply()
        except Exception as exc:
            results[index] = exc
        finally:
            if index == 1:
                second_done.set()

    other = threading.Thread(target=run, args=(1, second))

    def pause_first(expected, where):  # type: ignore[no-untyped-def]
        if threading.current_thread() is not other and not planned.is_set():
            planned.set()
            other.start()
            for _ in range(2000):  # bounded: the second finishes or blocks within milliseconds
                if second_done.wait(0.005) or waiting_for_the_lock(other):
                    break
        return real_same_repository(expected, where)

    review_module.same_repository = pause_first
    try:
        run(0, first)
        other.join(60)
    finally:
        review_module.same_repository = real_same_repository
    assert planned.is_set() and not other.is_alive()
    return results


def test_two_applies_of_one_file_keep_both_changes(git_workspace: Path, tmp_path: Path) -> None:
    root = workspace(git_workspace)
    store = BatchStore(tmp_path / "data")
    first = review_of(root, store, "line 2\n", "line 2 from the first\n")
    second = review_of(root, store, "line 30\n", "line 30 from the second\n")

    results = race(root, store, first, second)

    assert all(isinstance(r, ApplyResult) and r.batch is not None for r in results), results
    disk = (root / "notes.txt").read_text()
    assert "line 2 from the first" in disk and "line 30 from the second" in disk, "an Apply lost an update"
    assert git(root, "show", "HEAD:notes.txt") == disk
    assert git(root, "status", "--porcelain") == ""


def test_two_applies_of_one_line_never_both_report_applied(git_workspace: Path, tmp_path: Path) -> None:
    root = workspace(git_workspace)
    store = BatchStore(tmp_path / "data")
    first = review_of(root, store, "line 5\n", "line 5 the first way\n")
    second = review_of(root, store, "line 5\n", "line 5 the second way\n")

    first_result, second_result = race(root, store, first, second)

    assert isinstance(first_result, ApplyResult) and first_result.batch is not None
    assert isinstance(second_result, ApplyResult) and second_result.batch is None
    assert [c.path for c in second_result.conflicts] == ["notes.txt"]
    disk = (root / "notes.txt").read_text()
    assert "line 5 the first way" in disk and git(root, "show", "HEAD:notes.txt") == disk


def test_a_commit_landing_after_the_plan_is_never_overwritten(git_workspace: Path, tmp_path: Path) -> None:
    """The user has an uncommitted edit in the file; the agent's change is replayed onto HEAD without it.
    While that Apply runs, the user commits their edit: committing the replay on top would revert it."""
    root = workspace(git_workspace)
    (root / "notes.txt").write_text("".join(LINES).replace("line 20\n", "line 20 by the user\n"))
    review = review_of(root, BatchStore(tmp_path / "data"), "line 2\n", "line 2 by the agent\n")
    real_check = review_module.check_trackable

    def user_commits(*args):  # type: ignore[no-untyped-def]
        real_check(*args)
        git(root, "commit", "-qam", "the user's edit")

    review_module.check_trackable = user_commits
    try:
        with pytest.raises(ChangeError, match="HEAD moved"):
            review.apply()
    finally:
        review_module.check_trackable = real_check
    committed = git(root, "show", "HEAD:notes.txt")
    assert "line 20 by the user" in committed, "the user's commit was reverted"
    assert git(root, "log", "-1", "--format=%s") == "the user's edit\n"
    assert (root / "notes.txt").read_text() == committed  # Apply's write was put back

    result = review.apply()  # again, now on top of the user's commit
    assert result.batch is not None
    assert git(root, "show", "HEAD:notes.txt").count("by the") == 2


HOLDER = """
import sys
from pathlib import Path
from ide.changes.applylock import workspace_lock
with workspace_lock(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_apply_and_roll_back_wait_for_another_process_then_say_so(
    git_workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = workspace(git_workspace)
    store = BatchStore(tmp_path / "data")
    applied = review_of(root, store, "line 1\n", "line 1 applied\n").apply()
    assert applied.batch is not None
    review = review_of(root, store, "line 3\n", "line 3 waiting\n")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        monkeypatch.setattr("ide.changes.applylock.WAIT_S", 0.2)
        with pytest.raises(ChangeError, match=rf"another Apply or Roll back is still running .*{holder.pid}"):
            review.apply()
        with pytest.raises(ChangeError, match="another Apply or Roll back is still running"):
            rollback_batch(root, store)
        assert "waiting" not in (root / "notes.txt").read_text()
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(30)
    assert review.apply().batch is not None
    assert rollback_batch(root, store).batch.state == "rolled_back"
