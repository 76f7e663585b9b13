"""Arbor: an IDE companion that shows an agent's search as a tree and reviews its changes in batches."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("arbor-ide")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"
