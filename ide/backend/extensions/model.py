"""Model checks ("Test Model", ``_arbor/model/*``) and how full a request is (``_arbor/context``)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ide.protocol import model as md

if TYPE_CHECKING:
    from ide.backend.extensions import Backend


async def probe(backend: Backend, params: dict[str, Any]) -> BaseModel:
    """Send each model the workspace uses one tool-call and one structured request ("Test model")."""
    from ide.llm import ModelRouter
    from ide.llm.probe import ProbeCache, probe_all

    request = md.ProbeParams.model_validate(params)
    cwd, settings = backend.workspace(request.cwd)
    router = ModelRouter(settings, base_dir=Path(cwd))
    probes = await probe_all(router, ProbeCache(settings.resolved_data_dir()))
    return md.ProbeResult(probes=probes, fresh=True)


async def cached(backend: Backend, params: dict[str, Any]) -> BaseModel:
    """What earlier probes found about the models the workspace uses (the window warns before a turn)."""
    from ide.llm import ModelRouter
    from ide.llm.probe import ProbeCache, cache_key, roles_by_model

    request = md.ProbeParams.model_validate(params)
    cwd, settings = backend.workspace(request.cwd)
    router = ModelRouter(settings, base_dir=Path(cwd))
    known = await asyncio.to_thread(ProbeCache(settings.resolved_data_dir()).read)
    found = [known.get(cache_key(router, model)) for model in roles_by_model(router)]
    return md.ProbeResult(probes=[probe for probe in found if probe is not None])


HANDLERS = {md.MODEL_PROBE: probe, md.MODEL_PROBES_CACHED: cached}
NOTIFICATIONS = (md.CONTEXT_NOTIFICATION,)
