"""The agent's language-server tools: precise definitions, references, types, signatures, diagnostics.

Positions are 1-based line and column as editors show them. A symbol may be given by name instead;
the code index finds where it is defined. Files the session's change set modifies reach the server
with their proposed text. A missing or broken server is a plain observation with the install command.

What a server answers passes read_file's gate (:class:`~ide.codeintel.lsp.LspGate`): a location outside
the workspace (after symlinks), in a secret, git's metadata or an excluded file is shown as its path with
the reason, never its line, and hover or signature text of a symbol defined there is withheld.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field, model_validator

from ide.codeintel.lsp import At, Location, LspBridge, LspError, LspGate, LspPool, LspUnavailable
from ide.fs import Overlay, ToolError
from ide.settings import ToolSettings
from ide.tools.base import ToolLocation, at_path, tool
from ide.tools.workspace import Workspace

T = TypeVar("T")
LOCATION_CAP = 60
CALL_LINES = 50
"""Lines back from a position a signature's call is looked for (its open parenthesis)."""


class PositionArgs(BaseModel):
    path: str | None = Field(None, description="File relative to the workspace root")
    line: int | None = Field(None, ge=1, description="1-based line")
    column: int | None = Field(None, ge=1, description="1-based column of the symbol (default: its start)")
    symbol: str | None = Field(None, description="A name to look up instead of a position")

    @model_validator(mode="after")
    def _position_or_symbol(self) -> PositionArgs:
        if self.symbol is None and (self.path is None or self.line is None):
            raise ValueError("give path and line (and column), or symbol")
        return self


class DiagnosticsArgs(BaseModel):
    path: str = Field(description="File relative to the workspace root")


def _bridge(workspace: Workspace) -> LspBridge:
    if workspace.lsp is None:
        raise ToolError("language servers are not available in this session; use find_symbol and grep")
    return workspace.lsp


def _documents(workspace: Workspace) -> dict[Path, str]:
    return proposed_documents(workspace.root, workspace.overlay)


def proposed_documents(root: Path, overlay: Overlay | None) -> dict[Path, str]:
    """The change set's files as proposed (absolute path → text), for servers to see instead of the disk."""
    if overlay is None:
        return {}
    return {
        root / rel: overlay.read_text(rel)
        for rel in overlay.changed_paths()
        if overlay.exists(rel) and not overlay.is_dir(rel)
    }


def _ask(workspace: Workspace, call: Callable[[LspPool], Awaitable[T]]) -> T:
    try:
        return _bridge(workspace).run(call)
    except (LspUnavailable, LspError) as exc:
        raise ToolError(str(exc)) from None
    except TimeoutError:
        raise ToolError("the language server did not answer in time; try again or use grep") from None


def _positions(workspace: Workspace, args: PositionArgs) -> list[tuple[Path, int, int]]:
    """(absolute path, line, column) the arguments point at: the position, or the symbol's definitions."""
    if args.path is not None and args.line is not None:
        path = workspace.resolve(args.path)
        if not workspace.exists(path):
            raise ToolError(f"{args.path} does not exist")
        column = args.column or _column_of(workspace, path, args.line, args.symbol)
        return [(path, args.line, column)]
    name = args.symbol or ""
    if workspace.index is None:
        raise ToolError("give path and line: the code index that finds symbols by name is not open")
    found = [s for s in workspace.index.definitions(name.rsplit(".", 1)[-1]) if s.qualname.endswith(name)]
    if not found:
        raise ToolError(f"no definition named {name!r} in the index; try find_symbol with part of the name")
    return [
        (workspace.root / s.path, s.line, _column_of(workspace, workspace.root / s.path, s.line, s.name))
        for s in found[:5]
    ]


def _column_of(workspace: Workspace, path: Path, line: int, name: str | None) -> int:
    """Column of ``name`` on ``line`` (or of its first non-blank character)."""
    lines = workspace.read_text(path).splitlines()
    if not 1 <= line <= len(lines):
        raise ToolError(f"{workspace.relative(path)} has {len(lines)} lines; line {line} is outside it")
    text = lines[line - 1]
    if name:
        match = re.search(rf"(?<![\w$]){re.escape(name.rsplit('.', 1)[-1])}(?![\w$])", text)
        if match:
            return match.start() + 1
    return len(text) - len(text.lstrip()) + 1


def _name(workspace: Workspace, location: Location) -> str:
    """``path:line:column`` of a location: workspace-relative, or absolute outside it (site-packages)."""
    try:
        rel = workspace.relative(location.path)
    except ValueError:
        rel = str(location.path)
    return f"{rel}:{location.line}:{location.column}"


def _where(workspace: Workspace, location: Location, texts: dict[Path, list[str]]) -> str:
    """A location with its line as read_file would show it, or with the reason it is not shown."""
    if location.refused is not None:
        return f"{_name(workspace, location)}: ({location.refused}, not shown)"
    path = workspace.resolve(str(location.path))
    if path not in texts:
        try:
            texts[path] = workspace.read_text(path).splitlines()
        except (OSError, ToolError):
            texts[path] = []
    lines = texts[path]
    line = lines[location.line - 1].strip()[:160] if 0 < location.line <= len(lines) else ""
    return f"{_name(workspace, location)}: {line}"


def _locations(workspace: Workspace, found: list[Location], what: str) -> str:
    if not found:
        return f"the language server found no {what}"
    texts: dict[Path, list[str]] = {}
    lines = [_where(workspace, location, texts) for location in found[:LOCATION_CAP]]
    if len(found) > LOCATION_CAP:
        lines.append(f"(… {len(found) - LOCATION_CAP} more)")
    return "\n".join(lines)


def _query(workspace: Workspace, query: str, path: Path, line: int, column: int) -> Any:
    """pool.``query`` at one position, through read_file's gate."""
    documents = _documents(workspace)
    gate = LspGate(workspace)
    return _ask(
        workspace, lambda pool: getattr(pool, query)(At(workspace.root, path, line, column, documents, gate))
    )


def _location_query(workspace: Workspace, args: PositionArgs, query: str, what: str) -> str:
    found = {
        location
        for path, line, column in _positions(workspace, args)
        for location in _query(workspace, query, path, line, column)
    }
    return _locations(workspace, sorted(found, key=lambda loc: (str(loc.path), loc.line)), what)


def _text_query(workspace: Workspace, args: PositionArgs, query: str, empty: str) -> str:
    """Hover or signature text at each position, unless it comes from a file read_file refuses: the
    symbol's definition (hover) or the called function's (signature) is asked first."""
    answers = []
    for path, line, column in _positions(workspace, args):
        text = _query(workspace, query, path, line, column)
        if not text:
            continue
        source = (line, column) if query == "hover" else _call_at(workspace, path, line, column)
        withheld = _withheld(workspace, path, source)
        answers.append(f"{workspace.relative(path)}:{line}:{column}\n{withheld or text}")
    return "\n\n".join(answers) if answers else empty


def _withheld(workspace: Workspace, path: Path, source: tuple[int, int] | None) -> str | None:
    """Why the text about the symbol at ``source`` in ``path`` is not shown, or None to show it."""
    if source is None:
        return "(not shown: the function called there could not be told, so neither could its file)"
    refused = [loc for loc in _query(workspace, "definition", path, *source) if loc.refused is not None]
    if not refused:
        return None
    return f"(not shown: defined at {_name(workspace, refused[0])}, {refused[0].refused})"


def _call_at(workspace: Workspace, path: Path, line: int, column: int) -> tuple[int, int] | None:
    """(line, column) of the name of the function whose call's parentheses hold the position: the
    innermost unclosed ``(`` before it, looked for up to CALL_LINES lines back."""
    lines = workspace.read_text(path).splitlines()
    depth = 0
    for number in range(min(line, len(lines)), max(0, line - CALL_LINES), -1):
        text = lines[number - 1]
        end = min(column - 1, len(text)) if number == line else len(text)
        for index in range(end - 1, -1, -1):
            char = text[index]
            if char in ")]}":
                depth += 1
            elif char in "([{" and depth:
                depth -= 1
            elif char == "(":
                name = re.search(r"[\w$]+\s*$", text[:index])
                return (number, name.start() + 1) if name else None
    return None


def _at(args: PositionArgs) -> str:
    return args.symbol or f"{args.path}:{args.line}" + (f":{args.column}" if args.column else "")


def _position(args: PositionArgs) -> ToolLocation:
    return (args.path, args.line) if args.path else None


def _about(what: str) -> Callable[[PositionArgs], str]:
    """The card title of a position tool: ``what`` and the position or symbol asked about."""
    return lambda args: f"{what} {_at(args)}"


@tool("search", _about("Definition of"), location=_position)
def lsp_find_definition(workspace: Workspace, settings: ToolSettings, args: PositionArgs) -> str:
    """Where a symbol is defined, resolved by the language server (imports followed, across packages). Give
    path + line (+ column) of a use, or symbol."""
    return _location_query(workspace, args, "definition", "definition")


@tool("search", _about("References of"), location=_position)
def lsp_get_references(workspace: Workspace, settings: ToolSettings, args: PositionArgs) -> str:
    """Every reference to a symbol, resolved by the language server. Give path + line (+ column) or symbol."""
    return _location_query(workspace, args, "references", "references")


@tool("read", _about("Type of"), location=_position)
def lsp_get_type(workspace: Workspace, settings: ToolSettings, args: PositionArgs) -> str:
    """The type and documentation of the symbol at a position (hover), or of a named symbol."""
    return _text_query(workspace, args, "hover", "the language server has no type information there")


@tool("read", _about("Signature at"), location=_position)
def lsp_get_signature(workspace: Workspace, settings: ToolSettings, args: PositionArgs) -> str:
    """The signature of the function called at a position (inside the call's parentheses)."""
    return _text_query(
        workspace, args, "signature", "no call signature there (put the position inside a call)"
    )


@tool("read", lambda a: f"Diagnostics of {a.path}", location=at_path)
def lsp_diagnostics(workspace: Workspace, settings: ToolSettings, args: DiagnosticsArgs) -> str:
    """Errors and warnings the language server reports for a file, as your changes leave it."""
    path = workspace.resolve(args.path)
    if not workspace.exists(path):
        raise ToolError(f"{args.path} does not exist")
    documents = _documents(workspace)
    gate = LspGate(workspace)
    found = _ask(workspace, lambda pool: pool.diagnostics(workspace.root, path, documents, gate=gate))
    if not found:
        return f"no problems reported in {workspace.relative(path)}"
    rel = workspace.relative(path)
    return "\n".join(f"{rel}:{d.line}:{d.column}: {d.severity}: {d.message}" for d in found)


LSP_TOOLS = (lsp_find_definition, lsp_get_references, lsp_get_type, lsp_get_signature, lsp_diagnostics)
