"""Wire models of the model checks: the probe (``_arbor/model/probe``), what a real request showed about a
model — structured or text tool calls, the JSON-schema format, speed and context window — for ``arbor
doctor --probe`` and the window's "Test model"; and the health check (``_arbor/model/health``), whether
the default model's server answers and has the model, asked when a session opens."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ide.protocol import RoleUsage
from ide.protocol.method import Method, Notification
from ide.protocol.wire import WireModel

ToolCalling = Literal["structured", "recovered", "none", "failed"]
HealthLevel = Literal["ok", "warning", "error"]
Formatting = Literal["honoured", "refused", "ignored", "failed", "not_applicable"]


class ProbeParams(WireModel):
    cwd: str = Field(description="Workspace whose settings name the models")
    refresh: bool = Field(True, description="Ask the models again instead of answering from the cache")


class ModelProbe(WireModel):
    """One model, probed with one tool-call request and one structured request."""

    model: str = Field(description="provider:model")
    roles: list[str] = Field(default_factory=list, description="The roles that use it")
    tool_calls: ToolCalling = "failed"
    json_format: Formatting = "failed"
    first_token_s: float | None = None
    tokens_per_s: float | None = None
    context_window: int | None = None
    context_source: str | None = Field(
        None, description="Where the window was read (a server endpoint, a setting), or why it is assumed"
    )
    error: str | None = Field(None, description="Why the probe could not finish, with the fix")
    template: str | None = Field(
        None, description="What the server's chat template tells (no template: a base model; no tools)"
    )
    probed_at: str = ""

    def verdict(self) -> tuple[str, str]:
        """(mark, sentence) for one line of doctor or the window: ✓, ⚠ or ✗."""
        if self.error:
            return "✗", self.error + (f" — {self.template}" if self.template else "")
        calls = {
            "structured": ("✓", "structured tool calls"),
            "recovered": ("⚠", "tool calls sent as text (Arbor recovers them)"),
            "none": ("✗", "no tool call at all: the agent cannot act with this model"),
            "failed": ("✗", "the tool-call request failed"),
        }[self.tool_calls]
        return calls

    def describe(self) -> str:
        """One line: the verdict on tool calls, then format, speed and window."""
        mark, sentence = self.verdict()
        window = ""
        if self.context_window:
            source = f" ({self.context_source})" if self.context_source else ""
            window = f"context {self.context_window} tokens{source}"
        if self.error:
            return f"[{mark}] {self.model}: {sentence}" + (f"; {window}" if window else "")
        parts = [sentence, f"JSON schema format {self.json_format.replace('_', ' ')}"]
        if self.first_token_s is not None:
            parts.append(f"first token {self.first_token_s:g} s")
        if self.tokens_per_s is not None:
            parts.append(f"{self.tokens_per_s:g} tokens/s")
        if window:
            parts.append(window)
        if self.template:
            parts.append(self.template)
        roles = ", ".join(self.roles[:4]) + (", …" if len(self.roles) > 4 else "")
        return f"[{mark}] {self.model} ({roles}): " + "; ".join(parts)

    @property
    def cannot_act(self) -> bool:
        """The agent cannot act with this model: no tool call at all, or the probe failed."""
        return self.error is not None or self.tool_calls in ("none", "failed")


class ProbeResult(WireModel):
    probes: list[ModelProbe] = Field(default_factory=list)
    fresh: bool = Field(False, description="Probed just now (False: from the cache of earlier probes)")


class ContextFill(WireModel):
    """The size of a turn's latest model request against its model's window (the status bar's fill)."""

    session_id: str
    role: str
    tokens: int
    window: int


class UsageSpent(WireModel):
    """What a session's model calls have spent so far, by role, the calls in flight counted as they stand
    (an evaluation stops a run over its token budget with it, mid-call)."""

    session_id: str
    usage: dict[str, RoleUsage]

    @property
    def tokens(self) -> int:
        return sum(u.input_tokens + u.output_tokens for u in self.usage.values())


class HealthParams(WireModel):
    cwd: str = Field(description="Workspace whose settings name the default model")


class HealthLine(WireModel):
    """One check of the default model (``arbor doctor``'s lines): ``ok`` None when skipped."""

    name: str
    ok: bool | None
    detail: str
    fix: str | None = None


class ModelHealth(WireModel):
    """The default model as a session opens: its server reached, the model there, tool support.

    Cheap: the model list and the model's card with a short timeout; no generation.
    """

    model: str = Field(description="provider:model, or the setting's text when it does not parse")
    level: HealthLevel = Field(description="error: a turn would fail; warning: it may go badly; ok")
    reason: str = Field("", description="The first failed check's detail ('' when ok)")
    fix: str | None = None
    checks: list[HealthLine] = Field(default_factory=list)
    available: list[str] | None = Field(
        None, description="The models the provider's server lists (Ollama's pulled models); None: not asked"
    )

    def describe(self) -> str:
        """Lines for a tooltip: the verdict, then each check with ✓, ✗ or –."""
        lines = [f"{self.model}: {self.reason or 'ready'}"]
        if self.fix:
            lines.append(self.fix)
        marks = {True: "✓", False: "✗", None: "–"}
        lines += [f"{marks[line.ok]} {line.name}: {line.detail}" for line in self.checks]
        return "\n".join(lines)


CONTEXT_NOTIFICATION = Notification("arbor/context", ContextFill)
"""Sent before each model request of a turn: how full the request is of the model's window."""
USAGE_NOTIFICATION = Notification("arbor/usage", UsageSpent)
"""Sent during a turn as model calls start, stream (every few dozen tokens) and end: the spend so far."""
MODEL_PROBE = Method("arbor/model/probe", ProbeParams, ProbeResult, timeout_s=300.0)
"""A generation per model the workspace uses."""
MODEL_PROBES_CACHED = Method("arbor/model/probes", ProbeParams, ProbeResult)
MODEL_HEALTH = Method("arbor/model/health", HealthParams, ModelHealth)
MODEL_METHODS = (MODEL_PROBE, MODEL_PROBES_CACHED, MODEL_HEALTH)
