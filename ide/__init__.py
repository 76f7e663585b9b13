"""Arbor: an IDE companion that shows an agent's search as a tree and reviews its changes in batches."""

from __future__ import annotations

from ide.acpload import install as _install_acp_loader

_install_acp_loader()


def __getattr__(name: str) -> str:
    """``ide.__version__``, read from the installed metadata when first asked for: importlib.metadata and
    its scan of the installed distributions cost more than the window's whole first frame may."""
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("arbor-ide")
    except PackageNotFoundError:  # running from a source tree that was never installed
        value = "0.0.0+source"
    globals()["__version__"] = value
    return value


def self_command(*args: str) -> list[str]:
    """The argv that runs this Arbor's ``arbor ARGS``: the bundled binary in a packaged app, else
    ``python -P -m ide`` of this interpreter.

    ``-P``: ``python -m`` puts its working directory first on ``sys.path``, and these children run in the
    user's repository (``arbor run`` there, a language server in its workspace). A hostile repository's
    ``ollama.py``, ``jedi.py`` or ``ide/`` would then be imported in place of the real module the first
    time the child imports it: code run without trust (docs/traps.md)."""
    import sys

    if getattr(sys, "frozen", False):
        return [sys.executable, *args]
    return [sys.executable, "-P", "-m", "ide", *args]
