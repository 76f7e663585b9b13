"""Wire models of Arbor's additions to ACP, shared by the backend and the window.

Standard ACP carries chat, thoughts, tool calls, modes and stop reasons. What it has no word for travels
in ``_meta["arbor"]`` of standard messages or in ``_arbor/*`` extension methods, and is described here.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field

from ide.protocol.wire import WireModel

META_KEY = "arbor"
"""Key under ``_meta`` where Arbor's additions live (initialize, prompt responses, errors)."""

M = TypeVar("M", bound=BaseModel)

ERROR_CODE = -32050
"""JSON-RPC error code of a classified Arbor error; ``error.data`` holds an :class:`ErrorInfo`."""

ErrorKind = Literal[
    "model_unreachable",
    "model_not_found",
    "no_tool_support",
    "context_overflow",
    "model_timeout",
    "bad_model_response",
    "model_auth",
    "script_exhausted",
    "script_mismatch",
    "provider_missing",
    "settings",
    "bad_request",
    "internal",
]


class ErrorInfo(WireModel):
    """A failure a user can act on: what went wrong and the command or setting that fixes it."""

    kind: ErrorKind
    message: str
    fix: str | None = None

    def text(self) -> str:
        """One paragraph for a banner or a terminal."""
        return f"{self.message}\n{self.fix}" if self.fix else self.message


class AgentMeta(WireModel):
    """``agentCapabilities._meta.arbor`` in the initialize response."""

    version: str
    model: str = Field(description="The default model spec the backend resolved, provider:model")
    architectures: list[str] = Field(description="Agent architectures (ACP session modes) available now")
    extensions: list[str] = Field(default_factory=list, description="_arbor/* methods this backend serves")
    data_dir: str | None = None


class RoleUsage(WireModel):
    """Model usage of one role during a turn or a session."""

    model: str
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    recovered_calls: int = Field(0, description="Tool calls recovered from the model's text, not structured")
    fallback_from: str | None = Field(
        None, description="The role's own model, which could not be used: ``model`` (the default) answered"
    )
    fallback_reason: str | None = Field(None, description="Why the role's own model could not be used")


class TurnMeta(WireModel):
    """``_meta.arbor`` of a ``session/prompt`` response."""

    usage: dict[str, RoleUsage] = Field(default_factory=dict)
    steps: int = 0
    error: ErrorInfo | None = None
    architecture: str | None = Field(None, description="The architecture that ran the turn (auto resolved)")
    figures: dict[str, Any] = Field(
        default_factory=dict, description="The run's figures: calls and tokens per role, wall time, …"
    )
    pending: list[str] = Field(
        default_factory=list,
        description="Files whose proposed changes wait for review (a cancelled turn keeps its work; a plain "
        "ACP client is offered them again at the end of the next turn)",
    )


def error_data(info: ErrorInfo) -> dict[str, object]:
    """``error.data`` of a JSON-RPC error response carrying ``info``."""
    return {META_KEY: info.model_dump()}


def error_info_from_data(data: object) -> ErrorInfo | None:
    """The :class:`ErrorInfo` inside a JSON-RPC ``error.data``, if it holds one."""
    if isinstance(data, dict) and isinstance(data.get(META_KEY), dict):
        try:
            return ErrorInfo.model_validate(data[META_KEY])
        except ValueError:
            return None
    return None


_ABSENT = object()


def from_record(model: type[M], record: object, **values: Any) -> M:
    """``model`` showing an internal ``record`` on the wire: each field ``values`` does not give is taken
    from the attribute of the same name (the model's field list is the one place that says what the wire
    shows of the record; ``values`` are what the record does not hold or holds in another form)."""
    taken = {}
    for name in model.model_fields:
        if name not in values:
            # One getattr, not hasattr then getattr: a property (a hunk's header) is computed once.
            value = getattr(record, name, _ABSENT)
            if value is not _ABSENT:
                taken[name] = value
    return model(**taken, **values)
