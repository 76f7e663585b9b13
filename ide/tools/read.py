"""The agent's read-only tools: read_file, list_dir and grep, over a confined Workspace.

These names and arguments are the tool API that scripted models and later issues build on.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, Field

from ide.fs import MAX_DEPTH, ToolError, is_binary
from ide.settings import ToolSettings
from ide.tools.base import at_path, at_path_if_given, tool
from ide.tools.workspace import Workspace

GREP_LINE_CAP = 240


class ReadFileArgs(BaseModel):
    path: str = Field(description="File path relative to the workspace root")
    start_line: int | None = Field(None, ge=1, description="First line to read (1-based)")
    end_line: int | None = Field(None, ge=1, description="Last line to read (inclusive)")


class ListDirArgs(BaseModel):
    path: str = Field(".", description="Directory relative to the workspace root")


class GrepArgs(BaseModel):
    pattern: str = Field(description="Python regular expression searched line by line")
    path: str | None = Field(None, description="File or directory to search (default: whole workspace)")


@tool(
    "read",
    lambda a: (
        f"Read {a.path}"
        + (f" lines {a.start_line or 1}-{a.end_line or 'end'}" if a.start_line or a.end_line else "")
    ),
    location=lambda a: (a.path, a.start_line),
)
def read_file(workspace: Workspace, settings: ToolSettings, args: ReadFileArgs) -> str:
    """Read a text file of the workspace, with line numbers. Optional 1-based line range."""
    path = workspace.resolve(args.path)
    if not workspace.exists(path):
        raise ToolError(f"{args.path} does not exist{_did_you_mean(workspace, args.path)}")
    if workspace.is_dir(path):
        raise ToolError(f"{args.path} is a directory; use list_dir")
    if workspace.is_ignored(path):
        raise ToolError(f"{args.path} is excluded from the workspace (.gitignore or workspace.exclude)")
    lines = workspace.read_text(path).splitlines()
    total = len(lines)
    start = args.start_line or 1
    if total and start > total:
        raise ToolError(f"{args.path} has {total} lines; start_line {start} is past the end")
    end = min(args.end_line or total, total, start + settings.read_max_lines - 1)
    if end < start and total:
        raise ToolError(f"end_line {args.end_line} is before start_line {start}")
    width = len(str(end))
    body = "\n".join(f"{number:>{width}}| {lines[number - 1]}" for number in range(start, end + 1))
    if total == 0:
        return f"{workspace.relative(path)} is empty"
    if start == 1 and end == total:
        return body
    more = f"; call read_file with start_line={end + 1} for more" if end < total else ""
    return f"{body}\n(lines {start}-{end} of {total}{more})"


@tool("read", lambda a: f"List {a.path}", location=at_path)
def list_dir(workspace: Workspace, settings: ToolSettings, args: ListDirArgs) -> str:
    """List a directory of the workspace (directories end with /), honouring .gitignore."""
    path = workspace.resolve(args.path)
    if not workspace.is_dir(path):
        raise ToolError(f"{args.path} is not a directory{_did_you_mean(workspace, args.path)}")
    entries = [name + ("/" if is_dir else "") for name, is_dir in workspace.children(path)]
    if not entries:
        return f"{workspace.relative(path)}/ is empty"
    return "\n".join(entries)


@tool(
    "search", lambda a: f"Grep {a.pattern!r}" + (f" in {a.path}" if a.path else ""), location=at_path_if_given
)
def grep(workspace: Workspace, settings: ToolSettings, args: GrepArgs) -> str:
    """Search workspace files line by line for a regular expression; prints path:line: text."""
    try:
        regex = re.compile(args.pattern)
    except re.error as exc:
        raise ToolError(f"invalid regular expression {args.pattern!r}: {exc}") from None
    start = workspace.resolve(args.path or ".")
    if not workspace.exists(start):
        raise ToolError(f"{args.path} does not exist")
    workspace.skipped = 0
    files = workspace.walk(start) if workspace.is_dir(start) else [start]
    hits: list[str] = []
    for file in files:
        if len(hits) >= settings.grep_max_matches:
            break
        hits.extend(_grep_file(workspace, file, regex, settings.grep_max_matches - len(hits)))
    skipped = (
        f"\n(skipped {workspace.skipped} directories deeper than {MAX_DEPTH} levels or in a loop)"
        if workspace.skipped
        else ""
    )
    if not hits:
        return f"no matches for {args.pattern!r}{skipped}"
    if len(hits) >= settings.grep_max_matches:
        hits.append(f"(stopped at {settings.grep_max_matches} matches; narrow the pattern or path)")
    return "\n".join(hits) + skipped


def _grep_file(workspace: Workspace, file: Path, regex: re.Pattern[str], limit: int) -> list[str]:
    try:
        if file.exists() and file.stat().st_size > workspace.settings.max_file_bytes:
            return []  # checked before reading: a huge file on disk is never loaded
        data = workspace.read_bytes(file)
    except OSError:
        return []
    if len(data) > workspace.settings.max_file_bytes:
        return []
    if is_binary(data):
        return []
    rel = workspace.relative(file)
    hits = []
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
        if regex.search(line):
            text = line if len(line) <= GREP_LINE_CAP else line[:GREP_LINE_CAP] + "…"
            hits.append(f"{rel}:{number}: {text}")
            if len(hits) >= limit:
                break
    return hits


def _did_you_mean(workspace: Workspace, path: str) -> str:
    name = Path(path).name.lower()
    if not name:
        return ""
    close = [workspace.relative(p) for p in workspace.walk() if p.name.lower() == name][:3]
    return f"; did you mean {', '.join(close)}?" if close else ""


READ_TOOLS = (read_file, list_dir, grep)
