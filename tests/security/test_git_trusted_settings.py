"""Settings that weaken a check wait for trust (issue 27, item 7): a cloned repository's
``.arbor/config.toml`` set ``review.commit = "none"`` — Apply then skipped git's check of the paths it
writes, so ``.GIT/hooks/post-checkout`` was written — and raised ``plan.command_timeout_s`` and the other
time and token limits of commands and searches, all without the user trusting it. Through real settings
loading; on main each applied at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from ide.changes import BatchStore, ChangeError, ChangeSet, Review
from ide.changes.overlay import Base, Entry
from ide.protocol.review import DecideParams
from ide.settings import Settings, load_settings
from ide.trust import TRUST_ENV, repository_rule

RAISED = {
    "plan.command_timeout_s": 3600.0,
    "lats.test_timeout_s": 86400.0,
    "workflows.test_timeout_s": 86400.0,
    "lats.time_limit_s": 86400.0,
    "lats.max_tokens": 10**9,
    "tot.time_limit_s": 86400.0,
}


def write_config(root: Path, text: str) -> None:
    (root / ".arbor").mkdir(exist_ok=True)
    (root / ".arbor" / "config.toml").write_text(text)


def toml(values: dict[str, object]) -> str:
    sections: dict[str, list[str]] = {}
    for key, value in values.items():
        section, _, name = key.partition(".")
        sections.setdefault(section, []).append(f"{name} = {value!r}".replace("'", '"'))
    return "".join(f"[{section}]\n" + "\n".join(lines) + "\n" for section, lines in sections.items())


def value(settings: Settings, key: str) -> object:
    section, _, name = key.partition(".")
    return getattr(getattr(settings, section), name)


def test_review_commit_none_waits_for_trust_and_apply_keeps_gits_path_check(
    git_workspace: Path, tmp_path: Path
) -> None:
    root = git_workspace
    write_config(root, '[review]\ncommit = "none"\n')
    resolved = load_settings(root, environ={})
    assert "review.commit" in {item.key for item in resolved.held_back}
    assert resolved.settings.review.commit == "commit"

    hook = ".GIT/hooks/post-checkout"  # as a restored review could hold it: a new edit of it is refused
    entry = Entry(b"#!/bin/sh\ntouch pwned\n", 0o755)
    changes = ChangeSet.from_recorded(root, {hook: Base(None, None)}, {hook: entry})
    review = Review(
        changes,
        session_id="s",
        title="t",
        store=BatchStore(tmp_path / "data"),
        commit_mode=resolved.settings.review.commit,
    )
    review.decide(DecideParams(session_id="s", decision="accepted", paths=[".GIT/hooks/post-checkout"]))
    with pytest.raises(ChangeError, match=r"named \.git"):
        review.apply()
    assert not (root / ".GIT").exists()

    trusted = load_settings(root, environ={TRUST_ENV: "1"})
    assert trusted.settings.review.commit == "none"
    write_config(root, '[review]\ncommit = "stage"\n')  # staging keeps the check: a preference
    assert load_settings(root, environ={}).settings.review.commit == "stage"


def test_raised_time_and_token_limits_wait_for_trust_and_lower_ones_apply(tmp_path: Path) -> None:
    root = tmp_path / "cloned"
    root.mkdir()
    write_config(root, toml(RAISED))
    resolved = load_settings(root, environ={})
    defaults = Settings()
    assert set(RAISED) <= {item.key for item in resolved.held_back}
    for key in RAISED:
        assert value(resolved.settings, key) == value(defaults, key), key
        assert repository_rule(key) == "lowers yours; raising needs trust"
    held = {item.key: item.reason for item in resolved.held_back}
    assert "run longer" in held["plan.command_timeout_s"]

    lowered = {key: 1 for key in RAISED}
    write_config(root, toml(lowered))
    settings = load_settings(root, environ={}).settings
    assert all(value(settings, key) == 1 for key in RAISED)

    write_config(root, toml(RAISED))
    trusted = load_settings(root, environ={TRUST_ENV: "1"}).settings
    assert all(value(trusted, key) == RAISED[key] for key in RAISED)
