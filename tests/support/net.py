"""Loopback ports for tests: one no server listens on, and one a server the test starts may take."""

from __future__ import annotations

import socket

_held: list[socket.socket] = []
"""The sockets behind the ports handed out, bound for the rest of the process and never listening."""


def closed_port() -> int:
    """A loopback port nothing listens on: it stays bound (without listening) until the test process
    ends, so that no server of a parallel test worker can be given it meanwhile; a connection is refused."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    _held.append(sock)
    return sock.getsockname()[1]


def free_port() -> int:
    """A loopback port free right now, for a server the test starts itself (released here: the server may
    still lose it to another process, so a caller retries when its server cannot bind)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
