"""retrieval_hints.avoid keeps the paths and sources it names out of a stage's retrieved context."""

from __future__ import annotations

from pathlib import Path

from ide.codeintel.index import CodeIndex
from ide.settings import Settings
from ide.workflows.retrieval import RetrievalAgent, RetrievalRequest
from tests.support.retrieval_shop import strategy

TASK = "refund should use sum_prices in cents"


async def snippets(root: Path, code_index: CodeIndex, **hints: object) -> list[str]:
    request = RetrievalRequest(
        task=TASK,
        stage_name="code_generation",
        strategy=strategy("codebase_semantic_search", **hints),
        is_code=True,
    )
    result = await RetrievalAgent(root, Settings(), index=code_index).retrieve(request)
    return [s.path or "" for s in result.snippets]


async def test_avoid_keeps_a_path_prefix_out(shop: Path, index: CodeIndex) -> None:
    assert any(p.startswith("shop/") for p in await snippets(shop, index))
    kept = await snippets(shop, index, avoid=["shop/cart.py"])
    assert "shop/cart.py" not in kept


async def test_avoid_naming_a_source_skips_it(shop: Path, index: CodeIndex) -> None:
    assert await snippets(shop, index, avoid=["codebase_semantic_search"]) == []
