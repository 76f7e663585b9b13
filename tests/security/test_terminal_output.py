"""What every `arbor` command prints (issue 45, item 5): a repository's text — a workflow's description
and file name, a setting's value, a file name in the index — reaches the terminal as text, never as
escape sequences (a cleared screen, an OSC 52 clipboard write, an OSC 8 link) or bidi controls; JSON
output keeps the characters as JSON escapes, and a protocol on stdout (`arbor acp`, `arbor mcp`) is left
as it is."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ide.termout import EscapedText, escaped_output, print_exception_escaped, terminal_of

ESC, BEL, RLO = "\x1b", "\x07", "\u202e"
CLEAR = f"{ESC}[2J"
OSC52 = f"{ESC}]52;c;cm0gLXJmIH4={BEL}"
LINK = f"{ESC}]8;;http://127.0.0.1/x{ESC}\\click{ESC}]8;;{ESC}\\"
DESCRIPTION = f"Fix bugs {CLEAR}{RLO}txt.exe {LINK} done"

HOSTILE_WORKFLOW = r"""metadata:
  name: hostile
  description: "Fix bugs \e[2J\u202Etxt.exe \e]8;;http://127.0.0.1/x\e\\click\e]8;;\e\\ done"
  workflow_type: code_fix
stages:
  - stage_id: 1
    name: fix
    parallel_agents: [{agent: code_agent}]
    routing: {next_stage_on_success: DONE}
"""


def arbor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ide", *args],
        capture_output=True,
        text=True,
        timeout=90,
        env=os.environ.copy(),
        check=False,
    )


def assert_shown_as_text(*streams: str) -> None:
    for stream in streams:
        assert ESC not in stream and BEL not in stream and RLO not in stream
        assert "\r" not in stream.replace("\r\n", "\n")


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A repository whose workflow, workflow file names, config and source file names hold escapes."""
    root = tmp_path / "repo"
    workflows = root / ".arbor" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / f"hostile{CLEAR}{RLO}.yaml").write_text(HOSTILE_WORKFLOW)
    (workflows / f"broken{OSC52}.yaml").write_text("metadata: [\n")
    (root / ".arbor" / "config.toml").write_text(
        '[llm]\nmodel = "ollama:qwen\\u001b]52;c;cm0gLXJmIH4=\\u0007"\n'
    )
    package = root / f"pkg{ESC}[31m"
    package.mkdir()
    (package / f"m{RLO}od.py").write_text("def hostile_function():\n    return 1\n")
    return root


def test_workflows_list_prints_a_workflow_s_description_and_file_names_as_text_or_json(hostile: Path) -> None:
    done = arbor("workflows", "list", "--workspace", str(hostile))
    assert done.returncode == 1  # the broken file is reported
    assert_shown_as_text(done.stdout, done.stderr)
    assert "Fix bugs \\x1b[2J<U+202E>txt.exe \\x1b]8;;http://127.0.0.1/x\\x1b\\click" in done.stdout
    assert "hostile\\x1b[2J<U+202E>.yaml" in done.stdout
    assert "broken\\x1b]52;c;cm0gLXJmIH4=\\x07.yaml" in done.stderr
    # JSON keeps the characters as its own escapes: the data is whole, the terminal sees none of them.
    as_json = arbor("workflows", "list", "--workspace", str(hostile), "--json")
    assert_shown_as_text(as_json.stdout)
    listed = {w["name"]: w for w in json.loads(as_json.stdout)["workflows"]}
    assert listed["hostile"]["description"] == DESCRIPTION
    assert listed["hostile"]["path"].endswith(f"hostile{CLEAR}{RLO}.yaml")


def test_workflows_validate_prints_file_names_as_text(hostile: Path) -> None:
    done = arbor("workflows", "validate", str(hostile / ".arbor" / "workflows"))
    assert done.returncode == 1
    assert_shown_as_text(done.stdout, done.stderr)
    assert "hostile\\x1b[2J<U+202E>.yaml: ok" in done.stdout
    assert "broken\\x1b]52;c;cm0gLXJmIH4=\\x07.yaml:2: not valid YAML" in done.stderr


def test_doctor_prints_a_repository_setting_s_clipboard_write_as_text(hostile: Path) -> None:
    done = arbor("doctor", "--workspace", str(hostile))
    assert_shown_as_text(done.stdout, done.stderr)
    assert "ollama:qwen\\x1b]52;c;cm0gLXJmIH4=\\x07" in done.stdout


def test_symbols_prints_a_file_name_as_text_and_as_json(hostile: Path) -> None:
    done = arbor("symbols", str(hostile), "hostile_function")
    assert done.returncode == 0, done.stderr
    assert_shown_as_text(done.stdout, done.stderr)
    assert "pkg\\x1b[31m/m<U+202E>od.py:1" in done.stdout
    as_json = arbor("symbols", str(hostile), "hostile_function", "--json")
    assert_shown_as_text(as_json.stdout)
    assert json.loads(as_json.stdout)[0]["path"] == str(hostile / f"pkg{ESC}[31m" / f"m{RLO}od.py")


@pytest.mark.parametrize("command", ["acp", "mcp"])
def test_a_protocol_on_stdout_is_written_as_it_is_and_its_log_escaped(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ide.backend.mcp_server
    import ide.backend.server
    from ide.cli import main

    seen: list[tuple[bool, bool]] = []

    def serve(*_args: object) -> int:
        seen.append((isinstance(sys.stdout, EscapedText), isinstance(sys.stderr, EscapedText)))
        return 0

    monkeypatch.setattr(ide.backend.server, "main", serve)
    monkeypatch.setattr(ide.backend.mcp_server, "main", serve)
    stdout, stderr = sys.stdout, sys.stderr
    assert main([command]) == 0
    assert seen == [(False, True)]
    assert (sys.stdout, sys.stderr) == (stdout, stderr)  # put back once the command is done


def test_every_other_command_writes_through_the_escaping(monkeypatch: pytest.MonkeyPatch) -> None:
    from ide.cli import main

    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    assert main(["workflows", "validate", f"/nonexistent/{CLEAR}{RLO}.yaml"]) == 2
    assert err.getvalue() == "arbor: /nonexistent/\\x1b[2J<U+202E>.yaml: no such file\n"
    assert sys.stdout is out and sys.stderr is err


def test_the_stream_keeps_line_ends_and_tabs_and_shows_a_bare_carriage_return() -> None:
    under = io.StringIO()
    stream = EscapedText(under)  # type: ignore[arg-type]
    print("a line\r", file=stream)  # a CRLF line end, written as "…\r" then "\n"
    print("\tindented", file=stream)
    stream.write(f"fake{BEL}\rreal {OSC52}")
    stream.write("held\r")
    stream.close()
    assert under.getvalue() == (
        "a line\r\n\tindented\nfake\\x07\\x0dreal \\x1b]52;c;cm0gLXJmIH4=\\x07held\\x0d"
    )
    assert terminal_of(stream) is under  # a progress bar's own carriage returns go under it
    assert terminal_of(under) is under  # type: ignore[arg-type]


def test_no_console_is_left_without_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """A windowed build has no stdout or stderr at all (None): nothing is wrapped."""
    monkeypatch.setattr(sys, "stdout", None)
    monkeypatch.setattr(sys, "stderr", None)
    with escaped_output():
        assert sys.stdout is None and sys.stderr is None


def test_a_traceback_that_reaches_the_top_is_printed_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """After the command's streams are put back, the process's excepthook escapes what it prints."""
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    try:
        raise ValueError(f"cannot read {CLEAR}{RLO}notes.txt")
    except ValueError as exc:
        print_exception_escaped(type(exc), exc, exc.__traceback__)
    assert_shown_as_text(err.getvalue())
    assert err.getvalue().endswith("ValueError: cannot read \\x1b[2J<U+202E>notes.txt\n")
