"""The settings' section models: every key with its type, default, description and environment variables."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ide.private import private_dir, tightened
from ide.protocol.modes import ModeName

APP_NAME = "arbor"
CONFIG_FILE = "config.toml"
WORKSPACE_DIR = ".arbor"


def _env(*names: str) -> dict[str, Any]:
    """Field metadata naming the environment variables that set a field, strongest first."""
    return {"env": list(names)}


def _role_model(env: str, what: str) -> Any:
    """The field of one role's model: unset, the role uses llm.model; ``env`` sets it."""
    return Field(None, json_schema_extra=_env(env), description=f"{what} (default: llm.model)")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class LatsModels(_Section):
    """Models for the LATS phases; unset phases use the default model."""

    selection: str | None = _role_model("ARBOR_LATS_SELECTION_MODEL", "Model choosing which leaf to expand")
    expansion: str | None = _role_model("ARBOR_LATS_EXPANSION_MODEL", "Model proposing the next actions")
    evaluation: str | None = _role_model("ARBOR_LATS_EVALUATION_MODEL", "Model scoring nodes 0–10")
    backprop: str | None = _role_model(
        "ARBOR_LATS_BACKPROP_MODEL", "Model writing lessons from failed branches"
    )


class TotModels(_Section):
    """Models for the Tree-of-Thoughts agents; unset agents use the default model."""

    coordinator: str | None = _role_model("ARBOR_TOT_COORDINATOR_MODEL", "Model of the ToT coordinator")
    planner: str | None = _role_model("ARBOR_TOT_PLANNER_MODEL", "Model of the ToT planner")
    researcher: str | None = _role_model("ARBOR_TOT_RESEARCHER_MODEL", "Model of the ToT researcher")
    analyzer: str | None = _role_model("ARBOR_TOT_ANALYZER_MODEL", "Model of the ToT analyzer")
    critic: str | None = _role_model("ARBOR_TOT_CRITIC_MODEL", "Model of the ToT critic")
    synthesizer: str | None = _role_model("ARBOR_TOT_SYNTHESIZER_MODEL", "Model of the ToT synthesizer")


class PlanModels(_Section):
    """Models for plan/execute/replan; unset roles use the default model."""

    planner: str | None = _role_model("ARBOR_PLAN_PLANNER_MODEL", "Model of the planner")
    executor: str | None = _role_model("ARBOR_PLAN_EXECUTOR_MODEL", "Model of the executor")
    replanner: str | None = _role_model("ARBOR_PLAN_REPLANNER_MODEL", "Model of the replanner")


class LlmSettings(_Section):
    """Which models answer, where they run, and how hard we may push them."""

    model: str = Field(
        "ollama:qwen3:8b",
        description="Default model as provider:model (ollama:, openai:, anthropic:, scripted:FILE.jsonl)",
        json_schema_extra=_env("ARBOR_MODEL"),
    )
    ollama_host: str = Field(
        "http://localhost:11434",
        description="Ollama server URL",
        json_schema_extra=_env("ARBOR_OLLAMA_HOST", "OLLAMA_HOST"),
    )
    openai_base_url: str | None = Field(None, description="OpenAI-compatible server URL")
    num_ctx: int = Field(16384, ge=512, description="Context window asked of Ollama (its default is 2k)")
    max_answer_tokens: int = Field(
        4096,
        ge=64,
        description="Longest answer one model call may give, in tokens (Ollama num_predict, max_tokens "
        "elsewhere): a model that rambles is cut there, and the chat says so",
    )
    context_window: int | None = Field(
        None,
        ge=512,
        description="Context window of an OpenAI-compatible or hosted model, in tokens, when its server does "
        "not say it (llama-server /props, vLLM and LM Studio model lists are asked first); unset and "
        "unknown: llm.num_ctx is assumed, and doctor says so",
    )
    temperature: float = Field(0.2, ge=0.0, le=2.0, description="Sampling temperature of every model call")
    request_timeout_s: float = Field(
        300.0,
        gt=0,
        description="Silence allowed between streamed chunks once a model answers, seconds (a CPU-only "
        "model gives a few tokens a second; this bounds a stalled stream, not a long answer)",
    )
    first_token_timeout_s: float = Field(
        300.0,
        gt=0,
        description="Time a model may take to send its first chunk, seconds (loading a model into memory "
        "takes tens of seconds)",
    )
    retry_backoff_s: float = Field(
        2.0,
        ge=0,
        description="Wait before the one retry of a call that failed with a dropped connection, a 5xx or "
        "a busy server (503), seconds",
    )
    reasoning: bool | None = Field(
        None, description="Ask reasoning models to think (true/false); unset keeps the model's default"
    )
    concurrency: dict[str, int] = Field(
        default_factory=lambda: {"ollama": 2, "openai": 8, "anthropic": 4, "scripted": 8},
        description="Concurrent calls per provider",
    )
    rate_limit_per_minute: dict[str, float] = Field(
        default_factory=dict, description="Optional calls per minute per provider"
    )
    orchestrator: str | None = _role_model(
        "ARBOR_ORCHESTRATOR_MODEL", "Model that picks architectures, workflows and optional stages"
    )
    retrieval: str | None = Field(
        None,
        json_schema_extra=_env("ARBOR_RETRIEVAL_MODEL"),
        description="Model writing workflow retrieval queries (used by default once set: "
        "workflows.retrieval_queries = auto)",
    )
    compactor: str | None = _role_model(
        "ARBOR_COMPACTOR_MODEL",
        "Model summarising older steps when a conversation would overflow the context window",
    )
    lats: LatsModels = Field(default_factory=LatsModels)
    tot: TotModels = Field(default_factory=TotModels)
    plan: PlanModels = Field(default_factory=PlanModels)
    agents: dict[str, str] = Field(
        default_factory=dict,
        description="Models of workflow agent profiles by profile name (code, test, security…); "
        "unset ones use the default model",
    )

    @field_validator("ollama_host")
    @classmethod
    def _normalise_host(cls, value: str) -> str:
        # OLLAMA_HOST is often written as "0.0.0.0:11434" (the server's bind address), not a URL.
        value = value.strip().rstrip("/")
        if "://" not in value:
            value = "http://" + value
        return value.replace("://0.0.0.0", "://localhost")


class AgentSettings(_Section):
    """How the agent runs a prompt turn."""

    architecture: ModeName = Field(
        "react",
        description="Agent architecture (session mode) for new sessions; auto lets the orchestrator pick",
    )
    max_steps: int = Field(25, ge=1, description="Model calls allowed in one ReAct turn")
    observation_cap_bytes: int = Field(
        8000, ge=256, description="Tool output shown to the model, bytes (scaled by context tier)"
    )


class LatsSettings(_Section):
    """Language Agent Tree Search limits (seed 000 defaults)."""

    max_depth: int = Field(5, ge=1, description="Depth of the search tree at most")
    max_iterations: int = Field(10, ge=1, description="Select–expand–evaluate–backpropagate rounds at most")
    exploration_constant: float = Field(1.414, ge=0, description="UCT exploration weight c")
    expansion_width: int = Field(5, ge=1, description="Candidates expanded per iteration, concurrently")
    solution_threshold: float = Field(
        7.0, ge=0, le=10, description="Score (0–10) at which an answer counts as a solution"
    )
    beam_width: int = Field(3, ge=1, description="Leaves the selection model chooses among")
    time_limit_s: float = Field(600.0, gt=0, description="Wall-clock limit of one run, seconds")
    max_tokens: int = Field(400_000, ge=1, description="Model tokens (in + out) one LATS run may spend")
    test_command: str | None = Field(
        None,
        description="Test command (e.g. 'pytest -q'; split like a shell line, run without a shell) run in "
        "a scratch worktree holding a branch's edits once the user allows it for the run; its exit "
        "status joins the evaluator's score",
    )
    test_timeout_s: float = Field(120.0, gt=0, description="Timeout of the test command, seconds")


class TotSettings(_Section):
    """Tree of Thoughts (seed 004): how wide and deep the coordinator explores, and what it synthesises."""

    max_depth: int = Field(3, ge=1, description="Depth of the thought tree at most")
    max_thoughts: int = Field(3, ge=1, description="Thoughts the planner may propose per active node")
    max_nodes: int = Field(40, ge=2, description="Thoughts in one run at most")
    score_threshold: float = Field(7.0, ge=0, le=10, description="Nodes at or over it join the synthesis")
    top_n: int = Field(3, ge=1, description="Nodes synthesised when none reaches the threshold")
    time_limit_s: float = Field(600.0, gt=0, description="Wall-clock limit of one run, seconds")


class PlanSettings(_Section):
    """Plan / execute / replan (seed 002)."""

    max_tasks: int = Field(8, ge=1, description="Tasks a plan may hold")
    max_replans: int = Field(3, ge=0, description="Times the replanner may change the plan")
    executor_max_steps: int = Field(12, ge=1, description="Model calls the executor may make per task")
    command_timeout_s: float = Field(
        120.0, gt=0, le=3600, description="Longest one run_command of the executor may run (seconds)"
    )


class ToolSettings(_Section):
    """Limits of the agent's tools."""

    read_max_lines: int = Field(400, ge=1, description="Lines read_file returns at most per call")
    grep_max_matches: int = Field(200, ge=1, description="Matches one grep call returns at most")


class WorkspaceSettings(_Section):
    """What counts as part of the workspace."""

    exclude: list[str] = Field(
        default_factory=lambda: [
            ".git/",
            "node_modules/",
            ".venv/",
            "venv/",
            "env/",
            "__pycache__/",
            "build/",
            "dist/",
            ".mypy_cache/",
            ".pytest_cache/",
            ".ruff_cache/",
            ".tox/",
            "*.egg-info/",
        ],
        description="Gitignore-style patterns excluded on top of .gitignore",
    )
    max_file_bytes: int = Field(1_000_000, ge=1, description="Files larger than this are skipped")
    secrets: list[str] = Field(
        default_factory=lambda: [
            # environment files: .env, .env.local, .env_prod, .envrc, .envs/.production/, deploy/prod.env
            ".env",
            ".env[._-]*",
            ".envrc",
            ".envs/",
            "*.env",
            # private keys and keystores (public certificates, *.crt / *.cer, stay readable)
            "*.pem",
            "*.key",
            "*.p8",
            "*.p12",
            "*.pfx",
            "*.jks",
            "*.keystore",
            "*.ppk",
            "*.kdbx",
            "*.keytab",
            "id_rsa*",
            "id_dsa*",
            "id_ecdsa*",
            "id_ed25519*",
            # cloud, cluster and package-manager credentials
            ".aws/",
            ".azure/",
            ".ssh/",
            ".gnupg/",
            ".kube/",
            "kubeconfig",
            "**/.config/gcloud/",
            "**/.docker/config.json",
            "**/.cargo/credentials*",
            "**/.gem/credentials",
            "**/.m2/settings*.xml",
            ".git-credentials",
            ".netrc",
            ".pgpass",
            ".my.cnf",
            ".s3cfg",
            ".boto",
            ".npmrc",
            ".pypirc",
            ".yarnrc.yml",
            ".terraformrc",
            "terraform.rc",
            ".vault-token",
            ".htpasswd",
            "*service-account*.json",
            "*service_account*.json",
            # infrastructure state and variables
            "*.tfstate",
            "*.tfstate.*",
            "*.tfvars",
            "*.tfvars.json",
            # named as secrets: a file or directory secret(s), any secret(s).* (settings/secrets.py), and
            # config or data files whose name holds "secret" or "credential"; code whose name only
            # mentions them (secret_sharing.py, credentials.py) stays readable
            "secret",
            "secrets",
            "secret.*",
            "secrets.*",
            "*.secret",
            "*.secrets",
            *(
                f"*{word}*.{suffix}"
                for word in ("[Ss]ecret", "[Cc]redential")
                for suffix in ("json", "y*ml", "toml", "ini", "cfg", "conf", "properties", "xml", "txt")
            ),
        ],
        description="Gitignore-style patterns of secret files: never listed, indexed, retrieved, read or "
        "written by the agent, nor given to a language server or a model. Patterns only add: a `!` "
        "pattern is ignored. The defaults cover .env files, private keys and keystores, cloud and "
        "package-manager credentials, Terraform state and variables, and files named secret(s) or "
        "config files naming secret or credential",
    )


class IndexSettings(_Section):
    """The code index (tree-sitter + SQLite FTS5); which files it reads comes from [workspace]."""

    workers: int = Field(0, ge=0, description="Parser processes for a full pass (0: one per CPU)")
    watch: bool = Field(True, description="Keep the index current while a window or session is open")
    debounce_ms: int = Field(150, ge=10, le=5000, description="Quiet time before file changes are indexed")
    repo_map_tokens: int = Field(1024, ge=64, description="Token budget of the repo map given to agents")


class LspServerSettings(_Section):
    """One language server: the command to start it and what to send in initialize."""

    command: list[str] | None = Field(None, description="Program and arguments (default: the registry's)")
    initialization_options: dict[str, Any] = Field(default_factory=dict)


class LspSettings(_Section):
    """Language servers, started on the first query that needs them."""

    python: Literal["jedi", "pyright", "basedpyright"] = Field(
        "jedi", description="Python server: jedi-language-server (installed with Arbor) or pyright"
    )
    request_timeout_s: float = Field(10.0, gt=0, description="A query that takes longer is cancelled")
    start_timeout_s: float = Field(30.0, gt=0, description="Time a server may take to answer initialize")
    idle_shutdown_s: float = Field(600.0, gt=0, description="Servers unused this long are shut down")
    max_servers: int = Field(4, ge=1, description="Live servers at most; the least recently used goes")
    servers: dict[str, LspServerSettings] = Field(
        default_factory=dict, description="Per-server overrides by name: jedi, pyright, typescript, clangd, …"
    )
    python_interpreter: str | None = Field(
        None,
        description="The project's Python (an interpreter or a virtual environment's directory) whose "
        "packages the Python server sees; unset: the workspace's .venv, venv, pdm, poetry or conda "
        "environment once the workspace is trusted, else VIRTUAL_ENV or CONDA_PREFIX",
    )
    extra_paths: list[str] = Field(
        default_factory=list,
        description="Directories added to the Python server's import path (relative to the workspace); "
        "a src/ layout and pyproject's package directories are found without it",
    )


_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class AgentServerSettings(_Section):
    """Another ACP agent the window can drive (like Zed's ``agent_servers``); its edits go through Arbor's
    review."""

    command: str = Field(description="Program to start, e.g. claude-code-acp, gemini, goose")
    args: list[str] = Field(default_factory=list, description='Its arguments, e.g. ["--experimental-acp"]')
    env: dict[str, str] = Field(default_factory=dict, description="Environment variables added for it")
    pass_env: list[str] = Field(
        default_factory=list,
        description='Names of your environment variables it gets as they are, e.g. ["OPENAI_API_KEY"]; '
        "otherwise it gets only PATH, HOME, the locale, TMPDIR, proxies without passwords and the like "
        "(docs/agents.md)",
    )
    protocol: Literal["acp", "cli"] = Field(
        "acp",
        description='"acp": an ACP agent on stdio; "cli": a command run once per task in a shadow of the '
        'workspace, {prompt} in its args replaced by the task (e.g. command = "aider", args = '
        '["--yes-always", "--message", "{prompt}"]), its changes captured for review (arbor run --agent)',
    )

    @field_validator("pass_env")
    @classmethod
    def _variable_names(cls, names: list[str]) -> list[str]:
        bad = [name for name in names if not _VARIABLE_NAME.fullmatch(name)]
        if bad:
            raise ValueError(f"not environment variable names: {', '.join(map(repr, bad))}")
        return names

    def argv(self) -> list[str]:
        """The command line: the program and its arguments."""
        return [self.command, *self.args]


class SourceSettings(_Section):
    """A pluggable retrieval source (web search, CVE database…): a command that answers queries."""

    command: list[str] = Field(
        description="Program and arguments; the query is appended as the last argument and the program "
        'prints JSON lines {"location": URL or id, "title": ..., "text": ...}'
    )
    timeout_s: float = Field(20.0, gt=0)


class WorkflowSettings(_Section):
    """YAML workflows (the orchestrator mode): tests, retries, retrieval and reranking."""

    default: str = Field(
        "auto",
        description="Workflow for the workflow mode: a workflow name, or auto (the orchestrator picks)",
    )
    test_command: str | None = Field(
        None,
        description="Test command of test stages (default: detected — pytest, npm test, go test, cargo test)",
    )
    test_timeout_s: float = Field(300.0, gt=0, description="Timeout of a test stage's command, seconds")
    max_enrichments: int = Field(
        2, ge=0, description="Adaptive-retrieval retries a failed stage gets before its failure route"
    )
    max_stage_runs: int = Field(
        12, ge=1, description="Stage runs one workflow may make in all (routing loops end in ABORT)"
    )
    agent_max_steps: int = Field(16, ge=1, description="Model calls one stage agent may make")
    retrieval_queries: Literal["auto", "heuristic", "model"] = Field(
        "auto",
        description="Who writes retrieval queries: auto (the retrieval model when llm.retrieval is set, "
        "else heuristic), heuristic (terms taken from the task and failure: fast, no model call) or model "
        "(the retrieval model, llm.model when llm.retrieval is unset); a failed model answer falls back to "
        "the heuristic terms",
    )
    retrieval_query_timeout_s: float = Field(
        60.0, gt=0, description="Time the retrieval model may take to write a stage's queries, seconds"
    )
    min_relevance: float = Field(
        0.2,
        ge=0,
        le=1,
        description="Snippets scoring below this fraction of the best snippet's relevance to the task are "
        "dropped before the token budget is filled (the best snippet of each source stays); 0 keeps all",
    )
    reranker: str | None = Field(
        None, description="Cross-encoder for context fusion, e.g. cross-encoder:BAAI/bge-reranker-base"
    )
    embedding_model: str | None = Field(
        None,
        description="Embedding model for context fusion without a reranker, e.g. ollama:nomic-embed-text",
    )
    default_token_budget: int = Field(
        8000, ge=100, description="Context tokens a stage gets when its workflow sets no budget for it"
    )
    sources: dict[str, SourceSettings] = Field(
        default_factory=dict,
        description="Pluggable sources by name (web_search, cve_database); unset ones are reported missing",
    )


class MemorySettings(_Section):
    """What Arbor remembers across sessions (investigations, insights, patterns, errors)."""

    enabled: bool = Field(True, description="Learn from finished runs and offer the memory tools")
    embedding_model: str | None = Field(
        None, description="Embeddings for memory search besides keywords, e.g. ollama:nomic-embed-text"
    )


class ReviewSettings(_Section):
    """What happens when the user applies reviewed hunks."""

    commit: Literal["commit", "stage", "none"] = Field(
        "commit", description="What Apply does in git: commit the accepted paths, only stage them, or nothing"
    )
    confine_agents: bool = Field(
        False,
        description="Run another agent (arbor --agent, arbor run --agent) under bubblewrap (bwrap) so it can "
        "write only its shadow workspace, a private TMPDIR and agent_writable; refused, saying so, where "
        "bwrap is missing (arbor doctor says whether it works here)",
    )
    agent_writable: list[str] = Field(
        default_factory=list,
        description="Directories a confined agent may also write (its own config and cache, e.g. "
        '["~/.qwen", "~/.cache"]); one holding the workspace is refused',
    )


class RegistrySettings(_Section):
    """The ACP agent registry that Agent → Add Agent… lists (read only then, and cached)."""

    url: str = Field(
        "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json",
        description="The registry's feed: an https URL, a file:// URL or a path to a registry.json",
        json_schema_extra=_env("ARBOR_REGISTRY_URL"),
    )


class Settings(_Section):
    """All of Arbor's settings."""

    data_dir: Path | None = Field(None, description="Where sessions, index and memory live (SQLite)")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "INFO", description="Log level of the backend on stderr"
    )
    llm: LlmSettings = Field(default_factory=LlmSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    lats: LatsSettings = Field(default_factory=LatsSettings)
    tot: TotSettings = Field(default_factory=TotSettings)
    plan: PlanSettings = Field(default_factory=PlanSettings)
    tools: ToolSettings = Field(default_factory=ToolSettings)
    workspace: WorkspaceSettings = Field(default_factory=WorkspaceSettings)
    index: IndexSettings = Field(default_factory=IndexSettings)
    lsp: LspSettings = Field(default_factory=LspSettings)
    review: ReviewSettings = Field(default_factory=ReviewSettings)
    workflows: WorkflowSettings = Field(default_factory=WorkflowSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    agents: dict[str, AgentServerSettings] = Field(
        default_factory=dict,
        description="ACP agents the window can drive instead of Arbor's, by name ([agents.NAME] with "
        "command, args, env, pass_env): arbor --agent NAME, or the Agent menu",
    )
    registry: RegistrySettings = Field(default_factory=RegistrySettings)

    def resolved_data_dir(self) -> Path:
        """The data directory: the setting, else ``ARBOR_DATA_DIR`` (also for settings made without
        load_settings, as tests and tools do), else the platform's user data dir."""
        if self.data_dir is not None:
            return self.data_dir
        from_env = os.environ.get("ARBOR_DATA_DIR")
        return Path(from_env) if from_env else Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))

    def workspace_data_dir(self, cwd: str | Path) -> Path:
        """Where this workspace's sessions, checkpoints and index live (created on first use, 0700: the
        user's alone, ide.private)."""
        return private_dir(tightened(self.resolved_data_dir()) / "workspaces" / workspace_key(cwd))


def workspace_key(cwd: str | Path) -> str:
    """A readable, collision-free directory name for a workspace: its name plus a hash of its real path."""
    real = os.path.realpath(cwd)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(real).name)[:40] or "root"
    return f"{name}-{hashlib.sha1(real.encode()).hexdigest()[:12]}"
