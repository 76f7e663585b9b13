"""The base of every wire model in :mod:`ide.protocol`.

Both processes import many more of these models than a session uses (the window imports every dock's
module before its first frame), and pydantic builds a model's validator and serializer when its class is
created: for Arbor's ~70 models that was most of ``ide.protocol``'s import time. ``defer_build`` builds
them at a model's first use instead (validation, construction, ``model_dump``, its JSON Schema), with the
same result, so only the models a process really uses are ever built.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class WireModel(BaseModel):
    """A pydantic model whose validator and serializer are built at its first use, not at import."""

    model_config = ConfigDict(defer_build=True)
