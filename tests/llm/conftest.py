"""Fixtures for the model-layer tests: settings pointed at a fake Ollama, a tool to bind, a dead port."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langchain_core.tools import BaseTool, tool

from tests.support.fake_ollama import FakeOllama


@pytest.fixture
def fake_ollama() -> Iterator[Callable[..., FakeOllama]]:
    """Start fake Ollama servers with ``fake_ollama(responses, models=...)``; all closed after the test."""
    servers: list[FakeOllama] = []

    def start(responses: list[dict[str, Any]] | None = None, **kwargs: Any) -> FakeOllama:
        server = FakeOllama(responses or [], **kwargs).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def dead_url() -> str:
    """A loopback URL where nothing listens (the port was bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@tool
def read_file(path: str) -> str:
    """Read a file of the workspace."""
    return f"contents of {path}"


@tool
def grep(pattern: str) -> str:
    """Search the workspace."""
    return pattern


@pytest.fixture
def tools() -> list[BaseTool]:
    return [read_file, grep]
