"""The code index over ACP: status while indexing, outlines, symbol search, and the file watcher."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from acp import RequestError
from acp.schema import ClientCapabilities

from ide.protocol import META_KEY
from ide.protocol import index as ix
from tests.support.acp_client import Backend, acp_backend


async def poll(check: Callable[[], Awaitable[bool]], what: str, timeout: float = 15.0) -> None:
    """Ask until ``check`` holds; bounded, so a broken watcher fails the test instead of hanging it."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def status(backend: Backend, cwd: Path) -> ix.IndexStatus:
    return ix.IndexStatus.model_validate(await backend.conn.ext_method(ix.INDEX_STATUS, {"cwd": str(cwd)}))


async def search(backend: Backend, cwd: Path, query: str) -> list[ix.SymbolHit]:
    params = {"cwd": str(cwd), "query": query, "limit": 10}
    return ix.SymbolSearchResult.model_validate(await backend.conn.ext_method(ix.INDEX_SEARCH, params)).hits


async def outline(backend: Backend, cwd: Path, path: str) -> ix.OutlineResult:
    params = {"cwd": str(cwd), "path": path}
    return ix.OutlineResult.model_validate(await backend.conn.ext_method(ix.INDEX_OUTLINE, params))


async def ready(backend: Backend, cwd: Path) -> ix.IndexStatus:
    async def is_ready() -> bool:
        return (await status(backend, cwd)).state == "ready"

    await poll(is_ready, "the first pass")
    return await status(backend, cwd)


async def test_status_outline_and_search(git_workspace: Path) -> None:
    async with acp_backend() as backend:
        assert set(ix.INDEX_METHODS) <= set(
            backend.init.agent_capabilities.field_meta[META_KEY]["extensions"]
        )
        done = await ready(backend, git_workspace)
        assert (done.files, done.symbols, done.failed) == (3, 1, 0)  # __init__.py, greet.py, README.md

        greet = await outline(backend, git_workspace, "pkg/greet.py")
        assert greet.language == "python" and greet.message is None
        assert [(s.name, s.kind, s.line, s.depth) for s in greet.symbols] == [("greet", "function", 1, 0)]
        assert greet.symbols[0].signature == "def greet(name)"

        readme = await outline(backend, git_workspace, str(git_workspace / "README.md"))
        assert (readme.language, readme.symbols, readme.message) == ("markdown", [], "file-level entry")
        ignored = await outline(backend, git_workspace, "debug.log")
        assert ignored.message == "debug.log is excluded (.gitignore or workspace.exclude)"
        with pytest.raises(RequestError) as refused:
            await outline(backend, git_workspace, "../elsewhere.py")
        assert "outside the workspace" in refused.value.data["message"]

        hits = await search(backend, git_workspace, "gre")
        assert [(h.name, h.path, h.line) for h in hits] == [("greet", str(git_workspace / "pkg/greet.py"), 1)]


INDEX_CLIENT = ClientCapabilities(field_meta={META_KEY: {"index": True}})
"""A client that asked for ``_arbor/index/changed`` (Arbor's window does)."""


async def test_edits_renames_and_deletions_reach_the_index_while_it_watches(git_workspace: Path) -> None:
    async with acp_backend(capabilities=INDEX_CLIENT) as backend:
        await ready(backend, git_workspace)
        greet = git_workspace / "pkg" / "greet.py"
        greet.write_text(greet.read_text() + "\n\ndef wave(name):\n    return name\n")

        async def has(name: str, path: str) -> bool:
            return any(
                h.name == name and h.path.endswith(path) for h in await search(backend, git_workspace, name)
            )

        def changes() -> list[ix.IndexChanged]:
            return [
                ix.IndexChanged.model_validate(p)
                for m, p in backend.client.notifications
                if m == ix.INDEX_CHANGED
            ]

        async def told() -> bool:
            return any(str(greet) in change.paths for change in changes())

        await poll(lambda: has("wave", "pkg/greet.py"), "the edit")
        # The window refreshes its outline on the notification. It is sent once the edit is written, so a
        # search answered in between can reach the client first: wait for it too.
        await poll(told, "the notification of the edit")
        assert changes()[-1].status.state == "ready" and changes()[-1].status.symbols == 2
        greet.rename(git_workspace / "pkg" / "hello.py")
        await poll(lambda: has("wave", "pkg/hello.py"), "the rename")
        assert not await has("wave", "pkg/greet.py")

        (git_workspace / "pkg" / "hello.py").unlink()

        async def gone() -> bool:
            return await search(backend, git_workspace, "wave") == []

        await poll(gone, "the deletion")
        assert (await outline(backend, git_workspace, "pkg/hello.py")).message.endswith("not a file on disk")


async def test_a_client_that_did_not_ask_gets_no_index_notifications(git_workspace: Path) -> None:
    """A plain ACP client (Zed, the SDK's example client) is sent nothing it would have to ignore."""
    async with acp_backend() as plain, acp_backend(capabilities=INDEX_CLIENT) as window:
        for backend in (plain, window):
            await ready(backend, git_workspace)
        greet = git_workspace / "pkg" / "greet.py"
        greet.write_text(greet.read_text() + "\n\ndef wave(name):\n    return name\n")

        async def both_see_it() -> bool:
            found = [await search(backend, git_workspace, "wave") for backend in (plain, window)]
            told = any(m == ix.INDEX_CHANGED for m, _ in window.client.notifications)
            return all(found) and told

        await poll(both_see_it, "the edit")
        assert plain.client.notifications == []
