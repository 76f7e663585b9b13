"""The specialist agents of a Tree-of-Thoughts run: planner, researcher, analyzer and critic, synthesizer.

Each is a collaborator the run (``ide.search.tot``) composes: it is given the run's context and the
:class:`TotState` the agents share (the thoughts, the counters the figures report), and owns its own
prompts and phase.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ide.changes import ChangeSet
from ide.protocol.tree import SearchTree, ToolAction, carried_call_id
from ide.search.base import (
    RunContext,
    StructuredOutputError,
    ask_structured,
    gather_in_order,
    trajectory_text,
)
from ide.search.events import first_line
from ide.search.hints import hint_messages, memory_hint
from ide.search.steer import Fork
from ide.search.tot_prompts import (
    ANALYZER,
    ANALYZER_PROMPT,
    CRITIC,
    CRITIC_PROMPT,
    FINDINGS_CAP,
    PLANNER,
    PLANNER_PROMPT,
    RESEARCH_CALLS,
    RESEARCHER,
    RESEARCHER_PROMPT,
    SYNTHESIZER,
    SYNTHESIZER_PROMPT,
    Analysis,
    Ask,
    Critique,
    Thought,
    ThoughtList,
    ask_structured_together,
    tokens_of,
    validate_thought,
)


@dataclass
class TotState:
    """What the agents of one run share beside the tree: the thoughts, and the counters of the figures."""

    tree: SearchTree
    root: str
    thoughts: dict[str, Thought] = field(default_factory=dict)
    invalid: int = 0
    cut: int = 0
    failed: int = 0
    coordinator_fallbacks: int = 0
    active_per_depth: list[int] = field(default_factory=list)
    stopped_by: str | None = None
    synthesis: dict[str, Any] = field(default_factory=lambda: {"mode": "none", "nodes": []})
    notes: list[str] = field(default_factory=list)
    changeset: ChangeSet | None = None
    """The branch the researchers read: a continued run's node's (None: the session's change set)."""
    explored: set[str] = field(default_factory=set)
    """Thoughts a continued run took over from the run it continues, already researched and judged."""
    pruned: set[str] = field(default_factory=set)
    """Nodes the user pruned whose prune is recorded: they and their subtrees are out of the search."""

    def children_of(self, parent: str) -> list[str]:
        return [t.id for t in self.thoughts.values() if t.parent == parent]

    def out(self) -> set[str]:
        """The nodes the user pruned and every node under them."""
        cut: set[str] = set()
        if self.pruned:
            for node in self.tree.nodes.values():  # parents come before their children
                if node.id in self.pruned or node.parent in cut:
                    cut.add(node.id)
        return cut

    def path_titles(self, node: str) -> list[str]:
        """Titles of the thoughts from the first strategy down to ``node``."""
        return [self.thoughts[n].title for n in self.tree.path_to(node) if n in self.thoughts]

    def path_text(self, node: str) -> str:
        """The thoughts from the first strategy down to ``node``, numbered, with their details."""
        steps = [
            (self.thoughts[n].title, self.thoughts[n].detail or self.thoughts[n].title)
            for n in self.tree.path_to(node)
            if n in self.thoughts
        ]
        return trajectory_text(steps)


def plant_fork(ctx: RunContext, fork: Fork) -> TotState:
    """The state of a run that continues from ``fork``: its node as the root, read on the fork's branch,
    and its subtree as explored: its thoughts with their findings, scores and verdicts as recorded."""
    changeset = fork.branch_of(fork.node_id)
    branches = {node.id: branch for node in fork.subtree() if (branch := fork.branch_of(node.id)) is not None}
    for branch in branches.values():
        ctx.branches.setdefault(branch.id, branch)
    new_ids = fork.plant(ctx.recorder, {node_id: branch.id for node_id, branch in branches.items()})
    state = TotState(tree=ctx.recorder.tree, root=new_ids[fork.node_id], changeset=changeset)
    for node in fork.subtree()[1:]:
        if node.kind != "thought" or node.status == "failed" or node.parent is None:
            continue
        title, _, detail = (node.thought or node.label).partition("\n\n")
        new = new_ids[node.id]
        state.thoughts[new] = Thought(
            new,
            title.strip() or node.label,
            detail.strip(),
            state.tree.nodes[new].depth,
            new_ids[node.parent],
            findings=node.observation or "",
            score=node.reward_raw,
            verdict=node.reflection or "",
        )
        state.explored.add(new)
    return state


def conversation_context(history: list[BaseMessage]) -> str:
    """The last questions and answers of the conversation, for the planner and the synthesizer."""
    recent = [m for m in history if m.type in ("human", "ai")][-4:]
    if not recent:
        return ""
    return "Earlier in this conversation:\n" + "\n".join(f"{m.type}: {m.text[:300]}" for m in recent)


def evaluation_text(thought: Thought) -> str:
    """The analyzer's and critic's verdicts on ``thought``, as its node's reflection and in prompts."""
    parts = []
    if thought.analysis is not None:
        parts.append(f"Analysis ({thought.analysis.score:g}/10): {thought.analysis.analysis}")
    if thought.critique is not None:
        stop = " Recommends stopping here." if thought.critique.terminate else ""
        parts.append(f"Critique ({thought.critique.score:g}/10): {thought.critique.critique}{stop}")
    return "\n".join(parts) or thought.verdict or "(not evaluated)"


class TotAgent:
    """One agent of a run, given the run's context and the state the agents share."""

    def __init__(self, ctx: RunContext, state: TotState) -> None:
        self.ctx = ctx
        self.state = state
        self.settings = ctx.settings.tot
        self.recorder = ctx.recorder

    def task_text(self) -> str:
        """The task as the prompts give it; in a continued run (whose task is the one it continues) with the
        steps that led to this run's root and the user's hint."""
        fork = self.ctx.fork
        if fork is None:
            return f"Task:\n{self.ctx.task}"
        steps = trajectory_text(fork.steps()) or "(none: it continues from the start)"
        return f"Task:\n{self.ctx.task}\n\nSteps that led here (an earlier run):\n{steps}\n\n{fork.hint_text}"


class Planner(TotAgent):
    """The planner: the initial strategies, and the next thoughts of each node the coordinator keeps."""

    def __init__(self, ctx: RunContext, state: TotState) -> None:
        super().__init__(ctx, state)
        self.hint = ""
        """The workspace memory's hint for the task (ide.search.hints), read by :meth:`initial_thoughts`."""

    async def initial_thoughts(self) -> list[str]:
        """Ask the planner for the initial strategies and add the valid ones at depth 1."""
        self.hint = await memory_hint(self.ctx)
        messages = self.planner_messages(None)
        try:
            proposals, _reply = await ask_structured(self.ctx.router, PLANNER, messages, ThoughtList)
        except StructuredOutputError as exc:
            self.planner_failed(self.state.root, str(exc))
            await self.ctx.think(f"The planner's strategies were unusable: {exc}")
            return []
        return await self.add_thoughts(self.state.root, proposals)

    async def expand(self, pool: list[str]) -> list[str]:
        """Ask the planner for the next thoughts of each active node; the new node ids in order."""
        await self.ctx.think(f"Expanding {', '.join(pool)}…")
        answers = await ask_structured_together(
            self.ctx.router, [Ask(PLANNER, self.planner_messages(node), ThoughtList) for node in pool]
        )
        new: list[str] = []
        for node, answer in zip(pool, answers, strict=True):
            if node != self.state.root:
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
            self.state.cut += len(offered) - len(kept)
            await self.ctx.think(
                f"The planner proposed {len(offered)} thoughts for {parent}; keeping the first "
                f"{len(kept)} (tot.max_thoughts)."
            )
        siblings = [self.state.thoughts[child].title for child in self.state.children_of(parent)]
        model = self.ctx.model_name(PLANNER)
        added: list[str] = []
        rejected: list[str] = []
        for proposal in kept:
            reason = validate_thought(
                proposal.title,
                siblings=siblings,
                depth=depth,
                nodes=1 + len(self.state.thoughts),
                settings=self.settings,
            )
            if reason is not None:
                rejected.append(reason)
                if reason.startswith("node limit"):
                    self.state.stopped_by = "nodes"
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
            self.state.thoughts[node] = Thought(node, title, detail, depth, parent)
            siblings.append(title)
            added.append(node)
        if rejected:
            self.state.invalid += len(rejected)
            await self.ctx.think(
                f"Dropped {len(rejected)} proposed thought(s) for {parent}: {'; '.join(rejected)}"
            )
        return added

    def planner_failed(self, node: str, reason: str) -> None:
        """Record an unusable planner answer as a failed thought under the node it was expanding."""
        self.state.failed += 1
        self.state.notes.append(f"planner failed for {node}: {reason}")
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
        """The planner's prompt: initial strategies (``node`` None or the root; in a continued run, the
        next thoughts from its root) or the next thoughts after ``node``."""
        at_root = node is None or node == self.state.root
        what = (
            "the next thoughts after the last one"
            if not at_root
            else "initial strategies for the task"
            if self.ctx.fork is None
            else "the next thoughts from where those steps end"
        )
        system = PLANNER_PROMPT.format(
            root=self.ctx.changeset.root, what=what, max_thoughts=self.settings.max_thoughts
        )
        parts = [conversation_context(self.ctx.history), self.task_text()]
        explored = [self.state.thoughts[child] for child in self.state.children_of(self.state.root)]
        if at_root and explored:
            parts.append(
                "Thoughts already explored from here:\n"
                + "\n".join(
                    f"- {t.title}" + (f" (score {t.score:g}/10)" if t.score is not None else "")
                    for t in explored
                )
            )
        if node is not None and not at_root:
            thought = self.state.thoughts[node]
            parts.append(f"Path of thoughts so far:\n{self.state.path_text(node)}")
            parts.append(f"Research findings for the last thought:\n{thought.findings or '(none)'}")
            parts.append(f"Its evaluation:\n{evaluation_text(thought)}")
        return [
            SystemMessage(system),
            *hint_messages(self.hint),
            HumanMessage("\n\n".join(p for p in parts if p)),
        ]


class Researcher(TotAgent):
    """The researchers of new thoughts: read-only tool calls in lockstep rounds, then findings."""

    async def research(self, nodes: list[str]) -> None:
        """The researchers of ``nodes``, in lockstep rounds (see the module docstring); sets findings."""
        tools = self.ctx.tools_for(self.state.changeset, read_only=True)
        system = SystemMessage(RESEARCHER_PROMPT.format(root=self.ctx.changeset.root, calls=RESEARCH_CALLS))
        conversations: dict[str, list[BaseMessage]] = {
            node: [
                system,
                HumanMessage(
                    f"{self.task_text()}\n\nPath of thoughts so far:\n{self.state.path_text(node)}\n\n"
                    f"Research the last thought: {self.state.thoughts[node].title}"
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
                self.state.thoughts[node].charge([reply])
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
                    self.state.thoughts[node].findings = (
                        reply.text.strip() or "(the researcher found nothing)"
                    )
            outcomes = await gather_in_order(
                self.ctx.call_tool(
                    call["name"],
                    call["args"],
                    self.state.changeset,
                    read_only=True,
                    announce=True,
                    call_id=carried_call_id(call["id"], f"tot-{action}"),
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


class Evaluator(TotAgent):
    """The analyzer and the critic: both judge every new thought; its score is the mean of theirs."""

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
            thought = self.state.thoughts[node]
            thought.charge([*analysis.replies, *critique.replies])
            thought.analysis, thought.critique = analysis.value, critique.value
            changes: dict[str, Any] = {
                "observation": thought.findings,
                "input_tokens": thought.input_tokens,
                "output_tokens": thought.output_tokens,
            }
            errors = [a.error for a in (analysis, critique) if a.value is None and a.error]
            if errors:
                self.state.failed += 1
                self.state.notes.append(f"{node} failed: {'; '.join(errors)}")
                self.recorder.update(
                    node,
                    status="failed",
                    reflection="\n".join([*errors, evaluation_text(thought)]),
                    **changes,
                )
                summary.append(f"{node} failed")
                continue
            assert thought.analysis is not None and thought.critique is not None
            thought.score = round((thought.analysis.score + thought.critique.score) / 2, 3)
            self.recorder.update(
                node,
                status="evaluated",
                reflection=evaluation_text(thought),
                reward_raw=thought.score,
                reward=round(thought.score / 10, 4),
                **changes,
            )
            summary.append(
                f"{node} {thought.score:g}" + (" (critic: stop)" if thought.critique.terminate else "")
            )
        await self.ctx.think("Scores: " + ", ".join(summary))

    def evaluation_messages(self, node: str) -> list[BaseMessage]:
        thought = self.state.thoughts[node]
        return [
            HumanMessage(
                f"{self.task_text()}\n\nPath of thoughts so far:\n{self.state.path_text(node)}\n\n"
                f"The thought to judge: {thought.title}\n{thought.detail}\n\n"
                f"Research findings:\n{thought.findings[:FINDINGS_CAP]}"
            )
        ]


class Synthesizer(TotAgent):
    """The synthesizer: the answer from the best thoughts, streamed to the user, as the synthesis node."""

    def synthesis_nodes(self) -> tuple[str, list[str]]:
        """The nodes to synthesise from: all scoring ≥ the threshold, else the top N; and which rule."""
        cut = self.state.out()
        scored = [
            t
            for t in self.state.thoughts.values()
            if t.score is not None
            and self.recorder.tree.nodes[t.id].status in ("evaluated", "active", "terminated_early")
            and t.id not in cut
        ]
        over = [t.id for t in scored if (t.score or 0.0) >= self.settings.score_threshold]
        if over:
            return "threshold", over
        ranked = sorted(scored, key=lambda t: -(t.score or 0.0))
        return "top_n", [t.id for t in ranked[: self.settings.top_n]]

    async def synthesise(self) -> tuple[str, str]:
        """Write the answer from the selected nodes (streamed to the user); the answer and its node id."""
        mode, nodes = self.synthesis_nodes()
        self.state.synthesis = {"mode": mode, "nodes": nodes}
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
            thought = self.state.thoughts[node]
            blocks.append(
                f"### {node}: {thought.title} (score {thought.score:g}/10)\n"
                f"Path: {' → '.join(self.state.path_titles(node))}\n"
                f"Thought: {thought.detail or thought.title}\n"
                f"Findings:\n{thought.findings[:FINDINGS_CAP]}\n"
                f"Evaluation:\n{evaluation_text(thought)}"
            )
        context = conversation_context(self.ctx.history)
        prompt = "\n\n".join(p for p in (context, self.task_text(), "Most promising thoughts:", *blocks) if p)

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
            self.state.root,
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
        if self.state.stopped_by == "pruned":
            answer = "Tree of Thoughts stopped: you pruned every open thought; none is left to answer from."
        elif not self.state.thoughts:
            answer = (
                "The Tree-of-Thoughts planner proposed no usable strategy, so nothing was explored"
                + (f" ({self.state.notes[0]})" if self.state.notes else "")
                + ". Try again, or set a stronger model for tot.planner."
            )
            self.state.notes.append("no thoughts: the planner failed")
        else:
            answer = (
                f"None of the {len(self.state.thoughts)} thoughts explored could be evaluated (see the "
                "failed nodes in the search tree). Try again, or set stronger models for tot.analyzer "
                "and tot.critic."
            )
            self.state.notes.append("no thought could be evaluated")
        await self.ctx.say(answer)
        synthesis = self.recorder.add(
            self.state.root,
            kind="synthesis",
            label="no thoughts to synthesise",
            thought=answer,
            status="failed",
        )
        return answer, synthesis
