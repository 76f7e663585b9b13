"""Fixtures for window tests (defined in tests/support/window.py, where their use is explained)."""

from tests.support.window import make_window, qloop, qsettings_dir, session_qloop  # noqa: F401
