"""The repository's config is read once per config state (issue 32, item 1: it was read again for every
git call), and a changed file of the chain is always read again — also one rewritten within the same
mtime tick at the same size."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ide.gitsafe import repository_overrides


def test_config_is_read_once_per_state_and_again_after_any_change(
    git_workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = git_workspace
    config = root / ".git" / "config"
    with config.open("a") as handle:
        handle.write('[filter "aaaa"]\n\tclean = /bin/false\n')
    started: list[list[str]] = []
    real = subprocess.run

    def spy(argv, *args, **kwargs):  # type: ignore[no-untyped-def]
        started.append(list(argv))
        return real(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", spy)
    for _ in range(50):
        assert repository_overrides(root) == ["--config-env=filter.aaaa.clean=ARBOR_GIT_UNSET"]
    assert len(started) <= 2, started  # one lookup of the git dir, one read of the config

    before = os.stat(config)
    config.write_text(config.read_text().replace("aaaa", "bbbb"))
    os.utime(config, ns=(before.st_atime_ns, before.st_mtime_ns))  # same size, same mtime
    assert repository_overrides(root) == ["--config-env=filter.bbbb.clean=ARBOR_GIT_UNSET"]

    (root / ".git" / "extra.cfg").write_text('[diff "x"]\n\ttextconv = /bin/false\n')
    with config.open("a") as handle:
        handle.write("[include]\n\tpath = extra.cfg\n")
    assert "--config-env=diff.x.textconv=ARBOR_GIT_UNSET" in repository_overrides(root)
