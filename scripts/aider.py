"""Get real aider (``aider-chat`` from the package registry) into a virtual environment of its own, cached
per machine, for the tests that evaluate it as another agent (``arbor eval --agent``).

aider pins its many dependencies exactly (litellm, numpy, tree-sitter packs…), so it never goes into
Arbor's environment: it gets a venv under the user's cache dir (``ARBOR_PEERS_DIR`` moves it), made once
(about 30 s and 700 MB), then found in a second.

    python scripts/aider.py            # install what is missing, print {"aider": "/…/bin/aider"}
    python scripts/aider.py --check    # print the path if it is there; exit 1 (and say how) if not

tests/eval/test_aider.py uses it to find aider and skips, saying this command, when it is not there.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

PACKAGE = "aider-chat"
VERSION = "0.86.2"


def peers_dir() -> Path:
    """Where the peers' environments are kept: ``ARBOR_PEERS_DIR``, else the user's cache dir."""
    configured = os.environ.get("ARBOR_PEERS_DIR")
    if configured:
        return Path(configured)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("arbor")) / "peers"


def aider_path() -> Path:
    return peers_dir() / f"aider-{VERSION}" / "bin" / "aider"


def installed() -> Path | None:
    """The cached aider, if it is there and answers ``--version``."""
    path = aider_path()
    if not path.is_file():
        return None
    done = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=120, check=False)
    return path if done.returncode == 0 and VERSION in done.stdout else None


def install() -> Path:
    """Make the venv and install aider into it (a half-made one is removed first)."""
    home = aider_path().parents[1]
    shutil.rmtree(home, ignore_errors=True)
    venv.create(home, with_pip=True)
    python = home / "bin" / "python"
    command = [
        str(python),
        "-m",
        "pip",
        "install",
        "-q",
        "--disable-pip-version-check",
        f"{PACKAGE}=={VERSION}",
    ]
    done = subprocess.run(command, check=False)
    if done.returncode != 0:
        shutil.rmtree(home, ignore_errors=True)
        raise SystemExit(f"pip could not install {PACKAGE}=={VERSION} (exit {done.returncode})")
    found = installed()
    if found is None:
        raise SystemExit(f"{aider_path()} was installed but does not answer --version")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only say whether it is there")
    args = parser.parse_args(argv)
    found = installed()
    if found is None and args.check:
        sys.stderr.write(
            f"aider {VERSION} is not cached in {aider_path().parents[1]}: run python scripts/aider.py\n"
        )
        return 1
    print(json.dumps({"aider": str(found or install())}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
