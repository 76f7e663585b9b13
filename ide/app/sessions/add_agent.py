"""Agent → Add Agent…: the ACP registry's agents, each with its distributions (npx, uvx, binary), and the
``[agents]`` entry that runs the chosen one, to copy into a config file.

This dialog never writes the user's config files (only the sign-in dialog stores an agent's env, in
:mod:`ide.app.sessions.part_auth`): it shows the exact TOML and where it goes (the user's
config.toml, or the workspace's .arbor/config.toml, which applies once the workspace is trusted), with a
Copy button. The feed is read on a worker thread when the dialog opens (from the cache while it is fresh)
and again on Refresh; a failure is said in the dialog and the list shown before stays.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from ide.client.registry import (
    Distribution,
    Feed,
    RegistryAgent,
    RegistryError,
    host_platform,
    load_feed,
    toml_entry,
)


class _Loader(QObject):
    """Carries a worker thread's result back to the UI thread (a queued signal)."""

    done = Signal(object)
    """A :class:`Feed`, or the :class:`RegistryError`'s message (str)."""


class AddAgentDialog(QDialog):
    """The registry's agents on the left; the chosen one's description, distribution and TOML entry on the
    right."""

    loaded = Signal()
    """The list was shown or a failure said (tests and scripts wait on it)."""

    def __init__(
        self,
        url: str,
        data_dir: Path,
        user_config: Path,
        workspace_config: Path,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("addAgentDialog")
        self.setWindowTitle("Add Agent from the ACP Registry")
        self.url, self.data_dir = url, data_dir
        self.feed: Feed | None = None
        self._loader = _Loader(self)
        self._loader.done.connect(self._show)
        self._busy = False

        self.status = QLabel("")
        self.status.setObjectName("registryStatus")
        self.status.setWordWrap(True)
        self.refresh_button = QPushButton("&Refresh")
        self.refresh_button.clicked.connect(lambda: self.load(refresh=True))
        top = QHBoxLayout()
        top.addWidget(self.status, 1)
        top.addWidget(self.refresh_button)

        self.agents = QListWidget()
        self.agents.setObjectName("registryAgents")
        self.agents.currentRowChanged.connect(self._chosen)

        self.title = QLabel("")
        self.title.setTextFormat(Qt.TextFormat.PlainText)
        self.title.setStyleSheet("font-weight: bold")
        self.description = QLabel("")
        self.description.setWordWrap(True)
        self.description.setTextFormat(Qt.TextFormat.PlainText)
        self.distribution = QComboBox()
        self.distribution.setObjectName("registryDistribution")
        self.distribution.currentIndexChanged.connect(self._entry)
        self.entry = QPlainTextEdit()
        self.entry.setObjectName("registryEntry")
        self.entry.setReadOnly(True)
        self.copy_button = QPushButton("&Copy")
        self.copy_button.setEnabled(False)
        self.copy_button.clicked.connect(self.copy)
        where = QLabel(
            "This dialog does not write config files. Paste this entry into your config:\n"
            f"  {user_config}\n"
            f"or this workspace's (it applies once the workspace is trusted):\n  {workspace_config}\n"
            "then pick the agent under Agent → Use Agent (after reopening the window)."
        )
        where.setObjectName("registryWhere")
        where.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        where.setWordWrap(True)
        details = QWidget()
        right = QVBoxLayout(details)
        right.addWidget(self.title)
        right.addWidget(self.description)
        right.addWidget(QLabel("Distribution:"))
        right.addWidget(self.distribution)
        right.addWidget(QLabel("[agents] entry:"))
        right.addWidget(self.entry, 1)
        copy_row = QHBoxLayout()
        copy_row.addWidget(where, 1)
        copy_row.addWidget(self.copy_button, 0, Qt.AlignmentFlag.AlignTop)
        right.addLayout(copy_row)

        split = QSplitter()
        split.addWidget(self.agents)
        split.addWidget(details)
        split.setStretchFactor(1, 2)
        split.setSizes([300, 600])
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(split, 1)
        layout.addWidget(buttons)
        self.resize(960, 560)

    def load(self, *, refresh: bool = False) -> None:
        """Read the feed on a worker thread (the cache while fresh, unless ``refresh``)."""
        if self._busy:
            return
        self._busy = True
        self.refresh_button.setEnabled(False)
        self.status.setText(f"Reading {self.url}…")
        url, data_dir, done = self.url, self.data_dir, self._loader.done

        def work() -> None:
            try:
                result: Feed | str = load_feed(url, data_dir, refresh=refresh)
            except RegistryError as exc:
                result = str(exc)
            except Exception as exc:
                result = f"reading the registry failed: {exc}"
            with contextlib.suppress(RuntimeError):  # the dialog was deleted meanwhile: nobody waits
                done.emit(result)

        threading.Thread(target=work, name="arbor-registry", daemon=True).start()

    def _show(self, result: Feed | str) -> None:
        self._busy = False
        self.refresh_button.setEnabled(True)
        if isinstance(result, str):
            kept = " The list read before stays." if self.feed is not None else ""
            self.status.setText(f"Could not read the registry: {result}.{kept}")
            self.loaded.emit()
            return
        chosen = self.current_agent()
        self.feed = result
        source = "cached copy of" if result.from_cache else "read from"
        self.status.setText(f"{len(result.agents)} agents, {source} {result.url}")
        if result.warning:
            self.status.setText(f"{self.status.text()} — {result.warning}")
        self.agents.clear()
        for agent in result.agents:
            kinds = sorted({d.kind for d in agent.distributions}, key=("npx", "uvx", "binary").index)
            item = QListWidgetItem(f"{agent.name} {agent.version}  ·  {', '.join(kinds)}")
            item.setToolTip(agent.description)
            self.agents.addItem(item)
        row = next((i for i, a in enumerate(result.agents) if chosen and a.id == chosen.id), 0)
        if result.agents:
            self.agents.setCurrentRow(row)
        self.loaded.emit()

    def current_agent(self) -> RegistryAgent | None:
        row = self.agents.currentRow()
        if self.feed is None or not 0 <= row < len(self.feed.agents):
            return None
        return self.feed.agents[row]

    def _chosen(self, _row: int) -> None:
        agent = self.current_agent()
        self.distribution.blockSignals(True)
        self.distribution.clear()
        if agent is None:
            self.distribution.blockSignals(False)
            self._entry()
            return
        self.title.setText(f"{agent.name} {agent.version} ({agent.id})")
        self.description.setText(agent.description)
        here = host_platform()
        usable = [
            d for d in agent.distributions if d.kind != "binary" or d.platform == here
        ] or agent.distributions
        for distribution in usable:
            self.distribution.addItem(distribution.label, distribution)
        self.distribution.blockSignals(False)
        self._entry()

    def current_distribution(self) -> Distribution | None:
        data = self.distribution.currentData()
        return data if isinstance(data, Distribution) else None

    def _entry(self, _index: int = 0) -> None:
        agent, distribution = self.current_agent(), self.current_distribution()
        text = toml_entry(agent, distribution) if agent and distribution else ""
        self.entry.setPlainText(text)
        self.copy_button.setEnabled(bool(text))

    def copy(self) -> None:
        """Put the shown ``[agents]`` entry on the clipboard."""
        QGuiApplication.clipboard().setText(self.entry.toPlainText())
        self.status.setText("The entry is on the clipboard: paste it into a config file named below.")
