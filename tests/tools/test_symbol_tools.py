"""The agent's index tools over a real index and a real change set: they see the agent's own edits."""

from __future__ import annotations

from pathlib import Path

import pytest

from ide.changes import ChangeSet
from ide.codeintel.index import CodeIndex
from ide.settings import Settings
from ide.tools import ToolServices
from ide.tools import toolbox as make_toolbox
from tests.support.index_shop import MODELS, SHOP


@pytest.fixture
def shop(tmp_path: Path) -> tuple[Path, CodeIndex]:
    root = tmp_path / "ws"
    (root / "shop").mkdir(parents=True)
    (root / "shop" / "models.py").write_text(MODELS)
    (root / "shop" / "cart.py").write_text(SHOP)
    index = CodeIndex(root, tmp_path / "index.sqlite")
    index.refresh()
    yield root, index
    index.close()


def test_tools_are_offered_only_with_an_index(shop: tuple[Path, CodeIndex]) -> None:
    root, index = shop
    assert {"find_symbol", "file_outline", "find_references", "repo_map"} <= make_toolbox(
        root, Settings(), services=ToolServices(index=index), read_only=True
    ).specs.keys()
    assert "find_symbol" not in make_toolbox(root, Settings(), read_only=True).specs


def test_find_symbol_outline_references_and_map(shop: tuple[Path, CodeIndex]) -> None:
    root, index = shop
    tools = make_toolbox(root, Settings(), services=ToolServices(index=index), read_only=True)
    found = tools.call("find_symbol", {"query": "sum_pri"})
    assert not found.failed
    assert (
        found.output.splitlines()[0] == "function sum_prices  shop/models.py:8  def sum_prices(items) -> int"
    )
    assert tools.call("find_symbol", {"query": "total", "kind": "class"}).output.startswith("no definition")

    outline = tools.call("file_outline", {"path": "shop/models.py"}).output
    assert outline.splitlines() == [
        "1: class Order  — An order of items.",
        "  4: def total(self) -> int",
        "8: def sum_prices(items) -> int",
    ]

    uses = tools.call("find_references", {"name": "sum_prices"}).output.splitlines()
    assert uses == [
        "shop/models.py:8: (definition) def sum_prices(items) -> int:",
        "shop/cart.py:1: from shop.models import Order, sum_prices",
        "shop/cart.py:9: return -sum_prices(order.items)",
        "shop/models.py:5: return sum_prices(self.items)",
    ]
    assert (
        tools.call("find_references", {"name": "sum_prices", "path": "shop/cart.py"}).output.count("\n") == 1
    )
    assert tools.call("find_references", {"name": "a b"}).failed

    repo = tools.call("repo_map", {"focus": "why does refund return a negative sum?"}).output
    assert repo.splitlines()[0] == "shop/cart.py:"  # the file defining `refund` comes first
    assert "  def refund(order)" in repo and "shop/models.py:" in repo


def test_tools_see_the_change_set(shop: tuple[Path, CodeIndex]) -> None:
    root, index = shop
    changes = ChangeSet(root)
    changes.create("shop/tax.py", "def add_tax(amount):\n    return sum_prices([]) + amount\n")
    changes.delete("shop/cart.py")
    tools = make_toolbox(root, Settings(), changes, ToolServices(index=index))
    assert "shop/tax.py:1" in tools.call("find_symbol", {"query": "add_tax"}).output
    assert tools.call("find_symbol", {"query": "checkout"}).output.startswith("no definition")
    assert tools.call("file_outline", {"path": "shop/tax.py"}).output == "1: def add_tax(amount)"
    assert tools.call("file_outline", {"path": "shop/cart.py"}).failed
    uses = tools.call("find_references", {"name": "sum_prices"}).output
    assert "shop/tax.py:2:" in uses and "shop/cart.py" not in uses
    assert "shop/tax.py:" in tools.call("repo_map", {}).output
    assert not (root / "shop" / "tax.py").exists()  # nothing written


def test_without_an_index_the_tool_says_what_to_use_instead(shop: tuple[Path, CodeIndex]) -> None:
    root, index = shop
    tools = make_toolbox(root, Settings(), services=ToolServices(index=index), read_only=True)
    tools.workspace.index = None
    result = tools.call("find_symbol", {"query": "Order"})
    assert result.failed and "use grep and read_file" in result.output
