"""A tiny language server for tests that asks its client for settings the way pyright does.

On textDocument/definition it requests ``workspace/configuration`` for the sections pyright and
basedpyright ask for, writes the answers as JSON to the file named by its first argument, and answers with no
location. (pyright itself needs node and npm, which the test machines do not have.)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer

SECTIONS = ["python", "python.analysis", "basedpyright.analysis"]

server = LanguageServer("config-lsp", "1")


@server.feature(types.TEXT_DOCUMENT_DEFINITION)
async def definition(params: types.DefinitionParams) -> None:
    items = [types.ConfigurationItem(section=section) for section in SECTIONS]
    answers = await server.workspace_configuration_async(types.ConfigurationParams(items=items))
    Path(sys.argv[1]).write_text(json.dumps(dict(zip(SECTIONS, answers, strict=True))))


if __name__ == "__main__":
    server.start_io()
