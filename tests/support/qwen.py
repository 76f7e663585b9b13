"""Qwen Code (npm ``@qwen-code/qwen-code``, pinned in tests/interop/package.json) as a real foreign ACP agent,
driven by a scripted OpenAI-compatible endpoint (:mod:`tests.support.fake_openai`).

The script answers by where the conversation is, not by request count, so Qwen's side calls and retries
cannot shift it: no tool result yet → ``write_file`` of ``made_by_fs.py`` (an absolute path in the cwd the
agent was given, read from its prompt), one → ``run_shell_command`` that makes ``made_by_shell.py`` with
``printf``, more → a final answer. Qwen's command classifier (a side call whose only tool is
``respond_in_schema``) is told to block, so Qwen asks the client's permission before the command runs.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

QWEN_CLI = Path("node_modules") / "@qwen-code" / "qwen-code" / "cli.js"
MODEL = "local-model"
FS_FILE = "made_by_fs.py"
FS_TEXT = "print('written through fs/write_text_file')\n"
SHELL_FILE = "made_by_shell.py"
SHELL_TEXT = "print('written by a shell command')\n"
SHELL_COMMAND = f"printf '%s' {shlex.quote(SHELL_TEXT)} > {SHELL_FILE}"
DONE = "Both files are made."


def qwen_command(node_peers: Path, base_url: str) -> str:
    """The ``--agent`` command line of Qwen Code in ACP mode against ``base_url``."""
    cli = node_peers / QWEN_CLI
    return (
        f"node {shlex.quote(str(cli))} --acp --auth-type openai --openai-base-url {base_url} "
        f"--openai-api-key test-key -m {MODEL}"
    )


class QwenScript:
    """The ``side`` answerer of a FakeOpenAI that plays the model for Qwen Code; records the cwd it saw."""

    def __init__(self, cwd_pattern: str) -> None:
        self._cwd = re.compile(cwd_pattern)
        self.cwds: set[str] = set()
        """Every path matching ``cwd_pattern`` that appeared in what Qwen sent the model."""

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        tools = [tool["function"]["name"] for tool in body.get("tools") or []]
        text = json.dumps(body.get("messages") or [])
        self.cwds.update(self._cwd.findall(text.replace("\\/", "/")))
        if tools == ["respond_in_schema"]:
            return {"tool_calls": [{"name": "respond_in_schema", "args": {"shouldBlock": True}}]}
        if "write_file" not in tools:
            return {"content": "ok"}
        results = sum(1 for message in body.get("messages") or [] if message.get("role") == "tool")
        if results == 0:
            found = self._cwd.search(text)
            cwd = found.group(0) if found else "/nonexistent"
            return {
                "tool_calls": [
                    {"name": "write_file", "args": {"file_path": f"{cwd}/{FS_FILE}", "content": FS_TEXT}}
                ]
            }
        if results == 1:
            args = {"command": SHELL_COMMAND, "description": "make a file", "is_background": False}
            return {"tool_calls": [{"name": "run_shell_command", "args": args}]}
        return {"content": DONE}
