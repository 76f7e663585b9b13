"""The project's own Python for the language servers: which interpreter's packages they see, and which of
the workspace's directories are on their import path (a ``src/`` layout, pyproject's package dirs).

The interpreter comes from ``lsp.python_interpreter`` (which the settings loader fills with the
workspace's ``.venv``, pdm, poetry or conda environment once the workspace is trusted), else from the
environment Arbor was started in (``VIRTUAL_ENV``, ``CONDA_PREFIX``). Extra paths the repository's files
name are kept only inside the workspace; the user's ``lsp.extra_paths`` are taken as given.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ide.codeintel.lsp.registry import ServerSpec
from ide.settings import LspSettings, ResolvedSettings
from ide.settings.projectenv import read_pyproject, tool_table, venv_python


@dataclass(frozen=True)
class PythonEnvironment:
    """What a Python language server is told: the interpreter (None: its own default), where that
    choice came from, the extra import paths, and a problem with the configured interpreter if any."""

    interpreter: Path | None
    source: str
    extra_paths: tuple[Path, ...] = ()
    problem: str | None = None
    notes: tuple[str, ...] = ()

    def describe(self, root: Path) -> list[str]:
        """Lines for ``arbor lsp`` and ``arbor doctor``: the interpreter and the extra paths."""
        used = (
            str(self.interpreter)
            if self.interpreter is not None
            else f"the language server's default (for jedi, Arbor's {sys.executable})"
        )
        lines = [f"python interpreter: {used}  ← {self.source}"]
        shown = [_relative(path, root) for path in self.extra_paths]
        lines.append("extra import paths: " + (", ".join(shown) if shown else "none"))
        if self.problem:
            lines.append(f"problem: {self.problem}")
        lines.extend(self.notes)
        return lines


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root)) or "."
    except ValueError:
        return str(path)


def python_environment(
    root: Path, settings: LspSettings, environ: Mapping[str, str] | None = None
) -> PythonEnvironment:
    """The environment the Python server of workspace ``root`` is given (reads files, runs nothing)."""
    environ = os.environ if environ is None else environ
    paths = extra_paths(root, settings)
    if settings.python_interpreter:
        given = Path(os.path.expanduser(settings.python_interpreter))
        given = given if given.is_absolute() else root / given
        python = venv_python(given) if given.is_dir() else given
        if python.is_file():
            return PythonEnvironment(python, "lsp.python_interpreter", paths)
        problem = (
            f"lsp.python_interpreter {given} is not a Python interpreter or environment; using the default"
        )
        return PythonEnvironment(None, "lsp.python_interpreter", paths, problem)
    own = Path(os.path.realpath(sys.prefix))
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        value = environ.get(variable)
        if value and Path(os.path.realpath(value)) != own and venv_python(Path(value)).is_file():
            return PythonEnvironment(venv_python(Path(value)), variable, paths)
    return PythonEnvironment(None, "no project environment found", paths)


def extra_paths(root: Path, settings: LspSettings) -> tuple[Path, ...]:
    """``lsp.extra_paths``, then the directories the repository keeps its packages in: ``src/`` when it
    holds packages, pyright's ``extraPaths``, setuptools' ``where``, poetry's ``from`` — those only when
    they are inside the workspace."""
    chosen = [Path(os.path.expanduser(p)) for p in settings.extra_paths]
    found = [path if path.is_absolute() else root / path for path in chosen]
    for candidate in _repository_paths(root):
        place = root / candidate
        real = Path(os.path.realpath(place))
        if real != Path(os.path.realpath(root)) and Path(os.path.realpath(root)) in real.parents:
            found.append(place)
    unique: dict[Path, None] = {}
    for path in found:
        if path.is_dir():
            unique.setdefault(Path(os.path.normpath(path)), None)
    return tuple(unique)


def _repository_paths(root: Path) -> list[str]:
    candidates = []
    src = root / "src"
    if src.is_dir() and not (src / "__init__.py").exists() and _holds_python(src):
        candidates.append("src")
    pyproject = read_pyproject(root)
    for tool in ("pyright", "basedpyright"):
        candidates += _strings(tool_table(pyproject, tool).get("extraPaths"))
    candidates += _strings(tool_table(pyproject, "setuptools", "packages", "find").get("where"))
    for package in tool_table(pyproject, "poetry").get("packages") or []:
        if isinstance(package, Mapping):
            candidates += _strings([package.get("from")])
    return candidates


def _strings(value: Any) -> list[str]:
    return [item for item in value if isinstance(item, str) and item] if isinstance(value, list) else []


def _holds_python(directory: Path) -> bool:
    try:
        entries = list(directory.iterdir())
    except OSError:
        return False
    return any(
        (entry.is_dir() and (entry / "__init__.py").is_file()) or entry.suffix in (".py", ".pyi")
        for entry in entries
    )


def for_environment(spec: ServerSpec, environment: PythonEnvironment) -> ServerSpec:
    """``spec`` told about ``environment``: jedi in its initialization options (``workspace``), pyright
    and basedpyright in their ``workspace/configuration`` answers (``python.pythonPath``,
    ``python.analysis.extraPaths``). Options the user set for the server win over these."""
    paths = [str(path) for path in environment.extra_paths]
    python = str(environment.interpreter) if environment.interpreter is not None else None
    if spec.name == "jedi":
        workspace: dict[str, Any] = {"extraPaths": paths}
        if python is not None:
            workspace["environmentPath"] = python
        return replace(
            spec, initialization_options=_merged({"workspace": workspace}, spec.initialization_options)
        )
    if spec.name in ("pyright", "basedpyright"):
        analysis = {"extraPaths": paths}
        section: dict[str, Any] = {"analysis": analysis}
        if python is not None:
            section["pythonPath"] = python
        configuration = {"python": section, spec.name: {"analysis": analysis}}
        return replace(spec, configuration=_merged(configuration, spec.configuration))
    return spec


def _merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        below = merged.get(key)
        if isinstance(below, Mapping) and isinstance(value, Mapping):
            merged[key] = _merged(below, value)
        else:
            merged[key] = value
    return merged


def environment_report(root: Path, resolved: ResolvedSettings) -> list[str]:
    """What ``arbor lsp`` and ``arbor doctor`` say about the Python server's environment for ``root``: the
    interpreter with where it came from, the extra paths, and a workspace environment waiting for trust."""
    environment = python_environment(root, resolved.settings.lsp)
    if environment.source == "lsp.python_interpreter":
        where = resolved.sources.get("lsp.python_interpreter", "default")
        environment = replace(environment, source=f"lsp.python_interpreter, set by {where}")
    held = [item for item in resolved.held_back if item.key == "lsp.python_interpreter"]
    notes = tuple(
        f"not used until you trust the workspace: {item.value} ({item.source}); "
        f"run: arbor trust {root} (or --trust for one run)"
        for item in held
    )
    return replace(environment, notes=notes).describe(root)
