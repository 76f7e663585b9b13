"""Wire models of batched review: the change set of a turn, decisions, apply, rollback and history.

Methods (the SDK adds the leading underscore on the wire):

- notification ``_arbor/changeset`` (agent → client, at the end of a turn that edited files):
  :class:`ChangeSetView`.
- request ``_arbor/review/decide``: :class:`DecideParams` → :class:`ChangeSetView`.
- request ``_arbor/review/apply``: :class:`ApplyParams` → :class:`ApplyResult`.
- request ``_arbor/review/rollback``: :class:`RollbackParams` → :class:`RollbackResult`.
- request ``_arbor/review/history``: :class:`HistoryParams` → :class:`HistoryResult`.
- request ``_arbor/review/changeset``: :class:`ChangeSetParams` → :class:`ChangeSetView` (current state).
- request ``_arbor/review/hunks``: :class:`HunksParams` → :class:`HunksResult` (the hunks a summary left out).

A client that puts ``reviewHunks: true`` in ``clientCapabilities._meta.arbor`` gets every change set
(the notification, and the answers to ``changeset``, ``decide`` and ``apply``) as a summary: each file's
path, status, +/- counts and its hunks' ids and decisions (``FileChangeView.hunk_ids``/``decisions``), with
the hunk bodies only for the first screen (:data:`FIRST_SCREEN_HUNKS`), for files with a comment and for
files whose hunks hide characters; it asks ``_arbor/review/hunks`` for the others. A client that does not
gets every hunk, as before.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ide.protocol.diff import diff_text
from ide.protocol.hidden import HiddenFinding
from ide.protocol.method import Method, Notification
from ide.protocol.wire import WireModel

Decision = Literal["pending", "accepted", "rejected"]
FileStatus = Literal["added", "modified", "deleted", "renamed"]
HunkKind = Literal["text", "binary", "rename", "mode"]
GitMode = Literal["100644", "100755"]


class HunkView(WireModel):
    """One hunk of a file's unified diff against the base the agent read."""

    id: str = Field(description="Stable id: the same edit against the same base keeps its id")
    header: str = Field(
        description="@@ -old_start,old_count +new_start,new_count @@ of a text hunk; what a pseudo-hunk does"
    )
    kind: HunkKind = Field(
        "text",
        description="text: lines of the file; binary: the whole binary file; rename: the file's move; mode: "
        "its mode as git records it (the header says old and new). Each is decided like a hunk",
    )
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    lines: list[str] = Field(
        description="Diff lines with their prefix: ' ' context, '-' removed, '+' added, "
        "'\\\\' for '\\\\ No newline at end of file'; text without the line ending"
    )
    decision: Decision = "pending"
    comment: str | None = None
    hidden: list[HiddenFinding] = Field(
        default_factory=list,
        description="Bidi controls, invisible characters and mixed-script identifiers on added lines: "
        "such a hunk reads differently than it runs, so Accept all leaves it to be accepted on its own",
    )


class FileChangeView(WireModel):
    """A file the change set touches."""

    path: str = Field(description="Workspace-relative POSIX path after the change")
    old_path: str | None = Field(None, description="Path before a rename")
    status: FileStatus
    binary: bool = False
    old_mode: GitMode | None = Field(
        None, description="git's mode before: set for a deleted file and when the change set changes it"
    )
    new_mode: GitMode | None = Field(
        None, description="git's mode after: set for an added file and when the change set changes it"
    )
    additions: int = 0
    deletions: int = 0
    hunks: list[HunkView] = Field(default_factory=list)
    hunk_ids: list[str] | None = Field(
        None,
        description="Set in a summary, whose ``hunks`` are left out (``_arbor/review/hunks`` sends them): "
        "the ids of the file's hunks, in order",
    )
    decisions: list[Decision] | None = Field(None, description="In a summary: each hunk's decision, in order")
    conflict: str | None = Field(None, description="Why the last apply could not write this file")
    meta: str | None = Field(
        None,
        description="Why this file needs its own accept (Arbor's settings, git attributes, CI, hooks…); "
        "meta files are never covered by deciding all",
    )

    @property
    def summarised(self) -> bool:
        """Its hunks were left out (a summary): only their ids and decisions came."""
        return self.hunk_ids is not None


FIRST_SCREEN_HUNKS = 20
"""A summary carries the hunks of its first files in full until this many (at least the first file's)."""


class ChangeSetView(WireModel):
    """The pending change set of a session, as the review pane shows it."""

    session_id: str
    cwd: str
    title: str | None = Field(None, description="The task that produced it")
    files: list[FileChangeView] = Field(default_factory=list)

    def wholesale_hunks(self) -> list[HunkView]:
        """The hunks Accept all / Reject all decide: all but meta files' and those hiding characters,
        which are decided only on their own (the backend and the window share this rule)."""
        return [hunk for file in self.files if not file.meta for hunk in file.hunks if not hunk.hidden]


class ChangeSetParams(WireModel):
    session_id: str


class HunksParams(WireModel):
    """The hunks of ``paths``, which a summary left out."""

    session_id: str
    paths: list[str]


class HunksResult(WireModel):
    files: list[FileChangeView] = Field(
        default_factory=list,
        description="The files asked for, in full (same hunk ids and decisions as the change set); a path no "
        "longer in the change set is left out",
    )


class DecideParams(WireModel):
    """Decide hunks: by id, by file, or all of them (``ChangeSetView.wholesale_hunks``: all but meta files
    and hunks hiding characters, which need their own decision)."""

    session_id: str
    decision: Decision
    hunk_ids: list[str] = Field(default_factory=list)
    paths: list[str] = Field(default_factory=list)
    all: bool = False
    comment: str | None = Field(None, description="Feedback on the hunks, for a refinement turn")


class BatchView(WireModel):
    """An applied batch: what was written, its checkpoint and commit."""

    id: str
    session_id: str
    cwd: str
    created_at: str
    message: str
    paths: list[str]
    commit: str | None = None
    rolled_back: bool = False
    state: str = Field("applied", description="applying | applied | rolled_back | failed")
    reason: str | None = Field(None, description="Why it failed, or why recovery rolled it back")


class ConflictView(WireModel):
    """A file that was not written because the user changed it too."""

    path: str
    message: str
    merged: str | None = Field(None, description="The three-way merge with conflict markers, for display")


class ApplyParams(WireModel):
    session_id: str
    message: str | None = Field(None, description="Commit message; default from the task")


class ApplyResult(WireModel):
    batch: BatchView | None = Field(None, description="None when nothing accepted could be written")
    conflicts: list[ConflictView] = Field(default_factory=list)
    uncommitted: list[str] = Field(
        default_factory=list,
        description="Files written but left out of the commit: the accepted change overlaps edits of yours "
        "that were never committed, so committing it would commit them too",
    )
    changeset: ChangeSetView = Field(description="What remains to review after the apply")


class RollbackParams(WireModel):
    cwd: str
    batch_id: str | None = Field(None, description="Default: the last applied batch not rolled back")


class RollbackResult(WireModel):
    batch: BatchView
    restored: list[str] = Field(default_factory=list)
    refused: list[ConflictView] = Field(default_factory=list)


class HistoryParams(WireModel):
    cwd: str
    limit: int = Field(50, ge=1, le=10_000)


class HistoryResult(WireModel):
    batches: list[BatchView] = Field(default_factory=list)


CHANGESET_NOTIFICATION = Notification("arbor/changeset", ChangeSetView)
DECIDE = Method("arbor/review/decide", DecideParams, ChangeSetView)
APPLY = Method("arbor/review/apply", ApplyParams, ApplyResult, timeout_s=600.0)
"""A checkpoint, the writes and a git commit."""
ROLLBACK = Method("arbor/review/rollback", RollbackParams, RollbackResult, timeout_s=600.0)
HISTORY = Method("arbor/review/history", HistoryParams, HistoryResult)
CHANGESET = Method("arbor/review/changeset", ChangeSetParams, ChangeSetView)
HUNKS = Method("arbor/review/hunks", HunksParams, HunksResult)
REVIEW_METHODS = [CHANGESET_NOTIFICATION, DECIDE, APPLY, ROLLBACK, HISTORY, CHANGESET, HUNKS]
SUMMARY_CAPABILITY = "reviewHunks"
"""The client's ``_meta.arbor`` key asking for change sets as summaries (it asks ``HUNKS`` for the rest)."""


def unified_diff(view: ChangeSetView) -> str:
    """The change set as one git-style unified diff (what `arbor run` prints), unusual names quoted."""
    return diff_text(view.files)
