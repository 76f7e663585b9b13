"""Go → Go to Symbol (Ctrl+T): a fuzzy search over the code index's symbols."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from PySide6.QtCore import Signal

from ide.app.acp_client import BackendState
from ide.app.parts.base import AppContext, Part, Spec
from ide.app.parts.capabilities import OpensFiles
from ide.app.parts.needs import Requires

if TYPE_CHECKING:
    from ide.app.workspace.symbols import SymbolSearch
    from ide.protocol.index import SymbolSearchParams, SymbolSearchResult


class SymbolSearchPart(Part):
    """The Ctrl+T popup and its requests."""

    spec = Spec("symbols", order=90)
    files = Requires(OpensFiles)
    symbolsFound = Signal(object, object)
    """(SymbolSearchParams, SymbolSearchResult) of a search (``_arbor/index/search``)."""

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(ctx)
        self.action = ctx.action("go", "Go to &Symbol…", self.open, "Ctrl+T")
        self.symbolsFound.connect(self._show)

    @cached_property
    def dialog(self) -> SymbolSearch:
        """The popup: made when first opened (or read), never for the first frame."""
        from ide.app.workspace.symbols import SymbolSearch

        dialog = SymbolSearch(self.ctx.workspace, self.ctx.window)
        dialog.queryChanged.connect(self._search)
        dialog.symbolChosen.connect(self.files.open_location)
        return dialog

    def open(self) -> None:
        """Open the popup, or say in the banner why there is no symbol search."""
        from ide.protocol.index import INDEX_SEARCH

        if not self.bridge.supports(INDEX_SEARCH):
            self.ctx.banner.show_notice(
                "Symbol search needs Arbor's code index, which this backend does not serve."
                if self.bridge.state != BackendState.STOPPED
                else "Symbol search needs the backend, which is not running."
            )
            return
        self.dialog.open_search()

    def _search(self, query: str) -> None:
        from ide.protocol.index import INDEX_SEARCH, SymbolSearchParams

        params = SymbolSearchParams(cwd=str(self.ctx.workspace), query=query, limit=50)
        if not self.bridge.request(
            INDEX_SEARCH,
            params,
            lambda result: self.symbolsFound.emit(params, result),
            lambda info: self.dialog.show_error(info.message),
        ):
            self.dialog.show_error("The backend is not running.")

    def _show(self, params: SymbolSearchParams, result: SymbolSearchResult) -> None:
        self.dialog.set_results(params.query, result)
