"""A model that loops: a stream whose last words keep repeating the same few phrases is stopped.

Small and base models, and any model at a bad temperature, fall into a loop ("change the greeting in
app.py to hello<|im_end|> <|im_start|>user" two hundred times over) and stream until the token cap. The
check is on words, not characters, so one long word or a run of digits is never a loop.
"""

from __future__ import annotations

from collections import deque

WINDOW_WORDS = 120
"""How many of the latest words are judged: a loop is cut after about this many words of it."""
NGRAM = 6
"""Phrases of this many words are compared."""
MIN_DISTINCT = 0.2
"""Below this share of distinct phrases among the window's, the text is a loop."""
CHECK_EVERY = 20
"""Words between two checks (a check costs one pass over the window)."""


class LoopGuard:
    """Fed the streamed text piece by piece; :meth:`feed` turns True once the text has fallen into a loop."""

    def __init__(self) -> None:
        self._words: deque[str] = deque(maxlen=WINDOW_WORDS)
        self._partial = ""
        self._unchecked = 0
        self.looping = False

    def feed(self, text: str) -> bool:
        words = (self._partial + text).split()
        self._partial = "" if not text or text[-1].isspace() else (words.pop() if words else "")
        self._words.extend(words)
        self._unchecked += len(words)
        if self._unchecked >= CHECK_EVERY and len(self._words) == WINDOW_WORDS:
            self._unchecked = 0
            window = list(self._words)
            phrases = [tuple(window[i : i + NGRAM]) for i in range(len(window) - NGRAM + 1)]
            self.looping = len(set(phrases)) < MIN_DISTINCT * len(phrases)
        return self.looping
