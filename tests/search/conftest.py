"""Fixtures of the search-tree tests."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest


@pytest.fixture
def eager_thread_switching() -> Iterator[None]:
    """Switch threads every microsecond, so an unlocked read-modify-write races within a few calls."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)
