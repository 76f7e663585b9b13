"""A row of controls that wraps onto more lines when its width runs out, so a narrow pane shows every button
whole instead of squeezing them into fragments of their words."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QLayout, QLayoutItem, QSizePolicy, QWidget


class FlowLayout(QLayout):
    """Items left to right at their preferred widths, on as many lines as the width needs. On each line, an
    item whose horizontal policy expands takes what the line leaves (shared among them); a line without
    one is right-aligned, as a toolbar's buttons are. An item wider than the whole width is given it."""

    def __init__(self, parent: QWidget | None = None, spacing: int = 0) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self.setSpacing(spacing)

    def addItem(self, item: QLayoutItem) -> None:
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:  # type: ignore[override]
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:  # type: ignore[override]
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self._arrange(QRect(0, 0, width, 0), place=False)

    def setGeometry(self, rect: QRect) -> None:
        super().setGeometry(rect)
        self._arrange(rect, place=True)

    def sizeHint(self) -> QSize:
        """Everything on one line."""
        shown = self._shown()
        margins = self.contentsMargins()
        width = sum(item.sizeHint().width() for item in shown) + self.spacing() * max(0, len(shown) - 1)
        height = max((item.sizeHint().height() for item in shown), default=0)
        return QSize(width + margins.left() + margins.right(), height + margins.top() + margins.bottom())

    def minimumSize(self) -> QSize:
        """As narrow as its widest item, each on a line of its own."""
        size = QSize()
        for item in self._shown():
            size = size.expandedTo(item.minimumSize())
        margins = self.contentsMargins()
        return size + QSize(margins.left() + margins.right(), margins.top() + margins.bottom())

    def _shown(self) -> list[QLayoutItem]:
        return [item for item in self._items if not item.isEmpty()]

    def _lines(self, width: int) -> list[list[QLayoutItem]]:
        lines: list[list[QLayoutItem]] = [[]]
        used = 0
        for item in self._shown():
            wanted = min(item.sizeHint().width(), width)
            if lines[-1] and used + self.spacing() + wanted > width:
                lines.append([])
                used = 0
            used += (self.spacing() if lines[-1] else 0) + wanted
            lines[-1].append(item)
        return [line for line in lines if line]

    def _arrange(self, rect: QRect, *, place: bool) -> int:
        """Lay the items out in ``rect`` (only measure, unless ``place``); the height they take."""
        margins = self.contentsMargins()
        area = rect.adjusted(margins.left(), margins.top(), -margins.right(), -margins.bottom())
        width = max(1, area.width())
        y = area.y()
        for line in self._lines(width):
            widths = [max(min(item.sizeHint().width(), width), item.minimumSize().width()) for item in line]
            widths = [min(w, width) for w in widths]
            left = width - sum(widths) - self.spacing() * (len(line) - 1)
            growing = [i for i, item in enumerate(line) if _expands(item)]
            for n, i in enumerate(growing):
                widths[i] += left // len(growing) + (1 if n < left % len(growing) else 0)
            heights = [
                item.heightForWidth(w) if item.hasHeightForWidth() else item.sizeHint().height()
                for item, w in zip(line, widths, strict=True)
            ]
            height = max(heights)
            x = area.x() + (0 if growing else max(0, left))
            if place:
                for item, w, h in zip(line, widths, heights, strict=True):
                    item.setGeometry(QRect(QPoint(x, y + (height - h) // 2), QSize(w, h)))
                    x += w + self.spacing()
            y += height + self.spacing()
        return y - self.spacing() - area.y() + margins.top() + margins.bottom() if self._shown() else 0


def _expands(item: QLayoutItem) -> bool:
    policy = item.widget().sizePolicy().horizontalPolicy() if item.widget() is not None else None
    return policy is not None and bool(policy.value & QSizePolicy.PolicyFlag.ExpandFlag.value)
