"""The code index of a test workspace, as a fixture body."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ide.codeintel.index import CodeIndex


def indexed(root: Path, tmp_path: Path) -> Iterator[CodeIndex]:
    """A fixture body: the code index of ``root``, built up front and closed after the test."""
    from ide.codeintel.index import CodeIndex

    built = CodeIndex(root, tmp_path / "index.sqlite")
    built.refresh()
    yield built
    built.close()
