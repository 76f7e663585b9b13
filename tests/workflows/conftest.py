"""Fixtures of the workflow tests: a small real CLI project in git with the feature workflow's scripted
run (both in tests/support/feature_workflow.py, which the window and search tests also use), and the
``shop`` project the retrieval tests search, with its code index."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.code_index import indexed
from tests.support.feature_workflow import cli_project, make_ctx  # noqa: F401  (fixtures)
from tests.support.retrieval_shop import make_shop

if TYPE_CHECKING:
    from ide.codeintel.index import CodeIndex


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """A git repository: code, a README, an ADR, a spec, a reST guide, and an ignored build/ folder."""
    return make_shop(tmp_path)


@pytest.fixture
def index(shop: Path, tmp_path: Path) -> Iterator[CodeIndex]:
    yield from indexed(shop, tmp_path)
