"""Startup benchmark: launch-to-first-paint of the window; the backend's initialize and session/new round
trips and its exit once its input closes.

    python bench/startup.py [--runs 5] [--workspace PATH]

Prints JSON. Each measurement has a peer measured in the same run, so the ratio means something on any
machine: the window against a bare PySide6 QMainWindow, the backend against a minimal agent built on
the ACP SDK (the SDK's echo agent). Everything runs offscreen with throwaway settings and data dirs and
a throwaway bytecode cache (PYTHONDONTWRITEBYTECODE is dropped: an install has its bytecode compiled).
Not a test: the numbers depend on the machine; the target for the window's first paint is 1.5 s. Beside
each first paint it gives the CPU time the child had used by then, and the load average at the start and
the end: on a machine other work keeps busy the wall time is mostly waiting for a core.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

REPO = Path(__file__).resolve().parent.parent
FIRST_PAINT_TARGET_S = 1.5
CHILD_TIMEOUT_S = 60.0

# The child prints time.monotonic() at the first paint event of the main window: CLOCK_MONOTONIC is
# shared by all processes on the machine, so the parent can subtract its own launch time. It prints its
# own CPU time beside it (time.process_time(), all threads): on a loaded machine the wall time mostly says
# how long the process waited for a core, the CPU time what it did before its first frame.
#
# The probe watches the main window alone, from the moment it is shown (QMainWindow.show is wrapped): Qt
# paints a frame starting with the window itself, so its first paint event is the frame's first. It was an
# application-wide event filter, which Python ran for every event of every object — about 7,000 before
# Arbor's first frame, 70–100 ms of the Arbor child's CPU that the bare window (a few dozen events) and
# Arbor itself without the probe never paid.
FIRST_PAINT_PROBE = """
    import os, sys, time
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QApplication, QMainWindow

    class FirstPaint(QObject):
        seen = False
        def eventFilter(self, obj, event):
            if not self.seen and event.type() == QEvent.Type.Paint:
                self.seen = True
                print(time.monotonic(), time.process_time(), flush=True)
                QApplication.instance().closeAllWindows()
            return False

    first_paint = FirstPaint()
    show = QMainWindow.show

    def watched_show(window):
        window.installEventFilter(first_paint)
        show(window)

    QMainWindow.show = watched_show
"""

ARBOR_WINDOW_CHILD = textwrap.dedent(
    FIRST_PAINT_PROBE
    + """
    from pathlib import Path
    from PySide6.QtCore import QSettings

    app = QApplication(["arbor"])
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, sys.argv[2])
    from ide.app.main import run_gui
    sys.exit(run_gui(Path(sys.argv[1])))
    """
)

BARE_WINDOW_CHILD = textwrap.dedent(
    FIRST_PAINT_PROBE
    + """
    app = QApplication(["bare"])
    window = QMainWindow()
    window.resize(1280, 800)
    window.show()
    sys.exit(app.exec())
    """
)

ECHO_AGENT_CHILD = textwrap.dedent(
    """
    import asyncio
    from uuid import uuid4
    from acp import InitializeResponse, NewSessionResponse, PromptResponse, run_agent

    class EchoAgent:
        def on_connect(self, conn):
            self._conn = conn
        async def initialize(self, protocol_version, **kwargs):
            return InitializeResponse(protocol_version=protocol_version)
        async def new_session(self, cwd, **kwargs):
            return NewSessionResponse(session_id=uuid4().hex)
        async def prompt(self, session_id, prompt, **kwargs):
            return PromptResponse(stop_reason="end_turn")

    asyncio.run(run_agent(EchoAgent()))
    """
)


def summary(samples: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(samples), 4),
        "min": round(min(samples), 4),
        "max": round(max(samples), 4),
    }


def first_paint(code: str, args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Seconds from launching ``python -c code`` to the first paint it reports, and the CPU seconds the
    child had used by then."""
    with tempfile.TemporaryFile() as stderr:
        launched = time.monotonic()
        child = subprocess.Popen(
            [sys.executable, "-c", code, *args],
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
            text=True,
            cwd=REPO,
        )
        assert child.stdout is not None
        line = child.stdout.readline()
        # Let it shut down (the Arbor window also stops its backend) so runs never overlap.
        child.wait(timeout=CHILD_TIMEOUT_S)
        if not line.strip():
            stderr.seek(0)
            tail = stderr.read().decode(errors="replace")[-2000:]
            raise RuntimeError(f"the child exited with {child.returncode} before painting:\n{tail}")
    wall, cpu = line.split()
    return float(wall) - launched, float(cpu)


async def session_round_trip(
    command: list[str], env: dict[str, str], cwd: Path
) -> tuple[float, float, float]:
    """Seconds from spawning an ACP agent to its answer to ``initialize``, then to its answer to
    ``session/new`` in ``cwd`` (Arbor imports its agent stack and opens the workspace's services there),
    and from closing its stdin to its exit."""
    from acp import PROTOCOL_VERSION, connect_to_agent
    from acp.schema import ClientCapabilities, Implementation

    class Callbacks:
        async def session_update(self, *args: object, **kwargs: object) -> None:
            return None

    launched = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=env,
        cwd=REPO,
    )
    assert process.stdin is not None and process.stdout is not None
    conn = connect_to_agent(Callbacks(), process.stdin, process.stdout)
    exited = None
    try:
        await asyncio.wait_for(
            conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(),
                client_info=Implementation(name="arbor-bench", version="0"),
            ),
            CHILD_TIMEOUT_S,
        )
        initialized = time.monotonic()
        await asyncio.wait_for(conn.new_session(cwd=str(cwd), mcp_servers=[]), CHILD_TIMEOUT_S)
        opened = time.monotonic()
        await conn.close()
        closing = time.monotonic()
        process.stdin.close()
        await asyncio.wait_for(process.wait(), 10)
        exited = time.monotonic() - closing
        return initialized - launched, opened - initialized, exited
    finally:
        if exited is None:
            await conn.close()
            process.stdin.close()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()


T = TypeVar("T")


def alternate(runs: int, first: Callable[[], T], second: Callable[[], T]) -> tuple[list[T], list[T]]:
    """Interleave the subject and its peer so drift in machine load hits both alike."""
    a: list[T] = []
    b: list[T] = []
    for _ in range(runs):
        a.append(first())
        b.append(second())
    return a, b


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--workspace", type=Path, default=REPO, help="workspace the window opens (default: repo)"
    )
    args = parser.parse_args(argv)
    load_at_start = os.getloadavg()

    # A backend still exiting may write into the bytecode cache as the directory goes.
    with tempfile.TemporaryDirectory(prefix="arbor-bench-", ignore_cleanup_errors=True) as temp:
        root = Path(temp)
        script = root / "script.jsonl"
        script.write_text(json.dumps({"content": "ok"}) + "\n")
        env = {
            **os.environ,
            "ARBOR_CONFIG_DIR": str(root / "config"),
            "ARBOR_DATA_DIR": str(root / "data"),
            "ARBOR_MODEL": f"scripted:{script}",
        }
        env.pop("ARBOR_BACKEND_COMMAND", None)
        # Bytecode cached, as an install has it (docs/traps.md): with PYTHONDONTWRITEBYTECODE set every
        # start would compile all of ide from source again, which the bare window's peer never does.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.setdefault("PYTHONPYCACHEPREFIX", str(root / "pycache"))
        workspace = str(args.workspace.resolve())
        qsettings = str(root / "qsettings")

        # One unmeasured launch of each warms the OS file cache and the bytecode cache, as a second start
        # of the app would be.
        first_paint(ARBOR_WINDOW_CHILD, [workspace, qsettings], env)
        first_paint(BARE_WINDOW_CHILD, [], env)
        arbor_runs, bare_runs = alternate(
            args.runs,
            lambda: first_paint(ARBOR_WINDOW_CHILD, [workspace, qsettings], env),
            lambda: first_paint(BARE_WINDOW_CHILD, [], env),
        )

        arbor_paint, arbor_cpu = [wall for wall, _ in arbor_runs], [cpu for _, cpu in arbor_runs]
        bare_paint, bare_cpu = [wall for wall, _ in bare_runs], [cpu for _, cpu in bare_runs]

        backend = [sys.executable, "-m", "ide", "acp"]
        echo = [sys.executable, "-c", ECHO_AGENT_CHILD]
        session_workspace = root / "session-workspace"
        (session_workspace / "pkg").mkdir(parents=True)
        greet = 'def greet(name):\n    return f"Hello, {name}!"\n'
        (session_workspace / "pkg" / "greet.py").write_text(greet)
        subprocess.run(["git", "init", "-q", str(session_workspace)], check=True)
        asyncio.run(session_round_trip(backend, env, session_workspace))
        arbor_rounds, echo_rounds = alternate(
            args.runs,
            lambda: asyncio.run(session_round_trip(backend, env, session_workspace)),
            lambda: asyncio.run(session_round_trip(echo, env, session_workspace)),
        )
        arbor_init, arbor_open, arbor_exit = (list(column) for column in zip(*arbor_rounds, strict=True))
        echo_init, echo_open, echo_exit = (list(column) for column in zip(*echo_rounds, strict=True))

    from PySide6 import __version__ as pyside_version

    result = {
        "runs": args.runs,
        "machine": {
            "python": platform.python_version(),
            "pyside6": pyside_version,
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "first_paint_s": {
            "arbor_window": summary(arbor_paint),
            "peer_bare_qmainwindow": summary(bare_paint),
            "ratio_median": round(statistics.median(arbor_paint) / statistics.median(bare_paint), 2),
            "target_s": FIRST_PAINT_TARGET_S,
            "meets_target": statistics.median(arbor_paint) <= FIRST_PAINT_TARGET_S,
        },
        "first_paint_cpu_s": {
            "arbor_window": summary(arbor_cpu),
            "peer_bare_qmainwindow": summary(bare_cpu),
            "ratio_median": round(statistics.median(arbor_cpu) / statistics.median(bare_cpu), 2),
        },
        "load_average": {
            "start": [round(load, 2) for load in load_at_start],
            "end": [round(load, 2) for load in os.getloadavg()],
        },
        "initialize_s": {
            "arbor_backend": summary(arbor_init),
            "peer_sdk_echo_agent": summary(echo_init),
            "ratio_median": round(statistics.median(arbor_init) / statistics.median(echo_init), 2),
        },
        # After initialize: Arbor imports its agent stack (LangChain, LangGraph) and opens the workspace's
        # stores, index and memory; the echo agent makes an id. The peer shows the transport's own share.
        "new_session_s": {
            "arbor_backend": summary(arbor_open),
            "peer_sdk_echo_agent": summary(echo_open),
        },
        "exit_after_stdin_closed_s": {
            "arbor_backend": summary(arbor_exit),
            "peer_sdk_echo_agent": summary(echo_exit),
            "ratio_median": round(statistics.median(arbor_exit) / statistics.median(echo_exit), 2),
        },
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
