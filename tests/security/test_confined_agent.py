"""``review.confine_agents``: another agent under bubblewrap writes only its shadow. A CLI agent that
writes into the real workspace by its absolute path is stopped by the file system (read-only), where
unconfined the same write lands and is reported as written outside review; a confined start that cannot
be (no bwrap, a writable directory holding the workspace) is refused with the reason, never run
unconfined. The ways round a read-only mount are tried for real, with the argv ``confined()`` builds: a
host process's ``/proc/PID/root``, root's capabilities and ``/proc/sys``, an ssh agent's socket, the
terminal's session."""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from ide import sandbox
from tests.support.git import HELLO, git, hello_repo

RUN_TIMEOUT_S = 120
AGENT = textwrap.dedent(
    """
    import sys
    workspace = sys.argv[1]
    open("in_shadow.py", "w").write("x = 1\\n")
    try:
        open(workspace + "/sneaky.py", "w").write("y = 2\\n")
        print("wrote the workspace")
    except OSError as exc:
        print("refused:", exc.strerror)
    """
)
ESCAPE = textwrap.dedent(
    """
    import sys
    workspace, host_pid = sys.argv[1], sys.argv[2]
    for pid in (host_pid, "1"):
        for name in ("escaped.txt", ".git/hooks/pre-commit"):
            target = f"/proc/{pid}/root{workspace}/{name}"
            try:
                open(target, "w").write("#!/bin/sh\\necho pwned\\n")
                print("wrote", target)
            except OSError as exc:
                print("refused:", target, exc.strerror)
    """
)
"""An agent's way out of a read-only bind: the root of a host process (the host's mount namespace), or
of PID 1."""
CONNECT = textwrap.dedent(
    """
    import socket, sys
    for path in sys.argv[1:]:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            try:
                client.connect(path)
                print("connected")
            except OSError as exc:
                print(exc.strerror)
    """
)
BWRAP_OK, BWRAP_SAID = sandbox.bwrap_status()
needs_bwrap = pytest.mark.skipif(not BWRAP_OK, reason=f"{BWRAP_SAID} ({sandbox.INSTALL})")
CONFINED_TIMEOUT_S = 30


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return hello_repo(tmp_path)


@pytest.fixture
def host_process() -> Iterator[int]:
    """A process outside the sandbox, as Arbor and every other host process is; killed at the end."""
    process = subprocess.Popen(["sleep", "60"])
    try:
        yield process.pid
    finally:
        process.kill()
        process.wait(timeout=CONFINED_TIMEOUT_S)


def run_confined(
    script: str, workspace: Path, tmp_path: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    """``script`` run by Python exactly as ``confined()`` starts an agent, in a shadow of its own."""
    shadow, scratch = tmp_path / "shadow", tmp_path / "scratch"
    shadow.mkdir(exist_ok=True)
    scratch.mkdir(exist_ok=True)
    argv = sandbox.confined([sys.executable, "-c", script, *args], str(shadow), str(scratch), workspace, [])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=CONFINED_TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stderr
    return done


def assert_nothing_escaped(workspace: Path, said: str) -> None:
    assert "wrote" not in said and said.count("refused:") == 4, said
    assert not (workspace / "escaped.txt").exists()
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()


def run_agent(
    workspace: Path, tmp_path: Path, script_text: str = AGENT, *args: str
) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "agent.py"
    script.write_text(script_text)
    agent = shlex.join([sys.executable, str(script), str(workspace), *args, "{prompt}"])
    argv = [sys.executable, "-m", "ide", "run", "--workspace", str(workspace), "--agent", agent, "go"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)


@needs_bwrap
def test_a_confined_agent_cannot_write_the_workspace_and_its_shadow_work_is_captured(
    workspace: Path, tmp_path: Path, user_config: object
) -> None:
    user_config("[review]\nconfine_agents = true\n")  # type: ignore[operator]
    done = run_agent(workspace, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "confined with bwrap" in done.stderr
    assert "refused: Read-only file system" in done.stdout
    assert "+++ b/in_shadow.py" in done.stdout
    assert not (workspace / "sneaky.py").exists()
    assert "written outside review" not in done.stderr


def test_unconfined_the_same_write_lands_and_is_reported(workspace: Path, tmp_path: Path) -> None:
    done = run_agent(workspace, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "wrote the workspace" in done.stdout and (workspace / "sneaky.py").exists()
    assert "[review] written outside review: sneaky.py" in done.stderr


@needs_bwrap
def test_a_writable_directory_holding_the_workspace_is_refused(
    workspace: Path, tmp_path: Path, user_config: object
) -> None:
    user_config(f'[review]\nconfine_agents = true\nagent_writable = ["{tmp_path}"]\n')  # type: ignore[operator]
    done = run_agent(workspace, tmp_path)
    assert done.returncode != 0
    assert f"review.agent_writable: {tmp_path} holds the workspace" in done.stderr
    assert not (workspace / "sneaky.py").exists()


def test_without_bwrap_a_confined_start_is_refused_with_how_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert sandbox.bwrap_status() == (False, "bwrap is not installed")
    with pytest.raises(sandbox.ConfineError, match=r"bwrap is not installed \(apt-get install bubblewrap"):
        sandbox.confined(["agent"], str(tmp_path), str(tmp_path), tmp_path, [])


def test_doctor_says_whether_agents_can_be_confined(monkeypatch: pytest.MonkeyPatch) -> None:
    from ide.doctor import confine_check, confinement_report

    if BWRAP_OK:
        assert confine_check(required=True).ok is True
        assert "can be confined" in confine_check(required=False).detail
    report = "\n".join(confinement_report(required=True))
    for covered in ("PID namespace and /proc", "a new session", "no capabilities", "ssh and gpg agents'"):
        assert covered in report.split("not covered:")[0]
    for open_ in ("the network", "reading", "abstract Unix sockets"):
        assert open_ in report.split("not covered:")[1]
    monkeypatch.setattr(shutil, "which", lambda name: None)
    missing = confine_check(required=True)
    assert missing.ok is False and missing.fix is not None and "apt-get install bubblewrap" in missing.fix
    assert confine_check(required=False).ok is None  # optional while the setting is off


@needs_bwrap
def test_a_confined_agent_cannot_write_through_a_host_process_root(
    workspace: Path, tmp_path: Path, host_process: int
) -> None:
    """Without a PID namespace of its own, /proc/PID/root of any host process was the host's file system,
    writable where the user can write: the repository and its hooks."""
    done = run_confined(ESCAPE, workspace, tmp_path, str(workspace), str(host_process))
    assert (
        f"refused: /proc/{host_process}/root{workspace}/escaped.txt No such file or directory" in done.stdout
    )
    assert f"refused: /proc/1/root{workspace}/escaped.txt Read-only file system" in done.stdout
    assert_nothing_escaped(workspace, done.stdout)


@needs_bwrap
def test_a_confined_agent_sees_only_its_own_processes(tmp_path: Path, host_process: int) -> None:
    listing = "import os; print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))"
    done = run_confined(listing, tmp_path, tmp_path)
    seen = [int(pid) for pid in done.stdout.strip("[]\n").split(", ")]
    assert host_process not in seen and os.getpid() not in seen
    assert seen[0] == 1 and len(seen) <= 4, seen  # bwrap's init and Python (its children at most)


@needs_bwrap
def test_a_confined_agent_has_a_session_of_its_own(tmp_path: Path) -> None:
    """No controlling terminal shared with Arbor: TIOCSTI cannot push keystrokes into the user's."""
    done = run_confined("import os; print(os.getsid(0))", tmp_path, tmp_path)
    assert int(done.stdout) != os.getsid(0)


@needs_bwrap
@pytest.mark.skipif(os.geteuid() != 0, reason="only root's sandbox kept capabilities and owns /proc/sys")
def test_as_root_a_confined_agent_can_neither_remount_nor_set_sysctls(
    workspace: Path, tmp_path: Path
) -> None:
    """Run as root, bwrap kept every capability: ``mount -o remount,bind,rw /`` made the bind of / writable.
    Without them root's uid still owned /proc/sys (``kernel.core_pattern`` runs a program on the host);
    the file is only opened, never written."""
    attempt = textwrap.dedent(
        """
        import ctypes, os, sys
        libc = ctypes.CDLL(None, use_errno=True)
        MS_REMOUNT, MS_BIND = 32, 4096
        said = libc.mount(b"none", b"/", None, MS_REMOUNT | MS_BIND, None)
        print("remount:", os.strerror(ctypes.get_errno()) if said else "done")
        try:
            open(sys.argv[1] + "/escaped.txt", "w").write("x")
            print("wrote the workspace")
        except OSError as exc:
            print("workspace:", exc.strerror)
        try:
            os.close(os.open("/proc/sys/kernel/core_pattern", os.O_WRONLY))
            print("core_pattern: writable")
        except OSError as exc:
            print("core_pattern:", exc.strerror)
        print([line.split()[1] for line in open("/proc/self/status") if line.startswith("CapEff")][0])
        """
    )
    done = run_confined(attempt, workspace, tmp_path, str(workspace))
    assert done.stdout.splitlines() == [
        "remount: Operation not permitted",
        "workspace: Read-only file system",
        "core_pattern: Read-only file system",
        "0000000000000000",
    ]
    assert not (workspace / "escaped.txt").exists()


@pytest.fixture
def listening(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """Two live Unix sockets, as an ssh agent's and a gpg agent's: one alone in a directory of its own
    (``ssh-XXXX/agent.1``), one beside the workspace, whose directory must stay visible."""
    own_dir = tmp_path / "ssh-agent"
    own_dir.mkdir()
    paths = (own_dir / "agent.1", tmp_path / "S.gpg-agent")
    servers = []
    for path in paths:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(path))
        server.listen(4)
        server.setblocking(False)
        servers.append(server)
    try:
        yield paths
        for server, path in zip(servers, paths, strict=True):
            with pytest.raises(BlockingIOError):  # nobody connected from inside
                server.accept()
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                client.connect(str(path))  # while from outside the agent can be used
            server.settimeout(CONFINED_TIMEOUT_S)
            server.accept()[0].close()
    finally:
        for server in servers:
            server.close()


@needs_bwrap
def test_a_confined_agent_cannot_reach_the_ssh_or_gpg_agent(
    workspace: Path, tmp_path: Path, listening: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    ssh, gpg = listening
    monkeypatch.setenv("SSH_AUTH_SOCK", str(ssh))
    monkeypatch.setenv("GPG_AGENT_INFO", f"{gpg}:0:1")
    done = run_confined(CONNECT, workspace, tmp_path, str(ssh), str(gpg))
    # The ssh agent's directory is an empty tmpfs; the socket beside the workspace is /dev/null.
    assert done.stdout.splitlines() == ["No such file or directory", "Connection refused"]
    names = "import os; print([n for n in ('SSH_AUTH_SOCK', 'GPG_AGENT_INFO') if n in os.environ])"
    assert run_confined(names, workspace, tmp_path).stdout == "[]\n"
    read = f"print(open({str(workspace / 'hello.py')!r}).read(), end='')"  # its directory stays visible
    assert run_confined(read, workspace, tmp_path).stdout == HELLO


@needs_bwrap
def test_a_confined_agent_cannot_reach_a_daemons_socket_no_variable_names(tmp_path: Path) -> None:
    """As root's tmux server keeps ``/tmp/tmux-0/default``: a client of the right uid runs commands
    outside. The temp directories are an empty tmpfs for the agent (the daemons' under /run are looked
    for), so no variable needs to name it — and one that comes and goes cannot fail the start."""
    daemon_dir = Path(tempfile.mkdtemp(prefix="arbor-test-daemon-", dir="/tmp"))
    path = daemon_dir / "default"
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
            server.bind(str(path))
            server.listen(1)
            done = run_confined(CONNECT, tmp_path, tmp_path, str(path))
            assert done.stdout.strip() == "No such file or directory"  # not there at all
    finally:
        shutil.rmtree(daemon_dir)


def test_the_probe_starts_bwrap_as_an_agent_is_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """doctor's "ok" means a real start works: a kernel without PID namespaces fails the probe too."""
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text(
        textwrap.dedent(
            """\
            #!/bin/sh
            case " $* " in *" --unshare-pid "*)
              echo "bwrap: Creating new namespace failed: Invalid argument" >&2; exit 1;;
            esac
            echo bubblewrap 0.0
            """
        )
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    said = "bwrap cannot make a sandbox here: bwrap: Creating new namespace failed: Invalid argument"
    assert sandbox.bwrap_status() == (False, said)
    with pytest.raises(sandbox.ConfineError, match="Creating new namespace failed"):
        sandbox.confined(["agent"], str(tmp_path), str(tmp_path), tmp_path, [])
    from ide.doctor import confine_check

    assert confine_check(required=True).ok is False


@needs_bwrap
def test_an_agent_started_by_arbor_run_cannot_escape_through_proc(
    workspace: Path, tmp_path: Path, host_process: int, user_config: object
) -> None:
    user_config("[review]\nconfine_agents = true\n")  # type: ignore[operator]
    done = run_agent(workspace, tmp_path, ESCAPE, str(host_process))
    assert done.returncode == 0, done.stderr
    assert "confined with bwrap" in done.stderr
    assert_nothing_escaped(workspace, done.stdout)
    assert "written outside review" not in done.stderr


GIT_AGENT = """\
import os, subprocess, sys
done = subprocess.run(["git", "log", "--format=%s", "-1"], capture_output=True, text=True)
print("git log:", done.returncode, done.stdout.strip(), done.stderr.strip()[:200])
left = sorted(name for name in os.listdir("/tmp") if name.startswith("arbor-test-stray-"))
print("stray files seen:", left)
subprocess.run(["git", "-c", "user.name=a", "-c", "user.email=a@x", "commit", "-qm", "mine", "--allow-empty"])
open("made_here.py", "w").write("x = 1\\n")
"""


@needs_bwrap
def test_a_confined_agent_reads_its_shadows_history_but_no_stray_temp_file(
    workspace: Path, tmp_path: Path, user_config: object
) -> None:
    """The temp directories are an empty tmpfs for a confined agent: another program's file there is not
    seen, while its own script, the workspace and the user's git objects its shadow reads are bound back."""
    stray = Path(tempfile.mkdtemp(prefix="arbor-test-stray-", dir="/tmp"))
    try:
        user_config("[review]\nconfine_agents = true\n")  # type: ignore[operator]
        done = run_agent(workspace, tmp_path, GIT_AGENT)
        assert done.returncode == 0, done.stderr
        subject = git(workspace, "log", "--format=%s", "-1").strip()
        assert f"git log: 0 {subject}" in done.stdout, done.stdout  # objects read through the alternates
        assert "stray files seen: []" in done.stdout
        assert "+++ b/made_here.py" in done.stdout
    finally:
        shutil.rmtree(stray)
