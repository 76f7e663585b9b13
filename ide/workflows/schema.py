"""The workflow file format (seed 003) and agent profiles, as pydantic models.

A workflow is YAML: ``metadata`` (what it is for and when to pick it), ``retrieval_strategy_config``
(which sources the retrieval agent uses and how much context each stage gets) and ``stages`` (who runs
each stage, when an optional stage is worth including, and where to go on success and on failure).
Unknown keys are errors, so a typo is reported with its file and line instead of being ignored.
``arbor workflows schema`` prints :func:`workflow_json_schema` for editors.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ide.codeintel.index.model import DefinitionKind
from ide.protocol.modes import ArchitectureName

DONE = "DONE"
ABORT = "ABORT"
TERMINALS = (DONE, ABORT)

Architecture = ArchitectureName
Aggregation = Literal["any", "all", "majority"]
StageTarget = int | str
"""A stage id, ``DONE`` or ``ABORT``."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SelectionCriteria(_Strict):
    applicable_patterns: list[str] = Field(
        default_factory=list,
        description="Regular expressions of tasks this workflow fits (a hint to the model)",
    )
    agents_required: list[str] = Field(default_factory=list)
    agents_optional: list[str] = Field(default_factory=list)


class Metadata(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$", description="Unique name; /workflow NAME")
    description: str = Field(min_length=1)
    version: str = "1.0"
    workflow_type: str = Field(
        description="What the workflow works on: code_implementation, code_fix, code_refactor, "
        "code_question, text_analysis…; types starting with code_ use the code index and LSP"
    )
    selection_criteria: SelectionCriteria = Field(default_factory=SelectionCriteria)

    @property
    def is_code(self) -> bool:
        return self.workflow_type.startswith("code")


NodeKind = DefinitionKind
"""Definition kinds the code index records."""

ChunkStrategy = Literal[
    "semantic_functions",
    "semantic_sections",
    "semantic",
    "sections",
    "paragraphs",
    "fixed_lines",
    "fixed_size",
    "file",
]
"""How the retrieval agent cuts code and documents into snippets (see RagStrategy.chunk_strategy)."""

CodeChunks = Literal["definition", "window", "file"]
DocumentChunks = Literal["sections", "paragraphs", "window", "file"]

TOOL_ALIASES = {
    "tree_sitter_get_ast": "file_outline",
    "get_signature": "lsp_get_signature",
    "find_definition": "lsp_find_definition",
    "get_references": "lsp_get_references",
}
"""Tool names of the seed's workflow files → Arbor's tools."""


class AstParsing(_Strict):
    enabled: bool = Field(
        True,
        description="false: no tree-sitter in this workflow. Stage agents are not offered the code-index "
        "tools (find_symbol, file_outline, find_references, repo_map), and the code retrieval source "
        "(codebase_semantic_search / code_index) is reported unavailable",
    )
    model: str = "tree_sitter"
    index_level: Literal["function", "file"] = Field(
        "function",
        description="What a code snippet holds. function: the definitions the queries hit, each with its "
        "own lines (cut as rag_strategy.chunk_strategy says). file: the whole file each hit is in, one "
        "snippet per file, at most 300 lines (a longer file's snippet says it was cut); this wins over "
        "chunk_strategy for code",
    )
    upfront_execution: bool = True
    languages: list[str] = Field(
        default_factory=list,
        description="Languages the code retrieval source takes definitions from, as the index names them "
        "(python, typescript, javascript, go, rust, java, c, cpp…; typescript includes tsx). Empty: "
        "every language. Stage agents' tools are not filtered",
    )
    node_kinds: list[NodeKind] = Field(
        default_factory=list,
        description="Definition kinds the code retrieval source takes (function, method, class, "
        "interface, struct, enum, type, constant…). Empty: every kind. Stage agents' tools are not filtered",
    )
    reason: str | None = None

    @field_validator("languages")
    @classmethod
    def _known_languages(cls, value: list[str]) -> list[str]:
        if not value:
            return value
        from ide.codeintel.index.languages import EXTENSIONS, FILENAMES

        known = {*EXTENSIONS.values(), *FILENAMES.values()}
        names = [name.strip().lower() for name in value]
        unknown = [name for name in names if name not in known]
        if unknown:
            raise ValueError(
                f"unknown language {', '.join(repr(n) for n in unknown)}; the index knows: "
                + ", ".join(sorted(known))
            )
        return names

    def keeps(self, path: str, kind: str) -> bool:
        """Whether the code retrieval source may use a ``kind`` definition of the file at ``path``."""
        if self.node_kinds and kind not in self.node_kinds:
            return False
        if not self.languages:
            return True
        from ide.codeintel.index.languages import detect_language

        language = detect_language(path)
        return language is not None and (
            language in self.languages or (language == "tsx" and "typescript" in self.languages)
        )


class LspIntegration(_Strict):
    enabled: bool = Field(
        True,
        description="false: stage agents are not offered any lsp_* tool (and a stage's mcp_tools may not "
        "name one)",
    )
    execution: Literal["on_demand"] = "on_demand"
    tools: list[str] = Field(
        default_factory=list,
        description="get_signature, find_definition, … (informational: which lsp_* tools an agent gets "
        "is its profile's tools and its stage's mcp_tools)",
    )
    reason: str | None = None


class RagSource(_Strict):
    name: str = Field(
        description="codebase_semantic_search, lsp_tools, doc_retrieval, document_semantic_search, "
        "decision_log_search, specification_search, git_history, memory, web_search, cve_database"
    )
    priority: str = "MEDIUM"
    indexing: str | None = None
    execution_timing: str | None = None
    trigger_stages: list[str] = Field(
        default_factory=list, description="Stage names this source serves (empty: every stage)"
    )

    @property
    def weight(self) -> float:
        """HIGH 1.0, MEDIUM 0.7, LOW 0.4 (``HIGH_if_triggered`` counts as HIGH)."""
        level = self.priority.upper()
        return 1.0 if level.startswith("HIGH") else 0.4 if level.startswith("LOW") else 0.7


class RagStrategy(_Strict):
    chunk_strategy: ChunkStrategy = Field(
        "semantic_functions",
        description="How retrieved code and documents are cut into snippets. semantic_functions, "
        "semantic_sections, semantic: by structure — a code hit is its definition (at most 60 lines), a "
        "document is cut at its headings. sections: the same. paragraphs: code by definition, documents "
        "by paragraph (blank-line separated, under their heading). fixed_lines (or fixed_size): windows "
        "of chunk_lines lines — around each code hit, and consecutive windows of each document. file: "
        "whole files and whole documents (at most 300 lines each; a cut one says so). "
        "ast_parsing.index_level: file makes code snippets whole files whatever this says",
    )
    chunk_lines: int = Field(
        40, ge=5, le=300, description="Lines of one window for chunk_strategy fixed_lines / fixed_size"
    )
    sources: list[RagSource] = Field(default_factory=list)

    @property
    def document_chunks(self) -> DocumentChunks:
        """How documents are cut: sections, paragraphs, fixed windows or whole files."""
        if self.chunk_strategy in ("fixed_lines", "fixed_size"):
            return "window"
        if self.chunk_strategy in ("paragraphs", "file"):
            return self.chunk_strategy
        return "sections"


class RetrievalHints(_Strict):
    focus_on: list[str] = Field(default_factory=list)
    avoid: list[str] = Field(
        default_factory=list,
        description="Sources (by name) and path prefixes (tests/) kept out of the retrieved context",
    )
    token_budget: dict[str, int] = Field(
        default_factory=dict, description="Context tokens per stage name (or stage type)"
    )


class RetrievalStrategy(_Strict):
    enabled: bool = True
    strategy_name: str = "code_domain_ast_lsp"
    pattern_applied: str | None = None
    allows_enrichment: bool = Field(
        True, description="A failed stage may be retried after adaptive retrieval"
    )
    ast_parsing: AstParsing = Field(default_factory=AstParsing)
    lsp_integration: LspIntegration = Field(default_factory=LspIntegration)
    rag_strategy: RagStrategy = Field(default_factory=RagStrategy)
    retrieval_hints: RetrievalHints = Field(default_factory=RetrievalHints)

    @property
    def code_chunks(self) -> CodeChunks:
        """How code hits become snippets: ``ast_parsing.index_level: file`` or ``chunk_strategy: file``
        give whole files, ``fixed_lines`` / ``fixed_size`` windows, anything else the definition."""
        chunking = self.rag_strategy.chunk_strategy
        if self.ast_parsing.index_level == "file" or chunking == "file":
            return "file"
        return "window" if chunking in ("fixed_lines", "fixed_size") else "definition"

    def withheld(self, tool: str) -> str | None:
        """Why this workflow never offers ``tool`` (an Arbor tool name) to its stage agents, or None."""
        if tool.startswith("lsp_") and not self.lsp_integration.enabled:
            return "lsp_integration.enabled is false"
        if not self.ast_parsing.enabled:
            # The code-index (tree-sitter) tools, as ide.tools.index declares them; imported here, where
            # tools are being chosen, because ide.tools loads langchain and the schema alone does not.
            from ide.tools.index import INDEX_TOOLS

            if any(spec.name == tool for spec in INDEX_TOOLS):
                return "ast_parsing.enabled is false"
        return None


class AgentRef(_Strict):
    agent: str = Field(description="An agent profile: code_agent, test_agent, security_agent…")
    mcp_tools: list[str] = Field(
        ["*"],
        description="Tools this stage's agent gets beyond its profile's: Arbor tools (lsp_get_references, "
        "file_outline…) and the tools of the session's MCP servers, by name or shell-style pattern "
        "(github__*). Absent: every MCP server tool (the default, *). A list: only those — [] means no "
        "MCP server tool at all. Patterns match MCP server tools only; a name neither Arbor nor the "
        "session's servers have is noted in the run's tree. Read-only stages never get MCP server tools",
    )

    @property
    def profile(self) -> str:
        """The profile name: ``code_agent`` → ``code``."""
        return self.agent.removesuffix("_agent")


class ParallelConfig(_Strict):
    failure_aggregation: Aggregation = Field(
        "any", description="The stage fails when any, all, or a majority of its agents fail"
    )


class Routing(_Strict):
    next_stage_on_success: StageTarget
    next_stage_on_failure: StageTarget = ABORT
    max_attempts: int = Field(1, ge=1, description="Runs of the stage before its failure route is taken")


class FailureCriteria(_Strict):
    agent_defined: bool = Field(True, description="An agent that reports failure fails the stage")
    tests_must_pass: bool = Field(
        False,
        description="After the agents, run the tests in a scratch worktree; failing tests fail the stage",
    )


class Stage(_Strict):
    stage_id: int | str
    name: str = Field(pattern=r"^[A-Za-z0-9_]+$")
    description: str = ""
    type: str | None = Field(None, description="code_generation, test, security, format, analysis…")
    required: bool = True
    read_only: bool = Field(False, description="Agents of this stage only read (questions, reviews)")
    parallel_agents: list[AgentRef] = Field(
        default_factory=list, description="Agents run in parallel; none for a stage that only runs the tests"
    )
    parallel_config: ParallelConfig = Field(default_factory=ParallelConfig)
    reasoning_guidance: str | None = Field(
        None, description="For optional stages: when the orchestrator should include the stage"
    )
    retrieval_guidance: str | None = None
    routing: Routing
    failure_criteria: FailureCriteria = Field(default_factory=FailureCriteria)

    @model_validator(mode="after")
    def _has_work(self) -> Stage:
        if not self.parallel_agents and not self.failure_criteria.tests_must_pass:
            raise ValueError("a stage needs parallel_agents, or failure_criteria.tests_must_pass: true")
        return self

    @field_validator("stage_id")
    @classmethod
    def _not_terminal(cls, value: int | str) -> int | str:
        if str(value).upper() in TERMINALS:
            raise ValueError(f"{value} is a routing target, not a stage id")
        return value

    @property
    def key(self) -> str:
        return str(self.stage_id)


class Workflow(_Strict):
    metadata: Metadata
    retrieval_strategy_config: RetrievalStrategy = Field(default_factory=RetrievalStrategy)
    stages: list[Stage] = Field(min_length=1)

    @model_validator(mode="after")
    def _routes_exist(self) -> Workflow:
        routes = [
            (s.stage_id, s.routing.next_stage_on_success, s.routing.next_stage_on_failure)
            for s in self.stages
        ]
        problems = route_problems(routes)
        if problems:
            loc, message = problems[0]
            raise ValueError(f"{'.'.join(str(p) for p in loc)}: {message}")
        return self

    @model_validator(mode="after")
    def _stage_tools_allowed(self) -> Workflow:
        """A stage's mcp_tools may not name a tool this workflow's strategy withholds."""
        stages = [stage.model_dump() for stage in self.stages]
        problems = stage_tool_problems(self.retrieval_strategy_config, stages)
        if problems:
            loc, message = problems[0]
            raise ValueError(f"{'.'.join(str(p) for p in loc)}: {message}")
        return self

    @property
    def name(self) -> str:
        return self.metadata.name

    def stage(self, key: str) -> Stage:
        for stage in self.stages:
            if stage.key == key:
                return stage
        raise KeyError(key)


class AgentProfile(_Strict):
    """A specialist agent a workflow stage can run: its prompt, tools, architecture and model role."""

    name: str = Field(pattern=r"^[a-z0-9_]+$", description="code, test, security, formatter…")
    description: str = ""
    prompt: str = Field(min_length=1, description="System prompt; {root} is the workspace root")
    tools: list[str] = Field(
        default_factory=list, description="Tool names (read_file, edit_file, find_symbol, lsp_get_type…)"
    )
    architecture: Architecture = "react"
    model_role: str | None = Field(
        None, description="Model role; default agent.<name> (llm.agents.<name>, else the default model)"
    )
    read_only: bool = False

    @property
    def role(self) -> str:
        return self.model_role or f"agent.{self.name}"


Route = tuple[Any, Any, Any]
"""One stage's (stage_id, next_stage_on_success, next_stage_on_failure); None where missing."""


def route_problems(routes: list[Route]) -> list[tuple[tuple[Any, ...], str]]:
    """Every routing problem of the stages ``routes`` as (field path, problem): a stage_id used twice, a
    route to no stage, and stages that only route among themselves (DONE or ABORT is unreachable)."""
    problems: list[tuple[tuple[Any, ...], str]] = []
    seen: set[str] = set()
    for index, (stage_id, _, _) in enumerate(routes):
        if stage_id is not None and str(stage_id) in seen:
            problems.append((("stages", index, "stage_id"), f"stage_id {stage_id} is used twice"))
        seen.add(str(stage_id))
    ids = ", ".join(sorted({str(r[0]) for r in routes if r[0] is not None}))
    exits: set[str] = set(TERMINALS)
    for index, (_, *targets) in enumerate(routes):
        for field, target in zip(("next_stage_on_success", "next_stage_on_failure"), targets, strict=True):
            if target is not None and str(target) not in seen and str(target) not in TERMINALS:
                exits.add(str(target))  # reported here; not reported again as a loop
                problems.append(
                    (
                        ("stages", index, "routing", field),
                        f"{target!r} is neither a stage_id ({ids}) nor DONE or ABORT",
                    )
                )
    # A stage can finish when one of its routes reaches a stage that can: grow that set to a fixed point.
    edges = {str(s): [str(t) for t in targets if t is not None] for s, *targets in routes}
    finishing = set(exits)
    grew = True
    while grew:
        grew = False
        for stage, targets in edges.items():
            if stage not in finishing and (not targets or any(t in finishing for t in targets)):
                finishing.add(stage)
                grew = True
    trapped = [(index, str(r[0])) for index, r in enumerate(routes) if str(r[0]) not in finishing]
    if trapped:
        index, _ = trapped[0]
        loop = ", ".join(stage for _, stage in trapped)
        problems.append(
            (
                ("stages", index, "routing"),
                f"stages {loop} route only among themselves: DONE and ABORT cannot be reached from them",
            )
        )
    return problems


def stage_tool_problems(strategy: RetrievalStrategy, stages: Any) -> list[tuple[tuple[Any, ...], str]]:
    """Each stage agent's ``mcp_tools`` entry, as written in ``stages`` (raw or dumped), that names a tool
    ``strategy`` never offers, as (field path, problem)."""
    problems: list[tuple[tuple[Any, ...], str]] = []
    for index, stage in enumerate(stages if isinstance(stages, list) else []):
        agents = stage.get("parallel_agents") if isinstance(stage, dict) else None
        for position, ref in enumerate(agents if isinstance(agents, list) else []):
            tools = ref.get("mcp_tools") if isinstance(ref, dict) else None
            for number, name in enumerate(tools if isinstance(tools, list) else []):
                why = strategy.withheld(TOOL_ALIASES.get(name, name)) if isinstance(name, str) else None
                if why:
                    loc = ("stages", index, "parallel_agents", position, "mcp_tools", number)
                    problems.append((loc, f"{name} is never offered in this workflow: {why}"))
    return problems


def workflow_json_schema() -> dict[str, Any]:
    """The JSON Schema of a workflow file, with agent profiles under ``$defs`` (for editors)."""
    schema = Workflow.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "Arbor workflow"
    schema.setdefault("$defs", {})["AgentProfile"] = AgentProfile.model_json_schema()
    return schema
