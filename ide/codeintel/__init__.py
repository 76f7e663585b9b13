"""Code intelligence: tree-sitter index and language-server pool (lands with their issues)."""
