"""Wire models of ``_arbor/external/*``: Arbor's backend holding the edits of another ACP agent for review.

When the window drives a foreign agent (Claude Code, Gemini CLI, goose … over ACP), that agent's
``fs/write_text_file`` and ``fs/read_text_file`` requests reach the window, which forwards them here:
``open`` makes a review session in Arbor's own backend (no model), ``write`` puts a file's new text into
its change set (never on disk), ``read`` reads through it (pending edits included). The session id then
works with every ``_arbor/review/*`` method — hunk review, Apply with its checkpoint and commit, Roll back —
exactly as for Arbor's own agent. Paths are absolute, confined to the workspace, secrets refused.

Most agents write with their own tools and shell commands instead, so ``shadow`` opens a review session
whose change set is captured from a shadow workspace (``ide/changes/shadow.py``): the agent gets the
shadow as its cwd, ``read``/``write`` of that session are served from the shadow, ``capture`` diffs it
into the review, ``turn_start`` makes it hold what the user decided and edited since, ``close`` removes it.
"""

from __future__ import annotations

from pydantic import Field

from ide.protocol.method import Method
from ide.protocol.review import ChangeSetView
from ide.protocol.wire import WireModel


class ForeignOpenParams(WireModel):
    cwd: str = Field(description="The workspace (absolute)")
    agent: str = Field("", description="The foreign agent's name, shown as the review's title")


class ForeignSession(WireModel):
    session_id: str = Field(description="Use with _arbor/external/write|read and _arbor/review/*")


class ForeignWriteParams(WireModel):
    session_id: str
    path: str = Field(description="Absolute path inside the workspace")
    content: str


class ForeignReadParams(WireModel):
    session_id: str
    path: str = Field(description="Absolute path inside the workspace")
    line: int | None = Field(None, ge=1, description="First line to return (1-based)")
    limit: int | None = Field(None, ge=1, description="How many lines")


class ForeignText(WireModel):
    content: str


class ForeignShadowParams(WireModel):
    cwd: str = Field(description="The workspace (absolute); the agent is never given it")
    agent: str = Field("", description="The foreign agent's name, shown as the review's title")


class ForeignShadow(WireModel):
    session_id: str = Field(description="The review session: _arbor/external/* and _arbor/review/*")
    cwd: str = Field(description="The shadow workspace: the agent's cwd, and where its fs/* paths point")
    notes: list[str] = Field(default_factory=list, description="What the shadow could not hold, and why")


class ForeignSessionParams(WireModel):
    session_id: str


class ForeignTurnStartParams(WireModel):
    session_id: str
    prompt: str = Field(
        "", description="The prompt the turn starts with: the session's first becomes the commit's subject"
    )


class ForeignCaptureParams(WireModel):
    session_id: str
    workspace: bool = Field(
        False, description="Also list the workspace files changed since the shadow's baseline (a scan)"
    )


class ForeignCapture(WireModel):
    changeset: ChangeSetView = Field(description="The review after the capture")
    skipped: dict[str, str] = Field(
        default_factory=dict, description="Changed paths not captured (links, too large), and why"
    )
    workspace_changed: list[str] = Field(
        default_factory=list,
        description="With workspace: files of the workspace itself that changed since the shadow's baseline "
        "— the user's edits, or an agent writing outside its shadow",
    )
    conflicts: list[str] = Field(
        default_factory=list,
        description="At a turn's start: files the user and the agent both changed, in overlapping lines",
    )
    git_changed: list[str] = Field(
        default_factory=list,
        description="With workspace: what changed in the user's repository's git state during the turn "
        "(HEAD, refs, its config, its hooks), each said in a sentence; Apply refuses while HEAD, the config "
        "or a hook still holds what the turn left",
    )


class ForeignClosed(WireModel):
    removed: bool = Field(description="A shadow was removed (False: the session had none left)")


FOREIGN_OPEN = Method("arbor/external/open", ForeignOpenParams, ForeignSession)
FOREIGN_WRITE = Method("arbor/external/write", ForeignWriteParams, ChangeSetView, timeout_s=120.0)
"""Diffs a whole file into the review."""
FOREIGN_READ = Method("arbor/external/read", ForeignReadParams, ForeignText)
FOREIGN_SHADOW = Method("arbor/external/shadow", ForeignShadowParams, ForeignShadow, timeout_s=600.0)
"""Checks out the whole repository (a large one takes a while)."""
FOREIGN_CAPTURE = Method("arbor/external/capture", ForeignCaptureParams, ForeignCapture, timeout_s=300.0)
"""Reads and diffs every file the agent changed."""
FOREIGN_TURN_START = Method(
    "arbor/external/turn_start", ForeignTurnStartParams, ForeignCapture, timeout_s=300.0
)
FOREIGN_CLOSE = Method("arbor/external/close", ForeignSessionParams, ForeignClosed)
FOREIGN_METHODS = (
    FOREIGN_OPEN,
    FOREIGN_WRITE,
    FOREIGN_READ,
    FOREIGN_SHADOW,
    FOREIGN_CAPTURE,
    FOREIGN_TURN_START,
    FOREIGN_CLOSE,
)
