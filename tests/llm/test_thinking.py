"""The <think> splitter: tags split anywhere across chunks are never shown as text."""

from __future__ import annotations

import itertools

import pytest

from ide.llm.thinking import ThinkSplitter


def split_all(chunks: list[str]) -> tuple[str, str]:
    splitter = ThinkSplitter()
    parts = [part for chunk in chunks for part in splitter.feed(chunk)] + splitter.flush()
    thought = "".join(text for kind, text in parts if kind == "thought")
    answer = "".join(text for kind, text in parts if kind == "text")
    return thought, answer


SOURCE = "<think>look at a.py</think>The answer is 3 < 4."


def test_every_two_cut_chunking_gives_the_same_split() -> None:
    for first, second in itertools.combinations(range(1, len(SOURCE)), 2):
        chunks = [SOURCE[:first], SOURCE[first:second], SOURCE[second:]]
        assert split_all(chunks) == ("look at a.py", "The answer is 3 < 4."), chunks


def test_one_character_chunks() -> None:
    assert split_all(list(SOURCE)) == ("look at a.py", "The answer is 3 < 4.")


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        (["no tags at all"], ("", "no tags at all")),
        (["text ends with <thi"], ("", "text ends with <thi")),
        (["<think>never closed"], ("never closed", "")),
        (["a <b> c </think> d"], ("", "a <b> c </think> d")),
        (["x<think>y</think>z<think>w</think>"], ("yw", "xz")),
    ],
)
def test_edge_cases(chunks: list[str], expected: tuple[str, str]) -> None:
    assert split_all(chunks) == expected


def test_parts_come_out_as_soon_as_they_are_certain() -> None:
    splitter = ThinkSplitter()
    assert splitter.feed("<think>abc") == [("thought", "abc")]
    assert splitter.feed("de</th") == [("thought", "de")]
    assert splitter.feed("ink>ok") == [("text", "ok")]
