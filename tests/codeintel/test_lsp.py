"""Language servers for real: jedi-language-server on a fixture package, crashes, shutdown, timeouts."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from ide.codeintel.lsp.pool import At, Location, LspError, LspPool
from ide.codeintel.lsp.registry import LspUnavailable
from ide.settings import LspServerSettings, LspSettings
from tests.support.lsp_shop import APP
from tests.support.procs import group_alive


async def group_gone(pgid: int) -> bool:
    """Whether the process group ``pgid`` is empty within 5 s (a killed orphan is a zombie until init
    reaps it, which takes a moment)."""
    for _ in range(100):
        if not group_alive(pgid):
            return True
        await asyncio.sleep(0.05)
    return False


async def test_definitions_references_hover_and_signature_across_packages(shop: Path) -> None:
    pool = LspPool(LspSettings())
    try:
        assert await pool.definition(At(shop, shop / "app.py", 3, 9)) == [
            Location(shop / "shop" / "models.py", 4, 7)
        ]
        found = await pool.definition(At(shop, shop / "shop" / "models.py", 6, 22))
        assert found == [Location(shop / "shop" / "text" / "util.py", 1, 5)]
        refs = await pool.references(At(shop, shop / "shop" / "text" / "util.py", 1, 6))
        assert {(r.path.name, r.line) for r in refs} == {("util.py", 1), ("models.py", 1), ("models.py", 6)}
        hover = await pool.hover(At(shop, shop / "shop" / "models.py", 6, 22))
        assert 'def slugify(text: str, sep: str="-") -> str' in hover  # jedi's own rendering
        assert "Lower-case words" in hover
        signature = await pool.signature(At(shop, shop / "shop" / "models.py", 6, 29))
        assert signature.startswith('def slugify(text: str, sep: str="-") -> str')
        symbols = await pool.document_symbols(shop, shop / "shop" / "models.py")
        assert ("Product", "class", 4) in symbols and ("label", "method", 8) in symbols
    finally:
        await pool.close()


async def test_without_the_script_arbor_runs_jedi_itself(shop: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The packaged app has no jedi-language-server script: ``arbor jedi-language-server`` answers."""
    from ide.codeintel.lsp import registry

    monkeypatch.setattr(registry, "_find", lambda program: None)
    spec = registry.server_for("python", LspSettings())
    assert spec.command == (sys.executable, "-P", "-m", "ide", "jedi-language-server")
    assert spec.initialization_options == registry.JEDI_OPTIONS
    with pytest.raises(LspUnavailable, match="clangd is not installed"):
        registry.server_for("c", LspSettings())
    pool = LspPool(LspSettings())
    try:
        assert await pool.definition(At(shop, shop / "app.py", 3, 9)) == [
            Location(shop / "shop" / "models.py", 4, 7)
        ]
    finally:
        await pool.close()


async def test_edits_that_exist_only_in_the_change_set_are_seen(shop: Path) -> None:
    added = "\n\ndef titlecase(text: str) -> str:\n    return text.title()\n\n\ntitlecase('x')\n"
    proposed = {shop / "app.py": APP + added}
    pool = LspPool(LspSettings())
    try:
        await pool.definition(At(shop, shop / "app.py", 3, 9))  # opened with the text on disk first
        found = await pool.definition(At(shop, shop / "app.py", 11, 2, proposed))
        assert found == [Location(shop / "app.py", 7, 5)]
        assert "titlecase" not in (shop / "app.py").read_text()  # nothing written
        broken = {shop / "app.py": "item = (\n"}
        (diagnostic,) = await pool.diagnostics(shop, shop / "app.py", broken)
        assert diagnostic.severity == "error" and "never closed" in diagnostic.message
    finally:
        await pool.close()


async def test_a_killed_server_is_restarted_and_shutdown_leaves_no_process(shop: Path) -> None:
    pool = LspPool(LspSettings())
    try:
        await pool.definition(At(shop, shop / "app.py", 3, 9))
        (server,) = pool.servers.values()
        first = server.pid
        os.kill(first, signal.SIGKILL)
        await server.process.wait()
        assert await pool.definition(At(shop, shop / "app.py", 3, 9)) == [
            Location(shop / "shop" / "models.py", 4, 7)
        ]
        (restarted,) = pool.servers.values()
        assert restarted.pid != first
        assert await group_gone(first)  # jedi's own helper process went with it
    finally:
        await pool.close()
    assert await group_gone(restarted.pid)


LINGERING_SERVER = "import subprocess, sys, time; subprocess.run([sys.argv[1]]); time.sleep(600)"
"""jedi-language-server in a wrapper that stays once its client is gone, as servers that watch neither their
input nor their client's process id do."""

BACKEND_THAT_DIES = """
import asyncio, sys
from pathlib import Path
from ide.codeintel.lsp.pool import At, LspPool
from ide.settings import LspServerSettings, LspSettings

async def main():
    shop, command = Path(sys.argv[1]), sys.argv[2:]
    pool = LspPool(LspSettings(servers={"jedi": LspServerSettings(command=command)}))
    await pool.definition(At(shop, shop / "app.py", 3, 9))
    (server,) = pool.servers.values()
    print(server.pid, flush=True)
    await asyncio.sleep(60)

asyncio.run(main())
"""


async def test_a_server_dies_with_the_process_that_started_it(shop: Path) -> None:
    """SIGKILL (or a SIGTERM while the backend is still closing) leaves the backend no time to shut its
    servers down: the kernel ends them with it, even one that would stay on by itself."""
    jedi = str(Path(sys.executable).parent / "jedi-language-server")
    command = [sys.executable, "-c", LINGERING_SERVER, jedi]
    backend = await asyncio.create_subprocess_exec(
        sys.executable, "-c", BACKEND_THAT_DIES, str(shop), *command, stdout=asyncio.subprocess.PIPE
    )
    assert backend.stdout is not None
    try:
        server = int(await asyncio.wait_for(backend.stdout.readline(), 60))
    finally:
        backend.kill()
        await backend.wait()
    assert await group_gone(server)


async def test_a_request_that_takes_too_long_is_cancelled(shop: Path, tmp_path: Path) -> None:
    log = tmp_path / "slow.log"
    script = Path(__file__).parents[1] / "support" / "slow_lsp.py"
    settings = LspSettings(
        request_timeout_s=0.5,
        servers={"jedi": LspServerSettings(command=[sys.executable, str(script), str(log)])},
    )
    pool = LspPool(settings)
    try:
        with pytest.raises(
            LspError, match=r"did not answer textDocument/definition within 0.5 s \(cancelled\)"
        ):
            await pool.definition(At(shop, shop / "app.py", 3, 9))
        for _ in range(100):  # bounded: 5 s for the server to see the cancel
            if log.exists():
                break
            await asyncio.sleep(0.05)
        assert log.read_text() == "cancelled"
    finally:
        await pool.close()


async def test_a_missing_server_says_how_to_install_it(shop: Path) -> None:
    pool = LspPool(LspSettings())
    (shop / "main.go").write_text("package main\n")
    settings_missing = LspSettings(servers={"gopls": LspServerSettings(command=["no-such-gopls"])})
    with pytest.raises(LspUnavailable, match="no-such-gopls"):
        await LspPool(settings_missing).definition(At(shop, shop / "main.go", 1, 1))
    with pytest.raises(LspUnavailable, match="no language server is known for markdown"):
        await pool.definition(At(shop, shop / "README.md", 1, 1))


def test_cli_prints_editor_positions(shop: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ide.cli import main

    assert main(["lsp", str(shop), "definition", "app.py:3:9", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"path": str(shop / "shop" / "models.py"), "line": 4, "column": 7}
    ]
    assert main(["lsp", str(shop), "definition", f"{shop / 'shop' / 'models.py'}:6:22"]) == 0
    assert capsys.readouterr().out == f"{shop / 'shop' / 'text' / 'util.py'}:1:5\n"
    assert main(["lsp", str(shop), "hover", "app.py:3"]) == 2
    assert "FILE:LINE:COL" in capsys.readouterr().err


def test_the_pool_loads_the_lsp_client_only_when_a_server_starts(shop: Path) -> None:
    """A session opens its language-server pool at once but most never start a server: pygls and
    lsprotocol's types (0.45 s of import) wait for the first query, which then works as before."""
    import subprocess

    code = f"""
import asyncio, sys
from pathlib import Path
from ide.codeintel.lsp import LspBridge, LspPool
from ide.codeintel.lsp.pool import At
from ide.settings import LspSettings

def loaded():
    return sorted({{name.split(".")[0] for name in sys.modules}} & {{"lsprotocol", "pygls"}})

async def main():
    pool = LspPool(LspSettings())
    LspBridge(pool, asyncio.get_running_loop())
    print(loaded())
    found = await pool.definition(At(Path({str(shop)!r}), Path({str(shop / "app.py")!r}), 3, 9))
    print(loaded(), len(found) > 0)
    await pool.close()

asyncio.run(main())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["[]", "['lsprotocol', 'pygls'] True"], out.stdout
