"""``python -m ide`` is the ``arbor`` command."""

from ide.cli import entry

# Guarded: the index's worker processes (forkserver/spawn) import the main module as __mp_main__.
if __name__ == "__main__":
    raise SystemExit(entry())
