"""Wire models of ``_arbor/external/*``: Arbor's backend holding the edits of another ACP agent for review.

When the window drives a foreign agent (Claude Code, Gemini CLI, goose … over ACP), that agent's
``fs/write_text_file`` and ``fs/read_text_file`` requests reach the window, which forwards them here:
``open`` makes a review session in Arbor's own backend (no model), ``write`` puts a file's new text into
its change set (never on disk), ``read`` reads through it (pending edits included). The session id then
works with every ``_arbor/review/*`` method — hunk review, Apply with its checkpoint and commit, Roll back —
exactly as for Arbor's own agent. Paths are absolute, confined to the workspace, secrets refused.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from ide.protocol.method import Method
from ide.protocol.review import ChangeSetView


class ExternalOpenParams(BaseModel):
    cwd: str = Field(description="The workspace (absolute)")
    agent: str = Field("", description="The foreign agent's name, shown as the review's title")


class ExternalSession(BaseModel):
    session_id: str = Field(description="Use with _arbor/external/write|read and _arbor/review/*")


class ExternalWriteParams(BaseModel):
    session_id: str
    path: str = Field(description="Absolute path inside the workspace")
    content: str


class ExternalReadParams(BaseModel):
    session_id: str
    path: str = Field(description="Absolute path inside the workspace")
    line: int | None = Field(None, ge=1, description="First line to return (1-based)")
    limit: int | None = Field(None, ge=1, description="How many lines")


class ExternalText(BaseModel):
    content: str


EXTERNAL_OPEN = Method("arbor/external/open", ExternalOpenParams, ExternalSession)
EXTERNAL_WRITE = Method("arbor/external/write", ExternalWriteParams, ChangeSetView)
EXTERNAL_READ = Method("arbor/external/read", ExternalReadParams, ExternalText)
EXTERNAL_METHODS = (EXTERNAL_OPEN, EXTERNAL_WRITE, EXTERNAL_READ)
