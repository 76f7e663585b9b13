"""PySide6's import hook, made cheap: it reads the source of every module imported after PySide6.

PySide6 (6.11) keeps a table of which modules use it, for its ``__feature__`` switches (snake_case,
true_property): every module imported after shiboken6 is looked at once (and, should anything ever
``from __feature__ import``, every module imported before), by ``shibokensupport.feature._mod_uses_pyside``,
which asks whether its source text holds "PySide6". It gets that text with ``inspect.getsource``: the file
read and split into lines in linecache, the lines joined again. For the ~250 modules the window imports
after shiboken6 before its first frame that was about 30 ms of CPU (bench/startup.py's first-paint
child, twelve alternating runs each: 0.603 s against 0.572 s); the bare QMainWindow it is measured
against imports a few dozen.

:func:`install` asks the same question of the file's bytes, and leaves any module it cannot read that way
(no ``.py`` file, an unreadable one) to PySide6's own check. Arbor never uses ``__feature__``; the table
still comes out the same (``tests/app/test_pyside_hook.py`` compares the two checks over every module
the window imports).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType

FEATURE_MODULE = "shibokensupport.feature"
CHECK = "_mod_uses_pyside"


def uses_pyside(module: ModuleType, fallback: Callable[[ModuleType], bool]) -> bool:
    """Whether ``module``'s source file names PySide6; ``fallback(module)`` when it has no readable
    ``.py`` file."""
    path = getattr(module, "__file__", None)
    if not isinstance(path, str) or not path.endswith(".py"):
        return fallback(module)
    try:
        with open(path, "rb") as handle:
            return b"PySide6" in handle.read()
    except OSError:
        return fallback(module)


def install() -> bool:
    """Swap PySide6's check for :func:`uses_pyside`, once shiboken6 is imported (it loads the hook) and
    before the modules to be checked are. False when this PySide6 has no such check (another version):
    nothing is changed then."""
    feature = sys.modules.get(FEATURE_MODULE)
    original = getattr(feature, CHECK, None)
    if feature is None or not callable(original):
        return False
    if getattr(original, "__module__", None) == __name__:
        return True

    def check(module: ModuleType) -> bool:
        return uses_pyside(module, original)

    check.__module__ = __name__
    check.original = original  # type: ignore[attr-defined]
    setattr(feature, CHECK, check)
    return True
