"""A real jedi-language-server behind a gate: every ``textDocument/references`` request waits until the
file named by its first argument exists, everything else passes at once. Tests open the gate when they have
seen what must come before the server's answer (the index's answer by name), so the order is theirs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import BinaryIO

from ide.lifetime import dies_with_parent

WAIT_S = 60.0


def read_message(stream: BinaryIO) -> bytes | None:
    """One LSP message (headers and body) as read, or None at the end of the stream."""
    headers = b""
    while not headers.endswith(b"\r\n\r\n"):
        byte = stream.read(1)
        if not byte:
            return None
        headers += byte
    length = next(
        int(line.split(b":", 1)[1])
        for line in headers.split(b"\r\n")
        if line.lower().startswith(b"content-length")
    )
    return headers + stream.read(length)


def pump(source: BinaryIO, target: BinaryIO, gate: Path | None) -> None:
    while (message := read_message(source)) is not None:
        if gate is not None and b'"textDocument/references"' in message:
            body = json.loads(message.split(b"\r\n\r\n", 1)[1])
            if body.get("method") == "textDocument/references":
                deadline = time.monotonic() + WAIT_S
                while not gate.exists() and time.monotonic() < deadline:
                    time.sleep(0.02)
        target.write(message)
        target.flush()
    target.close()


def main() -> None:
    server = Path(sys.executable).parent / "jedi-language-server"
    # Killed with this proxy, as Arbor's own servers are with the backend: an orphaned jedi-language-server
    # whose client is gone recurses at 100 % CPU for minutes (docs/traps.md).
    child = subprocess.Popen(
        [str(server)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, preexec_fn=dies_with_parent()
    )
    assert child.stdin is not None and child.stdout is not None
    gate = Path(sys.argv[1])
    threading.Thread(target=pump, args=(child.stdout, sys.stdout.buffer, None), daemon=True).start()
    pump(sys.stdin.buffer, child.stdin, gate)
    child.wait()


if __name__ == "__main__":
    main()
