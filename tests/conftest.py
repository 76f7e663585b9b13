"""Every test runs with its own config and data dirs, and never sees the developer's Arbor settings."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.git import GIT_IDENTITY


def _cache_bytecode() -> None:
    """Bytecode cached, as an installed Arbor has it, and kept out of every source tree: the backends,
    CLIs and language servers the tests start, and the workers themselves, read and write it under one
    cache directory (``PYTHONPYCACHEPREFIX``). With ``PYTHONDONTWRITEBYTECODE`` set (as on the CI
    machines) every ``arbor acp`` a test spawned compiled all of ``ide`` from source again (0.25 s of CPU
    each), and each worker recompiled every test module; without the prefix, a run would leave
    ``__pycache__`` folders in the workspaces the tests build and review. Runs in the controller before
    the xdist workers start, so they and everything they spawn inherit it (docs/traps.md)."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    prefix = str(Path(tempfile.gettempdir()) / f"arbor-tests-pycache-{uid}")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    sys.dont_write_bytecode = False
    sys.pycache_prefix = prefix


_cache_bytecode()

UNUSED_PLUGINS = ("langsmith_plugin", "anyio", "platformdirs", "benchmark")
"""pytest plugins installed beside Arbor's dependencies (langsmith comes with LangChain) that no test uses."""
WORKER_ONLY_PLUGINS = ("pytest-qt", "hypothesispytest")
"""Plugins the suite's own tests use and the test commands they have Arbor run never do: pytest-qt imports
PySide6 to choose a Qt binding, hypothesis imports itself for its summary."""


def _skip_unused_plugins() -> None:
    """Every pytest the suite starts loads every installed plugin: the workers, and the test commands the
    tests have Arbor run in scratch workspaces (``python -m pytest -q``, which must run as the user's
    would; the variable reaches them through ``ARBOR_PASS_ENV``, :func:`isolated_env`). Blocked through
    ``PYTEST_ADDOPTS``, which pytest reads before it imports this file: set here, it reaches only this
    process's children. In the controller that
    is the workers, which skip :data:`UNUSED_PLUGINS` (~1 s of a 2.3 s trivial run, langsmith's 0.8 s); in
    a worker, the test commands, which skip :data:`WORKER_ONLY_PLUGINS` too (1.5 s → 0.45 s). Eval task
    checks drop the variable and load no plugin at all."""
    names = UNUSED_PLUGINS + (WORKER_ONLY_PLUGINS if os.environ.get("PYTEST_XDIST_WORKER") else ())
    options = os.environ.get("PYTEST_ADDOPTS", "")
    blocked = [f"-p no:{name}" for name in names if f"-p no:{name}" not in options]
    os.environ["PYTEST_ADDOPTS"] = " ".join([options, *blocked]).strip()


_skip_unused_plugins()

# Every test offscreen, whichever file runs first: tests/support/window.py sets it for the window tests, but
# a file that uses pytest-qt without it (tests/security/test_meta_files.py, run alone) made Qt abort the
# whole run on a machine without a display ("Fatal Python error: Aborted" in pytest-qt's qapp).
os.environ["QT_QPA_PLATFORM"] = "offscreen"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files holding a ``long`` test first in the collection. The workers (``-n 3 --dist loadfile``) take
    files with the most tests first (xdist's ``--loadscope-reorder``, on by default): this order only
    breaks its ties, so the soak (one test) would start among the last files (:data:`FIRST_UNITS` hands it
    out first). Taking every long file first instead (the reorder off) ran them side by side at the start,
    slowing each other: 485 and 500 s against 481 s (docs/traps.md)."""
    first = {item.path for item in items if item.get_closest_marker("long")}
    items.sort(key=lambda item: item.path not in first)  # stable: the order inside each file is kept


REAL_MODEL_TESTS = "tests/realmodel/"
FIRST_UNITS = ("tests/reliability/test_soak.py",)
"""Handed out before every other file: the soak is one 45-50 s test, which xdist's order (most tests first)
started last, alone on one worker while the other had nothing left: 365 → 415 s, the other worker done at
388 s, in a run of 428 s. Two back-to-back pairs of whole runs were 438 → 370 s and 439 → 451 s: within the
machine's noise, the soak itself slower next to the big files at the start (48 → 55 s)."""


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile``, with every file of tests/realmodel/ one unit on one worker: each starts a
    llama-server on both cores, whose threads spin while they wait for each other, so two at once (one per
    worker) ran 10-25x slower (204 s for a 15 s test) and starved the other worker's timing tests."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class OneRealModelAtATime(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return REAL_MODEL_TESTS if scope.startswith(REAL_MODEL_TESTS) else scope

        def _assign_work_unit(self, node: Any) -> None:
            for scope in FIRST_UNITS:  # to the front before the first unit is handed out, once
                if scope in self.workqueue and not self.assigned_work.get(node):
                    self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return OneRealModelAtATime(config, log)


FORK_SERVER_ENV = "TESTS_FORK_SERVER"
FORK_SERVER = Path(__file__).parent / "support" / "forkserver"


@pytest.fixture(scope="session", autouse=True)
def fork_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Each worker's ``python -m ide ...`` children start as forks of one server with Arbor imported
    (tests/support/forkserver; a backend's imports were ~1.6 s of CPU, the suite starts hundreds). What
    they run, and how, is unchanged; ``TESTS_FORK_SERVER=0`` turns it off, and a test marked
    ``own_interpreter`` starts its own interpreters."""
    if os.environ.get(FORK_SERVER_ENV) == "0" or sys.platform != "linux":
        yield
        return
    folder = tempfile.mkdtemp(prefix="arbor-fork-")  # short: a socket path has ~100 bytes
    socket_path = os.path.join(folder, "s")
    python_path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(FORK_SERVER), *filter(None, [python_path])])
    # What it forked and refused, and why, is kept with the run's temp dirs (pytest keeps the last three).
    with open(tmp_path_factory.getbasetemp() / "fork-server.log", "wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-P", str(FORK_SERVER / "server.py"), socket_path],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=os.environ.copy(),
        )
    os.environ[FORK_SERVER_ENV] = socket_path  # until it listens, callers start as usual
    try:
        yield
    finally:
        os.environ.pop(FORK_SERVER_ENV, None)
        if python_path is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = python_path
        assert server.stdin is not None
        server.stdin.close()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(autouse=True)
def own_interpreter(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.get_closest_marker("own_interpreter"):
        monkeypatch.delenv(FORK_SERVER_ENV, raising=False)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("ARBOR_") or name == "OLLAMA_HOST":
            monkeypatch.delenv(name)
    monkeypatch.setenv("ARBOR_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("ARBOR_DATA_DIR", str(tmp_path / "data"))
    # What Arbor starts for someone else (test runs, language servers, other agents) gets an allow-list of
    # its environment (ide/childenv.py); these reach them as a user's ARBOR_PASS_ENV passes them: the
    # plugins blocked above and the fork server (its socket, its sitecustomize on PYTHONPATH, and the
    # PYTHON* variables it compares with its own before it forks).
    python = sorted(name for name in os.environ if name.startswith("PYTHON"))
    monkeypatch.setenv("ARBOR_PASS_ENV", " ".join(["PYTEST_ADDOPTS", FORK_SERVER_ENV, *python]))
    # Port 9 (discard) on loopback: a test that forgets to pick a model never reaches a real server.
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    # Commits made by tests (and by Arbor's Apply in them) must not depend on the machine's git config.
    for name, value in GIT_IDENTITY.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def git_workspace(tmp_path: Path) -> Path:
    """A small real git repository with one commit and one ignored file."""
    root = tmp_path / "workspace"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "greet.py").write_text('def greet(name):\n    return f"Hello, {name}!"\n')
    (root / "README.md").write_text("# demo\n\nSays hello.\n")
    (root / ".gitignore").write_text("*.log\n")
    (root / "debug.log").write_text("ignored\n")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True, env=env)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=root, check=True, env=env)
    return root


@pytest.fixture
def user_config() -> Callable[[str], Path]:
    """Write the user's own config.toml (in the test's isolated config dir): settings a repository's
    .arbor/config.toml may only set once the workspace is trusted (commands, hosts) belong here."""

    def write(text: str) -> Path:
        path = Path(os.environ["ARBOR_CONFIG_DIR"]) / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    return write


@pytest.fixture
def write_script(tmp_path: Path) -> Callable[[list[dict[str, Any]]], Path]:
    """Write a scripted-model JSONL file and return its path."""
    counter = iter(range(1000))

    def write(lines: list[dict[str, Any]]) -> Path:
        path = tmp_path / f"script{next(counter)}.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        return path

    return write
