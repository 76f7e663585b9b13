"""Split streamed model text into thought and answer at ``<think>…</think>`` tags, across chunk edges."""

from __future__ import annotations

from typing import Literal

Part = tuple[Literal["thought", "text"], str]

OPEN_TAG = "<think>"
CLOSE_TAG = "</think>"


class ThinkSplitter:
    """Feed content chunks in order; get ``("thought" | "text", str)`` parts back as soon as they are sure.

    A chunk may end inside a tag (``"<thi"``): that tail is held back until the next chunk tells whether
    it was a tag, so a tag split over chunks is never shown as text.
    """

    def __init__(self) -> None:
        self._in_thought = False
        self._pending = ""

    def feed(self, chunk: str) -> list[Part]:
        parts: list[Part] = []
        buffer = self._pending + chunk
        self._pending = ""
        while buffer:
            tag = CLOSE_TAG if self._in_thought else OPEN_TAG
            kind: Literal["thought", "text"] = "thought" if self._in_thought else "text"
            index = buffer.find(tag)
            if index >= 0:
                if index:
                    parts.append((kind, buffer[:index]))
                buffer = buffer[index + len(tag) :]
                self._in_thought = not self._in_thought
                continue
            keep = _partial_tag_suffix(buffer, tag)
            if len(buffer) > keep:
                parts.append((kind, buffer[: len(buffer) - keep]))
            self._pending = buffer[len(buffer) - keep :]
            break
        return parts

    def flush(self) -> list[Part]:
        """The held-back tail at end of stream (it turned out not to be a tag)."""
        if not self._pending:
            return []
        kind: Literal["thought", "text"] = "thought" if self._in_thought else "text"
        text, self._pending = self._pending, ""
        return [(kind, text)]


def _partial_tag_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0
