"""The HTTP server a simulated model endpoint runs on: 127.0.0.1 on a free port, one thread per request, a
short poll so closing is quick, and clients hanging up mid-stream (timeouts, cancelled turns) taken quietly.
The fakes (Ollama, OpenAI, Gemini) each give it their request handler, a :class:`JsonHandler`."""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class JsonHandler(BaseHTTPRequestHandler):
    """A simulated endpoint's request handler: HTTP/1.1, no request log, JSON answers."""

    protocol_version = "HTTP/1.1"
    content_type = "application/json"
    """The ``Content-Type`` of a JSON answer, as the real server spells it."""

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", self.content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class QuietServer(ThreadingHTTPServer):
    """Clients hanging up mid-stream are expected here: no traceback."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if not isinstance(exc, ConnectionError):
            super().handle_error(request, client_address)


class LoopbackServer:
    """Serves ``handler`` on 127.0.0.1 from a thread between :meth:`start` and :meth:`stop`."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], name: str) -> None:
        self._server = QuietServer(("127.0.0.1", 0), handler)
        # A short poll interval keeps stop() quick (shutdown waits for the next poll).
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name=name, daemon=True
        )
        self._thread.start()

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:PORT``."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
