"""Screenshot of the search-tree dock showing the recorded LATS sample (tree.png in a temporary directory,
or ``--output``; copy a checked picture into resources/screenshots yourself).

    python scripts/tree_screenshot.py [--output PATH] [--node n8]

Offscreen: opens resources/samples/lats-bugfix.arbor-tree.jsonl in a SearchTreeView, selects a node so
the inspector shows its scores, UCT terms and reflection, and saves the widget's pixels.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from PySide6.QtWidgets import QApplication

from ide.app.theme import apply_theme
from ide.app.tree.view import SearchTreeView

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "resources" / "samples" / "lats-bugfix.arbor-tree.jsonl"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The options; ``output`` defaults to tree.png in a new temporary directory, never the checkout."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=None, help="the picture (default: a temporary dir)")
    parser.add_argument("--node", default="n8", help="the node shown in the inspector")
    args = parser.parse_args(argv)
    if args.output is None:
        args.output = Path(tempfile.mkdtemp(prefix="arbor-tree-out-")) / "tree.png"
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    app = QApplication.instance() or QApplication(["arbor-screenshot"])
    assert isinstance(app, QApplication)
    apply_theme(app)
    view = SearchTreeView()
    view.resize(1280, 720)
    view.show()
    view.open_file(SAMPLE)
    view.flush()
    view.select_node(args.node)
    for _ in range(5):
        app.processEvents()
    view.fit()
    app.processEvents()
    if not view.grab().save(str(args.output)):
        print(f"could not write {args.output}", file=sys.stderr)
        return 1
    print(args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
