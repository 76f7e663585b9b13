"""The mode table: everything about modes derives from ide/protocol/modes.py, and the backend's mappings keyed
by it (the class of each architecture, when ``auto`` picks each choice) cover it exactly."""

from __future__ import annotations

from typing import get_args

import pytest

from ide.protocol.modes import (
    ARCHITECTURES,
    AUTO,
    AUTO_CHOICES,
    MODE_TABLE,
    MODES,
    SESSION_MODES,
    ArchitectureName,
    AutoChoiceName,
    ModeName,
    architecture_or,
)
from ide.search.architectures import AUTO_PROMPT, CLASSES, WHEN_TO_CHOOSE, AutoChoice, load_architecture
from ide.settings.sections import AgentSettings
from ide.workflows.schema import AgentProfile


def test_the_tuples_and_literals_come_from_the_table() -> None:
    assert SESSION_MODES == tuple(mode.id for mode in MODE_TABLE) == tuple(MODES)
    assert SESSION_MODES == ("react", "lats", "tot", "plan", "workflow", "auto")
    assert ARCHITECTURES == ("react", "lats", "tot", "plan")
    assert AUTO_CHOICES == ("react", "lats", "tot", "plan", "workflow")
    assert get_args(ModeName) == SESSION_MODES
    assert get_args(ArchitectureName) == ARCHITECTURES
    assert get_args(AutoChoiceName) == AUTO_CHOICES
    assert get_args(AutoChoice.model_fields["architecture"].annotation) == AUTO_CHOICES
    assert all(mode.name and mode.description for mode in MODE_TABLE)


def test_every_architecture_has_its_class_and_nothing_else_does() -> None:
    assert tuple(CLASSES) == ARCHITECTURES


@pytest.mark.parametrize("mode", ARCHITECTURES)
def test_each_class_runs_the_mode_it_is_keyed_by(mode: str) -> None:
    assert load_architecture(mode).name == mode


def test_a_mode_that_is_not_an_architecture_has_no_class() -> None:
    for mode in (AUTO, "workflow", "nonsense"):
        with pytest.raises(ValueError, match="no architecture"):
            load_architecture(mode)
        assert architecture_or(mode) == "react"


def test_the_auto_prompt_says_when_to_pick_every_choice() -> None:
    assert tuple(WHEN_TO_CHOOSE) == AUTO_CHOICES
    for mode in AUTO_CHOICES:
        assert f'Answer "{mode}" {WHEN_TO_CHOOSE[mode]}' in AUTO_PROMPT


def test_settings_and_profiles_accept_exactly_the_tables_modes() -> None:
    for mode in SESSION_MODES:
        assert AgentSettings(architecture=mode).architecture == mode
    with pytest.raises(ValueError, match="react"):
        AgentSettings(architecture="nonsense")
    assert get_args(AgentProfile.model_fields["architecture"].annotation) == ARCHITECTURES
