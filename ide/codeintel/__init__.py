"""Code intelligence: the tree-sitter index (``index/``) and the language-server pool (``lsp/``)."""
