"""Property: apply any decisions, then roll back — every byte and exec bit is as it was."""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ide.changes import BatchStore, ChangeSet, Review, rollback_batch
from ide.changes.hunks import apply_hunks, text_hunks
from ide.protocol.review import DecideParams

LINE = st.sampled_from([b"a\n", b"b\r\n", b"caf\xe9\n", b"\xff\n", b"x = 1\n", b"\n", b"\x00bin\n"])
CONTENT = (
    st.lists(LINE, max_size=12)
    .map(b"".join)
    .flatmap(lambda data: st.sampled_from([data, data.rstrip(b"\n")]))
)
NAMES = ["a.txt", "b.sh", "dir/c.txt"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    use_git=st.booleans(),
    before=st.fixed_dictionaries({n: st.tuples(CONTENT, st.booleans()) for n in NAMES}),
    after=st.fixed_dictionaries({n: st.one_of(st.none(), CONTENT) for n in [*NAMES, "new.txt"]}),
    data=st.data(),
)
def test_rollback_restores_bytes_and_exec_bit(
    use_git: bool,
    before: dict[str, tuple[bytes, bool]],
    after: dict[str, bytes | None],
    data: st.DataObject,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        for name, (content, executable) in before.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(content)
            os.chmod(root / name, 0o755 if executable else 0o644)
        if use_git:
            for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
                subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
        cs = ChangeSet(root)
        for name, content in after.items():
            if content is None:
                if cs.exists(name):
                    cs.delete(name)
            else:
                cs.write_bytes(name, content)
        review = Review(cs, session_id="s", title="t", store=BatchStore(Path(tmp) / "data"))
        view = review.view()
        accepted = [h.id for f in view.files for h in f.hunks if data.draw(st.booleans())]
        review.decide(DecideParams(session_id="s", decision="accepted", hunk_ids=accepted))
        result = review.apply()
        # Partially accepted text files hold exactly the accepted hunks.
        for name, (content, _) in before.items():
            new = after[name]
            if new is None or b"\x00" in content + new:
                continue
            hunks = [h for h in text_hunks(name, content, new) if h.id in accepted]
            assert (root / name).read_bytes() == apply_hunks(content, hunks)
        event(f"git={use_git} batch={result.batch is not None} files={len(view.files)}")
        if result.batch is None:
            return
        rolled = rollback_batch(root, review.store)
        assert rolled.refused == []
        for name, (content, executable) in before.items():
            assert (root / name).read_bytes() == content
            assert stat.S_IMODE((root / name).stat().st_mode) == (0o755 if executable else 0o644)
        assert not (root / "new.txt").exists()
        if use_git:
            status = subprocess.run(
                ["git", "status", "--porcelain"], cwd=root, capture_output=True, check=True
            )
            assert status.stdout == b""
