"""The tests' fork-server client: a ``python -m ide ...`` started under the test suite hands its stdio to
the fork server (:mod:`tests.support.forkserver.server`), which forks a child with Arbor already imported
to run it, and this process stands in for that child until it ends.

Python imports ``sitecustomize`` at start-up from ``sys.path``; the suite's conftest puts this folder on
``PYTHONPATH`` and the server's socket in ``TESTS_FORK_SERVER``. Anything else (another module, options
such as ``-X``, a different interpreter, flags or ``PYTHON*`` environment) is left to start as usual, and
so is everything when the server is not there. The stand-in keeps its pid for the caller: signals sent to
it go to the child's process group, the child's exit code (or the signal that ended it) becomes its own,
and the server kills the child if the stand-in is killed (docs/architecture.md, "The tests")."""

from __future__ import annotations

import os
import sys

STDIO_FIELDS = ("encoding", "errors", "line_buffering", "write_through")
FLAGS = (
    "debug",
    "inspect",
    "interactive",
    "optimize",
    "dont_write_bytecode",
    "no_user_site",
    "no_site",
    "ignore_environment",
    "verbose",
    "bytes_warning",
    "quiet",
    "hash_randomization",
    "isolated",
    "dev_mode",
    "utf8_mode",
    "warn_default_encoding",
    "int_max_str_digits",
)  # every flag but safe_path (-P), which the server copies; the server compares them too
RELAYED = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")


def _request(safe_path: bool, rest: list[str]) -> dict[str, object]:
    import signal

    umask = os.umask(0)
    os.umask(umask)
    return {
        "executable": sys.executable,
        "orig_argv": sys.orig_argv,
        "argv": rest,
        "safe_path": safe_path,
        "path": sys.path,
        "flags": {name: getattr(sys.flags, name) for name in FLAGS},
        "warnoptions": sys.warnoptions,
        "pycache_prefix": sys.pycache_prefix,
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "umask": umask,
        "stdio": [
            {field: getattr(stream, field, None) for field in STDIO_FIELDS}
            for stream in (sys.stdin, sys.stdout, sys.stderr)
        ],
        "ignored": [name for name in RELAYED if signal.getsignal(getattr(signal, name)) == signal.SIG_IGN],
        "blocked": [int(sig) for sig in signal.pthread_sigmask(signal.SIG_BLOCK, [])],
    }


def _read_line(sock: object) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(4096)  # type: ignore[attr-defined]
        if not chunk:
            return ""
        data += chunk
    return data.decode()


SCRIPTS = ("jedi-language-server",)
"""Console scripts the server also runs (by name): Arbor starts jedi-language-server by its script when
there is one, and it spent ~0.65 s of CPU importing jedi at each start."""
HELPERS = ("echo_agent.py", "tree_agent.py", "review_agent.py")
"""The tests' own ACP agents (in tests/support, by path), each of which imported the ACP SDK's schema anew."""
HELPERS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _forked_script(path: str) -> bool:
    name = os.path.basename(path)
    if name in SCRIPTS:
        return True
    return name in HELPERS and os.path.dirname(os.path.abspath(path)) == HELPERS_DIR


def _delegate() -> None:
    server = os.environ.get("TESTS_FORK_SERVER", "")
    argv = list(getattr(sys, "orig_argv", []))
    safe_path = argv[1:2] == ["-P"]
    start = 2 if safe_path else 1
    script = not safe_path and len(argv) > 1 and _forked_script(argv[1])
    if not server or sys.platform != "linux" or sys._xoptions:
        return
    if not script and argv[start : start + 2] != ["-m", "ide"]:
        return
    import contextlib
    import json
    import signal
    import socket

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(server)
        request = _request(safe_path, argv[start + 2 :] if not script else argv[1:])
        request["script"] = script
        payload = json.dumps(request).encode()
        socket.send_fds(sock, [len(payload).to_bytes(4, "big") + payload], [0, 1, 2])
        answer = _read_line(sock)
    except OSError:
        answer = ""
    if not answer.startswith("pid "):
        sock.close()  # refused or not there: this process runs Arbor itself, as without the server
        return
    child = int(answer.split()[1])
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)  # only the child holds the caller's pipes: their end of file is the child's

    def relay(sig: int, _frame: object) -> None:
        try:
            os.killpg(child, sig)
        except OSError:  # not a group leader yet (it calls setsid first thing), or gone
            with contextlib.suppress(OSError):
                os.kill(child, sig)

    for name in RELAYED:
        if signal.getsignal(getattr(signal, name)) != signal.SIG_IGN:
            signal.signal(getattr(signal, name), relay)
    answer = _read_line(sock)
    if not answer.startswith("exit "):  # the server is gone: so is the child's keeper
        relay(signal.SIGKILL, None)
        os._exit(70)
    code = int(answer.split()[1])
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [-code])
        os.kill(os.getpid(), -code)
    os._exit(code if code >= 0 else 128 - code)


_delegate()
