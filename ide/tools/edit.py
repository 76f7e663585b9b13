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
from ide.tools.base import ToolKind, ToolSpec
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


def _path_tool(
    name: str,
    description: str,
    kind: ToolKind,
    args_model: type[BaseModel],
    title: str,
    done: str,
    change: Callable[[ChangeSet, str, Any], object],
) -> ToolSpec:
    """A tool that makes one change to the file at ``args.path`` in the session's change set."""

    def run(workspace: Workspace, settings: ToolSettings, args: Any) -> str:
        rel = _target(workspace, args.path)
        _run(lambda: change(_changes(workspace), rel, args))
        return f"{done} {rel} {PROPOSED}"

    return ToolSpec(
        name=name,
        description=description,
        kind=kind,
        args_model=args_model,
        run=run,
        title=lambda a: f"{title} {a.path}",
        location=lambda a: (a.path, None),
        touches=lambda a: [a.path],
    )


def rename_file(workspace: Workspace, settings: ToolSettings, args: RenameFileArgs) -> str:
    rel, new_rel = _target(workspace, args.path), _target(workspace, args.new_path)
    _run(lambda: _changes(workspace).rename(rel, new_rel))
    return f"renamed {rel} to {new_rel} {PROPOSED}"


EDIT_TOOLS = (
    _path_tool(
        "edit_file",
        "Replace old_text with new_text in a file. old_text must match exactly once; "
        "include enough surrounding lines to make it unique.",
        "edit",
        EditFileArgs,
        "Edit",
        "edited",
        lambda changes, rel, a: changes.edit(rel, a.old_text, a.new_text),
    ),
    _path_tool(
        "write_file",
        "Write the whole content of a file, creating it if needed.",
        "edit",
        WriteFileArgs,
        "Write",
        "wrote",
        lambda changes, rel, a: changes.write(rel, a.content),
    ),
    _path_tool(
        "create_file",
        "Create a new file with the given content (fails if it exists).",
        "edit",
        WriteFileArgs,
        "Create",
        "created",
        lambda changes, rel, a: changes.create(rel, a.content),
    ),
    _path_tool(
        "delete_file",
        "Delete a file.",
        "delete",
        DeleteFileArgs,
        "Delete",
        "deleted",
        lambda changes, rel, a: changes.delete(rel),
    ),
    ToolSpec(
        name="rename_file",
        description="Rename or move a file.",
        kind="move",
        args_model=RenameFileArgs,
        run=rename_file,
        title=lambda a: f"Rename {a.path} → {a.new_path}",
        location=lambda a: (a.new_path, None),
        touches=lambda a: [a.path, a.new_path],
    ),
)
