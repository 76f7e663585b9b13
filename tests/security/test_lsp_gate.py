"""Language servers and the index read past the confined file system; what they answer must not
(issue 27, item 3). A hostile repository holds a symlink to a file outside the workspace and a secret
module, both imported by an ordinary file; jedi-language-server answers for them. The agent's lsp_*
tools, ``arbor mcp``'s definition and references, and a session's stored transcript carry neither file's
text; no server is given either file; the index holds neither."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.schema import ToolCallProgress

from ide.changes import ChangeSet
from ide.codeintel.index import CodeIndex
from ide.codeintel.lsp import At, LspBridge, LspError, LspPool
from ide.codeintel.lsp.positions import uri_of
from ide.protocol import lsp as lp
from ide.settings import LspSettings, Settings, WorkspaceSettings
from ide.tools import ToolServices
from ide.tools import toolbox as make_toolbox
from tests.support.acp_client import acp_backend
from tests.support.git import git

OUTSIDE_VALUE = "outside-hunter2-token"
SECRET_VALUE = "sk-live-SECRETVALUE"
OUTSIDE_LIB = f'''OUTSIDE_TOKEN = "{OUTSIDE_VALUE}"


def outside_helper(token: str = "{OUTSIDE_VALUE}") -> str:
    """Outside docstring: {OUTSIDE_VALUE}"""
    return token
'''
SECRETS = f'''API_KEY = "{SECRET_VALUE}"


def secret_helper(key: str = "{SECRET_VALUE}") -> str:
    """Secret docstring {SECRET_VALUE}"""
    return key
'''
UTIL = '''def slugify(text: str, sep: str = "-") -> str:
    """Lower-case words joined by ``sep``."""
    return sep.join(text.lower().split())
'''
APP = """from linked import outside_helper, OUTSIDE_TOKEN
from settings.secrets import secret_helper, API_KEY
from pkg.util import slugify

print(outside_helper(OUTSIDE_TOKEN))
print(secret_helper(API_KEY))
print(slugify("A b"))
"""
# app.py positions (line, column): the names used, and a place inside each call's parentheses
OUTSIDE_CALL, OUTSIDE_NAME = (5, 7), (5, 22)
SECRET_CALL, SECRET_NAME = (6, 7), (6, 21)
PLAIN_CALL, PLAIN_ARG = (7, 7), (7, 15)


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A git repository whose linked.py leads outside and whose settings/secrets.py is a secret."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "private_lib.py").write_text(OUTSIDE_LIB)
    root = tmp_path / "ws"
    (root / "settings").mkdir(parents=True)
    (root / "pkg").mkdir()
    (root / "build").mkdir()
    (root / "settings" / "__init__.py").write_text("")
    (root / "settings" / "secrets.py").write_text(SECRETS)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "util.py").write_text(UTIL)
    (root / "build" / "gen.py").write_text("from pkg.util import slugify\n\nslugify('x')\n")
    (root / ".gitignore").write_text("build/\n")
    (root / "app.py").write_text(APP)
    os.symlink(outside / "private_lib.py", root / "linked.py")
    os.symlink(root / "settings" / "secrets.py", root / "innocent.py")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    return root.resolve()


def leaks(text: str) -> list[str]:
    return [value for value in (OUTSIDE_VALUE, SECRET_VALUE) if value in text]


def at(place: tuple[int, int], path: str = "app.py") -> dict[str, Any]:
    return {"path": path, "line": place[0], "column": place[1]}


async def test_lsp_tools_show_such_definitions_as_their_path_only(hostile: Path) -> None:
    pool = LspPool(LspSettings())
    tools = make_toolbox(
        hostile, Settings(), ChangeSet(hostile), ToolServices(lsp=LspBridge(pool, asyncio.get_running_loop()))
    )

    async def call(name: str, args: dict[str, Any]) -> str:
        outcome = await asyncio.to_thread(tools.call, name, args)
        assert not outcome.failed, outcome.output
        assert not leaks(outcome.output), (name, args, outcome.output)
        return outcome.output

    try:
        assert (
            await call("lsp_find_definition", at(OUTSIDE_CALL))
            == "linked.py:4:5: (outside the workspace, not shown)"
        )
        assert (
            await call("lsp_find_definition", at(SECRET_NAME))
            == "settings/secrets.py:1:1: (a secret file, not shown)"
        )
        refs = (await call("lsp_get_references", at(SECRET_CALL))).splitlines()
        assert refs == [
            "app.py:2:30: from settings.secrets import secret_helper, API_KEY",
            "app.py:6:7: print(secret_helper(API_KEY))",
            "settings/secrets.py:4:5: (a secret file, not shown)",
        ]
        refs = await call("lsp_get_references", at(OUTSIDE_NAME))
        assert "linked.py:1:1: (outside the workspace, not shown)" in refs
        for place, where in (
            (OUTSIDE_NAME, "linked.py:1:1, outside the workspace"),
            (SECRET_CALL, "settings/secrets.py:4:5, a secret file"),
        ):
            assert (
                await call("lsp_get_type", at(place))
                == f"app.py:{place[0]}:{place[1]}\n(not shown: defined at {where})"
            )
        assert "secret_helper" not in await call("lsp_get_signature", at(SECRET_NAME))
        signature = await call("lsp_get_signature", at(OUTSIDE_NAME))
        assert signature == "app.py:5:22\n(not shown: defined at linked.py:4:5, outside the workspace)"
        # Workspace code is answered as before: line text, type, signature.
        assert (
            await call("lsp_find_definition", at(PLAIN_CALL))
            == 'pkg/util.py:1:5: def slugify(text: str, sep: str = "-") -> str:'
        )
        assert "-> str" in await call("lsp_get_type", at(PLAIN_CALL))
        assert "def slugify(text: str" in await call("lsp_get_signature", at(PLAIN_ARG))
        # The refused files themselves are refused, as read_file refuses them, and never opened.
        for path in ("linked.py", "settings/secrets.py", "innocent.py", "build/gen.py"):
            outcome = await asyncio.to_thread(tools.call, "lsp_get_type", at((1, 1), path))
            assert outcome.failed and not leaks(outcome.output), outcome.output
        (server,) = pool.servers.values()
        assert set(server.documents) == {uri_of(hostile / "app.py")}, set(server.documents)
    finally:
        await pool.close()


async def test_a_gated_pool_gives_a_server_no_refused_file(hostile: Path, tmp_path: Path) -> None:
    from ide.codeintel.lsp import LspGate
    from ide.fs import ConfinedFS

    gate = LspGate(ConfinedFS(hostile, WorkspaceSettings()))
    assert gate.refusal(hostile / "app.py") is None
    assert gate.refusal(hostile / "linked.py") == "outside the workspace"
    assert gate.refusal(tmp_path / "outside" / "private_lib.py") == "outside the workspace"
    assert gate.refusal(hostile / "settings" / "secrets.py") == "a secret file"
    assert gate.refusal(hostile / "innocent.py") == "a secret file"
    assert gate.refusal(hostile / "build" / "gen.py") == "excluded from the workspace"
    assert "git's metadata" in (gate.refusal(hostile / ".git" / "config") or "")
    pool = LspPool(LspSettings())
    # Proposed text of refused files (a change set from before the secret list grew) stays unsent.
    documents = {hostile / "settings" / "secrets.py": SECRETS, hostile / "linked.py": OUTSIDE_LIB}
    try:
        found = await pool.definition(At(hostile, hostile / "app.py", *PLAIN_CALL, documents, gate))
        assert [(loc.path, loc.line, loc.refused) for loc in found] == [
            (hostile / "pkg" / "util.py", 1, None)
        ]
        for refused in ("linked.py", "settings/secrets.py", "build/gen.py"):
            with pytest.raises(LspError, match="Arbor gives language servers only files its agent may read"):
                await pool.hover(At(hostile, hostile / refused, 1, 1, None, gate))
        (server,) = pool.servers.values()
        assert set(server.documents) == {uri_of(hostile / "app.py")}
    finally:
        await pool.close()


async def test_a_session_neither_sends_nor_stores_them(
    hostile: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    """Over the wire: a scripted model calls every lsp_* tool on them; the tool results it gets, and
    everything in the data dir afterwards (transcript, tree, memory), hold neither file's text."""
    calls = [
        {"name": name, "args": at(place)}
        for name in ("lsp_find_definition", "lsp_get_references", "lsp_get_type", "lsp_get_signature")
        for place in (OUTSIDE_CALL, OUTSIDE_NAME, SECRET_CALL, SECRET_NAME)
    ]
    script = write_script([{"tool_calls": calls}, {"content": "Nothing to report."}])
    async with acp_backend({"ARBOR_MODEL": f"scripted:{script}"}) as backend:
        session = await backend.conn.new_session(cwd=str(hostile), mcp_servers=[])
        response = await backend.conn.prompt(
            session_id=session.session_id, prompt=[text_block("Look around")]
        )
    assert response.stop_reason == "end_turn"
    results = [
        u.raw_output["output"]
        for _, u in backend.client.updates
        if isinstance(u, ToolCallProgress) and u.raw_output and "output" in u.raw_output
    ]
    assert len(results) == len(calls)
    assert not leaks(repr(backend.client.updates))
    data = Path(os.environ["ARBOR_DATA_DIR"])
    stored = [path for path in data.rglob("*") if path.is_file()]
    assert stored, "the session was stored"
    for path in stored:
        content = path.read_bytes()
        assert OUTSIDE_VALUE.encode() not in content and SECRET_VALUE.encode() not in content, path
    assert any("(a secret file, not shown)" in r for r in results)
    assert any("(outside the workspace, not shown)" in r for r in results)


async def test_arbor_mcp_definition_and_references(hostile: Path) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ide", "mcp", "--workspace", str(hostile)],
        env=dict(os.environ),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()

        async def call(name: str, **args: Any) -> str:
            result = await session.call_tool(name, args)
            text = "".join(getattr(c, "text", "") for c in result.content)
            assert not result.isError, text
            assert not leaks(text), (name, args, text)
            return text

        assert (
            await call("definition", **at(OUTSIDE_CALL))
            == "linked.py:4:5: (outside the workspace, not shown)"
        )
        assert (
            await call("definition", **at(SECRET_NAME))
            == "settings/secrets.py:1:1: (a secret file, not shown)"
        )
        assert "settings/secrets.py:4:5: (a secret file, not shown)" in await call(
            "references", **at(SECRET_CALL)
        )
        assert "linked.py:1:1: (outside the workspace, not shown)" in await call(
            "references", **at(OUTSIDE_NAME)
        )
        assert "pkg/util.py:1:5: def slugify" in await call("definition", **at(PLAIN_CALL))


async def test_the_window_sees_what_its_user_may_but_gives_no_server_a_refused_file(hostile: Path) -> None:
    """The window is the user's: F12 lists every location with its line (the viewer shows any file the
    user opens), while a secret, an excluded or an outside file is never given to the server."""
    async with acp_backend() as backend:
        ask = {
            "cwd": str(hostile),
            "path": str(hostile / "app.py"),
            "line": SECRET_CALL[0],
            "column": SECRET_CALL[1],
        }
        found = lp.LocationsResult.model_validate(await backend.conn.ext_method(lp.LSP_DEFINITION, ask))
        assert [(Path(loc.path).name, loc.line, loc.text) for loc in found.locations] == [
            ("secrets.py", 4, f'def secret_helper(key: str = "{SECRET_VALUE}") -> str:')
        ]
        for refused, why in (
            ("settings/secrets.py", "a secret file"),
            ("linked.py", "outside the workspace"),
            ("build/gen.py", "excluded from the workspace"),
        ):
            params = {**ask, "path": str(hostile / refused), "line": 1, "column": 1}
            hover = lp.HoverResult.model_validate(await backend.conn.ext_method(lp.LSP_HOVER, params))
            assert hover.text == "" and hover.message is not None and why in hover.message, hover


def test_the_index_never_holds_an_outside_link_or_a_secret(hostile: Path, tmp_path: Path) -> None:
    index = CodeIndex(hostile, tmp_path / "index.sqlite", WorkspaceSettings())
    try:
        index.refresh()
        refused = {"linked.py", "innocent.py", "settings/secrets.py"}
        assert refused.isdisjoint(index.paths((".py",))) and "app.py" in index.paths((".py",))
        # The watcher reports new files one by one: a new link out, a link to a secret, a new secret.
        os.symlink(tmp_path / "outside" / "private_lib.py", hostile / "pkg" / "vendored.py")
        os.symlink(hostile / "settings" / "secrets.py", hostile / "pkg" / "config.py")
        (hostile / "pkg" / "secrets.py").write_text(SECRETS)
        index.update_paths(["pkg/vendored.py", "pkg/config.py", "pkg/secrets.py", "linked.py"])
        index.update_paths([hostile / "pkg"])
        indexed = set(index.paths((".py",)))
        assert indexed.isdisjoint({*refused, "pkg/vendored.py", "pkg/config.py", "pkg/secrets.py"}), indexed
        names = {symbol.name for symbol in index.definitions()}
        assert names.isdisjoint({"outside_helper", "OUTSIDE_TOKEN", "secret_helper", "API_KEY"}), names
        assert "slugify" in names
    finally:
        index.close()
