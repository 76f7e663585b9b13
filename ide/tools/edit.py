"""The agent's editing tools. They change the session's change set, never the user's files.

Every edit lands in the overlay (ide.changes.ChangeSet); the user decides hunk by hunk what reaches disk.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from ide.changes import ChangeError, ChangeSet
from ide.fs import ToolError
from ide.settings import ToolSettings
from ide.tools.base import at_path, tool
from ide.tools.workspace import Workspace


class EditFileArgs(BaseModel):
    path: str = Field(description="File path relative to the workspace root")
    old_text: str = Field(description="Exact text to replace; must occur exactly once (include context)")
    new_text: str = Field(description="Replacement text")


class WriteFileArgs(BaseModel):
    path: str = Field(description="File path relative to the workspace root")
    content: str = Field(description="The whole new content of the file")


class DeleteFileArgs(BaseModel):
    path: str = Field(description="File path relative to the workspace root")


class RenameFileArgs(BaseModel):
    path: str = Field(description="Current path relative to the workspace root")
    new_path: str = Field(description="New path relative to the workspace root")


def _target(workspace: Workspace, path: str) -> str:
    """The workspace-relative path an edit may touch: inside the root and not excluded."""
    resolved = workspace.resolve(path)
    if resolved == workspace.root:
        raise ToolError("give a file path, not the workspace root")
    if workspace.is_ignored(resolved):
        raise ToolError(f"{path} is excluded from the workspace (.gitignore or workspace.exclude)")
    workspace.check_new_name(resolved)
    return workspace.relative(resolved)


def _changes(workspace: Workspace) -> ChangeSet:
    if not isinstance(workspace.overlay, ChangeSet):
        raise ToolError("this session cannot edit files (it has no change set)")
    return workspace.overlay


def _run(action: Any) -> None:
    try:
        action()
    except ChangeError as exc:
        raise ToolError(str(exc)) from None


PROPOSED = "(proposed; the user reviews it before it is written)"


def _propose(workspace: Workspace, path: str, done: str, change: Callable[[ChangeSet, str], object]) -> str:
    """Make one change to the file at ``path`` in the session's change set, and say so."""
    rel = _target(workspace, path)
    _run(lambda: change(_changes(workspace), rel))
    return f"{done} {rel} {PROPOSED}"


def _the_path(args: Any) -> list[str]:
    return [args.path]


@tool("edit", lambda a: f"Edit {a.path}", location=at_path, touches=_the_path)
def edit_file(workspace: Workspace, settings: ToolSettings, args: EditFileArgs) -> str:
    """Replace old_text with new_text in a file. old_text must match exactly once; include enough surrounding
    lines to make it unique."""
    return _propose(
        workspace, args.path, "edited", lambda changes, rel: changes.edit(rel, args.old_text, args.new_text)
    )


@tool("edit", lambda a: f"Write {a.path}", location=at_path, touches=_the_path)
def write_file(workspace: Workspace, settings: ToolSettings, args: WriteFileArgs) -> str:
    """Write the whole content of a file, creating it if needed."""
    return _propose(workspace, args.path, "wrote", lambda changes, rel: changes.write(rel, args.content))


@tool("edit", lambda a: f"Create {a.path}", location=at_path, touches=_the_path)
def create_file(workspace: Workspace, settings: ToolSettings, args: WriteFileArgs) -> str:
    """Create a new file with the given content (fails if it exists)."""
    return _propose(workspace, args.path, "created", lambda changes, rel: changes.create(rel, args.content))


@tool("delete", lambda a: f"Delete {a.path}", location=at_path, touches=_the_path)
def delete_file(workspace: Workspace, settings: ToolSettings, args: DeleteFileArgs) -> str:
    """Delete a file."""
    return _propose(workspace, args.path, "deleted", lambda changes, rel: changes.delete(rel))


@tool(
    "move",
    lambda a: f"Rename {a.path} → {a.new_path}",
    location=lambda a: (a.new_path, None),
    touches=lambda a: [a.path, a.new_path],
)
def rename_file(workspace: Workspace, settings: ToolSettings, args: RenameFileArgs) -> str:
    """Rename or move a file."""
    rel, new_rel = _target(workspace, args.path), _target(workspace, args.new_path)
    _run(lambda: _changes(workspace).rename(rel, new_rel))
    return f"renamed {rel} to {new_rel} {PROPOSED}"


EDIT_TOOLS = (edit_file, write_file, create_file, delete_file, rename_file)
