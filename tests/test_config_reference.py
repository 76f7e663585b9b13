"""docs/settings.md, the configuration reference, lists every setting as the code defines it (it cannot go
stale), and the README links to it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from ide.settings import SETTING_KEYS

ROOT = Path(__file__).resolve().parent.parent


def test_the_settings_reference_is_current_and_complete() -> None:
    spec = importlib.util.spec_from_file_location(
        "config_reference", ROOT / "scripts" / "config_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.TARGET == ROOT / "docs" / "settings.md"
    reference = module.TARGET.read_text()
    assert module.block() in reference, "run: python scripts/config_reference.py --write"
    for key, leaf in SETTING_KEYS.items():
        assert f"| `{key}` |" in reference
        assert all(f"`{name}`" in reference for name in leaf.env)
    assert "](docs/settings.md" in (ROOT / "README.md").read_text(), "the README links the reference"
