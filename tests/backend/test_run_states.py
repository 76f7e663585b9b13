"""A run's branches kept in the session store: each file's bytes once however many branches hold them, read
back exactly, and only the newest runs of a session kept."""

from __future__ import annotations

from pathlib import Path

from ide.backend.runs import Kept, RunBook, decode_kept, encode_kept
from ide.backend.store import KEPT_RUN_STATES, SessionStore
from ide.changes import ChangeSet
from ide.changes.snapshot import decode_changesets, encode_changesets
from ide.protocol.tree import ForkOrigin, SearchTree
from ide.search.tree import TreeRecorder


def test_branches_are_kept_with_each_files_bytes_once_and_read_back_exactly(git_workspace: Path) -> None:
    start = ChangeSet(git_workspace)
    first = start.child()
    first.edit("pkg/greet.py", "Hello", "Hi")
    second = first.child()
    second.create("NOTES.md", "notes\n")
    data = encode_changesets([first, second])
    # greet.py's base and its edit are shared by both branches: two blobs, plus the new file's one.
    assert len(data["blobs"]) == 3
    back = decode_changesets(data)
    assert set(back) == {first.id, second.id}
    assert back[second.id].changed_paths() == ["NOTES.md", "pkg/greet.py"]
    assert back[first.id].read_text("pkg/greet.py") == first.read_text("pkg/greet.py")
    assert decode_changesets(data)[first.id].changed_paths() == ["pkg/greet.py"]  # data left as it was


def test_the_state_after_a_node_is_its_nearest_kept_one(git_workspace: Path) -> None:
    changeset = ChangeSet(git_workspace)
    branches: dict[str, ChangeSet] = {}
    recorder = TreeRecorder(architecture="react")
    recorder.keep_start(changeset, branches)
    root = recorder.add(None, kind="root", label="task")
    step = recorder.add(root, kind="thought", label="step 1")
    action = recorder.add(step, kind="action", label="edit")
    recorder.keep_state(action, changeset, branches)  # nothing changed yet: the start's snapshot again
    assert recorder.states[action] == recorder.start_state
    changeset.edit("pkg/greet.py", "Hello", "Hi")
    recorder.keep_state(action, changeset, branches)
    after = recorder.add(action, kind="thought", label="step 2")
    changeset.edit("pkg/greet.py", "Hi", "Hey")  # after the node: not its state
    kept = decode_kept(
        encode_kept(SearchTree(recorder.tree.events), Kept(branches, recorder.states, recorder.start_state))
    )
    assert kept is not None
    tree = recorder.tree
    assert kept.branch_of(tree, root).changed_paths() == []  # type: ignore[union-attr]
    assert "Hi," in kept.branch_of(tree, after).read_text("pkg/greet.py")  # type: ignore[union-attr]
    assert "Hi," in kept.branch_of(tree, action).read_text("pkg/greet.py")  # type: ignore[union-attr]


def test_the_store_keeps_the_newest_runs_branches(tmp_path: Path, git_workspace: Path) -> None:
    store = SessionStore(tmp_path / "data")
    cwd = str(git_workspace)
    store.create("s", cwd, "react")
    for number in range(KEPT_RUN_STATES + 2):
        store.save_run_states("s", cwd, f"run{number}", {"version": 1, "number": number})
    kept = store.kept_runs("s", cwd)
    assert kept == {f"run{number}" for number in range(2, KEPT_RUN_STATES + 2)}
    assert store.load_run_states("s", cwd, "run0") is None
    assert store.load_run_states("s", cwd, f"run{KEPT_RUN_STATES + 1}") == {
        "version": 1,
        "number": KEPT_RUN_STATES + 1,
    }
    store.close()


async def test_a_continued_run_goes_on_with_its_origins_task_whatever_its_root_says(tmp_path: Path) -> None:
    """A continued LATS or ToT run's root is a copy of the node it continued from, its thought that node's
    reasoning: continuing it again must give the model the first run's task, not that thought."""
    store = SessionStore(tmp_path / "data")
    cwd = str(tmp_path)
    store.create("s", cwd, "lats")
    book = RunBook(store, "s", cwd)
    first = TreeRecorder(architecture="lats")
    root = first.add(None, kind="root", label="Make greet say Hi")
    node = first.add(root, kind="action", label="edit greet.py", thought="I will edit greet.py first")
    book.hold(first, {})
    second = TreeRecorder(architecture="lats", forked_from=ForkOrigin(run_id=first.run_id, node_id=node))
    second.add(None, kind="root", label="edit greet.py", thought="I will edit greet.py first")
    book.hold(second, {})
    third = TreeRecorder(architecture="react", forked_from=ForkOrigin(run_id=second.run_id, node_id="n1"))
    third.add(None, kind="root", label="go on")
    book.hold(third, {})
    tasks = {run.tree.run_id: run.task for run in await book.runs()}
    assert tasks == {
        first.run_id: "Make greet say Hi",
        second.run_id: "Make greet say Hi",
        third.run_id: "Make greet say Hi",
    }
    store.close()
