"""The session store keeps one connection per workspace database open: what each call writes is committed
when it returns (another process reads it at once), a failed call leaves nothing behind, calls from many
threads at once all land, and a closed store opens its databases again. Real SQLite files in a temp dir."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ide.backend.store import SessionStore
from tests.support.sqlite_reader import from_threads, other_process_reads


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "data")


def test_each_call_is_committed_when_it_returns(store: SessionStore, tmp_path: Path) -> None:
    cwd = str(tmp_path / "workspace")
    store.create("s1", cwd, "react")
    store.append_events("s1", cwd, 1, [{"sessionUpdate": "agent_message_chunk", "content": {"text": "hi"}}])
    store.update("s1", cwd, title="first")
    database = store.workspace_dir(cwd) / "sessions.sqlite"
    assert other_process_reads(database, "SELECT id, title FROM sessions") == [["s1", "first"]]
    assert other_process_reads(database, "SELECT session_id, seq, turn FROM events") == [["s1", 1, 1]]
    assert store.events("s1", cwd) == [{"sessionUpdate": "agent_message_chunk", "content": {"text": "hi"}}]


def test_a_failed_call_leaves_nothing_and_the_store_goes_on(store: SessionStore, tmp_path: Path) -> None:
    cwd = str(tmp_path / "workspace")
    store.create("s1", cwd, "react")
    with pytest.raises(sqlite3.IntegrityError):
        store.create("s1", cwd, "react")  # the same id again
    with pytest.raises(sqlite3.IntegrityError):
        # events of a session that does not exist: refused by the foreign key, the whole batch rolled back
        store.append_events("nobody", cwd, 1, [{"sessionUpdate": "plan"}, {"sessionUpdate": "plan"}])
    store.append_events("s1", cwd, 1, [{"sessionUpdate": "plan"}])
    database = store.workspace_dir(cwd) / "sessions.sqlite"
    assert other_process_reads(database, "SELECT session_id, seq FROM events") == [["s1", 1]]


def test_calls_from_many_threads_all_land(store: SessionStore, tmp_path: Path) -> None:
    cwd = str(tmp_path / "workspace")
    for n in range(8):
        store.create(f"s{n}", cwd, "react")

    def write(n: int) -> None:
        for turn in range(1, 26):
            store.append_events(f"s{n}", cwd, turn, [{"sessionUpdate": "plan", "n": turn}])

    assert from_threads(write) == []
    assert all(len(store.events(f"s{n}", cwd)) == 25 for n in range(8))


def test_a_closed_store_opens_its_databases_again(store: SessionStore, tmp_path: Path) -> None:
    cwd = str(tmp_path / "workspace")
    store.create("s1", cwd, "react")
    store.close()
    store.update("s1", cwd, title="after close")
    assert store.get("s1", cwd).title == "after close"  # type: ignore[union-attr]
    store.close()
    assert [r.id for r in SessionStore(tmp_path / "data").list(cwd)] == ["s1"]
