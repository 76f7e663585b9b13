"""A line diff that stays fast on any input: patience anchors, difflib only on small gaps, and a plain
replace past a budget.

``difflib.SequenceMatcher`` over a whole file is quadratic in the worst case: 4,000 separated one-line
edits in a 40,000-line file took 28 s, and a 200,000-line rewrite with repeated lines never finished.
Here the common prefix and suffix go first; lines that occur exactly once on both sides anchor the
rest (their longest increasing run, as in patience diff); only the gaps between anchors that are small
enough go to SequenceMatcher, and a gap too big for it becomes one replace — a whole-range hunk.

Qt-free and dependency-free: the review backend and the window's diff views share it.
"""

from __future__ import annotations

import bisect
import difflib
from collections import Counter
from collections.abc import Hashable, Sequence
from itertools import count, groupby
from operator import sub
from typing import Any

Opcode = tuple[str, int, int, int, int]
"""``(tag, i1, i2, j1, j2)`` as difflib's: ``equal``, ``replace``, ``delete`` or ``insert``."""

MATCHER_BUDGET = 4_000_000
"""Largest ``len(a) * len(b)`` of a gap handed to SequenceMatcher (about a tenth of a second)."""


def diff_opcodes(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[Opcode]:
    """Opcodes turning ``a`` into ``b``, covering both wholly and in order."""
    out: list[Opcode] = []
    # A work stack, not recursion (a pathological file must not exhaust Python's stack): items are
    # finished opcodes or ranges still to diff, pushed in reverse so they come off in order.
    work: list[tuple[str, Opcode] | tuple[str, tuple[int, int, int, int]]] = [
        ("range", (0, len(a), 0, len(b)))
    ]
    while work:
        kind, value = work.pop()
        if kind == "op":
            out.append(value)
            continue
        i1, i2, j1, j2 = value
        start_i, start_j = i1, j1
        while i1 < i2 and j1 < j2 and a[i1] == b[j1]:
            i1 += 1
            j1 += 1
        end_i, end_j = i2, j2
        while i2 > i1 and j2 > j1 and a[i2 - 1] == b[j2 - 1]:
            i2 -= 1
            j2 -= 1
        pieces: list[tuple[str, Any]] = []
        if i1 > start_i:
            pieces.append(("op", ("equal", start_i, i1, start_j, j1)))
        anchors = _anchored(a, b, i1, i2, j1, j2)
        if anchors is None:
            pieces.extend(("op", op) for op in _small_gap(a, b, i1, i2, j1, j2))
        else:
            prev_i, prev_j = i1, j1
            # Runs of adjacent anchors, found in C: along a run a line's place less its index in
            # ``anchors`` stays the same on both sides. A run is one equal opcode: an empty range between
            # two anchors yields nothing, and _merge would join their opcodes anyway (the same output).
            firsts, seconds = zip(*anchors, strict=True)
            at = 0
            for (ai, bj), run in groupby(
                zip(map(sub, firsts, count()), map(sub, seconds, count()), strict=False)
            ):
                ai, bj = ai + at, bj + at
                length = len(list(run))
                at += length
                if ai > prev_i or bj > prev_j:
                    pieces.append(("range", (prev_i, ai, prev_j, bj)))
                elif pieces and pieces[-1][1][0] == "equal" and pieces[-1][1][2] == ai:
                    tag, p1, _p2, q1, _q2 = pieces[-1][1]
                    pieces[-1] = ("op", (tag, p1, ai + length, q1, bj + length))
                    prev_i, prev_j = ai + length, bj + length
                    continue
                pieces.append(("op", ("equal", ai, ai + length, bj, bj + length)))
                prev_i, prev_j = ai + length, bj + length
            pieces.append(("range", (prev_i, i2, prev_j, j2)))
        if end_i > i2:
            pieces.append(("op", ("equal", i2, end_i, j2, end_j)))
        work.extend(reversed(pieces))
    return _merge(out)


def _anchored(
    a: Sequence[Hashable], b: Sequence[Hashable], i1: int, i2: int, j1: int, j2: int
) -> list[tuple[int, int]] | None:
    """Pairs (i, j) of lines unique on both sides, in their longest increasing run; None if none."""
    size_a, size_b = i2 - i1, j2 - j1
    if (size_a < 2 and size_b < 2) or not size_a or not size_b:
        return None
    if size_a == 1:  # one line (the usual gap of a separated edit): unique on the other side or no anchor
        seg_b = b[j1:j2]
        line = a[i1]
        return [(i1, j1 + seg_b.index(line))] if seg_b.count(line) == 1 else None
    seg_a = a[i1:i2]
    if size_b == 1:
        line = b[j1]
        return [(i1 + seg_a.index(line), j1)] if seg_a.count(line) == 1 else None
    seg_b = b[j1:j2]
    # The last place of each line, made in C (a later place of a line overwrites an earlier one).
    where_a = dict(zip(seg_a, range(i1, i2), strict=True))
    where_b = dict(zip(seg_b, range(j1, j2), strict=True))
    if len(where_a) == size_a and len(where_b) == size_b:
        # Every line once on its side (source code, mostly): the anchors are the lines on both, in C.
        places = sorted(map(where_a.__getitem__, where_a.keys() & where_b.keys()))
        pairs = list(zip(places, map(where_b.__getitem__, map(a.__getitem__, places)), strict=True))
    else:
        count_a, count_b = Counter(seg_a), Counter(seg_b)
        pairs = sorted(
            (where_a[line], where_b[line]) for line, n in count_a.items() if n == 1 and count_b.get(line) == 1
        )
    if not pairs:
        return None
    return _longest_increasing(pairs)


def _longest_increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of ``pairs`` (sorted by i) whose j increase too (patience sorting)."""
    js = [j for _i, j in pairs]
    if js == sorted(js):
        return pairs  # no line moved (the usual case): the run is all of them, found in C
    tails: list[int] = []
    tail_index: list[int] = []
    previous = [-1] * len(pairs)
    for index, (_i, j) in enumerate(pairs):
        at = bisect.bisect_left(tails, j)
        if at == len(tails):
            tails.append(j)
            tail_index.append(index)
        else:
            tails[at] = j
            tail_index[at] = index
        previous[index] = tail_index[at - 1] if at else -1
    run = []
    index = tail_index[-1]
    while index >= 0:
        run.append(pairs[index])
        index = previous[index]
    return run[::-1]


def _small_gap(
    a: Sequence[Hashable], b: Sequence[Hashable], i1: int, i2: int, j1: int, j2: int
) -> list[Opcode]:
    """A gap without anchors: SequenceMatcher when it is within budget, else one replace."""
    if i1 == i2 and j1 == j2:
        return []
    if i1 == i2:
        return [("insert", i1, i2, j1, j2)]
    if j1 == j2:
        return [("delete", i1, i2, j1, j2)]
    if (i2 - i1) * (j2 - j1) > MATCHER_BUDGET:
        return [("replace", i1, i2, j1, j2)]
    if set(a[i1:i2]).isdisjoint(b[j1:j2]):
        return [("replace", i1, i2, j1, j2)]  # what SequenceMatcher finds without a common line, cheaper
    matcher = difflib.SequenceMatcher(None, a[i1:i2], b[j1:j2], autojunk=False)
    return [(tag, p1 + i1, p2 + i1, q1 + j1, q2 + j1) for tag, p1, p2, q1, q2 in matcher.get_opcodes()]


def _merge(opcodes: list[Opcode]) -> list[Opcode]:
    """Adjacent opcodes of the same kind joined; a delete next to an insert is one replace."""
    merged: list[Opcode] = []
    for tag, i1, i2, j1, j2 in opcodes:
        if i1 == i2 and j1 == j2:
            continue
        if merged:
            ptag, pi1, _pi2, pj1, _pj2 = merged[-1]
            if ptag == tag or (ptag != "equal" and tag != "equal"):
                kind = tag if ptag == tag else "replace"
                merged[-1] = (kind, pi1, i2, pj1, j2)
                continue
        merged.append((tag, i1, i2, j1, j2))
    return merged


def grouped(opcodes: list[Opcode], context: int = 3) -> list[list[Opcode]]:
    """Opcodes in hunks with ``context`` equal lines around each change (difflib's grouping)."""
    codes = list(opcodes)
    if not codes:
        return []
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = (tag, max(i1, i2 - context), i2, max(j1, j2 - context), j2)
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = (tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context))
    gap = context * 2
    groups: list[list[Opcode]] = []
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > gap:
            group.append((tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups
