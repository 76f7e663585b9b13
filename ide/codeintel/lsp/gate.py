"""Which files language-server traffic may carry: exactly those read_file may read.

A language server reads the disk on its own, past every rule of the confined file system: it follows a
workspace symlink to a file outside, opens a secret module an ordinary file imports, or any path a
``sys.path`` line names. The pool asks this gate before it gives a server a file (``didOpen``) and
marks every location a server answers with; the agent's tools then show a marked location as its path
only, and withhold hover and signature text of a symbol defined there.
"""

from __future__ import annotations

import os
from pathlib import Path

from ide.fs import ConfinedFS, ToolError


class LspGate:
    """read_file's rules for one workspace, as a yes or a reason: inside the root after symlinks are
    resolved, not a secret, not git's metadata, not excluded or gitignored."""

    def __init__(self, fs: ConfinedFS) -> None:
        self.fs = fs

    def refusal(self, path: Path) -> str | None:
        """None when read_file would read ``path`` (absolute); else why not, in a few words."""
        try:
            real = self.fs.resolve(str(path))
        except ToolError as exc:
            if not self.fs.contains(path):
                return "outside the workspace"
            given = Path(os.path.normpath(path))
            inside = [given] if self.fs.root in given.parents else []
            if any(self.fs.is_secret(place) for place in [Path(os.path.realpath(path)), *inside]):
                return "a secret file"
            return str(exc)
        if self.fs.is_ignored(real):
            return "excluded from the workspace"
        return None
