"""A three-module Python package (``shop``) with cross-package imports, for the language-server tests."""

from __future__ import annotations

from pathlib import Path

import pytest

UTIL = '''def slugify(text: str, sep: str = "-") -> str:
    """Lower-case words joined by ``sep``."""
    return sep.join(text.lower().split())
'''
MODELS = """from shop.text.util import slugify


class Product:
    def __init__(self, name: str) -> None:
        self.slug = slugify(name)

    def label(self) -> str:
        return self.slug.upper()
"""
APP = """from shop.models import Product

item = Product("Blue Mug")
print(item.label(), item.slug)
"""


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "shop" / "text").mkdir(parents=True)
    (root / "shop" / "__init__.py").write_text("")
    (root / "shop" / "text" / "__init__.py").write_text("")
    (root / "shop" / "text" / "util.py").write_text(UTIL)
    (root / "shop" / "models.py").write_text(MODELS)
    (root / "app.py").write_text(APP)
    return root.resolve()
