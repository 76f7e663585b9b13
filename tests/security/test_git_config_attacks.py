"""Git config that still ran code after issue 16, each from a hostile repository (real repositories, the
armed config written into .git/config, each payload a script that leaves a marker file):

- a filter driver whose name holds ``=`` (``-c filter.a=b.clean=`` blanks the wrong key);
- a promisor remote with an ``ext::`` URL, reached through a lazy fetch of a missing blob, during Apply
  and during the workflow history search;
- an ``include.path`` naming a worktree file that an accepted edit fills later, under a running backend.

Also: every program-naming key shape is blanked, a git without the hardened environment refuses to
start, and the git of scratch worktrees and test runs gets that environment without secrets.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from ide.changes import BatchStore, ChangeSet, Review
from ide.changes.testrun import run_tests
from ide.changes.worktree import scratch_worktree
from ide.gitsafe import git_argv, git_env
from ide.protocol.review import DecideParams
from ide.settings import Settings
from ide.workflows.retrieval import RetrievalAgent, RetrievalRequest
from ide.workflows.schema import RagSource, RetrievalStrategy
from tests.support.git import git


def payload(tmp_path: Path) -> tuple[Path, Path]:
    """(script, marker): the script leaves the marker and passes its input through."""
    marker = tmp_path / "payload-ran"
    script = tmp_path / "payload.sh"
    script.write_text(f"#!/bin/sh\ntouch '{marker}'\ncat\n")
    script.chmod(0o755)
    return script, marker


def safe_git(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(git_argv(root, *args), cwd=root, capture_output=True, env=git_env(), check=False)


def accept_all(review: Review) -> None:
    review.decide(DecideParams(session_id="s", decision="accepted", all=True))


def test_a_filter_whose_name_holds_an_equals_sign_never_runs(git_workspace: Path, tmp_path: Path) -> None:
    root = git_workspace
    script, marker = payload(tmp_path)
    (root / ".gitattributes").write_text("*.py filter=a=b\n")
    git(root, "add", ".gitattributes")
    git(root, "commit", "-qm", "attributes")
    with (root / ".git" / "config").open("a") as handle:
        handle.write(f'[filter "a=b"]\n\tclean = "{script}"\n\tsmudge = "{script}"\n\tprocess = "{script}"\n')

    assert safe_git(root, "hash-object", "pkg/greet.py").returncode == 0
    assert not marker.exists(), "the clean filter of filter.a=b ran on hash-object"

    changes = ChangeSet(root)
    changes.edit("pkg/greet.py", "Hello", "Hi")
    with scratch_worktree(changes) as workdir:
        assert (workdir / "pkg" / "greet.py").read_text().count("Hi") == 1
    assert not marker.exists(), "the smudge filter ran when the scratch worktree was checked out"

    run = asyncio.run(run_tests(changes, "python -c pass", 30))
    assert run.passed, run.output
    review = Review(changes, session_id="s", title="t", store=BatchStore(tmp_path / "data"))
    accept_all(review)
    assert review.apply().batch is not None
    assert not marker.exists(), "a filter ran during a test run or Apply"


def promisor_repository(root: Path, marker: Path) -> None:
    """A repository whose blob of greet.py is missing and whose promisor remote 'fetches' with ext::."""
    blob = git(root, "rev-parse", "HEAD:pkg/greet.py").strip()
    (root / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    for key, value in (
        ("core.repositoryformatversion", "1"),
        ("extensions.partialClone", "origin"),
        ("remote.origin.promisor", "true"),
        ("remote.origin.url", f"ext::sh -c touch% {marker}"),
        ("protocol.ext.allow", "always"),
    ):
        git(root, "config", key, value)


def test_a_promisor_remote_never_fetches_during_apply(git_workspace: Path, tmp_path: Path) -> None:
    root = git_workspace
    marker = tmp_path / "payload-ran"
    promisor_repository(root, marker)
    changes = ChangeSet(root)
    changes.edit("pkg/greet.py", "Hello", "Hi")
    review = Review(changes, session_id="s", title="t", store=BatchStore(tmp_path / "data"))
    accept_all(review)
    result = review.apply()
    assert not marker.exists(), "the ext:: command of a promisor remote ran during Apply"
    # The blob git cannot read makes the replay leave the file out of the commit; it is on disk.
    assert result.batch is not None and (root / "pkg" / "greet.py").read_text().count("Hi") == 1


def test_a_promisor_remote_never_fetches_during_the_history_search(
    git_workspace: Path, tmp_path: Path
) -> None:
    root = git_workspace
    (root / "pkg" / "greet.py").write_text('def greet(name):\n    return f"Hi, {name}!"\n')
    git(root, "commit", "-qam", "greet says Hi")
    marker = tmp_path / "payload-ran"
    promisor_repository(root, marker)
    request = RetrievalRequest(
        task="why does greet_name say Hi",
        stage_name="research",
        strategy=RetrievalStrategy.model_validate(
            {"rag_strategy": {"sources": [RagSource(name="git_history")]}}
        ),
        is_code=True,
    )
    asyncio.run(RetrievalAgent(root, Settings()).retrieve(request))
    assert not marker.exists(), "the ext:: command of a promisor remote ran during git log -G"


def test_an_include_filled_by_an_accepted_edit_is_read_again(git_workspace: Path, tmp_path: Path) -> None:
    root = git_workspace
    script, marker = payload(tmp_path)
    (root / ".gitattributes").write_text("*.py filter=evil\n")
    git(root, "add", ".gitattributes")
    git(root, "commit", "-qm", "attributes")
    with (root / ".git" / "config").open("a") as handle:
        handle.write("[include]\n\tpath = ../tools.cfg\n")
    # The backend runs git (and computes its overrides) while tools.cfg does not exist yet.
    assert safe_git(root, "hash-object", "pkg/greet.py").returncode == 0

    changes = ChangeSet(root)
    changes.create("tools.cfg", f'[filter "evil"]\n\tclean = "{script}"\n\tsmudge = "{script}"\n')
    review = Review(changes, session_id="s", title="t", store=BatchStore(tmp_path / "data"))
    accept_all(review)
    assert review.apply().batch is not None

    assert safe_git(root, "hash-object", "pkg/greet.py").returncode == 0
    later = ChangeSet(root)
    later.edit("pkg/greet.py", "Hello", "Hi")
    with scratch_worktree(later):
        pass
    assert not marker.exists(), "a filter from a config file included after the first git call ran"


PROGRAM_KEYS = (
    'filter "x.y=z".clean',
    'filter "x.y=z".required',
    'diff "d".textconv',
    'diff "d".command',
    "diff.external",
    'merge "m".driver',
    "core.sshCommand",
    "core.gitProxy",
    "core.pager",
    "core.editor",
    "core.askPass",
    "core.alternateRefsCommand",
    "sequence.editor",
    "credential.helper",
    'credential "https://h".helper',
    "gpg.program",
    'gpg "ssh".program',
    'mergetool "t".cmd',
    'difftool "t".cmd',
    'remote "o".proxy',
    "http.proxy",
    "pager.log",
    "sendemail.sendmailCmd",
)


def _config_line(key: str) -> tuple[str, str]:
    """(section header, variable) of a dotted or quoted key."""
    if '"' in key:
        section, _, rest = key.partition(" ")
        subsection, _, variable = rest.rpartition(".")
        return f"[{section} {subsection}]", variable
    section, _, variable = key.rpartition(".")
    return f"[{section}]", variable


def test_every_program_naming_key_of_the_repository_reads_empty(git_workspace: Path, tmp_path: Path) -> None:
    root = git_workspace
    script, _marker = payload(tmp_path)
    with (root / ".git" / "config").open("a") as handle:
        for key in PROGRAM_KEYS:
            header, variable = _config_line(key)
            handle.write(f'{header}\n\t{variable} = "{script}"\n')
        handle.write('[protocol "ext"]\n\tallow = always\n')
    listing = safe_git(root, "config", "--list", "-z").stdout.decode()
    final: dict[str, str] = {}
    for entry in filter(None, listing.split("\0")):
        key, _, value = entry.partition("\n")
        final[key.lower()] = value  # the last value wins, as git reads it
    leaks = {key: value for key, value in final.items() if str(script) in value}
    assert not leaks, f"keys still naming the payload: {sorted(leaks)}"
    assert final["protocol.ext.allow"] == "never" and final["protocol.allow"] == "never"


def test_a_git_started_without_the_hardened_environment_refuses(git_workspace: Path) -> None:
    done = subprocess.run(
        git_argv(git_workspace, "status"), cwd=git_workspace, capture_output=True, check=False
    )
    assert done.returncode != 0 and b"missing environment variable" in done.stderr


def test_scratch_worktrees_and_test_runs_get_git_without_secrets(
    git_workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-leak")
    monkeypatch.setenv("ARBOR_SERVICE_TOKEN", "leak")
    seen: list[dict[str, str]] = []
    real = subprocess.run

    def spy(argv, *args, **kwargs):  # type: ignore[no-untyped-def]
        if argv and argv[0] == "git":
            seen.append(dict(kwargs.get("env") or {}))
        return real(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", spy)
    changes = ChangeSet(git_workspace)
    changes.edit("pkg/greet.py", "Hello", "Hi")
    run = asyncio.run(run_tests(changes, 'python -c "import os; print(sorted(os.environ))"', 60))
    assert run.passed, run.output
    assert "OPENAI_API_KEY" not in run.output and "ARBOR_SERVICE_TOKEN" not in run.output
    assert seen, "no git ran for the scratch worktree"
    for env in seen:
        assert env.get("GIT_ALLOW_PROTOCOL") == "" and env.get("GIT_NO_LAZY_FETCH") == "1"
        assert env.get("GIT_TERMINAL_PROMPT") == "0"
        assert "OPENAI_API_KEY" not in env and "ARBOR_SERVICE_TOKEN" not in env
