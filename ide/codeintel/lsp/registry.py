"""Which language server answers for which language, how to start it, and how to install it."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ide.settings import LspSettings


class LspUnavailable(Exception):
    """No server can answer: the message says why and how to install one (shown to agents and users)."""


class LspError(Exception):
    """A query that could not be answered (timeout, crashed server); the message is for people."""


class ServerDied(LspError):
    """The server process exited; the pool restarts it once and retries."""


@dataclass(frozen=True)
class ServerSpec:
    """A language server to start: its registry name, the command, initialization options, and the
    settings it is given when it asks (``workspace/configuration``, by dotted section)."""

    name: str
    command: tuple[str, ...]
    initialization_options: dict[str, Any] = field(default_factory=dict)
    configuration: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _Known:
    program: str
    args: tuple[str, ...]
    install: str
    options: dict[str, Any] = field(default_factory=dict)


JEDI_OPTIONS = {"diagnostics": {"enable": True, "didOpen": True, "didChange": True, "didSave": True}}
"""jedi-language-server reports syntax errors only when asked to."""

KNOWN: dict[str, _Known] = {
    "jedi": _Known(
        "jedi-language-server", (), "pip install jedi-language-server (Arbor depends on it)", JEDI_OPTIONS
    ),
    "pyright": _Known("pyright-langserver", ("--stdio",), "npm install -g pyright"),
    "basedpyright": _Known("basedpyright-langserver", ("--stdio",), "pip install basedpyright"),
    "typescript": _Known(
        "typescript-language-server", ("--stdio",), "npm install -g typescript-language-server typescript"
    ),
    "clangd": _Known("clangd", (), "apt-get install clangd (or your platform's LLVM package)"),
    "gopls": _Known("gopls", (), "go install golang.org/x/tools/gopls@latest"),
    "rust-analyzer": _Known("rust-analyzer", (), "rustup component add rust-analyzer"),
}

LANGUAGE_SERVERS: dict[str, str] = {
    "javascript": "typescript",
    "typescript": "typescript",
    "tsx": "typescript",
    "c": "clangd",
    "cpp": "clangd",
    "go": "gopls",
    "rust": "rust-analyzer",
}
"""Language → server name; Python is chosen by ``lsp.python``."""


def server_for(language: str | None, settings: LspSettings) -> ServerSpec:
    """The server for ``language``, or LspUnavailable naming the language or the install command."""
    if language == "python":
        name = {"jedi": "jedi", "pyright": "pyright", "basedpyright": "basedpyright"}[settings.python]
    elif language in LANGUAGE_SERVERS:
        name = LANGUAGE_SERVERS[language]
    else:
        raise LspUnavailable(f"no language server is known for {language or 'this file type'}")
    override = settings.servers.get(name)
    known = KNOWN[name]
    if override is not None and override.command:
        command = tuple(override.command)
        if _find(command[0]) is None:
            raise LspUnavailable(f"{command[0]!r}, the command of lsp.servers.{name}, is not found")
    else:
        program = _find(known.program)
        if program is not None:
            command = (program, *known.args)
        elif name == "jedi" and importlib.util.find_spec("jedi_language_server") is not None:
            # No script (the packaged app, or an install without its scripts): Arbor runs it itself.
            from ide import self_command

            command = tuple(self_command("jedi-language-server"))
        else:
            raise LspUnavailable(f"{known.program} is not installed; install it with: {known.install}")
    options = {**known.options, **(override.initialization_options if override is not None else {})}
    return ServerSpec(name, command, options)


def _find(program: str) -> str | None:
    # Scripts installed with Arbor sit next to its interpreter, which may not be on PATH (a venv).
    beside = Path(sys.executable).parent / program
    if beside.is_file():
        return str(beside)
    return shutil.which(program)
