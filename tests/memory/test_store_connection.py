"""The memory store keeps one connection open: what each call writes is committed when it returns (another
process reads it at once), a failed call leaves nothing behind, calls from many threads and from a session's
view at once all land, and a closed store opens its database again. Real SQLite files in a temp dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from ide.memory import MemoryStore
from tests.support.sqlite_reader import from_threads, other_process_reads


@pytest.fixture
def memory(tmp_path: Path) -> MemoryStore:
    return MemoryStore(tmp_path / "memory.sqlite")


def test_each_call_is_committed_when_it_returns(memory: MemoryStore) -> None:
    first = memory.add("insights", "greet", "greet formats a string", session_id="s1")
    assert other_process_reads(memory.path, "SELECT id, title, session_id FROM memories") == [
        [first, "greet", "s1"]
    ]
    assert memory.delete(first)
    assert other_process_reads(memory.path, "SELECT count(*) FROM memories") == [[0]]


def test_a_failed_call_leaves_nothing_and_the_store_goes_on(memory: MemoryStore) -> None:
    with pytest.raises(ValueError, match="needs a title"):
        memory.add("insights", "", "no title")

    # A call that fails inside its transaction: the row it wrote is rolled back, the connection goes on.
    def fail_midway() -> None:
        with memory._db() as db:
            db.execute(
                "INSERT INTO memories (namespace, title, content, created_at) "
                "VALUES ('insights', 'x', 'y', 0)"
            )
            raise RuntimeError("midway")

    with pytest.raises(RuntimeError, match="midway"):
        fail_midway()
    memory.add("insights", "kept", "after the failures")
    assert other_process_reads(memory.path, "SELECT title FROM memories") == [["kept"]]
    assert [item.title for item in memory.list()] == ["kept"]


def test_calls_from_many_threads_and_session_views_all_land(memory: MemoryStore) -> None:
    def write(n: int) -> None:
        view = memory.for_session(f"s{n}")
        for k in range(25):
            view.add("insights", f"t{n}-{k}", "content")
            view.list(limit=5)

    assert from_threads(write) == []
    rows = other_process_reads(memory.path, "SELECT session_id, count(*) FROM memories GROUP BY 1 ORDER BY 1")
    assert rows == [[f"s{n}", 25] for n in range(8)]


def test_a_closed_store_opens_again(memory: MemoryStore) -> None:
    memory.add("insights", "before", "x")
    memory.close()
    memory.close()  # twice is harmless
    memory.add("insights", "after", "y")
    assert sorted(item.title for item in memory.list()) == ["after", "before"]
