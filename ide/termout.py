"""What Arbor's commands print: text from a repository, a model or an agent reaches the terminal as text.

Every ``arbor`` command writes through :func:`escaped_output` (``ide.cli`` wraps ``sys.stdout`` and
``sys.stderr`` once, before a command runs), so none can forget: control characters other than newline and
tab, bidi controls and invisible characters are written as visible escapes
(:func:`ide.protocol.hidden.escape_terminal`). A file name, a workflow's description or a setting's value
can then neither drive the terminal (an OSC 52 clipboard write, an OSC 8 link, a cleared screen) nor make
a line read differently than it is. JSON output passes unchanged: ``json.dumps`` escapes those characters
itself. A command whose stdout is a protocol (``arbor acp``, ``arbor mcp``) keeps it as it is.
"""

from __future__ import annotations

import contextlib
import io
import sys
import traceback
from collections.abc import Iterator
from types import TracebackType
from typing import TextIO

from ide.protocol.hidden import escape_terminal


class EscapedText(io.TextIOBase):
    """A text stream that writes to ``stream`` with control, bidi and invisible characters escaped.

    A CR that ends one write is held until the next: ``print("line\\r")`` writes the CR and the newline
    apart, and a CR followed by a newline is a line end, not a return to the start of the line."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._cr = False

    def write(self, text: str) -> int:
        written = len(text)
        if self._cr:
            text, self._cr = "\r" + text, False
        if text.endswith("\r"):
            text, self._cr = text[:-1], True
        if text:
            self._stream.write(escape_terminal(text))
        return written

    def flush(self) -> None:
        self._stream.flush()

    def close(self) -> None:
        """Write a CR still held (escaped: nothing followed it) and flush; the stream under it stays open
        (it is the process's)."""
        held, self._cr = self._cr, False
        if self._stream.closed:
            return
        if held:
            self._stream.write(escape_terminal("\r"))
        self._stream.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._stream.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self._stream.errors

    @property
    def closed(self) -> bool:
        return self._stream.closed

    @property
    def terminal(self) -> TextIO:
        """The stream under the escaping: for Arbor's own terminal control only (a progress bar's
        carriage returns), never for text a repository, a model or an agent wrote."""
        return self._stream


def terminal_of(stream: TextIO) -> TextIO:
    """``stream`` without the escaping (see :attr:`EscapedText.terminal`); ``stream`` itself otherwise."""
    return stream.terminal if isinstance(stream, EscapedText) else stream


def print_exception_escaped(
    kind: type[BaseException], value: BaseException, tb: TracebackType | None
) -> None:
    """``sys.excepthook`` of an ``arbor`` process: a traceback that reaches the top (its message may quote
    a file name or a model's text) is printed escaped too, after :func:`escaped_output` has ended."""
    sys.stderr.write(escape_terminal("".join(traceback.format_exception(kind, value, tb))))


@contextlib.contextmanager
def escaped_output(*, stdout: bool = True) -> Iterator[None]:
    """``sys.stderr``, and ``sys.stdout`` unless ``stdout`` is False (it carries a protocol), escaped
    until the block ends; then the streams are put back as they were."""
    saved = sys.stdout, sys.stderr
    wrapped: list[EscapedText] = []

    def wrap(stream: TextIO | None) -> TextIO | None:
        if stream is None or isinstance(stream, EscapedText):  # no console (a windowed app), or done already
            return stream
        wrapped.append(EscapedText(stream))
        return wrapped[-1]  # type: ignore[return-value]

    sys.stderr = wrap(sys.stderr)  # type: ignore[assignment]
    if stdout:
        sys.stdout = wrap(sys.stdout)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
        for stream in wrapped:
            with contextlib.suppress(OSError, ValueError):
                stream.close()
