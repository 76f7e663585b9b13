"""Imported once by the fork server the index's worker processes fork from (``parsing.new_pool``): they
start with the modules imported and every tagged grammar's parser and query compiled (~0.6 s of imports
and ~0.9 s of query compiling, the C++ query half of it), instead of each worker doing both again."""

from __future__ import annotations

from ide.codeintel.index import extract, parsing  # noqa: F401  (imported for the workers)
from ide.codeintel.index.languages import TAGGED

for _language in TAGGED:
    extract.compiled(_language)
