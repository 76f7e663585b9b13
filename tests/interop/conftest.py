"""Peers from the npm registry (tests/interop/package.json, versions pinned by package-lock.json).

``.ci/run`` installs them with ``npm install`` (``npm ci`` refuses the lock: Qwen Code's optional packages for
other platforms are not in the registry here); run by hand, the first test here installs them the same way.
Without Node.js these tests are skipped, saying so.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
NODE_MODULES = HERE / "node_modules"


@pytest.fixture(scope="session")
def node_peers() -> Path:
    """The folder whose node_modules holds the pinned peers; installed with ``npm install`` when missing."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("Node.js and npm are needed for the interop tests (apt-get install nodejs npm)")
    # The parallel workers may both get here first: one installs while the other waits on the lock.
    with open(HERE / ".npm-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (NODE_MODULES / ".package-lock.json").exists():
            subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=HERE,
                check=True,
                capture_output=True,
                timeout=600,
            )
    return HERE
