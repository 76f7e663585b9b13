"""What one window part offers the others: a small Protocol each, named in a part's ``provides`` and asked
for with :class:`~ide.app.parts.needs.Requires` or :class:`~ide.app.parts.needs.Uses`.

A part sees another only through these, never by its name: a new provider (another chat, a test's stand-in)
serves whoever needs the capability. Each is ``runtime_checkable``: the window checks that a provider has
every member.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from PySide6.QtCore import SignalInstance
    from PySide6.QtWidgets import QDockWidget

    from ide.app.chat.panel import ChatPanel
    from ide.app.review.client import ReviewChannel
    from ide.app.tree.steering import ContinueElsewhere
    from ide.app.tree.verdict import RunCheck
    from ide.protocol.model import ModelHealth
    from ide.protocol.review import ChangeSetView
    from ide.protocol.tree import TreeEvent


@runtime_checkable
class OpensFiles(Protocol):
    """Opens a workspace file in the viewer (the Workspace dock, which selects it in its tree too)."""

    def open_location(self, path: str, line: int, column: int = 1) -> None:
        """Show ``path`` (absolute or workspace-relative) at ``line`` (0: the file's top)."""
        ...


@runtime_checkable
class Chat(Protocol):
    """The conversation (the Chat dock): its panel, and the dock to raise."""

    panel: ChatPanel
    dock: QDockWidget


@runtime_checkable
class Review(Protocol):
    """The Review dock: a search branch shown read-only, a foreign agent's edits to review, and when an
    Apply or a Roll back changed the workspace's files."""

    applied: SignalInstance
    """An Apply answered (its ``ApplyResult``): files may have been written, made or removed."""
    rolledBack: SignalInstance
    """A Roll back answered: files were put back."""

    def show_branch(self, changeset: ChangeSetView, header: str) -> None:
        """Show a branch's changes read-only under ``header``, and the dock."""
        ...

    def show_changeset(self, changeset: ChangeSetView) -> None:
        """The session's change set is ``changeset`` now (a search branch adopted: Use this branch): shown
        for review, decisions and Apply, and the dock."""
        ...

    def show_foreign(self, changeset: ChangeSetView, channel: ReviewChannel) -> None:
        """Review a foreign agent's edits, held by Arbor's review backend (``channel``), as Arbor's own:
        the review's requests go through ``channel`` from now on."""
        ...


@runtime_checkable
class SearchTrees(Protocol):
    """The Search tree dock: trees from events or files, the live runs a failed turn leaves open, and who
    continues a file's runs (Continue from here)."""

    def add_events(self, events: list[TreeEvent]) -> None:
        """Add tree events to the current session's trees (as ``_arbor/tree`` notifications do)."""
        ...

    def open_file(self, path: Path, *, maximise: bool = True, check: RunCheck | None = None) -> bool:
        """Open a tree file in the dock, given the whole window unless not ``maximise``, its run judged by
        an eval report's ``check``; False (the banner says why) when it cannot be read."""
        ...

    def close_open_runs(self, reason: str) -> None:
        """End the live trees no event closed: active nodes failed, the run failed with ``reason``."""
        ...

    def continue_elsewhere(self, source: str, handler: ContinueElsewhere) -> None:
        """Continue from here, on a run of the file named ``source``, calls ``handler`` (the run's events,
        the node's id, the hint, the mode or None) instead of continuing in this window's session."""
        ...


@runtime_checkable
class EvalReports(Protocol):
    """The Eval dock: an ``arbor eval`` report opened from its file or folder."""

    def open_report(self, path: Path, *, show: bool = True) -> bool:
        """Open ``report.json`` or the folder holding it; False (the dock says why) if it is not a report."""
        ...


@runtime_checkable
class ModelChecks(Protocol):
    """What is known of the model (the probe part): the health check as a session opens, and the probe's
    verdicts ("Test Model", and what an earlier test found)."""

    health: ModelHealth | None
    note: str
    """Why :attr:`health` is None, as the status bar says it: the backend is not running, the agent does
    not report its model's health ("" while it has not been checked yet)."""
    healthChanged: SignalInstance
    """The new :class:`ModelHealth`, or None when the model is not known (no backend, a foreign agent)."""
    probesChanged: SignalInstance
    """The list of :class:`ModelProbe` verdicts the backend gave (fresh or cached)."""

    def test_models(self, *, report: bool = True) -> None:
        """Probe every model the workspace uses (a real tool-call and structured request each); the
        verdicts reach :attr:`probesChanged`, and a report dialog opens when ``report``."""
        ...
