"""Every tool call that reads or writes a path, for the tests that a path outside the workspace is refused."""

from __future__ import annotations


def calls(path: str) -> list[tuple[str, dict[str, str]]]:
    return [
        ("read_file", {"path": path}),
        ("list_dir", {"path": path}),
        ("grep", {"pattern": "API_KEY|outside", "path": path}),
        ("edit_file", {"path": path, "old_text": "x", "new_text": "y"}),
        ("write_file", {"path": path, "content": "pwned"}),
        ("create_file", {"path": path, "content": "pwned"}),
        ("delete_file", {"path": path}),
        ("rename_file", {"path": path, "new_path": "pkg/stolen.txt"}),
        ("rename_file", {"path": "pkg/a.py", "new_path": path}),
    ]
