"""The recorded sample search tree shipped in resources/samples."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "resources" / "samples" / "lats-bugfix.arbor-tree.jsonl"
