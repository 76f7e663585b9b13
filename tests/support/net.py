"""Loopback addresses for tests that need a server to be absent."""

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
