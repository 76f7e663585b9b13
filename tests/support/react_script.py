"""Scripted-model lines for ReAct turns: one read of pkg/greet.py, then the answer."""

from __future__ import annotations

READ_THEN_ANSWER = [
    {
        "thinking": "The greeting lives in pkg/greet.py.",
        "tool_calls": [{"name": "read_file", "args": {"path": "pkg/greet.py"}}],
    },
    {"thinking": "It formats a string.", "content": "`greet` returns **Hello, NAME!** (pkg/greet.py:2)."},
]
