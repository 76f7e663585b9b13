"""The tests' fork server: one per pytest worker, with Arbor and its agent stack imported once, forking a
child for each ``python -m ide ...`` a test starts, and for each ``jedi-language-server`` its console
script starts (the client is ``sitecustomize.py`` beside this file; ``SCRIPTS`` there).

A backend spent about 1.6 s of CPU importing LangChain, langsmith's models, LangGraph, the ACP schema and
Arbor before it answered ``session/new``, and the suite starts a few hundred of them. The child is the
same program run the same way: ``runpy`` runs ``ide.__main__`` in it, in the caller's working directory,
environment, argv, umask, signal dispositions and stdio pipes, in a session of its own; it exits through
the interpreter's own shutdown. Only what the imports did is shared, and they are checked to have started
no thread. The server refuses (and the caller starts as usual) when the caller's interpreter, flags,
``sys.path`` or ``PYTHON*``/locale environment differ from its own.

    python -P tests/support/forkserver/server.py SOCKET

It ends when its standard input closes (the worker that started it ended). Its standard error (the
conftest keeps it as ``fork-server.log`` in the run's temp dir) has a line for each child: what it ran,
the CPU it used and its exit code, and each refusal with its reason."""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import selectors
import signal
import socket
import sys
import threading

# The client's own lists (it is imported at every start, from the PYTHONPATH the conftest gives us both).
from sitecustomize import FLAGS, RELAYED

PRELOAD = (
    # What `arbor acp` imports before it answers session/new, and `arbor run` before it starts it.
    *("ide.cli", "ide.backend.server", "ide.backend.session", "ide.llm.scripted", "ide.headless"),
    # What a session imports on first use, in most tests: the index's parser pool and watcher, the
    # checkpointer; and the language-server client, the MCP SDK and the Ollama client in many.
    *("concurrent.futures.process", "tree_sitter_language_pack", "watchfiles", "anyio", "aiosqlite"),
    *("langgraph.checkpoint.sqlite.aio", "pygls.lsp.client", "lsprotocol.types", "mcp.client.stdio"),
    *("mcp.server.fastmcp", "langchain_ollama"),
    # What a session's first turn imports (py-spy over the backend tests: a fifth of a forked backend's
    # CPU was still imports): the index, language-server, memory and MCP tools and their extensions,
    # anyio's asyncio backend, LangChain's tool and tracer modules.
    *("ide.codeintel.index", "ide.codeintel.lsp", "ide.memory", "ide.tools.index", "ide.tools.lsp"),
    *("ide.tools.memory", "ide.tools.mcp", "ide.tools.edit", "ide.tools.read", "ide.llm.ollama_chat"),
    *("ide.backend.extensions.index", "ide.backend.extensions.lsp", "ide.backend.extensions.memory"),
    *("ide.backend.extensions.review", "ide.backend.extensions.workflows", "ide.search.architectures"),
    *("ide.backend.turn", "ide.backend.commands"),
    *("anyio._backends._asyncio", "langchain_core.tools.simple", "langchain_core.tracers.stdout"),
    # jedi-language-server, which Arbor starts by its console script (sitecustomize.SCRIPTS), and what the
    # tests' own agents import (sitecustomize.HELPERS).
    *("jedi_language_server.cli", "acp"),
)
SAME_ENV = ("PYTHON", "LC_", "LANG")
READ_LATER = ("PYTHONBREAKPOINT",)
"""PYTHON* variables the interpreter reads when they are used, not at start-up (``breakpoint()`` reads its
hook's name at each call): the child gets the caller's environment, so they may differ. Ray's workers set
PYTHONBREAKPOINT, and every backend a Ray eval test started there ran in an interpreter of its own."""


def refusal(request: dict, base_path: list[str]) -> str:
    """Why this server cannot run ``request`` as the caller's own interpreter would, or ''."""
    if request["executable"] != sys.executable:
        return "another interpreter"
    if request["flags"] != {name: getattr(sys.flags, name) for name in FLAGS}:
        return "other interpreter flags"
    if request["warnoptions"] != sys.warnoptions or request["pycache_prefix"] != sys.pycache_prefix:
        return "other warning or bytecode options"
    if request["path"] != base_path:  # as at start-up, before the script's folder or the cwd goes first
        return "another sys.path"
    ours = {k: v for k, v in os.environ.items() if k.startswith(SAME_ENV) and k not in READ_LATER}
    theirs = {k: v for k, v in request["env"].items() if k.startswith(SAME_ENV) and k not in READ_LATER}
    if ours != theirs:
        return "other PYTHON* or locale variables"
    if threading.active_count() != 1:
        return "a thread is running"  # a fork would copy it without its thread
    return ""


def read_request(conn: socket.socket) -> tuple[dict, list[int]]:
    """The caller's request and its stdin, stdout and stderr."""
    conn.settimeout(10)
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 20, 3)
    if len(fds) != 3 or len(data) < 4:
        for fd in fds:
            os.close(fd)
        raise OSError("a request without its stdio")
    size = int.from_bytes(data[:4], "big")
    body = data[4:]
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            raise OSError("a request cut short")
        body += chunk
    return json.loads(body), fds


def stdio(fd: int, mode: str, settings: dict, name: str) -> io.TextIOWrapper:
    """A standard stream on ``fd`` as the caller's interpreter made it (encoding, errors, buffering)."""
    raw = io.FileIO(fd, mode, closefd=False)
    raw.name = name  # type: ignore[misc]  # as CPython names its own (<stdout>)
    buffered = io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)
    return io.TextIOWrapper(
        buffered,
        encoding=settings["encoding"],
        errors=settings["errors"],
        newline="\n" if mode != "r" else None,
        line_buffering=bool(settings["line_buffering"]),
        write_through=bool(settings["write_through"]),
    )


def become(request: dict, fds: list[int]) -> None:
    """In the forked child: take the caller's place, run ``python -m ide ARGS`` and exit as it does."""
    os.setsid()
    for target, fd in zip((0, 1, 2), fds, strict=True):
        os.dup2(fd, target)
    for fd in set(fds) - {0, 1, 2}:
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.umask(request["umask"])
    for name in RELAYED:
        sig = getattr(signal, name)
        ignored = name in request["ignored"]
        default = signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL
        signal.signal(sig, signal.SIG_IGN if ignored else default)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, request["blocked"])
    sys.stdin, sys.stdout, sys.stderr = (
        stdio(0, "r", request["stdio"][0], "<stdin>"),
        stdio(1, "w", request["stdio"][1], "<stdout>"),
        stdio(2, "w", request["stdio"][2], "<stderr>"),
    )
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
    sys.orig_argv = request["orig_argv"]
    import tempfile

    tempfile.tempdir = None  # the caller's TMPDIR, as a fresh interpreter reads it
    import runpy

    if request.get("script"):  # `python SCRIPT ARGS`: the script's folder first on sys.path
        sys.argv = list(request["argv"])
        sys.path[:] = [os.path.dirname(os.path.realpath(sys.argv[0])), *request["path"]]
        runpy.run_path(sys.argv[0], run_name="__main__")
        raise SystemExit(0)
    sys.argv = ["-m", *request["argv"]]
    sys.path[:] = request["path"] if request["safe_path"] else [os.getcwd(), *request["path"]]
    runpy.run_module("ide", run_name="__main__", alter_sys=True)
    raise SystemExit(0)


def kill(pid: int) -> None:
    """SIGKILL the child's session (it calls setsid first thing; before that, the child alone)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


class Server:
    def __init__(self, path: str) -> None:
        self.base_path = list(sys.path)
        self.selector = selectors.DefaultSelector()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(64)
        self.selector.register(self.listener, selectors.EVENT_READ, ("accept", None))
        self.selector.register(0, selectors.EVENT_READ, ("parent", None))
        self.callers: dict[int, socket.socket] = {}  # child pid -> its stand-in's connection
        self.children: dict[int, tuple[int, list[str]]] = {}  # child pid -> its pidfd, what it runs

    def serve(self) -> None:
        while True:
            for key, _events in self.selector.select():
                kind, pid = key.data
                if kind == "accept":
                    self.accept()
                elif kind == "parent":
                    if not os.read(0, 4096):
                        return
                elif kind == "exited":
                    self.reap(pid)
                else:  # the stand-in's connection: readable only when it closed, i.e. it was killed
                    self.forget_caller(pid)
                    kill(pid)

    def accept(self) -> None:
        conn, _ = self.listener.accept()
        try:
            request, fds = read_request(conn)
        except (OSError, ValueError):
            conn.close()
            return
        reason = refusal(request, self.base_path)
        if reason:
            print(f"refused {request['orig_argv']}: {reason}", file=sys.stderr, flush=True)
            for fd in fds:
                os.close(fd)
            with contextlib.suppress(OSError):
                conn.sendall(f"no {reason}\n".encode())
            conn.close()
            return
        pid = os.fork()
        if pid == 0:
            self.close_in_child(conn)
            become(request, fds)
        for fd in fds:
            os.close(fd)
        pidfd = os.pidfd_open(pid)
        self.children[pid] = (pidfd, request["argv"])
        self.selector.register(pidfd, selectors.EVENT_READ, ("exited", pid))
        try:
            conn.sendall(f"pid {pid}\n".encode())
        except OSError:
            conn.close()
            kill(pid)
            return
        conn.setblocking(False)
        self.callers[pid] = conn
        self.selector.register(conn, selectors.EVENT_READ, ("caller", pid))

    def close_in_child(self, conn: socket.socket) -> None:
        """The child holds none of the server's descriptors: a stand-in's connection closing must mean the
        stand-in is gone."""
        self.selector.close()
        self.listener.close()
        conn.close()
        for caller in self.callers.values():
            caller.close()
        for pidfd, _argv in self.children.values():
            os.close(pidfd)

    def reap(self, pid: int) -> None:
        _, status, usage = os.wait4(pid, 0)
        pidfd, argv = self.children.pop(pid)
        code, cpu = os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime
        print(f"ran {argv} cpu={cpu:.2f}s exit={code}", file=sys.stderr, flush=True)
        self.selector.unregister(pidfd)
        os.close(pidfd)
        conn = self.callers.get(pid)
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.setblocking(True)
                conn.sendall(f"exit {code}\n".encode())
            self.forget_caller(pid)

    def forget_caller(self, pid: int) -> None:
        conn = self.callers.pop(pid, None)
        if conn is not None:
            self.selector.unregister(conn)
            conn.close()


def build_models() -> int:
    """Build the pydantic models that the imports left to build on first use (the ACP schema's, Arbor's
    protocol and settings): each child built again the ones it used, a quarter of a backend's CPU. The
    schemas are the same whenever they are built; a model that cannot be built yet is left as it was."""
    from pydantic import BaseModel

    built, todo, seen = 0, [BaseModel], set()
    while todo:
        for model in todo.pop().__subclasses__():
            if model in seen:
                continue
            seen.add(model)
            todo.append(model)
            if not model.__pydantic_complete__ and model.__module__.split(".")[0] in ("acp", "ide"):
                with contextlib.suppress(Exception):
                    built += bool(model.model_rebuild())
    return built


def main() -> None:
    for name in PRELOAD:
        __import__(name)
    build_models()
    # What every session builds once per process (both cached there): the model clients' TLS context
    # and the default workspace's compiled exclude patterns.
    from pathlib import Path

    from ide.fs import ConfinedFS
    from ide.llm.wire import tls

    tls()
    ConfinedFS(Path(os.sep))
    gc.collect()
    gc.freeze()  # what the imports left stays out of every child's collections (and unshared pages)
    Server(sys.argv[1]).serve()


if __name__ == "__main__":
    main()
