"""``arbor acp`` over raw pipes for fuzz and soak tests: pipelined writes, answers collected by a reader
thread, and the process's resident memory and open files read from /proc."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

BACKEND = [sys.executable, "-m", "ide", "acp"]


def rss_kib(pid: int) -> int:
    """Resident memory of ``pid`` in KiB (VmRSS of /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for process {pid}")


def open_fds(pid: int) -> int:
    """How many file descriptors ``pid`` holds open (entries of /proc/PID/fd)."""
    return len(os.listdir(f"/proc/{pid}/fd"))


class RawWire:
    """A real ``arbor acp`` subprocess; what is written is exactly the bytes given.

    A thread reads every line the backend writes, so writes never block on a full output pipe. Its
    stderr goes to ``stderr_path`` (read it with :meth:`stderr`). ``answer`` answers the backend's own
    requests (permission questions): it gets the request and returns the result to send back.
    """

    def __init__(
        self,
        env: dict[str, str],
        stderr_path: Path,
        answer: Callable[[dict[str, Any]], Any] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.stderr_path = stderr_path
        self._stderr = stderr_path.open("wb")
        self.proc = subprocess.Popen(
            BACKEND,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            cwd=cwd,
        )
        self._answer = answer
        self._lock = threading.Condition()
        self._write_lock = threading.Lock()
        self.by_id: dict[Any, list[dict[str, Any]]] = {}
        """Answers (messages with result or error) by their id, as hashable keys (see :func:`id_key`)."""
        self.notifications: Counter[str] = Counter()
        self.unreadable: list[bytes] = []
        self.answers = 0
        self.closed = False
        self._reader = threading.Thread(target=self._read, name="rawwire-reader", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                message = json.loads(raw)
            except ValueError:
                with self._lock:
                    self.unreadable.append(raw[:200])
                continue
            if isinstance(message, dict) and "method" in message:
                if "id" in message and self._answer is not None:
                    result = self._answer(message)
                    self.write_json({"jsonrpc": "2.0", "id": message["id"], "result": result})
                with self._lock:
                    self.notifications[str(message["method"])] += 1
                    self._lock.notify_all()
                continue
            with self._lock:
                key = id_key(message.get("id")) if isinstance(message, dict) else ("bad", repr(message))
                self.by_id.setdefault(key, []).append(message)
                self.answers += 1
                self._lock.notify_all()
        with self._lock:
            self.closed = True
            self._lock.notify_all()

    def write(self, data: bytes) -> None:
        """Write raw bytes to the backend's stdin (whole writes: lines never interleave)."""
        assert self.proc.stdin is not None
        with self._write_lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def write_json(self, message: Any) -> None:
        self.write(json.dumps(message).encode() + b"\n")

    def wait(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        """Wait until ``condition()`` holds (checked whenever a message arrives), or fail saying ``what``."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while not condition():
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    exit_code = self.proc.poll()
                    raise AssertionError(f"{what}: not within {timeout:.0f}s (backend exit code {exit_code})")
                self._lock.wait(left)

    def request(self, request_id: int | str, method: str, params: Any, timeout: float = 20) -> dict[str, Any]:
        """Send one request and return its one answer."""
        key = id_key(request_id)
        self.write_json({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        self.wait(lambda: key in self.by_id, timeout, f"an answer to {method} (id {request_id})")
        return self.by_id[key][0]

    def stderr(self) -> str:
        self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")

    def close(self, timeout: float = 20) -> int:
        """Close stdin and return the backend's exit code (killed if it does not exit in ``timeout``)."""
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"the backend did not exit within {timeout}s of its stdin closing") from None
        finally:
            self._reader.join(timeout)
            self._stderr.close()
        return code


def id_key(request_id: Any) -> Any:
    """A hashable key for a JSON-RPC id as it came back (ints and strings as themselves)."""
    if isinstance(request_id, (list, dict)):
        return ("json", json.dumps(request_id, sort_keys=True))
    if isinstance(request_id, bool):
        return ("bool", request_id)
    if isinstance(request_id, float):
        return ("float", request_id)
    return request_id
