"""F12, Shift+F12 and hover over ACP: real jedi-language-server behind the backend."""

from __future__ import annotations

from pathlib import Path

from ide.protocol import META_KEY
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
