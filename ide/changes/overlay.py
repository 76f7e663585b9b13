"""The change set: an in-memory overlay of the agent's edits over a workspace, which it never writes."""

from __future__ import annotations

import difflib
import os
import stat
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import compress, repeat
from pathlib import Path

from ide.changes.stamps import Stamp, stamp, vouching
from ide.fswalk import walk_files
from ide.protocol.diff import quote_path
from ide.protocol.hidden import name_refusal


class ChangeError(Exception):
    """An edit the agent got wrong, or an apply/rollback that cannot go on; the message says the fix."""


@dataclass(frozen=True)
class Base:
    """What a path held on disk when the overlay first touched it (``data`` None: it did not exist)."""

    data: bytes | None
    mode: int | None


@dataclass(frozen=True)
class Entry:
    """Proposed state of a path: ``data`` None means deleted; ``origin``: the path it was renamed from."""

    data: bytes | None
    mode: int | None
    origin: str | None = None


DEFAULT_MODE = 0o644


@dataclass(frozen=True)
class OnDisk:
    """A file as read from disk, and the stamp it was read under (None: to be read again next time)."""

    base: Base
    stamp: Stamp | None


def git_permissions(mode: int | None) -> int:
    """The permission bits git keeps of ``mode``: 0o755 when any execute bit is set, else 0o644 (None, a
    file of no known mode: 0o644). Git records nothing else: never setuid, setgid or sticky."""
    return 0o755 if (mode or 0) & 0o111 else 0o644


def git_mode(mode: int | None) -> str:
    """The mode git records for a file of permission bits ``mode``: ``100755`` or ``100644``."""
    return "100755" if (mode or 0) & 0o111 else "100644"


def check_name(rel: str) -> None:
    """Refuse a path no author may give a file (``ide.protocol.hidden.name_refusal``: control, bidi or
    invisible characters), with the character and why. The change set checks each path an entry or a base
    is set for, whoever sets it, and Apply checks what it writes again."""
    refusal = name_refusal(rel)
    if refusal is not None:
        raise ChangeError(f"{quote_path(rel)} was refused: {refusal}")


MAX_FILE_BYTES = 1_000_000
"""The default of ``workspace.max_file_bytes`` (ide.settings), for change sets made without settings."""


def decode(data: bytes) -> tuple[str, str]:
    """(text with "\\n" endings, encoding): UTF-8, or latin-1 so undecodable bytes round-trip faithfully."""
    try:
        text, encoding = data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        text, encoding = data.decode("latin-1"), "latin-1"
    return text.replace("\r\n", "\n"), encoding


def encode_like(text: str, base: bytes | None, path: str = "", encoding: str | None = None) -> bytes:
    """``text`` in ``base``'s encoding and line endings; lines that did not change keep their bytes.

    ``encoding``: ``base``'s, when the caller already decoded it (what :func:`decode` says of it)."""
    if base is None:
        return text.encode("utf-8")
    if encoding is None:
        _, encoding = decode(base)
    if b"\r\n" not in base:
        # Nothing was normalised and both encodings are bijective: unchanged lines keep their bytes.
        return _encode(text, encoding, path)
    eol = "\r\n" if base.count(b"\r\n") * 2 > base.count(b"\n") else "\n"
    old_bytes = _split(base, b"\n")
    old_text = [line.decode(encoding).replace("\r\n", "\n") for line in old_bytes]
    new_text = _split(text, "\n")
    out: list[bytes] = []
    matcher = difflib.SequenceMatcher(None, old_text, new_text, autojunk=False)
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag == "equal":
            out.extend(old_bytes[a1:a2])
            continue
        for line in new_text[b1:b2]:
            if line.endswith("\n") and not line.endswith("\r\n"):
                line = line[:-1] + eol
            out.append(_encode(line, encoding, path))
    return b"".join(out)


def _encode(text: str, encoding: str, path: str) -> bytes:
    try:
        return text.encode(encoding)
    except UnicodeEncodeError as err:
        raise ChangeError(
            f"{path} is {encoding}-encoded and cannot hold {text[err.start : err.end]!r}; "
            "use characters that encoding has"
        ) from err


def _split(data, sep):  # type: ignore[no-untyped-def]
    parts = data.split(sep)
    out = [part + sep for part in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


class ChangeSet:
    """Edits of one session (or one search branch) over the workspace at ``root``.

    Paths are workspace-relative POSIX strings, already confined by the caller. A path with no pending
    entry reads as the disk holds it now (read again only when its ``stat`` stamp moved), and an edit's
    base is what the disk held when it was made: hunks are made against it, and apply detects "changed on
    disk since the agent read it" by comparing with it. :func:`ide.changes.refresh.refresh_bases` moves a
    pending edit's base to the disk when the two merge cleanly.
    """

    def __init__(
        self, root: Path, *, parent: ChangeSet | None = None, max_file_bytes: int | None = None
    ) -> None:
        self.root = Path(os.path.realpath(root))
        self._root_prefix = str(self.root).rstrip("/") + "/" if os.sep == "/" else None
        self.id = uuid.uuid4().hex
        self.max_file_bytes = (
            max_file_bytes
            if max_file_bytes is not None
            else parent.max_file_bytes
            if parent
            else MAX_FILE_BYTES
        )
        """Files larger than this are never read into the overlay (workspace.max_file_bytes)."""
        # A child copies the parent's dicts (references to immutable bytes): cheap, and isolated both ways.
        self._base: dict[str, Base] = dict(parent._base) if parent else {}
        self._entries: dict[str, Entry] = dict(parent._entries) if parent else {}
        self._stamps: dict[str, Stamp | None] = dict(parent._stamps) if parent else {}
        """The stamps of the bases this set read from disk itself (None: to be read again); a base given
        by :meth:`rebase` has none and is kept as given."""
        self.overlaps: dict[str, str] = dict(parent.overlaps) if parent else {}
        """Why a pending edit keeps the base it was made on though the disk moved: the two overlap."""
        self._last_text: tuple[bytes, str] | None = None
        """The bytes the last text write made and their text, when that is what :func:`decode` gives back
        (ASCII without a CR): the next edit of the same file takes it instead of decoding them again."""

    def child(self) -> ChangeSet:
        """A copy-on-write child: it sees this set's edits so far; its own edits never show here."""
        return ChangeSet(self.root, parent=self)

    def adopt(self, other: ChangeSet) -> None:
        """Take ``other``'s bases and proposed entries as this set's own (a search's chosen branch).

        ``other`` must be over the same workspace, normally a descendant made by :meth:`child`, so it
        already holds this set's edits; what it does not propose is dropped here too.
        """
        if other.root != self.root:
            raise ChangeError(f"cannot adopt a change set of {other.root} into one of {self.root}")
        self._base = {**self._base, **other._base}
        for rel in other._base:
            if rel in other._stamps:
                self._stamps[rel] = other._stamps[rel]
            else:
                self._stamps.pop(rel, None)
        self._entries = dict(other._entries)

    def state_key(self) -> frozenset[tuple[str, Entry]]:
        """A hashable value equal for two sets that propose the same entries (the tool-call cache's key)."""
        return frozenset(self._entries.items())

    def recorded(self) -> tuple[dict[str, Base], dict[str, Entry]]:
        """Copies of the recorded bases and the proposed entries, in insertion order."""
        return dict(self._base), dict(self._entries)

    @classmethod
    def from_recorded(
        cls, root: Path, bases: dict[str, Base], entries: dict[str, Entry], *, id: str | None = None
    ) -> ChangeSet:
        """A change set with exactly these bases and entries; nothing is read from disk."""
        changeset = cls(root)
        if id is not None:
            changeset.id = id
        changeset._base = dict(bases)
        changeset._entries = dict(entries)
        return changeset

    def base(self, rel: str) -> Base:
        """The base of ``rel``: a pending entry's recorded base, one given by :meth:`rebase`, else what the
        disk holds now (recorded)."""
        found = self._base.get(rel)
        if found is None or (rel in self._stamps and rel not in self._entries):
            return self.on_disk(rel).base
        return found

    def on_disk(self, rel: str) -> OnDisk:
        """What the disk holds at ``rel`` now, read only when its stamp moved since this set last read it;
        recorded as its base unless an entry is pending there."""
        path = self._plain_path(rel) or self.root / rel
        taken = time.time_ns()  # before the stat: a write after the stat moves the stamp
        now = stamp(path)
        known = self._stamps.get(rel)
        if known is not None and known == now and rel in self._base:
            return OnDisk(self._base[rel], known)
        found = OnDisk(_disk(path, self.max_file_bytes, rel), vouching(now, taken))
        if rel not in self._entries or rel not in self._base:
            self._base[rel], self._stamps[rel] = found.base, found.stamp
        return found

    def moved(self, paths: Iterable[str] | None = None) -> dict[str, OnDisk]:
        """Pending paths (of ``paths``; default all) whose file on disk no longer holds their base, with
        what it holds now. Only a path whose stamp moved is read; one found unchanged keeps the new stamp."""
        found: dict[str, OnDisk] = {}
        for rel in list(self._entries if paths is None else (p for p in paths if p in self._entries)):
            now = self.on_disk(rel)
            if now.base == self.base(rel):
                self._stamps[rel] = now.stamp
            else:
                found[rel] = now
        return found

    def rebase(self, rel: str, base: Base | OnDisk) -> None:
        """Make ``base`` the base of ``rel`` (after an apply wrote part of the change, a capture of another
        agent's files, or — an :class:`OnDisk` — the disk moved under a pending edit); a ChangeError for a
        name no file may have (:func:`check_name`)."""
        check_name(rel)
        if isinstance(base, OnDisk):
            self._base[rel], self._stamps[rel] = base.base, base.stamp
        else:
            self._base[rel] = base
            self._stamps.pop(rel, None)
        self.overlaps.pop(rel, None)

    def forget_bases(self, paths: Iterable[str] | None = None) -> None:
        """Drop the recorded bases of ``paths`` (default all) that no pending edit is made against, so they
        read as the disk holds them (after Apply, or a Roll back wrote them)."""
        kept = set(self._entries) | {e.origin for e in self._entries.values() if e.origin}
        for rel in list(self._base if paths is None else paths):
            if rel not in kept:
                self._base.pop(rel, None)
                self._stamps.pop(rel, None)

    def entry(self, rel: str) -> Entry | None:
        return self._entries.get(rel)

    def set_entry(self, rel: str, entry: Entry | None) -> None:
        """Set (or with None, forget) the proposed state of ``rel``: the way every author's entry comes in
        that is not one of the edits below (another agent's captured files, what Apply leaves to review).
        A ChangeError, before anything changes, for a name no file may have (:func:`check_name`), of
        ``rel`` or of the file it was renamed from."""
        if entry is None:
            self._entries.pop(rel, None)
            self.overlaps.pop(rel, None)
            return
        check_name(rel)
        if entry.origin:
            check_name(entry.origin)
        self._entries[rel] = entry

    def _plain_path(self, rel: str) -> str | None:
        """``str(self.root / rel)`` without pathlib's cost, for a plain ``rel`` (no empty or "." part, no
        leading or trailing "/": pathlib's path is then root + "/" + rel); None for any other."""
        prefix = self._root_prefix
        if (
            prefix is not None
            and rel
            and rel[0] != "/"
            and rel[-1] != "/"
            and "//" not in rel
            and "/./" not in f"/{rel}/"
        ):
            return prefix + rel
        return None

    def _disk_is(self, rel: str, kind: Callable[[int], bool]) -> bool:
        """``(self.root / rel).is_dir()`` (``kind`` S_ISDIR) or ``.is_file()`` (S_ISREG), without
        pathlib's cost for a plain relative path; pathlib itself answers anything else, and any error."""
        path = self._plain_path(rel)
        if path is not None:
            try:
                return kind(os.stat(path).st_mode)
            except (OSError, ValueError):
                pass  # pathlib's own errors, the ones it raises and the ones it answers False to
        return (self.root / rel).is_dir() if kind is stat.S_ISDIR else (self.root / rel).is_file()

    def _current(self, rel: str) -> tuple[bytes | None, int | None]:
        entry = self._entries.get(rel)
        if entry is not None:
            return entry.data, entry.mode
        if self._disk_is(rel, stat.S_ISDIR):
            return None, None
        base = self.on_disk(rel).base
        return base.data, base.mode

    def exists(self, rel: str) -> bool:
        entry = self._entries.get(rel)
        if entry is not None and entry.data is not None:
            return True
        # Without reading the file: a listing should not snapshot every file it sees.
        if entry is None and self._disk_is(rel, stat.S_ISREG):
            return True
        return self.is_dir(rel)

    def is_dir(self, rel: str) -> bool:
        rel = rel.strip("/")
        if rel in ("", "."):
            return True
        entry = self._entries.get(rel)
        if entry is not None and entry.data is not None:
            return False  # a file this set proposes: nothing is ever proposed below a file (check_file_path)
        prefix = rel + "/"
        # The paths below ``rel`` picked in C; whether one of them is a file is asked of those alone.
        below = compress(self._entries.values(), map(str.startswith, self._entries, repeat(prefix)))
        if any(e.data is not None for e in below):
            return True
        if not self._disk_is(rel, stat.S_ISDIR):
            return False
        # A directory all of whose files the overlay deleted or moved away no longer exists.
        removed = {p for p, e in self._entries.items() if e.data is None and p.startswith(prefix)}
        if not removed:
            return True
        return any(f"{prefix}{name}" not in removed for name in walk_files(self.root / rel))

    def read_bytes(self, rel: str) -> bytes:
        data, _ = self._current(rel)
        if data is None:
            raise FileNotFoundError(
                f"{rel} does not exist" + (" (deleted in this change set)" if rel in self._entries else "")
            )
        return data

    def read_text(self, rel: str) -> str:
        """Text of ``rel`` with "\\n" line endings (latin-1 when it is not UTF-8)."""
        return decode(self.read_bytes(rel))[0]

    def mode(self, rel: str) -> int | None:
        return self._current(rel)[1]

    def listdir(self, rel: str) -> list[tuple[str, bool]]:
        """(name, is_dir) of directory ``rel``, with the overlay's creates, deletes and renames merged in."""
        rel = rel.strip("/")
        rel = "" if rel == "." else rel
        if not self.is_dir(rel):
            raise NotADirectoryError(f"{rel or '.'} is not a directory")
        names: dict[str, bool] = {}
        directory = self.root / rel
        if directory.is_dir():
            for child in os.scandir(directory):
                try:
                    names[child.name] = child.is_dir()
                except OSError:  # a link loop: listed as the file it pretends to be, never entered
                    names[child.name] = False
        prefix = rel + "/" if rel else ""
        for path, entry in self._entries.items():
            if not path.startswith(prefix):
                continue
            name, _, rest = path[len(prefix) :].partition("/")
            if entry.data is not None:
                names[name] = bool(rest)
        out = []
        for name, is_dir in sorted(names.items()):
            child = prefix + name
            entry = self._entries.get(child)
            if entry is not None and not is_dir:
                if entry.data is not None:
                    out.append((name, False))
            elif is_dir:
                if self.is_dir(child):
                    out.append((name, True))
            else:
                out.append((name, False))
        return out

    def changed_paths(self) -> list[str]:
        """Paths whose proposed state differs from their base, sorted."""
        return sorted(p for p, e in self._entries.items() if self._differs(p, e))

    def _differs(self, rel: str, entry: Entry) -> bool:
        """Whether ``entry`` changes ``rel`` as git sees it: its bytes, its mode as git records it
        (:func:`git_mode`: other permission bits are no change), or its name."""
        base = self.base(rel)
        return (
            entry.data != base.data
            or (entry.data is not None and git_mode(entry.mode) != git_mode(base.mode))
            or bool(entry.origin)
        )

    def diff_texts(self, rel: str) -> tuple[str | None, str | None]:
        """(base text or None when new, proposed text or None when deleted), for ACP diff content."""
        entry = self._entries.get(rel)
        if entry is None:
            text = self.read_text(rel)
            return text, text
        old = self.base(entry.origin or rel).data
        return (
            None if old is None else decode(old)[0],
            None if entry.data is None else decode(entry.data)[0],
        )

    def check_file_path(self, rel: str, *, on_disk: bool = False) -> None:
        """Refuse a file at ``rel`` that Apply could never write: the workspace root, a directory, or a
        path below a file. Checked when the edit is made, so such an entry never reaches review; Apply
        checks again ``on_disk`` (what is there now, whatever this set proposes)."""
        parts = rel.strip("/").split("/")
        if rel.strip("/") in ("", "."):
            raise ChangeError("give a file path, not the workspace root")
        if self._disk_is(rel, stat.S_ISDIR) if on_disk else self.is_dir(rel):
            raise ChangeError(f"{rel} is a directory; a file cannot take its place")
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            entry = None if on_disk else self._entries.get(parent)
            if (entry.data is not None) if entry is not None else self._disk_is(parent, stat.S_ISREG):
                raise ChangeError(f"{parent} is a file, so {rel} cannot be created below it")

    def _set(self, rel: str, data: bytes | None, mode: int | None, origin: str | None = None) -> None:
        check_name(rel)
        if data is not None:
            self.check_file_path(rel)
        previous = self._entries.get(rel)
        if previous is None and rel not in self._base:
            self.on_disk(rel)  # recorded just before by _current, which read what the edit changes
        if origin is None and previous is not None:
            origin = previous.origin
        self._entries[rel] = Entry(data, mode, origin)

    def edit(self, rel: str, old_text: str, new_text: str) -> int:
        """Replace the one exact occurrence of ``old_text``; returns the 1-based line where it starts."""
        text, encoding = self._text_for_edit(rel)
        old_text = old_text.replace("\r\n", "\n")
        new_text = new_text.replace("\r\n", "\n")
        if not old_text:
            raise ChangeError(f"old_text is empty; to replace all of {rel} use write_file")
        at = text.find(old_text)
        if at < 0:
            raise ChangeError(_no_match(rel, text, old_text))
        # A second occurrence that does not overlap the first (what str.count would count).
        if text.find(old_text, at + len(old_text)) >= 0:
            lines, start = [], 0
            while (at := text.find(old_text, start)) >= 0:
                lines.append(text.count("\n", 0, at) + 1)
                start = at + 1
            raise ChangeError(
                f"old_text matches {len(lines)} places in {rel} (lines {', '.join(map(str, lines))}); "
                "include more surrounding lines so it matches exactly one"
            )
        self._write_text(rel, text[:at] + new_text + text[at + len(old_text) :], encoding)
        return text.count("\n", 0, at) + 1

    def write(self, rel: str, content: str) -> None:
        """Create ``rel`` or replace all of its text."""
        current, _ = self._current(rel)
        if current is not None:
            had_newline = current.endswith(b"\n")
            if content and not had_newline and content.endswith("\n"):
                content = content[:-1]
            elif content and had_newline and not content.endswith("\n"):
                content += "\n"
        self._write_text(rel, content.replace("\r\n", "\n"))

    def write_bytes(self, rel: str, data: bytes) -> None:
        """Create ``rel`` or replace its bytes exactly (binary files, or content from elsewhere)."""
        _, mode = self._current(rel)
        self._set(rel, data, mode if mode is not None else DEFAULT_MODE)

    def create(self, rel: str, content: str) -> None:
        """Create a new file ``rel``; an error when it exists."""
        if self.exists(rel):
            raise ChangeError(f"{rel} already exists; use edit_file or write_file to change it")
        self._write_text(rel, content.replace("\r\n", "\n"))

    def delete(self, rel: str) -> None:
        check_name(rel)
        data, _ = self._current(rel)
        if data is None:
            raise ChangeError(f"{rel} does not exist, so it cannot be deleted")
        if self.base(rel).data is None:
            self._entries.pop(rel, None)  # created (or renamed here) in this change set: just forget it
        else:
            self._entries[rel] = Entry(None, None)

    def rename(self, rel: str, new_rel: str) -> None:
        """Move ``rel`` to ``new_rel``; an error when the target exists."""
        check_name(new_rel)
        data, mode = self._current(rel)
        if data is None:
            raise ChangeError(f"{rel} does not exist, so it cannot be renamed")
        if self.exists(new_rel):
            raise ChangeError(f"{new_rel} already exists; delete it first or choose another name")
        self.check_file_path(new_rel)
        entry = self._entries.get(rel)
        origin = entry.origin if entry is not None and entry.origin else rel
        if self.base(origin).data is None:
            origin = None  # a file created in this change set just gets another name
        self.delete(rel)
        if new_rel not in self._entries:
            self.on_disk(new_rel)  # nothing, as exists said: the base of what the rename makes there
        self._entries[new_rel] = Entry(data, mode, None if origin == new_rel else origin)

    def _text_for_edit(self, rel: str) -> tuple[str, str]:
        """The text of ``rel`` to edit and its encoding (:func:`decode`)."""
        try:
            data = self.read_bytes(rel)
        except FileNotFoundError as err:
            raise ChangeError(f"{rel} does not exist; use create_file to make it") from err
        if b"\x00" in data[:8000]:
            raise ChangeError(f"{rel} is a binary file and cannot be edited as text")
        last = self._last_text
        if last is not None and last[0] is data:
            return last[1], "utf-8"
        return decode(data)

    def _write_text(self, rel: str, text: str, encoding: str | None = None) -> None:
        """``text`` written as ``rel``'s; ``encoding``: that of its current bytes, when already known."""
        current, mode = self._current(rel)
        data = encode_like(text, current, rel, encoding)
        self._set(rel, data, mode if mode is not None else DEFAULT_MODE)
        # ASCII bytes without a CR decode to exactly the text they were encoded from, as UTF-8.
        self._last_text = (data, text) if data.isascii() and b"\r" not in data else None


class FileTooLarge(ChangeError):
    """A file over ``workspace.max_file_bytes``: stat says so before a byte of it is read."""


def _disk(path: Path | str, limit: int, rel: str) -> Base:
    try:
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            return Base(None, None)
        info = os.stat(path)
        if info.st_size > limit:
            raise FileTooLarge(
                f"{rel} is {info.st_size} bytes, over the {limit}-byte limit (workspace.max_file_bytes); "
                "it is neither read nor edited"
            )
        with open(path, "rb") as file:
            return Base(file.read(), stat.S_IMODE(info.st_mode))
    except (FileNotFoundError, NotADirectoryError):
        return Base(None, None)


def _no_match(rel: str, text: str, old_text: str) -> str:
    lines = text.split("\n")
    wanted = old_text.strip("\n").split("\n")
    size = len(wanted)
    best, best_at = 0.0, 0
    target = "\n".join(wanted)
    for at in range(max(1, len(lines) - size + 1)):
        window = "\n".join(lines[at : at + size])
        matcher = difflib.SequenceMatcher(None, window, target, autojunk=False)
        if matcher.real_quick_ratio() <= best or matcher.quick_ratio() <= best:
            continue
        ratio = matcher.ratio()
        if ratio > best:
            best, best_at = ratio, at
    message = f"old_text was not found in {rel}."
    if best > 0.3:
        shown = "\n".join(
            f"{best_at + i + 1:>5}: {line}" for i, line in enumerate(lines[best_at : best_at + size])
        )
        message += (
            f" The closest lines ({best:.0%} similar) are:\n{shown}\n"
            "Copy old_text exactly from the file (read it again if it changed)."
        )
    else:
        message += " Read the file again and copy old_text exactly."
    return message
