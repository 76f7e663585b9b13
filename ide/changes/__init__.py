"""Change sets, review decisions, git checkpoints and rollback (lands with the review issue)."""
