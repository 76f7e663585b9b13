"""Arbor's own files — the data dir's databases (code, transcripts, memory) and what it writes beside the
user's config — private to the user: directories 0700, files 0600.

A directory is made 0700 with any parent it makes (:func:`private_dir`); a database file is created 0600
before SQLite opens it (:func:`private_file`), and SQLite gives its ``-wal``, ``-shm`` and ``-journal``
files the database file's mode. A data dir an earlier Arbor left open to other accounts is tightened
once per process, the first time Arbor makes something in it (:func:`tightened`), and the log says so.
"""

from __future__ import annotations

import logging
import os
import stat
import tempfile
import threading
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600
OTHERS = 0o077
"""The group's and other accounts' permission bits."""

log = logging.getLogger(__name__)

_checked: set[Path] = set()
_checking = threading.Lock()


def private_dir(path: Path) -> Path:
    """``path`` as a directory; it and every parent made for it are 0700 (parents already there stay as
    they are)."""
    missing: list[Path] = []
    at = path
    while not at.is_dir() and at.parent != at:
        missing.append(at)
        at = at.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=DIR_MODE)
        except FileExistsError:
            if not directory.is_dir():
                raise
        else:
            os.chmod(directory, DIR_MODE)  # mkdir's mode is narrowed by the umask, never widened: set it
    return path


def private_file(path: Path) -> Path:
    """``path`` created empty and 0600 when it does not exist yet (a database SQLite then opens: its
    sidecar files take the database file's mode); an existing file is left as it is."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), FILE_MODE)
    except FileExistsError:
        return path
    os.close(fd)
    return path


def write_private(path: Path, text: str) -> None:
    """Write ``path`` atomically as a 0600 file (in a directory made with :func:`private_dir`)."""
    fd, temp = tempfile.mkstemp(dir=private_dir(path.parent), prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def tightened(root: Path) -> Path:
    """``root`` (Arbor's data dir), after its first use in this process tightened it when it was open to
    other accounts: it and the directories under it to 0700, the files under it without the group's and
    others' bits. What cannot be changed is logged and left; nothing fails."""
    key = Path(os.path.abspath(root))
    with _checking:
        if key in _checked or os.name == "nt":  # on Windows the user's profile ACLs keep it theirs
            return root
        _checked.add(key)
        try:
            mode = stat.S_IMODE(os.stat(key).st_mode)
        except OSError:
            return root  # not made yet: private_dir makes it 0700
        if not mode & OTHERS:
            return root
        try:
            os.chmod(key, DIR_MODE)
        except OSError as exc:
            log.warning(
                "Arbor's data dir %s is readable by other accounts (mode %o) and cannot be made private: %s",
                key,
                mode,
                exc.strerror or exc,
            )
            return root
        changed, refused = _tighten_below(key)
        log.warning(
            "Arbor's data dir %s was readable by other accounts (mode %o): made it private (0700), and %d "
            "files and folders in it%s",
            key,
            mode,
            changed,
            f"; {refused} could not be changed" if refused else "",
        )
    return root


def _tighten_below(root: Path) -> tuple[int, int]:
    """Take the group's and others' bits off everything under ``root`` (links not followed): directories
    0700, files keep their owner's bits; (how many were changed, how many could not be)."""
    changed = refused = 0
    for top, dirs, files in os.walk(root, onerror=lambda exc: log.warning("cannot read %s", exc.filename)):
        for name, is_dir in [*((d, True) for d in dirs), *((f, False) for f in files)]:
            path = os.path.join(top, name)
            try:
                found = os.lstat(path)
                mode = stat.S_IMODE(found.st_mode)
                if mode & OTHERS and not stat.S_ISLNK(found.st_mode):
                    os.chmod(path, DIR_MODE if is_dir else mode & ~OTHERS)
                    changed += 1
            except OSError as exc:
                refused += 1
                log.warning("cannot make %s private: %s", path, exc.strerror or exc)
    return changed, refused
