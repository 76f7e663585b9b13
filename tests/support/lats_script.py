"""Scripted-model lines for LATS runs: expansion, evaluation, selection and reflection turns, and the
scripts several test files share."""

from __future__ import annotations

import json
from typing import Any

GREETING = 'def greet(name):\n    return f"Hello, {name}!"\n'


def expand(name: str, args: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "role": "lats.expansion",
        "content": f"I call {name}.",
        "tool_calls": [{"name": name, "args": args}],
        **extra,
    }


def answer(text: str) -> dict[str, Any]:
    return {"role": "lats.expansion", "content": text}


def evaluate(score: float, reflection: str = "ok", *, solution: bool = False) -> dict[str, Any]:
    verdict = {"score": score, "reflection": reflection, "is_solution": solution}
    return {"role": "lats.evaluation", "content": json.dumps(verdict)}


def select(node_id: str) -> dict[str, Any]:
    return {"role": "lats.selection", "content": json.dumps({"node_id": node_id, "reason": "looks closest"})}


def lesson(text: str) -> dict[str, Any]:
    return {"role": "lats.backprop", "content": text}


READ = expand("read_file", {"path": "pkg/greet.py"})
LIST = expand("list_dir", {"path": "pkg"})
GREP = expand("grep", {"pattern": "greet"})
EDIT_HI = expand("edit_file", {"path": "pkg/greet.py", "old_text": "Hello", "new_text": "Hi"})
EDIT_HEY = expand("edit_file", {"path": "pkg/greet.py", "old_text": "Hello", "new_text": "Hey"})
TWO_ANSWERS_TESTED = [
    EDIT_HI,
    EDIT_HEY,
    evaluate(4),
    evaluate(5),
    answer("It now says Hey."),
    READ,
    evaluate(6),
    evaluate(2),
    lesson("Hey is not it."),
    answer("It now says Hi."),
    GREP,
    evaluate(6),
    evaluate(3),
    lesson("Neither is Hi."),
]
"""Two answers, each followed by the test command: the tests that allow or refuse running it share it."""

EDIT_WINS = [
    EDIT_HI,
    READ,
    evaluate(6),
    evaluate(3),
    answer("Changed the greeting to Hi."),
    answer("Greeting now says Hi."),
    evaluate(9, solution=True),
    evaluate(8, solution=True),
]
"""Two candidates (an edit, a read), then an answer on each; with width 2 and beam 1 the edit's branch
is the solution (n1 → n2 → n4)."""


LATS_ENV = {"ARBOR_LATS_EXPANSION_WIDTH": "2", "ARBOR_LATS_BEAM_WIDTH": "1"}
"""The settings under which :data:`EDIT_WINS` makes the edit's branch the solution."""
