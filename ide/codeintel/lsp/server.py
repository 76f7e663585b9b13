"""One running language server: start it in its own process group, talk LSP over pygls, stop it for good.

The server sees open documents with the text we give it (the session's proposed edits, not the disk);
every request has a timeout after which it is cancelled with ``$/cancelRequest``; shutdown is
``shutdown`` + ``exit``, then the whole process group is killed, so nothing it spawned survives. On Linux
the server runs under the keeper (:func:`ide.lifetime.kept`), so it and what it started (pyright's node)
also end when the process that started it ends without that shutdown (SIGKILL, a crash, a SIGTERM while
the backend was still closing): an orphaned jedi-language-server whose client is gone fails to publish a
diagnostic, reports that failure to the same closed pipe, and recurses at 100 % CPU for minutes
(docs/traps.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

from ide.childenv import command_env
from ide.codeintel.lsp.positions import uri_of
from ide.codeintel.lsp.registry import LspError, ServerDied, ServerSpec
from ide.lifetime import kept
from ide.settings import LspSettings

log = logging.getLogger(__name__)

LANGUAGE_IDS = {"tsx": "typescriptreact", "javascript": "javascript", "cpp": "cpp"}


class LanguageServer:
    """A started server for one (language, workspace root)."""

    def __init__(self, spec: ServerSpec, root: Path, settings: LspSettings) -> None:
        self.spec = spec
        self.root = root
        self.settings = settings
        self.client = LanguageClient("arbor", "1")
        self.documents: dict[str, tuple[int, str]] = {}
        """uri → (version, text) of every document we opened."""
        self.diagnostics: dict[str, list[lsp.Diagnostic]] = {}
        self.diagnostics_changed = asyncio.Event()
        self.capabilities: lsp.ServerCapabilities | None = None
        self.last_used = time.monotonic()
        self._stderr_task: asyncio.Task[None] | None = None
        self._register_handlers()

    @property
    def process(self) -> asyncio.subprocess.Process | None:
        return self.client._server  # pygls keeps the process there; we need its pid and group

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def alive(self) -> bool:
        process = self.process
        return process is not None and process.returncode is None and not self.client.stopped

    def _register_handlers(self) -> None:
        # pygls passes only the params (it adds the client when the first parameter is named ls).
        client = self.client

        @client.feature(lsp.WORKSPACE_CONFIGURATION)
        def configuration(params: lsp.ConfigurationParams) -> list[Any]:
            return [self.configuration(item.section) for item in params.items]

        @client.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def progress(_params: Any) -> None:
            return None

        @client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
        def register(_params: Any) -> None:
            return None

        @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
            self.diagnostics[params.uri] = list(params.diagnostics)
            self.diagnostics_changed.set()

        @client.feature(lsp.WINDOW_LOG_MESSAGE)
        def log_message(params: lsp.LogMessageParams) -> None:
            log.debug("%s: %s", self.spec.name, params.message)

        @client.feature(lsp.WINDOW_SHOW_MESSAGE)
        def show_message(params: lsp.ShowMessageParams) -> None:
            log.info("%s: %s", self.spec.name, params.message)

    def configuration(self, section: str | None) -> Any:
        """The spec's settings under the dotted ``section`` (all of them for none); None when absent."""
        value: Any = self.spec.configuration
        for part in (section or "").split(".") if section else []:
            value = value.get(part) if isinstance(value, dict) else None
        return value

    async def start(self) -> None:
        """Start the process (its own session, so its children die with it) and initialize it. Its
        environment is the allow-listed base set (:func:`ide.childenv.command_env`): it runs the
        workspace's interpreter and may import its packages, so none of Arbor's keys; the project's Python
        reaches it in the initialization options (:mod:`ide.codeintel.lsp.environment`)."""
        program = self.spec.command[0]
        env = command_env(cwd=self.root)
        try:
            await self.client.start_io(
                *kept(self.spec.command, env, self.root),
                cwd=str(self.root),
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise LspError(f"{self.spec.name} could not be started ({program}): {exc}") from None
        process = self.process
        if process is not None and process.stderr is not None:
            self._stderr_task = asyncio.create_task(self._drain(process.stderr))
        params = lsp.InitializeParams(
            process_id=os.getpid(),
            root_uri=uri_of(self.root),
            root_path=str(self.root),
            workspace_folders=[lsp.WorkspaceFolder(uri=uri_of(self.root), name=self.root.name)],
            capabilities=_client_capabilities(),
            initialization_options=self.spec.initialization_options or None,
            client_info=lsp.ClientInfo(name="arbor"),
        )
        try:
            result = await asyncio.wait_for(
                self.client.initialize_async(params), self.settings.start_timeout_s
            )
        except (TimeoutError, RuntimeError, asyncio.CancelledError) as exc:
            await self.shutdown()
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise LspError(
                f"{self.spec.name} did not finish initialize within {self.settings.start_timeout_s:.0f} s"
                if isinstance(exc, TimeoutError)
                else f"{self.spec.name} exited while starting: {exc}"
            ) from None
        self.capabilities = result.capabilities
        self.client.initialized(lsp.InitializedParams())
        log.info("%s started for %s (pid %s)", self.spec.name, self.root, self.pid)

    async def _drain(self, stream: asyncio.StreamReader) -> None:
        # pygls pipes stderr and never reads it; a chatty server would block once 64 KiB fill up.
        while line := await stream.readline():
            log.debug("%s stderr: %s", self.spec.name, line.decode("utf-8", "replace").rstrip())

    async def request(self, method: str, params: Any, timeout: float | None = None) -> Any:
        """Send a request; cancel it (``$/cancelRequest``) and raise LspError when it takes too long."""
        if not self.alive:
            raise ServerDied(f"{self.spec.name} is not running")
        self.last_used = time.monotonic()
        msg_id = uuid.uuid4().hex
        limit = timeout or self.settings.request_timeout_s
        try:
            return await asyncio.wait_for(
                self.client.protocol.send_request_async(method, params, msg_id), limit
            )
        except TimeoutError:
            with contextlib.suppress(Exception):
                self.client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id=msg_id))
            raise LspError(
                f"{self.spec.name} did not answer {method} within {limit:g} s (cancelled)"
            ) from None
        except RuntimeError as exc:  # pygls fails pending requests when the process exits
            raise ServerDied(f"{self.spec.name} stopped: {exc}") from None

    def sync(self, path: Path, text: str, language: str) -> str:
        """Make the server see ``text`` as the content of ``path`` (didOpen, then didChange)."""
        uri = uri_of(path)
        known = self.documents.get(uri)
        if known is None:
            self.client.text_document_did_open(
                lsp.DidOpenTextDocumentParams(
                    text_document=lsp.TextDocumentItem(
                        uri=uri, language_id=LANGUAGE_IDS.get(language, language), version=1, text=text
                    )
                )
            )
            self.documents[uri] = (1, text)
        elif known[1] != text:
            self.diagnostics.pop(uri, None)  # stale: wait for what the server says about the new text
            version = known[0] + 1
            self.client.text_document_did_change(
                lsp.DidChangeTextDocumentParams(
                    text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                    content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
                )
            )
            self.documents[uri] = (version, text)
        return uri

    async def shutdown(self) -> None:
        """``shutdown`` + ``exit`` with short timeouts, then kill the process group: no zombies."""
        process = self.process
        if process is not None and process.returncode is None and not self.client.stopped:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.client.shutdown_async(None), 2.0)
            with contextlib.suppress(Exception):
                self.client.exit(None)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), 1.0)
        if process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)  # its session: the server and all it spawned
            with contextlib.suppress(Exception):
                await asyncio.wait_for(process.wait(), 5.0)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.client.stop(), 5.0)
        if self._stderr_task is not None:
            self._stderr_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._stderr_task


def _client_capabilities() -> lsp.ClientCapabilities:
    markup = [lsp.MarkupKind.Markdown, lsp.MarkupKind.PlainText]
    return lsp.ClientCapabilities(
        workspace=lsp.WorkspaceClientCapabilities(configuration=True, workspace_folders=True),
        text_document=lsp.TextDocumentClientCapabilities(
            synchronization=lsp.TextDocumentSyncClientCapabilities(did_save=False),
            definition=lsp.DefinitionClientCapabilities(link_support=False),
            references=lsp.ReferenceClientCapabilities(),
            hover=lsp.HoverClientCapabilities(content_format=markup),
            signature_help=lsp.SignatureHelpClientCapabilities(
                signature_information=lsp.ClientSignatureInformationOptions(documentation_format=markup)
            ),
            document_symbol=lsp.DocumentSymbolClientCapabilities(hierarchical_document_symbol_support=True),
            publish_diagnostics=lsp.PublishDiagnosticsClientCapabilities(),
        ),
        window=lsp.WindowClientCapabilities(work_done_progress=True),
        general=lsp.GeneralClientCapabilities(position_encodings=[lsp.PositionEncodingKind.Utf16]),
    )
