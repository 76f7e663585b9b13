"""The ``shop`` project the retrieval tests search: code, a README, an ADR, a spec, a reST guide and an
ignored build/ folder, with a git history; and the retrieval strategy naming the sources to search."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ide.workflows.schema import RagSource, RetrievalStrategy
from tests.support.git import git
from tests.support.index_shop import MODELS
from tests.support.index_shop import SHOP as CART

README = """# Shop

A tiny shop.

## Install

pip install shop

## Refunds

A refund returns the order total. Refunds are rounded to whole cents.

```
# not a heading: inside a fence
```
"""

ADR = """# 3. Store money as integer cents

## Context

Floats lose cents when prices are summed.

## Decision

Prices and totals are integer cents everywhere.

## Consequences

Display code divides by 100.
"""

SPEC = """# Checkout specification

## Receipts

Checkout prints a receipt with the total in cents.
"""

GUIDE = """Guide
=====

Shipping
--------

Parcels ship on weekdays.
"""


def make_shop(tmp_path: Path) -> Path:
    """A git repository: code, a README, an ADR, a spec, a reST guide, and an ignored build/ folder."""
    root = tmp_path / "shop-project"
    (root / "shop").mkdir(parents=True)
    (root / "docs" / "adr").mkdir(parents=True)
    (root / "build").mkdir()
    (root / "shop" / "__init__.py").write_text("")
    (root / "shop" / "models.py").write_text(MODELS)
    (root / "shop" / "cart.py").write_text(CART)
    (root / "README.md").write_text(README)
    (root / "docs" / "adr" / "0003-money-as-cents.md").write_text(ADR)
    (root / "docs" / "spec-checkout.md").write_text(SPEC)
    (root / "docs" / "guide.rst").write_text(GUIDE)
    (root / "build" / "README.md").write_text("# Refunds\n\nStale refunds copy in a build folder.\n")
    (root / ".gitignore").write_text("build/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "Shop: orders, checkout and refunds")
    (root / "shop" / "cart.py").write_text(CART + "\n\ndef apply_discount(order, percent):\n    return 0\n")
    git(root, "commit", "-qam", "Tidy up the cart module")
    (root / "README.md").write_text(README + "\nRefund rounding changed in 1.1.\n")
    git(
        root,
        "commit",
        "-qam",
        "Refunds: round to whole cents\n\nSumming float prices lost a cent on large refunds.",
    )
    return root


def strategy(*sources: str | RagSource, **hints: Any) -> RetrievalStrategy:
    listed = [s if isinstance(s, RagSource) else RagSource(name=s) for s in sources]
    return RetrievalStrategy.model_validate(
        {"rag_strategy": {"sources": [s.model_dump() for s in listed]}, "retrieval_hints": hints}
    )
