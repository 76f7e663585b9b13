"""Arbor's model layer: ``provider:model`` specs, role routing, limits, usage, and the scripted model."""

from ide.llm.errors import ModelError
from ide.llm.health import HealthCheck, probe_model
from ide.llm.router import ROLES, ModelRouter
from ide.llm.scripted import ScriptedChatModel
from ide.llm.spec import PROVIDERS, ModelSpec, parse_model_spec
from ide.llm.tiers import ContextTier

__all__ = [
    "PROVIDERS",
    "ROLES",
    "ContextTier",
    "HealthCheck",
    "ModelError",
    "ModelRouter",
    "ModelSpec",
    "ScriptedChatModel",
    "parse_model_spec",
    "probe_model",
]
