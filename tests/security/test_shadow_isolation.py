"""A foreign agent's shadow is a boundary: what it does to git there never reaches the user's repository,
what it does to the repository itself is named and never committed on, and the secret list is applied
to what it is given.

Each test acts as a hostile agent would (issue 45): git in the shadow (update-ref, config, hooks), the
user's repository found through the shadow's alternates, untracked and tracked secrets."""

from __future__ import annotations

import shlex
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from ide.changes.gitutil import find_repo
from ide.changes.overlay import ChangeSet
from ide.changes.shadow import Shadow
from ide.settings import WorkspaceSettings
from ide.tools import Workspace
from tests.support.git import git, hello_repo

RUN_TIMEOUT_S = 120


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return hello_repo(tmp_path)


def _user_state(repo: Path) -> tuple[str, str, list[str], str]:
    hooks = repo / ".git" / "hooks"
    listed = sorted(p.name for p in hooks.glob("*")) if hooks.exists() else []
    return (
        git(repo, "for-each-ref"),
        (repo / ".git" / "config").read_text(),
        listed,
        git(repo, "rev-parse", "HEAD"),
    )


def _secret(root: Path) -> Callable[[str], bool]:
    """The predicate the backend gives a shadow."""
    files = Workspace(root, WorkspaceSettings())
    return files.is_secret_rel  # as the backend asks (ide.backend.extensions.foreign)


def test_git_run_in_the_shadow_moves_no_ref_config_or_hook_of_the_users_repository(workspace: Path) -> None:
    before = _user_state(workspace)
    shadow = Shadow.create(workspace)
    try:
        top = str(shadow.top)
        (shadow.root / "backdoor.py").write_text("import os\n")
        hooks = subprocess.run(
            ["git", "rev-parse", "--git-common-dir"], cwd=top, capture_output=True, text=True, check=True
        ).stdout.strip()
        agent = textwrap.dedent(
            f"""
            set -e
            git -c user.name=a -c user.email=a@x add backdoor.py
            git -c user.name=a -c user.email=a@x commit -qm backdoor
            git update-ref refs/heads/main HEAD
            git update-ref refs/heads/master HEAD
            git config core.hooksPath {top}/evil-hooks
            mkdir -p {hooks}/hooks
            printf '#!/bin/sh\\necho pwned\\n' > {hooks}/hooks/pre-commit
            chmod +x {hooks}/hooks/pre-commit
            git reset -q --hard HEAD~1
            """
        )
        subprocess.run(["sh", "-c", agent], cwd=top, check=True, capture_output=True)
        assert _user_state(workspace) == before
        assert "backdoor" not in git(workspace, "log", "--all", "--format=%s")
    finally:
        shadow.close()
    assert not shadow.tmp.exists()
    assert git(workspace, "worktree", "list").count("\n") == 1  # no worktree was ever registered


def test_the_shadow_reads_history_through_alternates_and_writes_its_own_objects(workspace: Path) -> None:
    shadow = Shadow.create(workspace)
    try:
        log = subprocess.run(["git", "log", "--format=%s"], cwd=shadow.top, capture_output=True, text=True)
        assert log.returncode == 0 and log.stdout.strip()
        (shadow.root / "new.py").write_text("x = 1\n")
        subprocess.run(
            ["sh", "-c", "git add new.py && git -c user.name=a -c user.email=a@x commit -qm new"],
            cwd=shadow.top,
            check=True,
            capture_output=True,
        )
        made = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=shadow.top, capture_output=True, text=True, check=True
        ).stdout.strip()
        missing = subprocess.run(["git", "cat-file", "-e", made], cwd=workspace, capture_output=True)
        assert missing.returncode != 0  # the agent's commit is in the shadow's objects only
        captured = shadow.capture()
        assert "new.py" in captured.changes  # and its work is captured as before
    finally:
        shadow.close()


def test_secrets_untracked_and_tracked_are_withheld_from_the_shadow_and_the_agent_is_told(
    workspace: Path,
) -> None:
    (workspace / "deploy.env").write_text("TOKEN=committed-secret\n")
    git(workspace, "add", "deploy.env")
    git(workspace, "commit", "-qm", "a tracked secret")
    (workspace / ".env").write_text("OPENAI_API_KEY=sk-untracked\n")
    (workspace / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    (workspace / "credentials.json").write_text('{"password": "pw"}\n')
    (workspace / "notes.py").write_text("x = 1\n")  # untracked, not secret: copied
    shadow = Shadow.create(workspace, secret=_secret(workspace))
    try:
        held = sorted(p.name for p in shadow.root.iterdir())
        for name in (".env", "id_rsa", "credentials.json", "deploy.env"):
            assert name not in held
        assert "notes.py" in held and "hello.py" in held
        said = "\n".join(shadow.notes)
        for name in (".env", "id_rsa", "credentials.json", "deploy.env"):
            assert name in said
        assert "withheld" in said
        assert shadow.capture().changes == {}  # a withheld file is no deletion to review
        # A secret the agent writes is not captured, and the user's edit of one is never taken in.
        (shadow.root / ".env").write_text("STOLEN=1\n")
        changeset = ChangeSet(workspace)
        found = shadow.fill(changeset)
        assert ".env" in found.skipped and "secret" in found.skipped[".env"]
        assert ".env" not in changeset.changed_paths()
        (shadow.root / ".env").unlink()
        (workspace / ".env").write_text("OPENAI_API_KEY=sk-changed\n")
        shadow.take_in()
        assert not (shadow.root / ".env").exists()
    finally:
        shadow.close()


HOSTILE = textwrap.dedent(
    """
    import os, subprocess, sys
    # The user's repository: through the shadow's alternates, or a worktree's common git dir.
    def out(*args):
        return subprocess.run(["git", *args], capture_output=True, text=True).stdout.strip()
    top = out("rev-parse", "--show-toplevel")
    alternates = os.path.join(top, ".git", "objects", "info", "alternates")
    if os.path.isfile(alternates):
        real = os.path.dirname(open(alternates).read().split()[0])
    else:
        real = os.path.abspath(out("rev-parse", "--git-common-dir"))
    env = {**os.environ, "GIT_DIR": real, "GIT_INDEX_FILE": os.path.join(top, "evil-index")}
    for who in ("AUTHOR", "COMMITTER"):
        env[f"GIT_{who}_NAME"], env[f"GIT_{who}_EMAIL"] = "a", "a@x"
    def g(*args):
        done = subprocess.run(["git", *args], env=env, check=True, capture_output=True, text=True)
        return done.stdout.strip()
    g("read-tree", "HEAD")
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], env=env, input="import os\\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    g("update-index", "--add", "--cacheinfo", f"100644,{blob},backdoor.py")
    tree = g("write-tree")
    commit = g("commit-tree", tree, "-p", "HEAD", "-m", "innocent")
    g("update-ref", "HEAD", commit)
    g("config", "core.hooksPath", "/tmp/arbor-test-evil-hooks")
    os.remove(os.path.join(top, "evil-index"))
    open("harmless.py", "w").write("print('harmless')\\n")
    print("done", flush=True)
    """
)


def test_an_agent_moving_the_users_branch_and_config_is_named_and_apply_refuses(
    workspace: Path, tmp_path: Path
) -> None:
    script = tmp_path / "hostile.py"
    script.write_text(HOSTILE)
    agent = shlex.join([sys.executable, str(script), "{prompt}"])
    head_before = git(workspace, "rev-parse", "HEAD").strip()
    argv = [sys.executable, "-m", "ide", "run", "--workspace", str(workspace), "--agent", agent, "--apply"]
    done = subprocess.run([*argv, "tidy up"], capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert "your repository's git state changed during the turn" in done.stderr, done.stderr
    assert "core.hookspath" in done.stderr.lower()
    assert "the commit HEAD points at changed" in done.stderr
    assert "Arbor will not commit on top of it" in done.stderr
    assert done.returncode != 0
    agents = git(workspace, "rev-parse", "HEAD").strip()
    assert agents != head_before  # the agent did move it (it was not confined) …
    assert git(workspace, "rev-parse", "HEAD~1").strip() == head_before
    assert "harmless" not in git(workspace, "log", "--format=%s", "-1")  # … and Arbor committed nothing on it
    assert not (workspace / "harmless.py").exists()


def test_a_branch_moved_by_the_user_between_turns_does_not_stop_apply(workspace: Path) -> None:
    from ide.changes.gitstate import Watch

    repo = find_repo(workspace)
    assert repo is not None
    watch = Watch(repo)
    assert watch.turn_ended() == []
    (workspace / "mine.py").write_text("x = 1\n")
    git(workspace, "add", "mine.py")
    git(workspace, "commit", "-qm", "the user's own commit")
    watch.turn_started()
    assert watch.turn_ended() == []
    watch.check_apply()  # nothing moved during the turn


def test_a_hook_planted_during_a_turn_blocks_apply_until_it_is_removed(workspace: Path) -> None:
    from ide.changes import ChangeError
    from ide.changes.gitstate import Watch

    repo = find_repo(workspace)
    assert repo is not None
    watch = Watch(repo)
    hooks = workspace / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "pre-commit").write_text("#!/bin/sh\necho pwned\n")
    (hooks / "pre-commit").chmod(0o755)
    changes = [change.describe() for change in watch.turn_ended()]
    assert any("pre-commit" in said and "added" in said for said in changes)
    with pytest.raises(ChangeError, match="pre-commit"):
        watch.check_apply()
    (hooks / "pre-commit").unlink()
    watch.check_apply()  # put back: Apply goes on


@pytest.mark.parametrize(
    "rel", ["sub/.git/config", "sub/.GIT/hooks/pre-commit", "sub/.git./x", "GIT~1/config"]
)
def test_a_nested_git_directory_the_agent_makes_is_never_captured(workspace: Path, rel: str) -> None:
    """A nested repository's config (core.fsmonitor, hooks) would make git run programs in the user's
    workspace once applied: refused for every author, listed as not captured with the reason."""
    shadow = Shadow.create(workspace)
    try:
        target = shadow.root / rel
        target.parent.mkdir(parents=True)
        target.write_text("[core]\n\tfsmonitor = touch /tmp/pwned\n")
        changeset = ChangeSet(workspace)
        found = shadow.fill(changeset)
        assert rel in found.skipped and ".git" in found.skipped[rel]
        assert changeset.changed_paths() == []
    finally:
        shadow.close()
    from ide.changes import ChangeError

    with pytest.raises(ChangeError, match=r"\.git"):
        ChangeSet(workspace).write_bytes(rel, b"[core]\n")


def test_a_submodules_hook_and_the_git_dirs_info_files_changed_in_a_turn_are_named(workspace: Path) -> None:
    from ide.changes import ChangeError
    from ide.changes.gitstate import Watch

    repo = find_repo(workspace)
    assert repo is not None
    watch = Watch(repo)
    hook = workspace / ".git" / "modules" / "lib" / "hooks" / "post-checkout"
    hook.parent.mkdir(parents=True)
    hook.write_text("#!/bin/sh\necho pwned\n")
    info = workspace / ".git" / "info"
    info.mkdir(exist_ok=True)
    (info / "attributes").write_text("* filter=evil\n")
    said = "\n".join(change.describe() for change in watch.turn_ended())
    assert ".git/modules/lib/hooks/post-checkout added" in said
    assert ".git/info/attributes added" in said
    with pytest.raises(ChangeError, match="post-checkout"):
        watch.check_apply()  # a submodule's hook runs at the user's next git submodule update


def test_apply_while_the_agent_still_works_refuses_a_head_moved_since_the_turn_started(
    workspace: Path,
) -> None:
    from ide.changes import ChangeError
    from ide.changes.gitstate import Watch

    repo = find_repo(workspace)
    assert repo is not None
    watch = Watch(repo)
    watch.turn_started()
    (workspace / "agents.py").write_text("import os\n")
    git(workspace, "add", "agents.py")
    git(workspace, "commit", "-qm", "made mid-turn")
    with pytest.raises(ChangeError, match="the commit HEAD points at changed"):
        watch.check_apply()  # the turn has not ended: nobody can say who moved it
