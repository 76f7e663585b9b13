"""Scripted-model helpers of the model-layer tests: settings for the simulated model, a structured answer."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from ide.settings import Settings

MODEL = "qwen2.5-coder:7b"


def make_settings(host: str = "http://127.0.0.1:9", **llm: Any) -> Settings:
    """Settings for the simulated model (qwen2.5-coder: text tool calls and all), whatever the default."""
    settings = Settings()
    settings.llm.ollama_host = host
    settings.llm.model = f"ollama:{MODEL}"
    for key, value in llm.items():
        setattr(settings.llm, key, value)
    return settings


class Verdict(BaseModel):
    score: float = Field(ge=0, le=10)
    reason: str
