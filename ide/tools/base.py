"""What a tool is to Arbor: a typed argument model, a function over the workspace, and its ACP metadata."""

from __future__ import annotations

import contextlib
import inspect
import typing
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, ValidationError

from ide.fs import ToolError
from ide.llm.textcalls import INVALID_ARGUMENTS, INVALID_JSON
from ide.settings import ToolSettings
from ide.tools.workspace import Workspace

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]
ToolLocation = tuple[str, int | None] | None
"""Where a call acts: a workspace path and a 1-based line (None: the whole file); None for nowhere."""


def nowhere(args: Any) -> ToolLocation:
    """The location of a call that acts on no one file (a search of the whole workspace, the memory)."""
    return None


def at_path(args: Any) -> ToolLocation:
    """The location of a call on the file or directory ``args.path``."""
    return (args.path, None)


def at_path_if_given(args: Any) -> ToolLocation:
    """The location of a call whose ``args.path`` narrows it when given (the whole workspace when not)."""
    return (args.path, None) if args.path else None


@dataclass(frozen=True)
class ToolSpec:
    """One agent tool. ``run`` returns the observation text or raises ToolError."""

    name: str
    description: str
    kind: ToolKind
    args_model: type[BaseModel]
    run: Callable[[Workspace, ToolSettings, Any], str]
    title: Callable[[Any], str]
    location: Callable[[Any], ToolLocation] = nowhere
    touches: Callable[[Any], list[str]] | None = None
    """Paths an editing tool changes; their diffs go to the client with the result."""
    json_schema: dict[str, Any] | None = None
    """The arguments' JSON Schema shown to the model, when it is not ``args_model``'s (MCP tools)."""
    shown_kind: ToolKind | None = None
    """The ACP kind the client sees when it is not ``kind`` (MCP tools keep ``kind`` "other", so a run
    never answers them from its cache: a server's state is not in the change set)."""


RunTool = Callable[[Workspace, ToolSettings, Any], str]


def tool(
    kind: ToolKind,
    title: Callable[[Any], str],
    *,
    location: Callable[[Any], ToolLocation] = nowhere,
    touches: Callable[[Any], list[str]] | None = None,
) -> Callable[[RunTool], ToolSpec]:
    """Declare the function below as a tool, where it is written: the tool's name is the function's, its
    arguments model is the annotation of the function's ``args`` parameter, and its description (what the
    model reads) is the function's docstring with its white space folded."""

    def declare(run: RunTool) -> ToolSpec:
        doc = inspect.getdoc(run)
        if not doc:
            raise TypeError(f"tool {run.__name__} needs a docstring: it is the description the model reads")
        return ToolSpec(
            run.__name__,
            " ".join(doc.split()),
            kind,
            typing.get_type_hints(run)["args"],
            run,
            title,
            location,
            touches,
        )

    return declare


@dataclass(frozen=True)
class FileDiff:
    """A proposed change of one file, as ACP diff content carries it (absolute path)."""

    path: str
    old_text: str | None
    new_text: str | None


@dataclass(frozen=True)
class ToolOutcome:
    """Result of one call: the observation for the model, whether it failed, and the diffs it made."""

    output: str
    failed: bool
    diffs: tuple[FileDiff, ...] = ()


LANGCHAIN_TOOLS = 512
"""LangChain tools kept for the specs last bound (Arbor's own, and the MCP servers' of open sessions)."""
_langchain_tools: OrderedDict[int, tuple[ToolSpec, BaseTool]] = OrderedDict()


def _not_run_here(**_kwargs: Any) -> str:
    raise ToolError("Arbor runs its tools through Toolbox.call, not through the LangChain tool")


def langchain_tool(spec: ToolSpec) -> BaseTool:
    """``spec`` as a LangChain tool for binding to a chat model (its schema only: Arbor runs the call), the
    same object for the same spec."""
    found = _langchain_tools.get(id(spec))
    if found is not None and found[0] is spec:  # the entry holds the spec, so its id is not reused meanwhile
        _langchain_tools.move_to_end(id(spec))
        return found[1]
    made = StructuredTool.from_function(
        func=_not_run_here,
        name=spec.name,
        description=spec.description,
        args_schema=spec.json_schema or spec.args_model,
    )
    _langchain_tools[id(spec)] = (spec, made)
    if len(_langchain_tools) > LANGCHAIN_TOOLS:
        _langchain_tools.popitem(last=False)
    return made


class Toolbox:
    """The tools of one session, bound to its workspace and settings."""

    def __init__(self, workspace: Workspace, settings: ToolSettings, specs: Iterable[ToolSpec]) -> None:
        self.workspace = workspace
        self.settings = settings
        self.specs = {spec.name: spec for spec in specs}

    def parse(self, name: str, args: dict[str, Any]) -> tuple[ToolSpec, BaseModel]:
        """Validate a call; raises ToolError naming the tool and what is wrong with its arguments."""
        spec = self.specs.get(name)
        if spec is None:
            raise ToolError(f"there is no tool '{name}'; the tools are {', '.join(self.specs)}")
        if set(args or {}) & {INVALID_JSON, INVALID_ARGUMENTS}:
            raw = str(args.get(INVALID_JSON, args.get(INVALID_ARGUMENTS)))
            fields = ", ".join(spec.args_model.model_fields)
            raise ToolError(
                f"the arguments of {name} were not a valid JSON object ({raw[:200]!r}); call it again with "
                f"one JSON object of its fields: {fields}"
            )
        try:
            return spec, spec.args_model.model_validate(args or {})
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}" for err in exc.errors()
            )
            raise ToolError(f"bad arguments for {name}: {problems}") from None

    def call(self, name: str, args: dict[str, Any]) -> ToolOutcome:
        """Run a tool call; tool errors become failed outcomes the model can read. A file of the call whose
        pending edit overlaps what the user changed on disk since is said after the output."""
        try:
            spec, parsed = self.parse(name, args)
        except ToolError as exc:
            return ToolOutcome(f"error: {exc}", failed=True)
        try:
            output = spec.run(self.workspace, self.settings, parsed)
            return ToolOutcome(
                output + self._overlaps(spec, parsed), failed=False, diffs=self._diffs(spec, parsed)
            )
        except ToolError as exc:
            return ToolOutcome(f"error: {exc}{self._overlaps(spec, parsed)}", failed=True)
        except OSError as exc:
            return ToolOutcome(f"error: {exc.strerror or exc}", failed=True)

    def _overlaps(self, spec: ToolSpec, args: BaseModel) -> str:
        """Notes on the call's files whose pending edit overlaps the disk's change (ide.changes.refresh)."""
        overlaps = getattr(self.workspace.overlay, "overlaps", None)
        if not overlaps:
            return ""
        where = spec.location(args)
        paths = ([where[0]] if where is not None else []) + (spec.touches(args) if spec.touches else [])
        notes = []
        for path in dict.fromkeys(paths):
            with contextlib.suppress(ToolError):
                said = overlaps.get(self.workspace.relative(self.workspace.resolve(path)))
                if said:
                    notes.append(f"\n\nNote: {said}")
        return "".join(notes)

    def _diffs(self, spec: ToolSpec, args: BaseModel) -> tuple[FileDiff, ...]:
        overlay = self.workspace.overlay
        if spec.touches is None or overlay is None or not hasattr(overlay, "diff_texts"):
            return ()
        diffs = []
        for path in spec.touches(args):
            rel = self.workspace.relative(self.workspace.resolve(path))
            old, new = overlay.diff_texts(rel)
            diffs.append(FileDiff(str(self.workspace.root / rel), old, new))
        return tuple(diffs)

    def describe(self, name: str, args: dict[str, Any]) -> tuple[str, ToolKind, list[tuple[str, int | None]]]:
        """Title, ACP kind and absolute locations of a call, for the client's tool-call card."""
        try:
            spec, parsed = self.parse(name, args)
        except ToolError:
            return name, "other", []
        locations = []
        where = spec.location(parsed)
        if where is not None:
            with contextlib.suppress(ToolError):
                locations.append((str(self.workspace.resolve(where[0])), where[1]))
        return spec.title(parsed), spec.shown_kind or spec.kind, locations

    def langchain_tools(self) -> list[BaseTool]:
        """The tools as LangChain tools, for binding to a chat model (schemas only; we execute them).

        The same objects for the same specs, whatever the toolbox (each turn and each search branch has its
        own): the model router keeps a model bound to them, where new ones made it convert every schema
        again (about 50 ms for Arbor's tools, a quarter of a scripted turn)."""
        return [langchain_tool(spec) for spec in self.specs.values()]
