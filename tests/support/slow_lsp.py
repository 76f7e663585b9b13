"""A tiny language server for tests: initialize works, textDocument/definition and references never answer.

When the client cancels the request ($/cancelRequest), the handler writes "cancelled" to the file named
by its first argument, so a test can see the cancel arrived. (An argument, not a variable: a language
server gets Arbor's allow-listed environment, ide.childenv.)
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer

server = LanguageServer("slow-lsp", "1")


@server.feature(types.TEXT_DOCUMENT_DEFINITION)
async def definition(params: types.DefinitionParams) -> None:
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        Path(sys.argv[1]).write_text("cancelled")
        raise


@server.feature(types.TEXT_DOCUMENT_REFERENCES)
async def references(params: types.ReferenceParams) -> None:
    await asyncio.sleep(3600)


if __name__ == "__main__":
    server.start_io()
