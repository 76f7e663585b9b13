"""An agent's edits to meta files — Arbor's .arbor/, git's .gitattributes/.gitmodules/.gitignore, CI
pipelines, hooks — are marked in review with why they matter and never ride along with "Accept all":
not in the Review dock, not in ``arbor run --apply``, not in a plain ACP client's one permission."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import text_block

from ide.app.review.diffs import local_file_change
from ide.changes import ChangeSet, Review
from ide.changes.meta import meta_reason
from ide.changes.store import BatchStore
from ide.protocol.review import ChangeSetView, DecideParams
from tests.support.acp_client import RecordingClient, acp_backend
from tests.support.git import git

HOSTILE = '[lsp.servers.jedi]\ncommand = ["sh", "-c", "touch pwned"]\n'
PLAIN = "pkg/greet.py"
META = {
    ".arbor/config.toml": HOSTILE,
    ".gitattributes": "* filter=evil\n",
    ".github/workflows/ci.yml": "on: push\njobs: {}\n",
    "docs/.gitignore": "*\n",
    ".pre-commit-config.yaml": "repos: []\n",
    "tests/conftest.py": "import os\nos.system('touch pwned')\n",
    "pyproject.toml": '[build-system]\nbuild-backend = "evil"\n',
}


@pytest.mark.parametrize(
    ("path", "meta"),
    [
        (".arbor/config.toml", True),
        (".ARBOR/workflows/x.yaml", True),
        (".gitattributes", True),
        ("sub/dir/.gitattributes", True),
        (".gitmodules", True),
        ("src/.gitignore", True),
        (".github/workflows/release.yml", True),
        (".gitlab-ci.yml", True),
        (".husky/pre-commit", True),
        (".vscode/tasks.json", True),
        (".envrc", True),
        ("pyproject.toml", True),
        ("sub/pkg/setup.py", True),
        ("setup.cfg", True),
        ("tests/unit/conftest.py", True),
        ("Makefile", True),
        ("GNUmakefile", True),
        ("src/makefile", True),
        ("tox.ini", True),
        ("noxfile.py", True),
        ("sitecustomize.py", True),
        ("lib/usercustomize.py", True),
        ("site-packages/evil.pth", True),
        ("web/package.json", True),
        ("pkg/greet.py", False),
        ("docs/makefile.md", False),
        ("tests/test_conftest.py", False),
        ("package.json.bak", False),
        ("docs/github/workflows.md", False),
        ("arbor/config.toml", False),
    ],
)
def test_which_paths_are_meta(path: str, meta: bool) -> None:
    assert (meta_reason(path) is not None) == meta


def test_accept_all_leaves_meta_files_pending_until_accepted_on_their_own(
    git_workspace: Path, tmp_path: Path
) -> None:
    changes = ChangeSet(git_workspace)
    changes.edit(PLAIN, 'return f"Hello, {name}!"', 'return f"Hi, {name}!"')
    for path, text in META.items():
        changes.write(path, text)
    review = Review(changes, session_id="s", title="t", store=BatchStore(tmp_path / "b"))
    view = review.decide(DecideParams(session_id="s", decision="accepted", all=True))
    by_path = {f.path: f for f in view.files}
    assert by_path[PLAIN].meta is None
    assert {h.decision for h in by_path[PLAIN].hunks} == {"accepted"}
    for path in META:
        assert by_path[path].meta, path
        assert {h.decision for h in by_path[path].hunks} == {"pending"}, path
    assert "commands and hosts" in (by_path[".arbor/config.toml"].meta or "")

    result = review.apply()
    assert result.batch is not None and result.batch.paths == [PLAIN]
    for path in META:
        assert not (git_workspace / path).exists(), path
    assert sorted(f.path for f in result.changeset.files) == sorted(META)

    # A deliberate accept of the file itself applies it.
    review.decide(DecideParams(session_id="s", decision="accepted", paths=[".github/workflows/ci.yml"]))
    review.apply()
    assert (git_workspace / ".github/workflows/ci.yml").read_text() == META[".github/workflows/ci.yml"]
    assert not (git_workspace / ".arbor" / "config.toml").exists()


def test_the_review_pane_marks_meta_files_and_accept_all_skips_them(qtbot: Any) -> None:
    from ide.app.review.pane import ReviewPane
    from ide.app.review.state import META_MARK

    files = [local_file_change(PLAIN, "a\n", "b\n")]
    files += [local_file_change(path, None, text) for path, text in META.items()]
    files = [f.model_copy(update={"meta": meta_reason(f.path)}) for f in files]
    pane = ReviewPane()
    qtbot.addWidget(pane)
    pane.resize(1100, 600)
    pane.show()
    pane.set_session("s", "/w")
    pane.set_interactive(True)
    pane.set_changeset(ChangeSetView(session_id="s", cwd="/w", title="t", files=files))
    model = pane.files_model
    names = [model.index(row, 0).data() for row in range(model.rowCount())]
    assert names[0] == PLAIN and all(name.startswith(META_MARK) for name in names[1:])
    sent: list[DecideParams] = []
    pane.decideRequested.connect(sent.append)
    pane.accept_all_button.click()
    assert sent[-1].all
    states = [model.index(row, 3).data() for row in range(model.rowCount())]
    assert states == ["accepted"] + ["pending"] * len(META)
    assert f"{len(META)} need their own accept" in pane.summary.text()
    pane.select_file(1)
    assert pane.meta_label.isVisible() and "needs its own accept" in pane.meta_label.text()
    pane.select_file(0)
    assert not pane.meta_label.isVisible()


WRITE_CONFIG = [
    {
        "tool_calls": [
            {
                "name": "edit_file",
                "args": {
                    "path": PLAIN,
                    "old_text": 'return f"Hello, {name}!"',
                    "new_text": 'return f"Hi, {name}!"',
                },
            },
            {"name": "create_file", "args": {"path": ".arbor/config.toml", "content": HOSTILE}},
        ]
    },
    {"content": "Done."},
]


def test_arbor_run_apply_leaves_the_config_and_says_why(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    script = write_script(WRITE_CONFIG)
    done = subprocess.run(
        [sys.executable, "-m", "ide", "run", "-w", str(git_workspace), "--apply", "go"],
        env={**os.environ, "ARBOR_MODEL": f"scripted:{script}"},
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Hi, {name}" in (git_workspace / PLAIN).read_text()
    assert not (git_workspace / ".arbor" / "config.toml").exists()
    assert "[review] not applied: .arbor/config.toml needs its own accept" in done.stderr
    assert ".arbor/config.toml" not in git(git_workspace, "show", "--name-only", "HEAD")


async def test_a_plain_acp_client_is_asked_about_meta_files_separately(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    script = write_script(WRITE_CONFIG)

    class ApplyPlainOnly(RecordingClient):
        async def request_permission(
            self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
        ) -> Any:
            self.permission_answer = "discard" if self.permission_requests else "apply"
            return await super().request_permission(session_id, tool_call, options, **kwargs)

    client = ApplyPlainOnly(permission_answer="apply")
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, None, client) as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        await backend.conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
    first, second = client.permission_requests
    assert "1 file(s)" in first[0].title
    assert ".arbor/config.toml" in second[0].title and "commands and hosts" in second[0].title
    assert "Hi, {name}" in (git_workspace / PLAIN).read_text()
    assert not (git_workspace / ".arbor" / "config.toml").exists()
