"""Agent architectures (ReAct, LATS, Tree of Thoughts, plan/execute/replan) that record search trees."""
