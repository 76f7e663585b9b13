"""An ACP agent that is not Arbor and lets its client set two config options, as codex-acp does: a select
(``model``, its values in two groups) and a boolean (``fast``). A set is recorded (one JSON line per set in
the file given as the first argument), answered with the options after it and told with a
``config_option_update``; a model named ``refused`` is refused. A prompt ``flip`` makes the agent turn
``fast`` itself and tell it with an update.

    python options_agent.py [RECORD_FILE]
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any
from uuid import uuid4

from acp import (
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    SetSessionConfigOptionResponse,
    run_agent,
)
from acp.schema import (
    ConfigOptionUpdate,
    Implementation,
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectGroup,
    SessionConfigSelectOption,
)

MODELS = {"Local": ["small", "large"], "Remote": ["cloud", "refused"]}


class OptionsAgent:
    def __init__(self, record: Path | None) -> None:
        self.record = record
        self.model, self.fast = "small", False

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    def options(self) -> list[SessionConfigOptionSelect | SessionConfigOptionBoolean]:
        groups = [
            SessionConfigSelectGroup(
                group=group.lower(),
                name=group,
                options=[
                    SessionConfigSelectOption(value=m, name=m.title(), description=f"{m} model")
                    for m in models
                ],
            )
            for group, models in MODELS.items()
        ]
        return [
            SessionConfigOptionSelect(
                type="select",
                id="model",
                name="Model",
                description="The model answering",
                category="model",
                current_value=self.model,
                options=groups,
            ),
            SessionConfigOptionBoolean(
                type="boolean", id="fast", name="Fast", description="Answer quickly", current_value=self.fast
            ),
        ]

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=protocol_version, agent_info=Implementation(name="options", version="1")
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id=uuid4().hex, config_options=self.options())

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        if self.record is not None:
            with self.record.open("a") as out:
                out.write(json.dumps({"id": config_id, "value": value}) + "\n")
        if config_id == "model" and value == "refused":
            raise RequestError.invalid_params({"message": "that model is not available"})
        if config_id == "model" and isinstance(value, str):
            self.model = value
        elif config_id == "fast" and isinstance(value, bool):
            self.fast = value
        else:
            raise RequestError.invalid_params({"message": f"no option {config_id}"})
        await self._tell(session_id)
        return SetSessionConfigOptionResponse(config_options=self.options())

    async def _tell(self, session_id: str) -> None:
        update = ConfigOptionUpdate(session_update="config_option_update", config_options=self.options())
        await self._conn.session_update(session_id=session_id, update=update)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        if any(getattr(block, "text", "") == "flip" for block in prompt):
            self.fast = not self.fast
            await self._tell(session_id)
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None


if __name__ == "__main__":
    asyncio.run(run_agent(OptionsAgent(Path(sys.argv[1]) if len(sys.argv) > 1 else None)))
