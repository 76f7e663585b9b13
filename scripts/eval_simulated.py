"""Run ``arbor eval`` over the whole task set, every mode and the retry baseline, against the model simulator.

    python scripts/eval_simulated.py [--out DIR] [--jobs N] [--mix] [--tasks GLOB] [--modes LIST]

The simulator is FakeOllama (a real HTTP server on 127.0.0.1) answering as ``tests/support/eval_model.py``
through the real langchain-ollama client; ``arbor eval`` itself runs as a subprocess, exactly as a user
runs it, with its config and data dirs in a temporary directory. It prints the table ``arbor eval``
prints, and leaves the report, trees and chart in ``--out`` (default: a temporary directory, named at the
end). The figures measure Arbor's machinery (every architecture's requests, tool calls, apply, checks,
budgets), not a model's skill: the simulated model fixes every task it sees by default; ``--mix`` gives
it a skill by difficulty — easy tasks solved, medium ones wrong in the first session and right in later
ones (what the retry baseline is for), hard ones wrong every time.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ide.eval.tasks import load_tasks  # noqa: E402
from tests.support.eval_model import EvalModel, Skill  # noqa: E402
from tests.support.fake_ollama import FakeOllama  # noqa: E402

MODEL = "qwen2.5-coder:7b"
MIX: dict[str, Skill] = {"easy": "solve", "medium": "second_try", "hard": "wrong"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=None, help="output directory (default: a new temporary one)")
    parser.add_argument("--jobs", type=int, default=2, help="runs at once (default: 2)")
    parser.add_argument("--tasks", default="*", help="task id glob(s) (default: the whole set)")
    parser.add_argument("--modes", default="react,lats,tot,plan,workflow", help="modes (default: all)")
    parser.add_argument("--budget-tokens", default="100000", help="tokens per run (default: 100000)")
    parser.add_argument("--mix", action="store_true", help="give the model a skill by task difficulty")
    args = parser.parse_args()

    tasks = load_tasks(args.tasks)
    skills = {t.id: MIX[t.difficulty] for t in tasks} if args.mix else {}
    model = EvalModel(tasks, skills=skills)
    home = Path(tempfile.mkdtemp(prefix="arbor-eval-sim-"))
    out = Path(args.out).resolve() if args.out else home / "out"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("ARBOR_")},
        "ARBOR_CONFIG_DIR": str(home / "config"),
        "ARBOR_DATA_DIR": str(home / "data"),
    }
    command = [
        sys.executable,
        "-m",
        "ide",
        "eval",
        "--tasks",
        args.tasks,
        "--modes",
        args.modes,
        "--model",
        f"ollama:{MODEL}",
        "--out",
        str(out),
        "--jobs",
        str(args.jobs),
        "--budget-tokens",
        args.budget_tokens,
        "--budget-seconds",
        "300",
    ]
    started = time.monotonic()
    with FakeOllama(responder=model) as server:
        env["OLLAMA_HOST"] = server.url
        code = subprocess.run(command, env=env, cwd=ROOT, check=False).returncode
        chats = len(server.chat_bodies)
    print(
        f"\n{len(tasks)} task(s), {chats} simulated model calls, {time.monotonic() - started:.0f} s; "
        f"output in {out}",
        file=sys.stderr,
    )
    return code


if __name__ == "__main__":
    raise SystemExit(main())
