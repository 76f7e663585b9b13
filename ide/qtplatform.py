"""Before Qt starts: is there a display, and can Qt's platform plugin load its libraries?

Qt aborts the whole process (SIGABRT) when its platform plugin cannot load, and its message names
``libxcb-cursor0`` whatever is really missing. This module answers the question first, without
importing Qt, so ``arbor`` can print what is wrong and the one line that installs the fix.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

HEADLESS_PLATFORMS = frozenset(
    {"offscreen", "minimal", "vnc", "linuxfb", "eglfs", "minimalegl", "vkkhrdisplay"}
)
"""Platform plugins that need no X or Wayland display."""

# soname → (Debian/Ubuntu package, Fedora/RHEL package) of the libraries Qt's plugins link against.
PACKAGES: dict[str, tuple[str, str]] = {
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms"),
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image"),
    "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil"),
    "libxcb-util.so.1": ("libxcb-util1", "xcb-util"),
    "libxcb-shape.so.0": ("libxcb-shape0", "libxcb"),
    "libxcb-xkb.so.1": ("libxcb-xkb1", "libxcb"),
    "libxcb-randr.so.0": ("libxcb-randr0", "libxcb"),
    "libxcb-shm.so.0": ("libxcb-shm0", "libxcb"),
    "libxcb-sync.so.1": ("libxcb-sync1", "libxcb"),
    "libxcb-xfixes.so.0": ("libxcb-xfixes0", "libxcb"),
    "libxcb-render.so.0": ("libxcb-render0", "libxcb"),
    "libxcb-glx.so.0": ("libxcb-glx0", "libxcb"),
    "libxcb-xinput.so.0": ("libxcb-xinput0", "libxcb"),
    "libxcb.so.1": ("libxcb1", "libxcb"),
    "libX11-xcb.so.1": ("libx11-xcb1", "libX11-xcb"),
    "libX11.so.6": ("libx11-6", "libX11"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11"),
    "libxkbcommon.so.0": ("libxkbcommon0", "libxkbcommon"),
    "libEGL.so.1": ("libegl1", "libglvnd-egl"),
    "libGL.so.1": ("libgl1", "libglvnd-glx"),
    "libGLX.so.0": ("libglx0", "libglvnd-glx"),
    "libOpenGL.so.0": ("libopengl0", "libglvnd-opengl"),
    "libfontconfig.so.1": ("libfontconfig1", "fontconfig"),
    "libfreetype.so.6": ("libfreetype6", "freetype"),
    "libdbus-1.so.3": ("libdbus-1-3", "dbus-libs"),
    "libglib-2.0.so.0": ("libglib2.0-0", "glib2"),
    "libgthread-2.0.so.0": ("libglib2.0-0", "glib2"),
    "libwayland-client.so.0": ("libwayland-client0", "libwayland-client"),
    "libwayland-cursor.so.0": ("libwayland-cursor0", "libwayland-cursor"),
    "libwayland-egl.so.1": ("libwayland-egl1", "libwayland-egl"),
}

_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found", re.MULTILINE)


@dataclass(frozen=True)
class DisplayProblem:
    """Why the window cannot open here; ``fix`` is the line to run, ``missing`` the libraries."""

    message: str
    fix: str
    missing: tuple[str, ...] = field(default=())

    def render(self) -> str:
        return f"the window cannot start: {self.message}\n  fix: {self.fix}"


def qt_directory() -> Path | None:
    """PySide6's ``Qt`` folder (plugins and libraries), found without importing PySide6."""
    spec = importlib.util.find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "Qt"
        if candidate.is_dir():
            return candidate
    return None


def missing_libraries(binary: Path) -> list[str]:
    """Shared libraries ``binary`` (or anything it loads) needs and the loader cannot find, via ``ldd``."""
    ldd = shutil.which("ldd")
    if ldd is None or not binary.is_file():
        return []
    try:
        done = subprocess.run([ldd, str(binary)], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    seen: dict[str, None] = {}
    for name in _NOT_FOUND.findall(done.stdout + done.stderr):
        seen.setdefault(name, None)
    return list(seen)


def distribution(os_release: Path = Path("/etc/os-release")) -> str:
    """``debian`` (apt-get), ``fedora`` (dnf) or ``other``, from /etc/os-release's ID and ID_LIKE."""
    try:
        text = os_release.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "other"
    words: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key in ("ID", "ID_LIKE"):
            words.update(value.strip().strip("\"'").lower().split())
    if words & {"debian", "ubuntu"}:
        return "debian"
    if words & {"fedora", "rhel", "centos", "rocky", "almalinux"}:
        return "fedora"
    return "other"


def install_line(missing: list[str], distro: str) -> str:
    """The one command that installs the packages holding ``missing`` on ``distro``."""
    known = [name for name in missing if name in PACKAGES]
    unknown = [name for name in missing if name not in PACKAGES]
    apt = "sudo apt-get install " + " ".join(sorted({PACKAGES[name][0] for name in known}))
    dnf = "sudo dnf install " + " ".join(sorted({PACKAGES[name][1] for name in known}))
    tail = f" (and the package that provides {', '.join(unknown)})" if unknown else ""
    if not known:
        return f"install the packages that provide {', '.join(unknown)}"
    if distro == "debian":
        return apt + tail
    if distro == "fedora":
        return dnf + tail
    return f"{apt}   (Fedora: {dnf}){tail}"


def _x_server_listening(display: str) -> bool:
    """False only when ``display`` is a local ``:N`` whose socket exists neither as a file nor abstract."""
    match = re.fullmatch(r"(?:unix)?:(\d+)(?:\.\d+)?", display)
    if match is None:
        return True  # host:N goes over TCP (ssh -X); Qt will say if nothing answers
    socket = f"/tmp/.X11-unix/X{match.group(1)}"
    if Path(socket).exists():
        return True
    try:
        return f"@{socket}" in Path("/proc/net/unix").read_text(errors="replace")
    except OSError:
        return True


def _platforms(env: Mapping[str, str]) -> list[str]:
    """The platform plugins Qt will try, in its order."""
    chosen = env.get("QT_QPA_PLATFORM", "").strip()
    if chosen:
        return [part.split(":", 1)[0].strip() for part in chosen.split(";") if part.strip()]
    wayland = bool(env.get("WAYLAND_DISPLAY")) or env.get("XDG_SESSION_TYPE") == "wayland"
    return ["wayland", "xcb"] if wayland else ["xcb"]


def _plugin_problem(name: str, plugins: Path, env: Mapping[str, str], distro: str) -> DisplayProblem | None:
    if name in HEADLESS_PLATFORMS:
        return None
    no_display: DisplayProblem | None = None
    if name == "xcb":
        display = env.get("DISPLAY", "")
        if not display:
            no_display = _no_display()
        elif not _x_server_listening(display):
            no_display = DisplayProblem(
                f"no X server is listening on DISPLAY={display}",
                "start your desktop session, or run it under a virtual screen: xvfb-run -a arbor",
            )
    elif name == "wayland" and not env.get("WAYLAND_DISPLAY"):
        no_display = _no_display()
    missing = missing_libraries(plugins / "platforms" / f"libq{name}.so")
    if not missing:
        return no_display
    # Both wrong: the install line first, since a display alone would still not open the window.
    also = f"; also {no_display.message}" if no_display else ""
    return DisplayProblem(
        f"Qt's {name} platform plugin needs libraries that are not installed ({', '.join(missing)}){also}",
        install_line(missing, distro),
        tuple(missing),
    )


def _no_display() -> DisplayProblem:
    return DisplayProblem(
        "no display ($DISPLAY and $WAYLAND_DISPLAY are not set)",
        "run it in a desktop session, over 'ssh -X', or under a virtual screen (xvfb-run -a arbor); "
        "'arbor run', 'arbor acp' and 'arbor mcp' need no display",
    )


def display_problem(
    env: Mapping[str, str] | None = None, qt_dir: Path | None = None, distro: str | None = None
) -> DisplayProblem | None:
    """What stops Qt from opening a window here, or None when it should open (always None off Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    env = os.environ if env is None else env
    qt_dir = qt_dir or qt_directory()
    if qt_dir is None:
        if getattr(sys, "frozen", False):
            return None  # a packaged app: its Qt sits where the bundle's loader finds it
        return DisplayProblem("PySide6 is not installed", "pip install -e .  (or pip install arbor-ide)")
    distro = distro or distribution()
    # QtGui itself needs OpenGL, fontconfig and xkbcommon whatever the platform plugin.
    core = missing_libraries(qt_dir / "lib" / "libQt6Gui.so.6")
    if core:
        return DisplayProblem(
            f"Qt needs libraries that are not installed ({', '.join(core)})",
            install_line(core, distro),
            tuple(core),
        )
    first: DisplayProblem | None = None
    for name in _platforms(env):
        problem = _plugin_problem(name, qt_dir / "plugins", env, distro)
        if problem is None:
            return None
        first = first or problem
    return first
