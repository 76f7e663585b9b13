"""The task set of ``arbor eval``: load tasks, build a task's workspace, run its check.

A task (one YAML file in ``resources/eval/tasks/``, its stem the id) names a pinned pure-Python package
from PyPI. Its workspace is that package's import-package sources, copied from the installed distribution
(the ``eval`` extra pins them), with the task's ``mutation`` applied (a bug injected, or a function removed
for a feature task) and the task's own ``add`` files (a focused test) written, then committed once with a
fixed author and date so two builds are byte-identical (the same commit hash). The ``check`` runs in the
workspace; a question is checked by a regex on the agent's final message. ``reference`` is the minimal fix
as a unified diff, never shown to the agent: :func:`apply_reference` applies it to verify the task and for
simulated models.

Task files are input: every path they name stays inside the workspace, and every error is a
:class:`TaskError` naming the file (and line, for YAML faults) and the fault.
"""

from __future__ import annotations

import fnmatch
import importlib.metadata
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ide.changes.testrun import kill_group
from ide.childenv import base_env
from ide.gitsafe import run_git
from ide.lifetime import kept

TASK_SUFFIX = ".yaml"
INSTALL_HINT = "pip install 'arbor-ide[eval]'"
OUTPUT_TAIL = 4000
"""Characters of a check's output kept in :class:`CheckResult`."""

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Arbor Eval",
    "GIT_AUTHOR_EMAIL": "eval@arbor.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_COMMITTER_NAME": "Arbor Eval",
    "GIT_COMMITTER_EMAIL": "eval@arbor.invalid",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_CONFIG_NOSYSTEM": "1",
}
_GIT_CONFIG = ("-c", "commit.gpgSign=false", "-c", "core.autocrlf=false", "-c", "core.safecrlf=false")


class TaskError(ValueError):
    """A task that cannot be loaded, built or checked; the message names the file or task and the fault."""


def _relative_path(value: str) -> str:
    """A path inside the workspace: relative, POSIX, no ``..``, no ``.git``."""
    path = PurePosixPath(value)
    if not value or "\\" in value or path.is_absolute() or ".." in path.parts or value.startswith("~"):
        raise ValueError(f"{value!r} is not a relative path inside the workspace")
    if ".git" in path.parts:
        raise ValueError(f"{value!r} is inside .git")
    return str(path)


class PackagePin(BaseModel):
    """The pinned PyPI distribution a workspace is built from, and its import package."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str
    version: str
    import_name: str = Field(alias="import")

    @field_validator("import_name")
    @classmethod
    def _identifier(cls, value: str) -> str:
        if not value.isidentifier():
            raise ValueError(f"{value!r} is not an import package name")
        return value


class Mutation(BaseModel):
    """Replace ``find`` (which must occur exactly once) by ``replace`` in ``path``."""

    model_config = ConfigDict(extra="forbid")

    path: str
    find: str = Field(min_length=1)
    replace: str

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        return _relative_path(value)


class EvalTask(BaseModel):
    """One task of the set, as its YAML file says, plus its id and the file it came from."""

    model_config = ConfigDict(extra="forbid")

    id: str
    source: Path
    kind: Literal["bug", "feature", "question"]
    difficulty: Literal["easy", "medium", "hard"]
    summary: str = Field(min_length=1)
    package: PackagePin
    files: list[str] | None = None
    mutation: list[Mutation] = Field(default_factory=list)
    add: dict[str, str] = Field(default_factory=dict)
    prompt: str = Field(min_length=1)
    check: list[str] | None = None
    answer: str | None = None
    sample_answer: str | None = None
    reference: str | None = None

    @field_validator("files")
    @classmethod
    def _files(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else [_relative_path(v) for v in value]

    @field_validator("add")
    @classmethod
    def _add(cls, value: dict[str, str]) -> dict[str, str]:
        return {_relative_path(k): v for k, v in value.items()}

    @field_validator("check")
    @classmethod
    def _check(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and (not value or not all(isinstance(v, str) and v for v in value)):
            raise ValueError("must be a non-empty list of arguments")
        return value

    @field_validator("answer")
    @classmethod
    def _answer(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a regular expression ({exc})") from exc
        return value

    @model_validator(mode="after")
    def _kind_fields(self) -> EvalTask:
        if self.kind == "question":
            if not self.answer:
                raise ValueError("a question needs `answer` (a regex the final message must match)")
            if self.sample_answer is None:
                raise ValueError("a question needs `sample_answer` (a correct answer `answer` accepts)")
        else:
            if not self.check:
                raise ValueError(f"a {self.kind} task needs `check`")
            if not self.reference:
                raise ValueError(f"a {self.kind} task needs `reference` (the minimal fix as a diff)")
        return self


def tasks_dir() -> Path:
    """The shipped tasks: installed as the package data ``ide.eval.tasks_data`` (a wheel, the frozen app),
    else the checkout's ``resources/eval/tasks`` (a source tree or an editable install)."""
    installed = Path(__file__).parent / "tasks_data" / "tasks"
    return installed if installed.is_dir() else Path(__file__).parents[2] / "resources" / "eval" / "tasks"


class _UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key given twice (PyYAML keeps the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set[object] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, str | int) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_task(path: Path) -> EvalTask:
    """Read one task file; :class:`TaskError` (``FILE:LINE: problem`` or ``FILE: field: problem``)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"{path}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from exc
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader: builds plain data only
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise TaskError(f"{path}{line}: not valid YAML ({problem})") from exc
    if not isinstance(data, dict):
        raise TaskError(f"{path}: a task is a mapping of fields, found {type(data).__name__}")
    for reserved in ("id", "source"):
        if reserved in data:
            raise TaskError(f"{path}: {reserved}: not a task field (the id is the file name)")
    try:
        return EvalTask.model_validate({**data, "id": path.stem, "source": path})
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            where = ".".join(str(p) for p in error["loc"])
            message = "unknown field" if error["type"] == "extra_forbidden" else error["msg"]
            problems.append(f"{where}: {message}" if where else message)
        raise TaskError(f"{path}: {'; '.join(problems)}") from exc


def load_tasks(pattern: str = "*", directory: Path | None = None) -> list[EvalTask]:
    """The tasks whose id matches the glob ``pattern`` (comma-separated globs allowed), sorted by id."""
    root = directory if directory is not None else tasks_dir()
    if not root.is_dir():
        raise TaskError(f"{root}: no such task directory")
    globs = [g.strip() for g in pattern.split(",") if g.strip()] or ["*"]
    files = sorted(p for p in root.glob(f"*{TASK_SUFFIX}") if p.is_file())
    chosen = [p for p in files if any(fnmatch.fnmatchcase(p.stem, g) for g in globs)]
    return [load_task(p) for p in chosen]


def _distribution_files(task: EvalTask) -> dict[str, Path]:
    """The import package's files of the installed, pinned distribution: workspace path → installed file."""
    pin = task.package
    try:
        dist = importlib.metadata.distribution(pin.name)
    except importlib.metadata.PackageNotFoundError as exc:
        raise TaskError(
            f"task {task.id}: {pin.name}=={pin.version} is not installed; run {INSTALL_HINT}"
        ) from exc
    if dist.version != pin.version:
        raise TaskError(
            f"task {task.id}: needs {pin.name}=={pin.version}, but {dist.version} is installed; "
            f"run {INSTALL_HINT}"
        )
    found: dict[str, Path] = {}
    for entry in dist.files or []:
        parts = PurePosixPath(str(entry)).parts
        if not parts or parts[0] != pin.import_name or "__pycache__" in parts or entry.suffix == ".pyc":
            continue
        found[str(PurePosixPath(*parts))] = Path(str(dist.locate_file(entry)))
    if not found:
        raise TaskError(f"task {task.id}: {pin.name} holds no package {pin.import_name!r}")
    if task.files is not None:
        missing = [f for f in task.files if f not in found]
        if missing:
            raise TaskError(f"task {task.id}: files: not in {pin.name} {pin.version}: {', '.join(missing)}")
        found = {f: found[f] for f in task.files}
    return found


def _git(workspace: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_git(workspace, *_GIT_CONFIG, *args, input=stdin, text=True, env_extra=_GIT_ENV, timeout=60)


def build_workspace(task: EvalTask, dest: Path) -> None:
    """Build ``task``'s workspace in ``dest`` (absent or empty) and commit it; :class:`TaskError` if not."""
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise TaskError(f"task {task.id}: {dest} exists and is not an empty directory")
    sources = _distribution_files(task)
    contents: dict[str, bytes] = {}
    for rel, installed in sources.items():
        try:
            contents[rel] = installed.read_bytes()
        except OSError as exc:
            raise TaskError(
                f"task {task.id}: cannot read the installed {installed} ({exc.strerror})"
            ) from exc
    for number, mutation in enumerate(task.mutation, 1):
        where = f"task {task.id}: mutation {number} ({mutation.path})"
        if mutation.path not in contents:
            raise TaskError(f"{where}: no such file in the workspace")
        text = contents[mutation.path].decode("utf-8")
        count = text.count(mutation.find)
        if count != 1:
            raise TaskError(f"{where}: `find` occurs {count} times, it must occur exactly once")
        contents[mutation.path] = text.replace(mutation.find, mutation.replace).encode("utf-8")
    for rel, text in task.add.items():
        contents[rel] = text.encode("utf-8")
    dest.mkdir(parents=True, exist_ok=True)
    for rel, data in sorted(contents.items()):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(0o644)
    for args in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-q", "--no-verify", "-m", task.id)):
        done = _git(dest, *args)
        if done.returncode != 0:
            raise TaskError(f"task {task.id}: git {args[0]} failed in {dest}: {done.stderr.strip()[-500:]}")


def apply_reference(task: EvalTask, workspace: Path) -> None:
    """Apply the task's reference diff to ``workspace`` (``git apply``); :class:`TaskError` if it does not."""
    if not task.reference:
        raise TaskError(f"task {task.id}: has no reference")
    done = _git(workspace, "apply", "--whitespace=nowarn", "-", stdin=task.reference)
    if done.returncode != 0:
        raise TaskError(f"task {task.id}: the reference does not apply: {done.stderr.strip()[-500:]}")


@dataclass
class CheckResult:
    """Whether the task is solved, and the tail of the check's output (or why it is not solved)."""

    passed: bool
    output: str


def check_env() -> dict[str, str]:
    """The environment a check (code a model wrote) runs in: the allow-listed base set only
    (:func:`ide.childenv.base_env`: no API keys or tokens, no PYTHONPATH or pytest options leaking in, not
    even what ``ARBOR_PASS_ENV`` names — the same check everywhere), no bytecode written into the
    workspace, no third-party pytest plugins (they are slow to load and not the task's)."""
    return {
        **base_env(),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTHONIOENCODING": "utf-8",
    }


def _run(argv: list[str], workspace: Path, timeout_s: float) -> CheckResult:
    """Run a check under the keeper (:mod:`ide.lifetime`): it and what it starts end with ``arbor eval``.
    It is started from a worker thread that waits for it, so the thread cannot end first."""
    env = check_env()
    try:
        proc = subprocess.Popen(
            kept(argv, env, workspace),
            cwd=workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        return CheckResult(False, f"the check could not start: {argv[0]}: {exc.strerror or exc}")
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, _ = proc.communicate()
        tail = out.decode("utf-8", "replace")[-OUTPUT_TAIL:]
        return CheckResult(False, f"{tail}\nthe check timed out after {timeout_s:g} s")
    text = out.decode("utf-8", "replace")[-OUTPUT_TAIL:]
    return CheckResult(
        proc.returncode == 0, text if proc.returncode == 0 else f"{text}\nexit {proc.returncode}"
    )


def _restore_added(task: EvalTask, workspace: Path) -> str | None:
    """Write the task's own ``add`` files back: the check judges with our test, not an agent's edit of it.
    None, or why a file could not be written."""
    root = workspace.resolve()
    for rel, text in task.add.items():
        target = workspace / rel
        if not target.parent.resolve().is_relative_to(root):
            return f"{rel} leads outside the workspace"
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.exists():
            shutil.rmtree(target)
        target.write_text(text, encoding="utf-8")
    return None


def run_check(task: EvalTask, workspace: Path, answer_text: str = "", timeout_s: float = 120) -> CheckResult:
    """Run the task's check in ``workspace`` (``python`` is this interpreter) and, for a task with an
    ``answer``, match it against ``answer_text`` (the agent's final message). The task's own ``add`` files
    (its test) are written back first, so an agent that edited the test does not pass by it."""
    outputs: list[str] = []
    fault = _restore_added(task, workspace)
    if fault:
        return CheckResult(False, f"the task's own files cannot be restored: {fault}")
    if task.answer is not None:
        if not re.search(task.answer, answer_text):
            return CheckResult(False, f"the answer does not match {task.answer!r}")
        outputs.append(f"the answer matches {task.answer!r}")
    if task.check:
        argv = [sys.executable if task.check[0] == "python" else task.check[0], *task.check[1:]]
        result = _run(argv, workspace, timeout_s)
        if not result.passed:
            return result
        outputs.append(result.output)
    return CheckResult(True, "\n".join(outputs)[-OUTPUT_TAIL:])


WRONG_ANSWERS = ("", "I could not find it.")
"""Answers every question's regex must reject (a regex that accepts anything checks nothing)."""


@dataclass
class Verification:
    """What :func:`verify_task` found: ``problems`` is empty when the task is sound."""

    task: str
    problems: list[str]
    seconds: float

    @property
    def ok(self) -> bool:
        return not self.problems


def verify_task(task: EvalTask, scratch: Path, timeout_s: float = 60) -> Verification:
    """Check that ``task`` is honest: its workspace builds, the check fails there, leaves the workspace
    clean, and passes once the reference is applied; a question's regex accepts its sample answer and
    rejects :data:`WRONG_ANSWERS`. ``scratch`` is an absent or empty directory to build in."""
    started = time.monotonic()
    problems: list[str] = []
    try:
        build_workspace(task, scratch)
        if task.kind == "question":
            if not run_check(task, scratch, task.sample_answer or "", timeout_s).passed:
                problems.append("the answer regex rejects the sample answer")
            problems += [
                f"the answer regex accepts {w!r}" for w in WRONG_ANSWERS if re.search(task.answer or "", w)
            ]
        else:
            before = run_check(task, scratch, timeout_s=timeout_s)
            if before.passed:
                problems.append("the check passes on the built workspace (nothing to fix)")
            dirty = _git(scratch, "status", "--porcelain", "--untracked-files=all").stdout.strip()
            if dirty:
                problems.append(f"the check left changes in the workspace: {dirty[:200]}")
            apply_reference(task, scratch)
            after = run_check(task, scratch, timeout_s=timeout_s)
            if not after.passed:
                problems.append(f"the check fails after the reference: {after.output[-600:]}")
    except TaskError as exc:
        problems.append(str(exc))
    return Verification(task.id, problems, round(time.monotonic() - started, 3))
