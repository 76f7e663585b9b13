"""The backend exempts what its first turn left alive from the cycle collector, once (ide/gcpolicy.py): a
real ``arbor acp`` run by a launcher that counts the collector's full passes and reads the frozen count."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import text_block

import tests.support.acp_client as acp_client
from tests.support.react_script import READ_THEN_ANSWER

LAUNCHER = """
import gc, json, sys
frozen_by_turn = []
freeze = gc.freeze

def counted_freeze():
    frozen_by_turn.append("freeze")
    freeze()

gc.freeze = counted_freeze
import ide.backend.agent as agent

prompt = agent.ArborAgent.prompt

async def counted(self, *args, **kwargs):
    try:
        return await prompt(self, *args, **kwargs)
    finally:
        frozen_by_turn.append(gc.get_freeze_count())

agent.ArborAgent.prompt = counted
from ide.cli import main
code = main(["acp"])
with open(sys.argv[1], "w") as out:
    json.dump(frozen_by_turn, out)
sys.exit(code)
"""


async def test_the_first_turn_freezes_what_is_alive_and_later_turns_do_not(
    git_workspace: Path,
    write_script: Callable[[list[dict[str, Any]]], Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    report = tmp_path / "frozen.json"
    monkeypatch.setattr(acp_client, "BACKEND", [sys.executable, "-c", LAUNCHER, str(report)])
    script = write_script(READ_THEN_ANSWER + READ_THEN_ANSWER)
    async with acp_client.acp_backend({"ARBOR_MODEL": f"scripted:{script}"}) as backend:
        session = await backend.conn.new_session(cwd=str(git_workspace), mcp_servers=[])
        for _ in range(2):
            response = await backend.conn.prompt(
                session_id=session.session_id, prompt=[text_block("What does greet return?")]
            )
            assert response.stop_reason == "end_turn"
    freeze, first, second = json.loads(report.read_text())
    # The first turn froze once; the objects LangChain, LangGraph and the ACP schema left, which every full
    # collection walked before, are out of its reach. A later turn froze nothing (its garbage stays
    # collectable).
    assert freeze == "freeze"
    assert first > 100_000 and second > 100_000, (first, second)
