"""Phase models that cannot be used: which failures send a role to the default model, and the record of it."""

from __future__ import annotations

from dataclasses import dataclass

from ide.llm.errors import ModelError

FALLBACK_KINDS = frozenset(
    {"provider_missing", "model_auth", "settings", "model_unreachable", "model_not_found"}
)
"""Failures of a role's own model that the default model may not share: it cannot be created (no provider
package, no key, a bad spec) or reached (server down, model not pulled)."""


@dataclass(frozen=True)
class Fallback:
    """A role that runs on the default model because its own could not be used."""

    role: str
    configured: str
    """The role's own model setting, as written."""
    used: str
    """The model answering instead (``llm.model``)."""
    reason: ModelError

    def notice(self) -> str:
        """The warning the user reads in the run."""
        return (
            f"⚠ The {self.role} model {self.configured} cannot be used ({self.reason.info.message}); "
            f"{self.role} uses the default model {self.used} instead.\n"
        )


def falls_back(err: ModelError) -> bool:
    """Whether ``err`` (from a role's own model) is one the default model may answer instead."""
    return err.kind in FALLBACK_KINDS
