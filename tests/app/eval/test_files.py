"""The Eval dock's reading of a report's run files (ide/app/eval/files.py): paths confined to the report's
folder, text cut and cleaned, and a unified diff parsed into the review pane's file model; and how an agent's
figures are worded."""

from __future__ import annotations

from pathlib import Path

import pytest

from ide.app.eval.files import RunFileError, parse_unified, read_run_file, readable_text, run_file
from ide.app.eval.format import cost_vs_baseline, mode_label, run_tokens, summary_tokens
from ide.app.eval.grid import cell_text, column_name
from ide.protocol.eval import EvalRun, ModeSummary


@pytest.mark.parametrize(
    ("relative", "said"),
    [
        ("../secret.txt", "is outside the report's folder"),
        ("../../../../../../../../etc/passwd", "is outside the report's folder"),
        ("agents/../../secret.txt", "is outside the report's folder"),
        ("/etc/passwd", "is not a path inside the report's folder"),
        ("C:\\Windows\\win.ini", "is not a path inside the report's folder"),
        ("", "is not a path inside the report's folder"),
        ("agents/link.txt", "is outside the report's folder"),
        ("agents/gone.txt", "agents/gone.txt is missing"),
        ("agents", "agents is missing"),
    ],
)
def test_a_run_file_is_read_only_inside_the_reports_folder(tmp_path: Path, relative: str, said: str) -> None:
    folder = tmp_path / "out"
    (folder / "agents").mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("SECRET")
    (folder / "agents" / "link.txt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(RunFileError, match="its transcript file") as refused:
        read_run_file(folder, relative, "transcript")
    assert said in str(refused.value) and "SECRET" not in str(refused.value)


def test_a_run_file_inside_is_read_cut_and_decoded(tmp_path: Path) -> None:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "a.txt").write_bytes(b"caf\xc3\xa9 \xff" + b"x" * 100)
    assert run_file(tmp_path, "agents/../agents/a.txt", "diff") == (tmp_path / "agents" / "a.txt").resolve()
    text, cut = read_run_file(tmp_path, "agents/a.txt", "diff")
    assert text.startswith("café \ufffd") and not cut
    text, cut = read_run_file(tmp_path, "agents/a.txt", "diff", limit=10)
    assert cut and len(text.encode("utf-8", errors="replace")) <= 12


def test_a_transcript_is_shown_as_plain_text() -> None:
    raw = "\x1b[1;32mok\x1b[0m done\r\nbell\x07 \u202eevil\x1b]0;title\x07 end\n"
    assert readable_text(raw) == "ok done\nbell\\x07 ⟪U+202E⟫evil end\n"


def test_a_unified_diff_is_parsed_file_by_file() -> None:
    text = (
        "# ! this hunk hides characters: a note arbor run writes\n"
        "diff --git a/pkg/mod.py b/pkg/mod.py\n"
        "index 1234..5678 100644\n"
        "--- a/pkg/mod.py\n"
        "+++ b/pkg/mod.py\n"
        "@@ -1,3 +1,3 @@ def f():\n"
        " a\n"
        "--- a removed line that looks like a header\n"
        "+b\n"
        " c\n"
        "@@ -10 +10,2 @@\n"
        " d\n"
        "+e\n"
        "\\ No newline at end of file\n"
        "diff --git a/new.txt b/new.txt\n"
        "new file mode 100644\n"
        "--- /dev/null\n"
        "+++ b/new.txt\n"
        "@@ -0,0 +1 @@\n"
        "+hello\n"
        "diff --git a/old.txt b/old.txt\n"
        "deleted file mode 100644\n"
        "--- a/old.txt\n"
        "+++ /dev/null\n"
        "@@ -1 +0,0 @@\n"
        "-bye\n"
        "--- a/plain.txt\n"
        "+++ b/plain.txt\n"
        "@@ -1 +1 @@\n"
        "-x\n"
        "+y\n"
    )
    files = parse_unified(text)
    assert [(f.path, f.status, f.additions, f.deletions) for f in files] == [
        ("pkg/mod.py", "modified", 2, 1),
        ("new.txt", "added", 1, 0),
        ("old.txt", "deleted", 0, 1),
        ("plain.txt", "modified", 1, 1),
    ]
    first = files[0].hunks
    assert [h.header for h in first] == ["@@ -1,3 +1,3 @@ def f():", "@@ -10 +10,2 @@"]
    assert first[0].lines[1] == "--- a removed line that looks like a header"
    assert (first[1].old_start, first[1].old_count, first[1].new_count) == (10, 1, 2)
    assert first[1].lines[-1] == "\\ No newline at end of file"
    assert parse_unified("no diff here\n") == []


def test_an_agents_figures_are_worded() -> None:
    row = ModeSummary(
        mode="agent:qwen", runs=2, solved=1, solve_rate=0.5, ci_low=0.09, ci_high=0.91,
        median_tokens=0.0, median_wall_s=3.0, metered=False,
    )  # fmt: skip
    assert mode_label("agent:qwen") == "qwen (agent)" and mode_label("retry") == "retry (baseline)"
    assert summary_tokens(row, row.median_tokens) == "not counted"
    assert cost_vs_baseline(row, None)[0] == ""
    counted = row.model_copy(update={"metered": True, "median_tokens": 1234.0})
    assert summary_tokens(counted, counted.median_tokens) == "1.23k"
    run = EvalRun(task="t", mode="agent:qwen", status="solved", metered=False)
    assert run_tokens(run) == "not counted"
    assert run_tokens(run.model_copy(update={"metered": True, "input_tokens": 5})) == "5"


def test_a_grid_cell_says_how_its_runs_ended() -> None:
    run = EvalRun(task="t", mode="agent:qwen", status="over_budget", input_tokens=1500, output_tokens=0)
    assert cell_text([run]) == "⊘ 1.5k" and cell_text([]) == "—"
    assert cell_text([run.model_copy(update={"metered": False, "status": "timeout"})]) == "◷ not counted"
    solved = run.model_copy(update={"status": "solved", "attempt": 1})
    assert cell_text([run, solved]) == "1/2 ✓"
    assert column_name("agent:qwen") == "qwen\n(agent)" and column_name("retry") == "retry\n(baseline)"
