"""Workflow orchestration: YAML workflows, orchestrator, plan, LangGraph routing, retrieval, fusion."""
