"""The code's shape, checked: no import cycle (function-level imports included), no facade passing names
on, no private name crossing modules, no module over 600 lines, a core that knows no feature.

Imports under ``if TYPE_CHECKING:`` are not counted: they never run. The checks read the source with
``ast``; ``python -m tests.test_structure`` prints what each finds.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IDE = ROOT / "ide"
MAX_LINES = 600


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(IDE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run, at any depth, skipping ``if TYPE_CHECKING:`` bodies."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _absolute(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph() -> dict[str, set[str]]:
    """Module → the ide modules it imports (a ``from package import module`` counts the module)."""
    known = modules()
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        for node in runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                source = _absolute(name, path, node)
                targets = [source] + [f"{source}.{alias.name}" for alias in node.names]
            for target in targets:
                if target in known and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _used_names(tree: ast.Module) -> set[str]:
    """Names a module reads anywhere, but in its ``__all__``."""
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Attribute):
            root = node
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name):
                used.add(root.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            # string annotations ("Foo", "list[Foo]") name their types
            used.update(part for part in _identifiers(node.value))
    return used


def _identifiers(text: str) -> Iterator[str]:
    word = ""
    for char in text + " ":
        if char.isalnum() or char == "_":
            word += char
        elif word:
            yield word
            word = ""


def reexports() -> dict[str, list[str]]:
    """Module (not a package ``__init__``) → names it imports from ide only to pass them on."""
    found: dict[str, list[str]] = {}
    for name, path in modules().items():
        if path.name == "__init__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        body = [node for node in tree.body if not _is_all(node)]
        used = _used_names(ast.Module(body=body, type_ignores=[]))
        imported = []
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and _absolute(name, path, node).startswith("ide"):
                imported += [alias.asname or alias.name for alias in node.names]
        passed_on = sorted(set(imported) - used)
        if passed_on:
            found[name] = passed_on
    return found


def _is_all(node: ast.stmt) -> bool:
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign):
        targets = [node.target]
    else:
        return False
    return any(isinstance(target, ast.Name) and target.id == "__all__" for target in targets)


def private_crossings() -> dict[str, list[str]]:
    """Module → the private names (``_x``) it imports from another ide module."""
    found: dict[str, list[str]] = {}
    for name, path in modules().items():
        for node in runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and _absolute(name, path, node).startswith("ide"):
                private = [a.name for a in node.names if a.name.startswith("_") and not a.name.endswith("__")]
                if private:
                    found.setdefault(name, []).extend(f"{_absolute(name, path, node)}.{p}" for p in private)
    return found


def long_modules() -> dict[str, int]:
    lengths = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules().items()}
    return {name: count for name, count in lengths.items() if count > MAX_LINES}


def test_no_import_cycle_even_through_function_level_imports() -> None:
    assert cycles(import_graph()) == []


def test_no_module_passes_on_names_it_does_not_use() -> None:
    assert reexports() == {}


def test_no_private_name_crosses_modules() -> None:
    assert private_crossings() == {}


def test_no_module_over_600_lines() -> None:
    assert long_modules() == {}


def test_the_acp_agent_imports_no_feature_extension() -> None:
    imported = import_graph()["ide.backend.agent"]
    assert sorted(m for m in imported if m.startswith("ide.backend.extensions.")) == []


def test_the_checks_see_what_they_look_for() -> None:
    """The checker itself: a cycle, a facade and a private import it must find."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    tree = ast.parse("from ide.x import used, passed\n__all__ = ['used', 'passed']\nprint(used)\n")
    body = [node for node in tree.body if not _is_all(node)]
    assert "passed" not in _used_names(ast.Module(body=body, type_ignores=[]))
    assert "used" in _used_names(ast.Module(body=body, type_ignores=[]))


if __name__ == "__main__":
    for component in cycles(import_graph()):
        print("cycle:", " ↔ ".join(component))
    for module, names in reexports().items():
        print(f"re-export: {module} ({len(names)}): {', '.join(names)}")
    for module, names in private_crossings().items():
        print(f"private: {module}: {', '.join(names)}")
    for module, count in long_modules().items():
        print(f"long: {module} {count}")
    print("agent imports:", sorted(m for m in import_graph()["ide.backend.agent"] if "extensions" in m))
