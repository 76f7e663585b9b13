"""The agent's lsp_* tools on jedi-language-server, called from a worker thread as the agent does."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ide.changes import ChangeSet
from ide.codeintel.index import CodeIndex
from ide.codeintel.lsp import LspBridge, LspPool
from ide.settings import LspServerSettings, LspSettings, Settings
from ide.tools import ToolServices
from ide.tools import toolbox as make_toolbox
from tests.support.lsp_shop import shop  # noqa: F401  (the fixture package)


async def test_definition_references_type_signature_and_diagnostics(shop: Path, tmp_path: Path) -> None:  # noqa: F811
    index = CodeIndex(shop, tmp_path / "index.sqlite")
    index.refresh()
    pool = LspPool(LspSettings())
    changes = ChangeSet(shop)
    changes.edit("app.py", "print(item.label(), item.slug)", "print(item.label(), item.slug, undefined_name(")
    tools = make_toolbox(
        shop, Settings(), changes, ToolServices(index=index, lsp=LspBridge(pool, asyncio.get_running_loop()))
    )

    async def call(name: str, args: dict[str, object]) -> str:
        outcome = await asyncio.to_thread(tools.call, name, args)
        assert not outcome.failed, outcome.output
        return outcome.output

    try:
        assert await call("lsp_find_definition", {"path": "app.py", "line": 3, "column": 9}) == (
            "shop/models.py:4:7: class Product:"
        )
        assert (await call("lsp_find_definition", {"symbol": "slugify"})).startswith("shop/text/util.py:1:5:")
        refs = (await call("lsp_get_references", {"symbol": "Product.label"})).splitlines()
        assert refs == [  # each line as the change set leaves it, as the server saw it
            "app.py:4:12: print(item.label(), item.slug, undefined_name(",
            "shop/models.py:8:9: def label(self) -> str:",
        ]
        assert "-> str" in await call(
            "lsp_get_type", {"path": "shop/models.py", "line": 6, "symbol": "slugify"}
        )
        signature = await call("lsp_get_signature", {"path": "shop/models.py", "line": 6, "column": 29})
        assert "def slugify(text: str" in signature
        problems = await call("lsp_diagnostics", {"path": "app.py"})
        assert problems.startswith("app.py:4:") and "error" in problems  # the change set's broken call
        assert "undefined_name" not in (shop / "app.py").read_text()  # nothing written
    finally:
        await pool.close()
        index.close()


async def test_a_missing_server_is_an_observation_with_the_fix(shop: Path) -> None:  # noqa: F811
    settings = LspSettings(servers={"jedi": LspServerSettings(command=["no-such-jedi"])})
    pool = LspPool(settings)
    tools = make_toolbox(shop, Settings(), read_only=True)
    assert "lsp_find_definition" not in tools.specs
    lsp = LspBridge(pool, asyncio.get_running_loop())
    tools = make_toolbox(shop, Settings(), ChangeSet(shop), ToolServices(lsp=lsp))
    outcome = await asyncio.to_thread(tools.call, "lsp_get_type", {"path": "app.py", "line": 3})
    assert (
        outcome.failed and "'no-such-jedi', the command of lsp.servers.jedi, is not found" in outcome.output
    )
    outcome = await asyncio.to_thread(tools.call, "lsp_get_type", {"path": "app.py"})
    assert outcome.failed and "give path and line" in outcome.output
