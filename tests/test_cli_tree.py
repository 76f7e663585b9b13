"""`arbor tree list` and `arbor run --from RUN:NODE` from outside: a headless run's tree listed, then
continued from its middle node with a hint — the model asked with that node's path and the hint, the printed
diff the node's changes plus the new ones."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ide.search.steer import HINT_PREFIX
from tests.support.fake_openai import FakeOpenAI
from tests.support.steering import FAREWELL, GREET_EDIT, README_EDIT, calls, conversation, openai_env

ARBOR = [sys.executable, "-m", "ide"]

pytestmark = pytest.mark.timeout(120)


def arbor(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*ARBOR, *args],
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_a_headless_run_is_listed_and_continued_from_its_middle_node(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    script = write_script(
        [
            calls(("edit_file", GREET_EDIT), content="I'll change the greeting first."),
            calls(("create_file", FAREWELL), content="Now a farewell."),
            {"content": "Done."},
        ]
    )
    workspace = str(git_workspace)
    first = arbor("run", "-w", workspace, "Make it friendlier", env={"ARBOR_MODEL": f"scripted:{script}"})
    assert first.returncode == 0, first.stderr

    runs = arbor("tree", "list", "-w", workspace)
    assert runs.returncode == 0, runs.stderr
    header, line = runs.stdout.splitlines()
    assert header.startswith("session ") and header.endswith(": 1 run")
    run_id, architecture, nodes, finished, *label = line.split("  ")
    assert (architecture, nodes, finished, label) == ("react", "7 nodes", "finished", ["Make it friendlier"])

    listed = arbor("tree", "list", "-w", workspace, run_id[:8])
    assert listed.returncode == 0, listed.stderr
    node_lines = listed.stdout.splitlines()[3:]
    assert len(node_lines) == 7 and all(line.startswith("* ") for line in node_lines)  # one chain
    [edit, _create] = [line for line in node_lines if " action " in line]
    assert "±" in edit
    node_id = edit.split()[1]

    with FakeOpenAI([calls(("edit_file", README_EDIT)), {"content": "The README says hi too."}]) as server:
        hint = "No farewell; the README should say hi."
        continued = arbor(
            "run", "-w", workspace, "--from", f"{run_id[:8]}:{node_id}", hint, env=openai_env(server)
        )
    assert continued.returncode == 0, continued.stderr
    assert f"[continue] run {run_id} from {node_id}" in continued.stderr
    asked = conversation(server.bodies[0])
    assert asked[0] == ("user", "Make it friendlier") and asked[-1] == ("user", f"{HINT_PREFIX}\n{hint}")
    assert [role for role, _ in asked] == ["user", "assistant", "assistant", "tool", "user"]
    assert "farewell" not in str(asked[:-1])  # (the memory's system message may recall the first run)
    out = continued.stdout
    assert out.startswith("The README says hi too.")
    assert "+++ b/pkg/greet.py" in out and "+++ b/README.md" in out and "farewell" not in out
    assert not (git_workspace / "pkg" / "farewell.py").exists()  # printed, never written

    again = arbor("tree", "list", "-w", workspace)
    assert again.stdout.splitlines()[2].split("  ")[4] == f"from {run_id}:{node_id}"
