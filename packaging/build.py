"""Build the one-folder app with PyInstaller, print its size, and smoke-test it.

    pip install -e '.[packaging]' && python packaging/build.py [--skip-build]

Smoke tests, all against the built binary with a throwaway config and data dir: ``arbor --version``
equals the package metadata; ``arbor workflows list`` finds the shipped workflows; ``arbor acp`` answers
``initialize`` over stdio; ``arbor lsp … definition`` is answered by the bundled jedi-language-server
with nothing on PATH but /usr/bin and /bin; and the window (Qt offscreen) starts, spawns its own
backend from the bundle and reaches a ready session (``ARBOR_SMOKE_TEST=1``). Prints one JSON
object; exit 1 if a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "dist" / "arbor"
BINARY = DIST / "arbor"


def size_of(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink())


def run(
    args: list[str], env: dict[str, str], stdin: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, input=stdin, capture_output=True, text=True, env=env, timeout=timeout)


def smoke(env: dict[str, str], workspace: Path) -> dict[str, object]:
    checks: dict[str, object] = {}
    done = run([str(BINARY), "--version"], env)
    checks["version"] = done.stdout.strip() == f"arbor {version('arbor-ide')}" or done.stdout.strip()
    done = run([str(BINARY), "workflows", "list", "--json", "--workspace", str(workspace)], env)
    names = [w["name"] for w in json.loads(done.stdout)["workflows"]] if done.returncode == 0 else []
    checks["workflows"] = "feature_with_iterative_testing" in names or done.stderr[-500:]
    request = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    )
    done = run([str(BINARY), "acp"], env, stdin=request + "\n")
    first = done.stdout.splitlines()[0] if done.stdout else ""
    checks["acp_initialize"] = '"protocolVersion":1' in first.replace(" ", "") or (
        first or done.stderr[-500:]
    )
    # The Python language server comes from the bundle: nothing on PATH but the system's basics.
    done = run(
        [str(BINARY), "lsp", str(workspace), "definition", "hello.py:5:7", "--json"],
        {**env, "PATH": "/usr/bin:/bin"},
    )
    found = json.loads(done.stdout) if done.returncode == 0 and done.stdout.strip() else []
    checks["lsp_definition"] = (
        any(str(f.get("path", "")).endswith("hello.py") and f.get("line") == 1 for f in found)
        or (done.stdout + done.stderr)[-800:]
    )
    started = time.monotonic()
    done = run(
        [str(BINARY), str(workspace)], {**env, "QT_QPA_PLATFORM": "offscreen", "ARBOR_SMOKE_TEST": "1"}
    )
    checks["window_session_ready"] = done.returncode == 0 or (done.stdout + done.stderr)[-800:]
    checks["window_s"] = round(time.monotonic() - started, 2)
    return checks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--skip-build", action="store_true", help="smoke-test the existing dist/arbor")
    args = parser.parse_args()
    build_s = None
    if not args.skip_build:
        started = time.monotonic()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "PyInstaller",
                "--noconfirm",
                "--clean",
                str(ROOT / "packaging" / "arbor.spec"),
            ],
            cwd=ROOT,
            check=True,
        )
        build_s = round(time.monotonic() - started, 1)
    with tempfile.TemporaryDirectory(prefix="arbor-smoke-") as tmp:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        (workspace / "hello.py").write_text("def hello():\n    return 'hi'\n\n\nprint(hello())\n")
        subprocess.run(["git", "init", "-q"], cwd=workspace, check=False)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("ARBOR_")},
            "ARBOR_CONFIG_DIR": str(Path(tmp) / "config"),
            "ARBOR_DATA_DIR": str(Path(tmp) / "data"),
            "ARBOR_MODEL": "ollama:qwen2.5-coder:7b",
        }
        checks = smoke(env, workspace)
    ok = all(value is True for key, value in checks.items() if key != "window_s")
    result = {
        "bundle": str(DIST),
        "bundle_bytes": size_of(DIST),
        "build_s": build_s,
        "checks": checks,
        "ok": ok,
    }
    print(json.dumps(result, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
