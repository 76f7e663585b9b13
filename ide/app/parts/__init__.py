"""The window's parts (docks and controllers): the registry finds every Part of the feature packages.

Each feature of the window is a package of :mod:`ide.app` (``chat``, ``review``, ``tree``, ``eval``,
``foreign``, ``workspace``, ``start``, ``status``, ``sessions``, ``trust``, ``memory``) whose ``part``
module — or ``part_*`` modules, one per part, where a feature has several — holds its :class:`Part`
subclasses; the rest of the package is the feature's widgets and its Qt-free state. A new dock is one
``part`` module with a :class:`~ide.app.parts.base.Dock` subclass; the window builds it, lists it in the
View menu and lays it out from its ``spec``. What it needs of another part it declares
(:mod:`ide.app.parts.needs`), by capability (:mod:`ide.app.parts.capabilities`).
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

from ide.app.parts.base import AppContext, Dock, Part
from ide.app.parts.needs import build_order

__all__ = ["AppContext", "Dock", "Part", "part_modules", "registry"]

APP = Path(__file__).resolve().parent.parent


def part_modules() -> list[str]:
    """The modules that hold parts: ``ide.app.<feature>.part`` and ``ide.app.<feature>.part_*``."""
    # A scan of the source, not pkgutil.iter_modules: pkgutil (with importlib.abc) is ~1.5 ms of the first
    # frame's CPU, which builds the registry.
    names = []
    for feature in APP.iterdir():
        if "." in feature.name or not (feature / "__init__.py").is_file():
            continue
        for module in feature.glob("part*.py"):
            if module.stem == "part" or module.stem.startswith("part_"):
                names.append(f"ide.app.{feature.name}.{module.stem}")
    return sorted(names)


def registry() -> list[type[Part]]:
    """Every named Part class of the part modules, in build order (checked: see
    :func:`~ide.app.parts.needs.build_order`)."""
    found: list[type[Part]] = []
    for name in part_modules():
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, Part) and cls.__module__ == module.__name__ and "spec" in cls.__dict__:
                found.append(cls)
    return build_order(sorted(found, key=lambda cls: (cls.spec.order, cls.spec.name)))
