"""``scripted:FILE.jsonl``: a real LangChain chat model that replays recorded responses, for tests and demos.

Script format — one JSON object per line, one model response each, consumed in order::

    // comment lines and blank lines are ignored
    {"content": "I'll look at the file first.", "thinking": "optional reasoning",
     "tool_calls": [{"name": "read_file", "args": {"path": "a.py"}}]}
    {"content": "Done.", "role": "react", "latency_ms": 200}

Keys: ``content`` (answer text, default ""), ``thinking`` (reasoning, streamed first as thoughts),
``tool_calls`` (list of ``{"name", "args"}``; each name must be a tool bound to that call), ``role``
(only a call from that model role may take this line; a call from another role when this line is next is
a ``script_mismatch`` error — lines are never skipped), ``latency_ms`` (delay before the response;
cancellable). Unknown keys are errors, reported as FILE:LINE.

One ``Script`` (the cursor) belongs to one ``ModelRouter``, i.e. one session, and is shared by all its
roles, so a session replays its script from the top, whatever roles ask. Tool-call ids are ``call_1``,
``call_2``… in script order. Usage metadata is an estimate (characters / 4).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ide.llm.errors import ModelError

WORDS_PER_CHUNK = 3


class ScriptToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)


class ScriptLine(BaseModel):
    """One recorded model response."""

    model_config = ConfigDict(extra="forbid")

    content: str = ""
    thinking: str | None = None
    tool_calls: list[ScriptToolCall] = Field(default_factory=list)
    role: str | None = None
    latency_ms: float = Field(0.0, ge=0)


@dataclass(frozen=True)
class Turn:
    """A script line taken by one call, with its line number and the ids given to its tool calls."""

    line: ScriptLine
    line_number: int
    call_ids: tuple[str, ...]


def _script_error(message: str, fix: str | None = None) -> ModelError:
    return ModelError("script_exhausted", message, fix)


def load_script(path: Path) -> list[tuple[int, ScriptLine]]:
    """Parse a script file into (line number, line); ModelError names FILE:LINE of the first bad line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _script_error(
            f"scripted model file {path} does not exist",
            "Create it (one JSON response per line) or fix the path in ARBOR_MODEL=scripted:FILE.jsonl.",
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _script_error(f"scripted model file {path} cannot be read: {exc}") from None
    lines: list[tuple[int, ScriptLine]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("//"):
            continue
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise _script_error(
                f"{path}:{number}: not valid JSON ({exc.msg} at column {exc.colno})",
                'Each line must be one JSON object, e.g. {"content": "text"}.',
            ) from None
        if not isinstance(data, dict):
            raise _script_error(
                f"{path}:{number}: expected a JSON object, got {type(data).__name__}",
                'Each line must be one JSON object, e.g. {"content": "text"}.',
            )
        try:
            lines.append((number, ScriptLine.model_validate(data)))
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"]) or "line"
            raise _script_error(
                f"{path}:{number}: {where}: {error['msg']}",
                "Allowed keys: content, thinking, tool_calls [{name, args}], role, latency_ms.",
            ) from None
    return lines


def _preview(messages: Sequence[BaseMessage]) -> str:
    if not messages:
        return ""
    text = messages[-1].text
    text = " ".join(text.split())
    return text if len(text) <= 80 else text[:77] + "..."


class Script:
    """A script file and the cursor of the one session replaying it; safe to share between roles."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lines: list[tuple[int, ScriptLine]] | None = None
        self._next = 0
        self._calls = 0
        self._lock = threading.Lock()

    @property
    def consumed(self) -> int:
        """Responses replayed so far."""
        return self._next

    def lines(self) -> list[tuple[int, ScriptLine]]:
        """The parsed lines (read once, on first use)."""
        with self._lock:
            return self._load()

    def _load(self) -> list[tuple[int, ScriptLine]]:
        if self._lines is None:
            self._lines = load_script(self.path)
        return self._lines

    def take(self, role: str, tool_names: Sequence[str], messages: Sequence[BaseMessage] = ()) -> Turn:
        """Consume the next line for a call from ``role`` offering ``tool_names``, or raise ModelError."""
        with self._lock:
            lines = self._load()
            if self._next >= len(lines):
                last = _preview(messages)
                about = f' (its last message: "{last}")' if last else ""
                raise ModelError(
                    "script_exhausted",
                    f"scripted model {self.path} ran out after {self._next} responses; add a line for "
                    f'the next call of role "{role}"{about}',
                    f'Append a JSON line such as {{"content": "..."}} to {self.path}.',
                )
            number, line = lines[self._next]
            if line.role is not None and line.role != role:
                raise ModelError(
                    "script_mismatch",
                    f'scripted model {self.path}:{number} is for role "{line.role}", but the next call '
                    f'comes from role "{role}"',
                    f'Insert a line for role "{role}" before line {number}, or drop its "role" key.',
                )
            offered = ", ".join(tool_names) if tool_names else "none"
            for call in line.tool_calls:
                if call.name not in tool_names:
                    raise ModelError(
                        "script_mismatch",
                        f'scripted model {self.path}:{number} calls tool "{call.name}", which this call '
                        f'(role "{role}") does not offer; tools offered: {offered}',
                        "Change the line to call one of the offered tools, or remove its tool_calls.",
                    )
            self._next += 1
            ids = []
            for _ in line.tool_calls:
                self._calls += 1
                ids.append(f"call_{self._calls}")
            return Turn(line=line, line_number=number, call_ids=tuple(ids))


def _estimate_tokens(text: str) -> int:
    return len(text) // 4


def _input_tokens(messages: Sequence[BaseMessage]) -> int:
    return sum(_estimate_tokens(message.text) for message in messages)


def _pieces(text: str, words: int = WORDS_PER_CHUNK) -> Iterator[str]:
    """Word groups that join back to ``text`` exactly (whitespace kept)."""
    tokens = re.findall(r"\S+\s*|\s+", text)
    for start in range(0, len(tokens), words):
        yield "".join(tokens[start : start + words])


class ScriptedChatModel(BaseChatModel):
    """Replays a ``Script`` as a streaming, tool-calling chat model (see the module docstring)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    script: Script
    role: str = "default"
    """The model role this instance answers for; lines with another ``role`` do not match it."""

    @classmethod
    def from_file(cls, path: Path | str, *, role: str = "default") -> ScriptedChatModel:
        return cls(script=Script(Path(path)), role=role)

    @property
    def _llm_type(self) -> str:
        return "arbor-scripted"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"script": str(self.script.path), "role": self.role}

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools the way real providers do; only their names matter to the script."""
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        return self.bind(tools=formatted, **kwargs)

    def _take(self, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]] | None) -> Turn:
        names = [tool["function"]["name"] for tool in tools or ()]
        return self.script.take(self.role, names, messages)

    def _tool_call_chunks(self, turn: Turn) -> list[dict[str, Any]]:
        return [
            {"name": call.name, "args": json.dumps(call.args), "id": call_id, "index": index}
            for index, (call, call_id) in enumerate(zip(turn.line.tool_calls, turn.call_ids, strict=True))
        ]

    def _usage(self, messages: Sequence[BaseMessage], turn: Turn) -> UsageMetadata:
        line = turn.line
        output = _estimate_tokens(line.content + (line.thinking or "")) + sum(
            _estimate_tokens(json.dumps(call.args)) + 1 for call in line.tool_calls
        )
        prompt = _input_tokens(messages)
        return UsageMetadata(input_tokens=prompt, output_tokens=output, total_tokens=prompt + output)

    def _metadata(self, turn: Turn) -> dict[str, Any]:
        return {
            "model_name": f"scripted:{self.script.path}",
            "model_provider": "scripted",
            "finish_reason": "tool_calls" if turn.line.tool_calls else "stop",
            "script_line": turn.line_number,
        }

    def _message(self, messages: Sequence[BaseMessage], turn: Turn) -> AIMessage:
        line = turn.line
        extra = {"reasoning_content": line.thinking} if line.thinking else {}
        return AIMessage(
            content=line.content,
            additional_kwargs=extra,
            tool_calls=[
                {"name": call.name, "args": call.args, "id": call_id, "type": "tool_call"}
                for call, call_id in zip(line.tool_calls, turn.call_ids, strict=True)
            ],
            usage_metadata=self._usage(messages, turn),
            response_metadata=self._metadata(turn),
        )

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        turn = self._take(messages, tools)
        if turn.line.latency_ms:
            time.sleep(turn.line.latency_ms / 1000)
        return ChatResult(generations=[ChatGeneration(message=self._message(messages, turn))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # Overridden so latency is an asyncio sleep (cancellable), not a blocked executor thread.
        turn = self._take(messages, tools)
        if turn.line.latency_ms:
            await asyncio.sleep(turn.line.latency_ms / 1000)
        return ChatResult(generations=[ChatGeneration(message=self._message(messages, turn))])

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        turn = self._take(messages, tools)
        line = turn.line
        if line.latency_ms:
            await asyncio.sleep(line.latency_ms / 1000)
        for piece in _pieces(line.thinking or ""):
            yield ChatGenerationChunk(
                message=AIMessageChunk(content="", additional_kwargs={"reasoning_content": piece})
            )
        for piece in _pieces(line.content):
            if run_manager:
                await run_manager.on_llm_new_token(piece)
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                tool_call_chunks=self._tool_call_chunks(turn),
                usage_metadata=self._usage(messages, turn),
                response_metadata=self._metadata(turn),
                chunk_position="last",
            )
        )
