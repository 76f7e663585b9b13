"""A tiny CLI agent for ``arbor eval --agent`` tests (stdlib only): ``python eval_agent.py BASE_URL MODEL
TASK`` asks an OpenAI-compatible server once, streamed, prints the answer as it comes, and writes every
block of the answer shaped ``FILE: path`` + a block fenced with four backticks into that file (relative to
its working directory, the shadow). It asks for the server's usage itself and prints it to stderr as
``usage: IN OUT``, so a test can hold the metering proxy's count against what the server told the agent.

``--max-tokens=N`` caps the answer. ``--no-usage`` leaves ``stream_options`` out (the proxy must still
count from the server, and must not pass back a usage chunk the agent did not ask for: it exits 3 if one
comes).
"""

from __future__ import annotations

import json
import re
import sys
import urllib.request
from pathlib import Path

BLOCK = re.compile(r"FILE: (?P<path>\S+)\n````\n(?P<body>.*?)````", re.S)


def main(argv: list[str]) -> int:
    ask_usage = "--no-usage" not in argv
    caps = [int(a.split("=", 1)[1]) for a in argv if a.startswith("--max-tokens=")]
    base_url, model, task = [a for a in argv if a != "--no-usage" and not a.startswith("--max-tokens=")]
    body: dict[str, object] = {
        "model": model,
        "stream": True,
        "messages": [{"role": "user", "content": task}],
    }
    if caps:
        body["max_tokens"] = caps[0]
    if ask_usage:
        body["stream_options"] = {"include_usage": True}
    request = urllib.request.Request(
        base_url.rstrip("/") + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer test-key"},
    )
    answer: list[str] = []
    with urllib.request.urlopen(request, timeout=120) as response:
        for raw in response:
            line = raw.decode().strip()
            if not line.startswith("data:") or line == "data: [DONE]":
                continue
            event = json.loads(line[5:])
            for choice in event.get("choices") or ():
                piece = (choice.get("delta") or {}).get("content") or ""
                answer.append(piece)
                sys.stdout.write(piece)
                sys.stdout.flush()
            if event.get("usage") and not event.get("choices"):
                if not ask_usage:
                    sys.stderr.write("a usage chunk came that was not asked for\n")
                    return 3
                usage = event["usage"]
                sys.stderr.write(f"usage: {usage['prompt_tokens']} {usage['completion_tokens']}\n")
    sys.stdout.write("\n")
    for block in BLOCK.finditer("".join(answer)):
        target = Path(block["path"])
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block["body"], encoding="utf-8")
        sys.stderr.write(f"wrote {target}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
