"""Entry point of the packaged app: the ``arbor`` command (window, backend and CLI in one binary)."""

import multiprocessing

from ide.cli import entry

if __name__ == "__main__":
    multiprocessing.freeze_support()  # the index's worker processes start this binary again
    raise SystemExit(entry())
