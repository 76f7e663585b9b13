"""F12, Shift+F12 and hover over ACP: real jedi-language-server behind the backend."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ide.protocol import META_KEY
from ide.protocol import index as ix
from ide.protocol import lsp as lp
from tests.support.acp_client import acp_backend
from tests.support.lsp_shop import shop  # noqa: F401  (the fixture package)


async def test_definition_references_and_hover(shop: Path) -> None:  # noqa: F811
    async with acp_backend() as backend:
        assert set(lp.LSP_METHODS) <= set(backend.init.agent_capabilities.field_meta[META_KEY]["extensions"])
        at = {"cwd": str(shop), "path": str(shop / "app.py"), "line": 3, "column": 9}
        found = lp.LocationsResult.model_validate(await backend.conn.ext_method(lp.LSP_DEFINITION, at))
        assert [(loc.path, loc.line, loc.column, loc.text) for loc in found.locations] == [
            (str(shop / "shop" / "models.py"), 4, 7, "class Product:")
        ]
        refs = lp.LocationsResult.model_validate(await backend.conn.ext_method(lp.LSP_REFERENCES, at))
        assert {(Path(loc.path).name, loc.line) for loc in refs.locations} == {
            ("app.py", 1),
            ("app.py", 3),
            ("models.py", 4),
        }
        hover = lp.HoverResult.model_validate(await backend.conn.ext_method(lp.LSP_HOVER, at))
        assert "class Product" in hover.text

        (shop / "notes.md").write_text("# notes\n")
        nothing = {**at, "path": str(shop / "notes.md"), "line": 1, "column": 1}
        answer = lp.LocationsResult.model_validate(await backend.conn.ext_method(lp.LSP_DEFINITION, nothing))
        assert answer.locations == [] and answer.message == "no language server is known for markdown"


async def index_ready(backend: Any, cwd: Path) -> None:
    """Bounded: the workspace's first index pass done within 30 s."""
    for _ in range(600):
        status = ix.IndexStatus.model_validate(
            await backend.conn.ext_method(ix.INDEX_STATUS, {"cwd": str(cwd)})
        )
        if status.state == "ready":
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the index of {cwd} was not ready in 30 s: {status}")


async def test_a_server_that_never_answers_still_gets_the_index_answer_first(
    shop: Path,  # noqa: F811
    user_config: Callable[[str], Path],
) -> None:
    script = Path(__file__).parents[1] / "support" / "slow_lsp.py"
    user_config(
        f"[lsp]\nrequest_timeout_s = 3\n"
        f"[lsp.servers.jedi]\ncommand = {json.dumps([sys.executable, str(script), str(shop / 'slow.log')])}\n"
    )
    async with acp_backend() as backend:
        await index_ready(backend, shop)
        at = {"cwd": str(shop), "path": str(shop / "app.py"), "line": 3, "column": 9}
        served = asyncio.ensure_future(backend.conn.ext_method(lp.LSP_REFERENCES, at))
        by_name = lp.LocationsResult.model_validate(
            await backend.conn.ext_method(lp.LSP_REFERENCES, {**at, "source": "index"})
        )
        assert not served.done()  # the server is still working on it
        assert (by_name.source, by_name.name, by_name.message) == ("index", "Product", None)
        assert [(Path(loc.path).name, loc.line, loc.column, loc.text) for loc in by_name.locations] == [
            ("app.py", 3, 8, 'item = Product("Blue Mug")'),
            ("models.py", 4, 7, "class Product:"),
        ]
        definition = lp.LocationsResult.model_validate(
            await backend.conn.ext_method(lp.LSP_DEFINITION, {**at, "source": "index"})
        )
        assert [(Path(loc.path).name, loc.line) for loc in definition.locations] == [("models.py", 4)]
        answer = lp.LocationsResult.model_validate(await served)
        assert answer.source == "server" and answer.locations == []
        assert (
            answer.message is not None
            and "did not answer textDocument/references within 3 s" in answer.message
        )

        nothing = lp.LocationsResult.model_validate(
            await backend.conn.ext_method(lp.LSP_REFERENCES, {**at, "column": 6, "source": "index"})
        )
        assert nothing.message == "no name at 3:6" and nothing.locations == []
