"""The agent's editing tools. They change the session's change set, never the user's files.

Every edit lands in the overlay (ide.changes.ChangeSet); the user decides hunk by hunk what reaches disk.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from ide.changes import ChangeError, ChangeSet
from ide.settings import ToolSettings
from ide.tools.base import ToolSpec
from ide.tools.workspace import ToolError, Workspace


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


def edit_file(workspace: Workspace, settings: ToolSettings, args: EditFileArgs) -> str:
    rel = _target(workspace, args.path)
    _run(lambda: _changes(workspace).edit(rel, args.old_text, args.new_text))
    return f"edited {rel} (proposed; the user reviews it before it is written)"


def write_file(workspace: Workspace, settings: ToolSettings, args: WriteFileArgs) -> str:
    rel = _target(workspace, args.path)
    _run(lambda: _changes(workspace).write(rel, args.content))
    return f"wrote {rel} (proposed; the user reviews it before it is written)"


def create_file(workspace: Workspace, settings: ToolSettings, args: WriteFileArgs) -> str:
    rel = _target(workspace, args.path)
    _run(lambda: _changes(workspace).create(rel, args.content))
    return f"created {rel} (proposed; the user reviews it before it is written)"


def delete_file(workspace: Workspace, settings: ToolSettings, args: DeleteFileArgs) -> str:
    rel = _target(workspace, args.path)
    _run(lambda: _changes(workspace).delete(rel))
    return f"deleted {rel} (proposed; the user reviews it before it is written)"


def rename_file(workspace: Workspace, settings: ToolSettings, args: RenameFileArgs) -> str:
    rel, new_rel = _target(workspace, args.path), _target(workspace, args.new_path)
    _run(lambda: _changes(workspace).rename(rel, new_rel))
    return f"renamed {rel} to {new_rel} (proposed; the user reviews it before it is written)"


EDIT_TOOLS = (
    ToolSpec(
        name="edit_file",
        description="Replace old_text with new_text in a file. old_text must match exactly once; "
        "include enough surrounding lines to make it unique.",
        kind="edit",
        args_model=EditFileArgs,
        run=edit_file,
        title=lambda a: f"Edit {a.path}",
        location=lambda a: (a.path, None),
        touches=lambda a: [a.path],
    ),
    ToolSpec(
        name="write_file",
        description="Write the whole content of a file, creating it if needed.",
        kind="edit",
        args_model=WriteFileArgs,
        run=write_file,
        title=lambda a: f"Write {a.path}",
        location=lambda a: (a.path, None),
        touches=lambda a: [a.path],
    ),
    ToolSpec(
        name="create_file",
        description="Create a new file with the given content (fails if it exists).",
        kind="edit",
        args_model=WriteFileArgs,
        run=create_file,
        title=lambda a: f"Create {a.path}",
        location=lambda a: (a.path, None),
        touches=lambda a: [a.path],
    ),
    ToolSpec(
        name="delete_file",
        description="Delete a file.",
        kind="delete",
        args_model=DeleteFileArgs,
        run=delete_file,
        title=lambda a: f"Delete {a.path}",
        location=lambda a: (a.path, None),
        touches=lambda a: [a.path],
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
