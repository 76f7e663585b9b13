"""Go to Definition (F12), Find References (Shift+F12) and hover, from the backend's language servers."""

from __future__ import annotations

import textwrap
from functools import cached_property
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QPoint, QTimer, Signal
from PySide6.QtWidgets import QToolTip

from ide.app.parts.base import AppContext, Part, Spec
from ide.app.parts.capabilities import OpensFiles
from ide.app.parts.needs import Requires
from ide.app.workspace.viewer import plain_hover

if TYPE_CHECKING:
    from ide.app.workspace.symbols import LocationPicker
    from ide.protocol.lsp import HoverResult, LocationsResult, LspLocation, PositionParams
    from ide.protocol.method import Method

INDEX_LABEL = "by name (index)"
"""How the index's answer is labelled until the language server's replaces it."""
SERVER_LABEL = "language server"

DEFINITION_GRACE_MS = 500
"""F12 waits this long for the language server before it goes to the index's answer by name."""

HOVER_LINES = 12
"""A hover shows at most this many lines (the rest is cut with "…"): it must not cover the window."""
HOVER_WIDTH = 90
"""Characters per hover line; longer lines are wrapped (a signature) before the line cap applies."""


def hover_text(text: str, lines: int = HOVER_LINES, width: int = HOVER_WIDTH) -> str:
    """``text`` capped for a tooltip: lines wrapped to ``width``, at most ``lines`` of them, "…" when cut."""
    wrapped: list[str] = []
    for line in text.strip().splitlines():
        wrapped.extend(textwrap.wrap(line, width, break_long_words=True, replace_whitespace=False) or [""])
        if len(wrapped) > lines:
            break
    if len(wrapped) > lines:
        wrapped = [*wrapped[: lines - 1], "…"]
    return "\n".join(wrapped)


Place = tuple[str, int, int]
"""(absolute path, 1-based line, column) of a place the viewer showed."""


class JumpHistory:
    """Where F12 and the references picker jumped from, for Back (Alt+Left) and Forward (Alt+Right) as in
    a browser: a new jump drops the places ahead."""

    def __init__(self, limit: int = 100) -> None:
        self.limit = limit
        self.back: list[Place] = []
        self.forward: list[Place] = []

    def jumped(self, origin: Place) -> None:
        """The viewer left ``origin`` for a jump's target."""
        if not self.back or self.back[-1] != origin:
            self.back = [*self.back, origin][-self.limit :]
        self.forward.clear()

    def go_back(self, here: Place | None) -> Place | None:
        """The place to go back to (None: none), with ``here`` kept for Forward."""
        return _step(self.back, self.forward, here)

    def go_forward(self, here: Place | None) -> Place | None:
        """The place Back left (None: none), with ``here`` kept for Back."""
        return _step(self.forward, self.back, here)


class LanguageServerPart(Part):
    """The Go menu's language-server actions, the viewer's hover, and a picker for several answers."""

    spec = Spec("lsp", order=95)
    files = Requires(OpensFiles)
    lspAnswered = Signal(str, object, object)
    """(method, PositionParams, LocationsResult or HoverResult) of F12, Shift+F12 or a hover."""

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx)
        self._hover_pos: dict[tuple[str, int, int], QPoint] = {}
        self.definition_action = ctx.action("go", "Go to &Definition", self.definition, "F12")
        self.references_action = ctx.action("go", "Find &References", self.references, "Shift+F12")
        self.history = JumpHistory()
        self.back_action = ctx.action("go", "&Back", self.go_back, "Alt+Left")
        self.forward_action = ctx.action("go", "&Forward", self.go_forward, "Alt+Right")
        ctx.viewer.editor.hoverRequested.connect(self._request_hover)
        self.lspAnswered.connect(self._on_answer)
        self._pending: dict[str, _Pending] = {}
        """F12's and Shift+F12's question being answered, by method, until the server's answer comes."""

    @cached_property
    def picker(self) -> LocationPicker:
        """The picker for several answers: made when first shown (or read), never for the first frame."""
        from ide.app.workspace.symbols import LocationPicker

        picker = LocationPicker(self.ctx.workspace, self.ctx.window)
        picker.locationChosen.connect(self._jump)
        return picker

    def definition(self) -> bool:
        """F12: the definition of the name at the viewer's cursor."""
        from ide.protocol.lsp import LSP_DEFINITION

        return self.ask(LSP_DEFINITION)

    def references(self) -> bool:
        """Shift+F12: the references of the name at the viewer's cursor."""
        from ide.protocol.lsp import LSP_REFERENCES

        return self.ask(LSP_REFERENCES)

    def ask(
        self, method: Method[PositionParams, Any], line: int | None = None, column: int | None = None
    ) -> bool:
        """Definition or references at the viewer's cursor (or the given position)."""
        from ide.protocol.lsp import LSP_DEFINITION, LSP_REFERENCES, PositionParams

        viewer = self.ctx.viewer
        path = viewer.current_path
        if path is None or viewer.message is not None:
            self.ctx.message("Open a file and put the cursor on a name first.", 4000)
            return False
        if line is None or column is None:
            line, column = viewer.editor.position()
        params = PositionParams(
            cwd=str(self.ctx.workspace),
            path=str(path.resolve()),
            line=line,
            column=column,
            session_id=self.bridge.session_id,
        )
        if method in (LSP_REFERENCES, LSP_DEFINITION):
            # The index answers by name at once; the server's answer, when it comes, replaces it.
            pending = self._pending[method] = _Pending(params)
            by_name = params.model_copy(update={"source": "index"})
            self.bridge.request(
                method, by_name, lambda result: self.lspAnswered.emit(method, by_name, result), lambda _: None
            )
            if method == LSP_DEFINITION:
                QTimer.singleShot(DEFINITION_GRACE_MS, self, lambda: self._grace_over(pending))
        if not self.bridge.request(
            method,
            params,
            lambda result: self.lspAnswered.emit(method, params, result),
            lambda info: self.ctx.message(info.message, 8000),
        ):
            self.ctx.message("Language servers need Arbor's backend, which is not available.", 4000)
            return False
        return True

    def _here(self) -> Place | None:
        viewer = self.ctx.viewer
        if viewer.current_path is None or viewer.message is not None:
            return None
        line, column = viewer.editor.position()
        return (str(viewer.current_path.resolve()), line, column)

    def _jump(self, path: str, line: int, column: int = 1) -> None:
        """Open a location an answer gave, remembering where the viewer was for Back."""
        here = self._here()
        if here is not None:
            self.history.jumped(here)
        self.files.open_location(path, line, column)

    def go_back(self) -> None:
        """Alt+Left: the place before the last jump."""
        place = self.history.go_back(self._here())
        if place is None:
            self.ctx.message(
                "Nothing to go back to: Back returns to where F12 or a reference was used.", 4000
            )
        else:
            self.files.open_location(*place)

    def go_forward(self) -> None:
        """Alt+Right: the place Back left."""
        place = self.history.go_forward(self._here())
        if place is None:
            self.ctx.message("Nothing to go forward to.", 4000)
        else:
            self.files.open_location(*place)

    def _request_hover(self, line: int, column: int, global_pos: QPoint) -> None:
        from ide.protocol.lsp import LSP_HOVER

        path = self.ctx.viewer.current_path
        if path is None:
            return
        self._hover_pos = {(str(path.resolve()), line, column): global_pos}
        self.ask(LSP_HOVER, line, column)

    def _on_answer(self, method: str, params: PositionParams, result: LocationsResult | HoverResult) -> None:
        from ide.protocol.lsp import LSP_REFERENCES, HoverResult

        if isinstance(result, HoverResult):
            where = self._hover_pos.pop((params.path, params.line, params.column), None)
            if where is not None and (result.text or result.message):
                text = hover_text(plain_hover(result.text or result.message or ""))
                QToolTip.showText(where, text, self.ctx.viewer.editor)
            return
        if method == LSP_REFERENCES:
            self._on_references(params, result)
        else:
            self._on_definition(params, result)

    def _current(self, method: str, params: PositionParams) -> _Pending | None:
        """The pending question ``params`` (index or server) answers; None for an earlier one's answer."""
        pending = self._pending.get(method)
        if pending is None or params.model_copy(update={"source": "server"}) != pending.params:
            return None
        return pending

    def _on_references(self, params: PositionParams, result: LocationsResult) -> None:
        """Shift+F12's two answers: the index's by name first (shown labelled as such), then the server's,
        which replaces it; either one for an earlier Shift+F12 is dropped."""
        from ide.protocol.lsp import LSP_REFERENCES

        pending = self._current(LSP_REFERENCES, params)
        if pending is None:
            return
        if result.source == "index":
            if result.locations:
                pending.shown = True
                what = f"{result.name}, " if result.name else ""
                self.picker.show_locations(
                    f"References {INDEX_LABEL}",
                    result.locations,
                    f"{what}asking the language server, whose answer replaces this",
                )
            return
        del self._pending[LSP_REFERENCES]
        if result.message:
            note = " (the list shows the index's answer by name)" if pending.shown else ""
            self.ctx.message(result.message + note, 8000)
        elif not result.locations:
            self.ctx.message(_nothing("references", params), 8000)
            if pending.shown:
                self.picker.show_locations(f"References ({SERVER_LABEL})", [])
        elif pending.shown and not self.picker.isVisible():  # the user already chose from the index's
            self.ctx.message(f"The language server found {len(result.locations)} references.", 8000)
        else:
            self.picker.show_locations(f"References ({SERVER_LABEL})", result.locations)

    def _on_definition(self, params: PositionParams, result: LocationsResult) -> None:
        """F12's two answers: the server's when it comes within :data:`DEFINITION_GRACE_MS`; otherwise the
        index's by name (labelled) at the end of the grace, and the server's after it, which jumps only
        when it agrees and otherwise lists its places."""
        from ide.protocol.lsp import LSP_DEFINITION

        pending = self._current(LSP_DEFINITION, params)
        if pending is None:
            return
        if result.source == "index":
            pending.index = result
            if pending.grace_over:
                self._show_index_definition(pending)
            return
        del self._pending[LSP_DEFINITION]
        if not pending.shown:
            self._show_definition(params, result)
        elif result.message:
            self.ctx.message(result.message + " (the index's answer by name is shown)", 8000)
        elif not result.locations:
            self.ctx.message(
                f"The language server found no definition at {params.line}:{params.column}.", 8000
            )
        elif _places(result.locations) == _places(pending.index.locations if pending.index else []):
            self.ctx.message("The language server confirms the definition the index found by name.", 8000)
        else:
            self.picker.show_locations(f"Definitions ({SERVER_LABEL})", result.locations)

    def _grace_over(self, pending: _Pending) -> None:
        from ide.protocol.lsp import LSP_DEFINITION

        pending.grace_over = True
        if self._pending.get(LSP_DEFINITION) is pending and pending.index is not None:
            self._show_index_definition(pending)

    def _show_index_definition(self, pending: _Pending) -> None:
        found = pending.index
        if found is None or not found.locations or pending.shown:
            return
        pending.shown = True
        if len(found.locations) == 1:
            (only,) = found.locations
            self._jump(only.path, only.line, only.column)
            self.ctx.message(f"Definition {INDEX_LABEL}; asking the language server…", 8000)
        else:
            self.picker.show_locations(
                f"Definitions {INDEX_LABEL}",
                found.locations,
                "asking the language server, whose answer follows",
            )

    def _show_definition(self, params: PositionParams, result: LocationsResult) -> None:
        if result.message:
            self.ctx.message(result.message, 8000)
        elif not result.locations:
            self.ctx.message(_nothing("definition", params), 8000)
        elif len(result.locations) == 1:
            (only,) = result.locations
            self._jump(only.path, only.line, only.column)
        else:
            self.picker.show_locations("Definitions", result.locations)


class _Pending:
    """An F12 or Shift+F12 being answered: its question (the server's params), the index's answer when it
    came, whether an index answer is on screen and whether the definition's grace is over."""

    def __init__(self, params: PositionParams) -> None:
        self.params = params
        self.index: LocationsResult | None = None
        self.shown = False
        self.grace_over = False


def _places(locations: list[LspLocation]) -> set[tuple[str, int, int]]:
    return {(loc.path, loc.line, loc.column) for loc in locations}


def _nothing(what: str, params: PositionParams) -> str:
    hint = " ('arbor doctor' shows the Python environment it sees)" if params.path.endswith(".py") else ""
    return f"No {what} found at {params.line}:{params.column}{hint}."


def _step(source: list[Place], other: list[Place], here: Place | None) -> Place | None:
    """The last place of ``source``, taken off it, with ``here`` kept on ``other`` (None: ``source`` is
    empty, and nothing moves)."""
    if not source:
        return None
    if here is not None:
        other.append(here)
    return source.pop()
