"""Import the ACP SDK's schema in half the time: every process that speaks ACP pays for it at its start.

``acp.schema`` defines about 270 pydantic models with ``use_attribute_docstrings``. On Python 3.11 pydantic
reads each class's source back (``inspect.getsource``, which scans the whole 5,800-line file for each
class) to find the docstrings, and it builds every model's validator at import. Both are paid by every
backend spawn (``arbor acp``), ``arbor run``, ``arbor eval`` and the window's ACP client: about 0.9 s of
CPU on a 2-core machine, 0.4 s with this.

:func:`install` (called when ``ide`` is imported) puts a one-shot finder first on ``sys.meta_path``; when
``acp.schema`` is first imported, whoever imports it, the module runs with pydantic's attribute-docstring
extraction off (the docstrings only become JSON-schema descriptions, which nothing here reads) and with
``defer_build`` on (each model's validator is built the first time it validates, so only the messages a
process exchanges are ever built). Both are pydantic internals: when pydantic moves them, the schema is
imported as it is, only slower.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec, PathFinder
from types import ModuleType

TARGET = "acp.schema"


class _SchemaLoader(Loader):
    """Runs the real loader of ``acp.schema`` with pydantic's docstring extraction off, deferred builds on."""

    def __init__(self, real: Loader) -> None:
        self.real = real

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)  # get_source (tracebacks), get_filename, is_package…

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self.real.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        try:
            from pydantic._internal import _config, _fields
        except ImportError:
            self.real.exec_module(module)
            return
        extract = getattr(_fields, "extract_docstrings_from_cls", None)
        defaults = getattr(_config, "config_defaults", None)
        if extract is None or not isinstance(defaults, dict) or "defer_build" not in defaults:
            self.real.exec_module(module)
            return
        deferred = defaults["defer_build"]
        _fields.extract_docstrings_from_cls = _no_docstrings
        defaults["defer_build"] = True
        try:
            self.real.exec_module(module)
        finally:
            _fields.extract_docstrings_from_cls = extract
            defaults["defer_build"] = deferred


def _no_docstrings(cls: type, use_inspect: bool = False) -> dict[str, str]:
    return {}


class _SchemaFinder(MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != TARGET:
            return None
        sys.meta_path[:] = [finder for finder in sys.meta_path if finder is not self]
        spec = PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _SchemaLoader(spec.loader)
        return spec


def install() -> None:
    """Make the first import of ``acp.schema`` cheap (a no-op once it is imported, or installed)."""
    if TARGET in sys.modules or any(isinstance(f, _SchemaFinder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _SchemaFinder())
