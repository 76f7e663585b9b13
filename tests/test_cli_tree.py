"""`arbor tree list` and `arbor run --from RUN:NODE` from outside: a headless run's tree listed, then
continued from its middle node with a hint — the model asked with that node's path and the hint, the printed
diff the node's changes plus the new ones. For a ReAct run, and for a LATS run (continued in LATS: the node
the new search's root)."""

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
from tests.support.git import git
from tests.support.lats_script import EDIT_HI, GREP, LIST, READ, answer, evaluate, expand, lesson
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


LATS_TASK = "Say hi instead of hello"
README_HEY = {"path": "README.md", "old_text": "Says hello.", "new_text": "Says hey."}
LATS_RUN = [
    EDIT_HI,  # n2
    READ,  # n3
    evaluate(9),
    evaluate(0),
    LIST,  # n4 under n2: the selection goes on from the edit (9 against 0)
    GREP,  # n5 under n2
    evaluate(9),
    evaluate(2),
    expand("edit_file", README_HEY),  # n6 under n4
    answer("The greeting says Hi."),  # n7 under n4: under the bar, a lesson
    evaluate(9),
    evaluate(5),
    lesson("Check the README too."),
    answer("The greeting and the README now say Hi and hey."),  # n8 under n6: the solution
    answer("Greeting and README changed."),  # n9 under n6
    evaluate(9, solution=True),
    evaluate(8, solution=True),
]
"""With expansion width 2, beam 1 and no exploration bonus (the best-valued child is taken): n1 → (n2 edit
the greeting, n3 read); n2 → (n4 list, n5 grep); n4 → (n6 edit the README to "hey", n7 answer); n6 → two
answers, n8 the solution. n4 is the middle node continued from: its path is the greeting's edit then the
listing; its branch holds the greeting alone, while the run's result (the session's pending changes) also
says "hey"."""
LATS_CONTINUATION = [
    expand("edit_file", README_EDIT),  # under the new root (n4's copy)
    evaluate(7),
    answer("Done: greet and the README say hi."),
    evaluate(9, solution=True),
]
"""The continuation, one candidate per expansion (width 1: the model server answers in arrival order)."""


def test_a_lats_run_is_continued_from_its_middle_node_from_outside(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    workspace = str(git_workspace)
    search = {
        "ARBOR_LATS_EXPANSION_WIDTH": "2",
        "ARBOR_LATS_BEAM_WIDTH": "1",
        "ARBOR_LATS_EXPLORATION_CONSTANT": "0",
    }
    script = write_script(LATS_RUN)
    scripted = {"ARBOR_MODEL": f"scripted:{script}", **search}
    first = arbor("run", "-w", workspace, "--mode", "lats", LATS_TASK, env=scripted)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("The greeting and the README now say Hi and hey.")
    assert "+++ b/pkg/greet.py" in first.stdout and "+Says hey." in first.stdout

    runs = arbor("tree", "list", "-w", workspace)
    assert runs.returncode == 0, runs.stderr
    _header, line = runs.stdout.splitlines()
    run_id, architecture, nodes, finished, *label = line.split("  ")
    assert (architecture, nodes, finished, label) == ("lats", "9 nodes", "finished", [LATS_TASK])
    listed = arbor("tree", "list", "-w", workspace, run_id[:8])
    assert listed.returncode == 0, listed.stderr
    by_label = {line.split("  ")[-1].strip(): line for line in listed.stdout.splitlines()[3:]}
    middle = by_label["List pkg"]  # on the best path, with its branch's changes, and children below it
    assert middle.startswith("* ") and "±" in middle
    node_id = middle.split()[1]
    assert node_id == "n4"

    hint = "Say hi in the README too."
    with FakeOpenAI(LATS_CONTINUATION) as server:
        env = {**openai_env(server), **search, "ARBOR_LATS_EXPANSION_WIDTH": "1"}
        continued = arbor("run", "-w", workspace, "--from", f"{run_id[:8]}:{node_id}", hint, env=env)
    assert continued.returncode == 0, continued.stderr
    assert f"[continue] run {run_id} from {node_id} (3 steps) in lats mode" in continued.stderr
    assert len(server.bodies) == len(LATS_CONTINUATION)
    # The first request: the task, exactly n4's path (the edit, the listing, what each saw), the hint.
    first_request = server.bodies[0]
    assert first_request["messages"][0]["content"].startswith(
        "You are Arbor, a coding agent. You are one branch"
    )
    asked = conversation(first_request)
    assert [role for role, _ in asked] == ["user", "assistant", "tool", "assistant", "tool", "user"]
    assert asked[0] == ("user", LATS_TASK)
    assert "edit_file(" in asked[1][1] and '"new_text": "Hi"' in asked[1][1]
    assert 'list_dir({"path": "pkg"})' in asked[3][1] and "greet.py" in asked[4][1]
    assert asked[-1] == ("user", f"{HINT_PREFIX}\n{hint}")
    said = str(asked)
    assert "grep(" not in said and "read_file(" not in said  # not the siblings on the way
    assert "hey" not in said and "The greeting says Hi." not in said  # nor what was tried below it
    # The printed diff: n4's branch (the greeting) plus the continuation's edit (the README); nothing written.
    out = continued.stdout
    assert out.startswith("Done: greet and the README say hi.")
    assert "+++ b/pkg/greet.py" in out and '+    return f"Hi, {name}!"' in out
    assert "+++ b/README.md" in out and "+Says hi." in out and "hey" not in out
    assert git(git_workspace, "status", "--porcelain") == ""  # printed, never written

    again = arbor("tree", "list", "-w", workspace)
    assert again.returncode == 0, again.stderr
    new_run = again.stdout.splitlines()[2].split("  ")
    # In LATS, n4 the new root with its subtree kept as explored (n6–n9), plus the new edit and answer.
    assert new_run[1:5] == ["lats", "7 nodes", "finished", f"from {run_id}:{node_id}"]
