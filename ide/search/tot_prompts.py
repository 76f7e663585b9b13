"""The Tree-of-Thoughts agents' roles, prompts and JSON answers, and asking several agents at once."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel, Field

from ide.search.base import gather_in_order, parse_structured, schema_hint
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
    verdict: str = ""
    """The recorded analysis and critique of a thought taken over from an earlier run (its reflection)."""

    def charge(self, replies: Iterable[AIMessage]) -> None:
        inputs, outputs = tokens_of(replies)
        self.input_tokens += inputs
        self.output_tokens += outputs
