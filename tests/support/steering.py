"""Steering from the tree in tests: a session's runs and their nodes (``_arbor/tree/runs``), continuing from a
node (``_arbor/tree/fork``), and what a simulated OpenAI-compatible server (tests/support/fake_openai.py)
was asked, message by message."""

from __future__ import annotations

import json
import threading
from typing import Any

from ide.client import agentconn
from ide.protocol import steer as st
from ide.protocol.tree import TreeEvent
from ide.search import tot_prompts as tp
from tests.support.acp_client import RecordingClient, tree_events
from tests.support.fake_openai import FakeOpenAI

FAREWELL = {"path": "pkg/farewell.py", "content": "def bye():\n    return 1\n"}
GREET_EDIT = {"path": "pkg/greet.py", "old_text": "Hello", "new_text": "Hi"}
README_EDIT = {"path": "README.md", "old_text": "Says hello.", "new_text": "Says hi."}


def openai_env(server: FakeOpenAI) -> dict[str, str]:
    """A backend's environment whose every model role asks ``server``."""
    return {
        "ARBOR_MODEL": "openai:local-model",
        "ARBOR_LLM_OPENAI_BASE_URL": server.url,
        "OPENAI_API_KEY": "sk-test",
    }


def calls(*tool_calls: tuple[str, dict[str, Any]], content: str = "") -> dict[str, Any]:
    """A simulated reply calling ``(name, args)`` tools."""
    return {"content": content, "tool_calls": [{"name": name, "args": args} for name, args in tool_calls]}


async def run_list(conn: Any, session_id: str, run_id: str | None = None) -> list[st.RunSummary]:
    result = await agentconn.call(conn, st.RUNS, st.RunsParams(session_id=session_id, run_id=run_id))
    return result.runs


async def fork(
    conn: Any, session_id: str, run_id: str, node_id: str, mode: str | None = None
) -> st.ForkResult:
    params = st.ForkParams(session_id=session_id, run_id=run_id, node_id=node_id, mode=mode)
    return await agentconn.call(conn, st.FORK, params)


def node(run: st.RunSummary, kind: str, label: str = "") -> st.NodeSummary:
    """The one node of ``kind`` whose label starts with ``label``."""
    [found] = [n for n in run.nodes if n.kind == kind and n.label.startswith(label)]
    return found


def conversation(body: dict[str, Any]) -> list[tuple[str, str]]:
    """A chat request's messages but the system ones, each as (role, what it says: its text, else its
    tool calls as ``name(args)``)."""
    said = []
    for message in body["messages"]:
        if message["role"] == "system":
            continue
        content = message.get("content") or ""
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        for call in message.get("tool_calls") or []:
            function = call["function"]
            content += f"{function['name']}({json.dumps(json.loads(function['arguments']), sort_keys=True)})"
        said.append((message["role"], content))
    return said


def first_events(client: RecordingClient) -> list[TreeEvent]:
    """The first event of each run the client was sent, in order."""
    return [event for event in tree_events(client) if event.seq == 1]


def unroled(line: dict[str, Any]) -> dict[str, Any]:
    """A scripted line (tests/support/*_script.py) as a simulated server's reply: without its role."""
    return {key: value for key, value in line.items() if key != "role"}


class ByRole:
    """A simulated server's ``side``: answers each Tree-of-Thoughts agent's requests (known by its system
    prompt) with that role's scripted lines in order — its agents ask concurrently, so the order the
    server takes requests in says nothing. Other requests are left to the server's script."""

    def __init__(self, lines: list[dict[str, Any]]) -> None:
        self.lines: dict[str, list[dict[str, Any]]] = {}
        for line in lines:
            self.lines.setdefault(line["role"], []).append(unroled(line))
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> dict[str, Any] | None:
        prompts = {
            tp.PLANNER: tp.PLANNER_PROMPT,
            tp.RESEARCHER: tp.RESEARCHER_PROMPT,
            tp.ANALYZER: tp.ANALYZER_PROMPT,
            tp.CRITIC: tp.CRITIC_PROMPT,
            tp.COORDINATOR: tp.COORDINATOR_PROMPT,
            tp.SYNTHESIZER: tp.SYNTHESIZER_PROMPT,
        }
        system = str((body.get("messages") or [{}])[0].get("content") or "")
        for role, prompt in prompts.items():
            if system.startswith(prompt.split("{")[0]):
                with self.lock:
                    queue = self.lines.get(role) or []
                    return queue.pop(0) if queue else None
        return None
