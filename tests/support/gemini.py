"""Gemini CLI (npm ``@google/gemini-cli``, pinned in tests/interop/package.json) as a real foreign ACP agent,
driven by a scripted Gemini API endpoint (:mod:`tests.support.fake_gemini`).

Gemini CLI reaches the endpoint as a user points it at a gateway: ``GOOGLE_GEMINI_BASE_URL`` and
``GEMINI_API_KEY`` in its environment, which an agent gets only from its ``[agents]`` entry (``env`` or
``pass_env``: :mod:`ide.childenv`). A model named on its command line (``-m``) spares the side call that
routes each prompt to a model (a structured answer from another model, retried with backoff when it is not
one); ``$HOME/.gemini/settings.json`` turns its usage statistics off, so it reaches nothing but the endpoint.

Its ``write_file`` (``file_path`` + ``content``) first reads the path through ``fs/read_text_file`` (for the
diff it shows), asks the client's permission (``Writing to NAME``), then writes through
``fs/write_text_file``. The script answers by where the turn is: no function response yet → ``write_file``
of a path in the cwd the agent told the model, one → :data:`DONE`.

**A new file.** Gemini CLI goes on after a failed read only when it takes the error for "missing":
``normalizeFileSystemError`` looks for "Resource not found", "ENOENT", "does not exist" or "No such file" in
``err instanceof Error ? err.message : String(err)``. But it bundles the ACP SDK 0.16.1, which rejects a
client's JSON-RPC error with the bare ``{code, message, data}`` object, not an ``Error``, so what it reads is
"[object Object]": no error a client can send counts. Zed answers a missing path inside the project with an
empty new buffer, and so does Arbor (empty text), which is how Gemini CLI makes a new file through either
(it then says "Successfully overwrote file").
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ide.settings import AgentServerSettings
from tests.support.fake_gemini import GeminiRequest

GEMINI_CLI = Path("node_modules") / "@google" / "gemini-cli" / "bundle" / "gemini.js"
MODEL = "gemini-2.5-flash"
NEW_FILE = "made_by_gemini.py"
NEW_TEXT = "print('a new file, written by Gemini CLI')\n"
EDITED_TEXT = 'print("hello, rewritten by Gemini CLI")\n'
DONE = "The file is written."
MAKE_TASK = "make a new file"
EDIT_TASK = "rewrite hello.py"
SETTINGS = {"privacy": {"usageStatisticsEnabled": False}}
"""Gemini CLI's user settings for the tests: no usage statistics (without this it looks up Google's hosts)."""


@pytest.fixture
def gemini_peers(node_peers: Path) -> Path:
    """``node_peers`` (tests/interop/conftest.py), or a skip when Gemini CLI is not installed there."""
    if not (node_peers / GEMINI_CLI).exists():
        pytest.skip("Gemini CLI is not installed: run npm install in tests/interop")
    return node_peers


def gemini_command(node_peers: Path) -> list[str]:
    """The command line of Gemini CLI in ACP mode (``--acp``; ``--experimental-acp`` is its deprecated
    name in 0.61)."""
    return ["node", str(node_peers / GEMINI_CLI), "--acp", "-m", MODEL]


def gemini_env(base_url: str) -> dict[str, str]:
    """What Gemini CLI's ``[agents]`` entry sets: the endpoint and a key (the fake wants one)."""
    return {"GOOGLE_GEMINI_BASE_URL": base_url, "GEMINI_API_KEY": "test-key"}


def gemini_entry(node_peers: Path, base_url: str) -> str:
    """The user's ``[agents.gemini]`` entry (config.toml) running Gemini CLI against ``base_url``."""
    command, *args = gemini_command(node_peers)
    env = ", ".join(f"{name} = {json.dumps(value)}" for name, value in gemini_env(base_url).items())
    return f"[agents.gemini]\ncommand = {json.dumps(command)}\nargs = {json.dumps(args)}\nenv = {{ {env} }}\n"


def gemini_settings(node_peers: Path, base_url: str, home: Path) -> AgentServerSettings:
    """:func:`gemini_entry` as the window reads it, with ``HOME`` = ``home`` among its variables."""
    command, *args = gemini_command(node_peers)
    return AgentServerSettings(command=command, args=args, env={**gemini_env(base_url), "HOME": str(home)})


def gemini_home(parent: Path) -> Path:
    """A ``$HOME`` for Gemini CLI holding :data:`SETTINGS`."""
    home = parent / "gemini-home"
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(SETTINGS))
    return home


class GeminiScript:
    """The ``side`` answerer of a FakeGemini that plays the model for Gemini CLI: ``write_file`` of ``path``
    (relative to the cwd the agent told the model) with ``text``, then :data:`DONE`. Records the cwd it saw
    and what Gemini CLI answered the call."""

    def __init__(
        self, cwd_pattern: str, task: str = MAKE_TASK, path: str = NEW_FILE, text: str = NEW_TEXT
    ) -> None:
        self._cwd = re.compile(cwd_pattern)
        self.task, self.path, self.text = task, path, text
        self.cwds: set[str] = set()
        """Every path matching ``cwd_pattern`` that appeared in what Gemini CLI sent the model."""
        self.responses: list[str] = []
        """The function responses Gemini CLI sent back (each once), in order."""

    def __call__(self, request: GeminiRequest) -> dict[str, Any]:
        contents = request.body.get("contents") or []
        text = json.dumps(contents).replace("\\/", "/")
        self.cwds.update(self._cwd.findall(text))
        if "write_file" not in request.tools:
            return {"content": "ok", "json": {}}  # a side call (none is expected with -m): say little
        since = _since_task(contents, self.task)
        self.responses += [response for response in since if response not in self.responses]
        if not since:
            found = self._cwd.search(text)
            cwd = found.group(0) if found else "/nonexistent"
            args = {"file_path": f"{cwd}/{self.path}", "content": self.text}
            return {"tool_calls": [{"name": "write_file", "args": args}]}
        return {"content": DONE}


def _since_task(contents: list[dict[str, Any]], task: str) -> list[str]:
    """The function responses (as JSON) after the last user turn naming ``task``."""
    start = 0
    for index, content in enumerate(contents):
        if content.get("role") == "user" and task in json.dumps(content.get("parts")):
            start = index
    return [
        json.dumps(part["functionResponse"])
        for content in contents[start:]
        for part in content.get("parts") or []
        if "functionResponse" in part
    ]
