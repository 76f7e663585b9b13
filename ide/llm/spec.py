"""Model specs: parse ``provider:model`` strings into ``ModelSpec``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ide.llm.errors import ModelError

PROVIDERS = ("ollama", "openai", "anthropic", "scripted")


@dataclass(frozen=True)
class ModelSpec:
    """One model: ``provider`` (see PROVIDERS), ``model`` (provider's name, or script path), ``raw`` text."""

    provider: str
    model: str
    raw: str

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}"


def _spec_error(message: str, fix: str) -> ModelError:
    return ModelError("settings", message, fix)


def parse_model_spec(text: str, *, base_dir: Path | None = None) -> ModelSpec:
    """Parse ``provider:model``, splitting on the first colon (``ollama:qwen2.5-coder:7b``).

    ``scripted:`` paths that are relative resolve against ``base_dir`` (when given). Raises ModelError
    (kind ``settings``) naming the fix, e.g. a bare Ollama name asks for the ``ollama:`` prefix.
    """
    raw = text.strip()
    providers = ", ".join(PROVIDERS)
    if not raw:
        raise _spec_error(
            "The model spec is empty",
            "Set ARBOR_MODEL or llm.model to provider:model, e.g. ollama:qwen2.5-coder:7b.",
        )
    head, sep, model = raw.partition(":")
    provider = head.strip().lower()
    if not sep or provider not in PROVIDERS:
        if not sep:
            message = f"The model spec {raw!r} names no provider"
        else:
            message = f"The model spec {raw!r} starts with {head!r}, which is not a provider ({providers})"
        raise _spec_error(message, f"For an Ollama model write ollama:{raw} (ARBOR_MODEL or llm.model).")
    model = model.strip()
    if not model:
        example = "scripted:session.jsonl" if provider == "scripted" else f"{provider}:MODEL"
        raise _spec_error(f"The model spec {raw!r} has no model name", f"Write it as {example}.")
    if provider == "scripted":
        path = Path(model).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        model = str(path)
    return ModelSpec(provider=provider, model=model, raw=raw)
