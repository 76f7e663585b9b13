"""Find and read workflow and agent-profile YAML files; every error names its file, line and field.

Workflows come from three places: the ones shipped with Arbor (the repository's top-level ``workflows/``
folder, installed as the package data ``ide.workflows.builtin``), the user's
(``<config dir>/arbor/workflows``), which replace shipped ones of the same name, and the workspace's
(``<workspace>/.arbor/workflows``). A repository is input, not configuration: its workflows and agent
profiles never replace the shipped or the user's — one with a taken name is listed as ``workspace.NAME``
beside the original, and a workspace profile that shadows a name serves only the workspace's own workflows.
Agent profiles live beside workflows in ``agents/`` folders, one per file.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from ide.settings import WORKSPACE_DIR, user_config_path
from ide.workflows.schema import (
    ABORT,
    TOOL_ALIASES,
    AgentProfile,
    RetrievalStrategy,
    Route,
    Workflow,
    route_problems,
    stage_tool_problems,
)

T = TypeVar("T", bound=BaseModel)


def _shipped_dir() -> Path:
    """Where the shipped workflows are: installed beside this module (a wheel, the frozen app), else the
    checkout's top-level ``workflows/`` (a source tree or an editable install)."""
    installed = Path(__file__).parent / "builtin"
    return installed if installed.is_dir() else Path(__file__).parents[2] / "workflows"


BUILTIN_DIR = _shipped_dir()
AGENTS_DIR = "agents"
WORKSPACE_PREFIX = "workspace."
"""Prefix of a workspace workflow or profile whose name is taken by a shipped or user one."""
SUFFIXES = (".yaml", ".yml")


class WorkflowError(ValueError):
    """A workflow or profile file that cannot be used; ``str()`` is ``FILE:LINE: field: problem``."""

    def __init__(self, path: Path, line: int | None, where: str, problem: str) -> None:
        self.path = path
        self.line = line
        self.where = where
        self.problem = problem
        place = f"{path}:{line}" if line else str(path)
        super().__init__(f"{place}: {where + ': ' if where else ''}{problem}")


@dataclass
class Catalog:
    """The workflows and agent profiles found, and the files that could not be read."""

    workflows: dict[str, Workflow] = field(default_factory=dict)
    profiles: dict[str, AgentProfile] = field(default_factory=dict)
    origins: dict[str, Path] = field(default_factory=dict)
    """Workflow name → the file it came from."""
    problems: list[WorkflowError] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    """Things the user should know that are not errors (a workspace workflow renamed beside a shipped one)."""

    def get(self, name: str) -> Workflow:
        if name not in self.workflows:
            known = ", ".join(sorted(self.workflows)) or "none"
            raise KeyError(f"there is no workflow {name!r}; there are: {known}")
        return self.workflows[name]


def search_dirs(workspace: Path | None) -> list[Path]:
    """Where workflows are looked for, weakest first."""
    dirs = [BUILTIN_DIR, user_config_path().parent / "workflows"]
    if workspace is not None:
        dirs.append(Path(workspace) / WORKSPACE_DIR / "workflows")
    return dirs


def load_catalog(workspace: Path | None = None, dirs: Iterable[Path] | None = None) -> Catalog:
    """Every workflow and profile in ``dirs`` (default :func:`search_dirs`), checked against each other."""
    catalog = Catalog()
    own = Path(workspace) / WORKSPACE_DIR / "workflows" if workspace is not None else None
    for folder in dirs if dirs is not None else search_dirs(workspace):
        if own is not None and folder == own:
            _add_workspace_folder(catalog, folder)
            continue
        for _path, profile in _read_all(_yaml_files(folder / AGENTS_DIR), AgentProfile, catalog.problems):
            catalog.profiles[profile.name] = profile
        for path, workflow in _read_all(_yaml_files(folder), Workflow, catalog.problems):
            catalog.workflows[workflow.name] = workflow
            catalog.origins[workflow.name] = path
    for name, workflow in list(catalog.workflows.items()):
        problem = missing_profile(workflow, catalog.profiles)
        if problem is not None:
            catalog.problems.append(located(catalog.origins[name], problem[0], problem[1]))
            del catalog.workflows[name]
    return catalog


def _add_workspace_folder(catalog: Catalog, folder: Path) -> None:
    """The workspace's profiles and workflows, renamed ``workspace.NAME`` where a name is taken."""
    renamed: dict[str, str] = {}
    for path, profile in _read_all(_yaml_files(folder / AGENTS_DIR), AgentProfile, catalog.problems):
        key = profile.name
        if key in catalog.profiles:
            key = renamed[profile.name] = f"{WORKSPACE_PREFIX}{profile.name}"
            catalog.notices.append(
                f"{path}: agent profile '{profile.name}' is also shipped or yours; this workspace's "
                f"serves only this workspace's workflows (as '{key}')"
            )
        catalog.profiles[key] = profile
    for path, workflow in _read_all(_yaml_files(folder), Workflow, catalog.problems):
        if renamed:
            workflow = _with_profiles(workflow, renamed)
        name = workflow.name
        if name in catalog.workflows:
            name = f"{WORKSPACE_PREFIX}{workflow.name}"
            catalog.notices.append(
                f"{path}: workflow '{workflow.name}' is also shipped or yours; this workspace's is listed "
                f"as '{name}' and never replaces it"
            )
            workflow = workflow.model_copy(
                update={"metadata": workflow.metadata.model_copy(update={"name": name})}
            )
        catalog.workflows[name] = workflow
        catalog.origins[name] = path


def _with_profiles(workflow: Workflow, renamed: dict[str, str]) -> Workflow:
    """``workflow`` with its agents pointing at the workspace's renamed profiles."""
    stages = []
    for stage in workflow.stages:
        agents = [
            ref.model_copy(update={"agent": renamed[ref.profile] + "_agent"})
            if ref.profile in renamed
            else ref
            for ref in stage.parallel_agents
        ]
        stages.append(stage.model_copy(update={"parallel_agents": agents}))
    return workflow.model_copy(update={"stages": stages})


def missing_profile(
    workflow: Workflow, profiles: dict[str, AgentProfile]
) -> tuple[tuple[Any, ...], str] | None:
    """The first stage agent with no profile: (its field path, the problem), or None."""
    for index, stage in enumerate(workflow.stages):
        for position, ref in enumerate(stage.parallel_agents):
            if ref.profile not in profiles:
                known = ", ".join(f"{name}_agent" for name in sorted(profiles))
                return (
                    ("stages", index, "parallel_agents", position, "agent"),
                    f"no agent profile {ref.agent!r}; there are: {known}",
                )
    return None


def _read_all(
    paths: Iterable[Path], model: type[T], problems: list[WorkflowError]
) -> Iterator[tuple[Path, T]]:
    """Each file that reads as ``model``; the others go to ``problems``."""
    for path in paths:
        try:
            yield path, load_file(path, model)
        except WorkflowError as exc:
            problems.append(exc)


def _yaml_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix in SUFFIXES and p.is_file())


def load_file(path: Path, model: type[T]) -> T:
    """Read one YAML file as ``model``; a problem raises :class:`WorkflowError` with its line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkflowError(path, None, "", f"cannot be read ({exc})") from None
    return parse_text(text, path, model)


def parse_text(text: str, path: Path, model: type[T]) -> T:
    """``text`` (the contents of ``path``) as ``model``; its first problem raises :class:`WorkflowError`."""
    node, data = _compose(text, path)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _schema_errors(exc, node, path, model)[0] from None


def check_file(
    path: Path, model: type[T], profiles: Mapping[str, AgentProfile] | None = None
) -> tuple[T | None, list[WorkflowError]]:
    """One file as ``model`` (None if it is not usable) and every problem in it, sorted by line.

    Beside all its schema errors: for a workflow, routes to no stage, routing loops with no way to DONE or
    ABORT and (given ``profiles``) agents with no profile; for a profile, tools Arbor does not have."""
    try:
        text = path.read_text(encoding="utf-8")
        node, data = _compose(text, path)
    except (OSError, UnicodeDecodeError) as exc:
        return None, [WorkflowError(path, None, "", f"cannot be read ({exc})")]
    except WorkflowError as exc:
        return None, [exc]
    result: T | None = None
    problems: list[tuple[tuple[Any, ...], str]] = []
    errors: list[WorkflowError] = []
    try:
        result = model.model_validate(data)
    except ValidationError as exc:
        errors = _schema_errors(exc, node, path, model)
    if model is Workflow:
        problems += route_problems(_raw_routes(data.get("stages")))
        with contextlib.suppress(ValidationError):  # a broken strategy is reported by the schema errors
            strategy = RetrievalStrategy.model_validate(data.get("retrieval_strategy_config") or {})
            problems += stage_tool_problems(strategy, data.get("stages"))
        if profiles is not None:
            problems += _raw_agent_problems(data.get("stages"), profiles)
    elif model is AgentProfile:
        problems += _unknown_tools(data.get("tools"))
    for loc, problem in problems:
        error = WorkflowError(path, _line_of(node, loc), ".".join(str(p) for p in loc), problem)
        if (error.where, error.problem) not in {(e.where, e.problem) for e in errors}:
            errors.append(error)
    errors.sort(key=lambda e: e.line or 0)
    return (result if not errors else None), errors


_FAST_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser where PyYAML was built with it (the wheels are): the same nodes and marks as the
pure-Python one, about five times faster; its error messages say less ("found undefined alias" without
the name), so a file it refuses is parsed again by the pure-Python loader for the message."""


@functools.lru_cache(maxsize=256)
def _parsed(text: str) -> tuple[yaml.Node | None, Any]:
    """The node tree and the data of ``text``, from one parse, kept by text: the catalog is read for every
    session's ``/workflow`` and every ``_arbor/workflows/list`` and its files rarely change. Shared between
    callers, so read-only (pydantic validates the data without changing it)."""
    try:
        return _parse(text, _FAST_LOADER)
    except yaml.YAMLError:
        if _FAST_LOADER is yaml.SafeLoader:
            raise
        return _parse(text, yaml.SafeLoader)  # raises the same error, in PyYAML's own words


def _parse(text: str, loader_class: type[yaml.SafeLoader]) -> tuple[yaml.Node | None, Any]:
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        return node, (loader.construct_document(node) if node is not None else None)
    finally:
        loader.dispose()


def _compose(text: str, path: Path) -> tuple[yaml.Node, dict[str, Any]]:
    """The YAML node tree (for lines) and the data of ``text``, which must be a mapping."""
    try:
        node, data = _parsed(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise WorkflowError(path, line, "", f"not valid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise WorkflowError(path, None, "", f"not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise WorkflowError(
            path, 1, "", f"expected a mapping of keys at the top, found {type(data).__name__}"
        )
    return node, data


def _schema_errors(
    exc: ValidationError, node: yaml.Node, path: Path, model: type[BaseModel]
) -> list[WorkflowError]:
    """Every error pydantic found, each with its line, in pydantic's order."""
    errors = []
    for error in exc.errors():
        loc = tuple(error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        # A model-level check names its field in the message ("stages.1.routing…: …").
        if not loc and ": " in message and message.split(": ", 1)[0].startswith("stages."):
            dotted, message = message.split(": ", 1)
            loc = tuple(int(p) if p.isdigit() else p for p in dotted.split("."))
        if error["type"] == "extra_forbidden":
            message = f"unknown field (allowed: {', '.join(_allowed(model, loc[:-1]))})"
        errors.append(WorkflowError(path, _line_of(node, loc), ".".join(str(p) for p in loc), message))
    return errors


def _raw_routes(stages: Any) -> list[Route]:
    """(stage_id, success, failure) of each stage as written, whatever else is wrong with it."""
    routes: list[Route] = []
    for stage in stages if isinstance(stages, list) else []:
        stage = stage if isinstance(stage, dict) else {}
        routing = stage.get("routing")
        routing = routing if isinstance(routing, dict) else {}
        success = routing.get("next_stage_on_success")
        failure = routing.get("next_stage_on_failure", ABORT)
        routes.append((stage.get("stage_id"), success, failure))
    return routes


def _raw_agent_problems(
    stages: Any, profiles: Mapping[str, AgentProfile]
) -> list[tuple[tuple[Any, ...], str]]:
    """Each stage agent as written that has no profile in ``profiles``."""
    problems: list[tuple[tuple[Any, ...], str]] = []
    known = ", ".join(f"{name}_agent" for name in sorted(profiles))
    for index, stage in enumerate(stages if isinstance(stages, list) else []):
        agents = stage.get("parallel_agents") if isinstance(stage, dict) else None
        for position, ref in enumerate(agents if isinstance(agents, list) else []):
            agent = ref.get("agent") if isinstance(ref, dict) else None
            if isinstance(agent, str) and agent.removesuffix("_agent") not in profiles:
                loc = ("stages", index, "parallel_agents", position, "agent")
                problems.append((loc, f"no agent profile {agent!r}; there are: {known}"))
    return problems


def _unknown_tools(tools: Any) -> list[tuple[tuple[Any, ...], str]]:
    """Each tool of a profile as written that Arbor does not have (an MCP server's tools, which only a
    session knows, belong in a stage's ``mcp_tools``, which is not checked)."""
    from ide.tools import builtin_tool_names

    known = builtin_tool_names() | set(TOOL_ALIASES)
    return [
        (("tools", position), f"no tool {name!r}; there are: {', '.join(sorted(known))}")
        for position, name in enumerate(tools if isinstance(tools, list) else [])
        if isinstance(name, str) and name not in known
    ]


def located(path: Path, loc: tuple[Any, ...], problem: str) -> WorkflowError:
    try:
        node = yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except (OSError, yaml.YAMLError):
        node = None
    return WorkflowError(path, _line_of(node, loc), ".".join(str(p) for p in loc), problem)


def _line_of(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """The 1-based line of the deepest YAML node on ``loc`` (a key's line for mapping fields)."""
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.value == str(part):
                    line = key.start_mark.line + 1
                    node = value
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def _allowed(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """Field names allowed at ``loc`` inside ``model`` (best effort, for the message)."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        info = getattr(current, "model_fields", {}).get(part)
        if info is None:
            return []
        annotation = info.annotation
        args = getattr(annotation, "__args__", ())
        candidates = [annotation, *args]
        current = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
        if current is None:
            return []
    return sorted(getattr(current, "model_fields", {}))
