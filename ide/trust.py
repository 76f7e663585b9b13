"""Workspace trust: which settings a repository's ``.arbor/config.toml`` may set only once the user trusts
that workspace, and the user's record of the workspaces they trusted (or declined).

A cloned repository is input, not configuration. Its settings are split in three:

- *preferences* (modes, limits, review style, Ollama model names…) always apply;
- *trusted keys* — anything that names a command, a host or URL, the data dir, worker counts, language
  servers, retrieval sources, or a model outside the user's Ollama — are held back until the user
  trusts the workspace;
- *narrowing keys* apply at once only as far as they narrow what the user allows: the repository's
  excludes are added to the user's, its ``max_file_bytes`` and the time and token limits of commands
  and searches may lower the user's. The secret list is always the union of the user's and the
  repository's, trusted or not;
- *weakening values* of a preference wait for trust too: ``review.commit = "none"`` (Apply then writes
  without git's check of the paths).

Trust is recorded per user (``<config dir>/trusted-workspaces.json``), keyed by the workspace's real
path, with a digest of exactly what was trusted: a changed config asks again.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from ide.private import write_private

TRUST_FILE = "trusted-workspaces.json"
TRUST_ENV = "ARBOR_TRUST_WORKSPACE"
"""Set to 1 (``--trust`` on the command line): honour the workspace's trusted keys for this process."""

COMMANDS = {
    "lsp.servers": "defines language-server commands",
    "lsp.python_interpreter": "names the Python interpreter the language server runs",
    "agents": "defines agent commands the window may start",
    "workflows.sources": "defines retrieval-source commands",
    "workflows.test_command": "names the command workflow test stages run",
    "lats.test_command": "names the command LATS runs to test answers",
}
HOSTS = {
    "llm.ollama_host": "sends your prompts and code to this server",
    "llm.openai_base_url": "sends your prompts and code to this server",
    "workflows.reranker": "loads (and may download) a reranking model",
    "registry.url": "chooses the list Agent → Add Agent… offers agents from",
}
OTHER = {
    "data_dir": "moves where Arbor stores sessions, index and memory",
    "index.workers": "sets how many parser processes Arbor starts",
    "lsp.extra_paths": "adds directories the language server reads and may import compiled modules from",
    "review.agent_writable": "lets a confined agent write these directories",
}
MODEL_KEYS = frozenset(
    {
        "llm.model",
        "llm.orchestrator",
        "llm.retrieval",
        "llm.compactor",
        "llm.agents",
        "memory.embedding_model",
        "workflows.embedding_model",
    }
)
"""Keys holding model specs: a preference while every spec stays on the user's Ollama, else trusted."""
MODEL_PREFIXES = ("llm.lats.", "llm.tot.", "llm.plan.")

UNION_KEYS = frozenset({"workspace.exclude", "workspace.secrets"})
ALWAYS_UNION = frozenset({"workspace.secrets"})
"""The repository may add secret patterns but never remove the user's, even once trusted."""
AT_MOST = {
    "workspace.max_file_bytes": "raises your limit, so the agent would read larger files",
    "plan.command_timeout_s": "raises your limit, so the executor's commands may run longer",
    "lats.test_timeout_s": "raises your limit, so the repository's tests may run longer",
    "workflows.test_timeout_s": "raises your limit, so the repository's tests may run longer",
    "lats.time_limit_s": "raises your limit, so a search may run (and call models) longer",
    "lats.max_tokens": "raises your limit, so a search may spend more model tokens",
    "tot.time_limit_s": "raises your limit, so a search may run (and call models) longer",
}
"""Limits a repository may lower at once; raising one waits for trust (the reason says what it lifts)."""
AT_MOST_KEYS = frozenset(AT_MOST)
WEAKENING = {("review.commit", "none"): "makes Apply write without git's check of the paths it commits"}
"""Values of otherwise free preferences that switch a check off: they wait for trust."""

Kind = Literal["preference", "trusted", "union", "at_most"]


def kind_of(key: str, value: Any) -> Kind:
    """How a workspace-layer value of ``key`` is treated before the workspace is trusted."""
    if key in COMMANDS or key in HOSTS or key in OTHER:
        return "trusted"
    if isinstance(value, str) and (key, value) in WEAKENING:
        return "trusted"
    if key in MODEL_KEYS or key.startswith(MODEL_PREFIXES):
        return "preference" if _all_ollama(value) else "trusted"
    if key in UNION_KEYS:
        return "union"
    if key in AT_MOST_KEYS:
        return "at_most"
    return "preference"


def repository_rule(key: str) -> str:
    """How ``key`` in a repository's ``.arbor/config.toml`` applies, in words (the settings reference)."""
    if key in ALWAYS_UNION:
        return "adds to yours, never removes"
    if key in UNION_KEYS:
        return "adds to yours; removing needs trust"
    if key in AT_MOST_KEYS:
        return "lowers yours; raising needs trust"
    if key in MODEL_KEYS or key.startswith(MODEL_PREFIXES):
        return "applies for ollama: models; others need trust"
    weakening = [value for (name, value) in WEAKENING if name == key]
    if weakening:
        verb = "needs" if len(weakening) == 1 else "need"
        return f"{' and '.join(weakening)} {verb} trust; other values apply"
    if kind_of(key, "ollama:any") == "trusted":
        return "needs trust"
    return "applies"


def _all_ollama(value: Any) -> bool:
    specs = value.values() if isinstance(value, Mapping) else [value]
    return all(
        spec is None or (isinstance(spec, str) and spec.strip().lower().startswith("ollama:"))
        for spec in specs
    )


def reason(key: str, value: Any) -> str:
    """Why ``key`` waits for trust, in words for the dialog and ``arbor doctor``."""
    for table in (COMMANDS, HOSTS, OTHER):
        if key in table:
            return table[key]
    if isinstance(value, str) and (key, value) in WEAKENING:
        return WEAKENING[(key, value)]
    if key in MODEL_KEYS or key.startswith(MODEL_PREFIXES):
        return "uses a model outside your Ollama server (another provider, a script)"
    if key in UNION_KEYS:
        return "removes patterns you set, so the agent would read more"
    if key in AT_MOST_KEYS:
        return AT_MOST[key]
    return "needs trust"


@dataclass(frozen=True)
class HeldBack:
    """A workspace setting not applied until the user trusts the workspace."""

    key: str
    value: Any
    source: str
    reason: str

    def describe(self) -> str:
        """``key = value  (source): reason``, commands shown as the command line they run."""
        return f"{self.key} = {_show(self.value)}  ({self.source}): {self.reason}"

    def commands(self) -> list[str]:
        """The command lines this setting would run, for the trust dialog."""
        return list(_command_lines(self.key, self.value))


def _show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _command_lines(key: str, value: Any) -> list[str]:
    import shlex

    if key in ("lsp.servers", "workflows.sources") and isinstance(value, Mapping):
        lines = []
        for name, server in value.items():
            argv = server.get("command") if isinstance(server, Mapping) else None
            if argv:
                lines.append(f"{name}: {shlex.join(str(a) for a in argv)}")
        return lines
    if key == "agents" and isinstance(value, Mapping):
        return [
            f"{name}: {shlex.join(str(a) for a in [agent.get('command'), *agent.get('args', [])])}"
            for name, agent in value.items()
            if isinstance(agent, Mapping) and agent.get("command")
        ]
    if key in ("workflows.test_command", "lats.test_command", "lsp.python_interpreter") and value:
        return [str(value)]
    return []


def trust_digest(held: list[HeldBack]) -> str:
    """A digest of exactly what trusting would apply (keys and values, not where they were written)."""
    canonical = json.dumps(sorted((h.key, h.value) for h in held), sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class TrustDecision:
    """The user's answer for a workspace: ``trusted`` for the settings whose digest is ``digest``."""

    trusted: bool
    digest: str
    at: str


class TrustStore:
    """The user's trusted (and declined) workspaces, in one small JSON file written atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        workspaces = data.get("workspaces") if isinstance(data, dict) else None
        return workspaces if isinstance(workspaces, dict) else {}

    def decision(self, workspace: Path) -> TrustDecision | None:
        """The recorded answer for ``workspace`` (any digest), or None when never asked."""
        entry = self._read().get(_key(workspace))
        if not isinstance(entry, dict) or not isinstance(entry.get("digest"), str):
            return None
        return TrustDecision(bool(entry.get("trusted")), entry["digest"], str(entry.get("at", "")))

    def is_trusted(self, workspace: Path, digest: str) -> bool:
        found = self.decision(workspace)
        return found is not None and found.trusted and found.digest == digest

    def record(self, workspace: Path, digest: str, *, trusted: bool) -> None:
        """Remember the user's answer for these exact settings of ``workspace``."""
        workspaces = self._read()
        workspaces[_key(workspace)] = {
            "trusted": trusted,
            "digest": digest,
            "at": datetime.now(tz=UTC).isoformat(timespec="seconds"),
        }
        self._write(workspaces)

    def forget(self, workspace: Path) -> bool:
        """Drop the answer for ``workspace``; True when there was one."""
        workspaces = self._read()
        if workspaces.pop(_key(workspace), None) is None:
            return False
        self._write(workspaces)
        return True

    def _write(self, workspaces: dict[str, Any]) -> None:
        text = json.dumps({"version": 1, "workspaces": workspaces}, indent=2, sort_keys=True)
        write_private(self.path, text + "\n")  # 0600 in a 0700 config dir when Arbor makes it


def _key(workspace: Path) -> str:
    return os.path.realpath(workspace)
