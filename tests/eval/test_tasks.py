"""The task set of ``arbor eval`` (ide/eval/tasks.py, resources/eval/): loading, building, checking, and the
shipped set verified task by task — every bug or feature fails on its built workspace and passes after its
reference, every question's regex accepts its sample answer. Real packages, git, pytest subprocesses."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from ide.eval.tasks import (
    INSTALL_HINT,
    EvalTask,
    TaskError,
    apply_reference,
    build_workspace,
    load_task,
    load_tasks,
    run_check,
    tasks_dir,
    verify_task,
)

REPO = Path(__file__).resolve().parents[2]
SHIPPED = load_tasks()
MI_VERSION = importlib.metadata.version("more-itertools")

TASK = """\
kind: bug
difficulty: easy
summary: "first() is broken"
package: {name: more-itertools, version: "%(version)s", import: more_itertools}
files: [more_itertools/__init__.py, more_itertools/more.py, more_itertools/recipes.py]
mutation:
  - {path: more_itertools/more.py, find: "%(find)s", replace: "%(replace)s"}
add:
  tests/test_task.py: |
    import more_itertools
    from more_itertools import first


    def test_first():
        assert first([3, 4]) == 3


    def test_the_workspace_copy_is_imported():
        import os
        assert more_itertools.__file__.startswith(os.getcwd())
prompt: "first([3, 4]) should be 3"
check: [python, -m, pytest, -q, -p, "no:cacheprovider", tests/test_task.py]
reference: |
  --- a/more_itertools/more.py
  +++ b/more_itertools/more.py
  @@ -1,1 +1,1 @@
  -x
  +y
"""
CHECK_LINE = 'check: [python, -m, pytest, -q, -p, "no:cacheprovider", tests/test_task.py]'
FIRST_FIND = "    for item in iterable:\\n        return item\\n    if default is _marker:"
FIRST_BUG = "    for item in iterable:\\n        return default\\n    if default is _marker:"


def write_task(directory: Path, name: str = "t-first", **fields: str) -> Path:
    values = {"version": MI_VERSION, "find": FIRST_FIND, "replace": FIRST_BUG, **fields}
    path = directory / f"{name}.yaml"
    directory.mkdir(parents=True, exist_ok=True)
    path.write_text(TASK % values)
    return path


def head(workspace: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=workspace, capture_output=True, text=True, check=True
    ).stdout.strip()


# --- the shipped set -----------------------------------------------------------------------------------


def test_the_shipped_set_is_large_and_mixed() -> None:
    kinds = [t.kind for t in SHIPPED]
    assert len(SHIPPED) >= 30
    assert kinds.count("bug") >= 20 and kinds.count("feature") >= 5 and kinds.count("question") >= 5
    assert {t.difficulty for t in SHIPPED} == {"easy", "medium", "hard"}
    assert len({t.package.name for t in SHIPPED}) >= 4
    assert [t.id for t in SHIPPED] == sorted({t.id for t in SHIPPED})
    for task in SHIPPED:
        assert task.source.parent == tasks_dir()
        if task.kind != "question":
            # The agent sees the prompt, never the reference.
            assert task.reference and task.reference.strip() not in task.prompt
            assert "reference" not in task.prompt.lower()


def test_the_pins_match_the_eval_extra() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    pins = {f"{t.package.name}=={t.package.version}" for t in SHIPPED}
    assert pins == set(project["eval"])
    assert pins <= set(project["test"])


def test_tasks_dir_resolves_in_the_checkout_and_is_package_data() -> None:
    # A wheel carries resources/eval as the package ide.eval.tasks_data (tasks_dir() looks there first).
    assert tasks_dir().is_dir()
    assert tasks_dir().resolve() == (REPO / "resources" / "eval" / "tasks").resolve()
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert pyproject["package-dir"]["ide.eval.tasks_data"] == "resources/eval"
    assert "tasks/*.yaml" in pyproject["package-data"]["ide.eval.tasks_data"]


@pytest.mark.parametrize("task", SHIPPED, ids=[t.id for t in SHIPPED])
def test_every_shipped_task_is_honest(task: EvalTask, tmp_path: Path) -> None:
    result = verify_task(task, tmp_path / "ws", timeout_s=60)
    assert result.ok, result.problems


def test_the_verification_script_prints_a_json_summary() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "eval_tasks_check.py"), "--tasks", "q-*,mi-exactly-*"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["tasks"] == summary["ok"] == 6
    assert summary["by_kind"] == {"question": 5, "bug": 1}
    assert all(r["ok"] and r["seconds"] > 0 for r in summary["results"])


# --- loading -------------------------------------------------------------------------------------------


def test_load_tasks_globs_on_ids(tmp_path: Path) -> None:
    for name in ("b-two", "a-one", "c-three"):
        write_task(tmp_path, name)
    assert [t.id for t in load_tasks("*", tmp_path)] == ["a-one", "b-two", "c-three"]
    assert [t.id for t in load_tasks("c-*,a-*", tmp_path)] == ["a-one", "c-three"]
    assert load_tasks("zzz*", tmp_path) == []
    with pytest.raises(TaskError, match="no such task directory"):
        load_tasks("*", tmp_path / "missing")


def test_bad_yaml_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text('kind: bug\ndifficulty: easy\nsummary: "unterminated\nprompt: x\n')
    with pytest.raises(TaskError) as caught:
        load_task(path)
    assert str(caught.value).startswith(f"{path}:")
    line = int(str(caught.value)[len(str(path)) + 1 :].split(":")[0])
    assert line >= 3
    assert "not valid YAML" in str(caught.value)


def test_a_field_given_twice_is_an_error(tmp_path: Path) -> None:
    path = write_task(tmp_path)
    path.write_text(path.read_text() + "prompt: a second prompt\n")
    with pytest.raises(TaskError, match=r"the key 'prompt' is given twice") as caught:
        load_task(path)
    assert str(caught.value).startswith(f"{path}:{len(path.read_text().splitlines())}:")


def test_unknown_field_is_an_error(tmp_path: Path) -> None:
    path = write_task(tmp_path)
    path.write_text(path.read_text() + "hint: the fix is in more.py\n")
    with pytest.raises(TaskError, match=r"hint: unknown field") as caught:
        load_task(path)
    assert str(path) in str(caught.value)


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda t: t.replace("kind: bug", "kind: chore"), "kind"),
        (lambda t: t.replace("difficulty: easy", "difficulty: trivial"), "difficulty"),
        (lambda t: t.split("reference: |")[0], "needs `reference`"),
        (lambda t: t.replace("  tests/test_task.py: |", "  ../outside.py: |"), "not a relative path"),
        (lambda t: t.replace("{path: more_itertools/more.py", "{path: /etc/passwd"), "not a relative path"),
        (lambda t: t.replace("{path: more_itertools/more.py", "{path: .git/config"), "inside .git"),
        (
            lambda t: t.replace(CHECK_LINE, "check: []"),
            "check",
        ),
        (lambda t: t.replace("import: more_itertools}", "import: more-itertools}"), "import package name"),
        (lambda t: "- just\n- a list\n", "a task is a mapping"),
        (lambda t: t + "id: other\n", "id: not a task field"),
    ],
)
def test_invalid_task_files_are_refused(tmp_path: Path, edit, problem: str) -> None:
    path = write_task(tmp_path)
    path.write_text(edit(path.read_text()))
    with pytest.raises(TaskError, match=problem.replace("[", r"\[")) as caught:
        load_task(path)
    assert str(caught.value).startswith(str(path))


def test_questions_need_a_compiling_answer_and_a_sample(tmp_path: Path) -> None:
    base = (
        "kind: question\ndifficulty: easy\nsummary: s\nprompt: p\n"
        'package: {name: more-itertools, version: "1", import: more_itertools}\n'
    )
    cases = {
        "": "needs `answer`",
        "answer: 'more\\.py'\n": "needs `sample_answer`",
        "answer: '(unclosed'\nsample_answer: x\n": "not a regular expression",
    }
    for extra, problem in cases.items():
        path = tmp_path / "q.yaml"
        path.write_text(base + extra)
        with pytest.raises(TaskError, match=problem.replace("`", ".")):
            load_task(path)


# --- building ------------------------------------------------------------------------------------------


def test_building_is_byte_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    task = load_task(write_task(tmp_path / "tasks"))
    build_workspace(task, tmp_path / "one")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Somebody Else")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2030-05-05T10:00:00+00:00")
    (tmp_path / "two").mkdir()  # an empty directory is fine too
    build_workspace(task, tmp_path / "two")
    assert head(tmp_path / "one") == head(tmp_path / "two")
    files = subprocess.run(
        ["git", "ls-files"], cwd=tmp_path / "one", capture_output=True, text=True, check=True
    ).stdout.split()
    assert files == [
        "more_itertools/__init__.py",
        "more_itertools/more.py",
        "more_itertools/recipes.py",
        "tests/test_task.py",
    ]
    assert (
        "return default\n    if default is _marker:" in (tmp_path / "one/more_itertools/more.py").read_text()
    )


def test_building_refuses_a_non_empty_destination(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path / "tasks"))
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "keep.txt").write_text("mine")
    with pytest.raises(TaskError, match="not an empty directory"):
        build_workspace(task, tmp_path / "ws")
    assert (tmp_path / "ws" / "keep.txt").read_text() == "mine"


@pytest.mark.parametrize(
    ("find", "count"),
    [("this text is nowhere in more.py", 0), ("    for item in iterable:\\n", None)],
)
def test_a_find_that_is_not_unique_names_the_task(tmp_path: Path, find: str, count: int | None) -> None:
    task = load_task(write_task(tmp_path / "tasks", "t-ambiguous", find=find, replace="x"))
    with pytest.raises(TaskError, match=r"task t-ambiguous: mutation 1 \(more_itertools/more.py\)") as caught:
        build_workspace(task, tmp_path / "ws")
    message = str(caught.value)
    assert "must occur exactly once" in message
    assert ("occurs 0 times" in message) == (count == 0)


def test_a_wrong_installed_version_says_how_to_install(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path / "tasks", version="0.0.1"))
    with pytest.raises(TaskError) as caught:
        build_workspace(task, tmp_path / "ws")
    assert f"needs more-itertools==0.0.1, but {MI_VERSION} is installed" in str(caught.value)
    assert INSTALL_HINT in str(caught.value)
    assert not (tmp_path / "ws").exists()


def test_a_package_that_is_not_installed_says_how_to_install(tmp_path: Path) -> None:
    path = write_task(tmp_path / "tasks")
    path.write_text(path.read_text().replace("name: more-itertools", "name: arbor-no-such-dist"))
    with pytest.raises(TaskError, match=r"arbor-no-such-dist==.* is not installed; run pip install"):
        build_workspace(load_task(path), tmp_path / "ws")


def test_files_must_exist_in_the_distribution(tmp_path: Path) -> None:
    path = write_task(tmp_path / "tasks")
    path.write_text(path.read_text().replace("more_itertools/recipes.py]", "more_itertools/nothing.py]"))
    with pytest.raises(TaskError, match=r"not in more-itertools .*: more_itertools/nothing.py"):
        build_workspace(load_task(path), tmp_path / "ws")


# --- checking ------------------------------------------------------------------------------------------


def test_the_workspace_copy_shadows_the_installed_package(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path / "tasks", replace=FIRST_FIND))  # no bug: both tests pass
    build_workspace(task, tmp_path / "ws")
    result = run_check(task, tmp_path / "ws")
    assert result.passed, result.output
    assert "2 passed" in result.output
    # ... and with the bug, the copy (not the installed package) is what fails.
    buggy = load_task(write_task(tmp_path / "tasks2"))
    build_workspace(buggy, tmp_path / "ws2")
    failed = run_check(buggy, tmp_path / "ws2")
    assert not failed.passed
    assert "1 failed, 1 passed" in failed.output


def test_the_check_environment_drops_pythonpath(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_task(tmp_path / "tasks", replace=FIRST_FIND)
    probe = (
        "import os, sys, more_itertools; "
        "sys.exit(3 if 'PYTHONPATH' in os.environ "
        "else 4 if os.path.exists('more_itertools/__pycache__') else 0)"
    )
    text = path.read_text().replace(
        CHECK_LINE,
        f"check: [python, -c, {json.dumps(probe)}]",
    )
    path.write_text(text)
    task = load_task(path)
    build_workspace(task, tmp_path / "ws")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    assert run_check(task, tmp_path / "ws").passed


def test_a_hung_check_is_killed_with_its_children(tmp_path: Path) -> None:
    path = write_task(tmp_path / "tasks")
    # The grandchild inherits stdout: unless the whole process group dies, reading the output never ends.
    hang = (
        "import subprocess, sys; print('started', flush=True); "
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
        "import time; time.sleep(600)"
    )
    path.write_text(
        path.read_text().replace(
            CHECK_LINE,
            f"check: [python, -c, {json.dumps(hang)}]",
        )
    )
    task = load_task(path)
    build_workspace(task, tmp_path / "ws")
    started = time.monotonic()
    result = run_check(task, tmp_path / "ws", timeout_s=2)
    assert time.monotonic() - started < 30
    assert not result.passed
    assert "started" in result.output
    assert "timed out after 2 s" in result.output


def test_a_missing_program_is_a_failed_check_not_a_traceback(tmp_path: Path) -> None:
    path = write_task(tmp_path / "tasks")
    path.write_text(
        path.read_text().replace(
            CHECK_LINE,
            "check: [arbor-no-such-program-xyz]",
        )
    )
    task = load_task(path)
    build_workspace(task, tmp_path / "ws")
    result = run_check(task, tmp_path / "ws")
    assert not result.passed
    assert "could not start: arbor-no-such-program-xyz" in result.output


def test_an_edited_test_does_not_pass_the_check(tmp_path: Path) -> None:
    task = next(t for t in SHIPPED if t.id == "mi-exactly-n-extra")
    ws = tmp_path / "ws"
    build_workspace(task, ws)
    (ws / "tests" / "test_task.py").write_text("def test_nothing():\n    pass\n")
    assert not run_check(task, ws).passed
    assert "def test_nothing" not in (ws / "tests" / "test_task.py").read_text()
    apply_reference(task, ws)
    assert run_check(task, ws).passed


def test_a_question_is_checked_on_the_final_message(tmp_path: Path) -> None:
    task = next(t for t in SHIPPED if t.id == "q-mi-where-windowed")
    build_workspace(task, tmp_path / "ws")
    assert run_check(task, tmp_path / "ws", "It is in `more_itertools/more.py`.").passed
    wrong = run_check(task, tmp_path / "ws", "more_itertools/recipes.py, or maybe more_itertools/more.py")
    assert not wrong.passed
    assert "does not match" in wrong.output
    assert not run_check(task, tmp_path / "ws", "").passed


def test_a_reference_that_does_not_apply_is_a_task_error(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path / "tasks"))  # its reference edits a line "x" that is not there
    build_workspace(task, tmp_path / "ws")
    with pytest.raises(TaskError, match="task t-first: the reference does not apply"):
        apply_reference(task, tmp_path / "ws")
    verdict = verify_task(task, tmp_path / "ws2")
    assert not verdict.ok
    assert any("does not apply" in p for p in verdict.problems)


def test_verify_task_catches_a_task_that_needs_no_fix(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path / "tasks", replace=FIRST_FIND))  # the "bug" changes nothing
    verdict = verify_task(task, tmp_path / "ws")
    assert "the check passes on the built workspace (nothing to fix)" in verdict.problems
