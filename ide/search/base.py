"""What every search architecture runs with (:class:`RunContext`) and gives back (:class:`RunOutcome`).

An architecture is an object with a ``name`` and ``async def run(ctx) -> RunOutcome``. It records its
search with ``ctx.recorder`` (the tree is data: nothing else describes the run), calls models through
``ctx.router`` under role names (``lats.expansion``, ``tot.critic``…), calls tools with
:meth:`RunContext.call_tool` inside branch change sets made by :meth:`RunContext.branch`, and reports
progress the user reads in the chat with :meth:`RunContext.think`, :meth:`RunContext.say` and the
``announce`` flag of ``call_tool``. On cancellation it closes the tree with the best result so far
(:meth:`RunContext.finish_tree`) and lets ``CancelledError`` propagate.

Shared helpers here: :func:`ask_structured` (validated JSON from a model, one repair attempt),
:class:`ToolCache` (identical tool calls in one run answered once), :func:`usage_delta` (per-role
calls and tokens of one run).
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import BaseTool
from pydantic import BaseModel, ValidationError

from ide.changes import ChangeSet
from ide.protocol import RoleUsage
from ide.search.events import ProgressEvent, cap_text, tool_end, tool_start
from ide.search.steer import Fork, Steering
from ide.search.tree import TreeRecorder
from ide.settings import Settings
from ide.tools import Toolbox, ToolOutcome, ToolServices, toolbox

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")

Progress = Callable[[ProgressEvent], Awaitable[None]]
"""Receives progress events (``ide.search.events``: text, thought, tool_start, plan…)."""

CACHEABLE_KINDS = frozenset({"read", "search"})
"""Tool kinds whose result depends only on their arguments and the change set they see."""


class Router(Protocol):
    """The part of ``ide.llm.ModelRouter`` architectures use."""

    async def stream(
        self,
        role: str,
        messages: list[BaseMessage],
        tools: Sequence[BaseTool] = (),
        on_chunk: Any = None,
        *,
        schema: type[BaseModel] | None = None,
    ) -> AIMessage: ...

    def spec_for(self, role: str) -> Any: ...

    def usage_snapshot(self) -> dict[str, RoleUsage]: ...


class StructuredOutputError(ValueError):
    """A model's structured answer stayed malformed after one repair attempt; the message says why."""


@dataclass
class RunOutcome:
    """How a run ended.

    ``stop_reason`` is an ACP stop reason (``end_turn``, ``max_turn_requests``, ``max_tokens``,
    ``cancelled``). ``answer`` is the text shown as the agent's final message (already said through
    :meth:`RunContext.say` or not — see ``answered``). ``changeset`` is the chosen branch, adopted into
    the session's change set for review; None keeps whatever the session's set holds.
    """

    stop_reason: str
    answer: str = ""
    changeset: ChangeSet | None = None
    figures: dict[str, Any] = field(default_factory=dict)
    answered: bool = False
    """True when ``answer`` was already streamed to the user (ReAct-style executors stream as they go)."""


class ToolCache:
    """Identical read/search tool calls within one run, answered from memory.

    The key is (tool, arguments, the change set's proposed entries): two branches that see the same
    files share results; a branch that edited a file sees its own. Editing tools are never cached.
    """

    def __init__(self) -> None:
        self._results: dict[tuple[str, str, frozenset[Any]], ToolOutcome] = {}
        self.hits = 0
        self.misses = 0

    def key(self, name: str, args: dict[str, Any], changeset: ChangeSet) -> tuple[str, str, frozenset[Any]]:
        return name, json.dumps(args, sort_keys=True, default=str), changeset.state_key()

    def call(self, toolbox: Toolbox, changeset: ChangeSet, name: str, args: dict[str, Any]) -> ToolOutcome:
        """Run ``name(args)`` through ``toolbox`` unless an identical call already ran (thread-safe enough:
        a race only computes a result twice)."""
        spec = toolbox.specs.get(name)
        if spec is None or spec.kind not in CACHEABLE_KINDS:
            self.misses += 1
            return toolbox.call(name, args)
        key = self.key(name, args, changeset)
        found = self._results.get(key)
        if found is not None:
            self.hits += 1
            return found
        self.misses += 1
        outcome = toolbox.call(name, args)
        self._results[key] = outcome
        return outcome


CommandPurpose = Literal["tests", "command"]
"""Why a command would run: the workspace's test command (LATS, a workflow's test stage), or a command an
agent chose (a plan executor's ``run_command``) — a client may allow the first and not the second."""

AskPermission = Callable[[str, str, CommandPurpose], Awaitable[bool]]
"""``(title, command, purpose) -> allowed``: asks the user (ACP ``session/request_permission``) first."""


@dataclass
class RunContext:
    """Everything one run of one architecture may use. Made by the session for each prompt turn."""

    task: str
    settings: Settings
    router: Router
    changeset: ChangeSet
    """The session's change set. Branches are children of it; the outcome's set is adopted into it."""
    recorder: TreeRecorder
    progress: Progress
    session_id: str = ""
    checkpointer: Any = None
    """The session's LangGraph checkpointer; plan/execute keeps its conversation there."""
    thread_id: str = ""
    """The session's conversation thread in the checkpointer."""
    history: list[BaseMessage] = field(default_factory=list)
    """Earlier turns of the conversation (for architectures that do not use the checkpointer)."""
    observation_cap: int = 8000
    services: ToolServices = field(default_factory=ToolServices)
    """What the tools may use beside the files: code index, language servers, memory, MCP tools."""
    ask_permission: AskPermission | None = None
    """Asks the user before a command (the tests) runs; None: whoever made the run already decided."""
    cache: ToolCache = field(default_factory=ToolCache)
    fork: Fork | None = None
    """Where this run continues from (``Continue from here``): a node's trajectory, branch and the hint."""
    steering: Steering = field(default_factory=Steering)
    """What the user asks of the running search (prune, expand), read at its next selection."""
    branches: dict[str, ChangeSet] = field(default_factory=dict)
    """Every branch change set made in this run, by id (the window asks for a node's branch diff)."""
    started: float = field(default_factory=time.monotonic)
    usage_before: dict[str, RoleUsage] = field(default_factory=dict)
    compactions_before: int = -1
    _toolboxes: dict[tuple[str, bool], Toolbox] = field(default_factory=dict, repr=False)
    _refused: set[str] = field(default_factory=set, repr=False)
    _allowed: set[str] = field(default_factory=set, repr=False)

    def __post_init__(self) -> None:
        if not self.usage_before:
            self.usage_before = self.router.usage_snapshot()
        if self.compactions_before < 0:
            self.compactions_before = getattr(self.router, "compactions", 0)
        self.branches.setdefault(self.changeset.id, self.changeset)

    async def permit(
        self, title: str, command: str, *, for_the_run: bool = False, purpose: CommandPurpose = "tests"
    ) -> bool:
        """Whether ``command`` may run now, asked through :attr:`ask_permission`.

        A refusal holds for the rest of the run (the user is not asked again); an allowance does too
        when ``for_the_run`` (a search that runs the tests at every answer asks once).
        """
        if command in self._refused:
            return False
        if command in self._allowed or self.ask_permission is None:
            return True
        allowed = await self.ask_permission(title, command, purpose)
        if not allowed:
            self._refused.add(command)
        elif for_the_run:
            self._allowed.add(command)
        return allowed

    def branch(self, parent: ChangeSet | None = None) -> ChangeSet:
        """A new branch change set: a copy-on-write child of ``parent`` (default: the session's set)."""
        child = (parent or self.changeset).child()
        self.branches[child.id] = child
        return child

    def toolbox(self, changeset: ChangeSet | None = None, *, read_only: bool = False) -> Toolbox:
        """The tools over ``changeset`` (default: the session's): read+edit, or only read/list/grep."""
        target = changeset or self.changeset
        key = (target.id, read_only)
        if key not in self._toolboxes:
            self._toolboxes[key] = toolbox(
                Path(target.root), self.settings, target, self.services, read_only=read_only
            )
        return self._toolboxes[key]

    async def call_tool(
        self,
        name: str,
        args: dict[str, Any],
        changeset: ChangeSet | None = None,
        *,
        read_only: bool = False,
        announce: bool | Progress = False,
        call_id: str | None = None,
    ) -> ToolOutcome:
        """Run one tool call inside ``changeset`` (via the run's cache), off the event loop: the one way
        every architecture runs a tool.

        With ``announce`` the user sees it as an ACP tool call (start, then result and diffs): ``True``
        reports it through :attr:`progress`, a callable instead of it (ReAct's graph writes to its
        stream). The output is capped at the run's observation cap.
        """
        target = changeset or self.changeset
        toolbox = self.toolbox(target, read_only=read_only)
        ident = call_id or f"{target.id[:8]}-{self.cache.hits + self.cache.misses + 1}"
        report = self.progress if announce is True else announce or None
        if report is not None:
            await report(tool_start(ident, name, args, *toolbox.describe(name, args)))
        outcome = await asyncio.to_thread(self.cache.call, toolbox, target, name, args)
        capped = ToolOutcome(cap_text(outcome.output, self.observation_cap), outcome.failed, outcome.diffs)
        if report is not None:
            await report(tool_end(ident, capped.failed, capped.output, capped.diffs))
        return capped

    def tools_for(self, changeset: ChangeSet | None = None, *, read_only: bool = False) -> list[BaseTool]:
        """LangChain tool schemas to bind to a model call (execution goes through :meth:`call_tool`)."""
        return self.toolbox(changeset, read_only=read_only).langchain_tools()

    async def think(self, text: str) -> None:
        """A line of the agent's reasoning in the chat (ACP agent_thought_chunk)."""
        await self.progress({"type": "thought", "text": text if text.endswith("\n") else text + "\n"})

    async def say(self, text: str) -> None:
        """Text of the agent's answer in the chat (ACP agent_message_chunk)."""
        await self.progress({"type": "text", "text": text})

    def model_name(self, role: str) -> str:
        return str(self.router.spec_for(role))

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def usage(self) -> dict[str, dict[str, float]]:
        """Calls, tokens and model latency per role in this run so far."""
        return usage_delta(self.usage_before, self.router.usage_snapshot())

    def compactions(self) -> int:
        """Requests of this run whose messages were compacted to fit the model's window."""
        return getattr(self.router, "compactions", 0) - self.compactions_before

    def tokens_used(self) -> int:
        return int(sum(u["input_tokens"] + u["output_tokens"] for u in self.usage().values()))

    def figures(self, **extra: Any) -> dict[str, Any]:
        """The run figures every architecture reports (seed 000): wall time, per-role calls and tokens,
        cache use, nodes; plus the architecture's own (iterations, nodes per iteration, scores…)."""
        nodes = self.recorder.tree.nodes.values()
        scores = [n.reward_raw for n in nodes if n.reward_raw is not None]
        usage = self.usage()
        return {
            "wall_s": round(self.elapsed(), 3),
            "nodes": len(self.recorder.tree.nodes),
            "average_score": round(sum(scores) / len(scores), 3) if scores else None,
            "model_calls": int(sum(u["calls"] for u in usage.values())),
            "input_tokens": int(sum(u["input_tokens"] for u in usage.values())),
            "output_tokens": int(sum(u["output_tokens"] for u in usage.values())),
            "by_role": usage,
            "tool_cache": {"hits": self.cache.hits, "misses": self.cache.misses},
            "compactions": self.compactions(),
            **extra,
        }

    def finish_tree(self, stop_reason: str, best: str | None = None, **extra: Any) -> dict[str, Any]:
        """Mark ``best`` (if any) as the best path and close the tree with the run's figures."""
        with self.recorder.lock:
            tree = self.recorder.tree
            if best is not None and best in tree.nodes and tree.best_path != tree.path_to(best):
                self.recorder.best_path(best)
            figures = self.figures(stop_reason=stop_reason, **extra)
            if not self.recorder.tree.finished:
                self.recorder.finish(**figures)
        return figures


def usage_delta(before: dict[str, RoleUsage], after: dict[str, RoleUsage]) -> dict[str, dict[str, float]]:
    """Per-role usage between two ``ModelRouter.usage_snapshot()`` calls (roles with no calls omitted)."""
    delta: dict[str, dict[str, float]] = {}
    for role, now in after.items():
        then = before.get(role)
        calls = now.calls - (then.calls if then else 0)
        if calls <= 0:
            continue
        delta[role] = {
            "model": now.model,  # type: ignore[dict-item]
            "calls": calls,
            "input_tokens": now.input_tokens - (then.input_tokens if then else 0),
            "output_tokens": now.output_tokens - (then.output_tokens if then else 0),
            "latency_ms": round(now.latency_ms - (then.latency_ms if then else 0.0), 1),
        }
    return delta


async def gather_in_order(awaitables: Iterable[Awaitable[R]]) -> list[R]:
    """Run ``awaitables`` concurrently, started in the order given; their results in that order.

    If one fails, or the caller is cancelled, the rest are cancelled and awaited before the exception is
    raised as it is: nothing of a search phase keeps running after the run has closed its tree. Started
    in order, concurrent calls take ``scripted:`` lines in that order.
    """
    tasks = [asyncio.ensure_future(a) for a in awaitables]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


@functools.cache
def schema_hint(schema: type[BaseModel]) -> str:
    """A compact description of the JSON object ``schema`` expects, for prompts."""
    props = schema.model_json_schema().get("properties", {})
    fields = []
    for name, prop in props.items():
        kind = prop.get("type") or "/".join(p.get("type", "?") for p in prop.get("anyOf", [])) or "value"
        desc = prop.get("description")
        fields.append(f'"{name}": {kind}' + (f" ({desc})" if desc else ""))
    return "{" + ", ".join(fields) + "}"


def parse_structured(text: str, schema: type[T]) -> T:
    """The first JSON object in ``text`` (bare, or in a ``` fence) validated as ``schema``.

    Raises ``ValueError`` with a one-line reason a model can act on.
    """
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    last_error = "no JSON object found"
    for candidate in candidates:
        start = candidate.find("{")
        if start < 0:
            continue
        try:
            data, _end = json.JSONDecoder().raw_decode(candidate[start:])
        except json.JSONDecodeError as exc:
            last_error = f"not valid JSON ({exc.msg} at column {exc.colno})"
            continue
        if not isinstance(data, dict):
            last_error = "expected a JSON object"
            continue
        try:
            return schema.model_validate(data)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"]) or "object"
            raise ValueError(f"{where}: {error['msg']}") from None
    raise ValueError(last_error)


async def ask_structured(
    router: Router,
    role: str,
    messages: list[BaseMessage],
    schema: type[T],
    *,
    on_chunk: Any = None,
) -> tuple[T, AIMessage]:
    """Ask ``role`` for a JSON object matching ``schema``; one repair attempt, then
    :class:`StructuredOutputError`.

    The instruction to answer with JSON is appended to ``messages``. Returns the validated object and
    the reply it came from (reasoning and usage included). ``ModelError`` and cancellation propagate.
    """
    instruction = HumanMessage(f"Reply with only a JSON object, no other text: {schema_hint(schema)}")
    conversation = [*messages, instruction]
    # Constrained to the schema where the server can; the instruction and one repair stay for the rest.
    reply = await router.stream(role, conversation, on_chunk=on_chunk, schema=schema)
    try:
        return parse_structured(reply.text, schema), reply
    except ValueError as exc:
        first = str(exc)
    repair = [
        *conversation,
        AIMessage(reply.text),
        HumanMessage(
            f"That reply could not be used: {first}. Answer again with only the JSON object "
            f"{schema_hint(schema)}."
        ),
    ]
    second = await router.stream(role, repair, on_chunk=on_chunk, schema=schema)
    try:
        return parse_structured(second.text, schema), second
    except ValueError as exc:
        raise StructuredOutputError(
            f"{role} gave malformed {schema.__name__} twice: {first}; after repair: {exc}"
        ) from None


def trajectory_text(steps: Iterable[tuple[str, str]], limit: int = 6000) -> str:
    """Numbered ``(label, text)`` steps as one prompt block, keeping the most recent within ``limit``
    characters."""
    lines = [f"{i}. {label}: {text}" for i, (label, text) in enumerate(steps, start=1)]
    out: list[str] = []
    size = 0
    for line in reversed(lines):
        if size + len(line) > limit and out:
            out.append("(earlier steps left out)")
            break
        out.append(line)
        size += len(line)
    return "\n".join(reversed(out))
