"""The banner across the window's top (above the docks, in :class:`BannerBar`): backend deaths, classified
errors and the model's health, each with what to do next."""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QToolBar,
    QVBoxLayout,
)

from ide.app.widgets.controls import flat_button, plain_label

if TYPE_CHECKING:
    from ide.protocol import ErrorInfo

STDERR_LINES_SHOWN = 8


def last_words(stderr_tail: str, lines: int = STDERR_LINES_SHOWN) -> str:
    """The end of a process's stderr without Python traceback frames: log lines and the exception itself.

    The banner explains a crash to a user; the frames are for a bug report (the Copy button has them).
    """
    kept: list[str] = []
    in_frame = False
    for line in stderr_tail.splitlines():
        if line.startswith("Traceback (most recent call last)") or line.startswith("  File "):
            in_frame = True
            continue
        if in_frame and line.startswith("    "):
            continue  # the source line quoted under a frame, or a caret marker
        in_frame = False
        if line.strip() and not line.startswith("During handling of the above exception"):
            kept.append(line)
    return "\n".join(kept[-lines:])


def describe_exit(code: int) -> str:
    """``exit code 1`` or ``killed by SIGKILL`` (asyncio reports death by signal N as -N)."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class Banner(QFrame):
    """Hidden until something needs the user. Interface: ``show_*`` methods, :attr:`restartRequested`."""

    restartRequested = Signal()
    dismissed = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("banner")
        self.setProperty("severity", "error")
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Maximum)
        self.kind: str | None = None
        self.bar: BannerBar | None = None
        """The toolbar holding the banner across the window's top, shown exactly while the banner is."""
        self.wanted = False
        """The banner has something to say (shown), whatever its bar's state."""

        self._icon = QLabel("!")
        self._icon.setObjectName("bannerIcon")
        self._icon.setAlignment(Qt.AlignmentFlag.AlignCenter)
        # Titles and fixes carry backend and agent text: plain, so markup in them cannot load a file.
        self.title = plain_label("bannerTitle")
        self.fix = plain_label("bannerFix")
        self.details = plain_label("bannerDetails", mono=True)
        self.restart_button = QPushButton("Restart backend")
        self.restart_button.setObjectName("restartButton")
        self.restart_button.clicked.connect(self.restartRequested)
        self.copy_button = flat_button(
            "copyButton",
            "Copy log",
            "Copy the backend's last stderr output, for a bug report",
            self._copy_log,
        )
        self._log = ""
        self.dismiss_button = flat_button("dismissButton", "✕", "Dismiss", self.dismiss)

        text = QVBoxLayout()
        text.setSpacing(3)
        text.addWidget(self.title)
        text.addWidget(self.fix)
        text.addWidget(self.details)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 8, 6, 8)
        layout.setSpacing(10)
        layout.addWidget(self._icon, 0, Qt.AlignmentFlag.AlignTop)
        layout.addLayout(text, 1)
        layout.addWidget(self.copy_button, 0, Qt.AlignmentFlag.AlignTop)
        layout.addWidget(self.restart_button, 0, Qt.AlignmentFlag.AlignTop)
        layout.addWidget(self.dismiss_button, 0, Qt.AlignmentFlag.AlignTop)
        self._set_shown(False)

    def show_backend_died(
        self,
        code: int,
        stderr_tail: str,
        *,
        had_session: bool = True,
        what: str = "The Arbor backend",
        fix: str | None = None,
    ) -> None:
        """The backend process (``what``: another one, such as the review backend) ended on its own: how,
        its last words, what to do (``fix``, else a restart's) and a Restart button."""
        if fix is None:
            fix = (
                "Restart it to continue; the conversation will be restored."
                if had_session
                else "Restart it to try again."
            )
        self._show(
            "died",
            "error",
            f"{what} stopped unexpectedly ({describe_exit(code)}).",
            fix,
            last_words(stderr_tail),
            restartable=True,
        )
        self._log = stderr_tail
        self.copy_button.setVisible(bool(stderr_tail.strip()))

    def show_error(self, info: ErrorInfo, *, restartable: bool = False) -> None:
        """A classified error: its message and the fix that goes with it."""
        self._show(info.kind, "error", info.message, info.fix or "", "", restartable=restartable)

    def show_notice(self, message: str, fix: str = "") -> None:
        """Something worth knowing that needs no action (e.g. a session that could not be restored)."""
        self._show("notice", "info", message, fix, "", restartable=False)

    def set_restartable(self, restartable: bool) -> None:
        self.restart_button.setVisible(restartable)

    def dismiss(self) -> None:
        self._set_shown(False)
        self.kind = None
        self.dismissed.emit()

    def _set_shown(self, shown: bool) -> None:
        self.wanted = shown
        if self.bar is None:
            self.setVisible(shown)
        else:
            self.bar.show_banner(shown)

    def _copy_log(self) -> None:
        QGuiApplication.clipboard().setText(self._log)

    def _show(
        self, kind: str, severity: str, title: str, fix: str, details: str, *, restartable: bool
    ) -> None:
        self.kind = kind
        self.copy_button.hide()
        self.setProperty("severity", severity)
        self._icon.setText("i" if severity == "info" else "!")
        # A dynamic property changes the stylesheet's match only after a re-polish.
        self.style().unpolish(self)
        self.style().polish(self)
        self.title.setText(title)
        self.fix.setText(fix)
        self.fix.setVisible(bool(fix))
        self.details.setText(details)
        self.details.setVisible(bool(details))
        self.set_restartable(restartable)
        self._set_shown(True)


class BannerBar(QToolBar):
    """A fixed, full-width toolbar at the window's top holding the banner; visible only while it is.

    ``window.addToolBar(BannerBar(banner))`` puts it above the docks and the central area alike.
    """

    def __init__(self, banner: Banner) -> None:
        super().__init__("Banner")
        self.setObjectName("bannerBar")
        self.setMovable(False)
        self.setFloatable(False)
        self.setAllowedAreas(Qt.ToolBarArea.TopToolBarArea)
        self.toggleViewAction().setVisible(False)  # not in the toolbars' context menu
        # A stylesheet of its own (an application rule would match too late: QToolBar's layout takes its
        # margins from the style in its constructor, before the object name is set).
        self.setStyleSheet("QToolBar#bannerBar { border: 0; padding: 0; margin: 0; spacing: 0; }")
        self.banner = banner
        banner.setVisible(True)  # from now on the toolbar's action shows and hides it
        self._action = self.addWidget(banner)
        banner.bar = self
        self.show_banner(banner.wanted)

    def show_banner(self, shown: bool) -> None:
        """Show the banner and its bar, or hide both (a toolbar's widget is hidden through its action)."""
        self._action.setVisible(shown)
        self.setVisible(shown)

    def setVisible(self, visible: bool) -> None:
        # A restored window layout must not show an empty bar.
        super().setVisible(visible and self.banner.wanted)
