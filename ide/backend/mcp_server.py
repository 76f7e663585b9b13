"""``arbor mcp``: Arbor's agent, code intelligence and memory as an MCP server on stdio (seed 001).

Tools: ``investigate`` (a full search run — LATS by default — returning the answer and a summary of its
tree), ``get_status``, ``search_memory``, ``get_insights``, ``store_insight``, ``analyze_file``,
``parallel_search``, the code-intelligence queries ``find_symbol``, ``definition``, ``references`` and
``repo_map``, and seed 000's seven analysis tools (``code_search``, ``dependency_analysis``,
``call_chain_analysis``, ``architecture_analysis``, ``api_surface_analysis``, ``context_builder``,
``semantic_question``), each a run of the configured architecture with a prompt for its kind of
analysis. Runs work on a change set like every session: nothing is written to the workspace; proposed
edits come back as a diff in the answer. A refusal (a path outside the workspace, a secret, nothing
found to read), a failed run and a model timeout come back with ``isError``; a command a run wants (LATS's
``lats.test_command``) runs only when the client's user allows it through MCP elicitation.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp.server.fastmcp import Context
from mcp.shared.exceptions import McpError
from mcp.types import CallToolResult, ClientCapabilities, ElicitationCapability, TextContent

from ide import __version__
from ide.protocol.modes import architecture_or
from ide.settings import Settings
from ide.tools.base import ToolOutcome

if TYPE_CHECKING:
    from ide.backend.services import WorkspaceServices

log = logging.getLogger(__name__)

ANALYSES: dict[str, tuple[str, str]] = {
    "code_search": (
        "Find the code that does what is asked; answer with every place as path:line and one line on each.",
        "Find code by what it does (not only by name): places as path:line with a line each.",
    ),
    "dependency_analysis": (
        "Analyse the dependencies of the target: what it imports and uses, what imports and uses it, and "
        "third-party packages involved. Cite path:line.",
        "What a module, class or function depends on, and what depends on it.",
    ),
    "call_chain_analysis": (
        "Trace the call chain of the target: who calls it (up to the entry points) and what it calls. "
        "Give the chains as a → b → c with path:line.",
        "Callers and callees of a function, as chains up to the entry points.",
    ),
    "architecture_analysis": (
        "Describe the architecture of the target (or the whole workspace): components, their "
        "responsibilities, how data and control flow between them, and the main design decisions.",
        "Components, responsibilities and data flow of a package or the whole workspace.",
    ),
    "api_surface_analysis": (
        "List the public API of the target: functions, classes and methods meant for callers, with "
        "signatures and one line on each; note what looks internal but is used from outside.",
        "The public API of a module or package, with signatures.",
    ),
    "context_builder": (
        "Gather the context a developer needs before changing the target: the relevant files and "
        "definitions, conventions, tests that cover it, and pitfalls. Cite path:line.",
        "The files, definitions, tests and conventions to know before changing something.",
    ),
    "semantic_question": (
        "Answer the question about this code base precisely, citing path:line for every claim.",
        "Any question about the code base, answered with citations.",
    ),
}
"""Analysis tool → (instruction given to the agent, tool description)."""


class CommandAsker:
    """A run's ``ask_permission``: asks the MCP client's user (``elicitation/create``) before a command
    runs; a client without elicitation is not asked and the command does not run. Either way the answer
    says what happened (:attr:`notes`)."""

    def __init__(self, request: Context | None) -> None:
        self.request = request
        self.notes: list[str] = []

    def can_ask(self) -> bool:
        if self.request is None:
            return False
        wanted = ClientCapabilities(elicitation=ElicitationCapability())
        return self.request.session.check_client_capability(wanted)

    async def __call__(self, title: str, command: str, purpose: str = "tests") -> bool:
        if self.request is None or not self.can_ask():
            self.notes.append(
                f"Not run: `{command}` — this MCP client cannot be asked first (it does not support "
                "elicitation), and Arbor runs no command unasked."
            )
            return False
        try:
            reply = await self.request.session.elicit_form(
                message=f"{title}\n\nAllow Arbor to run `{command}` in a scratch copy of the workspace?",
                requestedSchema={"type": "object", "properties": {}},
                related_request_id=self.request.request_id,
            )
        except McpError as exc:
            self.notes.append(f"Not run: `{command}` — asking the client failed ({exc.error.message}).")
            return False
        allowed = reply.action == "accept"
        self.notes.append(f"`{command}`: {'allowed' if allowed else 'not allowed'} by the client's user.")
        return allowed


class ArborMcp:
    """The state behind the MCP tools: one workspace's services (index, language servers, memory)."""

    def __init__(self, root: Path, settings: Settings, mode: str) -> None:
        from ide.backend.services import Services

        self.root = root
        self.settings = settings
        self.mode = mode
        self.services = Services()
        self.workspace: WorkspaceServices | None = None
        self.runs = 0
        self.router: Any = None
        self.started = time.time()

    @property
    def memory(self) -> Any:
        return self.workspace.memory if self.workspace is not None else None

    async def start(self) -> None:
        # No sessions: runs keep no conversation and work on throwaway change sets.
        self.workspace = await self.services.open(str(self.root), self.settings, sessions=False)

    async def close(self) -> None:
        await self.services.close()

    def _changeset(self) -> Any:
        from ide.changes import ChangeSet

        return ChangeSet(self.root, max_file_bytes=self.settings.workspace.max_file_bytes)

    def toolbox(self) -> Any:
        """The agent's read tools, as a session of this workspace would have them."""
        assert self.workspace is not None, "start() first"
        return self.workspace.toolbox(self._changeset(), read_only=True)

    async def call(self, name: str, args: dict[str, Any]) -> ToolOutcome:
        """One of the agent's read tools, as the agent would see it; a refusal is a failed outcome."""
        toolbox = self.toolbox()
        if name not in toolbox.specs:
            text = f"{name} is not available here (is the code index still building? try get_status)"
            return ToolOutcome(text, failed=True)
        return await asyncio.to_thread(toolbox.call, name, {k: v for k, v in args.items() if v is not None})

    async def status(self) -> ToolOutcome:
        index = self.workspace.index.status().model_dump(mode="json") if self.workspace is not None else None
        data = {
            "workspace": str(self.root),
            "model": self.settings.llm.model,
            "architecture": self.mode,
            "index": index,
            "memory": self.memory.counts() if self.memory is not None else "off",
            "runs": self.runs,
            "uptime_s": round(time.time() - self.started, 1),
        }
        return ToolOutcome(json.dumps(data, indent=2), failed=False)

    async def analyze_file(self, path: str) -> ToolOutcome:
        """Outline and imports of a file (no model call); a file the tools refuse is a refusal."""
        outline = await self.call("file_outline", {"path": path})
        if outline.failed:
            return outline
        read = await self.call("read_file", {"path": path, "start_line": 1, "end_line": 40})
        imports = [line for line in read.output.splitlines() if " import " in f" {line.split(':', 1)[-1]}"]
        parts = [f"# {path}", "## Outline", outline.output]
        if imports and not read.failed:
            parts += ["## Imports (first 40 lines)", "\n".join(imports)]
        return ToolOutcome("\n\n".join(parts), failed=False)

    async def parallel_search(self, queries: list[str]) -> ToolOutcome:
        """Symbol search and grep for each query, all at once; failed only when every search failed."""

        async def one(query: str) -> tuple[str, bool]:
            symbols, grep = await asyncio.gather(
                self.call("find_symbol", {"query": query}), self.call("grep", {"pattern": query})
            )
            text = f"## {query}\n### definitions\n{symbols.output}\n### text\n{grep.output}"
            return text, symbols.failed and grep.failed

        found = await asyncio.gather(*(one(q) for q in queries[:12]))
        if not found:
            return ToolOutcome("no queries given", failed=True)
        return ToolOutcome("\n\n".join(t for t, _ in found), failed=all(f for _, f in found))

    async def run(self, task: str, mode: str | None = None, request: Context | None = None) -> ToolOutcome:
        """A run of ``mode`` (default: the server's) on ``task``: the answer, a summary of the run's tree,
        proposed edits and what became of the commands it wanted; failed when the model failed."""
        from ide.llm import ModelError, ModelRouter
        from ide.search.architectures import load_architecture
        from ide.search.base import RunContext
        from ide.search.tree import TreeRecorder

        assert self.workspace is not None, "start() first"
        mode = mode or self.mode
        self.runs += 1
        if self.router is None:
            # One router for the server's life: shared concurrency limits, usage, and a scripted cursor.
            self.router = ModelRouter(self.settings, base_dir=self.root)
        changeset = self._changeset()
        recorder = TreeRecorder(architecture=mode)
        asker = CommandAsker(request)
        answer_parts: list[str] = []

        async def progress(event: Any) -> None:
            if event.get("type") == "text":
                answer_parts.append(event["text"])

        ctx = RunContext(
            task=task,
            settings=self.settings,
            router=self.router,
            changeset=changeset,
            recorder=recorder,
            progress=progress,
            observation_cap=self.settings.agent.observation_cap_bytes,
            services=self.workspace.tools(),
            ask_permission=asker,
        )
        try:
            outcome = await load_architecture(mode).run(ctx)
        except ModelError as exc:
            text = f"The run failed: {exc.info.text()}"
            return ToolOutcome(text + "\n\n" + tree_summary(recorder.tree, ctx.figures()), failed=True)
        answer = outcome.answer or "".join(answer_parts)
        if outcome.changeset is not None:
            changeset = outcome.changeset
        if not recorder.tree.finished and recorder.tree.root is not None:
            ctx.finish_tree("end_turn")
        notes = "".join(f"\n{note}" for note in asker.notes)
        summary = tree_summary(recorder.tree, ctx.figures())
        return ToolOutcome(answer + "\n\n" + summary + _diff_note(changeset) + notes, failed=False)


def tree_summary(tree: Any, figures: dict[str, Any]) -> str:
    """A few lines on the run's tree: its size, the model calls the run made, its best path."""
    nodes = tree.nodes
    best = [nodes[i].label for i in tree.best_path if i in nodes]
    calls = figures.get("model_calls", 0)
    lines = [f"---\nSearch tree: {len(nodes)} nodes, {calls} model call{'' if calls == 1 else 's'}"]
    if best:
        lines.append("Best path: " + " → ".join(best))
    return "\n".join(lines)


def _diff_note(changeset: Any) -> str:
    changed = changeset.changed_paths()
    if not changed:
        return ""
    return "\nProposed (not written) changes to: " + ", ".join(changed)


def reply(outcome: ToolOutcome) -> CallToolResult:
    """A tool's outcome as an MCP result: a refusal or a failure is ``isError``."""
    return CallToolResult(content=[TextContent(type="text", text=outcome.output)], isError=outcome.failed)


def build_server(state: ArborMcp) -> Any:
    """The FastMCP server with every tool registered; it introduces itself as Arbor, with Arbor's version."""
    from mcp.server.fastmcp import FastMCP

    server = FastMCP(
        "arbor",
        instructions="Arbor's coding agent, code index, language servers and memory for one workspace. "
        "Runs never write files.",
    )
    # FastMCP takes no version; unset, initialize would report the mcp package's own.
    server._mcp_server.version = __version__

    def tool(name: str, description: str) -> Callable[[Callable[..., Awaitable[CallToolResult]]], Any]:
        def register(fn: Callable[..., Awaitable[CallToolResult]]) -> Any:
            server.add_tool(fn, name=name, description=description)
            return fn

        return register

    @tool(
        "investigate",
        "Run a full search (LATS by default) on a question or task; the answer and a summary "
        "of the search tree. Proposed edits are listed, never written. A test command the search wants "
        "to run is asked of you first (when your client supports elicitation).",
    )
    async def investigate(task: str, ctx: Context, architecture: str | None = None) -> CallToolResult:
        return reply(await state.run(task, architecture or "lats", request=ctx))

    @tool("get_status", "The workspace, model, code index and memory status of this server.")
    async def get_status() -> CallToolResult:
        return reply(await state.status())

    @tool(
        "search_memory", "Search what earlier sessions learned: investigations, insights, patterns, errors."
    )
    async def search_memory(query: str, namespace: str | None = None) -> CallToolResult:
        return reply(await state.call("search_memory", {"query": query, "namespace": namespace}))

    @tool("get_insights", "Insights stored about this workspace.")
    async def get_insights(query: str = "") -> CallToolResult:
        return reply(await state.call("get_insights", {"query": query}))

    @tool("store_insight", "Remember an insight about this workspace for later sessions.")
    async def store_insight(title: str, content: str) -> CallToolResult:
        return reply(await state.call("store_insight", {"title": title, "content": content}))

    @tool("analyze_file", "A file's outline (definitions with lines and signatures) and imports.")
    async def analyze_file(path: str) -> CallToolResult:
        return reply(await state.analyze_file(path))

    @tool(
        "parallel_search", "Search several terms at once: definitions (code index) and text (grep) for each."
    )
    async def parallel_search(queries: list[str]) -> CallToolResult:
        return reply(await state.parallel_search(queries))

    @tool("find_symbol", "Definitions whose name matches the query (fuzzy), with path:line and signature.")
    async def find_symbol(query: str, kind: str | None = None) -> CallToolResult:
        return reply(await state.call("find_symbol", {"query": query, "kind": kind}))

    for name, agent_tool, verb in (
        ("definition", "lsp_find_definition", "defined"),
        ("references", "lsp_get_references", "used"),
    ):
        description = f"Where the symbol at path:line:column (or a named symbol) is {verb} (language server)."
        server.add_tool(_position_tool(state, agent_tool), name=name, description=description)

    @tool("repo_map", "A compact map of the workspace's most important files and definitions.")
    async def repo_map(focus: str | None = None) -> CallToolResult:
        return reply(await state.call("repo_map", {"focus": focus}))

    for name, (instruction, description) in ANALYSES.items():
        server.add_tool(_analysis(state, instruction), name=name, description=description)
    return server


def _position_tool(state: ArborMcp, agent_tool: str) -> Callable[..., Awaitable[CallToolResult]]:
    async def at_position(
        path: str | None = None, line: int | None = None, column: int | None = None, symbol: str | None = None
    ) -> CallToolResult:
        args = {"path": path, "line": line, "column": column, "symbol": symbol}
        return reply(await state.call(agent_tool, args))

    return at_position


def _analysis(state: ArborMcp, instruction: str) -> Callable[..., Awaitable[CallToolResult]]:
    async def analysis(question: str, ctx: Context) -> CallToolResult:
        return reply(await state.run(f"{instruction}\n\nTarget or question: {question}", request=ctx))

    return analysis


async def serve(root: Path, settings: Settings, mode: str) -> None:
    state = ArborMcp(root, settings, mode)
    await state.start()
    try:
        await build_server(state).run_stdio_async()
    finally:
        await state.close()


def main(root: Path, mode: str | None = None) -> int:
    from ide.settings import SettingsError, load_settings

    try:
        settings = load_settings(root).settings
    except SettingsError as exc:
        sys.stderr.write(f"arbor: {exc}\n")
        return 2
    from ide.logs import setup_logging

    setup_logging(settings.log_level, "arbor-mcp")
    # The analysis tools run the session architecture; auto and workflow pick per task, so they use react.
    asyncio.run(serve(root, settings, mode or architecture_or(settings.agent.architecture)))
    return 0
