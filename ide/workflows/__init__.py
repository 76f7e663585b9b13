"""Workflow orchestration: YAML workflows and LangGraph routing (lands with the orchestrator issue)."""
