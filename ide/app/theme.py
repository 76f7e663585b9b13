"""The window's look: Fusion, a light palette and one stylesheet, in code so installs need no data files."""

from __future__ import annotations

from PySide6.QtGui import QColor, QFont, QFontDatabase, QPalette
from PySide6.QtWidgets import QApplication

ACCENT = "#3b6fd4"

STYLESHEET = f"""
QMainWindow::separator {{ background: #dfe3ea; width: 1px; height: 1px; }}
QDockWidget {{ font-weight: 600; }}
QDockWidget::title {{ background: #eef1f5; padding: 5px 8px; border-bottom: 1px solid #dfe3ea; }}
QLabel#panelTitle {{ font-weight: 600; }}
QLabel#mutedLabel {{ color: #7a808a; }}
QLabel#reviewMetaNote {{
    color: #7b4a0b; background: #fff7e6; border: 1px solid #f0d49c; border-radius: 3px; padding: 4px 6px;
    margin: 4px 6px 0 6px;
}}
QLabel#viewerTitle {{
    background: #f6f7f9; border-bottom: 1px solid #dfe3ea; padding: 5px 10px; color: #3c4048;
}}
QLabel#viewerMessage {{ color: #7a808a; font-size: 11pt; padding: 24px; }}
QTreeView#workspaceTree {{ border: none; }}
QTreeView#workspaceTree::item {{ padding: 2px 0; }}
QPlainTextEdit {{ border: none; selection-background-color: #cfe0ff; selection-color: black; }}
QWidget#chatColumn {{ background: #ffffff; }}
QScrollArea#chatScroll {{ background: #ffffff; }}
QFrame#userMessage {{ background: #eaf1ff; border: 1px solid #d3e0fb; border-radius: 8px; }}
QTextBrowser#assistantMessage {{ background: transparent; }}
QFrame#thought, QFrame#toolCall {{ background: #f7f8fa; border: 1px solid #e6e9ef; border-radius: 6px; }}
QLabel#thoughtText {{ color: #5f6570; padding: 0 6px 6px 22px; }}
QFrame#plan {{ background: #f4fbf6; border: 1px solid #d7eedd; border-radius: 6px; }}
QLabel#collapseHeader {{ padding: 3px 0; }}
QLabel#caption {{ color: #7a808a; font-size: 8pt; }}
QLabel#preText {{ background: #ffffff; border: 1px solid #e6e9ef; border-radius: 4px; padding: 4px; }}
QPlainTextEdit#promptEdit {{ border: 1px solid #cfd5de; border-radius: 6px; padding: 4px; background: #fff; }}
QPlainTextEdit#promptEdit:focus {{ border-color: {ACCENT}; }}
QPushButton#sendButton {{
    background: {ACCENT}; color: white; border: none; border-radius: 5px;
    padding: 5px 16px; font-weight: 600;
}}
QPushButton#sendButton:disabled {{ background: #aab9d8; }}
QPushButton#stopButton {{ border: 1px solid #d9a3a3; color: #a33; border-radius: 5px; padding: 5px 12px; }}
QFrame#separator {{ color: #dfe3ea; }}
QFrame#banner {{ border-bottom: 1px solid #e7b4b4; background: #fdecec; }}
QFrame#banner[severity="info"] {{ border-bottom: 1px solid #bcd0f5; background: #edf3ff; }}
QLabel#bannerIcon {{
    background: #c53030; color: white; font-weight: bold; border-radius: 9px;
    min-width: 18px; max-width: 18px; min-height: 18px; max-height: 18px;
}}
QFrame#banner[severity="info"] QLabel#bannerIcon {{ background: {ACCENT}; }}
QLabel#bannerTitle {{ font-weight: 600; color: #402020; }}
QFrame#banner[severity="info"] QLabel#bannerTitle {{ color: #1d2b4a; }}
QLabel#bannerFix {{ color: #4a3a3a; }}
QLabel#bannerDetails {{ background: #fff7f7; border: 1px solid #efcccc; border-radius: 4px; padding: 4px; }}
QStatusBar {{ background: #f6f7f9; border-top: 1px solid #dfe3ea; }}
QStatusBar QLabel {{ color: #4a4f58; padding: 0 6px; }}
QLabel#startFix {{ font-weight: 600; }}
QLabel#reviewIdentityWarning {{
    color: #7b4a0b; background: #fff7e6; border: 1px solid #f0d49c; border-radius: 3px; padding: 4px 6px;
}}
"""
"""The application's one stylesheet. Rules for the widgets of the first frame go here rather than in a
widget's own ``setStyleSheet``: a widget with a stylesheet of its own restyles its whole subtree whenever
a widget is added under it (docs/traps.md)."""


def mono_font(delta: float = 0.0) -> QFont:
    """The system's fixed-width font, at least 8.5 pt."""
    font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    font.setPointSizeF(max(font.pointSizeF() + delta, 8.5))
    return font


COLOURS = {
    QPalette.ColorRole.Window: "#f6f7f9",
    QPalette.ColorRole.Base: "#ffffff",
    QPalette.ColorRole.AlternateBase: "#f3f4f6",
    QPalette.ColorRole.Highlight: ACCENT,
    QPalette.ColorRole.PlaceholderText: "#9aa0a8",
}
_THEMED = "arborTheme"
"""Application property set once Fusion and the colours are on: Qt cannot say which style hides behind a
stylesheet."""


def _styled(app: QApplication) -> bool:
    """Fusion and the colours are on (whatever the stylesheet)."""
    palette = app.palette()
    return bool(app.property(_THEMED)) and all(
        palette.color(role) == QColor(colour) for role, colour in COLOURS.items()
    )


def themed(app: QApplication) -> bool:
    """True when :func:`apply_theme`'s style, colours and stylesheet are all still the application's."""
    return _styled(app) and app.styleSheet() == STYLESHEET


def apply_theme(app: QApplication, *, stylesheet: bool = True) -> None:
    """Fusion with a light palette, so the window looks the same on every desktop and offscreen.

    Once applied, applying it again does nothing: each ``setStyle`` and ``setStyleSheet`` re-polishes every
    live widget (0.12–0.16 s a time in the tests, which theme the application for each window they build).
    ``stylesheet=False`` leaves the stylesheet as it is, for a second call once the window is built:
    ``run_gui`` sets it between building the window and showing it. Set before, it made Qt restyle a
    widget's whole subtree each time that subtree was put into a parent (``QWidget::setParent`` → the
    stylesheet style's ``inheritStyle``, recursively), several times over for every widget of the window:
    a fifth of the first frame's CPU. Set after, each widget is told once (docs/traps.md)."""
    if not _styled(app):
        app.setStyle("Fusion")
        palette = app.palette()
        for role, colour in COLOURS.items():
            palette.setColor(role, QColor(colour))
        app.setPalette(palette)
        app.setProperty(_THEMED, True)
    if stylesheet and app.styleSheet() != STYLESHEET:
        app.setStyleSheet(STYLESHEET)
