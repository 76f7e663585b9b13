"""Wire models of the workflow extensions (``_arbor/workflows/*``): the window's workflow picker.

``list`` tells what workflows a session can run (and which files could not be loaded, with file and
line), which one the session runs now, and which reranker context fusion uses; ``select`` changes the
session's pick exactly as the ``/workflow NAME`` slash command does, and answers like ``list``.
"""

from __future__ import annotations

from pydantic import Field

from ide.protocol.method import Method
from ide.protocol.wire import WireModel

AUTO = "auto"


class WorkflowsParams(WireModel):
    session_id: str


class SelectWorkflowParams(WireModel):
    session_id: str
    name: str = Field(description=f"A workflow's name, or {AUTO!r}: the orchestrator picks")


class StageInfo(WireModel):
    id: str
    name: str
    required: bool
    agents: list[str] = Field(default_factory=list)


class WorkflowInfo(WireModel):
    name: str
    description: str
    workflow_type: str
    path: str = Field(description="The file it was loaded from")
    stages: list[StageInfo] = Field(default_factory=list)


class WorkflowList(WireModel):
    workflows: list[WorkflowInfo] = Field(default_factory=list)
    selected: str = AUTO
    mode: str = Field("", description="The session's mode (the picker applies in the workflow mode)")
    problems: list[str] = Field(
        default_factory=list, description="Files that could not be loaded: FILE:LINE: …"
    )
    reranker: str = Field("", description="How context fusion ranks snippets, and why")
    notices: list[str] = Field(
        default_factory=list,
        description="Not errors: e.g. a workspace workflow listed as workspace.NAME beside a shipped one",
    )


WORKFLOWS_LIST = Method("arbor/workflows/list", WorkflowsParams, WorkflowList)
WORKFLOWS_SELECT = Method("arbor/workflows/select", SelectWorkflowParams, WorkflowList)
WORKFLOW_METHODS = (WORKFLOWS_LIST, WORKFLOWS_SELECT)
