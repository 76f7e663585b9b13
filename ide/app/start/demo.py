"""What the start page offers without a model server: the recorded sample tree, and the scripted demo turn
(the LATS sample's task on a throwaway git copy of its workspace, answered by its scripted model).

The sample ships with the source checkout (``resources/samples``), not in a wheel: :func:`sample_dir`
says where it is, or None.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from ide.gitsafe import run_git

SAMPLE_NAME = "lats-bugfix"
SAMPLE_TREE = f"{SAMPLE_NAME}.arbor-tree.jsonl"
DEMO_TASK = "mean() in stats.py returns the wrong value; fix it so check_stats.py passes"
DEMO_IDENTITY = ("-c", "user.name=Arbor demo", "-c", "user.email=demo@arbor.invalid")
NOT_SHIPPED = (
    "The recorded sample ships with Arbor's source checkout (resources/samples), not with this install."
)


def sample_dir(root: Path | None = None) -> Path | None:
    """``resources/samples`` of the checkout Arbor runs from (or of ``root``), if it holds the sample."""
    base = root if root is not None else Path(__file__).resolve().parents[3]
    samples = base / "resources" / "samples"
    if (samples / SAMPLE_TREE).is_file() and (samples / SAMPLE_NAME / "script.jsonl").is_file():
        return samples
    return None


def holds_sample_project(samples: Path, workspace: Path) -> bool:
    """Whether ``workspace`` holds the sample's project (its files by name): a copy the sample can be
    continued in, rather than in a demo window."""
    project = samples / SAMPLE_NAME / "workspace"
    names = [path.relative_to(project) for path in project.rglob("*") if path.is_file()]
    return bool(names) and all((workspace / name).is_file() for name in names)


def demo_workspace(samples: Path, root: Path) -> Path:
    """A git repository with one commit holding the sample's workspace, under ``root`` (blocking: git)."""
    target = root / "stats-project"
    shutil.copytree(samples / SAMPLE_NAME / "workspace", target)
    for args in (("init", "-q"), ("add", "-A"), (*DEMO_IDENTITY, "commit", "-qm", "Sample project")):
        run_git(target, *args, check=True, timeout=30)
    return target


def demo_env(samples: Path, root: Path) -> dict[str, str]:
    """The backend's environment for the demo: the sample's scripted model in LATS mode with its test
    command, and data and config dirs of its own under ``root`` (the user's are never touched)."""
    return {
        "ARBOR_MODEL": f"scripted:{samples / SAMPLE_NAME / 'script.jsonl'}",
        "ARBOR_AGENT_ARCHITECTURE": "lats",
        "ARBOR_LATS_EXPANSION_WIDTH": "3",
        "ARBOR_LATS_MAX_ITERATIONS": "4",
        "ARBOR_LATS_TEST_COMMAND": f"{sys.executable} check_stats.py",
        "ARBOR_DATA_DIR": str(root / "data"),
        "ARBOR_CONFIG_DIR": str(root / "config"),
    }
