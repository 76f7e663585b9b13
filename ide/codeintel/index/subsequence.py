"""The index's distinct names as bit sets, for the fuzzy tier of symbol search: every name is matched at once.

The names are laid end to end in one text, each after a separator; bit ``j`` of an occurrence set is
character ``j`` of that text. For a query letter the next occurrence after every name's current position
is one subtraction: ``X - P`` borrows from each position in ``P`` up through the zeros of ``X`` (the
letter's occurrences, plus the separators, which stop a borrow at the end of its name) to the first
occurrence. A query of k letters costs about 5k operations on integers of one bit per character (each a
fraction of a millisecond for 4 million characters) instead of a pass over every name. It finds exactly
the names SQLite's ``LIKE '%a%b%c%'`` finds (ASCII letters case-insensitively, the rest as written), and
they are scored by ``store.fuzzy_score`` exactly as the SQL path scores them.
"""

from __future__ import annotations

import heapq
import re
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from itertools import accumulate

from ide.codeintel.index.store import fuzzy_score

SEPARATOR = "\n"
SCORE_ONE_BY_ONE = 1500
"""Up to this many matching names (per ``ONE_BY_ONE_CHARS`` characters of names, at least once) are
scored one by one; more are scored in bit planes first. The planes cost grows with the names' text (each
step an operation over every character: ~15 ms at 5.2 million), one by one with the matches (~2 µs a
name), so the bigger index scores more names one by one (at 530k definitions, 1,800–4,500 matches took
10–60 ms in planes and 6–13 ms one by one)."""
ONE_BY_ONE_CHARS = 1_500_000
FEW = 300
"""Names left in the running after a letter below which the rest of the query is checked name by name."""
MAX_LETTERS = 64
"""Longer queries go to the SQL path (each letter costs a step; nothing in an index is that long)."""
_ASCII_FOLD = str.maketrans({chr(c): chr(c + 32) for c in range(ord("A"), ord("Z") + 1)})
_CLASSES = str.maketrans(
    {
        **{chr(c): "o" for c in range(128)},
        **{chr(c): "l" for c in range(ord("a"), ord("z") + 1)},
        **{chr(c): "u" for c in range(ord("A"), ord("Z") + 1)},
        **dict.fromkeys("_-.$", "p"),
        SEPARATOR: "s",
    }
)
_NONZERO = bytes.maketrans(bytes(range(256)), b"\x00" + b"\x01" * 255)
_WORD_START = re.compile(r"(?<=[sp])[^s]|(?<=l)u")


def _bits(text: str, marked: str) -> int:
    """The integer whose bit ``j`` is set where ``text[j]`` (ASCII) is one of ``marked``."""
    table = str.maketrans({chr(c): "1" if chr(c) in marked else "0" for c in range(128)})
    return int(text.translate(table)[::-1], 2)


def _with_bit(bit: int) -> str:
    """The ASCII characters whose code has bit ``bit`` set."""
    return "".join(chr(code) for code in range(128) if code >> bit & 1)


def like_subsequence(name: str, query: str) -> bool:
    """Whether SQLite's ``name LIKE '%q%u%e%r%y%'`` (escaped) holds: ASCII letters fold, nothing else does.
    ``query`` is ASCII lower case."""
    folded = name.translate(_ASCII_FOLD)
    at = 0
    for ch in query:
        at = folded.find(ch, at) + 1
        if not at:
            return False
    return True


class NameBits:
    """One snapshot of the index's distinct names, searchable by subsequence; immutable once built."""

    def __init__(self, names: Iterable[str]) -> None:
        plain: list[str] = []
        self.others: list[str] = []
        """Names the bit sets do not hold (not ASCII, or holding the separator): checked one by one."""
        for name in names:
            (plain if name and name.isascii() and SEPARATOR not in name else self.others).append(name)
        self.names = plain
        text = SEPARATOR + SEPARATOR.join(plain) + SEPARATOR
        self._lower = text.lower()
        self._letters = frozenset(self._lower)
        """The letters the names hold: a query with another matches none of them (and builds no bit set)."""
        lengths = (len(name) + 1 for name in plain[:-1])
        self.starts = array("q", accumulate(lengths, initial=1) if plain else ())
        """Where each name starts in the text (a typed array: 8 bytes a name, not a Python int's 36)."""
        separators = _bits(text, SEPARATOR)
        self._inside = ((1 << len(text)) - 1) & ~separators
        self._separators = separators
        # Where fuzzy_score sees a word start: a name's first letter, after _-.$, upper after lower case.
        self._word_starts = _bits(_WORD_START.sub("1", text.translate(_CLASSES)), "1")
        self._not_word_starts = self._inside & ~self._word_starts
        self._first = (separators << 1) & self._inside
        self._occurrences: dict[str, int] = {SEPARATOR: separators}
        full = (1 << len(text)) - 1
        self._planes = [_bits(self._lower, _with_bit(bit)) for bit in range(7)]
        """Bit ``b`` of each character's code (of the lower-case text), and below its complement: a
        letter's occurrences are seven ANDs of them (~1 ms at 5.2 million characters) instead of reading
        binary digits (~12 ms, paid by the first query holding that letter in each index generation)."""
        self._complements = [full & ~plane for plane in self._planes]

    def _occurs(self, letter: str) -> int:
        """Positions of ``letter`` (either case) and of every separator."""
        found = self._occurrences.get(letter)
        if found is None:
            code = ord(letter)
            found = -1
            for bit, (plane, complement) in enumerate(zip(self._planes, self._complements, strict=True)):
                found &= plane if code >> bit & 1 else complement
            found |= self._separators
            self._occurrences[letter] = found
        return found

    def _matched(self, query: str, steps: list[int]) -> int | list[str]:
        """The separators after the names that hold the letters of ``query`` in order; or, once few names are
        left in the running, those of them that do (read one by one: cheaper than the remaining steps).
        ``steps`` gets where each letter was found."""
        if not self._letters.issuperset(query):
            return 0
        at = self._first
        for step, letter in enumerate(query):
            occurs = self._occurs(letter)
            found = ((occurs - at) ^ occurs) & occurs & self._inside  # each name's next occurrence
            if not found:
                return 0
            if step and step < len(query) - 1 and found.bit_count() <= FEW:
                left = (self._ending_at(position) for position in _positions(found))
                return [name for name in left if like_subsequence(name, query)]
            steps.append(found)
            at = found << 1
        return (self._inside + (at >> 1)) & self._separators  # carried to the end of each name

    def _ending_at(self, position: int) -> str:
        """The name at ``position`` or ending at the separator there."""
        return self.names[bisect_right(self.starts, position) - 1]

    def best(self, query: str, pool: int) -> list[str]:
        """The ``pool`` best names for ``query`` as ``store.fuzzy_names`` ranks them: by ``fuzzy_score``, then
        shorter, then by name; only names that score above zero.

        Scores are counted here too, for every name at once: a letter found at a word start is worth 3, right
        after the previous letter 1.5, elsewhere 0.5, so twice a name's total is ``len(query) + 5 × starts +
        2 × adjacent``. Those counts are summed in bit planes (bit ``j`` of plane ``i``: bit ``i`` of the sum
        of the name ending at separator ``j``); the names are then taken best sum first, and only until no
        lower sum can reach the ``pool``-th score (the length penalty only lowers a score).
        """
        q = query.lower()
        k = len(q)
        ranked = [(-score, len(name), name) for name in self.others if (score := _other_score(name, q)) > 0]
        steps: list[int] = []
        matched = self._matched(q, steps)
        one_by_one = SCORE_ONE_BY_ONE * max(1, len(self._lower) // ONE_BY_ONE_CHARS)
        if isinstance(matched, list) or matched.bit_count() <= one_by_one:
            for name in matched if isinstance(matched, list) else map(self._ending_at, _positions(matched)):
                score = fuzzy_score(name, q)
                if score > 0:
                    ranked.append((-score, len(name), name))
            return [name for _score, _length, name in heapq.nsmallest(pool, ranked)]
        at, planes = self._first, [0]
        for found in steps:
            starts = found & self._word_starts
            if starts:
                ends = (self._inside + starts) & self._separators  # carried to the end of the name
                _add(planes, ends, 0)
                _add(planes, ends, 2)
            adjacent = found & at & self._not_word_starts
            if adjacent:
                _add(planes, (self._inside + adjacent) & self._separators, 1)
            at = found << 1
        for total, group in _descending(planes, matched, len(planes) - 1, 0):
            most = min((k + total) / 2, 35.0)
            if len(ranked) >= pool and -heapq.nsmallest(pool, ranked)[-1][0] > most:
                break
            for end in _positions(group):
                name = self._ending_at(end)
                score = most - min(len(name) - k, 20) * 0.2
                if score > 0:
                    ranked.append((-score, len(name), name))
        return [name for _score, _length, name in heapq.nsmallest(pool, ranked)]


def _other_score(name: str, query: str) -> float:
    return fuzzy_score(name, query) if like_subsequence(name, query) else 0.0


def _add(planes: list[int], bits: int, plane: int) -> None:
    """Add one at ``bits`` times ``2 ** plane`` to the counters held in ``planes``."""
    carry = bits
    while carry:
        while len(planes) <= plane:
            planes.append(0)
        held = planes[plane]
        planes[plane] = held ^ carry
        carry &= held
        plane += 1


def _descending(planes: list[int], group: int, plane: int, total: int) -> Iterator[tuple[int, int]]:
    """The counters' distinct values in ``group`` and where they are, highest first."""
    if plane < 0:
        yield total, group
        return
    high = group & planes[plane]
    if high:
        yield from _descending(planes, high, plane - 1, total | 1 << plane)
    if group ^ high:
        yield from _descending(planes, group ^ high, plane - 1, total)


def handles(query: str) -> bool:
    """Whether ``NameBits`` answers ``query`` (ASCII, not too long); the SQL path answers the rest."""
    return query.isascii() and 0 < len(query) <= MAX_LETTERS and SEPARATOR not in query


def _positions(bits: int) -> list[int]:
    """The set bits of ``bits``, lowest first."""
    found = []
    data = bits.to_bytes((bits.bit_length() + 7) // 8, "little")
    marks = data.translate(_NONZERO)  # find() of one byte value is a memchr: a few for the whole text
    at = marks.find(1)
    while at >= 0:
        byte, base = data[at], at * 8
        while byte:
            low = byte & -byte
            found.append(base + low.bit_length() - 1)
            byte ^= low
        at = marks.find(1, at + 1)
    return found
