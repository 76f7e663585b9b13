"""The project's own Python for the language servers, for real: a Flask-like src/ layout, a real venv made
with ``python -m venv`` holding a package, jedi-language-server answering through ``arbor lsp``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ide.cli import main
from ide.codeintel.lsp.environment import extra_paths, python_environment
from ide.codeintel.lsp.pool import At, Location, LspPool
from ide.settings import LspServerSettings, LspSettings, load_settings
from ide.settings.projectenv import poetry_env_name, project_interpreter, venv_python

FLASK_APP = '''class Flask:
    """The flask object implements a WSGI application."""

    def __init__(self, import_name: str) -> None:
        self.import_name = import_name
'''
TEST_CONFIG = """import flask
import werkzeug

app = flask.Flask(__name__)
werkzeug.Headers()
"""
WERKZEUG = '''class Headers:
    """An object that stores some headers."""
'''


def make_venv(directory: Path, package: str, text: str) -> Path:
    """A real virtual environment (no pip: no network) with ``package`` placed in its site-packages."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(directory)], check=True, timeout=60)
    (site,) = directory.glob("lib/python*/site-packages")
    (site / package).mkdir()
    (site / package / "__init__.py").write_text(text)
    return site


@pytest.fixture
def flask_project(tmp_path: Path) -> Path:
    """Flask 3.0.3's shape: the package under src/, tests beside it importing it, and the project's own
    .venv holding werkzeug."""
    root = (tmp_path / "flask").resolve()
    (root / "src" / "flask").mkdir(parents=True)
    (root / "src" / "flask" / "__init__.py").write_text("from .app import Flask as Flask\n")
    (root / "src" / "flask" / "app.py").write_text(FLASK_APP)
    (root / "tests").mkdir()
    (root / "tests" / "test_config.py").write_text(TEST_CONFIG)
    (root / "pyproject.toml").write_text('[project]\nname = "Flask"\nversion = "3.0.3"\n')
    make_venv(root / ".venv", "werkzeug", WERKZEUG)
    return root


def test_arbor_lsp_finds_flask_in_src_and_werkzeug_in_the_trusted_venv(
    flask_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = flask_project
    assert main(["trust", str(root)]) == 0
    trusted = capsys.readouterr().out
    assert f'lsp.python_interpreter = "{root / ".venv" / "bin" / "python"}"' in trusted
    assert f"runs: {root / '.venv' / 'bin' / 'python'}" in trusted

    assert main(["lsp", str(root), "definition", "tests/test_config.py:4:13"]) == 0
    out, err = capsys.readouterr()
    assert out == f"{root / 'src' / 'flask' / 'app.py'}:1:7\n"
    assert f"python interpreter: {root / '.venv' / 'bin' / 'python'}" in err
    assert "set by the workspace's .venv (trusted)" in err
    assert "extra import paths: src\n" in err

    assert main(["lsp", str(root), "definition", "tests/test_config.py:5:10", "--json"]) == 0
    (found,) = json.loads(capsys.readouterr().out)
    assert found["path"].startswith(str(root / ".venv" / "lib"))
    assert found["path"].endswith("site-packages/werkzeug/__init__.py") and found["line"] == 1


def test_an_untrusted_workspace_venv_is_not_run_and_doctor_says_so(
    flask_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = flask_project
    resolved = load_settings(root)
    assert resolved.settings.lsp.python_interpreter is None
    (held,) = resolved.held_back
    assert held.key == "lsp.python_interpreter" and held.source == "the workspace's .venv"

    main(["lsp", str(root), "definition", "tests/test_config.py:5:10", "--json"])
    out, err = capsys.readouterr()
    assert all(not place["path"].startswith(str(root / ".venv")) for place in json.loads(out))
    assert f"not used until you trust the workspace: {root / '.venv' / 'bin' / 'python'}" in err
    assert f"arbor trust {root}" in err

    from ide.doctor import run_doctor

    class Out:
        text = ""

        def write(self, chunk: str) -> None:
            self.text += chunk

        def writelines(self, lines: list[str]) -> None:
            self.text += "".join(lines)

    report = Out()
    run_doctor(resolved, report)  # type: ignore[arg-type]
    section = report.text.split("Python language server environment\n")[1].split("\n\n")[0]
    assert "python interpreter: the language server's default" in section
    assert "extra import paths: src" in section
    assert "not used until you trust the workspace" in section


async def test_a_src_layout_and_a_configured_interpreter_outside_the_workspace(tmp_path: Path) -> None:
    """No venv in the workspace: src/ is found by itself, and lsp.python_interpreter (the user's setting)
    may name an environment anywhere; a name only that environment has is found in it."""
    root = (tmp_path / "proj").resolve()
    (root / "src" / "arbor_srcdemo").mkdir(parents=True)
    (root / "src" / "arbor_srcdemo" / "__init__.py").write_text("def make_app():\n    return 1\n")
    (root / "main.py").write_text(
        "import arbor_srcdemo\nimport arbor_envonly\n\narbor_srcdemo.make_app()\narbor_envonly.Thing()\n"
    )
    site = make_venv(tmp_path / "elsewhere-env", "arbor_envonly", "class Thing:\n    pass\n")
    settings = LspSettings(python_interpreter=str(tmp_path / "elsewhere-env"))
    environment = python_environment(root, settings)
    assert environment.interpreter == venv_python(tmp_path / "elsewhere-env")
    assert environment.extra_paths == (root / "src",)
    pool = LspPool(settings)
    try:
        assert await pool.definition(At(root, root / "main.py", 4, 16)) == [
            Location(root / "src" / "arbor_srcdemo" / "__init__.py", 1, 5)
        ]
        assert await pool.definition(At(root, root / "main.py", 5, 16)) == [
            Location(site / "arbor_envonly" / "__init__.py", 1, 7)
        ]
    finally:
        await pool.close()


@pytest.mark.parametrize("name", ["pyright", "basedpyright"])
async def test_pyright_is_told_the_interpreter_and_paths_through_workspace_configuration(
    name: str, tmp_path: Path
) -> None:
    root = (tmp_path / "proj").resolve()
    (root / "lib" / "pkg").mkdir(parents=True)
    (root / "lib" / "pkg" / "__init__.py").write_text("")
    (root / "app.py").write_text("import pkg\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "pyproject.toml").write_text(
        f'[tool.pyright]\nextraPaths = ["lib", "{outside}", "../outside"]\n'
    )  # the repository's paths count only inside the workspace
    log = tmp_path / "config.json"
    script = Path(__file__).parents[1] / "support" / "config_lsp.py"
    settings = LspSettings(
        python=name,
        python_interpreter=sys.executable,
        servers={name: LspServerSettings(command=[sys.executable, str(script), str(log)])},
    )
    pool = LspPool(settings)
    try:
        assert await pool.definition(At(root, root / "app.py", 1, 8)) == []
    finally:
        await pool.close()
    answers = json.loads(log.read_text())
    lib = str(root / "lib")
    assert answers["python"] == {"pythonPath": sys.executable, "analysis": {"extraPaths": [lib]}}
    assert answers["python.analysis"] == {"extraPaths": [lib]}
    own = {"extraPaths": [lib]} if name == "basedpyright" else None
    assert answers["basedpyright.analysis"] == own


def test_the_conventions_other_tools_leave_are_read_not_run(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    assert project_interpreter(root, {}) is None

    def fake_env(directory: Path) -> Path:
        python = venv_python(directory)
        python.parent.mkdir(parents=True)
        python.symlink_to(sys.executable)
        return python

    conda = fake_env(tmp_path / "conda" / "envs" / "shop")
    (tmp_path / "home" / ".conda").mkdir(parents=True)
    (tmp_path / "home" / ".conda" / "environments.txt").write_text(
        f"{tmp_path / 'conda'}\n{conda.parents[1]}\n"
    )
    (root / "environment.yml").write_text("name: shop\ndependencies:\n  - python=3.11\n")
    found = project_interpreter(root, {"HOME": str(tmp_path / "home")})
    assert found is not None and found.path == conda and "conda environment 'shop'" in found.convention

    (root / "pyproject.toml").write_text('[tool.poetry]\nname = "Shop App"\n')
    (root / "poetry.lock").write_text("")
    cache = tmp_path / "poetry"
    poetry = fake_env(cache / f"{poetry_env_name('Shop App', root)}-py3.11")
    assert poetry_env_name("Shop App", root).startswith("shop_app-")
    found = project_interpreter(root, {"POETRY_VIRTUALENVS_PATH": str(cache)})
    assert found is not None and found.path == poetry

    pyright = fake_env(root / "envs" / "dev")
    (root / "pyproject.toml").write_text('[tool.pyright]\nvenvPath = "envs"\nvenv = "dev"\n')
    assert project_interpreter(root, {}).path == pyright  # type: ignore[union-attr]

    (root / ".pdm-python").write_text(f"{sys.executable}\n")
    assert project_interpreter(root, {}).path == Path(sys.executable)  # type: ignore[union-attr]

    venv = fake_env(root / "venv")
    (root / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert project_interpreter(root, {}).path == venv  # type: ignore[union-attr]


def test_extra_paths_from_the_repository_stay_inside_it(tmp_path: Path) -> None:
    root = (tmp_path / "proj").resolve()
    for place in ("src/pkg", "lib", "code"):
        (root / place).mkdir(parents=True)
    (root / "src" / "pkg" / "__init__.py").write_text("")
    (tmp_path / "secret").mkdir()
    (root / "escape").symlink_to(tmp_path / "secret")
    (root / "pyproject.toml").write_text(
        '[tool.setuptools.packages.find]\nwhere = ["lib", "escape", "/etc"]\n'
        '[tool.poetry]\npackages = [{ include = "x", from = "code" }]\n'
    )
    user = LspSettings(extra_paths=["vendor", str(tmp_path / "secret")])
    (root / "vendor").mkdir()
    assert extra_paths(root, user) == (
        root / "vendor",
        tmp_path / "secret",
        root / "src",
        root / "lib",
        root / "code",
    )
    (root / "src" / "__init__.py").write_text("")  # src is itself a package: not a src/ layout
    assert root / "src" not in extra_paths(root, LspSettings())


def test_the_variables_of_an_activated_environment_are_used(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    python = venv_python(tmp_path / "active")
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)
    found = python_environment(root, LspSettings(), {"VIRTUAL_ENV": str(tmp_path / "active")})
    assert (found.interpreter, found.source) == (python, "VIRTUAL_ENV")
    own = python_environment(root, LspSettings(), {"VIRTUAL_ENV": sys.prefix})
    assert own.interpreter is None and own.source == "no project environment found"
    missing = python_environment(root, LspSettings(python_interpreter="nowhere/python"), {})
    assert missing.interpreter is None and "is not a Python interpreter" in (missing.problem or "")
