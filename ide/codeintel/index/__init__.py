"""The code index: tree-sitter definitions, imports and references of a workspace in SQLite (FTS5)."""

from ide.codeintel.index.indexer import CodeIndex, IndexStats, index_path
from ide.codeintel.index.model import Definition, FileSymbols
from ide.codeintel.index.store import FileRow, Symbol

__all__ = ["CodeIndex", "Definition", "FileRow", "FileSymbols", "IndexStats", "Symbol", "index_path"]
