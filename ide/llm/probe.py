"""Probe a model the way the agent will use it: one real tool-call request and one structured request,
through the same router (budget, text-call recovery, format fallback), timed; results cached per model.

What ``/api/show`` says a model can do is not what its template makes it do (qwen2.5-coder reports
``tools`` and answers tool requests in text), so only a real request tells.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from pydantic import BaseModel, Field, ValidationError

from ide.llm.errors import ModelError
from ide.llm.router import ROLES, TIMING_KEY, ModelRouter
from ide.llm.window import served_template
from ide.private import tightened, write_private
from ide.protocol.model import ModelProbe
from ide.protocol.tree import recovered_calls

PROBE_FILE = "model-probes.json"
PROBE_TOKEN_CAP = 300
"""Pieces of answer one probe request may stream: an answer to "read README.md" needs far fewer."""
PROBE_LIMIT_S = 60.0
"""How long one model's probe (its two requests) may take: a model that rambles or a server that stalls is
reported, not waited out."""


@tool
def read_file(path: str) -> str:
    """Read a file of the workspace and return its text."""
    return f"(probe) contents of {path}"


class ProbeAnswer(BaseModel):
    """The structured request's answer."""

    language: str = Field(description="The programming language")
    year: int = Field(description="The year it first appeared")


TOOL_REQUEST = [
    SystemMessage("You are a coding agent. Use the tools to act; do not describe what you would do."),
    HumanMessage("Read the file README.md with the read_file tool."),
]
STRUCTURED_REQUEST = [
    HumanMessage(
        "Which programming language is named after Monty Python, and when did it appear? "
        'Reply with JSON {"language": string, "year": integer}.'
    )
]


def roles_by_model(router: ModelRouter) -> dict[str, list[str]]:
    """Each model spec the settings name, with the roles that use it (the default first)."""
    found: dict[str, list[str]] = {}
    for role in ROLES:
        found.setdefault(str(router.spec_for(role, fallback=False)), []).append(role)
    return found


class Rambling(Exception):
    """The probe's answer went past :data:`PROBE_TOKEN_CAP` pieces: the model does not stop."""


def capped() -> Callable[[str, str], None]:
    """An ``on_chunk`` that stops a probe request after :data:`PROBE_TOKEN_CAP` pieces of answer."""
    pieces = 0

    def count(kind: str, text: str) -> None:
        nonlocal pieces
        pieces += 1
        if pieces > PROBE_TOKEN_CAP:
            raise Rambling()

    return count


async def probe(router: ModelRouter, role: str, roles: list[str]) -> ModelProbe:
    """Probe the model of ``role`` (``roles``: every role that uses it, for the report)."""
    spec = router.spec_for(role, fallback=False)
    now = datetime.now(tz=UTC).isoformat(timespec="seconds")
    result = ModelProbe(model=str(spec), roles=roles, probed_at=now)
    try:
        async with asyncio.timeout(PROBE_LIMIT_S):
            window = await router.window(role)
            result.context_window, result.context_source = window.tokens, window.source
            result.template = window.template
            llm = router.settings.llm
            if llm.context_window and spec.provider == "openai" and llm.openai_base_url:
                result.template = await served_template(llm.openai_base_url, os.environ.get("OPENAI_API_KEY"))
            tools = [read_file]
            reply = await router.stream(role, list(TOOL_REQUEST), tools, capped(), fallback=False)
            recovered = recovered_calls(reply.tool_calls)
            if not reply.tool_calls:
                result.tool_calls = "none"
            else:
                result.tool_calls = "recovered" if recovered else "structured"
            timing = reply.response_metadata.get(TIMING_KEY) or {}
            result.first_token_s = round(float(timing.get("first_chunk_s", 0.0)), 2)
            output = (reply.usage_metadata or {}).get("output_tokens", 0)
            generating = float(timing.get("total_s", 0.0)) - float(timing.get("first_chunk_s", 0.0))
            if output and generating > 0:
                result.tokens_per_s = round(output / generating, 1)
            refused_before = str(spec) in router.format_refused
            request = list(STRUCTURED_REQUEST)
            answer = await router.stream(role, request, (), capped(), schema=ProbeAnswer, fallback=False)
            try:
                ProbeAnswer.model_validate_json(answer.text)
                honoured = True
            except (ValidationError, ValueError):
                honoured = False
            if str(spec) in router.format_refused and not refused_before:
                result.json_format = "refused"
            elif spec.provider == "scripted":
                result.json_format = "not_applicable"
            else:
                result.json_format = "honoured" if honoured else "ignored"
    except ModelError as exc:
        result.error = exc.info.text()
    except Rambling:
        result.error = (
            f"the answer went past {PROBE_TOKEN_CAP} tokens without stopping: the probe stopped there — "
            "the model rambles instead of answering (see llm.max_answer_tokens)"
        )
    except TimeoutError:
        result.error = (
            f"no answer within {PROBE_LIMIT_S:g} s: the probe stopped there — the model is too slow on this "
            "machine, or it does not stop answering (see llm.max_answer_tokens)"
        )
    return result


class ProbeCache:
    """Probe results per model (and server), in the data dir, so the window can warn before a turn."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / PROBE_FILE

    def read(self) -> dict[str, ModelProbe]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        found = {}
        for key, value in (raw if isinstance(raw, dict) else {}).items():
            try:
                found[key] = ModelProbe.model_validate(value)
            except ValidationError:
                continue
        return found

    def write(self, key: str, result: ModelProbe) -> None:
        found = {k: v.model_dump() for k, v in self.read().items()}
        found[key] = result.model_dump()
        write_private(tightened(self.path.parent) / self.path.name, json.dumps(found, indent=2))


def cache_key(router: ModelRouter, model: str) -> str:
    """A model is known per server: the same name on another host may be another model."""
    llm = router.settings.llm
    host = {"ollama": llm.ollama_host, "openai": llm.openai_base_url or ""}.get(model.split(":", 1)[0], "")
    return f"{model}@{host}"


async def probe_all(router: ModelRouter, cache: ProbeCache | None = None) -> list[ModelProbe]:
    """Probe every model a role uses, each once; cache the results."""
    results = []
    for model, roles in roles_by_model(router).items():
        result = await probe(router, roles[0], roles)
        if cache is not None:
            cache.write(cache_key(router, model), result)
        results.append(result)
    return results
