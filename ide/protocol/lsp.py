"""Wire models of the language-server extensions (``_arbor/lsp/*``) the window uses for F12, Shift+F12
and hover. Paths are absolute; lines and columns 1-based, as editors show them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ide.protocol.method import Method
from ide.protocol.wire import WireModel


class PositionParams(WireModel):
    cwd: str = Field(description="Absolute path of the workspace")
    path: str = Field(description="Absolute path of the file")
    line: int = Field(ge=1)
    column: int = Field(ge=1)
    session_id: str | None = Field(None, description="Answer as this session's change set leaves the files")
    source: Literal["server", "index"] = Field(
        "server",
        description='Who answers: "server", the language server; "index", the code index by name at once '
        "(definition and references), for a client to show while the server works",
    )


class LspLocation(WireModel):
    path: str
    line: int
    column: int
    text: str = Field("", description="The line at the location, for a references list")


class LocationsResult(WireModel):
    locations: list[LspLocation] = Field(default_factory=list)
    message: str | None = Field(None, description="Why there is no answer (no server, install command, …)")
    source: Literal["server", "index"] = Field(
        "server",
        description='Who answered: "server", the language server (it knows what the name binds to); "index", '
        "the code index by name (every definition and recorded use of the name: calls, decorators, base "
        "classes, annotations), shown as such until the server's answer replaces it",
    )
    name: str | None = Field(None, description="The name the index looked up (source index)")


class HoverResult(WireModel):
    text: str = ""
    message: str | None = None


LSP_DEFINITION = Method("arbor/lsp/definition", PositionParams, LocationsResult)
LSP_REFERENCES = Method("arbor/lsp/references", PositionParams, LocationsResult)
LSP_HOVER = Method("arbor/lsp/hover", PositionParams, HoverResult)
LSP_METHODS = (LSP_DEFINITION, LSP_REFERENCES, LSP_HOVER)
