"""Apply refuses up front, with the fix, when git cannot name the author: nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from ide.changes import BatchStore, ChangeError, ChangeSet, Review
from ide.protocol.review import DecideParams
from tests.support.git import GIT_IDENTITY


def test_apply_without_a_git_identity_writes_nothing_and_says_how_to_fix_it(
    git_workspace: Path, store: BatchStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in GIT_IDENTITY:
        monkeypatch.delenv(name)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("EMAIL", "")
    before = (git_workspace / "README.md").read_bytes()
    changes = ChangeSet(git_workspace)
    changes.edit("README.md", "Says hello.", "Says hi.")
    review = Review(changes, session_id="s1", title="t", store=store)
    review.decide(DecideParams(session_id="s1", decision="accepted", all=True))
    with pytest.raises(ChangeError) as caught:
        review.apply()
    assert "git config --global user.email" in str(caught.value)
    assert "nothing was written" in str(caught.value)
    assert (git_workspace / "README.md").read_bytes() == before
    assert store.history(str(git_workspace)) == []
