"""ide.app.pyside_hook: PySide6's check of which modules use it, asked of a module's file instead of
inspect.getsource, gives PySide6's own answer for every module the window imports, and the window's
process runs with it from before Qt and the window's modules are imported."""

from __future__ import annotations

import subprocess
import sys

from ide.app import pyside_hook


def test_the_cheap_check_answers_as_pysides_own_for_every_module_the_window_imports() -> None:
    import ide.app.main  # installs it
    import ide.app.window  # noqa: F401

    check = getattr(sys.modules[pyside_hook.FEATURE_MODULE], pyside_hook.CHECK)
    assert check.__module__ == pyside_hook.__name__
    modules = [module for module in list(sys.modules.values()) if module is not None]
    assert len(modules) > 300
    answers = {module.__name__: (check(module), check.original(module)) for module in modules}
    assert [name for name, (ours, theirs) in answers.items() if ours != theirs] == []
    using = {name for name, (ours, _) in answers.items() if ours}
    assert {"ide.app.main", "ide.app.window", "qasync"} <= using
    assert not using & {"ide.settings", "ide.client.agentproc", "pydantic", "json"}


def test_a_module_without_a_source_file_is_left_to_pysides_check() -> None:
    asked = []

    def fallback(module: object) -> bool:
        asked.append(module)
        return True

    assert pyside_hook.uses_pyside(sys, fallback) is True  # built in: no __file__
    assert asked == [sys]


def test_the_window_process_has_it_before_qt_loads() -> None:
    """As ``arbor`` starts the window: ide.cli and the settings first, then ide.app.main, which installs it
    before it imports Qt, so the window's modules are all checked with it."""
    probe = (
        "import sys, ide.cli\n"
        "import ide.app.main\n"
        "feature = sys.modules['shibokensupport.feature']\n"
        "table = feature.pyside_feature_dict\n"
        "print(feature._mod_uses_pyside.__module__, table['ide.app.window'],"
        " table['ide.app.workspace.viewer'])\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ide.app.pyside_hook", "0", "0"]
