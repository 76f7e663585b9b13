"""Apply and Roll back read git's blobs in one process, not one per file (issue 32, item 1).

- ``cat_blobs`` (one ``git cat-file --batch -z``) answers every name exactly as a ``git cat-file blob``
  of its own does (what the code ran per file before), also for names with a newline, a carriage return,
  non-UTF-8 bytes, trees, links, submodules and misses;
- the git processes of an Apply and of its Roll back do not grow with the number of files;
- an Apply and its Roll back make the same trees, the same files and the same left-out list as the
  per-file path (user edits replayed, overlaps left out, new, deleted, binary and executable files);
- config a repository gains between two Applies (read once per config state, ide.gitsafe) still runs
  nothing: an fsmonitor, a hooks path, a clean filter and an external diff added after the first Apply.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ide.changes import BatchStore, ChangeSet, Review, gitutil, replay, rollback_batch
from ide.changes.gitutil import Blobs, cat_blob, cat_blobs, find_repo
from ide.protocol.review import DecideParams
from tests.support.git import git

ODD_NAMES = ["a b.txt", "new\nline.txt", "ends-cr\r", "tab\there", "café.txt", os.fsdecode(b"latin-\xe9.txt")]


def commit_all(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)
    return git(root, "rev-parse", "HEAD").strip()


@pytest.fixture
def spawned(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The argv of every git process started while the test runs (real processes, only counted)."""
    started: list[list[str]] = []
    real = subprocess.Popen

    class Counting(real):  # type: ignore[misc,valid-type]
        def __init__(self, args, *rest, **kwargs):  # type: ignore[no-untyped-def]
            if isinstance(args, (list, tuple)) and args and os.path.basename(str(args[0])) == "git":
                started.append([str(arg) for arg in args])
            super().__init__(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", Counting)
    return started


def odd_commits(root: Path) -> tuple[str, str]:
    """On top of the workspace's commit (the first id): files with odd names, an empty and a binary one,
    one named like pathspec magic and a symlink, committed (the second id), then a submodule entry."""
    first = git(root, "rev-parse", "HEAD").strip()
    for index, name in enumerate(ODD_NAMES):
        (root / name).write_bytes(f"{index}\r\nbody {name!r}\n".encode("utf-8", "surrogateescape"))
    (root / "empty").write_bytes(b"")
    (root / "bin.dat").write_bytes(bytes(range(256)) * 40)
    (root / ":(glob)[x]*.txt").write_bytes(b"a pattern's characters\n")
    (root / "link").symlink_to("pkg/greet.py")
    second = commit_all(root, "odd names")
    git(root, "update-index", "--add", "--cacheinfo", f"160000,{first},vendor/sub")
    git(root, "commit", "-qm", "a submodule")
    return first, second


def test_one_batch_answers_every_name_as_a_process_per_name_did(
    git_workspace: Path, spawned: list[list[str]]
) -> None:
    root = git_workspace
    first, second = odd_commits(root)
    sub = git(root, "rev-parse", "HEAD:pkg").strip()  # any commit-shaped id for a gitlink entry
    names = [*ODD_NAMES, "empty", "bin.dat", "link", "pkg/greet.py", "pkg", "vendor/sub", "absent", "pkg/"]
    specs = [f"{rev}:{name}" for rev in ("HEAD", first, second, f"{second}^") for name in names]
    blob = git(root, "rev-parse", "HEAD:pkg/greet.py").strip()
    specs += [
        blob,
        blob[:12],
        sub,
        "0" * 40,
        "HEAD",
        "no-such-rev:x",
        "HEAD:./README.md",
        f"{first}:.gitignore",
    ]
    repo = find_repo(root)
    assert repo is not None

    spawned.clear()
    batched = cat_blobs(repo, specs)
    assert len(spawned) == 1 and "--batch" in spawned[0], spawned
    one_by_one = [cat_blob(repo, spec) for spec in specs]
    assert batched == one_by_one
    # And what they read is what is on disk where the name is a blob, nothing where it is not.
    on_disk = {f"HEAD:{name}": (root / name).read_bytes() for name in [*ODD_NAMES, "empty", "bin.dat"]}
    assert {spec: data for spec, data in zip(specs, batched, strict=True) if spec in on_disk} == on_disk
    assert batched[specs.index("HEAD:link")] == b"pkg/greet.py"
    for nothing in ("HEAD:pkg", "HEAD:vendor/sub", "HEAD:absent", f"{first}:café.txt", "HEAD", "0" * 40):
        assert batched[specs.index(nothing)] is None, nothing


def test_tree_ids_are_the_ids_of_what_a_batch_reads_from_one_ls_tree(
    git_workspace: Path, spawned: list[list[str]]
) -> None:
    root = git_workspace
    first, _second = odd_commits(root)
    names = [*ODD_NAMES, "empty", ":(glob)[x]*.txt", "link", "pkg/greet.py", "pkg", "vendor/sub", "absent"]
    repo = find_repo(root)
    inside = find_repo(root / "pkg")  # a workspace below the repository's top
    assert repo is not None and inside is not None and inside.prefix == "pkg"
    for where, rev, rels in (
        (repo, "HEAD", names),
        (repo, first, names),
        (inside, "HEAD", ["greet.py", "x"]),
    ):
        spawned.clear()
        ids = replay.tree_ids(where, rev, rels)
        assert len(spawned) == 1 and "ls-tree" in spawned[0], spawned
        read = gitutil.tree_blobs(where, rev, rels)
        assert ids == [gitutil.blob_id(data) if data is not None else None for data in read], rev
    assert replay.tree_ids(repo, None, names) == [None] * len(names)
    # More than one command line should hold: None, and replay_change reads those files whole instead.
    assert replay.tree_ids(repo, "HEAD", ["x" * 1000] * 200) is None
    assert replay.tree_ids(repo, "HEAD", ["a\0b"]) is None


def many_files_repo(root: Path, count: int) -> Path:
    root.mkdir()
    for index in range(count):
        (root / f"dir{index % 4}" / f"f{index}.txt").parent.mkdir(exist_ok=True)
        (root / f"dir{index % 4}" / f"f{index}.txt").write_text("".join(f"line {n}\n" for n in range(30)))
    git(root, "init", "-q", "-b", "main")
    commit_all(root, "base")
    return root


def accept_all(review: Review) -> None:
    review.decide(DecideParams(session_id="s", decision="accepted", all=True))


def test_apply_and_rollback_start_as_many_gits_for_40_files_as_for_2(
    tmp_path: Path, spawned: list[list[str]]
) -> None:
    counts = {}
    for count in (2, 40):
        root = many_files_repo(tmp_path / f"ws{count}", count)
        changes = ChangeSet(root)
        for index in range(count):
            changes.edit(f"dir{index % 4}/f{index}.txt", "line 3\n", "line three\n")
        (root / "dir0" / "f0.txt").write_text((root / "dir0" / "f0.txt").read_text() + "the user's\n")
        review = Review(changes, session_id="s", title="t", store=BatchStore(tmp_path / f"data{count}"))
        accept_all(review)
        spawned.clear()
        result = review.apply()
        applying = len(spawned)
        assert result.batch is not None and result.batch.commit and not result.uncommitted
        spawned.clear()
        undone = rollback_batch(root, review.store, result.batch.id)
        assert len(undone.restored) == count and not undone.refused
        counts[count] = (applying, len(spawned))
        assert "the user's" in (root / "dir0" / "f0.txt").read_text()
    assert counts[40] == counts[2], counts


def test_in_a_packed_repository_the_checkpoint_writes_only_the_pre_images_git_lacks(tmp_path: Path) -> None:
    root = many_files_repo(tmp_path / "ws", 12)
    git(root, "gc", "-q")  # every object in a pack, as in most repositories
    objects = root / ".git" / "objects"
    assert not list(objects.glob("??/*"))
    changes = ChangeSet(root)
    for index in range(12):
        changes.edit(f"dir{index % 4}/f{index}.txt", "line 3\n", "line three\n")
    edited = root / "dir1" / "f1.txt"
    edited.write_text(edited.read_text() + "the user's\n")  # its pre-image is in no commit
    before = {path: path.read_bytes() for path in root.glob("dir*/*.txt")}
    review = Review(changes, session_id="s", title="t", store=BatchStore(tmp_path / "data"))
    accept_all(review)
    result = review.apply()
    assert result.batch is not None and result.batch.commit
    checkpoint = {entry.path: entry.pre_blob for entry in review.store.files(result.batch.id)}
    loose = {f"{path.parent.name}{path.name}" for path in objects.glob("??/*")}
    assert checkpoint["dir1/f1.txt"] in loose  # the user's edit, which git did not hold, synced loose
    assert all(oid not in loose for rel, oid in checkpoint.items() if rel != "dir1/f1.txt")  # packed already
    undone = rollback_batch(root, review.store, result.batch.id)
    assert len(undone.restored) == 12 and not undone.refused
    assert {path: path.read_bytes() for path in root.glob("dir*/*.txt")} == before


def test_stored_blobs_names_what_git_holds_packed_or_loose(git_workspace: Path) -> None:
    repo = find_repo(git_workspace)
    assert repo is not None
    packed = git(git_workspace, "rev-parse", "HEAD:README.md").strip()
    git(git_workspace, "gc", "-q")
    loose = gitutil.Blobs(repo, git_workspace / "unused").put(b"loose\n")
    tree = git(git_workspace, "rev-parse", "HEAD^{tree}").strip()
    absent = gitutil.blob_id(b"never stored\n")
    assert gitutil.stored_blobs(repo, [packed, loose, tree, absent]) == {packed, loose}


def per_file(repo: gitutil.Repo, specs: list[str]) -> list[bytes | None]:
    """The path before the batch: a ``git cat-file blob`` per name."""
    return [cat_blob(repo, spec) for spec in specs]


def scenario(root: Path) -> tuple[Review, Callable[[], None]]:
    """A repository, a change set over it and the user's own edits: (the review, the edit made while it is
    open). Deterministic, so two calls in two directories give byte-equal repositories."""
    root.mkdir()
    body = "".join(f"line {n}\n" for n in range(40))
    for name in ("a.txt", "b.txt", "c.txt", "gone.txt", "tool.sh"):
        (root / name).write_text(body)
    (root / "blob.bin").write_bytes(b"\x00\x01" * 50)
    (root / "tool.sh").chmod(0o755)
    git(root, "init", "-q", "-b", "main")
    env = {"GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "base"], cwd=root, check=True, env={**os.environ, **env})
    # The user's uncommitted edits, there before the agent read the files.
    (root / "a.txt").write_text("the user's first line\n" + body)
    (root / "b.txt").write_text(body.replace("line 5\n", "user 5\n"))
    changes = ChangeSet(root)
    changes.edit("a.txt", "line 30\n", "agent 30\n")  # replayed onto HEAD: committed without the user's
    changes.edit("b.txt", "user 5\n", "agent 5\n")  # overlaps the user's edit: on disk, left out
    changes.edit("c.txt", "line 1\n", "agent 1\n")
    changes.edit("tool.sh", "line 2\n", "agent 2\n")
    changes.write_bytes("blob.bin", b"\x00\x02" * 60)
    changes.write_bytes("new/file.txt", b"new\r\nfile\n")
    changes.delete("gone.txt")
    review = Review(changes, session_id="s", title="t", store=BatchStore(root.parent / f"{root.name}-data"))
    accept_all(review)

    def users_edit() -> None:  # while the review is open, away from the agent's lines: merged on disk
        (root / "c.txt").write_text((root / "c.txt").read_text().replace("line 20\n", "user 20\n"))

    return review, users_edit


def tree_and_files(root: Path) -> tuple[str, dict[str, tuple[bytes, int]]]:
    files = {
        path.relative_to(root).as_posix(): (path.read_bytes(), path.stat().st_mode & 0o777)
        for path in root.rglob("*")
        if path.is_file() and ".git" not in path.relative_to(root).parts
    }
    return git(root, "rev-parse", "HEAD^{tree}").strip(), files


def test_apply_and_rollback_match_the_per_file_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outcomes = []
    for name, reader in (("batched", cat_blobs), ("per-file", per_file)):
        monkeypatch.setattr(gitutil, "cat_blobs", reader)
        monkeypatch.setattr("ide.changes.rollback.cat_blobs", reader)
        root = tmp_path / name
        review, users_edit = scenario(root)
        users_edit()
        result = review.apply()
        assert result.batch is not None and result.batch.commit and not result.conflicts
        applied = tree_and_files(root)
        undone = rollback_batch(root, review.store, result.batch.id)
        outcomes.append((sorted(result.uncommitted), applied, tree_and_files(root), undone.restored))
    assert outcomes[0] == outcomes[1]
    uncommitted, (tree, files), (back_tree, back_files), _restored = outcomes[0]
    assert uncommitted == ["b.txt"]
    assert git(tmp_path / "batched", "show", f"{tree}:a.txt") == "".join(
        "agent 30\n" if n == 30 else f"line {n}\n" for n in range(40)
    )
    assert files["a.txt"][0].startswith(b"the user's first line\n") and b"agent 30\n" in files["a.txt"][0]
    assert files["tool.sh"][1] == 0o755 and "gone.txt" not in files
    assert back_tree == git(tmp_path / "batched", "rev-parse", "HEAD~2^{tree}").strip()
    assert files["b.txt"][0] == b"".join(b"agent 5\n" if n == 5 else b"line %d\n" % n for n in range(40))
    assert b"user 5\n" in back_files["b.txt"][0] and b"user 20\n" in back_files["c.txt"][0]
    assert b"agent" not in back_files["c.txt"][0] and back_files["a.txt"][0].startswith(b"the user's")


def test_config_added_between_two_applies_still_runs_nothing(
    git_workspace: Path, tmp_path: Path, spawned: list[list[str]]
) -> None:
    root = git_workspace
    store = BatchStore(tmp_path / "data")
    first = ChangeSet(root)
    first.edit("pkg/greet.py", "Hello", "Hi")
    review = Review(first, session_id="s", title="t", store=store)
    accept_all(review)
    assert review.apply().batch is not None  # the repository's config is now read and remembered

    marker = tmp_path / "payload-ran"
    script = tmp_path / "payload.sh"
    script.write_text(f"#!/bin/sh\ntouch '{marker}'\ncat\n")
    script.chmod(0o755)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for hook in ("reference-transaction", "post-commit", "pre-commit", "post-index-change"):
        (hooks / hook).symlink_to(script)
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "attributes").write_text("* filter=evil diff=evil\n")
    with (root / ".git" / "config").open("a") as handle:
        handle.write(
            f'[core]\n\tfsmonitor = "{script}"\n\thooksPath = "{hooks}"\n'
            f'[filter "evil"]\n\tclean = "{script}"\n\tsmudge = "{script}"\n'
            f'[diff "evil"]\n\ttextconv = "{script}"\n\tcommand = "{script}"\n'
            f'[diff]\n\texternal = "{script}"\n'
        )

    second = ChangeSet(root)
    second.edit("README.md", "Says hello.", "Says hi.")
    review = Review(second, session_id="s", title="t", store=store)
    accept_all(review)
    spawned.clear()
    result = review.apply()
    assert result.batch is not None and result.batch.commit
    assert any(arg.startswith("--config-env=core.fsmonitor=") for arg in spawned[-1]), spawned[-1]
    rollback_batch(root, store, result.batch.id)
    assert not marker.exists(), "config added after the first Apply ran a program"
    # No clean filter touched the bytes: the commit holds exactly what was accepted.
    assert git(root, "show", f"{result.batch.commit}:README.md") == "# demo\n\nSays hi.\n"


def test_new_blobs_go_into_one_pack_that_git_reads_back(git_workspace: Path, tmp_path: Path) -> None:
    root = git_workspace
    repo = find_repo(root)
    assert repo is not None
    blobs = gitutil.Blobs(repo, tmp_path / "unused")
    datas = [b"", b"\x00\xff" * 9, bytes(range(256)) * 5000, b"same\n", b"same\n"]  # a size over 2**20
    datas += [b"blob %d\n" % index * index for index in range(gitutil.PACK_FROM)]
    objects = root / ".git" / "objects"
    packs, loose = set(objects.glob("pack/*.pack")), set(objects.glob("??/*"))
    ids = blobs.put_many(datas)
    assert len(set(objects.glob("pack/*.pack")) - packs) == 1 and set(objects.glob("??/*")) == loose
    hashed = [
        subprocess.run(
            ["git", "hash-object", "--stdin"], cwd=root, input=data, capture_output=True, check=True
        )
        for data in datas
    ]
    assert ids == [done.stdout.decode().strip() for done in hashed]
    assert cat_blobs(repo, ids) == datas
    subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=root, check=True, capture_output=True)

    few = [b"one\n", b"two\n"]  # below PACK_FROM: a loose file each
    ids = blobs.put_many(few)
    assert all((root / ".git" / "objects" / oid[:2] / oid[2:]).exists() for oid in ids)
    assert cat_blobs(repo, ids) == few


def test_rolling_back_under_a_later_commit_replays_onto_it(tmp_path: Path) -> None:
    """HEAD is no longer the batch's commit: the revert is replayed onto the user's commit (the files
    read for it, not the batch's)."""
    root = many_files_repo(tmp_path / "ws", 2)
    changes = ChangeSet(root)
    for rel in ("dir0/f0.txt", "dir1/f1.txt"):
        changes.edit(rel, "line 3\n", "agent 3\n")
    review = Review(changes, session_id="s", title="t", store=BatchStore(tmp_path / "data"))
    accept_all(review)
    batch = review.apply().batch
    assert batch is not None and batch.commit
    path = root / "dir0" / "f0.txt"
    path.write_text(path.read_text().replace("line 20\n", "user 20\n"))
    git(root, "commit", "-qam", "the user's own commit")
    result = rollback_batch(root, review.store, batch.id)
    assert sorted(result.restored) == ["dir0/f0.txt", "dir1/f1.txt"] and not result.refused
    body = "".join(f"line {n}\n" for n in range(30))
    assert git(root, "show", "HEAD:dir0/f0.txt") == body.replace("line 20\n", "user 20\n")
    assert git(root, "show", "HEAD:dir1/f1.txt") == body
    assert git(root, "log", "-1", "--format=%s").startswith("Revert Arbor batch")
    assert git(root, "status", "--porcelain") == ""


@pytest.mark.parametrize("in_git", [True, False])
def test_a_checkpoint_is_synced_blob_by_blob_before_any_file_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_git: bool
) -> None:
    """Every file has edits of the user's, so every pre-image is new to the store: each is synced before
    it is renamed into place, and all of them before the first workspace file is replaced."""
    root = many_files_repo(tmp_path / "ws", 70) if in_git else tmp_path / "ws"
    if not in_git:
        for index in range(70):
            (root / f"dir{index % 4}").mkdir(parents=True, exist_ok=True)
            (root / f"dir{index % 4}" / f"f{index}.txt").write_text("".join(f"line {n}\n" for n in range(30)))
    for index in range(70):
        path = root / f"dir{index % 4}" / f"f{index}.txt"
        path.write_text(path.read_text().replace("line 20\n", f"user {index}\n"))
    changes = ChangeSet(root)
    for index in range(70):
        changes.edit(f"dir{index % 4}/f{index}.txt", "line 3\n", "agent 3\n")
    review = Review(changes, session_id="s", title="t", store=BatchStore(tmp_path / "data"))
    accept_all(review)
    synced: set[int] = set()
    events: list[tuple[str, bool]] = []  # (what was renamed, was it synced)
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        real_fsync(fd)
        synced.add(os.fstat(fd).st_ino)

    def replace(src, dst, *, src_dir_fd=None, dst_dir_fd=None):  # type: ignore[no-untyped-def]
        kind = "workspace" if src_dir_fd is not None else "object"
        events.append((kind, os.stat(src, dir_fd=src_dir_fd).st_ino in synced))
        real_replace(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    result = review.apply()
    assert result.batch is not None
    kinds = [kind for kind, _synced in events]
    first_file = kinds.index("workspace")
    assert kinds[:first_file].count("object") >= 70, "the pre-images are stored before the first file"
    assert all(was_synced for _kind, was_synced in events[:first_file])
    assert all(was_synced for kind, was_synced in events if kind == "workspace")
    store = Blobs(find_repo(root) if in_git else None, tmp_path / "data" / "blobs")
    checkpoint = review.store.files(result.batch.id)
    pres = store.get_many(entry.pre_blob for entry in checkpoint)
    assert {entry.path: pres[entry.pre_blob] for entry in checkpoint} == {
        f"dir{index % 4}/f{index}.txt": "".join(
            f"user {index}\n" if n == 20 else f"line {n}\n" for n in range(30)
        ).encode()
        for index in range(70)
    }
