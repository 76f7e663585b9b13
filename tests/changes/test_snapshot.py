"""Review snapshots: a pending review survives a backend restart exactly, bases and all."""

from __future__ import annotations

import copy
import json
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from ide.changes import BatchStore, ChangeError, ChangeSet, Review
from ide.protocol.review import DecideParams
from tests.support.git import git

CRLF = b"".join(b"line %d\r\n" % i for i in range(1, 21))
LATIN1 = "caf\xe9 au lait\nna\xefve\nfin\n".encode("latin-1")
BINARY = bytes(range(256)) * 4


def make_workspace(root: Path, *, repo: bool) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "notes.txt").write_bytes(CRLF)
    (root / "legacy.txt").write_bytes(LATIN1)
    (root / "logo.bin").write_bytes(BINARY)
    (root / "old.txt").write_text("goodbye\n")
    (root / "src" / "a.py").write_text("one\ntwo\nthree\n")
    (root / "script.sh").write_text("#!/bin/sh\necho hi\n")
    (root / "script.sh").chmod(0o755)
    if repo:
        git(root, "init", "-q")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "start")
    return root


def agent_edits(cs: ChangeSet) -> None:
    cs.edit("notes.txt", "line 3\n", "line three\n")
    cs.edit("notes.txt", "line 18\n", "line eighteen\n")
    cs.edit("legacy.txt", "caf\xe9 au lait", "caf\xe9 cr\xe8me")
    cs.write_bytes("logo.bin", BINARY[::-1])
    cs.write_bytes("img/new.bin", b"\x89PNG\x00\x01\x02")
    cs.create("docs/new.md", "# new\n")
    cs.delete("old.txt")
    cs.rename("src/a.py", "src/b.py")
    cs.edit("src/b.py", "two", "TWO")
    cs.edit("script.sh", "echo hi", "echo hello")


def decide(review: Review, decision: str, **kw: Any) -> None:
    review.decide(DecideParams(session_id=review.session_id, decision=decision, **kw))  # type: ignore[arg-type]


def hunks_of(review: Review, path: str) -> list[str]:
    return [h.id for f in review.view().files if f.path == path for h in f.hunks]


def first_decisions(review: Review) -> None:
    """Some hunks accepted, some rejected, some left pending; some commented."""
    notes = hunks_of(review, "notes.txt")
    assert len(notes) == 2
    decide(review, "accepted", hunk_ids=[notes[0]])
    decide(review, "pending", hunk_ids=[notes[1]], comment="later, and say why")
    decide(review, "accepted", paths=["legacy.txt", "logo.bin", "old.txt", "script.sh"])
    decide(review, "rejected", paths=["docs/new.md"], comment="not needed")
    rename, content = hunks_of(review, "src/b.py")
    decide(review, "accepted", hunk_ids=[rename])
    decide(review, "pending", hunk_ids=[content], comment="why upper case?")


def new_review(root: Path, store: BatchStore, mode: str) -> Review:
    review = Review(ChangeSet(root), session_id="s1", title="Mixed edits", store=store, commit_mode=mode)
    agent_edits(review.changeset)
    first_decisions(review)
    return review


def restart(review: Review, store_dir: Path, **kw: Any) -> Review:
    """What a backend restart does: the snapshot goes through JSON text and a fresh store."""
    text = json.dumps(review.snapshot(), separators=(",", ":"))
    return Review.restore(json.loads(text), store=BatchStore(store_dir), **kw)


def tree(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def comparable(view: Any) -> dict[str, Any]:
    return view.model_dump(exclude={"cwd"})


def test_round_trip_through_json_gives_the_identical_review(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", repo=False)
    review = new_review(root, BatchStore(tmp_path / "data"), "none")
    before = review.view()
    restored = restart(review, tmp_path / "data")

    assert restored.view() == before
    assert restored.view().cwd == str(root.resolve())
    assert (restored.session_id, restored.title, restored.commit_mode) == ("s1", "Mixed edits", "none")
    assert restored.changeset.id == review.changeset.id
    statuses = {f.path: f.status for f in before.files}
    assert statuses == {
        "docs/new.md": "added",
        "img/new.bin": "added",
        "legacy.txt": "modified",
        "logo.bin": "modified",
        "notes.txt": "modified",
        "old.txt": "deleted",
        "script.sh": "modified",
        "src/b.py": "renamed",
    }
    decisions = {h.id: (h.decision, h.comment) for f in before.files for h in f.hunks}
    assert set(decisions.values()) >= {("accepted", None), ("rejected", "not needed"), ("pending", None)}
    assert ("pending", "later, and say why") in decisions.values()

    # Reads through the overlay see the same bytes, modes and tree.
    a, b = review.changeset, restored.changeset
    for path in [*statuses, "src/a.py"]:
        assert a.exists(path) == b.exists(path)
        if a.exists(path):
            assert a.read_bytes(path) == b.read_bytes(path)
            assert a.mode(path) == b.mode(path)
        assert a.diff_texts(path) == b.diff_texts(path)
    assert b.read_bytes("notes.txt") == CRLF.replace(b"line 3\r\n", b"line three\r\n").replace(
        b"line 18\r\n", b"line eighteen\r\n"
    )
    assert b.read_bytes("legacy.txt") == LATIN1.replace(b"au lait", "cr\xe8me".encode("latin-1"))
    assert b.read_bytes("logo.bin") == BINARY[::-1]
    assert b.mode("script.sh") == 0o755
    for directory in (".", "src", "img", "docs"):
        assert a.listdir(directory) == b.listdir(directory)
    assert a.changed_paths() == b.changed_paths()

    # Snapshotting the restored review gives the same snapshot: nothing was lost or re-read.
    assert restored.snapshot() == json.loads(json.dumps(review.snapshot()))
    # The disk was never written.
    assert tree(root) == tree(make_workspace(tmp_path / "fresh", repo=False))


@pytest.mark.parametrize("mode", ["none", "commit"])
def test_apply_after_restore_writes_what_apply_without_restore_writes(tmp_path: Path, mode: str) -> None:
    repo = mode == "commit"
    restored_root = make_workspace(tmp_path / "restored", repo=repo)
    twin_root = make_workspace(tmp_path / "twin", repo=repo)
    restored = restart(new_review(restored_root, BatchStore(tmp_path / "d1"), mode), tmp_path / "d1")
    twin = new_review(twin_root, BatchStore(tmp_path / "d2"), mode)

    first, first_twin = restored.apply(), twin.apply()
    assert first.batch is not None and first_twin.batch is not None
    assert first.batch.paths == first_twin.batch.paths
    assert first.conflicts == first_twin.conflicts == []
    assert tree(restored_root) == tree(twin_root)
    assert comparable(first.changeset) == comparable(first_twin.changeset)
    assert (restored_root / "notes.txt").read_bytes() == CRLF.replace(b"line 3\r\n", b"line three\r\n")
    assert not (restored_root / "old.txt").exists() and not (restored_root / "src/a.py").exists()
    assert (restored_root / "src/b.py").read_text() == "one\ntwo\nthree\n"

    # A second restart after the partial apply (bases now rebased to what was written), then the rest.
    restored = restart(restored, tmp_path / "d1")
    assert comparable(restored.view()) == comparable(twin.view())
    for review in (restored, twin):
        decide(review, "accepted", all=True)
    second, second_twin = restored.apply(), twin.apply()
    assert second.batch is not None and second_twin.batch is not None
    assert second.batch.paths == second_twin.batch.paths == ["img/new.bin", "notes.txt", "src/b.py"]
    assert tree(restored_root) == tree(twin_root)
    assert second.changeset.files == second_twin.changeset.files == []
    if repo:
        assert git(restored_root, "status", "--porcelain") == git(twin_root, "status", "--porcelain") == ""


def test_disk_edits_between_snapshot_and_restore_still_merge_or_conflict(tmp_path: Path) -> None:
    restored_root = make_workspace(tmp_path / "restored", repo=False)
    twin_root = make_workspace(tmp_path / "twin", repo=False)
    original = new_review(restored_root, BatchStore(tmp_path / "d1"), "none")
    snapshot = json.loads(json.dumps(original.snapshot()))
    twin = new_review(twin_root, BatchStore(tmp_path / "d2"), "none")
    for root in (restored_root, twin_root):
        # The user, meanwhile: a non-overlapping edit (merges) and an overlapping one (conflicts).
        (root / "notes.txt").write_bytes(CRLF.replace(b"line 10\r\n", b"line ten (mine)\r\n"))
        (root / "script.sh").write_text("#!/bin/sh\necho mine\n")
    restored = Review.restore(snapshot, store=BatchStore(tmp_path / "d1"))

    # The bases are the ones the agent read, not the edited disk.
    assert restored.view() == original.view()
    assert restored.changeset.diff_texts("notes.txt")[0] == CRLF.decode().replace("\r\n", "\n")

    result, twin_result = restored.apply(), twin.apply()
    assert tree(restored_root) == tree(twin_root)
    assert [c.path for c in result.conflicts] == [c.path for c in twin_result.conflicts] == ["script.sh"]
    assert result.conflicts[0].merged == twin_result.conflicts[0].merged
    assert "echo mine" in (result.conflicts[0].merged or "")
    assert (restored_root / "notes.txt").read_bytes() == CRLF.replace(
        b"line 3\r\n", b"line three\r\n"
    ).replace(b"line 10\r\n", b"line ten (mine)\r\n")
    assert (restored_root / "script.sh").read_text() == "#!/bin/sh\necho mine\n"
    assert comparable(result.changeset) == comparable(twin_result.changeset)
    script = next(f for f in result.changeset.files if f.path == "script.sh")
    assert script.conflict and "overlap" in script.conflict
    assert [h.decision for h in script.hunks] == ["pending"]

    # The recorded conflict survives a restart too.
    again = restart(restored, tmp_path / "d1")
    assert again.view() == restored.view()


def test_restore_over_another_root_and_keep_editing(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", repo=False)
    review = new_review(root, BatchStore(tmp_path / "d1"), "none")
    moved = tmp_path / "moved"
    shutil.copytree(root, moved)
    restored = restart(review, tmp_path / "d1", root=moved)
    assert restored.view().cwd == str(moved.resolve())
    assert comparable(restored.view()) == comparable(review.view())

    # The agent's next turn edits on top of the restored overlay; ids match the never-restarted review.
    for r in (restored, review):
        r.changeset.edit("src/b.py", "three", "THREE")
        r.changeset.create("docs/more.md", "more\n")
    assert comparable(restored.view()) == comparable(review.view())
    decide(restored, "accepted", all=True)
    assert restored.apply().conflicts == []
    assert (moved / "src/b.py").read_text() == "one\nTWO\nTHREE\n"
    assert (moved / "docs/more.md").read_text() == "more\n"
    assert (root / "src/a.py").read_text() == "one\ntwo\nthree\n"  # the snapshot's own root is untouched


def test_snapshot_is_plain_json_with_a_version(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", repo=False)
    snapshot = new_review(root, BatchStore(tmp_path / "d"), "none").snapshot()
    assert snapshot["version"] == 1
    assert json.loads(json.dumps(snapshot, allow_nan=False)) == snapshot
    paths = [f["path"] for f in snapshot["files"]]
    assert "src/a.py" in paths  # the rename's source keeps its recorded base
    empty = Review(ChangeSet(root), session_id="s2", title=None, store=BatchStore(tmp_path / "d"))
    restored = Review.restore(json.loads(json.dumps(empty.snapshot())), store=BatchStore(tmp_path / "d"))
    assert restored.view() == empty.view()
    assert restored.view().files == []


def _base_snapshot(tmp_path: Path) -> dict[str, Any]:
    root = make_workspace(tmp_path / "ws", repo=False)
    return json.loads(json.dumps(new_review(root, BatchStore(tmp_path / "d"), "none").snapshot()))


def _file(snapshot: dict[str, Any], path: str) -> dict[str, Any]:
    return next(f for f in snapshot["files"] if f["path"] == path)


MALFORMED: list[tuple[str, Any, str]] = [
    ("no version", lambda s: s.pop("version"), "no 'version' key"),
    ("future version", lambda s: s.update(version=2), "version 2 is not supported"),
    ("string version", lambda s: s.update(version="1"), "version '1' is not supported"),
    ("boolean version", lambda s: s.update(version=True), "version True is not supported"),
    ("other kind", lambda s: s.update(kind="arbor.other"), "kind"),
    ("relative root", lambda s: s.update(root="ws"), "not an absolute path"),
    ("no files", lambda s: s.pop("files"), "files is missing"),
    ("files not a list", lambda s: s.update(files={}), "files should be list"),
    ("bad commit mode", lambda s: s.update(commit_mode="push"), "commit_mode 'push'"),
    ("bad decision", lambda s: next(iter(s["decisions"].values())).update(decision="maybe"), "maybe"),
    ("decision not object", lambda s: s["decisions"].update(x="accepted"), r"decisions\['x'\]"),
    ("bad base64", lambda s: _file(s, "logo.bin")["base"].update(data="not base64!"), "base64"),
    ("mode as text", lambda s: _file(s, "script.sh")["entry"].update(mode="755"), "permission-bits"),
    ("escaping path", lambda s: _file(s, "old.txt").update(path="../old.txt"), "workspace-relative"),
    ("absolute path", lambda s: _file(s, "old.txt").update(path="/etc/passwd"), "workspace-relative"),
    ("duplicate path", lambda s: s["files"].append(copy.deepcopy(s["files"][0])), "listed twice"),
    ("lost rename source", lambda s: s["files"].remove(_file(s, "src/a.py")), "whose base is missing"),
    ("no base", lambda s: _file(s, "notes.txt").pop("base"), r"files\[\d+\]\.base is missing"),
    ("conflict not text", lambda s: s["conflicts"].update({"notes.txt": 3}), "not a string"),
    ("title not text", lambda s: s.update(title=7), "title should be str or null"),
]


@pytest.mark.parametrize(("change", "message"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_snapshots_raise_change_error(tmp_path: Path, change: Any, message: str) -> None:
    snapshot = _base_snapshot(tmp_path)
    change(snapshot)
    with pytest.raises(ChangeError, match=message) as err:
        Review.restore(snapshot, store=BatchStore(tmp_path / "d"))
    assert "cannot be restored" in str(err.value)


@pytest.mark.parametrize("snapshot", [None, [], "{}", 1])
def test_a_snapshot_that_is_not_an_object_raises_change_error(tmp_path: Path, snapshot: Any) -> None:
    with pytest.raises(ChangeError, match="expected a JSON object"):
        Review.restore(snapshot, store=BatchStore(tmp_path / "d"))
