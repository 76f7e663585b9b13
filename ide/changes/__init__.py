"""Change sets (the agent's edits as an overlay), review decisions, apply with checkpoints, and rollback."""

from ide.changes.overlay import ChangeError, ChangeSet
from ide.changes.review import Review
from ide.changes.rollback import rollback_batch
from ide.changes.store import BatchStore
from ide.changes.worktree import prune_stale_worktrees, scratch_worktree

__all__ = [
    "BatchStore",
    "ChangeError",
    "ChangeSet",
    "Review",
    "prune_stale_worktrees",
    "rollback_batch",
    "scratch_worktree",
]
