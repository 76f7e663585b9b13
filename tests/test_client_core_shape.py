"""The client's shape as issue 47 left it, checked: the ACP stream is read by its kind only in the session
fold; parts reach the window through its typed seam; the client core, the agent and the window stay small;
the window is laid out by feature; one name for the foreign agent.

The checks read the source as text (or with ``ast``); ``python -m tests.test_client_core_shape`` prints
what each finds.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IDE = ROOT / "ide"
FOLD = IDE / "client" / "fold.py"
SMALL = [*sorted((IDE / "client").glob("*.py")), IDE / "backend" / "agent.py", IDE / "app" / "window.py"]
"""Modules kept under :data:`SMALL_LINES` lines."""
SMALL_LINES = 400
APP_TOP_FILES = 15
LAZY_MODULES = {IDE / "__init__.py", IDE / "tools" / "__init__.py"}
"""Where a module-level ``__getattr__`` loads a name at first use (a package boundary's lazy import)."""

KIND_READ = re.compile(
    r"""session_update["']?\s*(?:,\s*None\s*\))?\s*(?:==|!=|\bin\b)|\.session_update\b(?!\()"""
)
"""An update's kind read as a string: ``update.session_update == …``,
``getattr(u, "session_update", None) == …``."""
SEAM = re.compile(r"\bexposes\b|window\.docks\[|\b\w+_dock\b\s*=\s*part\.dock")
FOREIGN_WORD = re.compile(r"\bexternal\b|External[A-Z]|EXTERNAL_", re.IGNORECASE)
WIRE_OR_GIT = re.compile(r"arbor/external/|external diff|textconv|\"external\"|external\s+(?:diff\s+)?driver")
GIT_WORDS = IDE / "gitsafe.py"
"""Git's own configuration keys (``diff.external``) are named as git names them."""


def sources() -> dict[Path, str]:
    return {path: path.read_text(encoding="utf-8") for path in sorted(IDE.rglob("*.py"))}


def kind_reads(files: dict[Path, str]) -> list[str]:
    """``file:line`` of every place outside the fold that reads an update's kind as a string."""
    found = []
    for path, text in files.items():
        if path == FOLD:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            code = line.split("#", 1)[0]
            if KIND_READ.search(code) and "session_update=" not in code.replace(" ", ""):
                found.append(f"{path.relative_to(ROOT)}:{number}")
    return found


def seam_breaks(files: dict[Path, str]) -> list[str]:
    """Parts named on the window: ``exposes``, ``window.docks[…]``, ``<name>_dock`` set from a part, a
    ``type: ignore[attr-defined]`` in a part module, and ``__getattr__`` but a package's lazy loading."""
    found = []
    for path, text in files.items():
        rel = path.relative_to(ROOT)
        for number, line in enumerate(text.splitlines(), 1):
            if SEAM.search(line):
                found.append(f"{rel}:{number}")
            if path.name.startswith("part") and "type: ignore[attr-defined]" in line:
                found.append(f"{rel}:{number}")
        tree = ast.parse(text)
        module_level = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
                lazy = path in LAZY_MODULES and id(node) in module_level
                if not lazy and not _is_loader_proxy(path):
                    found.append(f"{rel}:{node.lineno} __getattr__")
    return found


def _is_loader_proxy(path: Path) -> bool:
    """``ide/acpload.py``'s import loader hands every other loader call to the real loader."""
    return path == IDE / "acpload.py"


def long_modules() -> dict[str, int]:
    lengths = {str(path.relative_to(ROOT)): len(path.read_text().splitlines()) for path in SMALL}
    return {name: count for name, count in lengths.items() if count > SMALL_LINES}


def app_top_files() -> list[str]:
    return sorted(path.name for path in (IDE / "app").iterdir() if path.is_file() and path.suffix == ".py")


def external_names(files: dict[Path, str]) -> list[str]:
    """Python names and words that call the foreign agent "external" (the wire's method names and git's
    external diff drivers aside)."""
    found = []
    for path, text in files.items():
        if path == GIT_WORDS:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if FOREIGN_WORD.search(WIRE_OR_GIT.sub("", line)) and "setOpenExternalLinks" not in line:
                found.append(f"{path.relative_to(ROOT)}:{number}")
    return found


def test_only_the_fold_reads_an_updates_kind() -> None:
    assert kind_reads(sources()) == []


def test_parts_reach_the_window_through_its_typed_seam() -> None:
    assert seam_breaks(sources()) == []


def test_the_client_core_the_agent_and_the_window_stay_small() -> None:
    assert long_modules() == {}


def test_the_window_is_laid_out_by_feature() -> None:
    assert len(app_top_files()) <= APP_TOP_FILES, app_top_files()


def test_one_name_for_the_foreign_agent() -> None:
    assert external_names(sources()) == []


def test_the_checks_see_what_they_look_for() -> None:
    sample = {
        IDE / "app" / "x" / "part.py": (
            'if getattr(update, "session_update", None) == "tool_call":\n'
            "    pass\n"
            "kind = update.session_update\n"
            'exposes = {"chat": "panel"}\n'
            'window.docks["tree"].show()\n'
            "x = ctx.window.agent  # type: ignore[attr-defined]\n"
            "class W:\n"
            "    def __getattr__(self, name): ...\n"
            "ExternalCapture = 1\n"
        ),
        IDE / "y.py": (
            'u = UserMessageChunk(session_update="user_message_chunk")\nm = "_arbor/external/open"\n'
        ),
    }
    assert kind_reads(sample) == ["ide/app/x/part.py:1", "ide/app/x/part.py:3"]
    assert seam_breaks(sample) == [
        "ide/app/x/part.py:4",
        "ide/app/x/part.py:5",
        "ide/app/x/part.py:6",
        "ide/app/x/part.py:8 __getattr__",
    ]
    assert external_names(sample) == ["ide/app/x/part.py:9"]


if __name__ == "__main__":
    files = sources()
    for name, found in (
        ("kind read as a string", kind_reads(files)),
        ("seam", seam_breaks(files)),
        ("long", long_modules()),
        ("external", external_names(files)),
    ):
        print(name, found)
    print("ide/app top level", len(app_top_files()), app_top_files())
