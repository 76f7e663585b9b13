"""The session's YAML workflows for the window's picker: list them, pick one (``_arbor/workflows/*``); and,
when a client loads a session whose workflow run was interrupted, how to go on with it (``/resume``)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from acp import RequestError, text_block, update_agent_message

from ide.backend.extensions import Handler, Hooks
from ide.protocol import workflow as wf

if TYPE_CHECKING:
    from ide.backend.extensions import Backend, SessionApi


async def list_workflows(backend: Backend, request: wf.WorkflowsParams) -> wf.WorkflowList:
    return await listing(backend.session(request.session_id))


async def select(backend: Backend, request: wf.SelectWorkflowParams) -> wf.WorkflowList:
    """The picker's choice: the same as ``/workflow NAME`` (and the session goes to the workflow mode)."""
    session = backend.session(request.session_id)
    found = await listing(session)
    if request.name != wf.AUTO and request.name not in {w.name for w in found.workflows}:
        known = ", ".join(w.name for w in found.workflows)
        raise RequestError.invalid_params(
            {"message": f"there is no workflow {request.name!r}; there are: {known}"}
        )
    session.choose_workflow(request.name)
    return found.model_copy(update={"selected": session.workflow, "mode": session.mode})


async def listing(session: SessionApi) -> wf.WorkflowList:
    from ide.workflows.fusion import describe_reranker
    from ide.workflows.loader import load_catalog

    catalog = await asyncio.to_thread(load_catalog, Path(session.cwd))
    return wf.WorkflowList(
        workflows=[
            wf.WorkflowInfo(
                name=w.name,
                description=w.metadata.description,
                workflow_type=w.metadata.workflow_type,
                path=str(catalog.origins[w.name]),
                stages=[
                    wf.StageInfo(
                        id=s.key,
                        name=s.name,
                        required=s.required,
                        agents=[a.agent for a in s.parallel_agents],
                    )
                    for s in w.stages
                ],
            )
            for w in catalog.workflows.values()
        ],
        selected=session.workflow,
        mode=session.mode,
        problems=[str(problem) for problem in catalog.problems],
        reranker=describe_reranker(session.settings),
        notices=catalog.notices,
    )


async def offer_resume(backend: Backend, session: SessionApi) -> None:
    """A loaded session whose workflow run stopped before it finished (and runs no turn now) says how to go
    on with it."""
    run = session.interrupted
    if run is None or session.running:
        return
    note = (
        f"The workflow {run.workflow} for “{run.task[:80]}” stopped before it finished. "
        "Send /resume to go on from its last finished step."
    )
    await backend.conn.session_update(session_id=session.id, update=update_agent_message(text_block(note)))


HANDLERS = (Handler(wf.WORKFLOWS_LIST, list_workflows), Handler(wf.WORKFLOWS_SELECT, select))
HOOKS = Hooks(session_load=offer_resume)
