"""The design's import rules hold: only ide.app touches Qt, and the window sees only protocol and settings."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold() -> None:
    lint = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    done = subprocess.run([lint], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 3 kept, 0 broken." in done.stdout


def test_every_top_level_module_has_a_layer_and_stays_off_qt() -> None:
    """A new package or module under ide/ must be placed in the layers and (but for the window) kept
    off Qt, or the contracts would silently not cover it."""
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c["type"] == "layers")["layers"]
    layered = {name.strip() for layer in layers for name in layer.split("|")}
    qt_free = set(next(c for c in contracts if c["name"] == "Only the window imports Qt")["source_modules"])
    found = {
        f"ide.{path.stem if path.is_file() else path.name}"
        for path in (ROOT / "ide").iterdir()
        if (path.suffix == ".py" and path.stem not in ("__init__", "__main__"))
        or (path.is_dir() and (path / "__init__.py").exists())
    }
    assert found - layered == set()
    assert found - qt_free == {"ide.app"}


def test_the_documented_window_imports_are_what_the_contract_allows() -> None:
    """docs/architecture.md rule 1 names every Arbor module the window may import, and only those."""
    import re
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    window = next(c for c in contracts if c.get("source_modules") == ["ide.app"])
    top_level = {
        f"ide.{path.stem if path.is_file() else path.name}"
        for path in (ROOT / "ide").iterdir()
        if (path.suffix == ".py" and path.stem not in ("__init__", "__main__"))
        or (path.is_dir() and (path / "__init__.py").exists())
    }
    allowed = top_level - set(window["forbidden_modules"]) - {"ide.app"}
    text = (ROOT / "docs" / "architecture.md").read_text()
    rule = text[text.index("1. **The window is a client.**") : text.index("2. **Standard ACP first")]
    documented = set(re.findall(r"`(ide\.[a-z_]+)`", rule))
    assert documented == allowed
