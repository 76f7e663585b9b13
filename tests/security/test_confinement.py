"""Every file tool of the agent stays inside the workspace and away from secrets: a table of attacks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ide.changes import ChangeSet
from ide.codeintel.index import CodeIndex
from ide.settings import Settings
from ide.tools import toolbox as make_toolbox
from tests.support.path_calls import calls

SECRET = "API_KEY=sk-live-0123456789abcdef"
OUTSIDE = "outside text that must never be read or changed"


@pytest.fixture
def sandbox(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "ws"
    outside = tmp_path / "outside"
    (root / "pkg").mkdir(parents=True)
    outside.mkdir()
    (outside / "target.txt").write_text(OUTSIDE)
    (root / "pkg" / "a.py").write_text("x = 1\n")
    (root / ".env").write_text(SECRET + "\n")
    (root / "deploy").mkdir()
    (root / "deploy" / "server.pem").write_text("-----BEGIN PRIVATE KEY-----\n")
    os.symlink(outside, root / "link_dir")
    os.symlink(outside / "target.txt", root / "link_file")
    os.symlink(root / ".env", root / "innocent.txt")
    return root, outside


ATTACKS = [
    "../outside/target.txt",
    "pkg/../../outside/target.txt",
    "{outside}/target.txt",
    "link_dir/target.txt",
    "link_file",
    ".env",
    "innocent.txt",
    "deploy/server.pem",
    "pkg/\x00a.py",
]


@pytest.mark.parametrize("attack", ATTACKS)
def test_no_tool_reaches_outside_or_a_secret(sandbox: tuple[Path, Path], attack: str) -> None:
    root, outside = sandbox
    path = attack.format(outside=outside)
    changeset = ChangeSet(root)
    toolbox = make_toolbox(root, Settings(), changeset)
    for name, args in calls(path):
        outcome = toolbox.call(name, args)
        assert SECRET not in outcome.output and OUTSIDE not in outcome.output, (name, path, outcome.output)
        if name in ("list_dir", "grep") and attack in ("link_dir/target.txt",):
            assert outcome.failed, (name, path)
        elif name not in ("grep",):
            assert outcome.failed, (name, path, outcome.output)
    # Nothing proposed outside or on a secret; nothing written anywhere.
    assert all(
        not p.startswith("..") and p not in (".env", "innocent.txt") for p in changeset.changed_paths()
    )
    assert (outside / "target.txt").read_text() == OUTSIDE
    assert (root / ".env").read_text() == SECRET + "\n"


def test_listing_searching_and_the_index_skip_secrets(sandbox: tuple[Path, Path], tmp_path: Path) -> None:
    root, _outside = sandbox
    toolbox = make_toolbox(root, Settings(), ChangeSet(root))
    listing = toolbox.call("list_dir", {"path": "."}).output
    assert ".env" not in listing and "innocent.txt" not in listing and "pkg" in listing
    assert "server.pem" not in toolbox.call("list_dir", {"path": "deploy"}).output
    assert SECRET not in toolbox.call("grep", {"pattern": "API_KEY"}).output
    index = CodeIndex(root, tmp_path / "index.sqlite", Settings().workspace)
    index.refresh()
    assert index.search("API_KEY", 10) == []
    assert not [p for p in index.paths((".env", ".pem", ".txt")) if "env" in p or p.endswith(".pem")]
    index.close()


def test_the_secret_patterns_are_a_setting(sandbox: tuple[Path, Path]) -> None:
    root, _outside = sandbox
    settings = Settings.model_validate({"workspace": {"secrets": ["pkg/a.py"]}})
    toolbox = make_toolbox(root, settings, ChangeSet(root))
    assert toolbox.call("read_file", {"path": "pkg/a.py"}).failed
    assert not toolbox.call("read_file", {"path": "link_dir/../pkg/a.py"}).output.startswith("x = 1")


async def test_test_commands_run_as_argv_without_a_shell(tmp_path: Path) -> None:
    from ide.changes.testrun import run_tests
    from tests.support.git import git

    root = tmp_path / "repo"
    root.mkdir()
    (root / "ok.txt").write_text("ok\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    marker = tmp_path / "pwned"
    # Through a shell the && would run touch; as argv, echo prints it literally.
    run = await run_tests(ChangeSet(root), f"echo hello && touch {marker}", 30)
    assert run.passed and run.output.strip() == f"hello && touch {marker}"
    assert not marker.exists()
    missing = await run_tests(ChangeSet(root), "no-such-test-runner -q", 30)
    assert not missing.passed and "cannot run no-such-test-runner" in missing.output


def test_api_keys_never_reach_a_log(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from ide.logs import RedactingFilter, redact

    assert redact("using key sk-live-0123456789abcdef for openai") == "using key [redacted] for openai"
    assert (
        redact('headers {"Authorization": "Bearer abc.def.ghi123456"}')
        == 'headers {"Authorization": "Bearer [redacted]"}'
    )
    assert redact("OPENAI_API_KEY=sk-abc123456789xyz") == "OPENAI_API_KEY=[redacted]"
    assert redact("password: hunter22") == "password: [redacted]"
    logger = logging.getLogger("arbor-redaction-test")
    caplog.handler.addFilter(RedactingFilter())
    with caplog.at_level(logging.INFO, logger="arbor-redaction-test"):
        logger.info("calling %s with api_key=%s", "https://api.example", "sk-secret-998877665544")
    assert "sk-secret" not in caplog.text and "api_key=[redacted]" in caplog.text


async def test_test_commands_get_no_api_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An allowed test run executes the repository's code: it does not get Arbor's keys or SSH agent, nor
    any variable outside the allow-list (ide/childenv.py) unless the user names it in ARBOR_PASS_ENV."""
    import sys

    from ide.changes.testrun import run_tests
    from tests.support.git import git

    root = tmp_path / "repo"
    root.mkdir()
    (root / "env.py").write_text(
        "import os\nprint(sorted(k for k in os.environ if k.startswith(('ARBOR_T_', 'SSH_'))))\n"
    )
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    for name in ("ARBOR_T_OPENAI_API_KEY", "ARBOR_T_GITHUB_TOKEN", "ARBOR_T_DB_PASSWORD", "ARBOR_T_PLAIN"):
        monkeypatch.setenv(name, "sk-secret-0123456789")
    monkeypatch.setenv("SSH_AUTH_SOCK", "/tmp/agent.sock")
    run = await run_tests(ChangeSet(root), f"{sys.executable} env.py", 30)
    assert run.passed and run.output.strip() == "[]"
    monkeypatch.setenv("ARBOR_PASS_ENV", "ARBOR_T_PLAIN")
    run = await run_tests(ChangeSet(root), f"{sys.executable} env.py", 30)
    assert run.passed and run.output.strip() == "['ARBOR_T_PLAIN']"
