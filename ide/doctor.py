"""``arbor doctor``: every resolved setting with its source, and the checks that say what to install."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, TextIO

from ide.gitsafe import identity_fix, missing_identity
from ide.llm import ROLES, HealthCheck, ModelError, ModelRouter, ModelSpec, probe_model
from ide.llm.probe import ProbeCache, probe_all
from ide.protocol.model import ModelProbe
from ide.qtplatform import display_problem
from ide.settings import ResolvedSettings, to_toml_value

LANGUAGE_SERVERS = [
    # (language, command, how to install)
    ("Python", "jedi-language-server", "pip install jedi-language-server (an Arbor dependency)"),
    ("Python (optional)", "pyright-langserver", "npm install -g pyright"),
    (
        "TypeScript/JavaScript",
        "typescript-language-server",
        "npm install -g typescript-language-server typescript",
    ),
    ("C/C++", "clangd", "apt-get install clangd"),
    ("Go", "gopls", "go install golang.org/x/tools/gopls@latest"),
    ("Rust", "rust-analyzer", "rustup component add rust-analyzer"),
]


def _which(command: str) -> str | None:
    """A command next to this Python first (a venv's scripts), then on PATH."""
    beside = Path(sys.executable).parent / command
    if beside.exists():
        return str(beside)
    return shutil.which(command)


def _version(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (done.stdout or done.stderr).strip().splitlines()
    return text[0] if done.returncode == 0 and text else None


def window_check() -> HealthCheck:
    """Can Qt open the window here: its libraries (a failure) and a display (not needed by headless use)."""
    problem = display_problem()
    if problem is None:
        return HealthCheck("window (Qt platform)", True, "libraries and display present")
    ok = False if problem.missing else None
    return HealthCheck("window (Qt platform)", ok, problem.message, problem.fix)


def tool_checks() -> list[HealthCheck]:
    """The window's platform, git, ctags and language servers."""
    checks = [window_check()]
    git = _version(["git", "--version"])
    checks.append(
        HealthCheck(
            "git present", git is not None, git or "git not found", None if git else "apt-get install git"
        )
    )
    ctags = _version(["ctags", "--version"])
    universal = ctags is not None and "Universal Ctags" in ctags
    checks.append(
        HealthCheck(
            "universal-ctags present",
            universal,
            ctags or "ctags not found",
            None if universal else "apt-get install universal-ctags",
        )
    )
    for language, command, install in LANGUAGE_SERVERS:
        where = _which(command)
        required = language == "Python"
        checks.append(
            HealthCheck(
                f"{language} language server ({command})",
                True if where else (False if required else None),
                where or "not found",
                None if where else install,
            )
        )
    return checks


def confine_check(required: bool) -> HealthCheck:
    """Whether bubblewrap can confine another agent here (``review.confine_agents``); a failure only when
    that setting is on."""
    from ide.sandbox import INSTALL, bwrap_status

    ok, said = bwrap_status()
    name = "bubblewrap (review.confine_agents)"
    if ok:
        return HealthCheck(name, True, f"{said}: other agents {'are' if required else 'can be'} confined")
    return HealthCheck(name, False if required else None, said, INSTALL)


def confinement_report(required: bool) -> list[str]:
    """What confining another agent covers and what it leaves open, as doctor prints it after its checks."""
    from ide.sandbox import COVERS, NOT_COVERED

    when = "(review.confine_agents = true)" if required else "if review.confine_agents = true"
    lines = [f"Confinement of other agents {when}"]
    lines += ["  covered:", *(f"    {item}" for item in COVERS)]
    lines += ["  not covered:", *(f"    {item}" for item in NOT_COVERED)]
    return lines


def git_identity_check(workspace: Path | None, commit_mode: str = "commit") -> HealthCheck:
    """Whether Apply's commits have an author: ``user.name`` and ``user.email`` in the workspace
    repository's config or the global one (or git's GIT_AUTHOR_*/GIT_COMMITTER_* variables); the check
    itself is :func:`ide.gitsafe.missing_identity`, shared with the Review dock's warning."""
    missing = missing_identity(workspace)
    if missing is None:
        return HealthCheck("git identity", None, "git could not be asked", None)
    if not missing:
        return HealthCheck("git identity", True, "user.name and user.email are set")
    keys = " and ".join(missing)
    unset = f"set neither for {workspace} nor globally" if workspace is not None else "not set globally"
    fix = identity_fix(missing)
    if commit_mode != "commit":
        return HealthCheck("git identity", None, f"{keys} {unset} (review.commit = {commit_mode})", fix)
    return HealthCheck("git identity", False, f"{keys} {unset}: Apply's commit will fail", fix)


async def model_checks(resolved: ResolvedSettings) -> list[HealthCheck]:
    """Probe every distinct model the settings name (the default and each role that overrides it)."""
    router = ModelRouter(resolved.settings)
    checks: list[HealthCheck] = []
    specs: dict[str, ModelSpec] = {}
    for role in ROLES:
        try:
            spec = router.spec_for(role, fallback=False)
        except ModelError as exc:
            checks.append(HealthCheck(f"model for role {role}", False, exc.info.message, exc.info.fix))
            continue
        specs.setdefault(str(spec), spec)
    for text, spec in sorted(specs.items()):
        for check in await probe_model(spec, resolved.settings):
            checks.append(HealthCheck(f"{text}: {check.name}", check.ok, check.detail, check.fix))
    return checks


def _mark(ok: bool | None) -> str:
    return {True: "ok  ", False: "FAIL", None: "--  "}[ok]


def _write_trust(resolved: ResolvedSettings, out: TextIO) -> None:
    """What the workspace's config asks for that needs trust: held back, or applied because trusted."""
    if not resolved.trust_keys:
        return
    where = resolved.workspace or "the workspace"
    if resolved.trusted:
        out.write(f"\nWorkspace trusted ({where}): these settings of its config apply\n")
    else:
        out.write(
            f"\nHeld back until you trust this workspace (arbor trust {where}, or --trust for one run)\n"
        )
    for item in resolved.trust_keys:
        out.write(f"  {item.describe()}\n")
        for command in item.commands():
            out.write(f"      runs: {command}\n")


def _write_python_environment(resolved: ResolvedSettings, out: TextIO) -> None:
    """Which interpreter and import paths the Python language server is given for the workspace."""
    if resolved.workspace is None:
        return
    from ide.codeintel.lsp.environment import environment_report

    out.write("\nPython language server environment\n")
    out.writelines(f"  {line}\n" for line in environment_report(resolved.workspace, resolved))


async def probe_models(resolved: ResolvedSettings) -> list[ModelProbe]:
    """Probe every model the settings use and cache the results in the data dir (for the window)."""
    router = ModelRouter(resolved.settings, base_dir=resolved.workspace)
    return await probe_all(router, ProbeCache(resolved.settings.resolved_data_dir()))


def setting_rows(resolved: ResolvedSettings) -> list[tuple[str, Any, str]]:
    """(key, value, source) as doctor prints them: ``data_dir`` as the path really used, never "(unset)"."""
    rows = []
    for key, value, source in resolved.rows():
        if key == "data_dir":
            value = str(resolved.settings.resolved_data_dir())
            if resolved.settings.data_dir is None:
                from_env = os.environ.get("ARBOR_DATA_DIR")
                source = "env ARBOR_DATA_DIR" if from_env else "default (the platform's user data dir)"
        rows.append((key, value, source))
    return rows


def run_doctor(resolved: ResolvedSettings, out: TextIO, *, probe: bool = False) -> int:
    """Print settings and checks (and with ``probe``, a real request to each model); exit code 1 when a
    required check fails or a model cannot call tools at all."""
    out.write("Settings (value  ← source)\n")
    rows = setting_rows(resolved)
    width = max(len(key) for key, _, _ in rows)
    for key, value, source in rows:
        out.write(f"  {key:<{width}}  {to_toml_value(value)}  ← {source}\n")
    if resolved.files:
        out.write("Config files read: " + ", ".join(str(p) for p in resolved.files) + "\n")
    _write_trust(resolved, out)
    _write_python_environment(resolved, out)
    out.write("\nChecks\n")
    checks = asyncio.run(model_checks(resolved)) + tool_checks()
    checks.append(git_identity_check(resolved.workspace, resolved.settings.review.commit))
    checks.append(confine_check(resolved.settings.review.confine_agents))
    failed = False
    for check in checks:
        out.write(f"  [{_mark(check.ok)}] {check.name}: {check.detail}\n")
        if check.fix and check.ok is not True:
            out.write(f"         fix: {check.fix}\n")
        failed = failed or check.ok is False
    out.write("\n")
    out.writelines(f"{line}\n" for line in confinement_report(resolved.settings.review.confine_agents))
    if probe:
        out.write("\nModel probe (one real tool-call request and one structured request per model)\n")
        for result in asyncio.run(probe_models(resolved)):
            out.write(f"  {result.describe()}\n")
            failed = failed or result.cannot_act
    return 1 if failed else 0
