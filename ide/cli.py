"""The ``arbor`` command: ``arbor [PATH]`` opens the window; subcommands run the backend and tools."""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ide.lifetime import KEEPER_COMMAND, keep
from ide.protocol.eval import REPORT_FILE
from ide.protocol.modes import ARCHITECTURES, SESSION_MODES
from ide.settings import SettingsError, load_settings
from ide.termout import escaped_output, print_exception_escaped

if TYPE_CHECKING:
    from ide.client.agentproc import AgentChoice

COMMANDS = (
    "gui",
    "acp",
    "run",
    "rollback",
    "doctor",
    "trust",
    "index",
    "symbols",
    "lsp",
    "workflows",
    "mcp",
    "eval",
    "tree",
)

PROTOCOL_COMMANDS = ("acp", "mcp")
"""Commands whose stdout is a protocol (JSON-RPC), written as it is; their stderr is escaped as every
other command's output is (ide.termout)."""

JEDI_COMMAND = "jedi-language-server"
"""``arbor jedi-language-server [ARGS]`` runs the jedi-language-server Arbor depends on (internal: how
the packaged app, which has no ``jedi-language-server`` script, starts its Python language server)."""


class _Version(argparse.Action):
    """``--version``, as argparse's own prints it, but with Arbor's version read only when asked for
    (``ide.__version__`` scans the installed distributions: the window's start does not wait for that)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **_kwargs: object) -> None:
        help_text = "show program's version number and exit"
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help_text)

    def __call__(self, parser: argparse.ArgumentParser, *_args: object) -> None:
        from ide import __version__

        sys.stdout.write(f"arbor {__version__}\n")
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arbor",
        description="Arbor: watch an AI agent's search as a tree and review its changes in one batch.",
        epilog="the window:\n"
        "  arbor [PATH]              open the window on a workspace (default: the current directory)\n"
        "  arbor --open FILE         show a recorded search tree (.arbor-tree.jsonl) or an arbor eval\n"
        "                            report (report.json or its folder); no model needed\n"
        "  arbor --agent NAME|CMD    drive another ACP agent, its edits through Arbor's review\n"
        "  arbor gui --help          the window's options",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    gui = sub.add_parser("gui", help="open the window (the default command)")
    gui.add_argument("path", nargs="?", default=".", help="workspace directory (default: .)")
    gui.add_argument(
        "--open",
        dest="open_tree",
        default=None,
        help="a .arbor-tree.jsonl search tree to show, or an arbor eval report (report.json or its folder)",
    )
    gui.add_argument(
        "--agent",
        default=None,
        help="the ACP agent the window drives: arbor (default), a name of the [agents] settings table, or a "
        'shell-quoted command line ("claude-code-acp", "gemini --experimental-acp"); its edits go '
        "through Arbor's review",
    )

    acp = sub.add_parser(
        "acp", help="serve the agent over ACP on stdio (for the window, Zed, any ACP client)"
    )
    acp.add_argument("--log-level", default=None, help="stderr log level (default: settings log_level)")

    run = sub.add_parser("run", help="run one task headless, streaming the answer to stdout")
    run.add_argument("--workspace", "-w", default=".", help="workspace directory (default: .)")
    run.add_argument(
        "--mode", default=None, help=f"agent architecture (session mode): {', '.join(SESSION_MODES)}"
    )
    run.add_argument(
        "--apply", action="store_true", help="accept every hunk, apply and commit (default: print)"
    )
    run.add_argument(
        "--workflow", default=None, help="run the task with this workflow (see arbor workflows list)"
    )
    run.add_argument(
        "--allow-tests",
        action="store_true",
        help="let the test command run without asking (LATS, workflow test stages); commands an agent "
        "chooses (plan mode's run_command) are still refused",
    )
    run.add_argument(
        "--agent",
        default=None,
        help="run another ACP agent instead of Arbor's: a name of the [agents] settings table, or a "
        "shell-quoted command line; it works in a shadow of the workspace and whatever it changes there is "
        "captured into Arbor's review (printed, or applied with --apply)",
    )
    run.add_argument(
        "--allow-commands",
        action="store_true",
        help="with --agent: answer the agent's command permissions with allow once (the commands run in the "
        "shadow workspace); without it they are refused",
    )
    run.add_argument(
        "--from",
        dest="from_node",
        default=None,
        metavar="RUN:NODE",
        help="continue from that node of an earlier run (see arbor tree list), in the session holding it; "
        "the task is then your hint, and the diff printed the session's whole resulting change set",
    )
    run.add_argument("task", help="what the agent should do (with --from: the hint)")

    tree = sub.add_parser("tree", help="a session's recorded runs (search trees) and their nodes")
    tsub = tree.add_subparsers(dest="tree_command", metavar="ACTION", required=True)
    tlist = tsub.add_parser("list", help="a session's runs, or one run's nodes (* best path, ± changes kept)")
    tlist.add_argument("--workspace", "-w", default=".", help="workspace directory (default: .)")
    tlist.add_argument(
        "--session",
        default=None,
        help="session id or its start (default: the one holding RUN, else the latest)",
    )
    tlist.add_argument("run", nargs="?", default=None, help="a run id (or its start): list its nodes")

    rollback = sub.add_parser("rollback", help="roll back the last (or the named) applied batch")
    rollback.add_argument("--workspace", "-w", default=".", help="workspace directory (default: .)")
    rollback.add_argument("batch_id", nargs="?", default=None, help="batch id (default: the last applied)")

    doctor = sub.add_parser("doctor", help="print resolved settings with their sources, and check the setup")
    doctor.add_argument("--workspace", "-w", default=".", help="workspace whose .arbor/config.toml applies")
    doctor.add_argument(
        "--probe",
        action="store_true",
        help="send each model one real tool-call request and one structured request, and report how it did",
    )

    trust = sub.add_parser(
        "trust",
        help="trust a workspace: apply the commands, hosts and other settings its .arbor/config.toml "
        "asks for",
    )
    trust.add_argument("path", nargs="?", default=".", help="workspace directory (default: .)")
    trust.add_argument("--revoke", action="store_true", help="stop trusting it (hold those settings back)")

    index = sub.add_parser("index", help="index a directory's code (tree-sitter), only what changed")
    index.add_argument("path", nargs="?", default=".", help="directory (default: .)")
    index.add_argument("--stats", action="store_true", help="print figures as JSON")

    symbols = sub.add_parser("symbols", help="search the code index for definitions")
    symbols.add_argument("path", help="indexed directory")
    symbols.add_argument(
        "query", nargs="?", default=None, help="part of a name (fuzzy), or words of a docstring"
    )
    symbols.add_argument("--all", dest="every", action="store_true", help="every definition (with --json)")
    symbols.add_argument("--json", dest="as_json", action="store_true", help="print JSON (absolute paths)")
    symbols.add_argument("--limit", type=int, default=30, help="hits to show (default: 30)")

    lsp = sub.add_parser("lsp", help="ask a language server: definition, references or hover at a position")
    lsp.add_argument("path", help="workspace directory")
    lsp.add_argument("query", choices=("definition", "references", "hover"))
    lsp.add_argument(
        "position", help="FILE:LINE:COL, FILE relative to PATH or absolute, 1-based line and column"
    )
    lsp.add_argument(
        "--json", dest="as_json", action="store_true", help="print JSON (absolute paths, 1-based)"
    )
    lsp.add_argument(
        "--source",
        choices=("both", "server", "index"),
        default=None,
        help="who answers references: both (default: the code index by name at once, then the language "
        "server's answer; with --json one JSON object per answer and line), server or index alone (with "
        "--json a list). Definitions and hover: the server",
    )

    mcp = sub.add_parser("mcp", help="serve Arbor's agent, code index and memory as an MCP server on stdio")
    mcp.add_argument("--workspace", "-w", default=".", help="workspace directory (default: .)")
    mcp.add_argument(
        "--mode",
        choices=ARCHITECTURES,
        default=None,
        help="architecture of the analysis tools (default: agent.architecture, else react)",
    )

    workflows = sub.add_parser("workflows", help="list, check and describe YAML workflows")
    wsub = workflows.add_subparsers(dest="action", metavar="ACTION", required=True)
    wlist = wsub.add_parser("list", help="the workflows a workspace can run, and files that do not load")
    wlist.add_argument("--workspace", "-w", default=".", help="workspace whose .arbor/workflows apply")
    wlist.add_argument("--json", dest="as_json", action="store_true", help="print JSON")
    validate = wsub.add_parser("validate", help="check workflow or agent-profile files (FILE:LINE on errors)")
    validate.add_argument("paths", nargs="+", help="YAML files or folders")
    schema = wsub.add_parser("schema", help="print the JSON Schema of workflow files (for editors)")
    schema.add_argument("--agent", action="store_true", help="the schema of agent-profile files instead")

    from ide.eval.cli import add_parser as add_eval_parser

    add_eval_parser(sub)

    for command in (run, doctor, index, symbols, lsp, mcp):
        command.add_argument(
            "--trust",
            action="store_true",
            help="honour the workspace's held-back settings (commands, hosts…) for this run only",
        )
    return parser


def _fail(message: str) -> int:
    sys.stderr.write(f"arbor: {message}\n")
    return 2


def _rollback(workspace: Path, batch_id: str | None) -> int:
    from ide.backend.store import SessionStore
    from ide.changes import BatchStore, ChangeError, rollback_batch

    try:
        settings = load_settings(workspace).settings
    except SettingsError as exc:
        return _fail(str(exc))
    store = BatchStore(SessionStore(settings.resolved_data_dir()).workspace_dir(workspace))
    try:
        result = rollback_batch(workspace, store, batch_id)
    except ChangeError as exc:
        return _fail(str(exc))
    for path in result.restored:
        sys.stdout.write(f"restored {path}\n")
    for refused in result.refused:
        sys.stderr.write(f"arbor: not restored: {refused.path}: {refused.message}\n")
    sys.stdout.write(f"rolled back batch {result.batch.id} ({result.batch.message.splitlines()[0]})\n")
    return 1 if result.refused else 0


def _stored_run(workspace: Path, run: str, session: str | None = None) -> tuple[str, str] | str:
    """(session id, run id) of the stored run ``run`` names (its id or start), or why there is none."""
    from ide.backend.store import SessionStore

    try:
        store = SessionStore(load_settings(workspace).settings.resolved_data_dir())
    except SettingsError as exc:
        return str(exc)
    try:
        found = [
            (s, r) for s, r in store.session_of_run(str(workspace), run) if session is None or s == session
        ]
    finally:
        store.close()
    if not found:
        return f"no run {run} in the sessions of {workspace} (arbor tree list shows them)"
    if len(found) > 1:
        return f"{run} names {len(found)} runs: {', '.join(r for _s, r in found)}"
    return found[0]


def _tree_list(workspace: Path, session: str | None, run: str | None) -> int:
    """``arbor tree list``: a stored session's runs, or one run's nodes, read from the session store."""
    from ide.backend.runs import stored_summaries
    from ide.backend.store import SessionStore
    from ide.headless.tree import node_listing, run_listing

    try:
        store = SessionStore(load_settings(workspace).settings.resolved_data_dir())
    except SettingsError as exc:
        return _fail(str(exc))
    try:
        sessions = [r.id for r in store.list(str(workspace)) if session is None or r.id.startswith(session)]
        if run is not None and session is None:
            found = _stored_run(workspace, run)
            if isinstance(found, str):
                return _fail(found)
            sessions = [found[0]]
        if not sessions:
            return _fail(
                f"no session {session} in {workspace}" if session else f"{workspace} has no sessions"
            )
        if session is not None and len(sessions) > 1:
            return _fail(f"{session} names {len(sessions)} sessions: {', '.join(sessions)}")
        runs = asyncio.run(stored_summaries(store, sessions[0], str(workspace), run))
        if run is None:
            lines = run_listing(sessions[0], runs)
        elif len(runs) == 1:
            lines = node_listing(sessions[0], runs[0][0])
        else:
            return _fail(
                f"no run {run} in session {sessions[0]}" if not runs else f"{run} names {len(runs)} runs"
            )
    finally:
        store.close()
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0


def _trust(workspace: Path, revoke: bool) -> int:
    """``arbor trust``: show what the workspace's config asks for, then record the user's trust."""
    from ide.settings import trust_store

    if not workspace.is_dir():
        return _fail(f"{workspace} is not a directory")
    try:
        resolved = load_settings(workspace, trust=False)
    except SettingsError as exc:
        return _fail(str(exc))
    store = trust_store()
    if revoke:
        if resolved.digest is not None:
            store.record(workspace, resolved.digest, trusted=False)
        else:
            store.forget(workspace)
        sys.stdout.write(f"{workspace} is not trusted: settings that need trust are held back\n")
        return 0
    if resolved.digest is None:
        sys.stdout.write(
            f"{workspace} asks for nothing that needs trust: its .arbor/config.toml (if any) holds "
            "only preferences, which always apply\n"
        )
        return 0
    store.record(workspace, resolved.digest, trusted=True)
    sys.stdout.write(f"Trusted {workspace}; these settings now apply:\n")
    for item in resolved.trust_keys:
        sys.stdout.write(f"  {item.describe()}\n")
        for command in item.commands():
            sys.stdout.write(f"    runs: {command}\n")
    sys.stdout.write("A change to them asks again; 'arbor trust --revoke' holds them back.\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == [KEEPER_COMMAND]:  # the packaged app's keeper (internal; ide.lifetime)
        keep(args_list[1:])
    if args_list[:1] == [JEDI_COMMAND]:
        from jedi_language_server.cli import cli

        sys.argv = [JEDI_COMMAND, *args_list[1:]]
        return cli() or 0
    # `arbor PATH` is the window; only a known command name or an option switches to the parser's commands.
    if (
        not args_list
        or args_list[0].split("=", 1)[0] in ("--open", "--agent")
        or (args_list[0] not in COMMANDS and not args_list[0].startswith("-"))
    ):
        args_list = ["gui", *args_list]
    # What every command prints from a repository, a model or an agent reaches the terminal as text
    # (ide.termout); a protocol on stdout is left as it is.
    with escaped_output(stdout=args_list[0] not in PROTOCOL_COMMANDS):
        return _run(_parser().parse_args(args_list))


def _run(args: argparse.Namespace) -> int:
    """Run the command ``args`` name."""
    if getattr(args, "trust", False):
        # An environment variable, so the backend process `arbor run` starts honours it too.
        from ide.trust import TRUST_ENV

        os.environ[TRUST_ENV] = "1"

    if args.command == "trust":
        return _trust(Path(args.path).resolve(), args.revoke)

    if args.command == "acp":
        from ide.backend.server import main as serve

        try:
            level = args.log_level or load_settings(None).settings.log_level
        except SettingsError:
            level = "WARNING"  # the backend reports the bad setting to the client in initialize
        return serve(level)

    if args.command == "run":
        from ide.headless import run_task

        workspace = Path(args.workspace).resolve()
        if not workspace.is_dir():
            return _fail(f"workspace {workspace} is not a directory")
        if args.agent is not None and args.agent.strip().lower() != "arbor":
            return _run_foreign(workspace, args)
        if args.allow_commands:
            return _fail("--allow-commands is for another agent's commands (with --agent)")
        fork = None
        if args.from_node is not None:
            run_id, _, node_id = args.from_node.partition(":")
            if not run_id or not node_id:
                return _fail("--from takes RUN:NODE, e.g. --from 3f2a…:n4 (arbor tree list shows them)")
            if args.workflow is not None:
                return _fail("--from continues in the run's own mode (or --mode); it takes no --workflow")
            found = _stored_run(workspace, run_id)
            if isinstance(found, str):
                return _fail(found)
            fork = (*found, node_id)
        return asyncio.run(
            run_task(
                workspace,
                args.task,
                mode=args.mode,
                apply=args.apply,
                workflow=args.workflow,
                allow_tests=args.allow_tests,
                fork=fork,
            )
        )

    if args.command == "rollback":
        return _rollback(Path(args.workspace).resolve(), args.batch_id)

    if args.command == "tree":
        workspace = Path(args.workspace).resolve()
        if not workspace.is_dir():
            return _fail(f"workspace {workspace} is not a directory")
        return _tree_list(workspace, args.session, args.run)

    if args.command in ("index", "symbols"):
        from ide.codeintel.cli import run_index, run_symbols

        root = Path(args.path).resolve()
        if not root.is_dir():
            return _fail(f"{root} is not a directory")
        if args.command == "index":
            return run_index(root, args.stats)
        return run_symbols(root, args.query, args.every, args.as_json, args.limit)

    if args.command == "lsp":
        from ide.codeintel.cli import run_lsp

        root = Path(args.path).resolve()
        if not root.is_dir():
            return _fail(f"{root} is not a directory")
        return run_lsp(root, args.query, args.position, args.as_json, source=args.source)

    if args.command == "mcp":
        from ide.backend.mcp_server import main as serve_mcp

        workspace = Path(args.workspace).resolve()
        if not workspace.is_dir():
            return _fail(f"workspace {workspace} is not a directory")
        return serve_mcp(workspace, args.mode)

    if args.command == "eval":
        from ide.eval.cli import run_eval

        return run_eval(args)

    if args.command == "workflows":
        from ide.workflows.cli import run_workflows

        return run_workflows(args)

    if args.command == "doctor":
        from ide.doctor import run_doctor

        try:
            resolved = load_settings(Path(args.workspace).resolve())
        except SettingsError as exc:
            return _fail(str(exc))
        return run_doctor(resolved, sys.stdout, probe=args.probe)

    workspace = Path(getattr(args, "path", ".")).resolve()
    if not workspace.is_dir():
        return _fail(f"{workspace} is not a directory")
    agent = None
    if getattr(args, "agent", None) is not None:
        try:
            agent = _agent(workspace, args.agent)
        except ValueError as exc:
            return _fail(str(exc))
    from ide.qtplatform import display_problem

    # Qt aborts the process when its platform plugin cannot load; say why, with the fix, before it does.
    problem = display_problem()
    if problem is not None:
        return _fail(problem.render())
    try:
        from ide.app.main import run_gui
    except ImportError as exc:
        return _fail(f"the window cannot start: {exc}")
    open_tree = getattr(args, "open_tree", None)
    if open_tree is not None and not (Path(open_tree).is_file() or (Path(open_tree) / REPORT_FILE).is_file()):
        return _fail(f"{open_tree} is not a file (nor a folder holding an arbor eval {REPORT_FILE})")
    return run_gui(workspace, Path(open_tree).resolve() if open_tree else None, agent)


def _drop_working_dir_from_path() -> None:
    """Remove ``sys.path[0]`` when it is the working directory and Arbor does not come from it."""
    if not sys.path or getattr(sys, "frozen", False):
        return
    try:
        first, here = Path(sys.path[0] or os.curdir).resolve(), Path.cwd().resolve()
    except OSError:  # the working directory is gone: nothing can be imported from it
        return
    if first == here and Path(__file__).resolve().parent.parent != first:
        del sys.path[0]


def entry() -> int:
    """The ``arbor`` command as a process runs it (the console script, ``python -m ide`` and the packaged
    binary): :func:`main`, then the exit without the interpreter's last garbage collections.

    Every object still alive is moved out of the collector's reach (``gc.freeze``) before the interpreter
    tears down. Its teardown otherwise ran full collections over the 190,000 objects the backend's imports
    leave (pydantic, LangChain, the ACP schema): 0.6 s of CPU at every exit of ``arbor acp``, the time the
    window or a test waited for the backend to end. atexit handlers, stream flushes and module teardown
    still run; only the collector's walk over memory the process is about to give back is skipped.

    A traceback that reaches the top is printed escaped, as everything the command printed was
    (ide.termout).

    First the working directory leaves ``sys.path`` (``python -m ide`` and ``python -c`` put it there),
    unless Arbor itself was imported from it (a source tree run in place): Arbor imports much of what it
    uses lazily, so a repository's ``ollama.py`` or ``pygls.py`` must never be found first."""
    _drop_working_dir_from_path()
    sys.excepthook = print_exception_escaped
    code = main()
    gc.freeze()
    return code


def _run_foreign(workspace: Path, args: argparse.Namespace) -> int:
    """``arbor run --agent``: another ACP agent on a shadow of the workspace (ide.headless.foreign)."""
    flags = (("--mode", args.mode), ("--workflow", args.workflow), ("--from", args.from_node))
    given = [flag for flag, value in flags if value]
    if args.allow_tests:
        given.append("--allow-tests")
    if given:
        return _fail(
            f"{', '.join(given)} choose how Arbor's own agent works; another agent (--agent) takes none"
        )
    try:
        agent = _agent(workspace, args.agent)
    except ValueError as exc:
        return _fail(str(exc))
    from ide.headless.foreign import run_foreign

    review = load_settings(workspace).settings.review  # read by _agent already: it loads
    confine = review.agent_writable if review.confine_agents else None
    return asyncio.run(
        run_foreign(
            str(workspace),
            args.task,
            agent,
            allow_commands=args.allow_commands,
            apply=args.apply,
            confine=confine,
        )
    )


def _agent(workspace: Path, spec: str) -> AgentChoice:
    """The agent ``--agent`` names (ValueError says why there is none); a workspace's own [agents] count
    only once it is trusted."""
    from ide.client.agentproc import resolve_agent

    try:
        resolved = load_settings(workspace)
    except SettingsError as exc:
        raise ValueError(str(exc)) from None
    try:
        return resolve_agent(spec, resolved.settings.agents)
    except ValueError as exc:
        held = [item for item in resolved.held_back if item.key == "agents" and spec.strip() in item.value]
        if held:
            raise ValueError(
                f"{exc}; {held[0].source} defines {spec.strip()!r}, but it waits until you trust the "
                f"workspace: arbor trust {workspace}"
            ) from None
        raise
