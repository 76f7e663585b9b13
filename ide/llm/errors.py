"""Model failures a user can act on: ``ModelError``, and the classifier that maps exceptions to it."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from ide.protocol import ErrorInfo, ErrorKind

if TYPE_CHECKING:
    from ide.llm.spec import ModelSpec
    from ide.settings import LlmSettings


class ModelError(Exception):
    """A classified model failure; ``info`` says what happened and how to fix it."""

    def __init__(self, kind: ErrorKind, message: str, fix: str | None = None) -> None:
        self.info = ErrorInfo(kind=kind, message=message, fix=fix)
        super().__init__(self.info.text())

    @property
    def kind(self) -> ErrorKind:
        return self.info.kind

    def __str__(self) -> str:
        return self.info.text()

    def __reduce__(self) -> tuple[Any, ...]:
        # Exception pickles its args (the text); rebuild from the parts instead.
        return (type(self), (self.info.kind, self.info.message, self.info.fix))


TOOL_CAPABLE_EXAMPLES = "ollama:qwen3:8b or ollama:llama3.1:8b"

_CONTEXT_OVERFLOW = re.compile(
    r"context[ _-]?(length|window)[ _-]?exceeded|exceeds? the (model'?s? )?(context|maximum)|"
    r"maximum context length|prompt is too long|input is too long|too many tokens|context overflow|"
    r"input length exceeds|exceeds the available context size|context size",
    re.IGNORECASE,
)
_NOT_FOUND = re.compile(r"model\b.*\bnot found|not[ _]found.*model|try pulling it|no such model", re.I)
_NO_TOOLS = re.compile(r"does not support tools|tools? (are|is) not supported|does not support tool", re.I)

_NO_THINKING = re.compile(r"does not support thinking", re.I)

_API_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def provider_missing(provider: str, *, package: str | None = None) -> ModelError:
    """The optional extra that brings ``provider`` is not installed."""
    package = package or f"langchain-{provider}"
    return ModelError(
        "provider_missing",
        f"The {provider} provider needs {package}, which is not installed",
        f"Install it with: pip install 'arbor-ide[{provider}]'",
    )


def api_key_missing(provider: str) -> ModelError:
    env = _API_KEY_ENV.get(provider, f"{provider.upper()}_API_KEY")
    return ModelError(
        "provider_missing",
        f"No API key for {provider}: {env} is not set",
        f"Set {env} in the environment, or set ARBOR_MODEL to an ollama: model.",
    )


def _endpoint(spec: ModelSpec, settings: LlmSettings) -> str:
    if spec.provider == "ollama":
        return settings.ollama_host
    if spec.provider == "openai":
        return settings.openai_base_url or "https://api.openai.com/v1"
    if spec.provider == "anthropic":
        return "https://api.anthropic.com"
    return spec.model


def _server_name(spec: ModelSpec) -> str:
    return {"ollama": "Ollama", "openai": "The OpenAI API", "anthropic": "The Anthropic API"}.get(
        spec.provider, spec.provider
    )


def status_code(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    if code is None:
        response = getattr(exc, "response", None)
        code = getattr(response, "status_code", None)
    return code if isinstance(code, int) and code >= 0 else None


def _error_text(exc: BaseException) -> str:
    # ollama.ResponseError keeps the server's message in .error; others only in str().
    text = getattr(exc, "error", None)
    if not isinstance(text, str):
        text = str(exc)
    return text.strip() or type(exc).__name__


def _type_names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def unreachable(spec: ModelSpec, settings: LlmSettings, detail: str = "") -> ModelError:
    where = _endpoint(spec, settings)
    suffix = f" ({detail})" if detail else ""
    if spec.provider == "ollama":
        fix = 'Start it with "ollama serve", or set OLLAMA_HOST (or ARBOR_MODEL for another provider).'
    elif spec.provider == "openai":
        fix = "Check the network or llm.openai_base_url, or set ARBOR_MODEL to an ollama: model."
    else:
        fix = "Check the network, or set ARBOR_MODEL to an ollama: model."
    return ModelError("model_unreachable", f"{_server_name(spec)} is not reachable at {where}{suffix}", fix)


_CUT_OFF = frozenset(
    {"RemoteProtocolError", "ReadError", "IncompleteRead", "ChunkedEncodingError", "APIConnectionError"}
)
"""Exception types of a connection that closed under a stream (httpx, urllib3, requests, openai)."""


def cut_off(spec: ModelSpec, settings: LlmSettings) -> ModelError:
    """The connection closed in the middle of an answer: the server stopped, crashed or restarted."""
    where = _endpoint(spec, settings)
    log = '"ollama serve"' if spec.provider == "ollama" else "the server's"
    return ModelError(
        "bad_model_response",
        f"The connection to {where} closed in the middle of the answer from {spec}: the server stopped, "
        "crashed or restarted",
        f"Check that it is running ({log} log says why it stopped), then retry.",
    )


def timed_out(spec: ModelSpec, settings: LlmSettings, *, first_chunk: bool = False) -> ModelError:
    """The model stayed silent too long: before its first chunk (loading), or in the middle of a stream."""
    if first_chunk:
        return ModelError(
            "model_timeout",
            f"{spec} sent nothing within {settings.first_token_timeout_s:g} s",
            "Raise llm.first_token_timeout_s (ARBOR_LLM_FIRST_TOKEN_TIMEOUT_S) if the model is slow to "
            "load, lower llm.num_ctx, or use a smaller model.",
        )
    return ModelError(
        "model_timeout",
        f"{spec} stopped sending for {settings.request_timeout_s:g} s in the middle of its answer",
        "Raise llm.request_timeout_s (ARBOR_LLM_REQUEST_TIMEOUT_S), lower llm.num_ctx, or use a "
        "smaller model.",
    )


def _bigger_window(spec: ModelSpec, settings: LlmSettings) -> str:
    """How to give the model a bigger window: the setting that sizes it, which lives on the server for an
    OpenAI-compatible one (Arbor's llm.num_ctx reaches Ollama only)."""
    if spec.provider == "ollama":
        return (
            "Raise llm.num_ctx (ARBOR_LLM_NUM_CTX) if the model allows it, or use a model with a bigger "
            "context window."
        )
    if spec.provider == "openai" and settings.openai_base_url:
        return (
            "The server sets the window: start llama-server with a larger -c (per slot: -c / -np), vLLM "
            "with a larger --max-model-len, or load the model in LM Studio with a longer context length; "
            "or use a model with a bigger context window. Arbor reads the window from the server "
            "(llm.context_window overrides it)."
        )
    return "Use a model with a bigger context window, or start a new session for a long task."


def classify_error(
    exc: BaseException, spec: ModelSpec, settings: LlmSettings, *, mid_answer: bool = False
) -> ModelError:
    """Turn an exception raised while calling ``spec`` into a ModelError whose text carries the fix;
    ``mid_answer``: the answer had begun streaming (a dropped connection is then a server that stopped).

    Providers are matched by exception type *names* and HTTP status so that optional SDKs (openai,
    anthropic) need not be importable here.
    """
    if isinstance(exc, ModelError):
        return exc
    names = _type_names(exc)
    if mid_answer and (names & _CUT_OFF or isinstance(exc, ConnectionError)):
        return cut_off(spec, settings)
    text = _error_text(exc)
    status = status_code(exc)

    if isinstance(exc, ImportError):
        return provider_missing(spec.provider, package=exc.name)
    if "ConnectTimeout" in names or "ConnectError" in names or "APIConnectionError" in names:
        if "APITimeoutError" in names:
            return timed_out(spec, settings)
        return unreachable(spec, settings)
    if isinstance(exc, ConnectionError):
        # The ollama client turns httpx.ConnectError into the builtin ConnectionError.
        return unreachable(spec, settings)
    if isinstance(exc, TimeoutError) or "TimeoutException" in names or "APITimeoutError" in names:
        return timed_out(spec, settings)

    if _CONTEXT_OVERFLOW.search(text):
        return ModelError(
            "context_overflow",
            f"The conversation no longer fits the context window of {spec}: {text}",
            _bigger_window(spec, settings),
        )
    if _NO_THINKING.search(text):
        return ModelError(
            "settings",
            f"{spec} cannot think, but llm.reasoning asks it to",
            "Unset llm.reasoning (ARBOR_LLM_REASONING) or set it to false, or pick a thinking model.",
        )
    if _NO_TOOLS.search(text):
        return ModelError(
            "no_tool_support",
            f"{spec} does not support tool calling, which the agent needs",
            f"Pick a tool-capable model (e.g. {TOOL_CAPABLE_EXAMPLES}) and set it with ARBOR_MODEL "
            "or llm.model.",
        )
    if status == 404 or _NOT_FOUND.search(text):
        if spec.provider == "ollama":
            return ModelError(
                "model_not_found",
                f'Model "{spec.model}" is not pulled on Ollama at {settings.ollama_host}',
                f'Run "ollama pull {spec.model}", or set ARBOR_MODEL to a model "ollama list" shows.',
            )
        return ModelError(
            "model_not_found",
            f"{_server_name(spec)} does not know the model {spec.model!r}: {text}",
            "Check the model name in ARBOR_MODEL / llm.model.",
        )
    if status in (401, 403) or "AuthenticationError" in names or "PermissionDeniedError" in names:
        env = _API_KEY_ENV.get(spec.provider, "the provider's API key")
        return ModelError(
            "model_auth",
            f"{_server_name(spec)} refused the credentials for {spec}: {text}",
            f"Check {env}.",
        )
    if status == 429 or "RateLimitError" in names:
        return ModelError(
            "bad_model_response",
            f"{_server_name(spec)} is rate limiting calls to {spec}: {text}",
            f"Lower llm.concurrency.{spec.provider} or set llm.rate_limit_per_minute.{spec.provider}.",
        )
    if isinstance(exc, json.JSONDecodeError | UnicodeDecodeError) or names & {
        "OutputParserException",
        "ValidationError",
        "DecodingError",
        "RemoteProtocolError",
        "ReadError",
    }:
        return ModelError(
            "bad_model_response",
            f"{_server_name(spec)} at {_endpoint(spec, settings)} sent a response that could not be "
            f"read for {spec} ({type(exc).__name__}: {text})",
            "Retry; if it persists, check that the URL points at the right server and that its version "
            "is current.",
        )
    if status is not None:
        hint = (
            'Check the "ollama serve" log; the model may have run out of memory (try lowering '
            "llm.num_ctx or a smaller model)."
            if spec.provider == "ollama"
            else "Retry later, or check the provider's status page."
        )
        return ModelError(
            "bad_model_response", f"{_server_name(spec)} answered HTTP {status} for {spec}: {text}", hint
        )
    if "ResponseError" in names:
        # An {"error": ...} line in the middle of an Ollama stream.
        return ModelError(
            "bad_model_response",
            f"Ollama reported an error while answering with {spec}: {text}",
            'Check the "ollama serve" log; retry or try a smaller model.',
        )
    return ModelError("internal", f"Calling {spec} failed: {type(exc).__name__}: {text}")
