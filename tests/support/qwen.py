"""Qwen Code (npm ``@qwen-code/qwen-code``, pinned in tests/interop/package.json) as a real foreign ACP agent,
driven by a scripted OpenAI-compatible endpoint (:mod:`tests.support.fake_openai`).

The script answers by where the conversation is, not by request count, so Qwen's side calls and retries
cannot shift it. For the prompt :data:`MAKE_TASK`: no tool result yet → ``write_file`` of
``made_by_fs.py`` (an absolute path in the cwd the agent was given, read from its prompt), one →
``run_shell_command`` that makes ``made_by_shell.py`` with ``printf``, more → a final answer. For
:data:`LOOK_TASK`: a command listing the files and printing ``hello.py``, then an answer. Qwen's command
classifier (a side call whose only tool is ``respond_in_schema``) is told to block, so Qwen asks the
client's permission before each command.
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
MAKE_TASK = "make two files"
LOOK_TASK = "look at the files"
LOOK_COMMAND = "ls -a; cat hello.py"
LOOKED = "I looked."
SHADOW_CWD = r"/[^\s\"'\\]*arbor-scratch-\d+-shadow-[A-Za-z0-9_]+/ws"
"""A shadow workspace's path (of a workspace named ``ws``) as it appears in what the agent sends."""


def qwen_command(node_peers: Path, base_url: str) -> str:
    """The ``--agent`` command line of Qwen Code in ACP mode against ``base_url``."""
    cli = node_peers / QWEN_CLI
    return (
        f"node {shlex.quote(str(cli))} --acp --auth-type openai --openai-base-url {base_url} "
        f"--openai-api-key test-key -m {MODEL}"
    )


class QwenScript:
    """The ``side`` answerer of a FakeOpenAI that plays the model for Qwen Code; records the cwd it saw."""

    def __init__(self, cwd_pattern: str, shell_command: str = SHELL_COMMAND) -> None:
        self._cwd = re.compile(cwd_pattern)
        self.shell_command = shell_command
        """What the model asks Qwen's ``run_shell_command`` to run in the first task."""
        self.cwds: set[str] = set()
        """Every path matching ``cwd_pattern`` that appeared in what Qwen sent the model."""

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        tools = [tool["function"]["name"] for tool in body.get("tools") or []]
        messages = body.get("messages") or []
        text = json.dumps(messages)
        self.cwds.update(self._cwd.findall(text.replace("\\/", "/")))
        if tools == ["respond_in_schema"]:
            return {"tool_calls": [{"name": "respond_in_schema", "args": {"shouldBlock": True}}]}
        if "write_file" not in tools:
            return {"content": "ok"}
        task, results = _turn(messages)
        if task == LOOK_TASK:
            if results == 0:
                args = {"command": LOOK_COMMAND, "description": "look", "is_background": False}
                return {"tool_calls": [{"name": "run_shell_command", "args": args}]}
            return {"content": LOOKED}
        if results == 0:
            found = self._cwd.search(text)
            cwd = found.group(0) if found else "/nonexistent"
            args = {"file_path": f"{cwd}/{FS_FILE}", "content": FS_TEXT}
            return {"tool_calls": [{"name": "write_file", "args": args}]}
        if results == 1:
            args = {"command": self.shell_command, "description": "make a file", "is_background": False}
            return {"tool_calls": [{"name": "run_shell_command", "args": args}]}
        return {"content": DONE}


def _turn(messages: list[dict[str, Any]]) -> tuple[str, int]:
    """The task of the turn in progress (the last user message naming one) and the tool results since."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") != "user":
            continue
        said = json.dumps(message.get("content"))
        for task in (LOOK_TASK, MAKE_TASK):
            if task in said:
                return task, sum(1 for later in messages[index:] if later.get("role") == "tool")
    return MAKE_TASK, sum(1 for message in messages if message.get("role") == "tool")


def tool_outputs(bodies: list[dict[str, Any]], command: str = "") -> list[str]:
    """The tool results the agent sent the model (each once), those of ``command`` only when given."""
    found = dict.fromkeys(
        json.dumps(message.get("content"))
        for body in bodies
        for message in body.get("messages") or []
        if message.get("role") == "tool"
    )
    return [text for text in found if command in text]
