"""docs/architecture.md is a one-page map that says only what is so: it fits on a page, every ``ide/…`` or
``tests/…`` path and ``ide.x.y`` module it (or any page of the docs, or the README) names exists, it names
every feature package of the window, and the layers it shows are the import-linter contract's; the
window's page lists every part module.

A path or module with a placeholder in capitals (``ide/app/FEATURE/part.py``, ``ide.protocol.NAME``) is
checked up to the placeholder; ``python -m tests.test_docs_architecture`` prints what the checks find.
"""

from __future__ import annotations

import ast
import functools
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAP = ROOT / "docs" / "architecture.md"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MAX_LINES = 250

PATH = re.compile(r"(?<![\w/.-])((?:ide|tests)/[\w./*{},-]*[\w*/])")
MODULE = re.compile(r"(?<![\w./-])(ide(?:\.\w+)+)")
PLACEHOLDER = re.compile(r"(?<![A-Z])(?:NAME|FEATURE|LANG)(?![A-Z])")
LAYERS_MARK = "**The layers**"


@functools.cache
def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def module_file(name: str) -> Path | None:
    """The source of the module ``name`` (a package's ``__init__.py``), or None when there is none. A data
    package mapped in ``[tool.setuptools.package-dir]`` (``ide.workflows.builtin``) is its folder."""
    mapped = pyproject()["tool"]["setuptools"].get("package-dir", {})
    if name in mapped and (ROOT / mapped[name]).is_dir():
        return ROOT / mapped[name]
    path = ROOT.joinpath(*name.split("."))
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


@functools.cache
def top_level_names(source: Path) -> frozenset[str]:
    """The names a module defines or imports at its top level; ``*`` when it answers any (``__getattr__``)."""
    names: set[str] = set()
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(
                found.id for target in targets for found in ast.walk(target) if isinstance(found, ast.Name)
            )
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return frozenset(names | ({"*"} if "__getattr__" in names else set()))


def _expand(path: str) -> list[str]:
    """``a/{b,c}.py`` as ``a/b.py`` and ``a/c.py``."""
    if "{" not in path or "}" not in path:
        return [path]
    head, rest = path.split("{", 1)
    options, tail = rest.split("}", 1)
    return [expanded for option in options.split(",") for expanded in _expand(head + option + tail)]


def path_exists(path: str) -> bool:
    """``path`` names a file or folder of the repository (a glob matches one; a placeholder's parent
    exists; ``tests/support/net.closed_port`` is a name of ``tests/support/net.py``)."""
    stripped = path.rstrip("/")
    if any(ROOT.glob(stripped)) if "*" in stripped else (ROOT / stripped).exists():
        return True
    placeholder = PLACEHOLDER.search(stripped)
    if placeholder:
        return (ROOT / stripped[: placeholder.start()]).parent.is_dir()
    source, _, name = stripped.rpartition(".")
    module = ROOT / f"{source}.py"
    return module.is_file() and name in top_level_names(module)


def module_exists(dotted: str) -> bool:
    """``dotted`` is a module of ``ide`` or a name one defines (``ide.gitsafe.missing_identity``)."""
    parts = dotted.split(".")
    for length in range(len(parts), 0, -1):
        source = module_file(".".join(parts[:length]))
        if source is None:
            continue
        if length == len(parts) or source.is_dir():
            return True
        name = parts[length]
        return bool(PLACEHOLDER.fullmatch(name)) or bool({name, "*"} & top_level_names(source))
    return False


def missing(text: str, where: str) -> list[str]:
    """Each path and module ``text`` names that does not exist, as ``where:line: name``."""
    problems: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in PATH.finditer(line):
            if "node_modules" in match.group(1):
                continue  # npm's, installed by the interop tests
            problems += [
                f"{where}:{number}: {path}" for path in _expand(match.group(1)) if not path_exists(path)
            ]
        problems += [
            f"{where}:{number}: {match.group(1)}"
            for match in MODULE.finditer(line)
            if not module_exists(match.group(1))
        ]
    return problems


def shown_layers(text: str) -> list[str]:
    """The lines of the first code block after the map's layers paragraph."""
    after = text[text.index(LAYERS_MARK) :]
    block = after[after.index("```\n") + 4 :]
    return block[: block.index("```")].splitlines()


def same_layers(shown: list[str], contract: list[str]) -> bool:
    def normal(layers: list[str]) -> list[list[str]]:
        return [[name.strip() for name in layer.split("|")] for layer in layers if layer.strip()]

    return normal(shown) == normal(contract)


def layers_contract() -> list[str]:
    contracts = pyproject()["tool"]["importlinter"]["contracts"]
    return next(contract for contract in contracts if contract["type"] == "layers")["layers"]


def feature_packages() -> list[str]:
    return sorted(path.name for path in (ROOT / "ide" / "app").iterdir() if (path / "__init__.py").is_file())


def unnamed_features(text: str) -> list[str]:
    return [name for name in feature_packages() if not re.search(rf"(?:ide/app/|`){name}/", text)]


def test_the_map_fits_on_a_page() -> None:
    assert len(MAP.read_text().splitlines()) <= MAX_LINES


def test_every_path_and_module_the_docs_name_exists() -> None:
    problems = [problem for page in PAGES for problem in missing(page.read_text(), page.name)]
    assert problems == []
    # The check has something to check: the map names many paths and modules.
    text = MAP.read_text()
    assert len(PATH.findall(text)) >= 50 and len(MODULE.findall(text)) >= 30


def test_the_map_names_every_feature_package_of_the_window() -> None:
    assert len(feature_packages()) >= 10
    assert unnamed_features(MAP.read_text()) == []


def test_the_window_page_lists_every_part_module() -> None:
    """docs/window.md's table of parts has a row for every module the part registry imports."""
    modules = sorted(
        f"{path.parent.name}/{path.name}"
        for path in (ROOT / "ide" / "app").glob("*/part*.py")
        if path.stem == "part" or path.stem.startswith("part_")
    )
    assert len(modules) >= 15
    text = (ROOT / "docs" / "window.md").read_text()
    assert [module for module in modules if f"| `{module}` |" not in text] == []


def test_the_layers_the_map_shows_are_the_import_contract() -> None:
    assert same_layers(shown_layers(MAP.read_text()), layers_contract())


def test_the_checks_find_what_is_wrong() -> None:
    page = (
        "`ide/app/parts/needs.py` `ide/app/FEATURE/part.py` `ide/app/*/part_*.py`\n"
        "`tests/support/net.closed_port` `ide.protocol.review.SUMMARY_CAPABILITY` `ide.protocol.FEATURE`\n"
        "`ide/app/docks/chat.py` `ide/backend/extensions/{review,external}.py` `ide.protocol.external`\n"
        "`ide.gitsafe.no_such_function` `tests/support/net.no_such_name`, (ide/nowhere/).\n"
        "`ide.__version__` `ide.workflows.builtin`\n"
    )
    assert missing(page, "page") == [
        "page:3: ide/app/docks/chat.py",
        "page:3: ide/backend/extensions/external.py",
        "page:3: ide.protocol.external",
        "page:4: tests/support/net.no_such_name",
        "page:4: ide/nowhere/",
        "page:4: ide.gitsafe.no_such_function",
    ]
    contract = layers_contract()
    swapped = [contract[1], contract[0], *contract[2:]]
    assert same_layers([line.replace(" | ", "|") for line in contract], contract)
    assert not same_layers(swapped, contract) and not same_layers(contract[:-1], contract)
    assert unnamed_features("`chat/` and ide/app/review/ only") == [
        name for name in feature_packages() if name not in ("chat", "review")
    ]


if __name__ == "__main__":
    for page in PAGES:
        for problem in missing(page.read_text(), page.name):
            print("missing:", problem)
    print("map lines:", len(MAP.read_text().splitlines()), "of", MAX_LINES)
    print("features not named:", unnamed_features(MAP.read_text()))
    print("layers as the contract:", same_layers(shown_layers(MAP.read_text()), layers_contract()))
