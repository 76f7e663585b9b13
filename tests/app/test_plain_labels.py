"""Labels that show text from the backend, a foreign agent or a repository's path render it as text
(issue 27, item 4): markup there such as ``<img src=file:…>`` would make the window read a local file and
draw it (and ``/dev/zero`` would hang it)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QLabel, QWidget

from ide.app.sessions.part import SessionsPanel
from ide.app.status.banner import Banner
from ide.app.status.bar import BackendStatus
from ide.app.trust.dialog import TrustDialog
from ide.protocol import AgentMeta, ErrorInfo
from ide.settings import ResolvedSettings, Settings

pytestmark = pytest.mark.window


@pytest.fixture
def image_markup(tmp_path: Path) -> str:
    """Markup that draws a 400×400 local image when a label renders rich text."""
    picture = tmp_path / "big.png"
    image = QImage(400, 400, QImage.Format.Format_RGB32)
    image.fill(0xFF0000)
    assert image.save(str(picture))
    return f"<img src='{picture}' width=400 height=400>"


def _banner(text: str) -> tuple[QWidget, list[QLabel]]:
    banner = Banner()
    banner.show_error(ErrorInfo(kind="internal", message=text, fix=text))
    return banner, [banner.title, banner.fix]


def _status(text: str) -> tuple[QWidget, list[QLabel]]:
    status = BackendStatus()
    status.set_agent(AgentMeta(version="1", model=text, architectures=["react"]), mode=text)
    return status, [status.model]


def _sessions(text: str) -> tuple[QWidget, list[QLabel]]:
    panel = SessionsPanel()
    panel.set_message(text)
    return panel, [panel.message]


def _trust(text: str) -> tuple[QWidget, list[QLabel]]:
    dialog = TrustDialog()
    resolved = ResolvedSettings(settings=Settings(), workspace=Path(text))
    dialog.ask(resolved)
    return dialog, [dialog.intro]


@pytest.mark.parametrize("build", [_banner, _status, _sessions, _trust], ids=lambda f: f.__name__[1:])
def test_outside_text_is_shown_as_text(
    qtbot: Any, image_markup: str, build: Callable[[str], tuple[QWidget, list[QLabel]]]
) -> None:
    widget, labels = build(image_markup)
    qtbot.addWidget(widget)
    for label in labels:
        assert image_markup in label.text()
        # Drawn as characters (a line or a few when wrapped), not as the 400 px image the markup names.
        assert label.sizeHint().height() < 200, label.objectName()
