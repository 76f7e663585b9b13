"""A fake ACP agent that records each prompt as a search tree and streams it in ``_arbor/tree``.

A prompt ``tree N`` sends a synthetic N-node run in batches of 25 events (and one batch for another
session, which the window must ignore), then answers. Tree notifications go only to a client that asked
for them (``_meta.arbor.tree``), as the real backend does. ``session/load`` replays the batches kept in
the JSON file ``$TREE_AGENT_STORE`` (so a restarted agent process still has them).

It serves ``_arbor/tree/branch`` (unless ``$TREE_AGENT_NO_BRANCH`` is set): a change set id ``cs-<node>``
of one of its sessions' runs answers with a one-file ChangeSetView; any other id is refused with a
JSON-RPC error whose message names it.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any
from uuid import uuid4

from acp import (
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    run_agent,
    text_block,
)
from acp import update_agent_message as agent_message
from acp.schema import AgentCapabilities, Implementation

from ide.app.tree.model import synthetic_events
from ide.protocol.review import ChangeSetView, FileChangeView, HunkView
from ide.protocol.tree import BRANCH_DIFF, TREE_NOTIFICATION, BranchDiffParams

BATCH = 25


class TreeAgent:
    def __init__(self) -> None:
        self.store = Path(os.environ.get("TREE_AGENT_STORE", os.devnull))
        self.batches: dict[str, list[dict[str, Any]]] = (
            json.loads(self.store.read_text()) if self.store.is_file() else {}
        )
        self.wants_tree = False

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, **kwargs: Any
    ) -> InitializeResponse:
        meta = (client_capabilities.field_meta or {}) if client_capabilities is not None else {}
        self.wants_tree = bool((meta.get("arbor") or {}).get("tree"))
        arbor = {"version": "0.0-test", "model": "fake:tree", "architectures": ["react"]}
        extensions = (
            [TREE_NOTIFICATION]
            if os.environ.get("TREE_AGENT_NO_BRANCH")
            else [TREE_NOTIFICATION, BRANCH_DIFF]
        )
        return InitializeResponse(
            protocol_version=protocol_version,
            agent_capabilities=AgentCapabilities(
                load_session=True, field_meta={"arbor": {**arbor, "extensions": extensions}}
            ),
            agent_info=Implementation(name="tree-fake", version="1"),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        session_id = uuid4().hex
        self.batches[session_id] = []
        return NewSessionResponse(session_id=session_id)

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
        self.batches.setdefault(session_id, [])
        for params in self.batches[session_id]:
            await self._send(params)
        return LoadSessionResponse()

    async def _send(self, params: dict[str, Any]) -> None:
        if self.wants_tree:
            await self._conn.ext_notification(TREE_NOTIFICATION, params)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = " ".join(getattr(block, "text", "") for block in prompt)
        nodes = int(text.split()[1]) if text.startswith("tree ") else 3
        events = [
            e.model_dump(mode="json", exclude_defaults=True)
            for e in synthetic_events(nodes, run_id=uuid4().hex)
        ]
        for start in range(0, len(events), BATCH):
            params = {"session_id": session_id, "events": events[start : start + BATCH]}
            self.batches[session_id].append(params)
            await self._send(params)
            if start == 0:
                await self._send({"session_id": "someone-else", "events": events[:BATCH]})
        if self.store != Path(os.devnull):
            self.store.write_text(json.dumps(self.batches))
        await self._conn.session_update(
            session_id=session_id, update=agent_message(text_block(f"searched {nodes} nodes"))
        )
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        from acp import RequestError

        if method != BRANCH_DIFF or os.environ.get("TREE_AGENT_NO_BRANCH"):
            raise RequestError.method_not_found(f"_{method}")
        asked = BranchDiffParams.model_validate(params)
        known = {
            event["node"].get("changeset_id")
            for batch in self.batches.get(asked.session_id, [])
            for event in batch["events"]
            if event.get("node")
        }
        if asked.changeset_id not in known:
            raise RequestError.invalid_params(
                {"message": f"no change set {asked.changeset_id} in this session"}
            )
        node = asked.changeset_id.removeprefix("cs-")
        hunk = HunkView(
            id=f"h-{node}",
            header="@@ -1,1 +1,1 @@",
            old_start=1,
            old_count=1,
            new_start=1,
            new_count=1,
            lines=["-x = 1", f"+x = 2  # {node}"],
        )
        file = FileChangeView(
            path=f"src/{node}.py", status="modified", additions=1, deletions=1, hunks=[hunk]
        )
        view = ChangeSetView(session_id=asked.session_id, cwd="/", title=f"branch {node}", files=[file])
        return view.model_dump(mode="json")


if __name__ == "__main__":
    asyncio.run(run_agent(TreeAgent()))
