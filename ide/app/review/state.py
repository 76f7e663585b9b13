"""What the Review pane knows and decides, free of Qt: :class:`ReviewState`, and the texts it shows.

The pane (:mod:`ide.app.review.pane`) owns one state and renders it: the state says which change set is shown,
what the user decided on it before the backend confirmed, which file and hunk are current and which is
next, what the summary reads, which actions apply, and what a button would send. Tests drive it directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ide.app.review.diffs import (
    FileState,
    StandardDiffs,
    feedback_prompt,
    file_state,
    header_text,
    keep_loaded,
)

if TYPE_CHECKING:
    from ide.client.events import SessionEvent
    from ide.protocol.review import (
        ApplyParams,
        ApplyResult,
        BatchView,
        ChangeSetView,
        ConflictView,
        DecideParams,
        Decision,
        FileChangeView,
        HistoryParams,
        HistoryResult,
        HunkView,
        RollbackResult,
    )

META_MARK = "⚠ "
"""Before the name of a file that needs its own accept (Arbor's settings, git attributes, CI, hooks)."""
PATHS_NAMED = 8
"""Files the Roll back confirmation names before "and N more"."""


def plural(count: int, noun: str) -> str:
    """``1 file``, ``3 files``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def commit_phrase(batch: BatchView) -> str:
    """``commit 1a2b3c4d5e "Fix the greeting"`` (its subject), or '' for a batch with no commit."""
    if not batch.commit:
        return ""
    subject = batch.message.splitlines()[0] if batch.message else ""
    return f'commit {batch.commit[:10]} "{subject}"' if subject else f"commit {batch.commit[:10]}"


def rollback_question(batch: BatchView) -> tuple[str, str]:
    """(text, details) of the Roll back confirmation: the files it restores and the commit it reverts."""
    named = ", ".join(batch.paths[:PATHS_NAMED])
    more = len(batch.paths) - PATHS_NAMED
    files = named + (f" and {more} more" if more > 0 else "")
    restores = plural(len(batch.paths), "file")
    text = f"Roll back batch {batch.id}? It restores {restores} as they were before Apply: {files}."
    commit = commit_phrase(batch)
    details = (
        f"Arbor's {commit} is reverted by a new commit; edits of yours made since stay on disk, uncommitted."
        if commit
        else "The batch made no commit; the files are restored from its checkpoint."
    )
    return text, details


def apply_message(result: ApplyResult) -> str:
    """What Apply did, in a sentence or three: the batch written, files left out of the commit, conflicts."""
    parts = []
    if result.batch is not None:
        commit = commit_phrase(result.batch)
        written = plural(len(result.batch.paths), "file")
        parts.append(f"Applied {written} as batch {result.batch.id}{', ' + commit if commit else ''}.")
    else:
        parts.append("Nothing was written.")
    if result.uncommitted:
        parts.append(
            f"{plural(len(result.uncommitted), 'file')} written but left out of the commit "
            f"(it overlaps edits of yours): {', '.join(result.uncommitted)}."
        )
    if result.conflicts:
        changed = plural(len(result.conflicts), "file")
        verb = "was" if len(result.conflicts) == 1 else "were"
        parts.append(
            f"{changed} changed on disk meanwhile and {verb} not written; "
            "select one below to see the merge with conflict markers."
        )
    return " ".join(parts)


def decided(changeset: ChangeSetView | None, decision_of: Any, wanted: str) -> tuple[int, int]:
    """(hunks, files) of ``changeset`` whose decision (``decision_of(hunk)``) is ``wanted``."""
    hunks = files = 0
    for file in changeset.files if changeset is not None else []:
        if file.summarised and not file.hunks:  # a summary not shown (yet): its stored decisions
            count = sum(1 for decision in file.decisions or [] if decision == wanted)
        else:
            count = sum(1 for hunk in file.hunks if decision_of(hunk) == wanted)
        hunks += count
        files += count > 0
    return hunks, files


def pending_note(changeset: ChangeSetView) -> str:
    """What an Apply left to review: ``4 hunks in 1 file still pending`` ("" when nothing is)."""
    hunks, files = decided(changeset, lambda hunk: hunk.decision, "pending")
    return f"{plural(hunks, 'hunk')} in {plural(files, 'file')} still pending." if hunks else ""


COMMIT_WORDS = {
    "commit": (" and commit", "writes them to the workspace and commits them (review.commit = commit)"),
    "stage": (
        " and stage",
        "writes them and stages them with git add; nothing is committed (review.commit = stage)",
    ),
    "none": ("", "writes them to the workspace, neither staged nor committed (review.commit = none)"),
}
"""What Apply does after writing, by ``review.commit``: the button's words and its tooltip's."""


def rollback_message(result: RollbackResult) -> str:
    """What Roll back did: the batch, its commit, the files restored and those refused."""
    commit = commit_phrase(result.batch)
    text = f"Rolled back batch {result.batch.id}"
    text += f" ({commit})" if commit else ""
    text += f": restored {plural(len(result.restored), 'file')}."
    if result.refused:
        text += " Not restored: " + "; ".join(f"{c.path} — {c.message}" for c in result.refused)
    return text


def has_notes(file: FileChangeView) -> bool:
    """Whether the file carries a note above its diff: it needs its own accept, or its hunks hide text."""
    return file.meta is not None or any(hunk.hidden for hunk in file.hunks)


def file_notes(file: FileChangeView) -> list[str]:
    """The notes above a file's diff: why it needs its own accept, and what its hunks hide."""
    from ide.protocol.hidden import describe

    hidden = [finding for hunk in file.hunks for finding in hunk.hidden]
    notes = []
    if file.meta:
        notes.append(
            f"{META_MARK}{file.path} needs its own accept — {file.meta}. "
            "Accept all leaves it pending; Accept file (Shift+A) or each hunk accepts it."
        )
    if hidden:
        notes.append(
            f"{META_MARK}This change hides characters: {describe(hidden)}. The text reads differently "
            "than it runs (Trojan Source); they are shown as ⟪U+…⟫. Accept all leaves such hunks "
            "pending: read each, then accept it on its own."
        )
    return notes


def empty_file_message(file: FileChangeView) -> str:
    """What stands in place of the diff of a file without text hunks."""
    if file.binary:
        return f"{file.path} is a binary file ({file.status})."
    if file.old_path:
        return f"Renamed from {file.old_path}, content unchanged."
    return f"{file.path}: {file.status}, no text changes."


@dataclass(frozen=True)
class ReviewActions:
    """Which of the pane's actions apply now."""

    hunk: bool
    """Accept / Reject the current hunk."""
    file: bool
    """Accept file / Reject file."""
    whole: bool
    """Accept all, Reject all and Apply."""
    comment: bool
    feedback: bool
    roll_back: bool
    """Roll back the batch selected in the History tab."""
    refresh: bool
    """Refresh the history."""


class ReviewState:
    """The session's review as the pane shows it: the change set and the decisions made on it here.

    Decisions and comments made here are optimistic: they show at once, and the next :meth:`show` of the
    backend's view replaces them. A search branch's change set can be shown read-only in place of the
    review (:meth:`enter_branch`); the review's own change set, and whether it was interactive, are kept
    meanwhile and come back with :meth:`leave_branch`. For an agent without Arbor review, standard ACP
    diffs are folded into a read-only change set (:meth:`collect`).
    """

    def __init__(self) -> None:
        self.session_id: str | None = None
        self.cwd: str | None = None
        self.interactive = False
        """True when the backend serves ``_arbor/review/*``: decisions, Apply and history go to it."""
        self.changeset: ChangeSetView | None = None
        self.conflicts: list[ConflictView] = []
        """Files the last Apply could not write."""
        self._batches: HistoryResult | None = None
        self.current_file = -1
        self.current_hunk = -1
        self.branch: ChangeSetView | None = None
        """A search branch's changes shown read-only instead of the pending review (None: the review)."""
        self.decisions: dict[str, Decision] = {}
        self.comments: dict[str, str] = {}
        self.commit_mode = "commit"
        """``review.commit``: what Apply does after writing (commit, stage or none)."""
        self._held: ChangeSetView | None = None
        self._held_interactive = False
        self._standard = StandardDiffs()

    @property
    def batches(self) -> HistoryResult:
        """The history shown: empty (as ``HistoryResult()``) until the backend's answer, which is validated.
        Made at first use, not for the first frame, which does without the wire models."""
        if self._batches is None:
            from ide.protocol.review import HistoryResult

            self._batches = HistoryResult.model_construct()
        return self._batches

    @batches.setter
    def batches(self, history: HistoryResult) -> None:
        self._batches = history

    # What is shown.

    def decision_of(self, hunk: HunkView) -> Decision:
        return self.decisions.get(hunk.id, hunk.decision)

    def comment_of(self, hunk: HunkView) -> str | None:
        return self.comments.get(hunk.id, hunk.comment)

    def header(self, hunk: HunkView) -> str:
        """The hunk's header row: its range, decision and comment."""
        return header_text(hunk, self.decision_of(hunk), self.comment_of(hunk))

    def current_file_view(self) -> FileChangeView | None:
        if self.changeset is None or not 0 <= self.current_file < len(self.changeset.files):
            return None
        return self.changeset.files[self.current_file]

    def current_loaded(self) -> bool:
        """The current file's hunks are here, not a summary's stand-ins waiting for ``review/hunks``."""
        file = self.current_file_view()
        return file is not None and not file.summarised

    def wanted(self) -> list[str]:
        """The files whose hunks to ask for now: the current one, when only its summary came."""
        file = self.current_file_view()
        return [file.path] if file is not None and file.summarised else []

    def load(self, files: list[FileChangeView]) -> bool:
        """Put in the hunks ``_arbor/review/hunks`` sent for files shown as summaries (those whose ids are
        still the summary's: an answer about an older change set is dropped); True when the current file
        was among them."""
        if self.changeset is None:
            return False
        rows = {file.path: row for row, file in enumerate(self.changeset.files)}
        current = False
        for file in files:
            row = rows.get(file.path)
            if row is None:
                continue
            shown = self.changeset.files[row]
            if not shown.summarised or shown.hunk_ids != [hunk.id for hunk in file.hunks]:
                continue
            self.changeset.files[row] = file
            current = current or row == self.current_file
        return current

    def current_hunk_view(self) -> HunkView | None:
        file = self.current_file_view()
        if file is None or not 0 <= self.current_hunk < len(file.hunks):
            return None
        return file.hunks[self.current_hunk]

    def file_states(self) -> list[FileState]:
        files = self.changeset.files if self.changeset is not None else []
        return [file_state(file, self.decision_of) for file in files]

    def hunk_caption(self) -> str:
        """``Hunk 2/4 · accepted`` for the current hunk ('' without one)."""
        file, hunk = self.current_file_view(), self.current_hunk_view()
        if file is None or hunk is None:
            return ""
        return f"Hunk {self.current_hunk + 1}/{len(file.hunks)} · {self.decision_of(hunk)}"

    def summary(self) -> str:
        """The line above the files: counts of files and hunks by decision, or the branch's size."""
        if self.branch is not None:
            files = self.branch.files
            hunks = sum(len(file.hunks) for file in files)
            return (
                f"{plural(len(files), 'file')} · {plural(hunks, 'hunk')} · read-only"
                if files
                else "This branch changed nothing."
            )
        if self.changeset is None or not self.changeset.files:
            return "No changes to review."
        counts = {"pending": 0, "accepted": 0, "rejected": 0}
        for file in self.changeset.files:
            for hunk in file.hunks:
                counts[self.decision_of(hunk)] += 1
        total = sum(counts.values())
        meta = sum(
            1
            for file in self.changeset.files
            if file.meta and any(self.decision_of(hunk) == "pending" for hunk in file.hunks)
        )
        own = f" · {meta} need their own accept" if meta else ""
        return (
            f"{plural(len(self.changeset.files), 'file')} · {plural(total, 'hunk')} · "
            f"{counts['accepted']} accepted · "
            f"{counts['rejected']} rejected · {counts['pending']} pending{own}"
        )

    def apply_label(self) -> tuple[str, str]:
        """(text, tooltip) of the Apply button: what it will write, and what it does then."""
        hunks, files = decided(self.changeset, self.decision_of, "accepted")
        then, how = COMMIT_WORDS.get(self.commit_mode, COMMIT_WORDS["commit"])
        if not hunks:
            return "Apply", f"Nothing accepted yet. Accept hunks (a), a file (Shift+A) or all; Apply {how}."
        return f"Apply {plural(hunks, 'hunk')} in {plural(files, 'file')}{then}", f"Apply {how}."

    @property
    def commentable(self) -> bool:
        """A comment can go on the current hunk (there is one, and it is the review's, not a branch's)."""
        return self.current_hunk_view() is not None and self.branch is None and self.current_loaded()

    def feedback_text(self) -> str | None:
        """The refinement prompt Send feedback would send (None without comments)."""
        if self.changeset is None:
            return None
        return feedback_prompt(self.changeset, self.comment_of)

    def actions(self, history_row: int) -> ReviewActions:
        """Which actions apply, with row ``history_row`` of the History tab selected (-1: none)."""
        interactive = self.interactive
        has_changes = self.changeset is not None and bool(self.changeset.files)
        batches = self._batches.batches if self._batches is not None else []  # none shown yet
        return ReviewActions(
            hunk=interactive and self.current_hunk_view() is not None and self.current_loaded(),
            file=interactive and self.current_file_view() is not None,
            whole=interactive and has_changes,
            comment=self.commentable,
            feedback=self.branch is None and self.feedback_text() is not None,
            roll_back=interactive
            and 0 <= history_row < len(batches)
            and not batches[history_row].rolled_back,
            refresh=interactive,
        )

    # Where the user is.

    def show(self, changeset: ChangeSetView) -> tuple[int, int] | None:
        """Take ``changeset`` as the truth, dropping the decisions made here (and, in review, the comments).

        Returns the file row and hunk to select: the file shown before and its hunk where they still
        exist, else the first file's first hunk; None when there are no files. A summary's files keep the
        hunks loaded before where they are still the same (:func:`keep_loaded`)."""
        if any(file.summarised for file in changeset.files):
            before = {f.path: f for f in self.changeset.files} if self.changeset is not None else {}
            for file in changeset.files:
                if file.summarised:
                    keep_loaded(file, before.get(file.path))
        current = self.current_file_view()
        previous_path = current.path if current is not None else None
        previous_hunk = self.current_hunk
        self.changeset = changeset
        self.decisions.clear()
        if self.interactive:
            self.comments.clear()
        files = changeset.files
        row = next((i for i, file in enumerate(files) if file.path == previous_path), 0 if files else -1)
        self.current_file = -1
        if row < 0:
            self.current_hunk = -1
            return None
        keep = previous_hunk if files[row].path == previous_path else 0
        return row, min(keep, len(files[row].hunks) - 1)

    def select(self, row: int, hunk: int = 0) -> bool:
        """Make file ``row`` current with hunk ``hunk`` (-1: its last); False when there is no such file."""
        if self.changeset is None or not 0 <= row < len(self.changeset.files):
            return False
        file = self.changeset.files[row]
        self.current_hunk = (len(file.hunks) - 1 if hunk < 0 else hunk) if file.hunks else -1
        self.current_file = row
        return True

    def next_position(self) -> tuple[int, int] | None:
        """Where j goes: (file row, hunk) of the next hunk, or of the next file's first after the last one."""
        file = self.current_file_view()
        if file is None:
            return None
        if self.current_hunk + 1 < len(file.hunks):
            return self.current_file, self.current_hunk + 1
        return (self.current_file + 1, 0) if self.next_file() is not None else None

    def previous_position(self) -> tuple[int, int] | None:
        """Where k goes: the previous hunk, or the previous file's last hunk (-1) before the first one."""
        if self.current_file_view() is None:
            return None
        if self.current_hunk > 0:
            return self.current_file, self.current_hunk - 1
        return (self.current_file - 1, -1) if self.current_file > 0 else None

    def next_file(self) -> int | None:
        """The row after the current file (None at the last)."""
        if self.changeset is None or self.current_file + 1 >= len(self.changeset.files):
            return None
        return self.current_file + 1

    # Decisions and comments.

    def decide_hunk(self, decision: Decision) -> DecideParams | None:
        """Decide the current hunk; the request to send (None: nothing to decide here)."""
        from ide.protocol.review import DecideParams

        hunk = self.current_hunk_view()
        if not self.interactive or hunk is None or self.changeset is None or not self.current_loaded():
            return None  # a hunk is decided once it is seen
        params = DecideParams(session_id=self.changeset.session_id, decision=decision, hunk_ids=[hunk.id])
        return self._decide(params, [hunk])

    def decide_file(self, decision: Decision) -> DecideParams | None:
        """Decide every hunk of the current file."""
        from ide.protocol.review import DecideParams

        file = self.current_file_view()
        if not self.interactive or file is None or self.changeset is None:
            return None
        params = DecideParams(session_id=self.changeset.session_id, decision=decision, paths=[file.path])
        return self._decide(params, file.hunks)

    def decide_all(self, decision: Decision) -> DecideParams | None:
        """Decide the change set wholesale: every hunk but those that need their own decision
        (:meth:`ChangeSetView.wholesale_hunks`, the rule the backend applies too)."""
        from ide.protocol.review import DecideParams

        if not self.interactive or self.changeset is None:
            return None
        params = DecideParams(session_id=self.changeset.session_id, decision=decision, all=True)
        return self._decide(params, self.changeset.wholesale_hunks())

    def _decide(self, params: DecideParams, hunks: list[HunkView]) -> DecideParams:
        for hunk in hunks:
            self.decisions[hunk.id] = params.decision
        return params

    def comment(self, text: str) -> DecideParams | None:
        """Attach ``text`` to the current hunk when :attr:`commentable`; the request that records it with
        the backend (None when the review is read-only or nothing was attached)."""
        from ide.protocol.review import DecideParams

        hunk = self.current_hunk_view()
        if hunk is None or self.changeset is None or not text or self.branch is not None:
            return None
        self.comments[hunk.id] = text
        if not self.interactive:
            return None
        return DecideParams(
            session_id=self.changeset.session_id,
            decision=self.decision_of(hunk),
            hunk_ids=[hunk.id],
            comment=text,
        )

    def feedback(self) -> str | None:
        """The prompt Send feedback sends now (None: no comments, or a branch is shown)."""
        return self.feedback_text() if self.branch is None else None

    def revert(self) -> bool:
        """Drop the decisions the backend did not confirm; False when there were none to drop."""
        if not self.decisions or self.changeset is None:
            return False
        self.decisions.clear()
        return True

    # What the buttons send, and what comes back.

    def apply_params(self) -> ApplyParams | None:
        """What Apply sends: the session's accepted hunks are written (None: Apply does nothing here)."""
        from ide.protocol.review import ApplyParams

        if self.interactive and self.changeset is not None:
            return ApplyParams(session_id=self.changeset.session_id)
        return None

    def history_params(self) -> HistoryParams | None:
        from ide.protocol.review import HistoryParams

        if self.interactive and self.cwd:
            return HistoryParams(cwd=self.cwd)
        return None

    def rollback_target(self, history_row: int) -> BatchView | None:
        """The batch Roll back would revert with row ``history_row`` selected (None: none that can be)."""
        if not self.interactive or not 0 <= history_row < len(self.batches.batches):
            return None
        batch = self.batches.batches[history_row]
        return None if batch.rolled_back else batch

    def applied(self, result: ApplyResult) -> str:
        """Keep an Apply's conflicts (its change set goes to :meth:`receive`); what it did, what is left."""
        self.conflicts = list(result.conflicts)
        note = pending_note(result.changeset)
        return apply_message(result) + (f" {note}" if note else "")

    def conflict(self, index: int) -> ConflictView | None:
        return self.conflicts[index] if 0 <= index < len(self.conflicts) else None

    # The review, a branch, a session.

    def set_interactive(self, interactive: bool) -> bool:
        """Whether the backend serves ``_arbor/review/*``; False when a branch is shown (then it is kept
        for when the review comes back, and nothing on screen changes)."""
        if self.branch is not None:
            self._held_interactive = interactive
            return False
        self.interactive = interactive
        return True

    def receive(self, changeset: ChangeSetView) -> bool:
        """The review's change set arrived; False when a branch is shown (it is kept for later)."""
        if self.branch is not None:
            self._held = changeset
            return False
        return True

    def enter_branch(self, changeset: ChangeSetView) -> None:
        """Show a branch's change set read-only; the review is kept until :meth:`leave_branch`."""
        if self.branch is None:
            self._held, self._held_interactive = self.changeset, self.interactive
        self.branch = changeset
        self.interactive = False

    def leave_branch(self) -> ChangeSetView | None:
        """Back to the review; its change set to :meth:`show` (None: there is none, nothing is current)."""
        self.branch = None
        self.interactive = self._held_interactive
        held, self._held = self._held, None
        if held is None:
            self.changeset = None
            self.current_file = self.current_hunk = -1
        return held

    def clear(self) -> None:
        """Show nothing (a new session, or a replay about to rebuild the view); the history stays."""
        if self.branch is not None:
            self._held = None
            self.leave_branch()
        self._standard = StandardDiffs()
        self.changeset = None
        self.conflicts = []
        self.decisions.clear()
        self.comments.clear()
        self.current_file = self.current_hunk = -1

    def collect(self, event: SessionEvent) -> bool:
        """Fold a tool call's standard ACP ``diff`` into the read-only review (an agent without Arbor's
        review); True when the view changes: a diff came, or a call that proposed one failed (not shown)."""
        from ide.client.events import ToolCallEvent  # not for the first frame (ide.app.acp_client)

        if self.interactive or not isinstance(event, ToolCallEvent):
            return False
        if "status" in event.changed and event.status == "failed":
            return self._standard.drop(event.id)
        diffs = [
            (self._relative(item.path), item.old_text, item.new_text)
            for item in ((event.content or ()) if "content" in event.changed else ())
            if getattr(item, "type", None) == "diff"
        ]
        if diffs:
            self._standard.propose(event.id, diffs)
        return bool(diffs)

    def standard_changeset(self) -> ChangeSetView:
        """The diffs collected so far, as a read-only change set."""
        return self._standard.changeset(self.session_id or "", self.cwd or "")

    def _relative(self, path: str) -> str:
        if self.cwd:
            try:
                return Path(path).relative_to(self.cwd).as_posix()
            except ValueError:
                pass
        return path
