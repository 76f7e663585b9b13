"""Tree of Thoughts (seed 004): a coordinator growing a tree of thoughts with five specialist agents.

    root ─ planner → strategies (depth 1)
    loop:  researcher (read-only tools) → analyzer + critic → coordinator keeps some active
           ─(active nodes, limits left)→ planner → next thoughts (depth + 1) → loop
           └─(no active nodes, or a limit)→ synthesizer: the answer from every node scoring
             ≥ ``tot.score_threshold`` (else the ``tot.top_n`` best)

Every proposed thought passes :func:`validate_thought` (a title, not a sibling's duplicate, within
``tot.max_depth`` and ``tot.max_nodes``, which counts the root and thought nodes) before it becomes a
``thought`` node. A node's findings go in its ``observation``, the analysis and critique in its
``reflection``, the mean of the two scores in ``reward_raw`` (``reward`` = that / 10), and its tokens are
those its researcher, analyzer and critic spent (every role's totals are in the figures' ``roles``).
Statuses: ``generated`` → ``evaluated`` → ``active`` (the pool the planner expands next; ``evaluated``
again once expanded) or ``terminated_early`` (dropped by the coordinator, or recommended for termination
by the critic where no coordinator call is made); ``failed`` when an agent's JSON stayed malformed after
one repair (the reason in ``reflection``). A planner answer that stays malformed is recorded as a
``failed`` thought under the node it was expanding, which keeps its own evaluation. Research tool calls
are ``action`` children of their thought. The answer is a ``synthesis`` node under the root, at the end
of the best path.

Model calls, in order (what a ``scripted:`` file must hold). Calls of one phase run concurrently and
take script lines in the order they start, which is the order listed; a malformed JSON answer is
repaired once, after all first answers of its phase, in the same order.

1. ``tot.planner``: ``{"thoughts": [{"title", "detail"}, ...]}``, the initial strategies (1 to
   ``tot.max_thoughts``; more are cut).
2. For each depth, with the new nodes N1, N2, … in node order:

   a. ``tot.researcher`` in lockstep rounds, at most three: round 1 is N1, N2, … each offered
      read_file, list_dir and grep; round 2 is the nodes whose round-1 reply called tools (after the
      tools ran), again with tools; round 3 the nodes that called tools in round 2, with no tools, told
      to write their findings. A reply without tool calls is that node's findings.
   b. ``tot.analyzer`` N1, ``tot.critic`` N1, ``tot.analyzer`` N2, ``tot.critic`` N2, … (``{"score",
      "analysis"}`` and ``{"score", "critique", "terminate"}``, scores 0–10), then repairs.
   c. ``tot.coordinator`` ``{"continue_ids": [...], "reason"}`` over the nodes evaluated — only when
      some could still be expanded (depth < ``tot.max_depth``, node budget and time left); otherwise
      there is no call and the critic's recommendations decide. Malformed after its repair: nodes not
      recommended for termination are kept.
   d. ``tot.planner`` for each kept node in node order: its next thoughts (same JSON as 1), then repairs.

3. ``tot.synthesizer``: the answer as plain text, streamed to the user (no call when no node was
   evaluated: the answer then says why).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel, Field

from ide.llm.textcalls import is_recovered
from ide.protocol.tree import RECOVERED_PREFIX, ToolAction
from ide.search.base import (
    RunContext,
    RunOutcome,
    StructuredOutputError,
    ask_structured,
    gather_in_order,
    parse_structured,
    schema_hint,
    trajectory_text,
)
from ide.search.events import first_line
from ide.settings import TotSettings

COORDINATOR = "tot.coordinator"
PLANNER = "tot.planner"
RESEARCHER = "tot.researcher"
ANALYZER = "tot.analyzer"
CRITIC = "tot.critic"
SYNTHESIZER = "tot.synthesizer"

RESEARCH_CALLS = 3
"""Model calls one researcher may make for one thought; the last is offered no tools."""

FINDINGS_CAP = 4000
"""Characters of a node's findings shown to the other agents."""

M = TypeVar("M", bound=BaseModel)

PLANNER_PROMPT = """You are the planner of a Tree-of-Thoughts search run by Arbor, a coding agent working
in the workspace at {root}. Propose {what}: between 1 and {max_thoughts} distinct ideas, each a short
title and a detail saying what to do, check or examine. Propose fewer when fewer suffice; never repeat an
idea already listed. Another agent researches each idea in the workspace before it is judged."""

RESEARCHER_PROMPT = """You are the researcher of a Tree-of-Thoughts search run by Arbor, a coding agent
working in the workspace at {root}. Gather the facts that decide whether the thought you are given is
right and useful for the task. Read with read_file(path, start_line?, end_line?), list_dir(path) and
grep(pattern, path?); paths are relative to the workspace root. You cannot change files. You have at most
{calls} replies, so read only what matters. Then reply without tool calls: your findings, short, citing
files as path:line."""

ANALYZER_PROMPT = """You are the analyzer of a Tree-of-Thoughts search run by Arbor, a coding agent.
Judge how sound and promising the thought is for the task, given the research findings: does it rest on
facts, does it lead to a correct and complete answer? Score 0 (useless or wrong) to 10 (certainly leads to
a correct, complete answer)."""

CRITIC_PROMPT = """You are the critic of a Tree-of-Thoughts search run by Arbor, a coding agent.
Look for what is wrong or missing in the thought, given the research findings: false assumptions, risks,
overlooked cases. Score it 0 (wrong) to 10 (no real weakness). Set terminate to true when this path is not
worth exploring further: it is wrong, redundant, or already complete."""

COORDINATOR_PROMPT = """You are the coordinator of a Tree-of-Thoughts search run by Arbor, a coding agent.
The thoughts below were researched and evaluated. Choose which to explore further: for each one you keep,
the planner proposes next steps. Keep the promising ones, few rather than many; drop those recommended for
termination unless you have a reason to keep them. An empty list ends the search."""

SYNTHESIZER_PROMPT = """You are the synthesizer of a Tree-of-Thoughts search run by Arbor, a coding agent.
Write the final answer to the user's task from the most promising thoughts explored below, their research
findings and evaluations: combine what holds up, leave out what was refuted, say what stays uncertain.
Answer in Markdown, concisely, citing files as path:line."""


class ThoughtProposal(BaseModel):
    title: str = Field(description="a few words naming the idea")
    detail: str = Field("", description="what to do, check or examine")


class ThoughtList(BaseModel):
    thoughts: list[ThoughtProposal] = Field(
        min_length=1, description='ideas, each {"title": str, "detail": str}'
    )


class Analysis(BaseModel):
    score: float = Field(ge=0, le=10, description="0 to 10")
    analysis: str = Field(description="why, in two or three sentences")


class Critique(BaseModel):
    score: float = Field(ge=0, le=10, description="0 to 10")
    critique: str = Field(description="the weaknesses, in two or three sentences")
    terminate: bool = Field(description="true to stop exploring this path")


class ContinueDecision(BaseModel):
    continue_ids: list[str] = Field(description="ids of the nodes to explore further, e.g. n3")
    reason: str = Field("", description="one short sentence")


def normalised_title(title: str) -> str:
    """A title as duplicates are compared: case and runs of whitespace ignored."""
    return " ".join(title.lower().split())


def validate_thought(
    title: str, *, siblings: Iterable[str], depth: int, nodes: int, settings: TotSettings
) -> str | None:
    """Why a proposed thought may not join the tree, or None when it may.

    ``siblings`` are the titles already under the same parent (this batch's accepted ones included),
    ``depth`` the depth it would have, ``nodes`` the root and thought nodes the tree holds now.
    """
    key = normalised_title(title)
    if not key:
        return "empty title"
    if any(normalised_title(sibling) == key for sibling in siblings):
        return f"duplicate of a sibling ({title.strip()!r})"
    if depth > settings.max_depth:
        return f"depth {depth} is over tot.max_depth {settings.max_depth}"
    if nodes >= settings.max_nodes:
        return f"node limit tot.max_nodes={settings.max_nodes} reached"
    return None


@dataclass
class Ask(Generic[M]):
    """One structured question for :func:`ask_structured_together`."""

    role: str
    messages: list[BaseMessage]
    schema: type[M]


@dataclass
class Answer(Generic[M]):
    """A structured answer: the value, or why there is none; every reply it took (for token counts)."""

    value: M | None
    replies: list[AIMessage]
    error: str | None = None


async def ask_structured_together(router: Any, asks: Sequence[Ask[Any]]) -> list[Answer[Any]]:
    """:func:`~ide.search.base.ask_structured` for several questions at once, with a fixed call order.

    All first calls run concurrently (in the order of ``asks``), then the repairs of the malformed ones,
    concurrently and in the same order — so a script can say which line answers which call. The prompts
    and error messages are those of ``ask_structured``.
    """
    conversations = [
        [
            *ask.messages,
            HumanMessage(f"Reply with only a JSON object, no other text: {schema_hint(ask.schema)}"),
        ]
        for ask in asks
    ]
    firsts = await gather_in_order(
        router.stream(ask.role, conversation, schema=ask.schema)
        for ask, conversation in zip(asks, conversations, strict=True)
    )
    answers: list[Answer[Any]] = []
    for ask, reply in zip(asks, firsts, strict=True):
        try:
            answers.append(Answer(parse_structured(reply.text, ask.schema), [reply]))
        except ValueError as exc:
            answers.append(Answer(None, [reply], str(exc)))
    broken = [i for i, answer in enumerate(answers) if answer.value is None]
    seconds = await gather_in_order(
        router.stream(
            asks[i].role,
            [
                *conversations[i],
                AIMessage(firsts[i].text),
                HumanMessage(
                    f"That reply could not be used: {answers[i].error}. Answer again with only the JSON "
                    f"object {schema_hint(asks[i].schema)}."
                ),
            ],
            schema=asks[i].schema,
        )
        for i in broken
    )
    for i, reply in zip(broken, seconds, strict=True):
        ask, first_error = asks[i], answers[i].error
        try:
            answers[i] = Answer(parse_structured(reply.text, ask.schema), [firsts[i], reply])
        except ValueError as exc:
            answers[i] = Answer(
                None,
                [firsts[i], reply],
                f"{ask.role} gave malformed {ask.schema.__name__} twice: {first_error}; after repair: {exc}",
            )
    return answers


def tokens_of(replies: Iterable[AIMessage]) -> tuple[int, int]:
    """Input and output tokens of model replies."""
    usages = [reply.usage_metadata or {} for reply in replies]
    return sum(u.get("input_tokens", 0) for u in usages), sum(u.get("output_tokens", 0) for u in usages)


@dataclass
class Thought:
    """What the coordinator knows of one thought node beyond its record (full texts, both verdicts)."""

    id: str
    title: str
    detail: str
    depth: int
    parent: str
    findings: str = ""
    analysis: Analysis | None = None
    critique: Critique | None = None
    score: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0

    def charge(self, replies: Iterable[AIMessage]) -> None:
        inputs, outputs = tokens_of(replies)
        self.input_tokens += inputs
        self.output_tokens += outputs


class TotSearch:
    """Tree of Thoughts: a coordinator with planner, researcher, analyzer, critic and synthesizer agents."""

    name = "tot"

    async def run(self, ctx: RunContext) -> RunOutcome:
        """Explore the task as a tree of thoughts and synthesise the answer from the best nodes.

        Nothing is edited (the outcome's change set is None); the answer is streamed to the user as it is
        written. On cancellation the tree is closed at the best-scored node so far and ``CancelledError``
        propagates; a model error closes it with stop reason ``error`` and propagates.
        """
        run = _TotRun(ctx)
        try:
            return await run.explore_and_answer()
        except asyncio.CancelledError:
            run.close_unfinished()
            if not ctx.recorder.tree.finished:
                ctx.finish_tree("cancelled", run.best_scored(), **run.figures())
            raise
        except Exception:
            run.close_unfinished()
            if not ctx.recorder.tree.finished:
                ctx.finish_tree("error", run.best_scored(), **run.figures())
            raise


class _TotRun:
    """One Tree-of-Thoughts run over one RunContext: the phases, the tree and the figures."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.settings = ctx.settings.tot
        self.recorder = ctx.recorder
        self.root_dir = ctx.changeset.root
        self.thoughts: dict[str, Thought] = {}
        self.invalid = 0
        self.cut = 0
        self.failed = 0
        self.coordinator_fallbacks = 0
        self.active_per_depth: list[int] = []
        self.stopped_by: str | None = None
        self.synthesis: dict[str, Any] = {"mode": "none", "nodes": []}
        self.notes: list[str] = []
        self.root = self.recorder.add(
            None, kind="root", label=first_line(ctx.task) or "task", thought=ctx.task, status="active"
        )

    # -- the run ----------------------------------------------------------------------------------------

    async def explore_and_answer(self) -> RunOutcome:
        new = await self.initial_thoughts()
        depth = 1
        while new:
            await self.ctx.think(f"Depth {depth}: {len(new)} thought{'s' * (len(new) != 1)}; evaluating…")
            await self.research(new)
            await self.evaluate(new)
            pool = await self.select(new, depth)
            self.active_per_depth.append(len(pool))
            if not pool:
                break
            new = await self.expand(pool)
            depth += 1
        for node in self.recorder.tree.nodes.values():
            if node.status == "active" and node.id != self.root:
                self.recorder.update(node.id, status="evaluated")
        self.recorder.update(self.root, status="evaluated")
        answer, synthesis = await self.synthesise()
        figures = self.ctx.finish_tree("end_turn", synthesis, **self.figures())
        return RunOutcome("end_turn", answer=answer, changeset=None, figures=figures, answered=True)

    def figures(self) -> dict[str, Any]:
        """The run's own figures (``RunContext.figures`` adds wall time, tokens and nodes)."""
        usage = self.ctx.usage()
        return {
            "depth_reached": max((t.depth for t in self.thoughts.values()), default=0),
            "thoughts": len(self.thoughts),
            "invalid_thoughts": self.invalid,
            "thoughts_cut": self.cut,
            "failed_nodes": self.failed,
            "coordinator_fallbacks": self.coordinator_fallbacks,
            "active_per_depth": list(self.active_per_depth),
            "stopped_by": self.stopped_by,
            "synthesis": dict(self.synthesis),
            "roles": {
                role: {"calls": int(u["calls"]), "tokens": int(u["input_tokens"] + u["output_tokens"])}
                for role, u in usage.items()
            },
            "notes": list(self.notes),
        }

    def best_scored(self) -> str:
        """The thought with the highest score so far (the first of equals), else the root."""
        scored = [t for t in self.thoughts.values() if t.score is not None]
        return max(scored, key=lambda t: t.score or 0.0).id if scored else self.root

    def close_unfinished(self) -> None:
        """On cancellation or error: nodes still waiting or active end as terminated early."""
        with self.recorder.lock:
            if self.recorder.tree.finished:
                return
            for node in list(self.recorder.tree.nodes.values()):
                if node.status in ("active", "generated"):
                    self.recorder.update(node.id, status="terminated_early")

    # -- generation -------------------------------------------------------------------------------------

    async def initial_thoughts(self) -> list[str]:
        """Ask the planner for the initial strategies and add the valid ones at depth 1."""
        messages = self.planner_messages(None)
        try:
            proposals, _reply = await ask_structured(self.ctx.router, PLANNER, messages, ThoughtList)
        except StructuredOutputError as exc:
            self.planner_failed(self.root, str(exc))
            await self.ctx.think(f"The planner's strategies were unusable: {exc}")
            return []
        return await self.add_thoughts(self.root, proposals)

    async def expand(self, pool: list[str]) -> list[str]:
        """Ask the planner for the next thoughts of each active node; the new node ids in order."""
        await self.ctx.think(f"Expanding {', '.join(pool)}…")
        answers = await ask_structured_together(
            self.ctx.router, [Ask(PLANNER, self.planner_messages(node), ThoughtList) for node in pool]
        )
        new: list[str] = []
        for node, answer in zip(pool, answers, strict=True):
            self.recorder.update(node, status="evaluated")
            if answer.value is None:
                self.planner_failed(node, answer.error or "no answer")
                await self.ctx.think(f"The planner could not expand {node}: {answer.error}")
                continue
            new += await self.add_thoughts(node, answer.value)
        return new

    async def add_thoughts(self, parent: str, proposals: ThoughtList) -> list[str]:
        """Validate the planner's proposals for ``parent`` and add the valid ones as ``generated`` nodes."""
        depth = self.recorder.tree.nodes[parent].depth + 1
        offered = proposals.thoughts
        kept = offered[: self.settings.max_thoughts]
        if len(offered) > len(kept):
            self.cut += len(offered) - len(kept)
            await self.ctx.think(
                f"The planner proposed {len(offered)} thoughts for {parent}; keeping the first "
                f"{len(kept)} (tot.max_thoughts)."
            )
        siblings = [self.thoughts[child].title for child in self.children_of(parent)]
        model = self.ctx.model_name(PLANNER)
        added: list[str] = []
        rejected: list[str] = []
        for proposal in kept:
            reason = validate_thought(
                proposal.title,
                siblings=siblings,
                depth=depth,
                nodes=1 + len(self.thoughts),
                settings=self.settings,
            )
            if reason is not None:
                rejected.append(reason)
                if reason.startswith("node limit"):
                    self.stopped_by = "nodes"
                continue
            title, detail = proposal.title.strip(), proposal.detail.strip()
            node = self.recorder.add(
                parent,
                kind="thought",
                label=first_line(title),
                thought=f"{title}\n\n{detail}" if detail else title,
                status="generated",
                role=PLANNER,
                model=model,
            )
            self.thoughts[node] = Thought(node, title, detail, depth, parent)
            siblings.append(title)
            added.append(node)
        if rejected:
            self.invalid += len(rejected)
            await self.ctx.think(
                f"Dropped {len(rejected)} proposed thought(s) for {parent}: {'; '.join(rejected)}"
            )
        return added

    def children_of(self, parent: str) -> list[str]:
        return [t.id for t in self.thoughts.values() if t.parent == parent]

    def planner_failed(self, node: str, reason: str) -> None:
        """Record an unusable planner answer as a failed thought under the node it was expanding."""
        self.failed += 1
        self.notes.append(f"planner failed for {node}: {reason}")
        self.recorder.add(
            node,
            kind="thought",
            label="planner failed",
            status="failed",
            reflection=reason,
            role=PLANNER,
            model=self.ctx.model_name(PLANNER),
        )

    def planner_messages(self, node: str | None) -> list[BaseMessage]:
        """The planner's prompt: initial strategies (``node`` None) or the next thoughts after ``node``."""
        what = "initial strategies for the task" if node is None else "the next thoughts after the last one"
        system = PLANNER_PROMPT.format(root=self.root_dir, what=what, max_thoughts=self.settings.max_thoughts)
        parts = [self.conversation_context(), f"Task:\n{self.ctx.task}"]
        if node is not None:
            thought = self.thoughts[node]
            parts.append(f"Path of thoughts so far:\n{self.path_text(node)}")
            parts.append(f"Research findings for the last thought:\n{thought.findings or '(none)'}")
            parts.append(f"Its evaluation:\n{self.evaluation_text(thought)}")
        return [SystemMessage(system), HumanMessage("\n\n".join(p for p in parts if p))]

    def conversation_context(self) -> str:
        recent = [m for m in self.ctx.history if m.type in ("human", "ai")][-4:]
        if not recent:
            return ""
        return "Earlier in this conversation:\n" + "\n".join(f"{m.type}: {m.text[:300]}" for m in recent)

    def path_titles(self, node: str) -> list[str]:
        """Titles of the thoughts from the first strategy down to ``node``."""
        return [self.thoughts[n].title for n in self.recorder.tree.path_to(node) if n in self.thoughts]

    def path_text(self, node: str) -> str:
        """The thoughts from the first strategy down to ``node``, numbered, with their details."""
        steps = [
            (self.thoughts[n].title, self.thoughts[n].detail or self.thoughts[n].title)
            for n in self.recorder.tree.path_to(node)
            if n in self.thoughts
        ]
        return trajectory_text(steps)

    # -- evaluation -------------------------------------------------------------------------------------

    async def research(self, nodes: list[str]) -> None:
        """The researchers of ``nodes``, in lockstep rounds (see the module docstring); sets findings."""
        tools = self.ctx.tools_for(read_only=True)
        system = SystemMessage(RESEARCHER_PROMPT.format(root=self.root_dir, calls=RESEARCH_CALLS))
        conversations: dict[str, list[BaseMessage]] = {
            node: [
                system,
                HumanMessage(
                    f"Task:\n{self.ctx.task}\n\nPath of thoughts so far:\n{self.path_text(node)}\n\n"
                    f"Research the last thought: {self.thoughts[node].title}"
                ),
            ]
            for node in nodes
        }
        pending = list(nodes)
        for round_number in range(1, RESEARCH_CALLS + 1):
            if not pending:
                break
            last = round_number == RESEARCH_CALLS
            if last:
                for node in pending:
                    conversations[node].append(
                        HumanMessage("You have no tool calls left. Write your findings now.")
                    )
            replies = await gather_in_order(
                self.ctx.router.stream(RESEARCHER, conversations[node], tools=() if last else tools)
                for node in pending
            )
            calls: list[tuple[str, str, dict[str, Any]]] = []
            still: list[str] = []
            for node, reply in zip(pending, replies, strict=True):
                self.thoughts[node].charge([reply])
                conversations[node].append(reply)
                if reply.tool_calls and not last:
                    still.append(node)
                    for index, call in enumerate(reply.tool_calls):
                        action = self.recorder.add(
                            node,
                            kind="action",
                            label=call["name"],
                            action=ToolAction.of(call),
                            status="active",
                            role=RESEARCHER,
                        )
                        calls.append((node, action, {**call, "id": call.get("id") or f"{node}-{index}"}))
                else:
                    self.thoughts[node].findings = reply.text.strip() or "(the researcher found nothing)"
            outcomes = await gather_in_order(
                self.ctx.call_tool(
                    call["name"],
                    call["args"],
                    read_only=True,
                    announce=True,
                    call_id=f"{RECOVERED_PREFIX if is_recovered(call['id']) else ''}tot-{action}",
                )
                for _node, action, call in calls
            )
            for (node, action, call), outcome in zip(calls, outcomes, strict=True):
                self.recorder.update(
                    action, observation=outcome.output, status="failed" if outcome.failed else "evaluated"
                )
                conversations[node].append(
                    ToolMessage(
                        content=outcome.output,
                        tool_call_id=call["id"],
                        name=call["name"],
                        status="error" if outcome.failed else "success",
                    )
                )
            pending = still

    async def evaluate(self, nodes: list[str]) -> None:
        """The analyzer and critic of every node (concurrently), then each node's record and verdict."""
        asks: list[Ask[Any]] = []
        for node in nodes:
            messages = self.evaluation_messages(node)
            asks.append(Ask(ANALYZER, [SystemMessage(ANALYZER_PROMPT), *messages], Analysis))
            asks.append(Ask(CRITIC, [SystemMessage(CRITIC_PROMPT), *messages], Critique))
        answers = await ask_structured_together(self.ctx.router, asks)
        summary: list[str] = []
        for index, node in enumerate(nodes):
            analysis, critique = answers[2 * index], answers[2 * index + 1]
            thought = self.thoughts[node]
            thought.charge([*analysis.replies, *critique.replies])
            thought.analysis, thought.critique = analysis.value, critique.value
            changes: dict[str, Any] = {
                "observation": thought.findings,
                "input_tokens": thought.input_tokens,
                "output_tokens": thought.output_tokens,
            }
            errors = [a.error for a in (analysis, critique) if a.value is None and a.error]
            if errors:
                self.failed += 1
                self.notes.append(f"{node} failed: {'; '.join(errors)}")
                self.recorder.update(
                    node,
                    status="failed",
                    reflection="\n".join([*errors, self.evaluation_text(thought)]),
                    **changes,
                )
                summary.append(f"{node} failed")
                continue
            assert thought.analysis is not None and thought.critique is not None
            thought.score = round((thought.analysis.score + thought.critique.score) / 2, 3)
            self.recorder.update(
                node,
                status="evaluated",
                reflection=self.evaluation_text(thought),
                reward_raw=thought.score,
                reward=round(thought.score / 10, 4),
                **changes,
            )
            summary.append(
                f"{node} {thought.score:g}" + (" (critic: stop)" if thought.critique.terminate else "")
            )
        await self.ctx.think("Scores: " + ", ".join(summary))

    def evaluation_messages(self, node: str) -> list[BaseMessage]:
        thought = self.thoughts[node]
        return [
            HumanMessage(
                f"Task:\n{self.ctx.task}\n\nPath of thoughts so far:\n{self.path_text(node)}\n\n"
                f"The thought to judge: {thought.title}\n{thought.detail}\n\n"
                f"Research findings:\n{thought.findings[:FINDINGS_CAP]}"
            )
        ]

    @staticmethod
    def evaluation_text(thought: Thought) -> str:
        parts = []
        if thought.analysis is not None:
            parts.append(f"Analysis ({thought.analysis.score:g}/10): {thought.analysis.analysis}")
        if thought.critique is not None:
            stop = " Recommends stopping here." if thought.critique.terminate else ""
            parts.append(f"Critique ({thought.critique.score:g}/10): {thought.critique.critique}{stop}")
        return "\n".join(parts) or "(not evaluated)"

    # -- selection --------------------------------------------------------------------------------------

    def limit_reached(self, depth: int) -> str | None:
        """Which limit stops the exploration after evaluating ``depth``: depth, nodes, time, or None."""
        if depth >= self.settings.max_depth:
            return "depth"
        if 1 + len(self.thoughts) >= self.settings.max_nodes:
            return "nodes"
        if self.ctx.elapsed() >= self.settings.time_limit_s:
            return "time"
        return None

    async def select(self, nodes: list[str], depth: int) -> list[str]:
        """Which evaluated nodes of this depth stay active; the others end terminated early or evaluated."""
        candidates = [node for node in nodes if self.thoughts[node].score is not None]
        if not candidates:
            return []
        limit = self.limit_reached(depth)
        if limit is not None:
            # Nothing more can be expanded: no coordinator call; the critic's recommendations stand.
            self.stopped_by = limit
            for node in candidates:
                if self.critique_says_stop(node):
                    self.recorder.update(node, status="terminated_early")
            await self.ctx.think(f"Stopping at depth {depth}: {self.limit_text(limit)}.")
            return []
        keep, reason = await self.ask_coordinator(candidates)
        for node in candidates:
            self.recorder.update(node, status="active" if node in keep else "terminated_early")
        kept = [node for node in candidates if node in keep]
        await self.ctx.think(f"Coordinator keeps {', '.join(kept) or 'none'} ({reason})")
        return kept

    def critique_says_stop(self, node: str) -> bool:
        critique = self.thoughts[node].critique
        return critique is not None and critique.terminate

    def limit_text(self, limit: str) -> str:
        return {
            "depth": f"tot.max_depth {self.settings.max_depth} reached",
            "nodes": f"tot.max_nodes {self.settings.max_nodes} reached",
            "time": f"tot.time_limit_s {self.settings.time_limit_s:g} s reached",
        }[limit]

    async def ask_coordinator(self, candidates: list[str]) -> tuple[set[str], str]:
        """The coordinator's choice among ``candidates``, or the fallback rule when its JSON is unusable."""
        lines = []
        for node in candidates:
            thought = self.thoughts[node]
            assert thought.analysis is not None and thought.critique is not None
            lines.append(
                f"- {node} (depth {thought.depth}) {thought.title}: analyzer {thought.analysis.score:g}/10, "
                f"critic {thought.critique.score:g}/10, terminate recommended: "
                f"{'yes' if thought.critique.terminate else 'no'}. "
                f"Findings: {' '.join(thought.findings.split())[:300]}"
            )
        prompt = f"Task:\n{self.ctx.task}\n\nEvaluated thoughts:\n" + "\n".join(lines)
        try:
            decision, _reply = await ask_structured(
                self.ctx.router,
                COORDINATOR,
                [SystemMessage(COORDINATOR_PROMPT), HumanMessage(prompt)],
                ContinueDecision,
            )
        except StructuredOutputError as exc:
            self.coordinator_fallbacks += 1
            self.notes.append(f"coordinator fallback: {exc}")
            keep = {node for node in candidates if not self.critique_says_stop(node)}
            return keep, f"its answer was unusable, so keeping those not recommended for termination: {exc}"
        unknown = [i for i in decision.continue_ids if i not in candidates]
        if unknown:
            self.notes.append(f"coordinator named unknown nodes {', '.join(unknown)}")
        keep = {i for i in decision.continue_ids if i in candidates}
        return keep, decision.reason.strip() or "no reason given"

    # -- synthesis --------------------------------------------------------------------------------------

    def synthesis_nodes(self) -> tuple[str, list[str]]:
        """The nodes to synthesise from: all scoring ≥ the threshold, else the top N; and which rule."""
        scored = [
            t
            for t in self.thoughts.values()
            if t.score is not None
            and self.recorder.tree.nodes[t.id].status in ("evaluated", "active", "terminated_early")
        ]
        over = [t.id for t in scored if (t.score or 0.0) >= self.settings.score_threshold]
        if over:
            return "threshold", over
        ranked = sorted(scored, key=lambda t: -(t.score or 0.0))
        return "top_n", [t.id for t in ranked[: self.settings.top_n]]

    async def synthesise(self) -> tuple[str, str]:
        """Write the answer from the selected nodes (streamed to the user); the answer and its node id."""
        mode, nodes = self.synthesis_nodes()
        self.synthesis = {"mode": mode, "nodes": nodes}
        if not nodes:
            return await self.answer_without_thoughts()
        threshold = self.settings.score_threshold
        if mode == "threshold":
            await self.ctx.think(
                f"Synthesising from {len(nodes)} node(s) scoring ≥ {threshold:g}: {', '.join(nodes)}"
            )
            label = f"synthesis of {len(nodes)} node{'s' * (len(nodes) != 1)} scoring ≥ {threshold:g}"
        else:
            await self.ctx.think(
                f"No node reached {threshold:g}; synthesising from the top {len(nodes)}: {', '.join(nodes)}"
            )
            label = f"synthesis of the top {len(nodes)} node{'s' * (len(nodes) != 1)} (none ≥ {threshold:g})"
        blocks = []
        for node in nodes:
            thought = self.thoughts[node]
            blocks.append(
                f"### {node}: {thought.title} (score {thought.score:g}/10)\n"
                f"Path: {' → '.join(self.path_titles(node))}\n"
                f"Thought: {thought.detail or thought.title}\n"
                f"Findings:\n{thought.findings[:FINDINGS_CAP]}\n"
                f"Evaluation:\n{self.evaluation_text(thought)}"
            )
        context = self.conversation_context()
        prompt = "\n\n".join(
            p for p in (context, f"Task:\n{self.ctx.task}", "Most promising thoughts:", *blocks) if p
        )

        async def forward(kind: str, text: str) -> None:
            if kind == "text":
                await self.ctx.say(text)
            else:
                # Not ctx.think: that ends every chunk with a newline.
                await self.ctx.progress({"type": "thought", "text": text})

        started = time.perf_counter()
        reply = await self.ctx.router.stream(
            SYNTHESIZER, [SystemMessage(SYNTHESIZER_PROMPT), HumanMessage(prompt)], on_chunk=forward
        )
        latency_ms = (time.perf_counter() - started) * 1000
        answer = reply.text.strip()
        if not answer:
            answer = "The synthesizer gave an empty answer."
            await self.ctx.say(answer)
        inputs, outputs = tokens_of([reply])
        synthesis = self.recorder.add(
            self.root,
            kind="synthesis",
            label=label,
            thought=answer,
            reflection=f"drew on {', '.join(nodes)} ({mode})",
            status="solution",
            role=SYNTHESIZER,
            model=self.ctx.model_name(SYNTHESIZER),
            input_tokens=inputs,
            output_tokens=outputs,
            latency_ms=round(latency_ms, 1),
        )
        return answer, synthesis

    async def answer_without_thoughts(self) -> tuple[str, str]:
        """No node was evaluated: say why instead of calling the synthesizer."""
        if not self.thoughts:
            answer = (
                "The Tree-of-Thoughts planner proposed no usable strategy, so nothing was explored"
                + (f" ({self.notes[0]})" if self.notes else "")
                + ". Try again, or set a stronger model for tot.planner."
            )
            self.notes.append("no thoughts: the planner failed")
        else:
            answer = (
                f"None of the {len(self.thoughts)} thoughts explored could be evaluated (see the failed "
                "nodes in the search tree). Try again, or set stronger models for tot.analyzer and "
                "tot.critic."
            )
            self.notes.append("no thought could be evaluated")
        await self.ctx.say(answer)
        synthesis = self.recorder.add(
            self.root, kind="synthesis", label="no thoughts to synthesise", thought=answer, status="failed"
        )
        return answer, synthesis
