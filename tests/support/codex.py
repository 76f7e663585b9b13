"""Codex (npm ``@zed-industries/codex-acp``, pinned in tests/interop/package.json: Zed's ACP adapter around
the Codex Rust core, its linux-x64 binary an npm optional dependency) as a real foreign ACP agent, driven by
a scripted Responses API endpoint (``/v1/responses`` of :mod:`tests.support.fake_openai`).

Codex is pointed at it with a custom model provider (``wire_api = "responses"``: this Codex refuses
``"chat"``). For a model it has no metadata for, Codex offers no ``apply_patch`` tool and tells the model to
edit files by running ``apply_patch`` through ``exec_command``; Codex catches that command and applies the
patch itself, as an edit (an ACP tool call of kind ``edit`` with its own permission request), not as a
shell command. The script answers by where the turn is: no tool output yet → that ``apply_patch`` adding
``made_by_patch.py``, one → a ``printf`` command making ``made_by_shell.py``, more → a final answer.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

CODEX_ACP = Path("node_modules") / "@zed-industries" / "codex-acp" / "bin" / "codex-acp.js"
CODEX_BINARY = Path("node_modules") / "@zed-industries" / "codex-acp-linux-x64" / "bin" / "codex-acp"
"""The platform binary the launcher runs; an npm optional dependency, so a failed download leaves it out."""
MODEL = "local-model"
PATCH_FILE = "made_by_patch.py"
PATCH_TEXT = "print('written by apply_patch')\n"
PATCH = f"*** Begin Patch\n*** Add File: {PATCH_FILE}\n+{PATCH_TEXT}*** End Patch\n"
SHELL_FILE = "made_by_shell.py"
SHELL_TEXT = "print('written by a shell command')\n"
SHELL_COMMAND = f"printf '%s' {shlex.quote(SHELL_TEXT)} > {SHELL_FILE}"
DONE = "Both files are made."
MAKE_TASK = "make two files"


def codex_command(node_peers: Path, base_url: str) -> str:
    """The ``--agent`` command line of codex-acp against ``base_url``.

    The provider has no ``env_key``, so Codex asks for no login. ``danger-full-access`` leaves out Codex's own
    sandbox (bubblewrap with a ``codex-linux-sandbox`` helper Codex will not create under /tmp: every command
    then fails); ``untrusted`` makes it ask the client's permission before each command and edit.
    """
    launcher = node_peers / CODEX_ACP
    settings = {
        "model_provider": "scripted",
        "model_providers.scripted.name": "scripted",
        "model_providers.scripted.base_url": base_url,
        "model_providers.scripted.wire_api": "responses",
        "model_providers.scripted.request_max_retries": "0",
        "model_providers.scripted.stream_max_retries": "0",
        "model": MODEL,
        "sandbox_mode": "danger-full-access",
        "approval_policy": "untrusted",
    }
    overrides = " ".join(f"-c {shlex.quote(f'{key}={value}')}" for key, value in settings.items())
    return f"node {shlex.quote(str(launcher))} {overrides}"


class CodexScript:
    """The ``side`` answerer of a FakeOpenAI that plays the model for Codex; records the cwd it saw."""

    def __init__(self, cwd_pattern: str, shell_command: str = SHELL_COMMAND) -> None:
        self._cwd = re.compile(cwd_pattern)
        self.shell_command = shell_command
        """What the model asks ``exec_command`` to run after the patch."""
        self.cwds: set[str] = set()
        """Every path matching ``cwd_pattern`` that appeared in what Codex sent the model."""

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        items = body.get("input") or []
        self.cwds.update(self._cwd.findall(json.dumps(items).replace("\\/", "/")))
        users = [index for index, item in enumerate(items) if item.get("role") == "user"]
        since = items[users[-1] if users else 0 :]
        outputs = sum(1 for item in since if item.get("type") == "function_call_output")
        if outputs == 0:
            return {
                "tool_calls": [
                    {"name": "exec_command", "args": {"cmd": f"apply_patch <<'EOF'\n{PATCH}EOF\n"}}
                ]
            }
        if outputs == 1:
            return {"tool_calls": [{"name": "exec_command", "args": {"cmd": self.shell_command}}]}
        return {"content": DONE}


def tool_outputs(bodies: list[dict[str, Any]]) -> list[str]:
    """The tool outputs Codex sent the model (each once), in order."""
    found = dict.fromkeys(
        str(item.get("output"))
        for body in bodies
        for item in body.get("input") or []
        if item.get("type") == "function_call_output"
    )
    return list(found)
