"""A fake ACP agent with Arbor's review extension over an in-memory change set (``--standard``: without it).

A prompt ``edit N`` proposes edits to N files: each streams as a standard ``tool_call`` with ``diff``
content, and (unless ``--standard``) the turn ends with an ``_arbor/changeset`` notification. The
``_arbor/review/*`` requests act on the in-memory change set. Every request it receives is appended as
a JSON line to ``$REVIEW_AGENT_LOG``, so tests can check what really crossed the wire. A file named in
``$REVIEW_AGENT_CONFLICT`` comes back from apply as a conflict. With ``$REVIEW_AGENT_LATE_CHANGESET`` set, a
change-set query made before any edit is answered only after the next turn's change set was pushed (a
slow answer overtaken by a turn).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

from acp import InitializeResponse, NewSessionResponse, PromptResponse, run_agent, text_block
from acp import update_agent_message as agent_message
from acp.schema import AgentCapabilities, FileEditToolCallContent, Implementation, ToolCallStart

from ide.app.review.diffs import local_file_change
from ide.protocol.review import (
    REVIEW_METHODS,
    ApplyResult,
    BatchView,
    ChangeSetView,
    ConflictView,
    DecideParams,
    RollbackParams,
    RollbackResult,
)

STANDARD = "--standard" in sys.argv


def sample_file(index: int, lines: int = 40) -> tuple[str, str, str]:
    """Path, old text and new text of the index-th sample file: edits every tenth line (four hunks)."""
    path = f"src/mod_{index:03d}.py"
    old = [f"def f{n}(x):\n    return x + {n}\n" for n in range(lines)]
    new = list(old)
    for n in range(0, lines, 10):
        new[n] = f"def f{n}(x, y=0):\n    return x + y + {n}\n"
    return path, "".join(old), "".join(new)


class ReviewAgent:
    def __init__(self) -> None:
        self.cwd = ""
        self.changeset: ChangeSetView | None = None
        self.batches: list[BatchView] = []
        self.pushed = asyncio.Event()

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    def log(self, method: str, params: dict[str, Any]) -> None:
        target = os.environ.get("REVIEW_AGENT_LOG")
        if target:
            with open(target, "a") as out:
                out.write(json.dumps({"method": method, "params": params}) + "\n")

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        meta = None
        if not STANDARD:
            meta = {
                "arbor": {
                    "version": "0.0-test",
                    "model": "fake:review",
                    "architectures": ["react"],
                    "extensions": REVIEW_METHODS,
                }
            }
        return InitializeResponse(
            protocol_version=protocol_version,
            agent_capabilities=AgentCapabilities(field_meta=meta),
            agent_info=Implementation(name="review-fake", version="1"),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        self.cwd = cwd
        return NewSessionResponse(session_id=uuid4().hex)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = " ".join(getattr(block, "text", "") for block in prompt)
        self.log("session/prompt", {"text": text})
        if not text.startswith("edit "):
            await self._conn.session_update(
                session_id=session_id, update=agent_message(text_block(f"noted: {text}"))
            )
            return PromptResponse(stop_reason="end_turn")
        files = []
        for index in range(int(text.split()[1])):
            path, old, new = sample_file(index)
            await self._conn.session_update(
                session_id=session_id,
                update=ToolCallStart(
                    session_update="tool_call",
                    tool_call_id=f"edit-{index}",
                    title=f"edit_file {path}",
                    kind="edit",
                    status="completed",
                    content=[
                        FileEditToolCallContent(
                            type="diff", path=os.path.join(self.cwd, path), old_text=old, new_text=new
                        )
                    ],
                ),
            )
            files.append(local_file_change(path, old, new))
        self.changeset = ChangeSetView(session_id=session_id, cwd=self.cwd, title=text, files=files)
        if not STANDARD:
            await self._conn.ext_notification("arbor/changeset", self.changeset.model_dump(mode="json"))
            self.pushed.set()
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        from acp import RequestError

        self.log(method, params)
        if STANDARD or method not in REVIEW_METHODS:
            raise RequestError.method_not_found(f"_{method}")
        if method == "arbor/review/history":
            return {"batches": [batch.model_dump(mode="json") for batch in reversed(self.batches)]}
        if method == "arbor/review/rollback":
            return self.rollback(RollbackParams.model_validate(params)).model_dump(mode="json")
        if self.changeset is None and method == "arbor/review/changeset":
            if os.environ.get("REVIEW_AGENT_LATE_CHANGESET"):
                await self.pushed.wait()
            # As Arbor's backend answers before a turn made any edit: an empty change set, not an error
            # (an error here, arriving late, raced the tests that wait for a refused request's banner).
            return ChangeSetView(session_id=params.get("session_id", ""), cwd=self.cwd).model_dump(
                mode="json"
            )
        if self.changeset is None:
            raise RequestError.invalid_params({"message": "no change set in this session"})
        if params.get("session_id", self.changeset.session_id) != self.changeset.session_id:
            raise RequestError.invalid_params({"message": f"unknown session {params['session_id']}"})
        if method == "arbor/review/decide":
            self.decide(DecideParams.model_validate(params))
        elif method == "arbor/review/apply":
            return self.apply().model_dump(mode="json")
        return self.changeset.model_dump(mode="json")

    def decide(self, params: DecideParams) -> None:
        assert self.changeset is not None
        for file in self.changeset.files:
            for hunk in file.hunks:
                if params.all or hunk.id in params.hunk_ids or file.path in params.paths:
                    hunk.decision = params.decision
                    if params.comment is not None:
                        hunk.comment = params.comment

    def apply(self) -> ApplyResult:
        assert self.changeset is not None
        conflict_path = os.environ.get("REVIEW_AGENT_CONFLICT")
        written, conflicts, remaining = [], [], []
        for file in self.changeset.files:
            accepted = [hunk for hunk in file.hunks if hunk.decision == "accepted"]
            pending = [hunk for hunk in file.hunks if hunk.decision == "pending"]
            if accepted and file.path == conflict_path:
                merged = "<<<<<<< yours\nuser line\n=======\nagent line\n>>>>>>> arbor\n"
                conflicts.append(ConflictView(path=file.path, message="changed on disk", merged=merged))
                remaining.append(file.model_copy(update={"conflict": "changed on disk"}))
                continue
            if accepted:
                written.append(file.path)
            if pending:
                remaining.append(file.model_copy(update={"hunks": pending}))
        batch = None
        if written:
            batch = BatchView(
                id=f"b{len(self.batches) + 1}",
                session_id=self.changeset.session_id,
                cwd=self.cwd,
                created_at=datetime.now(UTC).isoformat(timespec="seconds"),
                message=self.changeset.title or "",
                paths=written,
                commit="c0ffee" * 6 + "abcd",
            )
            self.batches.append(batch)
        self.changeset = self.changeset.model_copy(update={"files": remaining})
        return ApplyResult(batch=batch, conflicts=conflicts, changeset=self.changeset)

    def rollback(self, params: RollbackParams) -> RollbackResult:
        from acp import RequestError

        for batch in self.batches:
            if batch.id == params.batch_id and not batch.rolled_back:
                batch.rolled_back = True
                return RollbackResult(batch=batch, restored=batch.paths)
        raise RequestError.invalid_params({"message": f"no applied batch {params.batch_id}"})


if __name__ == "__main__":
    asyncio.run(run_agent(ReviewAgent()))
