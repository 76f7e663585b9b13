"""The context window an OpenAI-compatible server actually runs a model with, asked of the server.

Servers say it in different places: vLLM in ``/v1/models`` (``max_model_len``), llama.cpp's
``llama-server`` in ``/props`` (the slot's ``n_ctx``, which ``-c`` sets) and in ``/v1/models``
(``meta.n_ctx``), LM Studio in ``/api/v0/models/<id>`` (``loaded_context_length``, else
``max_context_length``). A server that says nothing leaves the window unknown: it is said so, never taken
for a hosted model's 128k (a local server with 8k would then overflow on every long turn).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from ide.llm.providers import KNOWN_CONTEXT_WINDOWS, known_context_window
from ide.llm.wire import tls

if TYPE_CHECKING:
    from ide.llm.spec import ModelSpec
    from ide.settings import LlmSettings

ASK_TIMEOUT_S = 5.0
"""How long each of the server's endpoints may take to answer (they are metadata, not generation)."""


@dataclass(frozen=True)
class ServedWindow:
    """The window in tokens (None: the server did not say) and where it was read, for doctor and probe."""

    tokens: int | None
    source: str
    settled: bool = True
    """What the server said (or did not say) holds for the session; False when it could not be asked
    (down, or an error), so the window is asked again at the next call."""
    template: str | None = None
    """What llama-server's ``/props`` said about the model's chat template (:func:`template_note`), read
    from the same answer as the window."""


def server_root(base_url: str) -> str:
    """The server's root URL: ``http://host:8000/v1`` → ``http://host:8000``."""
    root = base_url.rstrip("/")
    return root.removesuffix("/v1")


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _from_models(payload: Any, model: str) -> int | None:
    """vLLM's ``max_model_len`` or llama.cpp's ``meta.n_ctx`` of ``model`` (the only model, when one)."""
    entries = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(entries, list):
        return None
    entries = [entry for entry in entries if isinstance(entry, dict)]
    chosen = [entry for entry in entries if entry.get("id") == model] or (
        entries if len(entries) == 1 else []
    )
    for entry in chosen:
        meta = entry.get("meta") if isinstance(entry.get("meta"), dict) else {}
        found = _positive(entry.get("max_model_len")) or _positive(meta.get("n_ctx"))
        if found:
            return found
    return None


def _from_props(payload: Any) -> int | None:
    """llama-server's slot window: ``default_generation_settings.n_ctx``."""
    settings = payload.get("default_generation_settings") if isinstance(payload, dict) else None
    return _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None


def _from_lmstudio(payload: Any) -> int | None:
    """LM Studio's loaded window (``loaded_context_length``), else the model's ``max_context_length``."""
    if not isinstance(payload, dict):
        return None
    return _positive(payload.get("loaded_context_length")) or _positive(payload.get("max_context_length"))


async def served_window(base_url: str, model: str, api_key: str | None = None) -> ServedWindow:
    """Ask the server at ``base_url`` how many tokens it runs ``model`` with. Never raises: a server down
    or one that answers none of these gives ``tokens=None`` and says what was asked."""
    root = server_root(base_url)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    asks = (
        (f"{root}/props", _from_props, "llama-server /props"),
        (f"{root}/v1/models", lambda payload: _from_models(payload, model), "/v1/models"),
        (f"{root}/api/v0/models/{model}", _from_lmstudio, "LM Studio /api/v0/models"),
    )
    answered = False
    template: str | None = None
    async with httpx.AsyncClient(timeout=ASK_TIMEOUT_S, headers=headers, verify=tls()) as client:
        for url, read, source in asks:
            try:
                response = await client.get(url)
            except httpx.HTTPError:
                continue
            answered = True
            try:
                payload = response.json() if response.status_code == 200 else None
            except ValueError:
                continue
            if read is _from_props:
                template = template_note(payload)
            tokens = read(payload) if payload is not None else None
            if tokens:
                return ServedWindow(tokens, f"{source} at {root}", template=template)
    if not answered:
        return ServedWindow(None, f"{root} could not be reached to ask its window", settled=False)
    return ServedWindow(
        None, f"{root} does not say (asked /props, /v1/models, /api/v0/models)", template=template
    )


CHATML_FALLBACK = "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' -}}"
"""A line of llama.cpp's built-in ChatML template, which llama-server uses when the model carries none."""


def template_note(props: Any) -> str | None:
    """What llama-server's ``/props`` says about the model's chat template, when it tells something the
    probe's verdict should carry: the model has none (a base model), or the template describes no tools."""
    if not isinstance(props, dict) or not isinstance(props.get("chat_template"), str):
        return None
    template = props["chat_template"]
    bos = str(props.get("bos_token") or "")
    if CHATML_FALLBACK in template.replace("\n", "\\n") and "im_start" not in bos:
        return (
            "the model carries no chat template (llama-server fell back to ChatML): it is likely a base "
            "model, not a chat model — use an instruction-tuned one"
        )
    caps = str(props.get("chat_template_caps") or "")
    if "'supports_tools': False" in caps or '"supports_tools": false' in caps:
        return "the server's chat template describes no tools, so tool definitions never reach the model"
    return None


async def served_template(base_url: str, api_key: str | None = None) -> str | None:
    """:func:`template_note` of the llama-server at ``base_url`` (None: another server, or nothing to say),
    for a window that was not read from the server (``llm.context_window`` set)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        async with httpx.AsyncClient(timeout=ASK_TIMEOUT_S, headers=headers, verify=tls()) as client:
            response = await client.get(f"{server_root(base_url)}/props")
        return template_note(response.json()) if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


async def ollama_show(host: str, model: str) -> dict[str, Any]:
    """POST /api/show for ``model``; raises httpx errors as they come."""
    async with httpx.AsyncClient(base_url=host, timeout=ASK_TIMEOUT_S, verify=tls()) as client:
        response = await client.post("/api/show", json={"model": model})
        response.raise_for_status()
        data = response.json()
    return data if isinstance(data, dict) else {}


def context_length_of(show: dict[str, Any]) -> int | None:
    """``<arch>.context_length`` from an /api/show answer's model_info."""
    info = show.get("model_info") or {}
    for key, value in info.items():
        if key.endswith(".context_length") and isinstance(value, int) and value > 0:
            return value
    return None


async def ollama_context_length(host: str, model: str) -> int | None:
    """The model's trained context length, or None when the server cannot tell."""
    try:
        return context_length_of(await ollama_show(host, model))
    except (httpx.HTTPError, ValueError):
        return None


async def model_window(spec: ModelSpec, llm: LlmSettings) -> ServedWindow:
    """The window Arbor budgets ``spec`` with, and where it was read; ``tokens`` None when unknown.

    Ollama: the smaller of ``llm.num_ctx`` (what Arbor asks it for) and the model's trained length. Other
    providers: ``llm.context_window`` when set; an OpenAI-compatible server's own figure; a hosted model's
    published window by name.
    """
    if spec.provider == "ollama":
        length = await ollama_context_length(llm.ollama_host, spec.model)
        if length is None:  # down, or an old server: asked again next time
            said = f"{llm.ollama_host} does not say {spec.model}'s context length"
            return ServedWindow(None, said, settled=False)
        return ServedWindow(min(llm.num_ctx, length), f"llm.num_ctx {llm.num_ctx}, the model's {length}")
    if llm.context_window:
        return ServedWindow(llm.context_window, "llm.context_window")
    if spec.provider == "openai" and llm.openai_base_url:
        return await served_window(llm.openai_base_url, spec.model, os.environ.get("OPENAI_API_KEY"))
    name = spec.model.lower()
    if any(name.startswith(prefix) for prefix in KNOWN_CONTEXT_WINDOWS):
        return ServedWindow(known_context_window(spec.model), f"{spec.provider}'s published window")
    return ServedWindow(None, f"{spec.provider} publishes no window for {spec.model}")
