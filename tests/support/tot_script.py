"""Scripted-model lines for Tree-of-Thoughts runs: one builder per specialist role, and one depth of
verdicts."""

from __future__ import annotations

import json
from typing import Any


def plan(*titles: str) -> dict[str, Any]:
    thoughts = [{"title": title, "detail": f"{title}, in detail"} for title in titles]
    return {"role": "tot.planner", "content": json.dumps({"thoughts": thoughts})}


def research(findings: str = "", *, tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"role": "tot.researcher", "content": findings, "tool_calls": tools or []}


def analyze(score: float, analysis: str = "sound") -> dict[str, Any]:
    return {"role": "tot.analyzer", "content": json.dumps({"score": score, "analysis": analysis})}


def criticise(score: float, *, terminate: bool = False, critique: str = "fair") -> dict[str, Any]:
    body = {"score": score, "critique": critique, "terminate": terminate}
    return {"role": "tot.critic", "content": json.dumps(body)}


def coordinate(*ids: str, reason: str = "promising") -> dict[str, Any]:
    return {"role": "tot.coordinator", "content": json.dumps({"continue_ids": list(ids), "reason": reason})}


def synthesise(answer: str = "The answer.", **extra: Any) -> dict[str, Any]:
    return {"role": "tot.synthesizer", "content": answer, **extra}


def depth_lines(*verdicts: tuple[float, float, bool]) -> list[dict[str, Any]]:
    """One depth of new nodes, each researched without tools: findings, then analyzer/critic pairs."""
    lines = [research(f"findings {i}") for i in range(len(verdicts))]
    for analyzer, critic, terminate in verdicts:
        lines += [analyze(analyzer), criticise(critic, terminate=terminate)]
    return lines
