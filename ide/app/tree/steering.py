"""The Search tree dock's requests that steer the session from its tree (``_arbor/tree/*``).

- **Continue from here…** asks for a hint and a mode (:class:`~ide.app.tree.continue_dialog.ContinueDialog`),
  sends ``FORK`` (with the run's events when the session does not hold the run: one opened from a file or
  kept from an earlier session), then the hint as the next prompt, which the chat shows as the user's
  message like any other. A file registered with :meth:`TreeSteering.continue_elsewhere` (the recorded
  sample) is continued by its handler instead: in a demo window of its own.
- **Use this branch** sends ``ADOPT``; when the review holds decisions the backend changes nothing and
  says how many, and the user is asked before it is sent again with ``replace``. The Review dock then shows
  the adopted change set.
- **Prune** and **Expand** send ``STEER`` for a node of the running search.

A refusal (the backend does not offer the method, "method not found", a turn running) is said in the
dock's message line and the status bar, never raised.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QMessageBox

from ide.app.acp_client import BackendState
from ide.app.tree.continue_dialog import ContinueDialog
from ide.app.tree.lineage import DEFAULT_HINT, Backend, short_run
from ide.app.tree.style import node_caption

if TYPE_CHECKING:
    from ide.app.parts.base import AppContext
    from ide.app.parts.capabilities import Review
    from ide.app.tree.view import SearchTreeView
    from ide.protocol import ErrorInfo
    from ide.protocol.method import Method
    from ide.protocol.steer import AdoptResult, ForkResult, SteerResult
    from ide.protocol.tree import SearchTree, TreeEvent

ContinueElsewhere = Callable[["list[TreeEvent]", str, str, "str | None"], None]
"""Carries out Continue from here for a file's run: its events, the node's id, the hint and the mode
(None: the run's own)."""


def arbor_modes() -> list[tuple[str, str, str]]:
    """Arbor's session modes (id, name, description), for a continuation carried out elsewhere while
    this window's backend has told none."""
    from ide.protocol.modes import MODE_TABLE

    return [(mode.id, mode.name, mode.description) for mode in MODE_TABLE]


NAMES = {"fork": "Continue from here", "adopt": "Use this branch", "steer": "Steering the search"}


class TreeSteering(QObject):
    """Sends the tree's steering requests for the session of ``ctx``'s bridge, the actions of ``view``."""

    forked = Signal(object)
    """The backend armed the next prompt (its :class:`ForkResult`) and the hint went as that prompt."""
    adopted = Signal(object)
    """A branch became the session's change set (the :class:`AdoptResult`)."""
    steered = Signal(object)
    """The running search answered a prune or an expand (its :class:`SteerResult`)."""
    said = Signal(str)
    """What the dock told the user about a steering request (a refusal among them)."""

    def __init__(self, ctx: AppContext, view: SearchTreeView, review: Review) -> None:
        super().__init__(view)
        self.ctx, self.bridge, self.view, self.review = ctx, ctx.bridge, view, review
        self.dialog: ContinueDialog | None = None
        """The Continue from here dialog, made when first asked for."""
        self.confirm_box: QMessageBox | None = None
        """The question before a branch replaces a review that holds decisions (while it is open)."""
        self.elsewhere: dict[str, ContinueElsewhere] = {}
        """Files (by name) whose runs are continued by a handler of their own."""
        self._asked: tuple[str, str] | None = None
        actions = view.node_actions
        actions.continueRequested.connect(self.ask_continue)
        actions.adoptRequested.connect(lambda key, node_id: self.adopt(key, node_id))
        actions.steerRequested.connect(self.steer)

    def backend(self) -> Backend:
        """What the backend offers the node actions now."""
        from ide.protocol.steer import ADOPT, FORK, STEER

        bridge = self.bridge
        running = bridge.state in (BackendState.READY, BackendState.BUSY)
        return Backend(
            fork=bridge.supports(FORK),
            adopt=bridge.supports(ADOPT),
            steer=bridge.supports(STEER),
            ready=running and bridge.state == BackendState.READY and bridge.session_id is not None,
            running=running,
        )

    def continue_elsewhere(self, source: str, handler: ContinueElsewhere) -> None:
        """Continue the runs of file ``source`` (its name) with ``handler`` instead of this session."""
        self.elsewhere[source] = handler
        self.view.node_actions.redirected.add(source)
        self.view.node_actions.refresh()

    def say(self, text: str, *, line: bool = True) -> None:
        """Tell the user ``text`` in the status bar and, with ``line`` (a refusal, a note on what the
        continuation lacks), in the dock's message line too, where it stays until the next message."""
        if line:
            self.view.show_message(text)
        self.ctx.message(text, 10_000)
        self.said.emit(text)

    # Continue from here

    def ask_continue(self, key: str, node_id: str) -> ContinueDialog | None:
        """Open the dialog for node ``node_id`` of run ``key``: the hint, and the mode (the run's own)."""
        tree = self.view.runs.get(key)
        node = tree.nodes.get(node_id) if tree is not None else None
        if tree is None or node is None:
            return None
        if self.dialog is None:
            self.dialog = ContinueDialog(self.ctx.window)
            self.dialog.accepted.connect(self._continue_chosen)
        self._asked = (key, node_id)
        source = self._source(key)
        modes = list(self.bridge.modes) or arbor_modes()  # a demo window continues in Arbor's own
        ids = [mode_id for mode_id, _name, _description in modes]
        default = tree.architecture if tree.architecture in ids or not ids else self.bridge.mode
        if source in self.elsewhere:
            note = "It runs in a demo window of its own, on a copy of the sample's project, with this model."
        elif self.view.node_actions.run_kind(key) != "live":
            note = (
                "The session does not hold this run: its events are sent, and its branches' changes are not "
                "known — the continuation starts from the session's own changes."
            )
        else:
            note = ""
        where = f"{short_run(tree.run_id)}{f' · {tree.architecture}' if tree.architecture else ''}"
        self.dialog.ask(f"From node {node_id} — {node_caption(node)} — of {where}", modes, default, note)
        return self.dialog

    def _continue_chosen(self) -> None:
        if self.dialog is None or self._asked is None:
            return
        key, node_id = self._asked
        tree = self.view.runs.get(key)
        if tree is None:
            return
        mode = self.dialog.mode()
        mode = None if mode == tree.architecture else mode
        handler = self.elsewhere.get(self._source(key) or "")
        if handler is not None:
            handler(list(tree.events), node_id, self.dialog.hint(), mode)
        else:
            self.fork(key, node_id, self.dialog.hint(), mode)

    def fork(self, key: str, node_id: str, hint: str, mode: str | None = None) -> bool:
        """Arm the session's next prompt to continue from ``node_id`` of run ``key`` (in ``mode``; None:
        the run's own architecture), then send ``hint`` (or :data:`DEFAULT_HINT`) as that prompt. False
        when the request could not go; what happens after is said, or :attr:`forked` emitted."""
        from ide.protocol.steer import FORK, ForkParams

        tree = self.view.runs.get(key)
        session_id = self.bridge.session_id
        if tree is None or tree.run_id is None:
            return False
        if session_id is None or self.bridge.state != BackendState.READY:
            self.say(f"{NAMES['fork']}: {self._not_ready()}")
            return False
        held = self.view.node_actions.run_kind(key) == "live"
        params = ForkParams(
            session_id=session_id,
            run_id=tree.run_id,
            node_id=node_id,
            mode=mode,
            events=[] if held else list(tree.events),
        )
        done = partial(self._forked, tree, hint)
        return self._send(FORK, params, done, "fork")

    def _forked(self, tree: SearchTree, hint: str, result: ForkResult) -> None:
        if self.bridge.state != BackendState.READY:
            self.say(f"{NAMES['fork']}: armed, but the prompt could not be sent: {self._not_ready()}")
            return
        self.ctx.send_prompt(hint or DEFAULT_HINT)
        text = f"Continuing from node {result.node_id} of {short_run(tree.run_id)} in {result.mode}"
        self.say(f"{text}: {result.note}" if result.note else f"{text}.", line=bool(result.note))
        self.forked.emit(result)

    # Use this branch

    def adopt(self, key: str, node_id: str, replace: bool = False) -> bool:
        """Ask the backend to make ``node_id``'s branch the session's change set (``replace``: even over a
        review that holds decisions). False when the request could not go."""
        from ide.protocol.steer import ADOPT, AdoptParams

        ids = self._ids(key, "adopt")
        params = ids and AdoptParams(**ids, node_id=node_id, replace=replace)
        return bool(params) and self._send(ADOPT, params, partial(self._adopted, key, node_id), "adopt")

    def _adopted(self, key: str, node_id: str, result: AdoptResult) -> None:
        if result.adopted:
            if result.changeset is not None:
                self.review.show_changeset(result.changeset)
            self.say(
                f"The changes at {node_id} are the session's change set now: review them, then Apply.",
                line=False,
            )
            self.adopted.emit(result)
        elif result.decisions:
            self._confirm(key, node_id, result.decisions)
        else:
            self.say(f"{NAMES['adopt']}: the backend did not take branch {node_id}.")

    def _confirm(self, key: str, node_id: str, decisions: int) -> None:
        noun = "decision" if decisions == 1 else "decisions"
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Use this branch?",
            f"The review holds {decisions} {noun} on the session's current changes. Replace them with "
            f"branch {node_id}'s changes? Those {noun} are dropped.",
            QMessageBox.StandardButton.Cancel,
            self.ctx.window,
        )
        box.setObjectName("adoptConfirm")
        replace = box.addButton("Replace the review", QMessageBox.ButtonRole.AcceptRole)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)

        def answered(_result: int) -> None:
            self.confirm_box = None
            if box.clickedButton() is replace:
                self.adopt(key, node_id, replace=True)

        box.finished.connect(answered)
        self.confirm_box = box
        box.open()

    # Prune, expand

    def steer(self, key: str, node_id: str, action: str) -> bool:
        """Ask the running search to prune or expand ``node_id``. False when the request could not go."""
        from ide.protocol.steer import STEER, SteerParams

        ids = self._ids(key, "steer") if action in ("prune", "expand") else None
        params = ids and SteerParams(**ids, node_id=node_id, action=action)
        return bool(params) and self._send(STEER, params, partial(self._steered, node_id, action), "steer")

    def _steered(self, node_id: str, action: str, result: SteerResult) -> None:
        verb = "Prune" if action == "prune" else "Expand"
        if result.accepted:
            self.say(f"{verb} {node_id}: the search takes it at its next selection.", line=False)
        else:
            self.say(f"{verb} {node_id}: not taken — {result.message or 'the search did not say why'}.")
        self.steered.emit(result)

    # Sending

    def _ids(self, key: str, name: str) -> dict[str, str] | None:
        """The session and run ids a request about run ``key`` goes with; None, said when it is the session
        that is missing, when it cannot go."""
        tree = self.view.runs.get(key)
        if tree is None or tree.run_id is None:
            return None
        if self.bridge.session_id is None:
            self.say(f"{NAMES[name]}: {self._not_ready()}")
            return None
        return {"session_id": self.bridge.session_id, "run_id": tree.run_id}

    def _send(self, method: Method[Any, Any], params: Any, done: Callable[..., None], name: str) -> bool:
        def refused(info: ErrorInfo) -> None:
            self.say(f"{NAMES[name]}: the backend refused it: {info.message}")

        if self.bridge.request(method, params, done, refused):
            return True
        if self.bridge.state in (BackendState.READY, BackendState.BUSY):
            self.say(f"{NAMES[name]}: this backend does not offer it (_{method}).")
        else:
            self.say(f"{NAMES[name]}: {self._not_ready()}")
        return False

    def _not_ready(self) -> str:
        if self.bridge.state == BackendState.BUSY:
            return "a turn is running; wait for it to end."
        if self.bridge.state == BackendState.STARTING:
            return "the backend is starting."
        return "the backend is not running."

    def _source(self, key: str) -> str | None:
        """The file a run was opened from (its name), None for the session's."""
        return key.split(" · ")[0] if key in self.view.file_runs else None
