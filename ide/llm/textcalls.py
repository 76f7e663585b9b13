"""Tool calls a model sent as text: recover them from its reply, and hold back streamed text that may be one.

Local models often answer a tool request with the call written into ``content`` and ``tool_calls`` empty
(qwen2.5-coder on Ollama, ollama/ollama#12174). The shapes seen: bare JSON objects
``{"name", "arguments"|"parameters"}`` or a JSON list of them, a ```json fence, ``<tool_call>…</tool_call>``
(Qwen/Hermes), ``[TOOL_CALLS] […]`` (Mistral), ``<|python_tag|>{…}`` (Llama 3.1) and Qwen3-Coder's
``<function=NAME><parameter=KEY>VALUE</parameter>…</function>``. Only calls naming a tool bound to the
request count; everything else stays text.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ide.protocol.tree import recovered_call_id

INVALID_JSON = "__invalid_json__"
INVALID_ARGUMENTS = "__invalid_arguments__"
"""Argument keys of a call whose arguments could not be read: the raw text, for the tool to refuse with."""

_MARKERS = re.compile(
    r"```|<tool_call>|\[TOOL_CALLS\]|<\|python_tag\|>|<function=|\{\s*\"(?:name|function|type|tool)\"|\[\s*\{"
)
_XML_CALL = re.compile(r"<function=([\w.-]+)>(.*?)(?:</function>|$)", re.DOTALL)
_XML_PARAM = re.compile(r"<parameter=([\w.-]+)>\s*(.*?)\s*(?:</parameter>|(?=<parameter=)|$)", re.DOTALL)
_MARKER_TAIL = 24
"""Characters kept back at the end of streamed text, so a marker split across chunks is still seen."""
HOLD_LIMIT = 200_000
"""Held text that is still not valid JSON after this many characters is shown after all."""


@dataclass
class Recovery:
    """Calls found in a reply's text (``calls`` as LangChain tool-call dicts) and the text left over."""

    calls: list[dict[str, Any]] = field(default_factory=list)
    remainder: str = ""


def recover_tool_calls(text: str, tool_names: Iterable[str]) -> Recovery:
    """The tool calls written in ``text`` that name one of ``tool_names``, and the rest of the text."""
    names = set(tool_names)
    if not text or not names:
        return Recovery(remainder=text)
    spans: list[tuple[int, int]] = []
    calls: list[dict[str, Any]] = []
    decoder = json.JSONDecoder()
    position = 0
    while position < len(text):
        match = _MARKERS.search(text, position)
        if match is None:
            break
        start = match.start()
        found, end = _parse_at(text, start, decoder, names)
        if found:
            calls.extend(found)
            spans.append((start, end))
        position = max(end, match.end())
    if not calls:
        return Recovery(remainder=text)
    kept, last = [], 0
    for start, end in spans:
        kept.append(text[last:start])
        last = end
    kept.append(text[last:])
    return Recovery(calls=calls, remainder=_tidy("".join(kept)))


def _tidy(text: str) -> str:
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _parse_at(
    text: str, start: int, decoder: json.JSONDecoder, names: set[str]
) -> tuple[list[dict[str, Any]], int]:
    """Calls at ``text[start:]`` in one of the known shapes, and where that shape ends."""
    rest = text[start:]
    if rest.startswith("<function="):
        return _xml_calls(text, start, names)
    if rest.startswith("```"):
        close = text.find("```", start + 3)
        if close < 0:
            return [], start
        body = re.sub(r"^```[A-Za-z0-9_-]*", "", text[start:close]).strip()
        found = _calls_in(body, decoder, names)
        return found, close + 3
    if rest.startswith("<tool_call>"):
        close = text.find("</tool_call>", start)
        end = close + len("</tool_call>") if close >= 0 else len(text)
        body = text[start + len("<tool_call>") : close if close >= 0 else len(text)].strip()
        return _calls_in(body, decoder, names) or _unreadable(body, names), end
    for tag in ("[TOOL_CALLS]", "<|python_tag|>"):
        if rest.startswith(tag):
            found, end = _json_run(text, start + len(tag), decoder, names)
            if not found:  # the tag says a call follows; its JSON does not parse
                body = text[start + len(tag) :].strip()
                return _unreadable(body, names), len(text)
            return found, end
    return _json_run(text, start, decoder, names)


_NAME_FIELD = re.compile(r'"(?:name|tool)"\s*:\s*"([\w.-]+)"')


def _unreadable(body: str, names: set[str]) -> list[dict[str, Any]]:
    """A call a tool-call tag announced whose JSON does not parse: kept as a call to the named tool with
    the raw text, so the tool says what is wrong instead of the text standing as the answer."""
    match = _NAME_FIELD.search(body)
    if match is None or match.group(1) not in names:
        return []
    call = _as_call({"name": match.group(1), "arguments": {INVALID_JSON: body}}, names)
    return [call] if call is not None else []


def _xml_calls(text: str, start: int, names: set[str]) -> tuple[list[dict[str, Any]], int]:
    """Qwen3-Coder's ``<function=NAME>`` blocks from ``start``, each value JSON when it parses."""
    calls: list[dict[str, Any]] = []
    position = start
    while True:
        match = _XML_CALL.match(text, position)
        if match is None or match.group(1) not in names:
            break
        args: dict[str, Any] = {}
        for key, raw in _XML_PARAM.findall(match.group(2)):
            try:
                args[key] = json.loads(raw)
            except ValueError:
                args[key] = raw
        call = _as_call({"name": match.group(1), "arguments": args}, names)
        if call is not None:
            calls.append(call)
        position = match.end()
        while position < len(text) and text[position] in " \t\r\n":
            position += 1
        if text.startswith("</tool_call>", position):
            position += len("</tool_call>")
    return calls, position if calls else start


def _json_run(
    text: str, start: int, decoder: json.JSONDecoder, names: set[str]
) -> tuple[list[dict[str, Any]], int]:
    """Consecutive JSON values from ``start`` (separated by whitespace, commas or ``;``) that are calls."""
    calls: list[dict[str, Any]] = []
    position, end = start, start
    while True:
        while position < len(text) and text[position] in " \t\r\n,;":
            position += 1
        if position >= len(text) or text[position] not in "{[":
            break
        try:
            value, stop = decoder.raw_decode(text, position)
        except ValueError:
            break
        found = _as_calls(value, names)
        if not found:
            break
        calls.extend(found)
        position = end = stop
    return calls, end


def _calls_in(body: str, decoder: json.JSONDecoder, names: set[str]) -> list[dict[str, Any]]:
    if body.startswith("<function="):  # Qwen3-Coder inside <tool_call> tags
        found, end = _xml_calls(body, 0, names)
        return found if found and not body[end:].strip() else []
    found, end = _json_run(body, 0, decoder, names)
    return found if found and not body[end:].strip() else []


def _as_calls(value: Any, names: set[str]) -> list[dict[str, Any]]:
    """``value`` as tool calls: one call object, or a list made only of call objects."""
    items = value if isinstance(value, list) else [value]
    calls = [_as_call(item, names) for item in items]
    return [c for c in calls if c is not None] if calls and all(calls) else []


def _as_call(item: Any, names: set[str]) -> dict[str, Any] | None:
    if not isinstance(item, Mapping):
        return None
    if isinstance(item.get("function"), Mapping):  # OpenAI's {"type": "function", "function": {...}}
        item = item["function"]
    name = item.get("name") or item.get("tool")
    if not isinstance(name, str) or name not in names:
        return None
    args: Any = {}
    for key in ("arguments", "parameters", "args", "input"):
        if key in item:
            args = item[key]
            break
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            args = {INVALID_JSON: args}
    if not isinstance(args, Mapping):
        args = {INVALID_ARGUMENTS: args}
    return {
        "name": name,
        "args": dict(args),
        "id": recovered_call_id(uuid.uuid4().hex[:12]),
        "type": "tool_call",
    }


class TextGate:
    """Passes streamed answer text on, but holds back what may be a tool call until it is decided.

    A fence or JSON value that turns out not to be a call (a code block in the answer) is let through as
    soon as it is complete; tags only tool calls use, and a value that is a call, are held to the end.
    ``feed`` returns the text safe to show now; ``release`` at the end returns what to show of the held
    text (all of it when nothing was recovered, else only the prose around the calls).
    """

    def __init__(self, tool_names: Iterable[str]) -> None:
        self.names = set(tool_names)
        self._held = ""
        self._to_end = False
        self._decoder = json.JSONDecoder()

    def feed(self, text: str) -> str:
        self._held += text
        if self._to_end:
            return ""
        shown: list[str] = []
        while self._held:
            match = _MARKERS.search(self._held)
            if match is None:
                # Keep a tail back: a marker may be split across chunks ("<tool_" + "call>").
                cut = max(0, len(self._held) - _MARKER_TAIL)
                shown.append(self._held[:cut])
                self._held = self._held[cut:]
                break
            shown.append(self._held[: match.start()])
            self._held = self._held[match.start() :]
            decided = self._decide()
            if decided is None:
                break  # undecided, or a call: hold the rest
            shown.append(self._held[:decided])
            self._held = self._held[decided:]
        return "".join(shown)

    def _decide(self) -> int | None:
        """Where held text that is surely not a call ends; None while undecided or when it is a call."""
        held = self._held
        if held.startswith(("<tool_call>", "[TOOL_CALLS]", "<|python_tag|>", "<function=")):
            self._to_end = True
            return None
        found, end = _parse_at(held, 0, self._decoder, self.names)
        if found:
            self._to_end = True
            return None
        if held.startswith("```"):
            return end if end > 3 else None  # the fence is closed and holds no call
        try:
            _value, stop = self._decoder.raw_decode(held)
        except ValueError:
            return None if len(held) < HOLD_LIMIT else len(held)
        return stop

    def release(self) -> tuple[str, Recovery]:
        """(text still to show, what was recovered from the held text) once the stream has ended."""
        held, self._held = self._held, ""
        recovery = recover_tool_calls(held, self.names)
        return (recovery.remainder if recovery.calls else held), recovery
