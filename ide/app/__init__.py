"""Arbor's desktop window (PySide6 + qasync): an ACP client of ``arbor acp``; the only Qt code in ``ide``.

Importing this package loads no Qt; ``ide.app.main.run_gui`` does.
"""
