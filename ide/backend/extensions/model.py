"""Model checks ("Test Model", the health check as a session opens, ``_arbor/model/*``) and how full a
request is (``_arbor/context``)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from ide.backend.extensions import Handler
from ide.protocol import model as md

if TYPE_CHECKING:
    from ide.backend.extensions import Backend


async def probe(backend: Backend, request: md.ProbeParams) -> md.ProbeResult:
    """Send each model the workspace uses one tool-call and one structured request ("Test model")."""
    from ide.llm import ModelRouter
    from ide.llm.probe import ProbeCache, probe_all

    cwd, settings = backend.workspace(request.cwd)
    router = ModelRouter(settings, base_dir=Path(cwd))
    probes = await probe_all(router, ProbeCache(settings.resolved_data_dir()))
    return md.ProbeResult(probes=probes, fresh=True)


async def cached(backend: Backend, request: md.ProbeParams) -> md.ProbeResult:
    """What earlier probes found about the models the workspace uses (the window warns before a turn)."""
    from ide.llm import ModelRouter
    from ide.llm.probe import ProbeCache, cache_key, roles_by_model

    cwd, settings = backend.workspace(request.cwd)
    router = ModelRouter(settings, base_dir=Path(cwd))
    known = await asyncio.to_thread(ProbeCache(settings.resolved_data_dir()).read)
    found = [known.get(cache_key(router, model)) for model in roles_by_model(router)]
    return md.ProbeResult(probes=[probe for probe in found if probe is not None])


WARNING_CHECKS = frozenset({"model supports tools"})
"""Checks whose failure leaves the model usable, if badly (text tool calls are recovered)."""


async def health(backend: Backend, request: md.HealthParams) -> md.ModelHealth:
    """Whether the default model can answer: its server, the model pulled, tools; no generation."""
    from ide.llm import ModelError, ModelRouter, probe_model

    cwd, settings = backend.workspace(request.cwd)
    try:
        spec = ModelRouter(settings, base_dir=Path(cwd)).spec_for("default")
    except ModelError as exc:
        return md.ModelHealth(
            model=settings.llm.model, level="error", reason=exc.info.message, fix=exc.info.fix
        )
    found = await probe_model(spec, settings)
    checks = [
        md.HealthLine(name=check.name, ok=check.ok, detail=check.detail, fix=check.fix) for check in found
    ]
    listed = next((list(check.listed) for check in found if check.listed is not None), None)
    failed = [check for check in checks if check.ok is False]
    worst = next((c for c in failed if c.name not in WARNING_CHECKS), failed[0] if failed else None)
    if worst is None:
        return md.ModelHealth(model=str(spec), level="ok", checks=checks, available=listed)
    level = "warning" if worst.name in WARNING_CHECKS else "error"
    return md.ModelHealth(
        model=str(spec), level=level, reason=worst.detail, fix=worst.fix, checks=checks, available=listed
    )


HANDLERS = (
    Handler(md.MODEL_PROBE, probe),
    Handler(md.MODEL_PROBES_CACHED, cached),
    Handler(md.MODEL_HEALTH, health),
)
NOTIFICATIONS = (md.CONTEXT_NOTIFICATION, md.USAGE_NOTIFICATION)
