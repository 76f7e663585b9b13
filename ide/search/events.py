"""Progress events an architecture's graph streams while it runs (LangGraph custom stream mode).

{"type": "step_start", "step": int}
{"type": "step_end", "step": int, "input_tokens": int, "output_tokens": int, "latency_ms": float}
{"type": "text" | "thought", "text": str}
{"type": "tool_start", "id", "name", "args", "title", "kind", "locations": [(abs path, line | None)]}
{"type": "tool_end", "id", "failed": bool, "output": str, "diffs": (FileDiff, ...)}
{"type": "plan", "entries": [{"content": str, "status": "pending" | "in_progress" | "completed" | "failed"}]}
"""

from __future__ import annotations


def cap_text(text: str, limit_bytes: int) -> str:
    """``text`` cut to about ``limit_bytes`` UTF-8 bytes, saying how much was left out."""
    data = text.encode("utf-8")
    if len(data) <= limit_bytes:
        return text
    kept = data[:limit_bytes].decode("utf-8", errors="ignore")
    return f"{kept}\n… ({len(data) - len(kept.encode('utf-8'))} more bytes not shown)"


def first_line(text: str, limit: int = 80) -> str:
    """The first non-blank line of ``text``, cut to ``limit`` characters (node labels, titles)."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"
