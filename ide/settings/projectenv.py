"""The Python environment a workspace's own files name (its ``.venv``, pdm's, poetry's, conda's, pyright's),
found by reading files only: nothing the repository names is run here.

Using such an interpreter runs it (and whatever its site-packages run at start), so the settings loader
holds it back as ``lsp.python_interpreter`` until the user trusts the workspace (ide.trust).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VENV_DIRS = (".venv", "venv")


@dataclass(frozen=True)
class ProjectInterpreter:
    """An interpreter the workspace's files point at, and which convention pointed there."""

    path: Path
    convention: str


def venv_python(directory: Path) -> Path:
    """The interpreter of a virtual environment (or conda environment) in ``directory``."""
    if sys.platform == "win32":
        return directory / "Scripts" / "python.exe"
    return directory / "bin" / "python"


def read_pyproject(root: Path) -> dict[str, Any]:
    """The workspace's pyproject.toml as a table; empty when it is missing or not TOML."""
    try:
        return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def tool_table(pyproject: Mapping[str, Any], *names: str) -> dict[str, Any]:
    """``[tool.NAME.…]`` of a pyproject table, or {} when it is absent or not a table."""
    table: Any = pyproject.get("tool", {})
    for name in names:
        table = table.get(name, {}) if isinstance(table, Mapping) else {}
    return dict(table) if isinstance(table, Mapping) else {}


def project_interpreter(root: Path, environ: Mapping[str, str] | None = None) -> ProjectInterpreter | None:
    """The first interpreter the workspace names: .venv or venv, pdm's ``.pdm-python``, pyright's
    ``venvPath``/``venv``, poetry's environment in its cache, conda's ``environment.yml`` name."""
    environ = os.environ if environ is None else environ
    for name in VENV_DIRS:
        if (root / name / "pyvenv.cfg").is_file() and venv_python(root / name).exists():
            return ProjectInterpreter(venv_python(root / name), f"the workspace's {name}")
    pdm = _pdm_python(root)
    if pdm is not None:
        return ProjectInterpreter(pdm, "the workspace's .pdm-python (pdm)")
    pyproject = read_pyproject(root)
    for tool in ("pyright", "basedpyright"):
        table = tool_table(pyproject, tool)
        if isinstance(table.get("venvPath"), str) and isinstance(table.get("venv"), str):
            python = venv_python(root / table["venvPath"] / table["venv"])
            if python.exists():
                return ProjectInterpreter(python, f"[tool.{tool}] venv of pyproject.toml")
    poetry = _poetry_python(root, pyproject, environ)
    if poetry is not None:
        return ProjectInterpreter(poetry, "poetry's environment of this project")
    conda = _conda_python(root, environ)
    if conda is not None:
        return conda
    return None


def _pdm_python(root: Path) -> Path | None:
    try:
        text = (root / ".pdm-python").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    path = Path(text) if text else None
    return path if path is not None and path.is_absolute() and path.exists() else None


def poetry_env_name(name: str, root: Path) -> str:
    """The directory-name prefix poetry gives the environment of project ``name`` at ``root``."""
    sanitized = re.sub(r'[ $`!*@"\\\r\n\t]', "_", name.lower())[:42]
    digest = hashlib.sha256(os.path.normcase(os.path.realpath(root)).encode()).digest()
    return f"{sanitized}-{base64.urlsafe_b64encode(digest).decode()[:8]}"


def _poetry_python(root: Path, pyproject: Mapping[str, Any], environ: Mapping[str, str]) -> Path | None:
    if not (root / "poetry.lock").is_file():
        return None
    project = pyproject.get("project")
    name = tool_table(pyproject, "poetry").get("name") or (
        project.get("name") if isinstance(project, Mapping) else None
    )
    if not isinstance(name, str) or not name:
        return None
    cache = environ.get("POETRY_VIRTUALENVS_PATH") or str(
        Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pypoetry" / "virtualenvs"
    )
    found = sorted(Path(cache).glob(f"{poetry_env_name(name, root)}-py*"), reverse=True)
    return next((venv_python(env) for env in found if venv_python(env).exists()), None)


def _conda_python(root: Path, environ: Mapping[str, str]) -> ProjectInterpreter | None:
    for file in ("environment.yml", "environment.yaml"):
        try:
            text = (root / file).read_text(encoding="utf-8")
        except OSError:
            continue
        match = re.search(r"^name:\s*['\"]?([\w.-]+)", text, re.MULTILINE)
        if match is None:
            return None
        listed = Path(environ.get("HOME") or Path.home()) / ".conda" / "environments.txt"
        try:
            envs = [Path(line.strip()) for line in listed.read_text(encoding="utf-8").splitlines()]
        except OSError:
            return None
        for env in envs:
            if env.name == match.group(1) and venv_python(env).exists():
                return ProjectInterpreter(venv_python(env), f"conda environment {match.group(1)!r} of {file}")
    return None
