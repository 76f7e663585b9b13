"""``probe_model``: the model checks ``arbor doctor`` prints, each with the fix when it fails."""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from ide.llm.errors import TOOL_CAPABLE_EXAMPLES, ModelError
from ide.llm.scripted import load_script
from ide.llm.spec import ModelSpec
from ide.llm.window import context_length_of
from ide.llm.wire import tls
from ide.settings import Settings

PROBE_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class HealthCheck:
    """One doctor line: ``ok`` is True, False, or None when the check was skipped or does not apply."""

    name: str
    ok: bool | None
    detail: str
    fix: str | None = None
    listed: tuple[str, ...] | None = None
    """The models the server lists, on the check that reached it (Ollama's pulled models)."""


async def probe_model(spec: ModelSpec, settings: Settings) -> list[HealthCheck]:
    """Check that ``spec`` can answer: server, model, tools (Ollama); file (scripted); extra, key (others)."""
    if spec.provider == "ollama":
        return await _probe_ollama(spec, settings)
    if spec.provider == "scripted":
        return [_probe_script(Path(spec.model))]
    return _probe_hosted(spec, settings)


def _same_model(wanted: str, name: str) -> bool:
    # Ollama lists "llama3:latest" for what users call "llama3", and the reverse.
    def full(text: str) -> str:
        return text if ":" in text else f"{text}:latest"

    return full(wanted) == full(name)


async def _probe_ollama(spec: ModelSpec, settings: Settings) -> list[HealthCheck]:
    host = settings.llm.ollama_host
    names = ("model server reachable", "model pulled", "model supports tools", "context window")
    async with httpx.AsyncClient(base_url=host, timeout=PROBE_TIMEOUT_S, verify=tls()) as client:
        try:
            response = await client.get("/api/tags")
            response.raise_for_status()
            tags: dict[str, Any] = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            reason = type(exc).__name__ if not str(exc) else str(exc)
            failed = HealthCheck(
                names[0],
                False,
                f"Ollama is not reachable at {host} ({reason})",
                'Start it with "ollama serve", or set OLLAMA_HOST (or ARBOR_MODEL for another provider).',
            )
            return [failed, *(HealthCheck(name, None, "skipped: server not reachable") for name in names[1:])]
        available = [str(m.get("name") or m.get("model")) for m in tags.get("models") or []]
        checks = [HealthCheck(names[0], True, f"Ollama answers at {host}", listed=tuple(available))]
        if not any(_same_model(spec.model, name) for name in available):
            listed = ", ".join(available[:8]) or "none"
            checks.append(
                HealthCheck(
                    names[1],
                    False,
                    f'"{spec.model}" is not pulled (pulled: {listed})',
                    f'Run "ollama pull {spec.model}", or set ARBOR_MODEL to a pulled model.',
                )
            )
            checks += [HealthCheck(name, None, "skipped: model not pulled") for name in names[2:]]
            return checks
        checks.append(HealthCheck(names[1], True, f'"{spec.model}" is pulled'))

        try:
            response = await client.post("/api/show", json={"model": spec.model})
            response.raise_for_status()
            show: dict[str, Any] = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            checks += [HealthCheck(name, None, f"skipped: /api/show failed ({exc})") for name in names[2:]]
            return checks

    capabilities = show.get("capabilities")
    if capabilities is None:
        checks.append(HealthCheck(names[2], None, "this Ollama does not report capabilities (update it)"))
    elif "tools" in capabilities:
        checks.append(HealthCheck(names[2], True, f"capabilities: {', '.join(capabilities)}"))
    else:
        checks.append(
            HealthCheck(
                names[2],
                False,
                f'"{spec.model}" cannot call tools (capabilities: {", ".join(capabilities) or "none"})',
                f"Pick a tool-capable model (e.g. {TOOL_CAPABLE_EXAMPLES}) and set ARBOR_MODEL.",
            )
        )

    num_ctx = settings.llm.num_ctx
    length = context_length_of(show)
    if length is None:
        checks.append(
            HealthCheck(names[3], None, f"model does not report its context length; num_ctx {num_ctx}")
        )
    elif num_ctx > length:
        checks.append(
            HealthCheck(
                names[3],
                True,
                f"num_ctx {num_ctx} exceeds the model's {length}; {length} tokens will be used",
            )
        )
    else:
        checks.append(HealthCheck(names[3], True, f"num_ctx {num_ctx} of the model's {length} tokens"))
    return checks


def _probe_script(path: Path) -> HealthCheck:
    try:
        lines = load_script(path)
    except ModelError as exc:
        return HealthCheck("script file", False, exc.info.message, exc.info.fix)
    return HealthCheck("script file", True, f"{len(lines)} responses in {path}")


_EXTRAS = {
    "openai": ("langchain_openai", "OPENAI_API_KEY"),
    "anthropic": ("langchain_anthropic", "ANTHROPIC_API_KEY"),
}


def _probe_hosted(spec: ModelSpec, settings: Settings) -> list[HealthCheck]:
    module, env = _EXTRAS[spec.provider]
    checks: list[HealthCheck] = []
    package = module.replace("_", "-")
    if importlib.util.find_spec(module) is None:
        checks.append(
            HealthCheck(
                "provider package installed",
                False,
                f"{package} is not installed",
                f"pip install 'arbor-ide[{spec.provider}]'",
            )
        )
    else:
        checks.append(HealthCheck("provider package installed", True, f"{package} is installed"))
    if os.environ.get(env):
        checks.append(HealthCheck("API key set", True, f"{env} is set"))
    elif spec.provider == "openai" and settings.llm.openai_base_url:
        checks.append(
            HealthCheck("API key set", None, f"{env} unset; not needed for {settings.llm.openai_base_url}")
        )
    else:
        checks.append(
            HealthCheck("API key set", False, f"{env} is not set", f"Set {env} in the environment.")
        )
    return checks
