"""Agent architectures that record their runs as search trees (ReAct now; LATS, ToT, plan later)."""
