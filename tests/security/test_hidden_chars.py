"""Hidden characters (issue 27, item 5; Trojan Source, CVE-2021-42574) and what `arbor run` prints
(item 7): an agent's edit that adds bidi controls, zero-width characters or a homoglyph identifier is
marked per hunk and never covered by Accept all; names holding them are refused; the terminal gets text,
never escape sequences from a model or a file."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ide.changes.overlay import ChangeSet
from ide.changes.review import Review
from ide.changes.store import BatchStore
from ide.fs import ToolError, check_path_text
from ide.protocol.review import DecideParams

RLO, LRI, PDI, ZWSP = "\u202e", "\u2066", "\u2069", "\u200b"
CYRILLIC_A = "\u0430"

TROJAN = (
    "def pay(amount):\n"
    f'    access = "user{RLO} {LRI}# admin only{PDI} {LRI}"  # check\n'
    f"    token{ZWSP} = 1\n"
    f"    return p{CYRILLIC_A}y_out(amount)\n"
)
PLAIN = "def helper():\n    return 2\n"


@pytest.fixture
def review(git_workspace: Path, tmp_path: Path) -> Review:
    changeset = ChangeSet(git_workspace)
    changeset.write_bytes("pkg/trojan.py", TROJAN.encode())
    changeset.write_bytes("pkg/plain.py", PLAIN.encode())
    return Review(changeset, session_id="s", title=None, store=BatchStore(tmp_path / "batches"))


def test_a_hunk_hiding_characters_is_marked_with_each_kind_and_line(review: Review) -> None:
    files = {f.path: f for f in review.view().files}
    (hunk,) = files["pkg/trojan.py"].hunks
    kinds = {(finding.kind, finding.line) for finding in hunk.hidden}
    assert kinds == {("bidi", 2), ("invisible", 3), ("mixed-script", 4)}
    bidi = next(f for f in hunk.hidden if f.kind == "bidi")
    assert bidi.chars == ["U+202E", "U+2066", "U+2069"]
    assert next(f for f in hunk.hidden if f.kind == "mixed-script").chars == [f"p{CYRILLIC_A}y_out"]
    assert files["pkg/plain.py"].hunks[0].hidden == []


def test_accept_all_leaves_such_a_hunk_to_be_accepted_on_its_own(review: Review) -> None:
    decided = review.decide(DecideParams(session_id="s", decision="accepted", all=True))
    decisions = {f.path: f.hunks[0].decision for f in decided.files}
    assert decisions == {"pkg/plain.py": "accepted", "pkg/trojan.py": "pending"}
    hunk_id = next(f for f in decided.files if f.path == "pkg/trojan.py").hunks[0].id
    decided = review.decide(DecideParams(session_id="s", decision="accepted", hunk_ids=[hunk_id]))
    assert all(f.hunks[0].decision == "accepted" for f in decided.files)


@pytest.mark.parametrize("name", [f"notes{RLO}txt.py", f"pkg/__init__{ZWSP}.py", f"a{LRI}b.py", "x\ufeff.py"])
def test_a_name_with_bidi_or_invisible_characters_is_refused(name: str) -> None:
    with pytest.raises(ToolError, match="invisible character U\\+"):
        check_path_text(name)


def test_names_in_other_scripts_stay_allowed() -> None:
    check_path_text("docs/привет.md")
    check_path_text("src/café.py")


def test_the_terminal_gets_text_not_escape_sequences() -> None:
    from ide.protocol.hidden import escape_terminal

    hostile = (
        "ok\x1b]52;c;aGVsbG8=\x07 \x1b]8;;http://127.0.0.1/x\x1b\\link\x1b]8;;\x1b\\ \x1b[8mhidden\x1b[0m"
        " \x1b[2J fake\rreal \x9b31m" + RLO + ZWSP + "\n\tkept\r\n"
    )
    shown = escape_terminal(hostile)
    assert "\x1b" not in shown and "\x07" not in shown and "\x9b" not in shown
    assert RLO not in shown and ZWSP not in shown
    assert "\\x1b]52;c;" in shown and "fake\\x0dreal" in shown and "<U+202E><U+200B>" in shown
    assert shown.endswith("\n\tkept\r\n")  # newlines, tabs and CRLF line ends stay as they are


def test_arbor_run_prints_escaped_text_and_marks_and_holds_back_the_hunk(
    git_workspace: Path, write_script: Callable[[list[dict[str, Any]]], Path]
) -> None:
    script = write_script(
        [
            {
                "tool_calls": [
                    {"name": "create_file", "args": {"path": "pkg/trojan.py", "content": TROJAN}},
                    {"name": "create_file", "args": {"path": "pkg/plain.py", "content": PLAIN}},
                ]
            },
            {"content": "Done.\x1b]52;c;cm0gLXJmIH4=\x07 \x1b[2J\x1b[8mall tests pass\x1b[0m\rLooks good"},
        ]
    )
    env = {**os.environ, "ARBOR_MODEL": f"scripted:{script}"}
    arbor = [sys.executable, "-m", "ide", "run", "-w", str(git_workspace)]
    shown = subprocess.run([*arbor, "go"], env=env, capture_output=True, text=True, timeout=90, check=False)
    assert shown.returncode == 0, shown.stderr
    for stream in (shown.stdout, shown.stderr):
        assert "\x1b" not in stream and "\x07" not in stream and RLO not in stream and ZWSP not in stream
    assert "\\x1b]52;c;" in shown.stdout and "\\x0dLooks good" in shown.stdout
    assert "# ! this hunk hides characters: bidirectional control characters" in shown.stdout
    assert "<U+202E>" in shown.stdout and f"p{CYRILLIC_A}y_out" in shown.stdout

    applied = subprocess.run(
        [*arbor, "--apply", "go"], env=env, capture_output=True, text=True, timeout=90, check=False
    )
    assert applied.returncode == 0, applied.stderr
    assert (git_workspace / "pkg" / "plain.py").read_text() == PLAIN
    assert not (git_workspace / "pkg" / "trojan.py").exists()
    assert "[review] not applied: pkg/trojan.py hides characters" in applied.stderr
