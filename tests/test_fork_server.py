"""The tests' fork server (tests/support/forkserver) runs ``python -m ide ...`` as the caller's own
interpreter would: the same output, exit codes, environment, working directory and stdio, signals sent to
the caller's process reach Arbor, and a killed caller takes its child with it. Each check runs the same
command with and without the server and compares; each first checks the command really was forked."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.procs import children

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the fork server is Linux-only")

SERVER = "TESTS_FORK_SERVER"


def _server_pid() -> int:
    """This worker's fork server: its child with the socket on its command line (the server's forks carry
    the same command line, but they are the server's children)."""
    socket_path = os.environ[SERVER].encode()
    for pid in children(os.getpid()):
        try:
            if socket_path in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
                return pid
        except OSError:
            continue
    raise AssertionError("no fork server is running")


def _forked_in(cwd: Path) -> list[int]:
    """The fork server's children working in ``cwd``."""
    found = []
    for child in children(_server_pid()):
        try:
            if Path(os.readlink(f"/proc/{child}/cwd")) == cwd.resolve():
                found.append(child)
        except OSError:
            continue
    return found


LOG: list[Path] = []
"""This worker's fork-server log (the conftest's), once the ``server`` fixture found it."""


def _refusals() -> str:
    """What the server refused, and why, from its log: a test that expected a fork says it when there was
    none (PYTHONBREAKPOINT left behind by Ray's driver once sent every later caller to an interpreter of
    its own)."""
    try:
        lines = [line for line in LOG[0].read_text().splitlines() if line.startswith("refused")]
    except (IndexError, OSError):
        return ""
    return "; the fork server's last refusals: " + " | ".join(lines[-3:]) if lines else ""


def _wait(condition: object, what: str, seconds: float = 5) -> None:
    for _ in range(int(seconds / 0.025)):
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.025)
    raise AssertionError(f"timed out waiting for {what}{_refusals()}")


def _server_ready() -> None:
    # It binds once its imports are done: seconds on a busy machine.
    _wait(lambda: os.path.exists(os.environ.get(SERVER, "")), "the fork server's socket", 60)


def _run(args: list[str], forked: bool, cwd: Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    env = os.environ.copy()
    if not forked:
        env.pop(SERVER, None)
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, **kwargs
    )


def _forked_until_its_input_closes(argv: list[str], cwd: Path) -> None:
    """Start ``argv`` (a server on stdio: its input closing ends it), see the fork server's child run it in
    ``cwd``, close its input and see it exit with 0."""
    caller = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        # The caller is a Python program: its start until it reaches the server takes seconds at load 10.
        _wait(lambda: len(_forked_in(cwd)) == 1, f"the server's child running {Path(argv[-1]).name}", 30)
        assert caller.stdin is not None
        caller.stdin.close()
        assert caller.wait(30) == 0
    finally:
        caller.kill()
        caller.wait()


@pytest.fixture
def server(tmp_path_factory: pytest.TempPathFactory) -> None:
    if not os.environ.get(SERVER):
        pytest.skip("the fork server is off (TESTS_FORK_SERVER=0)")
    LOG[:] = [tmp_path_factory.getbasetemp() / "fork-server.log"]
    _server_ready()


def test_a_forked_command_prints_and_exits_as_its_own_interpreter_does(server: None, tmp_path: Path) -> None:
    for args in (["-m", "ide", "--help"], ["-P", "-m", "ide", "--no-such-flag"], ["-m", "ide", "doctor"]):
        forked, own = _run(args, True, tmp_path), _run(args, False, tmp_path)
        assert (forked.returncode, forked.stdout, forked.stderr) == (own.returncode, own.stdout, own.stderr)
    assert _run(["-m", "ide", "--no-such-flag"], True, tmp_path).returncode == 2


JEDI = Path(sys.executable).parent / "jedi-language-server"
"""The console script Arbor starts jedi-language-server by (``ide.codeintel.lsp.registry``)."""


def test_jedi_language_servers_script_is_forked_too_and_runs_as_itself(server: None, tmp_path: Path) -> None:
    if not JEDI.exists():
        pytest.skip("jedi-language-server has no console script beside this interpreter")
    for args in ([str(JEDI), "--version"], [str(JEDI), "--help"]):
        forked, own = _run(args, True, tmp_path), _run(args, False, tmp_path)
        assert (forked.returncode, forked.stdout, forked.stderr) == (own.returncode, own.stdout, own.stderr)
    _forked_until_its_input_closes([str(JEDI)], tmp_path)


def test_the_tests_own_agents_are_forked_and_a_script_of_that_name_elsewhere_is_not(
    server: None, tmp_path: Path
) -> None:
    _forked_until_its_input_closes(
        [sys.executable, str(Path(__file__).parent / "support" / "echo_agent.py")], tmp_path
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "echo_agent.py").write_text("import os\nprint(os.getppid())\n")
    ran = _run([str(elsewhere / "echo_agent.py")], True, elsewhere)
    assert ran.stdout == f"{os.getpid()}\n"  # its own interpreter, our child: not the server's


def test_the_child_is_forked_in_the_callers_cwd_with_its_stdio(server: None, tmp_path: Path) -> None:
    caller = subprocess.Popen(
        [sys.executable, "-P", "-m", "ide", "acp"],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        _wait(lambda: len(_forked_in(tmp_path)) == 1, "the caller's forked child")
        (child,) = _forked_in(tmp_path)
        assert children(caller.pid) == []  # not the caller's own: the server's
        assert os.getsid(child) == child  # a session of its own, as its language servers expect
        assert caller.stdin is not None and caller.stdout is not None
        caller.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n')
        caller.stdin.flush()
        assert b'"id":1' in caller.stdout.readline()  # the caller's pipes are the child's
        caller.stdin.close()  # an ACP agent's cue to exit: it reaches the child
        assert caller.wait(30) == 0
        _wait(lambda: not _forked_in(tmp_path), "the child to end")
    finally:
        caller.kill()
        caller.wait()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_signal_to_the_caller_ends_the_child_as_it_would_end_arbor(
    server: None, tmp_path: Path, sig: signal.Signals
) -> None:
    codes = []
    for forked in (True, False):
        env = os.environ.copy()
        if not forked:
            env.pop(SERVER)
        caller = subprocess.Popen(
            [sys.executable, "-P", "-m", "ide", "acp"],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            # After its imports (the own interpreter's take a while): both are then in the same state.
            assert caller.stdin is not None and caller.stdout is not None
            caller.stdin.write(
                b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'
            )
            caller.stdin.flush()
            assert b'"id":1' in caller.stdout.readline()
            assert len(_forked_in(tmp_path)) == forked, _refusals()
            os.kill(caller.pid, sig)
            codes.append(caller.wait(30))
            _wait(lambda: not _forked_in(tmp_path), "the forked backend to end")
        finally:
            caller.kill()
            caller.wait()
    assert codes[0] == codes[1]
