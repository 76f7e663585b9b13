"""The review's output over a varied corpus is what it was before the Review pane's speed-up (issue 32, 4).

Digests taken before the change: the hunks of seeded byte pairs (CRLF, lone CR, no final newline, UTF-8 and
latin-1 bytes, repeated and unique lines), and a change set made by scripted edits (edit, write, create,
delete, rename, binary, empty and CRLF files, refused edits) as the overlay records it, as the review shows it
(full, summary, fetched hunks, after a decision) and as Apply commits it. A faster path that changes one
hunk, id, count, byte, message or commit fails here.
"""

from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path, PurePosixPath

from ide.changes import BatchStore, ChangeError, ChangeSet, Review
from ide.changes.files import file_changes
from ide.changes.hunks import split_lines, text_hunks
from ide.changes.meta import NESTED, RULES, meta_reason
from ide.protocol.review import DecideParams
from tests.support.git import git

POOL = [
    b"a\n",
    b"b\n",
    b"c\r\n",
    b"d\r\n",
    b"caf\xc3\xa9 \xe2\x80\xae\n",
    b"latin \xe9\n",
    b"\xff\xfe\n",
    b"lone\rcr\n",
    b"\r",
    b"\n",
    b"\r\n",
    b"\tx = 1\x0b\x0c\n",
    b"    return x\n",
]


def _byte_pairs() -> list[tuple[bytes, bytes]]:
    rng = random.Random(32004)
    pairs = []
    for _ in range(300):
        unique = rng.random() < 0.4
        size = rng.choice([0, 1, 2, 3, 7, 30, 120])
        lines = [f"u{k} = {k}\n".encode() if unique else rng.choice(POOL) for k in range(size)]
        new = list(lines)
        for _ in range(rng.randint(0, 10)):
            kind = rng.choice("idrm")
            at = rng.randint(0, len(new))
            line = rng.choice([*POOL, f"v{rng.randint(0, 50)}\n".encode()])
            if kind == "i" or not new:
                new.insert(at, line)
            elif kind == "d":
                del new[min(at, len(new) - 1)]
            elif kind == "r":
                new[min(at, len(new) - 1)] = line
            else:
                new.insert(rng.randint(0, len(new)), new.pop(min(at, len(new) - 1)))
        old_bytes, new_bytes = b"".join(lines), b"".join(new)
        if rng.random() < 0.3:
            old_bytes = old_bytes.rstrip(b"\r\n")
        if rng.random() < 0.3:
            new_bytes = new_bytes.rstrip(b"\n") + b"tail"
        pairs.append((old_bytes, new_bytes))
    return pairs


def test_hunks_of_varied_bytes_are_the_ones_before_the_speed_up() -> None:
    digest = hashlib.sha256()
    for index, (old, new) in enumerate(_byte_pairs()):
        digest.update(repr(split_lines(old)).encode())
        for hunk in text_hunks(f"f{index}é.txt", old, new):
            digest.update(
                repr(
                    (
                        hunk.id,
                        hunk.path,
                        hunk.old_start,
                        hunk.old_count,
                        hunk.new_start,
                        hunk.new_count,
                        hunk.lines,
                        hunk.kind,
                        hunk.additions,
                        hunk.deletions,
                        hunk.display_lines(),
                    )
                ).encode()
            )
    assert digest.hexdigest() == "ae21a090f5ad25c79c10e617570df1c605504ab8bacb9e850d3dadf26004a5fb"


def _workspace(root: Path) -> None:
    files = {
        "src/plain.py": b"".join(f"value_{n} = {n}  # line {n}\n".encode() for n in range(60)),
        "src/crlf.txt": b"".join(f"row {n}\r\n".encode() for n in range(40)),
        "src/mixed.txt": b"one\r\ntwo\nthree\r\nfour\n",
        "src/latin.txt": b"caf\xe9\nna\xefve\nplain\n",
        "src/no_newline.py": b"x = 1\ny = 2",
        "src/repeats.js": b"{\n}\n{\n}\n    return x\n{\n}\n" * 5,
        "src/café.md": "# Café\n\ntext\n".encode(),
        "data/blob.bin": b"\x00\x01\x02binary" * 10,
        "data/empty.txt": b"",
        "old/moved.py": b"def moved():\n    return 1\n",
        "old/gone.py": b"def gone():\n    return 2\n",
        "docs/keep.md": b"keep\n",
        "lone/only.txt": b"only\n",
        "src/overlap.txt": b"aaa\nxxxx\n",
    }
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        os.chmod(root / rel, 0o644)
    os.chmod(root / "src/plain.py", 0o755)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")


def _edits(changeset: ChangeSet) -> list[str]:
    """The scripted edits; the messages of the ones refused."""
    refused = []

    def attempt(call, *args):  # type: ignore[no-untyped-def]
        try:
            return call(*args)
        except (ChangeError, FileNotFoundError) as exc:
            refused.append(f"{call.__name__}: {exc}")
            return None

    for n in range(6, 60, 12):
        attempt(
            changeset.edit,
            "src/plain.py",
            f"value_{n} = {n}  #",
            f"value_{n} = {n * 100}  # changed\nextra = 1  #",
        )
    attempt(changeset.edit, "src/crlf.txt", "row 3\nrow 4", "row 3\nrow four\nrow 4½")
    attempt(changeset.edit, "src/crlf.txt", "row 30", "ROW 30")
    attempt(changeset.edit, "src/mixed.txt", "two\nthree", "2\n3")
    attempt(changeset.edit, "src/latin.txt", "naïve", "naive")
    attempt(changeset.edit, "src/latin.txt", "plain", "snowman ☃")
    attempt(changeset.edit, "src/no_newline.py", "y = 2", "y = 3")
    attempt(changeset.edit, "src/no_newline.py", "y = 3", "y = 'é'")
    attempt(changeset.edit, "src/no_newline.py", "x = 1", "x = 'ü'")
    attempt(changeset.edit, "src/plain.py", "value_1 = 1  #", "value_1 = 1\r  #")
    attempt(changeset.edit, "src/plain.py", "value_2 = 2  #", "value_2 = 2\r\n  #")
    attempt(changeset.edit, "src/plain.py", "value_3 = 3  #", "value_3 = 3  # three")
    attempt(changeset.edit, "src/plain.py", "# line 40", "# line 40\r")  # a CR that meets the LF after it
    attempt(changeset.edit, "src/plain.py", "# line 40\nvalue_41", "# line 40\nvalue_forty_one")
    attempt(changeset.edit, "src/repeats.js", "    return x", "    return y")
    attempt(changeset.edit, "src/repeats.js", "{", "[")
    attempt(changeset.edit, "src/plain.py", "absent", "x")
    attempt(changeset.edit, "src/overlap.txt", "aa", "b")  # found twice, overlapping: one occurrence
    attempt(changeset.edit, "src/overlap.txt", "xx", "y")  # twice without overlapping: refused
    attempt(changeset.edit, "src/missing.py", "a", "b")
    attempt(changeset.edit, "data/blob.bin", "binary", "text")
    attempt(changeset.edit, "src/plain.py", "", "x")
    attempt(changeset.write, "src/café.md", "# Café\n\nnew text ‮\n")
    attempt(changeset.write_bytes, "data/blob.bin", b"\x00\x01\x02other")
    attempt(changeset.write, "data/empty.txt", "now some text")
    attempt(changeset.create, "new/dir/added.py", "def added():\r\n    return 3\r\n")
    attempt(changeset.create, "new/empty.txt", "")
    attempt(changeset.create, "docs/keep.md", "twice")
    attempt(changeset.create, "docs/keep.md/below.md", "below a file")
    attempt(changeset.create, "src", "a directory")
    attempt(changeset.rename, "old/moved.py", "new/moved.py")
    attempt(changeset.edit, "new/moved.py", "return 1", "return 10")
    attempt(changeset.rename, "new/empty.txt", "new/renamed_empty.txt")
    attempt(changeset.rename, "old/gone.py", "docs/keep.md")
    attempt(changeset.delete, "old/gone.py")
    attempt(changeset.delete, "old/gone.py")
    attempt(changeset.create, "old/gone.py/x.py", "x")
    attempt(changeset.write, "new/dir", "a directory of the overlay")
    attempt(changeset.write, "src", "a directory on disk")
    attempt(changeset.write, "src/plain.py/sub.txt", "below a file on disk")
    attempt(changeset.delete, "lone/only.txt")
    attempt(changeset.create, "lone", "a file where an emptied directory was")
    attempt(changeset.create, ".gitattributes", "* text=auto\n")
    return refused


def _view_repr(view) -> bytes:  # type: ignore[no-untyped-def]
    data = view.model_dump(mode="json")
    data.pop("cwd")
    return repr(data).encode()


def test_a_scripted_change_set_records_shows_and_applies_what_it_did_before_the_speed_up(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    _workspace(root)
    changeset = ChangeSet(root)
    digest = hashlib.sha256()
    digest.update(repr(_edits(changeset)).encode())
    bases, entries = changeset.recorded()
    digest.update(repr(sorted(bases.items())).encode())
    digest.update(repr(list(entries.items())).encode())
    digest.update(repr(changeset.changed_paths()).encode())
    for change in file_changes(changeset):
        digest.update(
            repr((change.path, change.old_path, change.status, change.binary, change.hunks)).encode()
        )
    review = Review(changeset, session_id="s1", title="digest", store=BatchStore(tmp_path / "data"))
    full = review.view()
    digest.update(_view_repr(full))
    digest.update(_view_repr(review.view(summary=True)))
    paths = [f.path for f in full.files]
    digest.update(repr([f.model_dump(mode="json") for f in review.hunks(paths)]).encode())
    first = full.files[0].hunks[0].id if full.files[0].hunks else ""
    answer = review.decide(
        DecideParams(session_id="s1", decision="accepted", all=True, comment="ok"), summary=True
    )
    digest.update(_view_repr(answer))
    review.decide(DecideParams(session_id="s1", decision="rejected", hunk_ids=[first]))
    plain = next(f for f in full.files if f.path == "src/plain.py")
    review.decide(DecideParams(session_id="s1", decision="pending", hunk_ids=[plain.hunks[1].id]))
    result = review.apply("digest apply")
    assert result.batch is not None
    digest.update(repr(result.batch.paths).encode())
    digest.update(repr([c.model_dump(mode="json") for c in result.conflicts]).encode())
    digest.update(_view_repr(result.changeset))
    digest.update(git(root, "rev-parse", "HEAD^{tree}").encode())
    digest.update(git(root, "status", "--porcelain").encode())
    # Taken again when hunks gained their kind and files git's modes (issue 46, 3): with those fields left
    # out, every chunk of the digest was the one before.
    assert digest.hexdigest() == "e27233dfd6bc943b6e0ec57fb18e73aaee98af14da66b0a037eb6df482adb1e4"


def _meta_rule_by_rule(path: str) -> str | None:
    """Each rule of RULES tried in order, the first that matches wins: what meta_reason answers."""
    lower = path.lower()
    name = PurePosixPath(lower).name
    for pattern, why in RULES:
        pattern = pattern.lower()
        if pattern.startswith("*."):
            if name.endswith(pattern[1:]):
                return why
        elif pattern.endswith("/*"):
            if lower.startswith(pattern[:-1]):
                return why
        elif lower == pattern or (name == pattern and name in NESTED):
            return why
    return None


def test_meta_files_are_found_by_the_first_rule_that_matches() -> None:
    parts = [piece for pattern, _ in RULES for piece in pattern.replace("*", "x").split("/")]
    parts += ["src", ".", "..", "", "X.PTH", "Makefile", ".GitHub", "x.pth.bak", "Conftest.py", "é"]
    rng = random.Random(32)
    paths = {"/".join(rng.choice(parts) for _ in range(rng.randint(1, 4))) for _ in range(20_000)}
    for pattern, _ in RULES:
        plain = pattern.replace("*", "x")
        paths |= {plain, plain.upper(), f"sub/{plain}", f"{plain}/", f"{plain}/.", f"./{plain}"}
    assert [meta_reason(path) for path in sorted(paths)] == [
        _meta_rule_by_rule(path) for path in sorted(paths)
    ]


def test_the_overlay_asks_the_disk_about_the_path_pathlib_would_make(tmp_path: Path) -> None:
    """ChangeSet stats root + "/" + rel without pathlib only where that is the path pathlib makes."""
    changeset = ChangeSet(tmp_path)
    pieces = ["a", "b.py", ".", "..", "", "é", "x\\y", " sp ", ".hidden", "a.", "/"]
    rng = random.Random(4)
    rels = {
        "".join(rng.choice(pieces) + rng.choice(["/", ""]) for _ in range(rng.randint(1, 5)))
        for _ in range(5_000)
    }
    rels |= {"/abs", "/abs/x", "a//b", "a/./b", "./a", "a/.", "a/", ".", "..", "../a"}
    plain = 0
    for rel in sorted(rels):
        path = changeset._plain_path(rel)
        if path is not None:
            plain += 1
            assert path == str(changeset.root / rel), rel
    assert plain > 100
