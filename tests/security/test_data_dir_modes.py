"""Arbor's data dir (issue 45, item 6): the code index, the transcripts and the memory are the user's
alone — directories 0700, files 0600, SQLite's -wal and -shm files included — and a data dir an earlier
Arbor left open to other accounts is made private, with a line in the log, the first time it is used."""

from __future__ import annotations

import asyncio
import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from ide.backend.services import Services
from ide.settings import load_settings, trust_store

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX permission bits")


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    """The common umask (022), under which files were created 0644 and directories 0755."""
    before = os.umask(0o022)
    yield
    os.umask(before)


def modes(root: Path) -> dict[str, int]:
    """Every directory and file under ``root`` (``root`` itself as ".") with its permission bits."""
    found = {".": stat.S_IMODE(root.stat().st_mode)}
    for path in root.rglob("*"):
        found[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def loose(found: dict[str, int], root: Path) -> dict[str, str]:
    wanted = {name: 0o700 if (root / name).is_dir() else 0o600 for name in found}
    return {name: f"{mode:o}" for name, mode in found.items() if mode != wanted[name]}


async def test_the_index_transcripts_memory_and_checkpoints_are_the_user_s_alone(git_workspace: Path) -> None:
    settings = load_settings(git_workspace).settings
    data_dir = settings.resolved_data_dir()
    assert not data_dir.exists()
    services = Services()
    try:
        workspace = await services.open(str(git_workspace), settings)
        await asyncio.wait_for(workspace.index.updated.wait(), 60)
        workspace.store.create("s1", str(git_workspace), "react")
        workspace.store.append_events("s1", str(git_workspace), 1, [{"text": "the user's code"}])
        assert workspace.memory is not None
        workspace.memory.add("insights", "a finding", "about the user's code")
        await workspace.checkpointer.setup()  # type: ignore[union-attr]
        found = modes(data_dir)  # while the databases are open: their -wal and -shm files are there
    finally:
        await services.close()
    names = {Path(name).name for name in found}
    assert {"index.sqlite", "sessions.sqlite", "memory.sqlite", "checkpoints.sqlite"} <= names
    assert {"index.sqlite-wal", "sessions.sqlite-wal", "memory.sqlite-wal"} <= names
    assert {"index.sqlite-shm", "sessions.sqlite-shm", "memory.sqlite-shm"} <= names
    assert loose(found, data_dir) == {}
    assert loose(modes(data_dir), data_dir) == {}


def test_the_trust_record_is_private_in_the_config_dir(tmp_path: Path) -> None:
    workspace = tmp_path / "w"
    workspace.mkdir()
    store = trust_store()
    store.record(workspace, "digest", trusted=True)
    config_dir = store.path.parent
    assert config_dir == Path(os.environ["ARBOR_CONFIG_DIR"])  # made by the record
    assert loose(modes(config_dir), config_dir) == {}


def test_a_data_dir_left_open_is_made_private_and_the_log_says_so(
    git_workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from ide.backend.store import SessionStore

    settings = load_settings(git_workspace).settings
    data_dir = settings.resolved_data_dir()
    # What an earlier Arbor left: 0755 directories, 0644 databases.
    old = data_dir / "workspaces" / "old-workspace"
    old.mkdir(parents=True, mode=0o755)
    for name in ("sessions.sqlite", "sessions.sqlite-wal", "index.sqlite"):
        (old / name).write_bytes(b"")
    os.chmod(data_dir, 0o755)
    assert modes(data_dir)["."] == 0o755 and modes(data_dir)["workspaces/old-workspace/index.sqlite"] == 0o644

    with caplog.at_level(logging.WARNING, logger="ide.private"):
        store = SessionStore(data_dir)
        store.create("s1", str(git_workspace), "react")
        store.close()
    assert loose(modes(data_dir), data_dir) == {}
    said = [record.getMessage() for record in caplog.records if record.name == "ide.private"]
    assert (
        len(said) == 1 and f"Arbor's data dir {data_dir} was readable by other accounts (mode 755)" in said[0]
    )
