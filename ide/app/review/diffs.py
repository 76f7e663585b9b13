"""Diff arithmetic for the Review pane, free of Qt: local hunks, review states, display rows, intraline,
a summary's stand-in hunks.

Everything here is plain data so the pane only paints, and tests and the benchmark can call it directly.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from ide.protocol.hidden import HiddenFinding
    from ide.protocol.review import ChangeSetView, Decision, FileChangeView, HunkView


FileState = Literal["pending", "partly", "accepted", "rejected", "conflict"]
RowKind = Literal["hunk", "context", "del", "add", "note", "pad"]

INTRALINE_MAX_CHARS = 500
"""Longer lines are marked as changed as a whole: word matching them would cost more than it shows."""
INTRALINE_MIN_RATIO = 0.3
"""Below this similarity a pair of lines is a rewrite, and marking every word in it would be noise."""
DECISION_TAGS = {"pending": "", "accepted": "  ✓ accepted", "rejected": "  ✗ rejected"}

_WORD = re.compile(r"\w+|\s+|[^\w\s]")


def stored_decision(hunk: HunkView) -> Decision:
    return hunk.decision


def stored_comment(hunk: HunkView) -> str | None:
    return hunk.comment


def file_state(
    file: FileChangeView, decision_of: Callable[[HunkView], Decision] = stored_decision
) -> FileState:
    """What the file list shows for ``file``: a conflict wins, then the mix of its hunks' decisions."""
    if file.conflict:
        return "conflict"
    decisions = {decision_of(hunk) for hunk in file.hunks}
    if not decisions or decisions == {"pending"}:
        return "pending"
    if len(decisions) == 1:
        return "accepted" if "accepted" in decisions else "rejected"
    return "partly"


class HunkStandIn:
    """In place of a hunk a summary left out: its id and decision, no lines (no comment and nothing hidden
    either: a summary carries the files with those in full). Counting, stepping and deciding read only
    these; the diff waits for the real hunk. A plain object, not a :class:`HunkView`: 3,000 of those
    (``model_construct``, or copies of one) took 13-40 ms before the first paint, these take 1-2 ms."""

    __slots__ = ("decision", "id")
    header = ""
    kind = "text"
    old_start = old_count = new_start = new_count = 0
    lines: tuple[str, ...] = ()
    comment: str | None = None
    hidden: tuple[HiddenFinding, ...] = ()

    def __init__(self, hunk_id: str, decision: Decision) -> None:
        self.id = hunk_id
        self.decision = decision


def stub_hunks(file: FileChangeView) -> list[HunkView]:
    """The stand-ins (:class:`HunkStandIn`) for the hunks summary ``file`` left out, in order."""
    stubs = [HunkStandIn(*pair) for pair in zip(file.hunk_ids or [], file.decisions or [], strict=True)]
    return stubs  # type: ignore[return-value]  # read as HunkViews for what they carry


def keep_loaded(file: FileChangeView, loaded: FileChangeView | None) -> None:
    """Fill summary ``file``'s hunks: ``loaded``'s (the same file's hunks shown before, when their ids are
    the summary's), with the summary's decisions, else stand-ins (:func:`stub_hunks`)."""
    if loaded is not None and not loaded.summarised and [h.id for h in loaded.hunks] == file.hunk_ids:
        file.hunks = [
            hunk if (hunk.decision, hunk.comment) == (decision, None) else _redecided(hunk, decision)
            for hunk, decision in zip(loaded.hunks, file.decisions or [], strict=True)
        ]
        file.hunk_ids = file.decisions = None
    else:
        file.hunks = stub_hunks(file)


def _redecided(hunk: HunkView, decision: Decision) -> HunkView:
    return hunk.model_copy(update={"decision": decision, "comment": None})


def _split_keep_ends(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def local_hunks(path: str, old: str | None, new: str | None) -> list[HunkView]:
    """Hunks of ``old`` → ``new`` computed here (for agents that send only ACP diffs), with the same line
    diff as the backend's review (ide.linediff).

    Ids hash the path and the hunk's lines, so the same edit keeps its id when the diff is recomputed.
    """
    import hashlib

    from ide.protocol.diff import CONTEXT_LINES, NO_NEWLINE, hunk_header, line_hunks
    from ide.protocol.hidden import scan_hunk
    from ide.protocol.review import HunkView

    hunks: list[HunkView] = []
    for found in line_hunks(_split_keep_ends(old or ""), _split_keep_ends(new or ""), CONTEXT_LINES):
        lines = [text for prefix, line in found.lines for text in _diff_lines(prefix, line, NO_NEWLINE)]
        digest = hashlib.sha1("\n".join([path, *lines]).encode("utf-8", "surrogatepass")).hexdigest()
        hunks.append(
            HunkView(
                id=f"local-{digest[:16]}",
                header=hunk_header(
                    found.old_start, found.old_count, found.new_start, found.new_count, always_count=True
                ),
                old_start=found.old_start,
                old_count=found.old_count,
                new_start=found.new_start,
                new_count=found.new_count,
                lines=lines,
                hidden=scan_hunk(lines, found.new_start),
            )
        )
    return hunks


def _diff_lines(prefix: str, line: str, no_newline: str) -> list[str]:
    """One diff line without its ending, and the ``no_newline`` marker after a line that has none."""
    stripped = line.rstrip("\r\n")
    return [prefix + stripped] if stripped != line else [prefix + stripped, no_newline]


def local_file_change(path: str, old: str | None, new: str | None) -> FileChangeView:
    """A :class:`FileChangeView` for one ACP ``diff`` (``old`` None: the agent created the file)."""
    from ide.protocol.review import FileChangeView

    hunks = local_hunks(path, old, new)
    additions = sum(1 for hunk in hunks for line in hunk.lines if line.startswith("+"))
    deletions = sum(1 for hunk in hunks for line in hunk.lines if line.startswith("-"))
    status = "added" if old is None else "modified"
    return FileChangeView(path=path, status=status, additions=additions, deletions=deletions, hunks=hunks)


@dataclass
class StandardDiffs:
    """The edits a non-Arbor agent proposed in a session, by tool call, folded per path (first base, latest
    text) over the calls that did not fail: an edit the user refused, or that failed, is not shown."""

    calls: dict[str, list[tuple[str, str | None, str]]] = field(default_factory=dict)
    """Tool call id → its (path, old, new) diffs, in the order the calls started."""

    def propose(self, call_id: str, diffs: list[tuple[str, str | None, str]]) -> None:
        """A call's diffs (an update's content replaces what the call showed before)."""
        self.calls[call_id] = diffs

    def drop(self, call_id: str) -> bool:
        """Forget a failed call's diffs; True when it had any."""
        return bool(self.calls.pop(call_id, None))

    def changeset(self, session_id: str, cwd: str) -> ChangeSetView:
        from ide.protocol.review import ChangeSetView

        bases: dict[str, str | None] = {}
        latest: dict[str, str] = {}
        for diffs in self.calls.values():
            for path, old, new in diffs:
                bases.setdefault(path, old)
                latest[path] = new
        files = [local_file_change(path, bases[path], latest[path]) for path in latest]
        return ChangeSetView(session_id=session_id, cwd=cwd, files=[f for f in files if f.hunks])


@dataclass(slots=True)
class Row:
    """One display line of a diff: what it is, its text, its hunk and its old/new line numbers."""

    kind: RowKind
    text: str
    hunk: int = -1
    old_no: int | None = None
    new_no: int | None = None
    intraline: list[tuple[int, int]] = field(default_factory=list)
    """(start, length) in characters of ``text`` that changed within a paired -/+ line."""


def intraline_spans(old: str, new: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Changed word ranges of a removed line and the added line that replaces it (empty if unrelated)."""
    import difflib

    if len(old) > INTRALINE_MAX_CHARS or len(new) > INTRALINE_MAX_CHARS:
        return [], []
    a, b = _WORD.findall(old), _WORD.findall(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if matcher.ratio() < INTRALINE_MIN_RATIO:
        return [], []
    a_offsets = _offsets(a)
    b_offsets = _offsets(b)
    old_spans: list[tuple[int, int]] = []
    new_spans: list[tuple[int, int]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if i2 > i1:
            old_spans.append((a_offsets[i1], a_offsets[i2] - a_offsets[i1]))
        if j2 > j1:
            new_spans.append((b_offsets[j1], b_offsets[j2] - b_offsets[j1]))
    return old_spans, new_spans


def _offsets(tokens: list[str]) -> list[int]:
    offsets = [0]
    for token in tokens:
        offsets.append(offsets[-1] + len(token))
    return offsets


def _pair_runs(dels: list[Row], adds: list[Row]) -> None:
    for old_row, new_row in zip(dels, adds, strict=False):
        old_spans, new_spans = intraline_spans(old_row.text[1:], new_row.text[1:])
        # Shift by one: unified rows keep their '-'/'+' prefix in column 0.
        old_row.intraline = [(start + 1, length) for start, length in old_spans]
        new_row.intraline = [(start + 1, length) for start, length in new_spans]


def hunk_header_text(hunk: HunkView) -> str:
    """The hunk's header row: the @@ line, its decision and its comment."""
    return header_text(hunk, hunk.decision, hunk.comment)


def header_text(hunk: HunkView, decision: Decision, comment: str | None) -> str:
    note = f"  💬 {comment}" if comment else ""
    hidden = "  ⚠ hides characters" if hunk.hidden else ""
    return f"{hunk.header}{DECISION_TAGS[decision]}{hidden}{note}"


def unified_rows(file: FileChangeView, header: Callable[[HunkView], str] = hunk_header_text) -> list[Row]:
    """The file's hunks as unified-diff rows, with intraline spans on paired -/+ runs."""
    from ide.protocol.hidden import show_hidden

    rows: list[Row] = []
    for index, hunk in enumerate(file.hunks):
        rows.append(Row("hunk", header(hunk), index))
        old_no, new_no = hunk.old_start, hunk.new_start
        dels: list[Row] = []
        adds: list[Row] = []
        for line in hunk.lines:
            line = show_hidden(line)  # bidi and invisible characters as a visible ⟪U+202E⟫
            prefix = line[:1]
            if prefix == "-":
                row = Row("del", line, index, old_no=old_no)
                old_no += 1
                if adds:  # a '-' after '+' starts a new change run
                    _pair_runs(dels, adds)
                    dels, adds = [], []
                dels.append(row)
            elif prefix == "+":
                row = Row("add", line, index, new_no=new_no)
                new_no += 1
                adds.append(row)
            else:
                _pair_runs(dels, adds)
                dels, adds = [], []
                if prefix == "\\":
                    row = Row("note", line, index)
                else:
                    row = Row("context", line, index, old_no=old_no, new_no=new_no)
                    old_no += 1
                    new_no += 1
            rows.append(row)
        _pair_runs(dels, adds)
    return rows


def side_by_side_rows(rows: list[Row]) -> tuple[list[Row], list[Row]]:
    """Split unified rows into aligned left (old) and right (new) columns, padding the shorter run."""
    left: list[Row] = []
    right: list[Row] = []
    dels: list[Row] = []
    adds: list[Row] = []

    def flush() -> None:
        for index in range(max(len(dels), len(adds))):
            old = dels[index] if index < len(dels) else None
            new = adds[index] if index < len(adds) else None
            hunk = (old or new).hunk  # type: ignore[union-attr]
            left.append(_strip(old) if old else Row("pad", "", hunk))
            right.append(_strip(new) if new else Row("pad", "", hunk))
        dels.clear()
        adds.clear()

    previous: RowKind = "context"
    for row in rows:
        if row.kind == "del":
            if adds:
                flush()
            dels.append(row)
        elif row.kind == "add":
            adds.append(row)
        else:
            flush()
            if row.kind == "note":
                # The marker belongs to the side of the line before it.
                left.append(_strip(row) if previous in ("del", "context") else Row("pad", "", row.hunk))
                right.append(_strip(row) if previous in ("add", "context") else Row("pad", "", row.hunk))
            elif row.kind == "hunk":
                left.append(row)
                right.append(row)
            else:
                left.append(_strip(row))
                right.append(_strip(row))
        previous = row.kind
    flush()
    return left, right


def _strip(row: Row) -> Row:
    """The row without its one-character diff prefix (side-by-side columns show no prefixes)."""
    if row.kind == "note":
        return Row(row.kind, row.text, row.hunk, row.old_no, row.new_no)
    spans = [(start - 1, length) for start, length in row.intraline if start >= 1]
    return Row(row.kind, row.text[1:], row.hunk, row.old_no, row.new_no, spans)


def code_of(rows: list[Row], prefixed: bool) -> str:
    """The rows' source text for the lexer: one line per row, header and pad rows blank."""
    cut = 1 if prefixed else 0
    return "\n".join("" if row.kind in ("hunk", "pad", "note") else row.text[cut:] for row in rows)


def unified_text(changeset: ChangeSetView) -> str:
    """The whole change set as one unified diff (the benchmark's peer renders this)."""
    from ide.protocol.diff import diff_text

    return diff_text(changeset.files, "plain")


def feedback_prompt(
    changeset: ChangeSetView, comment_of: Callable[[HunkView], str | None] = stored_comment
) -> str | None:
    """A refinement prompt from the comments on the change set's hunks (None when there are none)."""
    items = []
    for file in changeset.files:
        for hunk in file.hunks:
            comment = (comment_of(hunk) or "").strip()
            if comment:
                items.append(f"- {file.path}:{hunk.header}: {comment}")
    if not items:
        return None
    return "Feedback on your changes:\n" + "\n".join(items)
