"""Arbor: an IDE companion that shows an agent's search as a tree and reviews its changes in batches."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("arbor-ide")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"


def self_command(*args: str) -> list[str]:
    """The argv that runs this Arbor's ``arbor ARGS``: the bundled binary in a packaged app, else
    ``python -m ide`` of this interpreter."""
    import sys

    if getattr(sys, "frozen", False):
        return [sys.executable, *args]
    return [sys.executable, "-m", "ide", *args]
