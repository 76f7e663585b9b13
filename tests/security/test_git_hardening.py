"""Git as Arbor runs it runs nothing from the repository, works only in the repository the session began
with, and Apply is all or nothing: refused before writing, or put back when git fails after the writes.

Each payload writes a marker file; on main the fsmonitor, hook and filter payloads ran during Apply, a
``.git`` file that appeared mid-session got the commit, a parent directory swapped for a symlink was
written through, a held index.lock left files written and the batch ``applying``, and ``.GIT/x`` was
reported applied though git never committed it."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ide.changes import BatchStore, ChangeError, ChangeSet, Review, rollback_batch
from ide.changes.overlay import Base, Entry
from ide.gitsafe import git_argv, git_env
from ide.protocol.review import DecideParams
from ide.workflows.retrieval import RetrievalAgent, RetrievalRequest
from ide.workflows.schema import RagSource, RetrievalStrategy
from tests.support.git import git


def payload(marker: Path) -> str:
    """A shell script that leaves ``marker`` behind (and succeeds, as a harmless-looking driver would)."""
    return f"#!/bin/sh\ntouch '{marker}'\ncat\n"


def arm(git_dir: Path, marker: Path) -> None:
    """Every program-naming place of a git directory points at a payload: fsmonitor, hooks, drivers."""
    script = git_dir.parent / "payload.sh" if git_dir.name == ".git" else git_dir / "payload.sh"
    script.write_text(payload(marker))
    script.chmod(0o755)
    config = git_dir / "config"
    with config.open("a") as handle:
        handle.write(
            f'[core]\n\tfsmonitor = "{script}"\n'
            f'[filter "evil"]\n\tclean = "{script}"\n\tsmudge = "{script}"\n'
            f'[diff "evil"]\n\ttextconv = "{script}"\n'
            f"[gpg]\n\tprogram = {script}\n[commit]\n\tgpgSign = true\n"
        )
    hooks = git_dir / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in ("reference-transaction", "post-commit", "pre-commit", "post-checkout", "post-index-change"):
        (hooks / name).write_text(payload(marker))
        (hooks / name).chmod(0o755)


def accept_all(review: Review) -> None:
    review.decide(DecideParams(session_id="s", decision="accepted", all=True))


def test_apply_and_history_search_run_no_program_the_repository_names(
    git_workspace: Path, tmp_path: Path
) -> None:
    root = git_workspace
    marker = tmp_path / "payload-ran"
    (root / ".gitattributes").write_text("*.py filter=evil diff=evil\n")
    git(root, "add", ".gitattributes")
    git(root, "commit", "-qm", "attributes")
    arm(root / ".git", marker)

    changes = ChangeSet(root)
    changes.edit("pkg/greet.py", 'return f"Hello, {name}!"', 'return f"Hi, {name}!"')
    changes.create("pkg/new.py", "VALUE = 1\n")
    review = Review(changes, session_id="s", title="Greet", store=BatchStore(tmp_path / "data"))
    accept_all(review)
    result = review.apply()
    assert result.batch is not None and result.batch.commit
    assert not marker.exists(), "a program from the repository's config or hooks ran during Apply"
    # The commit holds exactly the bytes Arbor wrote (no clean filter touched them).
    shown = subprocess.run(
        git_argv(root, "show", f"{result.batch.commit}:pkg/new.py"),
        cwd=root,
        capture_output=True,
        env=git_env(),
        check=True,
    ).stdout
    assert shown == b"VALUE = 1\n" and not marker.exists()

    request = RetrievalRequest(
        task="why greet says Hi",
        stage_name="research",
        strategy=RetrievalStrategy.model_validate(
            {"rag_strategy": {"sources": [RagSource(name="git_history")]}}
        ),
        is_code=True,
    )
    import asyncio

    asyncio.run(RetrievalAgent(root, review_settings()).retrieve(request))
    assert not marker.exists(), "searching history ran a textconv driver or fsmonitor"

    rollback_batch(root, review.store)
    assert not marker.exists()


def review_settings():  # type: ignore[no-untyped-def]
    from ide.settings import Settings

    return Settings()


def test_a_git_file_that_appears_mid_session_gets_no_commit(tmp_path: Path) -> None:
    """A non-git workspace; then a ``.git`` file pointing at a crafted git directory appears."""
    root = tmp_path / "plain"
    (root / "docs").mkdir(parents=True)
    (root / "m.py").write_text("x = 1\n")
    review = Review(ChangeSet(root), session_id="s", title="t", store=BatchStore(tmp_path / "data"))
    review.changeset.write("m.py", "x = 2\n")
    accept_all(review)

    cache = root / "docs" / "_cache"
    subprocess.run(["git", "init", "-q", "--bare", str(cache)], check=True)
    subprocess.run(["git", "--git-dir", str(cache), "config", "core.bare", "false"], check=True)
    marker = tmp_path / "payload-ran"
    arm(cache, marker)
    (root / ".git").write_text("gitdir: docs/_cache\n")

    with pytest.raises(ChangeError, match=r"repository of .* changed since this session began"):
        review.apply()
    assert (root / "m.py").read_text() == "x = 1\n"
    assert not marker.exists()
    log = subprocess.run(["git", "--git-dir", str(cache), "log", "--oneline"], capture_output=True, text=True)
    assert log.stdout == ""


@pytest.mark.parametrize("in_git", [True, False], ids=["git", "plain"])
def test_a_parent_swapped_for_a_symlink_is_never_written_through(
    git_workspace: Path, tmp_path: Path, in_git: bool
) -> None:
    root = git_workspace if in_git else tmp_path / "plain"
    if not in_git:
        (root / "pkg").mkdir(parents=True)
        (root / "pkg" / "greet.py").write_text('def greet(name):\n    return f"Hello, {name}!"\n')
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "greet.py").write_text("OUTSIDE\n")
    changes = ChangeSet(root)
    changes.edit("pkg/greet.py", 'return f"Hello, {name}!"', 'return f"Hi, {name}!"')
    changes.create("pkg/new.py", "NEW\n")
    review = Review(changes, session_id="s", title="t", store=BatchStore(tmp_path / "data"))
    accept_all(review)
    # While the batch waits for review, pkg/ becomes a link to a directory outside the workspace.
    (root / "pkg").rename(root / "pkg-real")
    (root / "pkg").symlink_to(outside, target_is_directory=True)

    with pytest.raises(ChangeError, match="symbolic link"):
        review.apply()
    assert (outside / "greet.py").read_text() == "OUTSIDE\n"
    assert not (outside / "new.py").exists()
    assert review.store.history(root) == []


def test_a_commit_that_fails_after_the_writes_puts_everything_back(
    git_workspace: Path, tmp_path: Path
) -> None:
    root = git_workspace
    head = git(root, "rev-parse", "HEAD")
    changes = ChangeSet(root)
    changes.edit("pkg/greet.py", 'return f"Hello, {name}!"', 'return f"Hi, {name}!"')
    changes.create("pkg/new.py", "NEW\n")
    review = Review(changes, session_id="s", title="t", store=BatchStore(tmp_path / "data"))
    accept_all(review)
    lock = root / ".git" / "index.lock"
    lock.write_text("")  # another git is (or was) running

    with pytest.raises(ChangeError) as caught:
        review.apply()
    message = str(caught.value)
    assert "index.lock" in message and "were put back" in message
    assert (root / "pkg" / "greet.py").read_text() == 'def greet(name):\n    return f"Hello, {name}!"\n'
    assert not (root / "pkg" / "new.py").exists()
    assert git(root, "rev-parse", "HEAD") == head
    [batch] = review.store.history(root)
    assert batch.state == "failed" and "index.lock" in (batch.reason or "")
    with pytest.raises(ChangeError, match="never applied"):
        rollback_batch(root, review.store, batch.id)

    lock.unlink()
    result = review.apply()  # the decisions were kept
    assert result.batch is not None and result.batch.commit
    assert (root / "pkg" / "new.py").read_text() == "NEW\n"


def test_a_path_git_refuses_is_refused_before_anything_is_written(
    git_workspace: Path, tmp_path: Path
) -> None:
    root = git_workspace
    with pytest.raises(ChangeError, match=r"named \.git"):
        ChangeSet(root).create(".GIT/hooks/post-checkout", "#!/bin/sh\n")  # refused as it is proposed
    # One that got in some other way (a restored review) is refused again by Apply, nothing written.
    hook = Entry(b"#!/bin/sh\n", 0o755)
    changes = ChangeSet.from_recorded(
        root, {".GIT/hooks/post-checkout": Base(None, None)}, {".GIT/hooks/post-checkout": hook}
    )
    changes.create("pkg/ok.py", "OK\n")
    review = Review(changes, session_id="s", title="t", store=BatchStore(tmp_path / "data"))
    review.decide(
        DecideParams(session_id="s", decision="accepted", paths=[".GIT/hooks/post-checkout", "pkg/ok.py"])
    )
    with pytest.raises(ChangeError, match=r"named \.git"):
        review.apply()
    assert not (root / "pkg" / "ok.py").exists() and not (root / ".GIT").exists()
    assert review.store.history(root) == []


def test_arbor_run_prints_the_reason_not_invalid_params(git_workspace: Path, write_script) -> None:  # type: ignore[no-untyped-def]
    script = write_script(
        [
            {"tool_calls": [{"name": "create_file", "args": {"path": "pkg/new.py", "content": "NEW\n"}}]},
            {"content": "Added."},
        ]
    )
    (git_workspace / ".git" / "index.lock").write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "ide", "run", "-w", str(git_workspace), "--apply", "add a file"],
        env={**os.environ, "ARBOR_MODEL": f"scripted:{script}"},
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert done.returncode != 0
    assert "Invalid params" not in done.stderr
    assert "index.lock" in done.stderr and "were put back" in done.stderr
    assert not (git_workspace / "pkg" / "new.py").exists()


def test_the_hooks_directory_is_empty_and_not_in_the_repository(git_workspace: Path) -> None:
    argv = git_argv(git_workspace, "status")
    hooks = Path(next(a for a in argv if a.startswith("core.hooksPath=")).split("=", 1)[1])
    assert hooks.is_dir() and not any(hooks.iterdir())
    assert git_workspace not in hooks.parents
    assert stat.S_IMODE(hooks.stat().st_mode) & 0o022 == 0
