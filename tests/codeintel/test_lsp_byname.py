"""References by name from the code index (tree-sitter), given while jedi-language-server works out its
own: what the index answers, that it agrees with the real server where the names are unambiguous, and
what it leaves out."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ide.codeintel.index import CodeIndex
from ide.codeintel.lsp import At, LspPool
from ide.codeintel.lsp.byname import definitions_by_name, name_at, occurrences, references_by_name
from ide.settings import LspSettings, WorkspaceSettings
from tests.support.lsp_shop import shop  # noqa: F401  (the fixture package)


def built(root: Path, tmp_path: Path) -> CodeIndex:
    index = CodeIndex(root, tmp_path / "index.sqlite", WorkspaceSettings(), workers=1)
    index.refresh()
    return index


def places(root: Path, found: list) -> list[tuple[str, int, int]]:
    return [(loc.path.relative_to(root).as_posix(), loc.line, loc.column) for loc in found]


def test_name_at_the_cursor() -> None:
    text = "item = Product(name)\n"
    assert name_at(text, 1, 8) == "Product"
    assert name_at(text, 1, 14) == "Product"  # the cursor right after the name
    assert name_at(text, 1, 16) == "name"
    assert name_at(text, 1, 6) is None  # on "="
    assert name_at(text, 2, 1) is None  # past the end
    assert occurrences("slug", "self.slug = slugify(slug)") == [6, 21]


async def test_the_index_answer_is_the_recorded_uses_and_definitions_and_the_server_agrees(
    shop: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    index = built(shop, tmp_path)
    try:
        name, found = references_by_name(index, At(shop, shop / "app.py", 3, 9))
        assert name == "Product"
        assert places(shop, found) == [("app.py", 3, 8), ("shop/models.py", 4, 7)]
        # Asked from any of its places, the same name gives the same answer.
        assert references_by_name(index, At(shop, shop / "shop" / "models.py", 4, 8)) == (name, found)
        # Every place is the name, as a whole word at its column.
        for loc in found:
            line = loc.path.read_text().splitlines()[loc.line - 1]
            assert line[loc.column - 1 :].startswith("Product")
        # Exactly the index's rows for the name: its recorded uses and its definitions.
        rows = {(rel, line) for rel, line in index.references("Product")}
        rows |= {(symbol.path, symbol.line) for symbol in index.definitions("Product")}
        assert {(rel, line) for rel, line, _ in places(shop, found)} == rows

        slug_name, slug = references_by_name(index, At(shop, shop / "shop" / "models.py", 6, 22))
        assert slug_name == "slugify"
        assert places(shop, slug) == [("shop/models.py", 6, 21), ("shop/text/util.py", 1, 5)]
        assert places(shop, definitions_by_name(index, At(shop, shop / "app.py", 3, 9))[1]) == [
            ("shop/models.py", 4, 7)
        ]

        # The language server knows more (the import line), and holds every place the index named.
        pool = LspPool(LspSettings())
        try:
            served = await pool.references(At(shop, shop / "app.py", 3, 9))
            served_slug = await pool.references(At(shop, shop / "shop" / "models.py", 6, 22))
        finally:
            await pool.close()
        assert set(found) < set(served) and ("app.py", 1, 25) in places(shop, served)
        assert set(slug) < set(served_slug)
    finally:
        index.close()


def test_a_line_that_changed_since_indexing_is_left_out_and_the_change_set_is_read(
    shop: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    index = built(shop, tmp_path)
    try:
        app = shop / "app.py"
        app.write_text(app.read_text().replace('item = Product("Blue Mug")', "item = None"))
        _, found = references_by_name(index, At(shop, shop / "shop" / "models.py", 4, 8))
        assert places(shop, found) == [("shop/models.py", 4, 7)]  # app.py:3 no longer holds it
        proposed = {app: 'from shop.models import Product\n\nitem = Product("Red Mug")\n'}
        _, found = references_by_name(index, At(shop, shop / "shop" / "models.py", 4, 8, proposed))
        assert places(shop, found) == [("app.py", 3, 8), ("shop/models.py", 4, 7)]
    finally:
        index.close()


def test_cli_prints_the_index_answer_first_then_the_servers(
    shop: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    from ide.cli import main

    assert main(["index", str(shop)]) == 0
    capsys.readouterr()
    assert main(["lsp", str(shop), "references", "app.py:3:9", "--json"]) == 0
    index_line, server_line = capsys.readouterr().out.splitlines()
    by_name, served = json.loads(index_line), json.loads(server_line)
    assert (by_name["source"], by_name["name"]) == ("index", "Product")
    assert [(d["path"], d["line"]) for d in by_name["locations"]] == [
        (str(shop / "app.py"), 3),
        (str(shop / "shop" / "models.py"), 4),
    ]
    assert served["source"] == "server" and len(served["locations"]) == 3
    assert main(["lsp", str(shop), "references", "app.py:3:9"]) == 0
    captured = capsys.readouterr()
    assert "by name (index), 'Product': 2 places" in captured.err
    assert "language server: 3 places" in captured.err
    assert captured.out.splitlines()[:2] == [f"{shop / 'app.py'}:3:8", f"{shop / 'shop' / 'models.py'}:4:7"]
    assert main(["lsp", str(shop), "references", "app.py:3:9", "--json", "--source", "server"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 3
    assert main(["lsp", str(shop), "definition", "app.py:3:9", "--source", "index"]) == 2


def test_cli_gives_the_index_answer_while_a_server_never_answers(
    shop: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    user_config,
) -> None:
    from ide.cli import main

    script = Path(__file__).parents[1] / "support" / "slow_lsp.py"
    user_config(
        f"[lsp]\nrequest_timeout_s = 2\n"
        f"[lsp.servers.jedi]\ncommand = {json.dumps([sys.executable, str(script), str(shop / 'slow.log')])}\n"
    )
    assert main(["index", str(shop)]) == 0
    capsys.readouterr()
    assert main(["lsp", str(shop), "references", "app.py:3:9"]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [f"{shop / 'app.py'}:3:8", f"{shop / 'shop' / 'models.py'}:4:7"]
    assert "by name (index), 'Product': 2 places" in captured.err
    assert "did not answer textDocument/references within 2 s" in captured.err
