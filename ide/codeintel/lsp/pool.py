"""Language servers on demand: one per (server, workspace root), started by the first query that needs
it, restarted once when it crashed, shut down when idle or when the cap on live servers is reached.

Queries take and return editor positions (1-based lines, columns in characters) and absolute paths;
files the caller's change set modifies are passed as ``documents`` and reach the server as open
documents with their proposed text, so answers see the agent's edits before they are applied. With a
``gate`` (:class:`~ide.codeintel.lsp.gate.LspGate`) a server is given no file read_file would refuse,
and every location it answers with says whether read_file would refuse it (``Location.refused``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ide.codeintel.index.languages import detect_language
from ide.codeintel.lsp.environment import for_environment, python_environment
from ide.codeintel.lsp.gate import LspGate
from ide.codeintel.lsp.positions import from_lsp_character, path_of, to_lsp_character
from ide.codeintel.lsp.registry import LspError, ServerDied, server_for
from ide.settings import LspSettings

if TYPE_CHECKING:
    from lsprotocol import types as lsp

    from ide.codeintel.lsp.server import LanguageServer

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class At:
    """What a question about one place of the code is asked about: the workspace ``root``, the file, a
    1-based line and column; the unsaved texts the server should see instead of the disk's (proposed
    changes), and the gate its answers pass (read_file's rules), when there is one."""

    root: Path
    path: Path
    line: int
    column: int
    documents: Mapping[Path, str] | None = None
    gate: LspGate | None = None


@dataclass(frozen=True)
class Location:
    """A place in a file: absolute path, 1-based line and character column."""

    path: Path
    line: int
    column: int
    refused: str | None = None
    """Why read_file would refuse the file ("outside the workspace", "a secret file", …), when the query
    had a gate; the agent is then shown the path, never the file's text."""

    def as_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "line": self.line, "column": self.column}


@dataclass(frozen=True)
class Diagnostic:
    line: int
    column: int
    severity: str
    message: str
    source: str = ""


SEVERITY = {1: "error", 2: "warning", 3: "information", 4: "hint"}


class LspPool:
    """All language servers of one process (the backend, or one CLI run)."""

    def __init__(self, settings: LspSettings) -> None:
        self.settings = settings
        self.servers: dict[tuple[str, Path], LanguageServer] = {}
        self._locks: dict[tuple[str, Path], asyncio.Lock] = {}
        self._reaper: asyncio.Task[None] | None = None

    async def server(self, language: str | None, root: Path) -> LanguageServer:
        """The running server for ``language`` in ``root``, started if needed (LspUnavailable, LspError)."""
        spec = server_for(language, self.settings)
        if language == "python":
            spec = for_environment(spec, python_environment(root, self.settings))
        key = (spec.name, root)  # callers pass resolved roots
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            running = self.servers.get(key)
            if running is not None and running.alive:
                return running
            if running is not None:
                log.warning(
                    "%s for %s died (exit %s); starting it again", spec.name, root, _exit_code(running)
                )
                await running.shutdown()
                del self.servers[key]
            await self._make_room()
            from ide.codeintel.lsp.server import LanguageServer

            server = LanguageServer(spec, key[1], self.settings)
            await server.start()
            self.servers[key] = server
            if self._reaper is None or self._reaper.done():
                self._reaper = asyncio.create_task(self._reap_idle())
            return server

    async def _make_room(self) -> None:
        while len(self.servers) >= self.settings.max_servers:
            key = min(self.servers, key=lambda k: self.servers[k].last_used)
            await self.servers.pop(key).shutdown()

    async def _reap_idle(self) -> None:
        while self.servers:
            await asyncio.sleep(min(self.settings.idle_shutdown_s / 4, 30.0))
            now = time.monotonic()
            for key, server in list(self.servers.items()):
                if now - server.last_used >= self.settings.idle_shutdown_s:
                    log.info("shutting down idle %s for %s", server.spec.name, key[1])
                    self.servers.pop(key, None)
                    await server.shutdown()

    async def close(self) -> None:
        """Shut every server down (shutdown, exit, kill the process group)."""
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        servers, self.servers = list(self.servers.values()), {}
        await asyncio.gather(*(server.shutdown() for server in servers))

    async def _with_server(
        self,
        root: Path,
        path: Path,
        documents: Mapping[Path, str] | None,
        call: Callable[[LanguageServer, str], Awaitable[T]],
        gate: LspGate | None = None,
    ) -> T:
        """Run ``call`` with the server for ``path`` and the path's uri, restarting a crashed server once.
        A file the gate refuses is never given to the server: not ``path`` (an error) nor a document."""
        if gate is not None:
            why = gate.refusal(path)
            if why is not None:
                raise LspError(f"{path} is {why}: Arbor gives language servers only files its agent may read")
            documents = {
                other: text for other, text in (documents or {}).items() if gate.refusal(other) is None
            }
        language = detect_language(path.name)
        for attempt in (1, 2):
            server = await self.server(language, root)
            try:
                uri = self._open(server, path, language or "", documents)
                return await call(server, uri)
            except ServerDied:
                if attempt == 2:
                    raise LspError(f"{server.spec.name} crashed again after a restart; see the log") from None
                log.warning("%s crashed during a query; restarting it and retrying once", server.spec.name)
        raise AssertionError("unreachable")

    def _open(
        self, server: LanguageServer, path: Path, language: str, documents: Mapping[Path, str] | None
    ) -> str:
        for other, text in (documents or {}).items():
            if detect_language(other.name) == language:
                server.sync(other, text, language)
        text = (documents or {}).get(path)
        if text is None:
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                raise LspError(f"cannot read {path}: {exc.strerror}") from None
        return server.sync(path, text, language)

    def _position(self, server: LanguageServer, uri: str, line: int, column: int) -> lsp.Position:
        from lsprotocol import types as lsp

        text = server.documents[uri][1]
        lines = text.splitlines()
        if not 1 <= line <= max(len(lines), 1):
            raise LspError(f"line {line} is outside the file ({len(lines)} lines)")
        line_text = lines[line - 1] if lines else ""
        return lsp.Position(line=line - 1, character=to_lsp_character(line_text, column))

    def _location(
        self, uri: str, position: lsp.Position, documents: Mapping[Path, str] | None, gate: LspGate | None
    ) -> Location:
        path = path_of(uri)
        refused = gate.refusal(path) if gate is not None else None
        if refused is not None:  # not read, not even for the column: UTF-16 units stand in for characters
            return Location(path, position.line + 1, position.character + 1, refused)
        text = (documents or {}).get(path)
        if text is None:
            with contextlib.suppress(OSError):
                text = path.read_text(encoding="utf-8", errors="replace")
        lines = (text or "").splitlines()
        line_text = lines[position.line] if position.line < len(lines) else ""
        return Location(path, position.line + 1, from_lsp_character(line_text, position.character))

    def _locations(
        self, result: Any, documents: Mapping[Path, str] | None, gate: LspGate | None
    ) -> list[Location]:
        from lsprotocol import types as lsp

        if result is None:
            return []
        items = result if isinstance(result, (list, tuple)) else [result]
        found = []
        for item in items:
            if isinstance(item, lsp.LocationLink):
                found.append(
                    self._location(item.target_uri, item.target_selection_range.start, documents, gate)
                )
            else:
                found.append(self._location(item.uri, item.range.start, documents, gate))
        return sorted(set(found), key=lambda loc: (str(loc.path), loc.line, loc.column))

    async def _at_position(self, at: At, method: str, answer: Callable[[Any], T], **extra: Any) -> T:
        """Send ``method`` about the position of ``at`` to its file's server and read the result with
        ``answer``; ``extra`` are the method's further params (references' context)."""
        from lsprotocol import types as lsp

        params_type = lsp.METHOD_TO_TYPES[method][2]  # (request, response, params, registration options)

        async def call(server: LanguageServer, uri: str) -> T:
            params = params_type(
                text_document=lsp.TextDocumentIdentifier(uri=uri),
                position=self._position(server, uri, at.line, at.column),
                **extra,
            )
            return answer(await server.request(method, params))

        return await self._with_server(at.root, at.path, at.documents, call, at.gate)

    async def definition(self, at: At) -> list[Location]:
        """Where the symbol at ``at`` is defined."""
        from lsprotocol import types as lsp

        answer = partial(self._locations, documents=at.documents, gate=at.gate)
        return await self._at_position(at, lsp.TEXT_DOCUMENT_DEFINITION, answer)

    async def references(self, at: At) -> list[Location]:
        """Every reference to the symbol at ``at``, its declaration included."""
        from lsprotocol import types as lsp

        answer = partial(self._locations, documents=at.documents, gate=at.gate)
        context = lsp.ReferenceContext(include_declaration=True)
        return await self._at_position(at, lsp.TEXT_DOCUMENT_REFERENCES, answer, context=context)

    async def hover(self, at: At) -> str:
        """The server's hover text (type and docs) at the position; '' when it has none."""
        from lsprotocol import types as lsp

        return await self._at_position(at, lsp.TEXT_DOCUMENT_HOVER, _hover_text)

    async def signature(self, at: At) -> str:
        """The signature of the call around the position, with the active parameter; '' when none."""
        from lsprotocol import types as lsp

        return await self._at_position(at, lsp.TEXT_DOCUMENT_SIGNATURE_HELP, _signature_text)

    async def document_symbols(
        self,
        root: Path,
        path: Path,
        documents: Mapping[Path, str] | None = None,
        gate: LspGate | None = None,
    ) -> list[tuple[str, str, int]]:
        """(name, kind, line) of the file's symbols, depth first."""

        from lsprotocol import types as lsp

        async def call(server: LanguageServer, uri: str) -> list[tuple[str, str, int]]:
            params = lsp.DocumentSymbolParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
            result = await server.request(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL, params) or []
            found: list[tuple[str, str, int]] = []

            def walk(items: list[Any]) -> None:
                for item in items:
                    start = (
                        item.range.start
                        if isinstance(item, lsp.DocumentSymbol)
                        else item.location.range.start
                    )
                    found.append((item.name, lsp.SymbolKind(item.kind).name.lower(), start.line + 1))
                    walk(getattr(item, "children", None) or [])

            walk(result)
            return found

        return await self._with_server(root, path, documents, call, gate)

    async def diagnostics(
        self,
        root: Path,
        path: Path,
        documents: Mapping[Path, str] | None = None,
        wait_s: float = 3.0,
        gate: LspGate | None = None,
    ) -> list[Diagnostic]:
        """What the server reports for the file as given (published after it opens or changes)."""

        async def call(server: LanguageServer, uri: str) -> list[Diagnostic]:
            deadline = time.monotonic() + wait_s
            while uri not in server.diagnostics and time.monotonic() < deadline:
                server.diagnostics_changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(server.diagnostics_changed.wait(), deadline - time.monotonic())
            return [
                Diagnostic(
                    d.range.start.line + 1,
                    d.range.start.character + 1,
                    SEVERITY.get(int(d.severity or 1), "error"),
                    d.message,
                    d.source or "",
                )
                for d in server.diagnostics.get(uri, [])
            ]

        return await self._with_server(root, path, documents, call, gate)


def _hover_text(result: lsp.Hover | None) -> str:
    return _markup(result.contents) if result is not None else ""


def _signature_text(result: lsp.SignatureHelp | None) -> str:
    if result is None or not result.signatures:
        return ""
    active = result.signatures[result.active_signature or 0]
    doc = _markup(active.documentation) if active.documentation else ""
    return active.label + (f"\n{doc}" if doc else "")


def _markup(contents: Any) -> str:
    from lsprotocol import types as lsp

    if isinstance(contents, lsp.MarkupContent):
        return contents.value.strip()
    if isinstance(contents, str):
        return contents.strip()
    if isinstance(contents, lsp.MarkedStringWithLanguage):
        return contents.value.strip()
    if isinstance(contents, list):
        return "\n".join(_markup(item) for item in contents).strip()
    return str(contents)


def _exit_code(server: LanguageServer) -> int | None:
    return server.process.returncode if server.process is not None else None


class LspBridge:
    """Lets the agent's tools, which run in worker threads, query the pool that lives on the backend's
    event loop."""

    def __init__(self, pool: LspPool, loop: asyncio.AbstractEventLoop) -> None:
        self.pool = pool
        self.loop = loop

    def run(self, call: Callable[[LspPool], Awaitable[T]]) -> T:
        """Run ``call(pool)`` on the loop and wait for it (from a thread other than the loop's)."""
        with contextlib.suppress(RuntimeError):
            if asyncio.get_running_loop() is self.loop:
                raise RuntimeError("LspBridge.run would block the event loop; await the pool instead")
        limit = self.pool.settings.start_timeout_s + self.pool.settings.request_timeout_s + 5
        return asyncio.run_coroutine_threadsafe(call(self.pool), self.loop).result(timeout=limit)
