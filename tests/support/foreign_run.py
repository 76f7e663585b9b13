"""``arbor run --agent`` as a subprocess, as a user runs another ACP agent in a shadow of the workspace."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def arbor_agent_run(
    workspace: Path, agent: str, task: str, *flags: str, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """``python -m ide run --workspace W --agent AGENT FLAGS… TASK`` with ``env`` over this environment."""
    return subprocess.run(
        [sys.executable, "-m", "ide", "run", "--workspace", str(workspace), "--agent", agent, *flags, task],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
