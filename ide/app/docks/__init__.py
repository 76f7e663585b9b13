"""The window's docks and controllers, one module each: the registry finds every Part defined here.

A new dock is one new module in this package with a :class:`~ide.app.docks.base.Dock` subclass; the
window builds it, lists it in the View menu and lays it out from its ``spec``. What it needs of
another part it declares (:mod:`ide.app.docks.needs`), by capability (:mod:`ide.app.docks.capabilities`).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from ide.app.docks.base import AppContext, Dock, Part
from ide.app.docks.needs import build_order

__all__ = ["AppContext", "Dock", "Part", "registry"]


def registry() -> list[type[Part]]:
    """Every named Part class of the package's modules, in build order (checked: see
    :func:`~ide.app.docks.needs.build_order`)."""
    found: list[type[Part]] = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, Part) and cls.__module__ == module.__name__ and "spec" in cls.__dict__:
                found.append(cls)
    return build_order(sorted(found, key=lambda cls: (cls.spec.order, cls.spec.name)))
