"""Memory across sessions: the store (real SQLite, FTS5, embeddings through a fake Ollama), what runs
teach it, the agent's memory tools, and a second session's prompt carrying the first one's pattern."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp import text_block

from ide.memory import MemoryStore, task_type
from ide.memory.learn import (
    classify_error,
    learn_from_error,
    learn_from_run,
    rejected_paths,
    tool_sequence,
    unlearn_changes,
)
from ide.protocol import memory as mp
from ide.protocol import review as rv
from ide.settings import Settings
from ide.tools import ToolServices
from ide.tools import toolbox as make_toolbox
from tests.support.acp_client import RecordingClient, acp_backend
from tests.support.fake_ollama import FakeOllama
from tests.support.memory_tree import solved_tree


def test_store_search_namespaces_delete_and_export(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "memory.sqlite")
    first = store.add("insights", "Greetings live in pkg/greet.py", "The README only documents them.")
    store.add("errors", "ModelError: unreachable", "Ollama was down")
    assert [i.id for i in store.search("greetings")] == [first]
    assert store.search("ollama", ["insights"]) == []
    assert [i.namespace for i in store.search("ollama")] == ["errors"]
    assert store.counts() == {"investigations": 0, "insights": 1, "patterns": 0, "errors": 1}
    assert [item["title"] for item in store.export()] == [
        "ModelError: unreachable",
        "Greetings live in pkg/greet.py",
    ]
    assert store.delete(first) and not store.delete(first)
    assert store.search("greetings") == []
    # It is a file: a second store on the same path sees the same memory.
    assert MemoryStore(tmp_path / "memory.sqlite").counts()["errors"] == 1


def test_a_solved_run_becomes_an_investigation_a_pattern_and_its_lessons_insights(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "memory.sqlite")
    task = "fix the greeting typo in pkg/greet.py"
    tree = solved_tree(task, score=8.5).tree
    assert tool_sequence(tree) == ["read_file", "edit_file"]
    ids = learn_from_run(
        store, task=task, answer="Fixed.", tree=tree, stop_reason="end_turn", changed=["pkg/greet.py"]
    )
    assert len(ids) == 3
    [investigation] = store.list("investigations")
    assert investigation.score == 8.5 and investigation.data["files"] == ["pkg/greet.py"]
    assert (
        "Solution path: fix the greeting typo in pkg/greet.py → read_file → edit_file → done"
        in investigation.content
    )
    [lesson] = store.list("insights")
    assert lesson.content == "greetings live in pkg/greet.py, not in the README"
    assert task_type("fix the farewell crash") == "bugfix"
    assert store.suggestions("fix the farewell crash") == ["read_file → edit_file"]
    assert store.suggestions("add a --version flag") == []  # a feature, not a bugfix
    hint = store.hint("fix the farewell crash")
    assert "read_file → edit_file" in hint and 'source="investigation #' in hint
    # A run that scored low teaches no investigation or pattern; errors are recorded apart.
    low = solved_tree("fix another typo", score=4.0).tree
    learn_from_run(store, task="fix another typo", answer="", tree=low, stop_reason="end_turn")
    assert store.counts()["investigations"] == 1
    learn_from_error(store, task="fix it", error="KeyError: 'greeting' in pkg/greet.py")
    assert store.list("errors")[0].title == "KeyError: 'greeting' in pkg/greet.py"


@pytest.mark.parametrize(
    "error",
    [
        "ModelError: Ollama is not reachable",
        "Ollama is not reachable at http://127.0.0.1:9 (connection refused)\nStart it with: ollama serve",
        'Model "qwen3:8b" is not pulled on Ollama at http://localhost:11434\nRun "ollama pull qwen3:8b"',
        "No API key for openai: OPENAI_API_KEY is not set",
        "ollama:qwen3:8b sent nothing within 300 s",
        "ollama:llama3.2:1b does not support tool calling, which the agent needs",
    ],
)
def test_a_setup_failure_is_no_workspace_error(tmp_path: Path, error: str) -> None:
    store = MemoryStore(tmp_path / "memory.sqlite")
    assert classify_error(error) == "setup"
    assert learn_from_error(store, task="fix it", error=error) is None
    assert store.counts()["errors"] == 0
    assert classify_error("ToolError: pkg/nope.py does not exist") == "workspace"


def test_unlearn_takes_back_only_that_sessions_runs_over_those_files(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "memory.sqlite")
    for session, path in (("s1", "pkg/greet.py"), ("s2", "pkg/greet.py"), ("s1", "pkg/other.py")):
        tree = solved_tree("fix the greeting typo", score=9.0).tree
        learn_from_run(
            store,
            task="fix it",
            answer="ok",
            tree=tree,
            stop_reason="end_turn",
            changed=[path],
            session_id=session,
        )
    assert store.counts()["investigations"] == 3 and store.counts()["patterns"] == 3
    assert len(unlearn_changes(store, session_id="s1", paths=["pkg/greet.py"])) == 2
    left = {(i.session_id, tuple(i.data["files"])) for i in store.list("investigations")}
    assert left == {("s2", ("pkg/greet.py",)), ("s1", ("pkg/other.py",))}
    assert store.counts()["patterns"] == 2 and store.counts()["insights"] == 3  # lessons stay
    assert rejected_paths([("a", ["rejected", "rejected"]), ("b", ["rejected", "accepted"]), ("c", [])]) == [
        "a"
    ]


@pytest.mark.parametrize("answer", ["discard", "apply"])
async def test_rejected_or_rolled_back_work_is_no_investigation(
    git_workspace: Path, write_script, answer: str
) -> None:
    script = write_script(
        [
            {"tool_calls": [{"name": "read_file", "args": {"path": "pkg/greet.py"}}]},
            {
                "tool_calls": [
                    {
                        "name": "edit_file",
                        "args": {"path": "pkg/greet.py", "old_text": "Hello", "new_text": "Hi"},
                    }
                ]
            },
            {"content": "Fixed the greeting in pkg/greet.py."},
        ]
    )
    client = RecordingClient(permission_answer=answer)
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}, client=client) as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        await backend.conn.prompt(session_id=session.session_id, prompt=[text_block("fix the greeting bug")])
        assert client.permission_requests, "the plain client was asked to apply"

        async def counts() -> dict[str, int]:
            listing = await backend.conn.ext_method(
                mp.MEMORY_SEARCH, {"session_id": session.session_id, "query": ""}
            )
            return mp.MemoryList.model_validate(listing).counts

        if answer == "apply":
            assert "Hi," in (git_workspace / "pkg" / "greet.py").read_text()
            assert (await counts())["investigations"] == 1
            rolled = rv.RollbackResult.model_validate(
                await backend.conn.ext_method(rv.ROLLBACK, {"cwd": str(git_workspace)})
            )
            assert rolled.batch.paths == ["pkg/greet.py"]
        else:
            assert "Hello," in (git_workspace / "pkg" / "greet.py").read_text()
        after = await counts()
        assert after["investigations"] == 0 and after["patterns"] == 0


def test_search_blends_embeddings_when_a_model_is_configured(tmp_path: Path) -> None:
    from langchain_ollama import OllamaEmbeddings

    with FakeOllama(responses=[]) as server:
        store = MemoryStore(
            tmp_path / "m.sqlite", embedder=OllamaEmbeddings(model="nomic-embed-text", base_url=server.url)
        )
        store.add(
            "insights", "retry policy", "The HTTP retry policy is configured in net/retry.py with backoff"
        )
        store.add("insights", "retry counter", "A counter named retry in the game loop")
        best = store.search("http backoff policy")[0]
        assert best.title == "retry policy"
        assert sum(r.path == "/api/embed" for r in server.requests) >= 3


def test_the_memory_tools(tmp_path: Path, git_workspace: Path) -> None:
    from ide.changes import ChangeSet

    store = MemoryStore(tmp_path / "memory.sqlite")
    toolbox = make_toolbox(git_workspace, Settings(), ChangeSet(git_workspace), ToolServices(memory=store))
    assert {"search_memory", "store_insight", "get_insights"} <= set(toolbox.specs)
    stored = toolbox.call(
        "store_insight", {"title": "Tests use pytest", "content": "run python -m pytest -q"}
    )
    assert stored.output.startswith("stored as insight #") and not stored.failed
    assert "Tests use pytest" in toolbox.call("get_insights", {}).output
    assert "Tests use pytest" in toolbox.call("search_memory", {"query": "pytest"}).output
    assert "nothing in memory matches" in toolbox.call("search_memory", {"query": "kubernetes"}).output
    assert "search_memory" not in make_toolbox(git_workspace, Settings(), ChangeSet(git_workspace)).specs


async def test_a_second_session_is_told_what_the_first_one_learned(git_workspace: Path) -> None:
    first = [
        {"tool_calls": [{"name": "read_file", "args": {"path": "pkg/greet.py"}}]},
        {
            "tool_calls": [
                {"name": "edit_file", "args": {"path": "pkg/greet.py", "old_text": "Hello", "new_text": "Hi"}}
            ]
        },
        {"content": "Fixed the greeting in pkg/greet.py."},
        {"content": "Looking."},
    ]
    with FakeOllama(responses=first) as server:
        env = {"ARBOR_MODEL": "ollama:qwen2.5-coder:7b", "OLLAMA_HOST": server.url}
        async with acp_backend(env) as backend:
            session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
            await backend.conn.prompt(
                session_id=session.session_id, prompt=[text_block("fix the greeting bug")]
            )
            listing = mp.MemoryList.model_validate(
                await backend.conn.ext_method(
                    mp.MEMORY_SEARCH, {"session_id": session.session_id, "query": ""}
                )
            )
            assert listing.counts["investigations"] == 1 and listing.counts["patterns"] == 1
        async with acp_backend(env) as backend:
            second = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
            await backend.conn.prompt(
                session_id=second.session_id, prompt=[text_block("fix the farewell bug")]
            )
        first_turn = json.dumps(server.chat_bodies[0]["messages"])
        last_turn = json.dumps(server.chat_bodies[-1]["messages"])
        assert "read_file \\u2192 edit_file" not in first_turn
        assert "From Arbor's memory of this workspace" in last_turn
        assert "read_file \\u2192 edit_file" in last_turn and "fix the greeting bug" in last_turn
