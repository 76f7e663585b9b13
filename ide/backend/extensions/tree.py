"""The search tree: events streamed as ``_arbor/tree`` and one branch's changes (``_arbor/tree/branch``)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from acp import RequestError

from ide.backend.extensions import Handler
from ide.protocol.review import ChangeSetView
from ide.protocol.tree import BRANCH_DIFF, TREE_NOTIFICATION, BranchDiffParams

if TYPE_CHECKING:
    from ide.backend.extensions import Backend


async def branch_diff(backend: Backend, request: BranchDiffParams) -> ChangeSetView:
    """The proposed changes of one search branch, read-only (for the tree view's inspector)."""
    from ide.changes import Review

    session = backend.session(request.session_id)
    branch = session.branch(request.changeset_id)
    if branch is None:
        raise RequestError.invalid_params(
            {
                "message": f"branch {request.changeset_id} is not held by this backend: it keeps the "
                "branches of a live session's last runs only"
            }
        )
    batches = backend.services.batches(session.cwd, session.settings)
    view = Review(branch, session_id=session.id, title="branch", store=batches)
    return await asyncio.to_thread(view.view)


HANDLERS = (Handler(BRANCH_DIFF, branch_diff),)
NOTIFICATIONS = (TREE_NOTIFICATION,)
